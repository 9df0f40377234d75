"""The log-scale regressor and the choice of noise model by held-out likelihood."""

import numpy as np
import pytest
from scipy.integrate import trapezoid

from pymc_bnn import BayesianMLPRegressor
from pymc_bnn.policy._noise import (
    MIN_HELD_OUT,
    NOISE_MODELS,
    NoiseChoice,
    choose_noise,
    noise_candidates,
    noise_line,
)

# cheap fits: plain ADVI at temperature 1 (no cross-fitting)
FAST = {"inference": "advi", "n_iter": 3000, "posterior_temperature": 1.0, "n_draws": 200}


def _skewed(n, seed=0):
    """A positive target whose noise is a fraction of its value (log-normal)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.exp(1.0 + 0.8 * X[:, 0] + 0.4 * rng.normal(size=n))
    return X, y


@pytest.fixture(scope="module")
def log_pair():
    X, y = _skewed(200)
    log = BayesianMLPRegressor((4,), target_scale="log", random_state=0, **FAST).fit(X, y)
    # the obvious slow path: the same network fit to log(y) on the linear scale
    linear = BayesianMLPRegressor((4,), random_state=0, **FAST).fit(X, np.log(y))
    return X, y, log, linear


def test_log_scale_is_the_linear_model_of_log_y(log_pair):
    X, y, log, linear = log_pair
    lo, hi = log.predict_interval(X[:20], coverage=0.8)
    lin_lo, lin_hi = linear.predict_interval(X[:20], coverage=0.8)
    np.testing.assert_allclose(lo, np.exp(lin_lo), rtol=1e-10)
    np.testing.assert_allclose(hi, np.exp(lin_hi), rtol=1e-10)
    # the density of y = exp(z) is p(z) / y
    np.testing.assert_allclose(
        log.log_predictive_density(X[:20], y[:20]),
        linear.log_predictive_density(X[:20], np.log(y[:20])) - np.log(y[:20]),
        rtol=1e-10,
    )


def test_log_scale_mean_and_sd_are_the_densitys_moments(log_pair):
    # the closed-form log-normal mixture moments against numerical integration of the
    # predictive density the estimator reports
    X, _, log, _ = log_pair
    u = log.predict_uncertainty(X[:3])
    for i in range(3):
        grid = np.linspace(1e-3, u["mean"][i] + 12 * u["std"][i], 40_000)
        density = np.exp(log.log_predictive_density(np.repeat(X[i : i + 1], grid.size, 0), grid))
        mass = trapezoid(density, grid)
        mean = trapezoid(grid * density, grid)
        sd = np.sqrt(trapezoid((grid - mean) ** 2 * density, grid))
        assert mass == pytest.approx(1.0, abs=2e-3)
        assert u["mean"][i] == pytest.approx(mean, rel=2e-3)
        assert u["std"][i] == pytest.approx(sd, rel=5e-3)
    np.testing.assert_allclose(u["std"] ** 2, u["epistemic_std"] ** 2 + u["aleatoric_std"] ** 2)


def test_log_scale_draws_are_positive_and_match_the_mean(log_pair):
    X, _, log, _ = log_pair
    draws = log.sample_y(X[:4], n_samples=20_000, random_state=1)
    assert (draws > 0).all()
    u = log.predict_uncertainty(X[:4])
    np.testing.assert_allclose(draws.mean(axis=1), u["mean"], rtol=0.05)


def test_log_scale_refuses_a_non_positive_target():
    X, y = _skewed(50)
    y[[3, 7]] = [0.0, -1.0]
    with pytest.raises(ValueError, match="needs a positive target, but 2 values"):
        BayesianMLPRegressor((3,), target_scale="log", **FAST).fit(X, y)
    fitted = BayesianMLPRegressor((3,), target_scale="log", random_state=0, **FAST).fit(
        X[y > 0], y[y > 0]
    )
    with pytest.raises(ValueError, match="positive target"):
        fitted.log_predictive_density(X[:5], y[:5])


def test_log_scale_survives_save_and_load(log_pair, tmp_path):
    X, _, log, _ = log_pair
    log.save(tmp_path / "log.nc")
    loaded = BayesianMLPRegressor.load(tmp_path / "log.nc")
    assert loaded.target_scale == "log"
    np.testing.assert_array_equal(loaded.predict(X[:10]), log.predict(X[:10]))
    np.testing.assert_array_equal(
        loaded.predict_interval(X[:10], 0.9), log.predict_interval(X[:10], 0.9)
    )


def test_candidates_follow_the_target():
    assert noise_candidates(np.exp(np.random.default_rng(0).normal(size=300))) == (
        "constant",
        "varying",
        "log",
    )
    symmetric = np.random.default_rng(0).normal(10, 1, size=300)
    assert noise_candidates(symmetric) == ("constant", "varying")
    assert "log" not in noise_candidates(np.r_[0.0, np.exp(np.arange(50.0))])


def test_too_few_rows_keep_constant_noise_without_fitting():
    X, y = _skewed(2 * MIN_HELD_OUT - 1)
    choice = choose_noise(BayesianMLPRegressor(inference="nuts"), X, y)
    assert choice.chosen == "constant" and choice.n_held_out == 0
    assert "too few rows" in noise_line(choice)
    with pytest.raises(ValueError, match="candidates must be among"):
        choose_noise(BayesianMLPRegressor(), X, y, candidates=["gamma"])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short ADVI runs
def test_choice_finds_value_proportional_noise_and_keeps_constant_noise():
    X, y = _skewed(400, seed=1)
    est = BayesianMLPRegressor((4,), random_state=0, **FAST)
    X_before, y_before = X.copy(), y.copy()
    choice = choose_noise(est, X, y, random_state=0)
    assert choice.chosen == "log", choice
    # every model by the screen; varying noise not preferred there: no second round
    (screen,) = choice.rounds
    assert list(screen["models"]) == ["constant", "log", "varying"]
    assert screen["fits"] == "screen" and screen["kept"] == "log"
    assert choice.gain == pytest.approx(screen["models"]["log"] - screen["models"]["constant"])
    assert choice.gain > 0.1
    assert dict(choice.params) == dict(NOISE_MODELS["log"])
    assert not hasattr(est, "posterior_")  # the estimator given is not fitted
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)
    assert NoiseChoice(**choice.as_dict()) == choice  # as a model file keeps it
    # the same noise everywhere: nothing is clearly better than constant noise
    rng = np.random.default_rng(2)
    Xn = rng.normal(size=(400, 2))
    yn = np.sin(2 * Xn[:, 0]) + 0.3 * rng.normal(size=400)
    plain = choose_noise(est, Xn, yn, random_state=0)
    assert plain.chosen == "constant" and plain.gain is None, plain
    assert list(plain.rounds[0]["models"]) == ["constant", "varying"]
    assert plain.n_held_out == 80
    assert noise_line(plain) == (
        "noise: one sd for all rows (no other noise model clearly better on held-out rows)"
    )


def test_a_screens_preference_for_varying_noise_is_confirmed_as_fit(monkeypatch):
    """Where the screen prefers varying noise, the kept scale and varying noise are
    fit again with the estimator's own settings, and that round decides; the gain is
    the deciding round's."""
    from pymc_bnn.policy import _noise as noise_choice

    X, y = _skewed(200)
    calls = []
    screen_scores = {"constant": -2.0, "log": -1.5, "varying": -1.0}
    as_set = {"constant": -2.1, "log": -1.2, "varying": -1.6}  # as fit, log is better

    def density(estimator, name, settings, X, y, groups, rows, progress):
        calls.append((name, settings is None))
        base = (as_set if settings is None else screen_scores)[name]
        return base + 0.01 * np.random.default_rng(len(calls)).normal(size=len(rows["held"]))

    monkeypatch.setattr(noise_choice, "_held_out_density", density)
    choice = choose_noise(BayesianMLPRegressor(), X, y)
    assert calls == [
        ("constant", False),
        ("log", False),
        ("varying", False),
        ("log", True),
        ("varying", True),
    ]
    assert [r["kept"] for r in choice.rounds] == ["varying", "log"]
    assert choice.chosen == "log"
    assert choice.gain == pytest.approx(0.5, abs=0.01)  # the screen's log vs constant
    as_set.update(varying=-0.9)  # now confirmed
    calls.clear()
    choice = choose_noise(BayesianMLPRegressor(), X, y)
    assert choice.chosen == "varying" and choice.gain == pytest.approx(0.3, abs=0.01)
    assert noise_line(choice) == (
        "noise: its sd a function of the features (held-out "
        f"log-likelihood {choice.gain:+.3f} per row)"
    )
    calls.clear()
    choose_noise(BayesianMLPRegressor(), X, y, screen=None)  # as set from the start
    assert calls == [("constant", True), ("log", True), ("varying", True)]


@pytest.mark.slow
def test_log_scale_above_the_nuts_limit_is_the_ensemble_on_log_y():
    """The default above the short NUTS run's limit (the mixture of Laplace
    approximations) on the log scale: the interval is the exponentiated interval of the
    same ensemble fit to log(y), the mean that of the draws, the brief line short."""
    from pymc_bnn.policy._describe import BRIEF_WIDTH, describe

    X, y = _skewed(1100, seed=3)
    X = np.column_stack([X, np.random.default_rng(3).normal(size=(1100, 4))])
    log = BayesianMLPRegressor((80,), target_scale="log", random_state=0).fit(X, y)
    linear = BayesianMLPRegressor((80,), random_state=0).fit(X, np.log(y))
    assert log.inference_ == linear.inference_ == "laplace_ensemble"
    lo, hi = log.predict_interval(X[:30], coverage=0.9)
    lin_lo, lin_hi = linear.predict_interval(X[:30], coverage=0.9)
    np.testing.assert_allclose([lo, hi], np.exp([lin_lo, lin_hi]), rtol=1e-10)
    draws = log.sample_y(X[:3], n_samples=20_000, random_state=0)
    np.testing.assert_allclose(draws.mean(axis=1), log.predict(X[:3]), rtol=0.05)
    brief = describe(log, brief=True)
    assert brief[0] == "target: modelled on the log scale"
    assert "noise sd" in brief[1] and brief[1].endswith("(log)")
    assert all(len(line) <= BRIEF_WIDTH for line in brief)


def test_log_scale_moments_in_row_blocks_equal_one_block(log_pair, monkeypatch):
    X, _, log, _ = log_pair
    whole = log.predict_uncertainty(X[:50])
    monkeypatch.setattr(log, "_LOG_MOMENT_ROWS", 7)  # 8 blocks, the last short
    blocks = log.predict_uncertainty(X[:50])
    for key in whole:
        np.testing.assert_allclose(blocks[key], whole[key], rtol=1e-12)
