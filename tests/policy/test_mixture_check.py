"""The held-out scoring of the ADVI + Laplace mixture (``inference="advi+laplace"``): the
folds choose each half's temperature and the Laplace half's share together."""

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.model_selection import StratifiedKFold

from pymc_bnn import BayesianMLPClassifier, build_model, fit
from pymc_bnn.policy._settings import MIXTURE
from pymc_bnn.policy._tempering import (
    SCORE_DRAWS,
    TEMPERATURES,
    FoldScores,
    choose_mixture_temperatures,
    fold_tasks,
)
from pymc_bnn.predictive._predictive import posterior_predictive


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
            fits[hidden, seed] = fit(
                build_model(X[rows], y[rows], hidden_layer_sizes=hidden, random_state=0),
                n_iter=800,
                random_seed=seed,
            )
            return fits[hidden, seed]

        return rows_fit

    scores = [
        [task() for task in fold_tasks(fit_rows(h), X, y, folds=folds, seed=7, per_row=True)]
        for h in ((3,), ())
    ]
    return folds, fits, scores


def _label_probabilities(X, y, folds, fits, hidden, t):
    """Each held-out row's SCORE_DRAWS draws of the probability of its label (the
    scoring's own draws: seeded 7 + fold), folds concatenated: (draws, rows)."""
    parts = []
    for k, (_, test) in enumerate(folds):
        proba = posterior_predictive(
            fits[hidden, 7 + k], n_draws=SCORE_DRAWS, random_seed=7 + k, temperature=t
        ).sample_proba(X[test])
        parts.append(proba[:, np.arange(len(test)), y[test]])
    return np.concatenate(parts, axis=1)


def _mixture_by_hand(X, y, folds, fits, t_first, t_second, t_alone):
    """The slow, obvious path: the two fits' draws at their temperatures put together
    (half each), and the mean probability of each held-out label; the first alone."""
    both = np.concatenate(
        [
            _label_probabilities(X, y, folds, fits, (3,), t_first),
            _label_probabilities(X, y, folds, fits, (), t_second),
        ]
    )
    return (
        -np.log(both.mean(0)),
        -np.log(_label_probabilities(X, y, folds, fits, (3,), t_alone).mean(0)),
    )


@pytest.mark.filterwarnings("ignore:ADVI stopped before")  # short fits serve here
def test_the_mixture_s_temperatures_are_the_best_pair_of_mixing_the_draws(data, fold_fits):
    X, y = data
    folds, fits, (first, second) = fold_fits
    assert all(
        isinstance(f, FoldScores) and f.nll.shape == (len(TEMPERATURES), 30) for f in first + second
    )
    sel_first, sel_second, weight = choose_mixture_temperatures(first, second, len(y))
    assert weight == 0.5  # the default: the equal mixture
    # by hand: every pair of temperatures, the draws mixed
    p_first = [_label_probabilities(X, y, folds, fits, (3,), t) for t in TEMPERATURES]
    p_second = [_label_probabilities(X, y, folds, fits, (), t) for t in TEMPERATURES]
    grid = np.array(
        [[-np.log(np.concatenate([a, b]).mean(0)).mean() for b in p_second] for a in p_first]
    )
    i, j = np.unravel_index(np.argmin(grid), grid.shape)
    assert (sel_first.temperature, sel_second.temperature) == (TEMPERATURES[i], TEMPERATURES[j])
    # each selection's scores: the mixture over its grid, the other held at its choice
    np.testing.assert_allclose(sel_first.scores, grid[:, j], rtol=1e-6)
    np.testing.assert_allclose(sel_second.scores, grid[i, :], rtol=1e-6)
    assert np.ptp(grid) > 1e-3  # the pairs differ
    with pytest.raises(ValueError, match="different rows"):
        choose_mixture_temperatures(
            first, [FoldScores(f.nll[:, 1:], f.scale) for f in second], len(y)
        )


@pytest.mark.filterwarnings("ignore:ADVI stopped before")
def test_a_stacked_share_is_the_best_weighted_mixture_of_the_draws(data, fold_fits):
    """With several shares of the second fit (the regressor's stacked mixture), the
    weight and the pair are the best of every weighted mixture of the draws' mean
    probabilities, computed by hand; ties go to the share nearest a half."""
    X, y = data
    folds, fits, (first, second) = fold_fits
    weights = (0.1, 0.3, 0.5, 0.8)
    sel_first, sel_second, weight = choose_mixture_temperatures(
        first, second, len(y), weights=weights
    )
    p_first = [_label_probabilities(X, y, folds, fits, (3,), t).mean(0) for t in TEMPERATURES]
    p_second = [_label_probabilities(X, y, folds, fits, (), t).mean(0) for t in TEMPERATURES]
    grid = np.array(
        [
            [[-np.log((1 - w) * a + w * b).mean() for b in p_second] for a in p_first]
            for w in weights
        ]
    )
    k, i, j = np.unravel_index(np.argmin(grid), grid.shape)
    assert (weight, sel_first.temperature, sel_second.temperature) == (
        weights[k],
        TEMPERATURES[i],
        TEMPERATURES[j],
    )
    np.testing.assert_allclose(sel_first.scores, grid[k, :, j], rtol=1e-6)
    np.testing.assert_allclose(sel_second.scores, grid[k, i, :], rtol=1e-6)
    assert np.ptp(grid.min(axis=(1, 2))) > 1e-4  # the shares differ
    # identical fits: every share scores the same, and the tie goes to a half
    assert choose_mixture_temperatures(first, first, len(y), weights=weights)[2] == 0.5
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        choose_mixture_temperatures(first, second, len(y), weights=(0.0, 0.5))


def test_an_explicit_mixture_is_kept_without_a_check(data):
    X, y = data
    clf = fitted(X, y, inference=MIXTURE)
    assert clf.inference_ == MIXTURE and clf.inference_selection_ is None
