"""The held-out check of the classifier's ADVI + Laplace mixture: with
``inference="auto"`` the folds that choose each half's temperature also score the
equal mixture against ADVI alone, and ADVI alone is kept where it predicts them better."""

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.model_selection import StratifiedKFold

import pymc_bnn.fit_settings as fit_settings
from pymc_bnn import BayesianMLPClassifier, build_model, fit
from pymc_bnn.fit_settings import MIXTURE
from pymc_bnn.fit_summary import describe
from pymc_bnn.predictive import posterior_predictive
from pymc_bnn.tempering import (SCORE_DRAWS, TEMPERATURES, FoldScores,
                                 choose_mixture_temperatures, choose_temperature, fold_tasks,
                                 mixture_difference)


@pytest.fixture(autouse=True)
def no_linear_part(monkeypatch):
    """The check alone: no linear part stacked after it (``tests/test_linear_part.py``
    has the two together)."""
    monkeypatch.setattr(BayesianMLPClassifier, "_LINEAR_PART", False)


@pytest.fixture(scope="module")
def data():
    X, y = make_moons(90, noise=0.25, random_state=3)
    return X, y


def fitted(X, y, **kw):
    return BayesianMLPClassifier((3,), **{"n_draws": 40, "random_state": 5, **kw}).fit(X, y)


@pytest.fixture(scope="module")
def fold_fits(data):
    """Two fits (a network and a linear model) on the same three folds, scored row by
    row at every temperature, and the fits themselves by (hidden, seed)."""
    X, y = data
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    fits = {}

    def fit_rows(hidden):
        def rows_fit(rows, seed):
            fits[hidden, seed] = fit(build_model(X[rows], y[rows], hidden_layer_sizes=hidden,
                                                 random_state=0), n_iter=800, random_seed=seed)
            return fits[hidden, seed]
        return rows_fit

    scores = [[task() for task in fold_tasks(fit_rows(h), X, y, folds=folds, seed=7,
                                             per_row=True)] for h in ((3,), ())]
    return folds, fits, scores


def _label_probabilities(X, y, folds, fits, hidden, t):
    """Each held-out row's SCORE_DRAWS draws of the probability of its label (the
    scoring's own draws: seeded 7 + fold), folds concatenated: (draws, rows)."""
    parts = []
    for k, (_, test) in enumerate(folds):
        proba = posterior_predictive(fits[hidden, 7 + k], n_draws=SCORE_DRAWS,
                                     random_seed=7 + k, temperature=t).sample_proba(X[test])
        parts.append(proba[:, np.arange(len(test)), y[test]])
    return np.concatenate(parts, axis=1)


def _mixture_by_hand(X, y, folds, fits, t_first, t_second, t_alone):
    """The slow, obvious path: the two fits' draws at their temperatures put together
    (half each), and the mean probability of each held-out label; the first alone."""
    both = np.concatenate([_label_probabilities(X, y, folds, fits, (3,), t_first),
                           _label_probabilities(X, y, folds, fits, (), t_second)])
    return (-np.log(both.mean(0)),
            -np.log(_label_probabilities(X, y, folds, fits, (3,), t_alone).mean(0)))


@pytest.mark.filterwarnings("ignore:ADVI stopped before")  # short fits serve here
def test_the_mixture_s_temperatures_are_the_best_pair_of_mixing_the_draws(data, fold_fits):
    X, y = data
    folds, fits, (first, second) = fold_fits
    assert all(isinstance(f, FoldScores) and f.nll.shape == (len(TEMPERATURES), 30)
               for f in first + second)
    sel_first, sel_second, weight = choose_mixture_temperatures(first, second, len(y))
    assert weight == 0.5  # the default: the equal mixture
    # by hand: every pair of temperatures, the draws mixed
    p_first = [_label_probabilities(X, y, folds, fits, (3,), t) for t in TEMPERATURES]
    p_second = [_label_probabilities(X, y, folds, fits, (), t) for t in TEMPERATURES]
    grid = np.array([[-np.log(np.concatenate([a, b]).mean(0)).mean() for b in p_second]
                     for a in p_first])
    i, j = np.unravel_index(np.argmin(grid), grid.shape)
    assert (sel_first.temperature, sel_second.temperature) == (TEMPERATURES[i],
                                                               TEMPERATURES[j])
    # each selection's scores: the mixture over its grid, the other held at its choice
    np.testing.assert_allclose(sel_first.scores, grid[:, j], rtol=1e-6)
    np.testing.assert_allclose(sel_second.scores, grid[i, :], rtol=1e-6)
    assert np.ptp(grid) > 1e-3  # the pairs differ
    with pytest.raises(ValueError, match="different rows"):
        choose_mixture_temperatures(first, [FoldScores(f.nll[:, 1:], f.scale) for f in second],
                                    len(y))


@pytest.mark.filterwarnings("ignore:ADVI stopped before")
def test_a_stacked_share_is_the_best_weighted_mixture_of_the_draws(data, fold_fits):
    """With several shares of the second fit (the regressor's stacked mixture), the
    weight and the pair are the best of every weighted mixture of the draws' mean
    probabilities, computed by hand; ties go to the share nearest a half."""
    X, y = data
    folds, fits, (first, second) = fold_fits
    weights = (0.1, 0.3, 0.5, 0.8)
    sel_first, sel_second, weight = choose_mixture_temperatures(first, second, len(y),
                                                                weights=weights)
    p_first = [_label_probabilities(X, y, folds, fits, (3,), t).mean(0) for t in TEMPERATURES]
    p_second = [_label_probabilities(X, y, folds, fits, (), t).mean(0) for t in TEMPERATURES]
    grid = np.array([[[-np.log((1 - w) * a + w * b).mean() for b in p_second]
                      for a in p_first] for w in weights])
    k, i, j = np.unravel_index(np.argmin(grid), grid.shape)
    assert (weight, sel_first.temperature, sel_second.temperature) == (
        weights[k], TEMPERATURES[i], TEMPERATURES[j])
    np.testing.assert_allclose(sel_first.scores, grid[k, :, j], rtol=1e-6)
    np.testing.assert_allclose(sel_second.scores, grid[k, i, :], rtol=1e-6)
    assert np.ptp(grid.min(axis=(1, 2))) > 1e-4  # the shares differ
    # the same against the first alone, at the chosen share
    mixed, _, _ = mixture_difference(first, second, first_index=i, second_index=j,
                                     alone_index=i, weight=weight)
    np.testing.assert_allclose(mixed, grid[k, i, j], rtol=1e-6)
    # identical fits: every share scores the same, and the tie goes to a half
    assert choose_mixture_temperatures(first, first, len(y), weights=weights)[2] == 0.5
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        choose_mixture_temperatures(first, second, len(y), weights=(0.0, 0.5))


@pytest.mark.filterwarnings("ignore:ADVI stopped before")
def test_the_mixture_against_the_first_alone_is_the_paired_row_difference(data, fold_fits):
    X, y = data
    folds, fits, (first, second) = fold_fits
    i, j, k = (TEMPERATURES.index(t) for t in (0.2, 1.5, 1.0))
    mixed, alone, se = mixture_difference(first, second, first_index=i, second_index=j,
                                          alone_index=k)
    by_hand_mixed, by_hand_alone = _mixture_by_hand(X, y, folds, fits, 0.2, 1.5, 1.0)
    np.testing.assert_allclose([mixed, alone], [by_hand_mixed.mean(), by_hand_alone.mean()],
                               rtol=1e-6)
    diff = by_hand_mixed - by_hand_alone
    np.testing.assert_allclose(se, diff.std() / np.sqrt(len(diff)), rtol=1e-5)
    # the first alone at a temperature is the temperature choice's own score there
    np.testing.assert_allclose(alone, choose_temperature(first, len(y)).scores[k], rtol=1e-12)


def test_auto_records_the_check_and_keeps_the_mixture_where_it_is_better(data,
                                                                         monkeypatch):
    X, y = data
    calls = []
    real = fit_settings.mixture_difference
    monkeypatch.setattr(fit_settings, "mixture_difference",
                        lambda *a, **kw: calls.append(kw) or real(*a, **kw))
    clf = fitted(X, y)
    assert len(calls) == 1  # the check is taken
    selection = clf.inference_selection_
    assert selection["methods"] == [MIXTURE, "advi"]
    mixed, alone = selection["scores"]
    assert clf.inference_ == MIXTURE and mixed < alone
    (t_advi, t_laplace), t_alone = selection["temperatures"]
    assert (t_advi, t_laplace) == (clf.posterior_temperature_,
                                   clf.mixture_["laplace_temperature"])
    # the mixture's score is its temperatures' best (the joint choice's) ...
    np.testing.assert_allclose(mixed, clf.temperature_selection_.scores.min(), rtol=1e-12)
    np.testing.assert_allclose(
        mixed, min(clf.mixture_["laplace_temperature_selection"]["scores"]), rtol=1e-12)
    # ... and ADVI alone's is its own choice's best, as an ADVI fit of the same seed has it
    advi = fitted(X, y, inference="advi")
    assert advi.posterior_temperature_ == t_alone
    np.testing.assert_allclose(alone, advi.temperature_selection_.scores.min(), rtol=1e-12)
    assert describe(clf)[-1].endswith(f"which predicted the held-out rows better than "
                                      f"ADVI's alone (log loss {mixed:.3g} against "
                                      f"{alone:.3g} per row)")


@pytest.fixture(scope="module")
def more_data():
    X, y = make_moons(150, noise=0.25, random_state=4)
    return X, y


def test_auto_falls_back_to_advi_alone_where_the_mixture_is_clearly_worse(more_data,
                                                                         monkeypatch,
                                                                         tmp_path):
    """Where the folds (over 100 rows) score the mixture worse by over 4 nats in all and
    by over two standard errors, the fit is ADVI's alone: the same predictions as
    ``inference="advi"`` with the same seed, bit for bit."""
    X, y = more_data
    monkeypatch.setattr(fit_settings, "mixture_difference", lambda *a, **kw: (0.6, 0.5, 0.04))
    clf = fitted(X, y)
    assert clf.inference_ == "advi" and clf.mixture_ is None
    assert clf.inference_selection_["methods"] == [MIXTURE, "advi"]
    assert clf.inference_selection_["scores"] == [0.6, 0.5]
    assert clf.inference_selection_["standard_errors"] == [0.04]
    advi = fitted(X, y, inference="advi")
    assert advi.inference_selection_ is None
    np.testing.assert_array_equal(clf.predict_proba(X), advi.predict_proba(X))
    assert clf.posterior_temperature_ == advi.posterior_temperature_
    assert describe(clf)[-1] == (
        "predictions: ADVI's draws alone: the average with a Laplace approximation's was "
        "fit too, and predicted the held-out rows worse than ADVI's alone (log loss 0.6 "
        "against 0.5 per row)")
    back = BayesianMLPClassifier.load(clf.save(tmp_path / "advi.nc"))
    assert back.inference_ == "advi" and back.inference_selection_ == clf.inference_selection_
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize("rows, scores", [
    (150, (0.6, 0.5, 0.06)),     # within two standard errors
    (150, (0.52, 0.5, 0.001)),   # 3 nats in all: too small a difference to trust its SE
    (90, (0.6, 0.5, 0.01)),      # 100 rows or fewer: the SE is not trusted
])
def test_auto_keeps_the_mixture_unless_the_folds_clearly_say_otherwise(data, more_data,
                                                                       monkeypatch, rows,
                                                                       scores):
    X, y = more_data if rows == 150 else data
    assert len(y) == rows
    monkeypatch.setattr(fit_settings, "mixture_difference", lambda *a, **kw: scores)
    clf = fitted(X, y)
    assert clf.inference_ == MIXTURE and clf.inference_selection_["scores"] == list(scores[:2])
    assert describe(clf)[-1].endswith("could not tell from noise)")


def test_an_explicit_mixture_is_kept_without_the_check(data, monkeypatch):
    X, y = data
    monkeypatch.setattr(fit_settings, "mixture_difference", lambda *a, **kw: (0.6, 0.5, 0.0))
    clf = fitted(X, y, inference=MIXTURE)
    assert clf.inference_ == MIXTURE and clf.inference_selection_ is None
