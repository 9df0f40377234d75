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
from pymc_bnn.tempering import (SCORE_DRAWS, TEMPERATURES, FoldScores, choose_temperature,
                                 fold_tasks, mixture_heldout_nll)


@pytest.fixture(scope="module")
def data():
    X, y = make_moons(90, noise=0.25, random_state=3)
    return X, y


def fitted(X, y, **kw):
    return BayesianMLPClassifier((3,), **{"n_draws": 40, "random_state": 5, **kw}).fit(X, y)


@pytest.mark.filterwarnings("ignore:ADVI stopped before")  # short fits serve here
def test_the_mixture_s_fold_score_equals_mixing_the_draws(data):
    """The slow, obvious path: on each fold, the two fits' draws at their temperatures
    put together (half each) and their mean probability of the held-out label."""
    X, y = data
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    fits = {}

    def fit_rows(hidden):
        def rows_fit(rows, seed):
            fits[hidden, seed] = fit(build_model(X[rows], y[rows], hidden_layer_sizes=hidden,
                                                 random_state=0), n_iter=800, random_seed=seed)
            return fits[hidden, seed]
        return rows_fit

    first = [task() for task in fold_tasks(fit_rows((3,)), X, y, folds=folds, seed=7,
                                           per_row=True)]
    second = [task() for task in fold_tasks(fit_rows(()), X, y, folds=folds, seed=7,
                                            per_row=True)]
    assert all(isinstance(f, FoldScores) and f.nll.shape == (len(TEMPERATURES), 30)
               for f in first + second)
    i, j = TEMPERATURES.index(0.5), TEMPERATURES.index(2.0)
    mixed, alone = mixture_heldout_nll(first, second, first_index=i, second_index=j,
                                       n_rows=len(y))
    expected_mixed = expected_alone = 0.0
    for k, (_, test) in enumerate(folds):
        a = posterior_predictive(fits[(3,), 7 + k], n_draws=SCORE_DRAWS, random_seed=7 + k,
                                 temperature=0.5).sample_proba(X[test])
        b = posterior_predictive(fits[(), 7 + k], n_draws=SCORE_DRAWS, random_seed=7 + k,
                                 temperature=2.0).sample_proba(X[test])
        rows = np.arange(len(test))
        expected_mixed -= np.log(np.concatenate([a, b]).mean(0)[rows, y[test]]).sum()
        expected_alone -= np.log(a.mean(0)[rows, y[test]]).sum()
    np.testing.assert_allclose([mixed, alone],
                               [expected_mixed / len(y), expected_alone / len(y)], rtol=1e-6)
    # the first alone is the temperature choice's own score at that temperature
    np.testing.assert_allclose(alone, choose_temperature(first, len(y)).scores[i], rtol=1e-12)
    assert mixed != alone
    with pytest.raises(ValueError, match="different rows"):
        mixture_heldout_nll(first, [FoldScores(f.nll[:, 1:], f.scale) for f in second],
                            first_index=i, second_index=j, n_rows=len(y))


def test_auto_records_the_check_and_keeps_the_mixture_where_it_is_better(data,
                                                                         monkeypatch):
    X, y = data
    calls = []
    real = fit_settings.mixture_heldout_nll
    monkeypatch.setattr(fit_settings, "mixture_heldout_nll",
                        lambda *a, **kw: calls.append(kw) or real(*a, **kw))
    clf = fitted(X, y)
    assert len(calls) == 1  # the check is taken
    selection = clf.inference_selection_
    assert selection["methods"] == [MIXTURE, "advi"]
    mixed, alone = selection["scores"]
    assert clf.inference_ == MIXTURE and mixed <= alone
    temps = selection["temperatures"]
    assert temps == [[clf.posterior_temperature_, clf.mixture_["laplace_temperature"]],
                     clf.posterior_temperature_]
    # ADVI's score is its own temperature choice's
    sel = clf.temperature_selection_
    np.testing.assert_allclose(alone, sel.scores[sel.temperatures.index(temps[1])],
                               rtol=1e-12)
    assert describe(clf)[-1].endswith(f"which predicted the held-out rows better than "
                                      f"ADVI's alone (log loss {mixed:.3g} against "
                                      f"{alone:.3g} per row)")


def test_auto_falls_back_to_advi_alone_where_the_mixture_is_worse(data, monkeypatch,
                                                                  tmp_path):
    """Where the folds score the mixture worse, the fit is ADVI's alone: the same
    predictions as ``inference="advi"`` with the same seed, bit for bit."""
    X, y = data
    monkeypatch.setattr(fit_settings, "mixture_heldout_nll", lambda *a, **kw: (0.6, 0.5))
    clf = fitted(X, y)
    assert clf.inference_ == "advi" and clf.mixture_ is None
    assert clf.inference_selection_["methods"] == [MIXTURE, "advi"]
    assert clf.inference_selection_["scores"] == [0.6, 0.5]
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


def test_an_explicit_mixture_is_kept_without_the_check(data, monkeypatch):
    X, y = data
    monkeypatch.setattr(fit_settings, "mixture_heldout_nll", lambda *a, **kw: (0.6, 0.5))
    clf = fitted(X, y, inference=MIXTURE)
    assert clf.inference_ == MIXTURE and clf.inference_selection_ is None
