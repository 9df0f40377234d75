"""The last-layer Laplace fit (``fit_laplace(hidden_prior_sigmas=)``): the mixture's
Laplace half where the whole network's curvature is too costly. Its Gaussian covers
the output layer; the hidden layers are a point estimate under the scales given."""

import numpy as np
import pytest
from reference import numpy_logits
from sklearn.datasets import make_blobs

import pymc_bnn.estimators._classifier as C
import pymc_bnn.predictive._predictive as P
from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.inference.laplace import (
    LINEARIZATION_GROUP,
    _class_curvature,
    _gram,
    _jacobian_rows,
    _value_grad,
    fit_laplace,
    laplace_draws,
    laplace_idata,
    last_layer_curvature,
    linearised_outputs,
)
from pymc_bnn.network._flat import compile_mode, n_params
from pymc_bnn.policy._settings import MIXTURE

SHAPES = ((3, 5), (5, 4), (4, 3))


def _targets(rng, k, n):
    codes = rng.integers(0, max(k, 2), size=n)
    return codes, (codes[:, None].astype(float) if k == 1 else np.eye(k)[codes])


@pytest.mark.parametrize("k, classify", [(3, True), (1, True), (1, False)])
def test_the_output_layer_s_curvature_is_the_whole_network_s_block(k, classify):
    """The structured curvature (activations x Hessians) equals the output-layer block
    of the whole network's GGN, built from its dense Jacobian, and its gradient the
    block of the whole gradient."""
    rng = np.random.default_rng(0)
    shapes = (*SHAPES[:-1], (4, k))
    P_all = n_params(shapes)
    X = rng.normal(size=(41, 3))
    theta = rng.normal(scale=0.6, size=P_all)
    if classify:
        _, Y = _targets(rng, k, 41)
        G, g = _class_curvature(shapes, "tanh", compile_mode(), theta, X, Y)
    else:
        Y = rng.normal(size=41)
        f, J = _jacobian_rows(shapes, "tanh", compile_mode(), theta, X)
        G, g = _gram(J), -(J.T @ (Y - f))
    G_last, g_last = last_layer_curvature(shapes, "tanh", compile_mode(), theta, X, Y, classify)
    first = P_all - (4 * k + k)
    np.testing.assert_allclose(np.tril(G_last), np.tril(G[first:, first:]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(G_last, G_last.T, atol=1e-12)
    np.testing.assert_allclose(g_last, g[first:], rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(120, n_features=3, centers=3, cluster_std=2.0, random_state=2)
    return (X - X.mean(0)) / X.std(0), y


@pytest.fixture(scope="module")
def last(blobs):
    X, y = blobs
    return fit_laplace(
        X,
        y,
        layer_shapes=SHAPES,
        likelihood="categorical",
        random_state=0,
        hidden_prior_sigmas=(0.7, 1.3),
    )


def test_a_last_layer_fit_is_the_exact_posterior_of_its_output_layer_at_a_mode(blobs, last):
    """Given the hidden layers, the output layer is a softmax regression: its GGN is
    the exact Hessian, so the precision is the Hessian of the negative log joint in
    those weights (by differences of its autodiff gradient). The weights are a mode of
    the whole objective, the hidden scales are the ones given, the output layer's is
    chosen by the evidence."""
    X, y = blobs
    gaussian, info = last
    P_all = n_params(SHAPES)
    first = P_all - 15
    assert gaussian.last_layer and gaussian.first_random == first
    assert gaussian.chol.shape == (15, 15)
    assert gaussian.prior_sigmas[:2] == pytest.approx((0.7, 1.3), rel=1e-12)
    assert gaussian.prior_sigmas[2] != pytest.approx(1.0)
    assert np.isnan(gaussian.effective_parameters[:2]).all()
    assert 0 < gaussian.effective_parameters[2] < 15
    assert info["gradient_norm"] < 1e-5
    delta = np.concatenate(
        [np.full(n_params(SHAPES[i : i + 1]), s**-2) for i, s in enumerate(gaussian.prior_sigmas)]
    )
    value_grad = _value_grad(SHAPES, "tanh", compile_mode(), True)

    def grad(t):
        return np.asarray(value_grad(t, X, np.eye(3)[y], 1.0, delta)[1])[first:]

    eps = 1e-6
    hessian = np.stack(
        [
            (grad(gaussian.theta + eps * e) - grad(gaussian.theta - eps * e)) / (2 * eps)
            for e in np.eye(P_all)[first:]
        ],
        axis=1,
    )
    np.testing.assert_allclose(gaussian.chol @ gaussian.chol.T, hessian, rtol=1e-5, atol=1e-6)


def test_last_layer_draws_move_the_output_layer_only_and_need_no_linearisation(blobs, last):
    """Every draw keeps the MAP's hidden weights; the output layer's are ``theta + L^-T
    z``. The network is linear in its output layer, so the network's own logits at the
    draws (the plain predictive, the path taken: no linearisation group) equal the
    linearised ones (the slow, obvious path)."""
    X, _ = blobs
    gaussian, _ = last
    draws = laplace_draws(gaussian, SHAPES, 30, random_seed=4)
    flat = np.concatenate(
        [
            np.concatenate([draws[f"w{i}"].reshape(30, -1), draws[f"b{i}"]], axis=1)
            for i in range(3)
        ],
        axis=1,
    )
    first = gaussian.first_random
    np.testing.assert_array_equal(
        flat[:, :first], np.broadcast_to(gaussian.theta[:first], (30, first))
    )
    z = np.random.default_rng(4).standard_normal((15, 30))
    np.testing.assert_allclose(
        flat[:, first:] - gaussian.theta[first:],
        np.linalg.solve(gaussian.chol.T, z).T,
        rtol=1e-10,
        atol=1e-12,
    )
    idata = laplace_idata(gaussian, SHAPES, 30, random_seed=4)
    assert LINEARIZATION_GROUP not in idata.children
    linear = linearised_outputs(SHAPES, "tanh", gaussian.theta, X, flat - gaussian.theta)
    network = np.stack([numpy_logits(t, X, SHAPES) for t in flat])
    np.testing.assert_allclose(network, linear, rtol=1e-8, atol=1e-10)


def test_a_fold_fit_from_a_last_layer_start_is_last_layer_and_keeps_its_scales(blobs, last):
    X, y = blobs
    gaussian, _ = last
    fold, info = fit_laplace(
        X[:80], y[:80], layer_shapes=SHAPES, likelihood="categorical", start=gaussian
    )
    assert fold.last_layer
    assert fold.prior_sigmas == pytest.approx(gaussian.prior_sigmas, rel=1e-12)
    assert info["rounds"] == 1 and info["gradient_norm"] < 1e-5
    assert not np.allclose(fold.theta[: fold.first_random], gaussian.theta[: gaussian.first_random])


@pytest.mark.parametrize("bad", [(1.0,), (1.0, -1.0), (1.0, np.nan)])
def test_bad_hidden_scales_get_a_clear_error(blobs, bad):
    X, y = blobs
    with pytest.raises(ValueError, match="hidden_prior_sigmas must be 2 positive"):
        fit_laplace(X, y, layer_shapes=SHAPES, likelihood="categorical", hidden_prior_sigmas=bad)


def test_the_laplace_half_covers_the_whole_network_where_affordable_else_its_output_layer():
    assert C.laplace_structure((1000, 20), (32,), 2) == "full"  # a calibration table
    # digits at (32,): 2,410 weights x 10 classes; its output layer: 330
    assert C.laplace_structure((898, 64), (32,), 10) == "last_layer"
    assert C.laplace_structure((C.AUTO_MIXTURE_MAX_ROWS + 1, 2), (5, 5), 2) is None
    assert C.laplace_structure((100, 200), (32,), 2) is None  # 6,465 weights
    assert C.laplace_structure((300, 784), (8,), 10) is None  # 6,370 weights
    assert C.mixture_affordable((898, 64), (32,), 10)


def test_the_mixture_fits_a_last_layer_laplace_half_beyond_the_bound(blobs, monkeypatch):
    """With the whole network's step beyond the bound, the mixture's Laplace half is a
    last-layer fit under the ADVI half's hidden scales; its draws go through the plain
    network predictive (no linearisation group); it is seeded and round-trips."""
    X, y = blobs
    monkeypatch.setattr(C, "AUTO_MIXTURE_MAX_FLOPS", 1e5)
    assert C.laplace_structure(X.shape, (4,), 3) == "last_layer"
    clf = BayesianMLPClassifier((4,), inference=MIXTURE, n_draws=40, random_state=1).fit(X, y)
    assert clf.inference_ == MIXTURE
    assert clf.mixture_["laplace_diagnostics"]["structure"] == "last_layer"
    assert clf.mixture_["laplace_prior_sigma"][0] == pytest.approx(clf.prior_sigma_[0])
    assert LINEARIZATION_GROUP not in clf.idata_.children
    assert clf.predictive_.linearized_at is None and clf.predictive_.n_draws == 40
    draws = clf.predictive_.sample_proba(X)
    np.testing.assert_allclose(clf.predict_proba(X), draws.mean(axis=0), rtol=1e-9)
    again = BayesianMLPClassifier((4,), inference=MIXTURE, n_draws=40, random_state=1).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_a_saved_last_layer_mixture_loads_with_the_same_predictions(blobs, monkeypatch, tmp_path):
    X, y = blobs
    monkeypatch.setattr(C, "AUTO_MIXTURE_MAX_FLOPS", 1e5)
    clf = BayesianMLPClassifier((4,), inference=MIXTURE, n_draws=20, random_state=2).fit(X, y)
    assert clf.mixture_ is not None
    loaded = BayesianMLPClassifier.load(clf.save(tmp_path / "last.nc"))
    assert loaded.mixture_ == clf.mixture_
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert isinstance(loaded.predictive_, P.PosteriorPredictive)
