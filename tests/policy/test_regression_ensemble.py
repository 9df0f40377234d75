"""The regressor's mixture of last-layer Gaussians (``inference="laplace_ensemble"``, its
default above the short NUTS run's limit): the output layer's exact posterior against
Bayesian linear regression's definitions, the noise fitted with the weights, early
stopping on the held-out rows, the held-out calibration, and the estimator's path."""

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from pymc_bnn import BayesianMLPRegressor
from pymc_bnn.inference._map_ensemble import (
    _phi,
    fit_map_ensemble,
    holdout_masks,
    initial_theta,
    last_layer_regression,
    member_normal_moments,
    member_seeds,
)
from pymc_bnn.policy._describe import describe
from pymc_bnn.policy._ensemble import heldout_normal_calibration

SHAPES = ((3, 5), (5, 1))


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + rng.normal(0, 0.3, 240)
    return X, (y - y.mean()) / y.std()


def test_the_output_layer_s_posterior_is_bayesian_linear_regression(table):
    """At the precisions it returns, the Gaussian is the exact posterior of the output
    layer given the features (mean and precision by their formulas), the precisions
    are MacKay's fixed point, and its log evidence is the marginal likelihood of a
    Normal vector."""
    X, y = table
    theta = initial_theta(SHAPES, 1)
    g = last_layer_regression(X, y, theta, 0.5, layer_shapes=SHAPES)
    phi = _phi(SHAPES, "tanh", None, theta, X)
    beta, delta = 1.0 / g.noise_sd**2, 1.0 / g.prior_sigmas[-1] ** 2
    A = beta * phi.T @ phi + delta * np.eye(phi.shape[1])
    np.testing.assert_allclose(g.chol @ g.chol.T, A, rtol=1e-10)
    mean = np.linalg.solve(A, beta * phi.T @ y)
    np.testing.assert_allclose(g.theta[g.first_random :], mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(g.theta[: g.first_random], theta[: g.first_random])
    gamma = np.sum(1 - delta * np.diag(np.linalg.inv(A)))
    assert math.isclose(delta, gamma / (mean @ mean), rel_tol=1e-5)
    ssr = np.sum((y - phi @ mean) ** 2)
    assert math.isclose(beta, (len(y) - gamma) / ssr, rel_tol=1e-5)
    cov = phi @ phi.T / delta + np.eye(len(y)) / beta
    assert math.isclose(
        g.log_evidence, multivariate_normal(np.zeros(len(y)), cov).logpdf(y), rel_tol=1e-8
    )


def test_the_members_moments_are_the_gaussian_s(table):
    X, y = table
    g = last_layer_regression(X, y, initial_theta(SHAPES, 2), 0.5, layer_shapes=SHAPES)
    mean, var = member_normal_moments(g, X[:7], layer_shapes=SHAPES, activation="tanh")
    phi = _phi(SHAPES, "tanh", None, g.theta, X[:7])
    cov = np.linalg.inv(g.chol @ g.chol.T)
    np.testing.assert_allclose(mean, phi @ g.theta[g.first_random :], rtol=1e-10)
    np.testing.assert_allclose(var, np.einsum("ij,jk,ik->i", phi, cov, phi), rtol=1e-8)


def test_vectorised_regression_members_are_the_networks_fit_one_at_a_time(table):
    """Members trained together (their noise sds with them, early stopping on their
    held-out rows) end where each ends alone."""
    X, y = table
    holdout = holdout_masks(y, 3, seed=2, fraction=0.2)
    starts = np.stack([initial_theta(SHAPES, s) for s in member_seeds(2, 3)])
    kw = {
        "layer_shapes": SHAPES,
        "seed": 2,
        "dtype": "float64",
        "learning_rate": 0.01,
        "regression": True,
        "validate": True,
    }
    together = fit_map_ensemble(X, y, n_members=3, holdout=holdout, starts=starts, **kw)
    for k in range(3):
        alone = fit_map_ensemble(
            X, y, n_members=1, holdout=holdout[k : k + 1], starts=starts[k : k + 1], **kw
        )
        np.testing.assert_allclose(together.thetas[k], alone.thetas[0], rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(together.noise_sd[k], alone.noise_sd[0], rtol=1e-7)


def test_the_noise_sd_is_fitted_with_the_weights():
    """On a linear table with noise sd 0.3 the members' noise sds come near it."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 3))
    y = X @ np.array([0.5, -0.3, 0.2]) + rng.normal(0, 0.3, 600)
    fit = fit_map_ensemble(
        X, y, layer_shapes=SHAPES, n_members=2, seed=0, regression=True, dtype="float64"
    )
    assert fit.noise_sd.shape == (2,)
    np.testing.assert_allclose(fit.noise_sd, 0.3, rtol=0.1)


def test_early_stopping_on_held_out_rows_is_taken_and_keeps_the_best_weights():
    """A wide network on few noisy rows: with ``validate`` each member stops sooner and
    its weights are those of its lowest held-out squared error among the checks."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + rng.normal(0, 1.0, 120)
    shapes = ((3, 40), (40, 1))
    holdout = holdout_masks(y, 2, seed=0, fraction=0.25)
    kw = {
        "layer_shapes": shapes,
        "n_members": 2,
        "seed": 0,
        "holdout": holdout,
        "regression": True,
        "dtype": "float64",
        "learning_rate": 0.01,
        "prior_sigma": 10.0,
    }
    plain = fit_map_ensemble(X, y, **kw)
    watched = fit_map_ensemble(X, y, validate=True, **kw)
    assert np.all(watched.n_epochs < plain.n_epochs)

    def held_error(fit, k):
        w = fit.thetas[k]
        out = _phi(shapes, "tanh", None, w, X[holdout[k]]) @ w[-41:]
        return np.mean((y[holdout[k]] - out) ** 2)

    for k in range(2):
        assert held_error(watched, k) < held_error(plain, k)


def test_the_held_out_rows_choose_the_noise_the_members_miss(table):
    """Members whose noise sd is half the true one: the held-out rows choose a noise
    variance factor near 4."""
    X, y = table
    shapes = ((3, 5), (5, 1))
    holdout = holdout_masks(y, 5, seed=0)
    fits = fit_map_ensemble(
        X,
        y,
        layer_shapes=shapes,
        n_members=5,
        seed=0,
        holdout=holdout,
        regression=True,
        validate=True,
    )
    gaussians = []
    for theta, noise, held in zip(fits.thetas, fits.noise_sd, holdout):
        g = last_layer_regression(X[~held], y[~held], theta, noise, layer_shapes=shapes)
        gaussians.append(type(g)(**{**g.__dict__, "noise_sd": g.noise_sd / 2}))
    selection, scale = heldout_normal_calibration(
        X, y, gaussians, holdout, layer_shapes=shapes, temperatures=(0.0,)
    )
    assert selection.temperature == 0.0
    assert 2.5 < scale < 6.0


@pytest.fixture(scope="module")
def default_reg():
    """Above the short NUTS run's limit (1,000 rows x 601 parameters), ``auto`` fits the
    mixture."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1000, 4))
    y = 3.0 * np.sin(X[:, 0]) + X[:, 1] + rng.normal(0, 0.5, 1000) + 10.0
    return X, y, BayesianMLPRegressor(hidden_layer_sizes=(100,), random_state=1).fit(X, y)


def test_auto_above_the_nuts_limit_is_the_ensemble_and_reproducible(default_reg):
    X, y, reg = default_reg
    assert reg.inference_ == "laplace_ensemble" and reg.nuts_run_ is None
    rec = reg.ensemble_
    assert rec["members"] == 5 and len(rec["noise_sd"]) == 5 and rec["noise_scale"] >= 1
    assert reg.score(X, y) > 0.8
    again = BayesianMLPRegressor(hidden_layer_sizes=(100,), random_state=1).fit(X, y)
    np.testing.assert_array_equal(
        again.predict(X[:50], return_std=True), reg.predict(X[:50], return_std=True)
    )
    line = describe(reg)[0]
    assert line.startswith("predictions: 5 networks at their most probable")
    sds = np.asarray(rec["noise_sd"]) * reg.y_scale_
    assert f"noise sd {min(sds):.3g} to {max(sds):.3g}" in line


def test_the_regression_predictive_is_the_members_normal_mixture(default_reg):
    """The compiled predictive's mean and sd equal the moments of the stored draws'
    Normal mixture, computed in NumPy, in the target's units."""
    X, _, reg = default_reg
    post = reg.idata_.posterior
    means, sds = [], []
    for d in range(post.sizes["draw"]):
        h = np.tanh(X[:30] @ post["w0"].values[0, d] + post["b0"].values[0, d])
        means.append((h @ post["w1"].values[0, d] + post["b1"].values[0, d])[:, 0])
        sds.append(float(post["sigma"].values[0, d]))
    means, sds = np.array(means), np.array(sds)[:, None]
    mean = means.mean(0)
    sd = np.sqrt((means**2 + sds**2).mean(0) - mean**2)
    got_mean, got_sd = reg.predict(X[:30], return_std=True)
    np.testing.assert_allclose(got_mean, mean * reg.y_scale_ + reg.y_mean_, rtol=1e-5)
    np.testing.assert_allclose(got_sd, sd * reg.y_scale_, rtol=1e-4)


def test_the_regression_ensemble_saves_and_loads(default_reg, tmp_path):
    X, _, reg = default_reg
    reg.save(tmp_path / "r.nc")
    back = BayesianMLPRegressor.load(tmp_path / "r.nc")
    assert back.inference_ == "laplace_ensemble" and back.ensemble_ == reg.ensemble_
    np.testing.assert_array_equal(back.predict(X[:20]), reg.predict(X[:20]))


def test_small_tables_keep_the_short_nuts_run_and_heteroscedastic_keeps_advi(monkeypatch):
    """Checked before anything is fit (the fit is cut short)."""
    import pymc_bnn.estimators._base as B

    class Stop(Exception):
        pass

    def stop(self, *args, **kw):
        raise Stop(self.inference_)

    monkeypatch.setattr(B.BayesianMLPBase, "_choose_prior_scales", stop)
    monkeypatch.setattr(B.BayesianMLPBase, "_fit_ensemble", stop)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(1000, 4)), rng.normal(size=1000)
    with pytest.raises(Stop, match="laplace_ensemble"):
        BayesianMLPRegressor(hidden_layer_sizes=(100,)).fit(X, y)
    with pytest.raises(Stop, match="advi"):
        BayesianMLPRegressor(hidden_layer_sizes=(100,), heteroscedastic=True).fit(X, y)
    with pytest.raises(Stop, match="advi"):
        BayesianMLPRegressor(hidden_layer_sizes=(100,), n_iter=300).fit(X, y)
    pytest.importorskip("numpyro")
    with pytest.raises(Stop, match="nuts"):
        BayesianMLPRegressor(hidden_layer_sizes=(5,)).fit(X[:100], y[:100])


@pytest.mark.filterwarnings("ignore:ADVI stopped before")  # a short fit serves here
def test_describe_says_why_auto_did_not_fit_the_ensemble():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 2)), rng.normal(size=60)
    reg = BayesianMLPRegressor(
        (3,), heteroscedastic=True, n_iter=300, n_draws=20, random_state=0
    ).fit(X, y)
    assert reg.inference_ == "advi"
    assert describe(reg)[0] == (
        "fit: mean-field ADVI, as the noise sd varies with the features (heteroscedastic)"
    )
