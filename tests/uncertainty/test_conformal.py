"""Split conformal intervals and sets (pymc_bnn.uncertainty): the finite-sample
guarantee on data where the truth is known, with right and wrong posteriors, by group,
and the errors a user meets."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from pymc_bnn.uncertainty import ConformalClassifier, ConformalRegressor, conformal_quantile


class Normal:
    """A regressor whose predictive is N(x, (scale * (1 + x))^2): the truth at scale 1."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def predict(self, X, return_std=False):
        x = np.asarray(X, dtype=float)[:, 0]
        return (x, self.scale * (1 + x)) if return_std else x


class Probabilities:
    """A classifier whose probabilities are its input rows, sharpened by ``power``
    (1: the truth)."""

    classes_ = np.array(["a", "b", "c"])

    def __init__(self, power=1.0):
        self.power = power

    def predict_proba(self, X):
        p = np.asarray(X, dtype=float) ** self.power
        return p / p.sum(axis=1, keepdims=True)


def _regression(n, rng):
    X = rng.uniform(0, 2, size=(n, 1))
    return X, X[:, 0] + (1 + X[:, 0]) * rng.normal(size=n)


def _classification(n, rng):
    X = rng.dirichlet([0.7, 0.7, 0.7], size=n)
    y = np.array([rng.choice(Probabilities.classes_, p=p) for p in X])
    return X, y


def test_the_quantile_is_the_finite_sample_one():
    scores = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    # n = 5: ceil(6 * 0.5) = 3rd smallest; ceil(6 * 0.8) = 5th; 0.9 needs n >= 9
    assert conformal_quantile(scores, 0.5) == 3.0
    assert conformal_quantile(scores, 0.8) == 5.0
    assert conformal_quantile(scores, 0.9) == np.inf


@pytest.mark.parametrize("scale", [1.0, 0.3, 3.0])  # right, too narrow, too wide
@pytest.mark.parametrize("coverage", [0.8, 0.9, 0.95])
def test_intervals_cover_as_promised_whatever_the_posterior(scale, coverage):
    """Over many draws of 100 calibration rows the mean coverage lies between
    coverage and coverage + 1 / (n + 1) (Vovk et al. 2005), within the simulation's
    noise, though the model's sd is off by a factor of three."""
    rng = np.random.default_rng(0)
    n_cal, n_test, reps = 100, 200, 300
    covered = []
    for _ in range(reps):
        X, y = _regression(n_cal + n_test, rng)
        conf = ConformalRegressor(Normal(scale)).calibrate(X[:n_cal], y[:n_cal])
        lower, upper = conf.predict_interval(X[n_cal:], coverage=coverage)
        covered.append(np.mean((lower <= y[n_cal:]) & (y[n_cal:] <= upper)))
    mean, se = np.mean(covered), np.std(covered) / np.sqrt(reps)
    assert coverage - 3 * se <= mean <= coverage + 1 / (n_cal + 1) + 3 * se


def test_normalized_intervals_follow_the_posterior_and_absolute_ones_do_not():
    rng = np.random.default_rng(1)
    X, y = _regression(2000, rng)
    grid = np.array([[0.0], [1.0], [2.0]])
    lower, upper = ConformalRegressor(Normal()).calibrate(X, y).predict_interval(grid)
    np.testing.assert_allclose((upper - lower) / (upper - lower)[0], [1, 2, 3])
    lower, upper = (
        ConformalRegressor(Normal(), score="absolute").calibrate(X, y).predict_interval(grid)
    )
    np.testing.assert_allclose(upper - lower, (upper - lower)[0])


def test_mondrian_calibration_covers_within_each_group():
    """Noise twice as large in group 1 as the model says: calibrated together, group 1 is
    under-covered; calibrated by group, both groups are covered."""
    rng = np.random.default_rng(2)
    n = 6000
    X, y = _regression(n, rng)
    groups = rng.integers(0, 2, size=n)
    y = X[:, 0] + (y - X[:, 0]) * np.where(groups == 1, 2.0, 1.0)
    cal, test = slice(0, 3000), slice(3000, None)

    def coverage_by_group(conf, **kw):
        lower, upper = conf.predict_interval(X[test], coverage=0.9, **kw)
        hit = (lower <= y[test]) & (y[test] <= upper)
        return [hit[groups[test] == g].mean() for g in (0, 1)]

    pooled = coverage_by_group(ConformalRegressor(Normal()).calibrate(X[cal], y[cal]))
    assert pooled[1] < 0.85 < 0.95 < pooled[0]
    by_group = ConformalRegressor(Normal()).calibrate(X[cal], y[cal], groups=groups[cal])
    assert all(0.88 <= c <= 0.92 for c in coverage_by_group(by_group, groups=groups[test]))


@pytest.mark.parametrize("score", ["lac", "aps"])
@pytest.mark.parametrize("power", [1.0, 3.0])  # the truth; over-confident
def test_sets_cover_as_promised(score, power):
    rng = np.random.default_rng(3)
    covered = []
    for _ in range(60):
        X, y = _classification(400, rng)
        conf = ConformalClassifier(Probabilities(power), score=score).calibrate(X[:200], y[:200])
        sets = conf.predict_set(X[200:], coverage=0.9)
        index = np.searchsorted(Probabilities.classes_, y[200:])
        covered.append(sets[np.arange(200), index].mean())
    mean, se = np.mean(covered), np.std(covered) / np.sqrt(len(covered))
    assert 0.9 - 3 * se <= mean <= 0.9 + 1 / 201 + 3 * se


def test_lac_sets_are_smaller_and_aps_sets_follow_the_spread():
    rng = np.random.default_rng(4)
    X, y = _classification(4000, rng)
    sizes = {}
    for score in ("lac", "aps"):
        conf = ConformalClassifier(Probabilities(), score=score).calibrate(X[:2000], y[:2000])
        sets = conf.predict_set(X[2000:], coverage=0.9)
        sizes[score] = sets.sum(axis=1)
        np.testing.assert_array_equal(sets, conf.predict_set(X[2000:], coverage=0.9))
    assert sizes["lac"].mean() <= sizes["aps"].mean()
    spread = 1 - X[2000:].max(axis=1)  # rows whose probabilities are spread get more
    assert np.corrcoef(spread, sizes["aps"])[0, 1] > 0.3


def test_bad_input_gets_a_clear_error_and_nothing_is_mutated():
    rng = np.random.default_rng(5)
    X, y = _regression(50, rng)
    X0, y0 = X.copy(), y.copy()
    conf = ConformalRegressor(Normal())
    with pytest.raises(NotFittedError, match="calibrate first"):
        conf.predict_interval(X)
    conf.calibrate(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    for bad in (0, 1, 1.5, "0.9"):
        with pytest.raises(ValueError, match="coverage must be a number between 0 and 1"):
            conf.predict_interval(X, coverage=bad)
    with pytest.raises(ValueError, match="y has 49 rows, X 50"):
        ConformalRegressor(Normal()).calibrate(X, y[:-1])
    with pytest.raises(ValueError, match="groups were not given to calibrate"):
        conf.predict_interval(X, groups=np.zeros(50))
    with pytest.raises(ValueError, match="score must be one of"):
        ConformalRegressor(Normal(), score="cqr").calibrate(X, y)
    by_group = ConformalRegressor(Normal()).calibrate(X, y, groups=np.zeros(50))
    with pytest.raises(ValueError, match="no calibration rows of group 1"):
        by_group.predict_interval(X[:2], groups=[0, 1])
    with pytest.raises(ValueError, match="pass the rows' groups"):
        by_group.predict_interval(X)
    Xc, yc = _classification(30, rng)
    with pytest.raises(ValueError, match="labels the estimator does not know: \\['z'\\]"):
        ConformalClassifier(Probabilities()).calibrate(Xc, np.where(yc == "a", "z", yc))


@pytest.mark.slow
def test_on_a_fitted_classifier_the_sets_cover_held_out_rows():
    """The default classifier on moons with label noise: 90 % sets cover 88-97 % of 1,000
    new rows (the guarantee in expectation, one draw of 300 calibration rows)."""
    from sklearn.datasets import make_moons

    from pymc_bnn import BayesianMLPClassifier

    X, y = make_moons(1600, noise=0.35, random_state=0)
    clf = BayesianMLPClassifier((8,), random_state=0).fit(X[:300], y[:300])
    conf = ConformalClassifier(clf, score="aps").calibrate(X[300:600], y[300:600])
    sets = conf.predict_set(X[600:], coverage=0.9)
    assert 0.88 <= sets[np.arange(1000), y[600:]].mean() <= 0.97
