"""The classifier's inference="laplace": the generalised Gauss-Newton curvature of a
Bernoulli / softmax likelihood, and class probabilities through the linearised network."""

import numpy as np
import pytest
from reference import numpy_logits
from sklearn.datasets import make_blobs, make_moons

import pymc_bnn.predictive._predictive as P
from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.inference.laplace import MAX_PARAMS, _class_curvature, _value_grad, fit_laplace
from pymc_bnn.network._flat import compile_mode, flatten, n_params


def numeric_jacobian(theta, X, shapes, eps=1e-6):
    """d logits / d theta by central differences: (n, k, P)."""
    cols = []
    for j in range(theta.size):
        step = np.zeros_like(theta)
        step[j] = eps
        cols.append(
            (numpy_logits(theta + step, X, shapes) - numpy_logits(theta - step, X, shapes))
            / (2 * eps)
        )
    return np.stack(cols, axis=-1)


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("k", [1, 3])
def test_curvature_is_each_row_s_jacobian_hessian_jacobian(k):
    """G = sum_i J_i^T H_i J_i (H_i the Hessian of row i's negative log likelihood in its
    logits), row by row with a finite-difference Jacobian; the gradient is that of the
    likelihood (PyTensor's, autodiff)."""
    rng = np.random.default_rng(0)
    shapes = ((3, 4), (4, k))
    X = rng.normal(size=(37, 3))  # not a power of two: the padded last chunk is cut
    codes = rng.integers(0, max(k, 2), size=37)
    Y = codes[:, None].astype(float) if k == 1 else np.eye(k)[codes]
    theta = rng.normal(scale=0.7, size=n_params(shapes))
    G, g = _class_curvature(shapes, "tanh", compile_mode(), theta, X, Y)

    J = numeric_jacobian(theta, X, shapes)
    z = numpy_logits(theta, X, shapes)
    expected_G, expected_g = np.zeros((theta.size,) * 2), np.zeros(theta.size)
    for i in range(len(X)):
        if k == 1:
            p = 1 / (1 + np.exp(-z[i]))
            H = np.diag(p * (1 - p))
        else:
            p = softmax(z[i])
            H = np.diag(p) - np.outer(p, p)
        expected_G += J[i].T @ H @ J[i]
        expected_g += J[i].T @ (p - Y[i])
    np.testing.assert_allclose(np.tril(G), np.tril(expected_G), rtol=1e-6, atol=1e-8)
    assert not np.any(np.triu(G, 1))  # the lower triangle only, as every Cholesky reads
    np.testing.assert_allclose(g, expected_g, rtol=1e-6, atol=1e-8)
    value_grad = _value_grad(shapes, "tanh", compile_mode(), True)
    _, autodiff, nll = value_grad(theta, X, Y, 1.0, np.zeros(theta.size))
    np.testing.assert_allclose(g, autodiff, rtol=1e-10, atol=1e-12)
    p = (1 / (1 + np.exp(-z))) if k == 1 else softmax(z)
    expected_nll = (
        -np.sum(Y * np.log(p) + (1 - Y) * np.log(1 - p)) if k == 1 else -np.sum(Y * np.log(p))
    )
    np.testing.assert_allclose(nll, expected_nll, rtol=1e-10)


def test_without_hidden_layers_the_posterior_precision_is_the_exact_hessian():
    """Softmax regression is linear in its logits: the GGN is the likelihood's exact
    Hessian, so the posterior precision at the MAP is the Hessian of the negative log
    joint (by differences of its autodiff gradient), and the MAP is a stationary
    point of it."""
    X, codes = make_blobs(120, n_features=2, centers=3, cluster_std=2.0, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    shapes = ((2, 3),)
    gaussian, info = fit_laplace(
        X, codes, layer_shapes=shapes, likelihood="categorical", random_state=0
    )
    assert gaussian.noise_sd is None and info["gradient_norm"] < 1e-6
    delta = np.full(9, gaussian.prior_sigmas[0] ** -2)
    value_grad = _value_grad(shapes, "tanh", compile_mode(), True)
    Y = np.eye(3)[codes]

    def grad(t):
        return np.asarray(value_grad(t, X, Y, 1.0, delta)[1])

    eps = 1e-6
    hessian = np.stack(
        [
            (grad(gaussian.theta + eps * e) - grad(gaussian.theta - eps * e)) / (2 * eps)
            for e in np.eye(9)
        ],
        axis=1,
    )
    np.testing.assert_allclose(gaussian.chol @ gaussian.chol.T, hessian, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(90, n_features=2, centers=3, cluster_std=2.5, random_state=1)
    return (X - X.mean(0)) / X.std(0), np.array(["a", "b", "c"])[y]


@pytest.fixture(scope="module")
def lap3(blobs):
    return BayesianMLPClassifier(
        (4,), inference="laplace", posterior_temperature=1.0, n_draws=200, random_state=0
    ).fit(*blobs)


def test_class_probabilities_are_the_linearised_network_s_through_the_softmax(
    lap3, blobs, monkeypatch
):
    """Each draw's probabilities are softmax(f(x; theta) + J(x)(theta_s - theta)), the
    Jacobian by finite differences; predict_proba is their mean. The linearised path
    is the one taken (the draws pushed through the network itself differ)."""
    X = blobs[0][:15]
    post = lap3.posterior_
    theta, shapes = post.laplace.theta, post.spec.layer_shapes
    pred = lap3.predictive_
    assert pred.linearized_at is not None and not pred._wide
    draws = pred.sample_proba(X)
    offsets = flatten(pred.weights) - theta
    logits = numpy_logits(theta, X, shapes)[None] + np.einsum(
        "nkp,sp->snk", numeric_jacobian(theta, X, shapes), offsets
    )
    np.testing.assert_allclose(draws, softmax(logits), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(lap3.predict_proba(X), softmax(logits).mean(0), rtol=1e-6, atol=1e-8)
    plain = P.PosteriorPredictive(spec=pred.spec, weights=pred.weights)
    assert not np.allclose(plain.sample_proba(X), draws, atol=1e-3)
    calls = []
    original = P.linearised_outputs
    monkeypatch.setattr(P, "linearised_outputs", lambda *a: calls.append(1) or original(*a))
    lap3.predict_proba(X)
    assert calls


def test_binary_laplace_classifier_is_seeded_round_trips_and_leaves_inputs_alone(tmp_path):
    X, y = make_moons(120, noise=0.25, random_state=0)
    X0, y0 = X.copy(), y.copy()
    kw = dict(hidden_layer_sizes=(6,), inference="laplace", n_draws=100, random_state=3)
    a = BayesianMLPClassifier(**kw).fit(X, y)
    b = BayesianMLPClassifier(**kw).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    assert a.inference_ == "laplace" and a.diagnostics_["method"] == "laplace"
    assert "noise_sd" not in a.diagnostics_ and a.evidence_ is None
    assert a.temperature_selection_ is not None  # "auto": cross-fitted, as ADVI's
    assert len(a.posterior_.spec.prior_sigma) == 2  # the evidence's scale per layer
    assert a.prior_sigma_ == a.posterior_.spec.prior_sigma
    assert a.score(X, y) > 0.85
    summary = a.predict_uncertainty(X)
    np.testing.assert_allclose(summary["mean"], a.predict_proba(X))
    back = BayesianMLPClassifier.load(a.save(tmp_path / "laplace.nc"))
    np.testing.assert_array_equal(back.predict_proba(X), a.predict_proba(X))


@pytest.mark.parametrize(
    "kwargs, fit_kwargs, match",
    [
        ({}, {"groups": np.arange(40) % 2}, "groups"),
        ({"hidden_layer_sizes": (3000,)}, {}, f"at most {MAX_PARAMS}"),
    ],
)
def test_laplace_classifier_refuses_what_it_does_not_model(kwargs, fit_kwargs, match):
    X, y = make_moons(40, noise=0.2, random_state=0)
    clf = BayesianMLPClassifier(**{"hidden_layer_sizes": (3,), "inference": "laplace", **kwargs})
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y, **fit_kwargs)
