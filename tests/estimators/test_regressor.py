"""BayesianMLPRegressor: Normal likelihood, learned (heteroscedastic) noise, intervals."""

import warnings

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import ndtr

import pymc_bnn.predictive._forward as FG
import pymc_bnn.predictive._predictive as P
from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor, build_model, fit
from pymc_bnn.policy._tempering import heldout_nll

#: float32 predictive on JAX: ~1e-7 relative rounding of means and sds
RTOL = 2e-5 if FG.backend()[1] == "float32" else 1e-10


def xsin(n=200, seed=0):
    """The numpyro lecture's example: y = x sin(5x) + N(0, 0.1^2), x in (-1, 1)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 1))
    return x, x[:, 0] * np.sin(5 * x[:, 0]) + 0.1 * rng.normal(size=n)


def hetero(n=400, seed=0):
    """Noise sd rising from 0.05 to 1.05 across x in (0, 1), a smooth mean."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, size=(n, 1))
    noise = 0.05 + x[:, 0]
    return x, np.sin(3 * x[:, 0]) + noise * rng.normal(size=n), noise


@pytest.fixture(scope="module")
def reg():
    X, y = xsin()
    return BayesianMLPRegressor((10,), n_iter=5000, n_draws=200, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def het_reg():
    X, y, _ = hetero()
    return BayesianMLPRegressor(
        (10,),
        heteroscedastic=True,
        n_iter=8000,
        n_draws=200,
        posterior_temperature=1.0,
        random_state=0,
    ).fit(X, y)


# -------------------------------------------------------------------- must-show
def test_diabetes_rmse_and_interval_coverage():
    """Issue #7: diabetes, 70/30 split (random_state=0), StandardScaler in a Pipeline,
    one hidden layer of 16. RMSE no worse than MLPRegressor of the same width and within
    5% of RidgeCV; the 90% predictive interval covers 85-95% of the test targets.
    Diabetes is nearly linear: Neal's precision prior lets the data choose strong
    shrinkage (measured RMSE ~55.1 vs ridge 55.7, MLP 57.1; the fixed N(0, 1) prior
    overfits slightly, ~58.4)."""
    from sklearn.datasets import load_diabetes
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

    def rmse(est):
        pipe = make_pipeline(StandardScaler(), est).fit(X_train, y_train)
        return np.sqrt(np.mean((pipe.predict(X_test) - y_test) ** 2)), pipe

    ridge, _ = rmse(RidgeCV())
    with warnings.catch_warnings():  # the peer stops at max_iter; its result is compared
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp, _ = rmse(MLPRegressor(hidden_layer_sizes=(16,), max_iter=5000, random_state=0))
    bnn, pipe = rmse(BayesianMLPRegressor((16,), prior="gamma_precision", random_state=0))
    assert bnn <= mlp and bnn <= 1.05 * ridge, (bnn, mlp, ridge)
    lower, upper = pipe[-1].predict_interval(pipe[0].transform(X_test), coverage=0.9)
    coverage = np.mean((lower <= y_test) & (y_test <= upper))
    assert 0.85 <= coverage <= 0.95, coverage


def test_heteroscedastic_interval_width_tracks_the_noise(het_reg):
    X, _, noise = hetero(seed=1)  # fresh points
    lower, upper = het_reg.predict_interval(X, coverage=0.9)
    r = np.corrcoef(upper - lower, noise)[0, 1]
    assert r > 0.8, r
    # the split: the aleatoric part carries the noise, the epistemic part is small
    unc = het_reg.predict_uncertainty(X)
    assert np.corrcoef(unc["aleatoric_std"], noise)[0, 1] > 0.8
    np.testing.assert_allclose(
        unc["std"] ** 2, unc["epistemic_std"] ** 2 + unc["aleatoric_std"] ** 2
    )


def test_homoscedastic_advi_fit_and_noise(reg):
    """Mean-field ADVI under-fits x sin(5x) a little and makes up for it with noise
    (measured: RMSE to the true function 0.14, noise 0.18 against the true 0.1; NUTS
    gets 0.02 and 0.10, see test_regressor_nuts): the bounds say 'a fit', not 'exact'."""
    X, y = xsin(seed=1)
    mean, std = reg.predict(X, return_std=True)
    assert np.sqrt(np.mean((mean - X[:, 0] * np.sin(5 * X[:, 0])) ** 2)) < 0.2
    noise = reg.idata_.posterior["sigma"].values.mean() * reg.y_scale_
    assert 0.06 < noise < 0.25, noise
    lower, upper = reg.predict_interval(X, coverage=0.9)
    assert 0.8 <= np.mean((lower <= y) & (y <= upper)) <= 0.97


# -------------------------------------------------------- fast path = slow path
@pytest.mark.parametrize("heteroscedastic", [False, True])
def test_regression_predictive_equals_numpy_loop(heteroscedastic):
    X, y = xsin(60)
    model = build_model(
        X,
        y,
        hidden_layer_sizes=(3,),
        likelihood="normal",
        heteroscedastic=heteroscedastic,
        random_state=0,
    )
    post = fit(model, n_iter=3000, random_seed=0)
    pred = P.posterior_predictive(post, n_draws=20, random_seed=1)
    mean, sd = pred.sample_normal(X)
    assert mean.shape == sd.shape == (20, 60)
    for s in range(20):
        (W0, b0), (W1, b1) = [(W[s], b[s]) for W, b in pred.weights]
        out = np.tanh(X @ W0 + b0) @ W1 + b1
        np.testing.assert_allclose(mean[s], out[:, 0], rtol=RTOL, atol=RTOL)
        if heteroscedastic:  # softplus + 0.001
            expected_sd = np.logaddexp(0, out[:, 1]) + 1e-3
        else:
            expected_sd = np.full(60, pred.noise[s])
        np.testing.assert_allclose(sd[s], expected_sd, rtol=RTOL, atol=RTOL)
    moments = pred.normal_summary(X)
    np.testing.assert_allclose(moments["mean"], mean.mean(0), rtol=1e-12)
    np.testing.assert_allclose(moments["std"] ** 2, mean.var(0) + (sd**2).mean(0), rtol=1e-12)
    # quantiles of the mixture: root of the mixture CDF, point by point
    q = pred.quantiles(X[:5], [0.05, 0.5, 0.95])
    for i in range(5):
        for j, level in enumerate((0.05, 0.5, 0.95)):
            root = brentq(
                lambda t: ndtr((t - mean[:, i]) / sd[:, i]).mean() - level, -50, 50, xtol=1e-12
            )
            assert abs(q[j, i] - root) < 1e-5 * moments["std"][i]


def test_targets_are_standardised_internally():
    """Fitting a * y + b gives a * prediction + b: the network sees the same
    standardised targets (so priors mean the same on any scale)."""
    X, y = xsin(80)
    # one fit each (no cross-fitted temperature): the test is about the targets' scale
    kw = dict(
        hidden_layer_sizes=(3,), n_iter=3000, n_draws=20, random_state=0, posterior_temperature=1.0
    )
    base = BayesianMLPRegressor(**kw).fit(X, y)
    scaled = BayesianMLPRegressor(**kw).fit(X, 1000.0 * y + 7.0)
    assert scaled.y_scale_ == pytest.approx(1000.0 * base.y_scale_)
    m0, s0 = base.predict(X, return_std=True)
    m1, s1 = scaled.predict(X, return_std=True)
    np.testing.assert_allclose(m1, 1000.0 * m0 + 7.0, rtol=1e-9)
    np.testing.assert_allclose(s1, 1000.0 * s0, rtol=1e-9)


def test_log_predictive_density_equals_numpy_loop(reg):
    """The public log predictive density is the log of the mean over draws of each
    draw's Normal density of y, in the units of y (a loop over draws and points)."""
    X, y = xsin(25, seed=4)
    y = 3.0 * y  # off the training scale: the density must not assume it
    got = reg.log_predictive_density(X, y)
    mean, sd = reg.predictive_.sample_normal(X)
    mean = mean * reg.y_scale_ + reg.y_mean_
    sd = sd * reg.y_scale_
    expected = np.empty(len(y))
    for i in range(len(y)):
        dens = [
            np.exp(-0.5 * ((y[i] - mean[s, i]) / sd[s, i]) ** 2) / (sd[s, i] * np.sqrt(2 * np.pi))
            for s in range(mean.shape[0])
        ]
        expected[i] = np.log(np.mean(dens))
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    # the model's held-out score uses the same function (standardised units)
    z = (y - reg.y_mean_) / reg.y_scale_
    np.testing.assert_allclose(
        -heldout_nll(reg.predictive_, X, z), got + np.log(reg.y_scale_), rtol=1e-12
    )
    with pytest.raises(ValueError, match="rows"):
        reg.log_predictive_density(X, y[:-1])
    with pytest.raises(ValueError, match="NaN|infinity"):
        reg.log_predictive_density(X, np.full(len(y), np.nan))


@pytest.mark.slow  # 13 small fits
@pytest.mark.filterwarnings("ignore:ADVI stopped before")  # short fits serve here
def test_kl_weight_auto_fits_every_candidate_on_the_folds_and_keeps_the_best(monkeypatch, tmp_path):
    """kl_weight="auto": the temperature's three folds are fit at every candidate KL
    weight (total_size = rows / weight), each scored on a temperature grid divided by
    its weight; the best (weight, temperature) is kept and the kept fit uses that
    weight. A fixed weight fits the folds and the kept fit at it. Seeded, and saved."""
    from pymc_bnn.estimators import KL_WEIGHTS
    from pymc_bnn.policy._tempering import TEMPERATURES

    X, y = xsin(60)
    calls = []
    real = BayesianMLPRegressor._fit_network

    def spy(self, X, *args, **kwargs):
        calls.append((len(X), kwargs.get("total_size")))
        return real(self, X, *args, **kwargs)

    monkeypatch.setattr(BayesianMLPRegressor, "_fit_network", spy)
    kw = dict(hidden_layer_sizes=(3,), n_iter=500, n_draws=20, random_state=0)
    reg = BayesianMLPRegressor(kl_weight="auto", **kw).fit(X, y)
    *folds, kept = calls
    assert sorted(folds, key=str) == sorted(
        [(40, None if w == 1 else round(40 / w)) for w in KL_WEIGHTS for _ in range(3)], key=str
    )
    w = reg.kl_weight_
    assert kept == (60, None if w == 1 else round(60 / w))
    sel = reg.kl_weight_selection_
    assert sel["kl_weights"] == list(KL_WEIGHTS)
    best = int(np.argmin(sel["scores"]))
    assert sel["kl_weights"][best] == w and reg.posterior_temperature_ == sel["temperatures"][best]
    assert reg.temperature_selection_.temperatures == tuple(t / w for t in TEMPERATURES)
    again = BayesianMLPRegressor(kl_weight="auto", **kw).fit(X, y)
    np.testing.assert_array_equal(again.predict(X), reg.predict(X))
    reg.save(tmp_path / "reg.nc")
    loaded = BayesianMLPRegressor.load(tmp_path / "reg.nc")
    assert loaded.kl_weight_ == w and loaded.kl_weight_selection_ == sel
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    calls.clear()
    fixed = BayesianMLPRegressor(kl_weight=0.25, **kw).fit(X, y)
    assert sorted(calls) == sorted([(40, 160)] * 3 + [(60, 240)])
    assert fixed.kl_weight_ == 0.25 and fixed.kl_weight_selection_ is None
    with pytest.raises(ValueError, match="kl_weight"):
        BayesianMLPRegressor(kl_weight=0.0).fit(X, y)


# -------------------------------------------------------------------- contract
def test_regressor_api_shapes_seeding_and_errors(reg):
    X, y = xsin(30, seed=2)
    assert reg.predict(X).shape == (30,)
    samples = reg.sample_y(X, n_samples=7, random_state=3)
    assert samples.shape == (30, 7)
    np.testing.assert_array_equal(samples, reg.sample_y(X, n_samples=7, random_state=3))
    assert reg.score(X, y) > 0.7  # R^2; the noise alone caps it near 0.95
    with pytest.raises(ValueError, match="coverage"):
        reg.predict_interval(X, coverage=1.5)
    with pytest.raises(ValueError, match="n_samples"):
        reg.sample_y(X, n_samples=0)
    with pytest.raises(ValueError, match="not available for a regression"):
        reg.predictive_.sample_proba(X)
    with pytest.raises(ValueError, match="NaN|infinity"):
        BayesianMLPRegressor(n_iter=10).fit(X, np.full(30, np.nan))
    with pytest.raises(ValueError):
        BayesianMLPRegressor(n_iter=10).fit(X, np.array(["a"] * 30))


def test_same_seed_identical_and_inputs_untouched():
    X, y = xsin(50)
    X0, y0 = X.copy(), y.copy()
    kw = dict(hidden_layer_sizes=(3,), n_iter=5000, n_draws=20, random_state=5)
    a = BayesianMLPRegressor(**kw).fit(X, y).predict(X, return_std=True)
    b = BayesianMLPRegressor(**kw).fit(X, y).predict(X, return_std=True)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_regressor_n_init_keeps_its_best_start():
    """The regressor shares the classifier's starts (base.BayesianMLPBase._fit_from_starts)."""
    X, y = xsin(80)
    kw = dict(
        hidden_layer_sizes=(3,), n_iter=3000, n_draws=20, random_state=0, posterior_temperature=1.0
    )
    one = BayesianMLPRegressor(**kw).fit(X, y)
    two = BayesianMLPRegressor(n_init=2, **kw).fit(X, y)
    assert one.start_losses_.shape == (1,) and two.start_losses_.shape == (2,)
    assert two.start_losses_[0] == one.start_losses_[0]
    assert two.diagnostics_["final_loss"] == two.start_losses_.min()


def test_regressor_save_load_roundtrip(reg, tmp_path):
    X, _ = xsin(20, seed=3)
    path = reg.save(tmp_path / "reg.nc")
    loaded = BayesianMLPRegressor.load(path)
    np.testing.assert_array_equal(
        loaded.predict(X, return_std=True), reg.predict(X, return_std=True)
    )
    np.testing.assert_array_equal(loaded.predict_interval(X), reg.predict_interval(X))
    with pytest.raises(ValueError, match="holds a BayesianMLPRegressor"):
        BayesianMLPClassifier.load(path)


def test_regressor_with_groups():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(120, 1))
    g = np.repeat([0, 1, 2], 40)
    y = (1.0 + g) * X[:, 0] + 0.05 * rng.normal(size=120)  # slope depends on the group
    # one fit (no cross-fitted temperature): the test is about the groups
    reg = BayesianMLPRegressor(
        (4,), n_iter=4000, n_draws=100, posterior_temperature=1.0, random_state=0
    ).fit(X, y, groups=g)
    x = np.full((3, 1), 0.8)
    pred = reg.predict(x, groups=np.array([0, 1, 2]))
    np.testing.assert_allclose(pred, [0.8, 1.6, 2.4], atol=0.25)
    assert reg.score(X, y, groups=g) > reg.score(X, y)  # per-group beats population


@pytest.mark.slow
# With the default Neal prior (per-layer precisions) and tune=500 this run has tens of
# divergent transitions in 400 draws (the funnel between a layer's precision and its
# weights; 69 when this was written, with R-hat 1.02 / tail ESS 46 of the means; 51,
# R-hat 1.007 / tail ESS 236 on 2026-11-26): the warning is right, and the test checks
# only what the draws recover
@pytest.mark.filterwarnings("ignore::pymc_bnn.exceptions.SamplingWarning")
def test_regressor_nuts_recovers_function_and_noise():
    """NUTS on the same data: measured RMSE to the true function 0.023, noise 0.103."""
    X, y = xsin()
    nuts = BayesianMLPRegressor((10,), inference="nuts", n_draws=200, tune=500, random_state=0).fit(
        X, y
    )
    assert nuts.idata_.posterior.sizes["chain"] == 2
    X_new, _ = xsin(seed=1)
    mean = nuts.predict(X_new)
    assert np.sqrt(np.mean((mean - X_new[:, 0] * np.sin(5 * X_new[:, 0])) ** 2)) < 0.05
    noise = nuts.idata_.posterior["sigma"].values.mean() * nuts.y_scale_
    assert 0.08 < noise < 0.13, noise  # true 0.1
