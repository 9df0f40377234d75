"""inference="laplace": the evidence-tuned linearised Laplace approximation
(pymc_bnn.inference.laplace)."""

import numpy as np
import pytest
import scipy.linalg as sla
from sklearn.linear_model import BayesianRidge

import pymc_bnn.inference.laplace as lap_module
import pymc_bnn.predictive._predictive as P
from pymc_bnn import BayesianMLPRegressor
from pymc_bnn.inference.laplace import MAX_PARAMS, fit_laplace, laplace_draws
from pymc_bnn.network._flat import flatten, unflatten


def xsin(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 1))
    return x, x[:, 0] * np.sin(5 * x[:, 0]) + 0.1 * rng.normal(size=n)


def numpy_net(theta, X, shapes):
    """Output and Jacobian (n, P) of a one-hidden-layer tanh network, by hand."""
    (W1, b1), (W2, b2) = unflatten(theta, shapes)
    a = np.tanh(X @ W1 + b1)
    f = a @ W2[:, 0] + b2[0]
    s = (1 - a**2) * W2[:, 0]  # d f / d pre-activation
    J = np.concatenate(
        [(X[:, :, None] * s[:, None, :]).reshape(len(X), -1), s, a, np.ones((len(X), 1))], axis=1
    )
    return f, J


@pytest.fixture(scope="module")
def lap():
    X, y = xsin()
    return BayesianMLPRegressor((10,), inference="laplace", n_draws=300, random_state=0).fit(X, y)


def test_without_hidden_layers_it_is_bayesian_ridge():
    """No hidden layer: the network is linear, the Laplace approximation exact, and
    MacKay's evidence procedure is scikit-learn's BayesianRidge (the bias as a column
    of ones, under the same prior precision; its Gamma hyperpriors made flat)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    y = X @ np.array([0.8, -0.5, 0.0]) + 0.3 * rng.normal(size=150)
    y = (y - y.mean()) / y.std()
    gaussian, _ = fit_laplace(X, y, layer_shapes=((3, 1),), random_state=0)
    Xa = np.column_stack([X, np.ones(len(X))])
    beta, delta = gaussian.noise_sd**-2, gaussian.prior_sigmas[0] ** -2
    A = beta * Xa.T @ Xa + delta * np.eye(4)
    np.testing.assert_allclose(gaussian.chol @ gaussian.chol.T, A, rtol=1e-10)
    np.testing.assert_allclose(
        gaussian.theta, beta * np.linalg.solve(A, Xa.T @ y), rtol=1e-7, atol=1e-9
    )
    ridge = BayesianRidge(
        fit_intercept=False,
        tol=1e-12,
        max_iter=10_000,
        alpha_1=1e-12,
        alpha_2=1e-12,
        lambda_1=1e-12,
        lambda_2=1e-12,
    ).fit(Xa, y)
    np.testing.assert_allclose(gaussian.theta, ridge.coef_, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(beta, ridge.alpha_, rtol=2e-2)
    np.testing.assert_allclose(delta, ridge.lambda_, rtol=2e-2)


def test_linearised_draws_equal_the_numpy_linearisation_and_the_closed_form():
    """The fast predictive's draws are f(x; theta) + J(x)(theta_s - theta) (checked
    against a hand-written Jacobian), and their mixture is the GLM predictive
    Normal(f, J A^-1 J^T + noise^2) up to Monte Carlo error."""
    X, y = xsin(120, seed=3)
    reg = BayesianMLPRegressor(
        (6,), inference="laplace", posterior_temperature=1.0, random_state=0
    ).fit(X, y)
    post = reg.posterior_
    g, shapes = post.laplace, post.spec.layer_shapes
    pred = P.posterior_predictive(post, n_draws=20_000, random_seed=1)
    Xt = np.linspace(-1.5, 1.5, 25)[:, None]
    mean, sd = pred.sample_normal(Xt)
    f, J = numpy_net(g.theta, Xt, shapes)
    offsets = flatten(pred.weights) - g.theta
    np.testing.assert_allclose(mean, f + offsets @ J.T, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sd, g.noise_sd)
    V = sla.solve_triangular(g.chol, J.T, lower=True)
    epistemic = np.einsum("ij,ij->j", V, V)
    moments = pred.normal_summary(Xt)
    # 20,000 draws: the sample variance is within ~4 x sqrt(2 / 20,000) = 4% of the truth
    np.testing.assert_allclose(moments["epistemic_std"] ** 2, epistemic, rtol=0.05)
    np.testing.assert_allclose(moments["mean"], f, atol=4 * np.sqrt(epistemic.max() / 20_000))


def test_the_linearised_path_is_taken(lap, monkeypatch):
    """A Laplace fit predicts through the linearised network, not the plain forward of
    its draws (which differs: the "sampled Laplace" predictive)."""
    X = np.linspace(-1, 1, 7)[:, None]
    pred = lap.predictive_
    assert pred.linearized_at is not None and not pred._wide
    plain = P.PosteriorPredictive(spec=pred.spec, weights=pred.weights, noise=pred.noise)
    assert not np.allclose(plain.sample_normal(X)[0], pred.sample_normal(X)[0])
    calls = []
    original = P.linearised_outputs
    monkeypatch.setattr(P, "linearised_outputs", lambda *a: calls.append(1) or original(*a))
    lap.predict(X)
    assert calls


def test_laplace_regressor_fits_predicts_and_round_trips(lap, tmp_path):
    X, y = xsin(300, seed=7)
    mean, std = lap.predict(X, return_std=True)
    assert np.sqrt(np.mean((mean - y) ** 2)) < 0.2  # the noise sd is 0.1
    lower, upper = lap.predict_interval(X, coverage=0.9)
    assert 0.8 <= np.mean((y > lower) & (y < upper)) <= 0.98
    assert lap.inference_ == "laplace" and lap.diagnostics_["method"] == "laplace"
    assert lap.idata_.posterior["w0"].shape == (1, 300, 1, 10)
    assert lap.posterior_temperature_ > 0 and lap.temperature_selection_ is not None
    # the scales the evidence chose are the spec's prior; the noise its point estimate
    assert len(lap.posterior_.spec.prior_sigma) == 2
    np.testing.assert_allclose(
        lap.predict_uncertainty(X)["aleatoric_std"], lap.posterior_.laplace.noise_sd * lap.y_scale_
    )
    path = lap.save(tmp_path / "laplace.nc")
    back = BayesianMLPRegressor.load(path)
    np.testing.assert_array_equal(back.predict(X, return_std=True)[1], std)
    np.testing.assert_array_equal(
        back.log_predictive_density(X, y), lap.log_predictive_density(X, y)
    )


def test_laplace_is_seeded_and_leaves_inputs_alone():
    X, y = xsin(80, seed=2)
    X0, y0 = X.copy(), y.copy()
    kw = dict(inference="laplace", n_draws=100, posterior_temperature=1.0)
    a = BayesianMLPRegressor((4,), random_state=5, **kw).fit(X, y)
    b = BayesianMLPRegressor((4,), random_state=5, **kw).fit(X, y)
    np.testing.assert_array_equal(
        a.predict(X, return_std=True)[1], b.predict(X, return_std=True)[1]
    )
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_several_starts_keep_the_highest_evidence():
    X, y = xsin(80, seed=4)
    reg = BayesianMLPRegressor(
        (4,), inference="laplace", n_init=3, n_draws=50, posterior_temperature=1.0, random_state=0
    ).fit(X, y)
    assert reg.start_losses_.shape == (3,)
    assert reg.diagnostics_["final_loss"] == reg.start_losses_.min()
    assert reg.diagnostics_["log_evidence"] == -reg.start_losses_.min()


def test_tempering_scales_the_spread_around_the_map():
    X, y = xsin(60, seed=5)
    g, _ = fit_laplace(X, (y - y.mean()) / y.std(), layer_shapes=((1, 3), (3, 1)), random_state=0)
    shapes = ((1, 3), (3, 1))

    def offsets(draws):
        weights = [(draws[f"w{i}"], draws[f"b{i}"]) for i in range(2)]
        return flatten(weights) - g.theta

    one = offsets(laplace_draws(g, shapes, 40, 9))
    four = offsets(laplace_draws(g, shapes, 40, 9, temperature=4.0))
    np.testing.assert_allclose(four, 2 * one, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, fit_kwargs, match",
    [
        ({"heteroscedastic": True}, {}, "heteroscedastic=True"),
        ({"kl_weight": 0.25}, {}, "kl_weight=0.25"),
        ({}, {"groups": np.arange(40) % 2}, "groups"),
        ({"hidden_layer_sizes": (3000,)}, {}, f"at most {MAX_PARAMS}"),
    ],
)
def test_laplace_refuses_what_it_does_not_model(kwargs, fit_kwargs, match):
    X, y = xsin(40)
    reg = BayesianMLPRegressor(**{"hidden_layer_sizes": (3,), "inference": "laplace", **kwargs})
    with pytest.raises(ValueError, match=match):
        reg.fit(X, y, **fit_kwargs)


def test_gram_is_the_lower_triangle_of_jtj_and_factors_as_the_full_matrix():
    rng = np.random.default_rng(3)
    J = rng.normal(size=(40, 7))
    G = lap_module._gram(J)
    np.testing.assert_allclose(np.tril(G), np.tril(J.T @ J), rtol=1e-12)
    delta = rng.uniform(0.5, 2.0, size=7)
    full = 2.0 * J.T @ J + np.diag(delta)
    np.testing.assert_allclose(
        lap_module._precision_chol(G, 2.0, delta), np.linalg.cholesky(full), rtol=1e-10
    )


def test_rounds_stop_once_the_evidence_falls_twice_keeping_the_same_fit(monkeypatch):
    """Patience: the rounds stop after PATIENCE rounds below the best; the kept round,
    and so the fit, is the one all rounds would keep (on diabetes the evidence peaks at
    the first update, then falls for good)."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X, y = (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()
    shapes = ((X.shape[1], 10), (10, 1))
    monkeypatch.setattr(lap_module, "PATIENCE", 0)
    every, info_every = fit_laplace(X, y, layer_shapes=shapes, random_state=0)
    monkeypatch.setattr(lap_module, "PATIENCE", 2)
    patient, info = fit_laplace(X, y, layer_shapes=shapes, random_state=0)
    best = int(np.argmin(info_every["loss"]))
    assert info_every["rounds"] == lap_module.ROUNDS + 1  # all of them ran
    assert info["rounds"] == best + 1 + 2 < info_every["rounds"]  # the path was taken
    np.testing.assert_allclose(info["loss"], info_every["loss"][: info["rounds"]])
    np.testing.assert_allclose(patient.theta, every.theta)
    assert patient.log_evidence == every.log_evidence
