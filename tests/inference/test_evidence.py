"""pymc_bnn.inference.evidence: per-layer prior scales from the Laplace evidence, and the
estimator's ``prior_sigma="evidence"``."""

import doctest

import numpy as np
import pytest
from scipy.stats import norm

from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor, build_model
from pymc_bnn.inference import evidence
from pymc_bnn.inference.evidence import (
    SIGMA_RANGE,
    _fixed_point,
    _ggn_blocks,
    _layer_index,
    _log_evidence,
    _mode,
    _value_grad,
    evidence_prior_scales,
)

SEED = 0


@pytest.fixture(scope="module")
def blobs():
    """Three separable-ish classes in 3-D, 90 rows."""
    rng = np.random.default_rng(SEED)
    centres = np.array([[2.0, 0.0, 0.0], [-1.0, 1.7, 0.0], [-1.0, -1.7, 0.0]])
    y = np.repeat(np.arange(3), 30)
    X = centres[y] + rng.normal(size=(90, 3))
    return X, y


def test_doctests():
    failures, _ = doctest.testmod(evidence)
    assert failures == 0


def test_objective_is_negative_log_joint_by_hand(blobs):
    """The MAP objective equals -sum log softmax(f(x))[y] + 1/2 sum delta theta^2, with
    the network written out in NumPy (one hidden tanh layer)."""
    X, y = blobs
    shapes = ((3, 4), (4, 3))
    f = _value_grad(shapes, "tanh", False, _mode())
    rng = np.random.default_rng(1)
    theta = rng.normal(size=3 * 4 + 4 + 4 * 3 + 3)
    delta = np.repeat([2.0, 0.5], [16, 15])
    W0, b0 = theta[:12].reshape(3, 4), theta[12:16]
    W1, b1 = theta[16:28].reshape(4, 3), theta[28:]
    logits = np.tanh(X @ W0 + b0) @ W1 + b1
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    loglik = logp[np.arange(90), y].sum()
    value, grad, ll = f(theta, X, np.eye(3)[y], delta)
    np.testing.assert_allclose(ll, loglik, rtol=1e-10)
    np.testing.assert_allclose(value, -loglik + 0.5 * np.sum(delta * theta**2), rtol=1e-10)
    # the gradient against central differences
    eps = 1e-6
    for i in (0, 13, 20, 30):
        e = np.zeros_like(theta)
        e[i] = eps
        fd = (f(theta + e, X, np.eye(3)[y], delta)[0] - f(theta - e, X, np.eye(3)[y], delta)[0]) / (
            2 * eps
        )
        np.testing.assert_allclose(grad[i], fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_ggn_of_a_linear_model_is_its_fisher_matrix(blobs, n_classes):
    """With no hidden layer the GGN is the exact Hessian of the negative log
    likelihood: X~^T diag(p(1-p)) X~ (logistic) or sum_n (diag p - p p^T) (x) x~ x~^T
    (softmax), x~ = (x, 1). Computed here by hand, in chunks by the module."""
    X, y = blobs
    if n_classes == 2:
        y = (y > 0).astype(int)
    k = 1 if n_classes == 2 else 3
    shapes = ((3, k),)
    theta = np.random.default_rng(2).normal(size=3 * k + k)
    W, b = theta[: 3 * k].reshape(3, k), theta[3 * k :]
    logits = X @ W + b
    eig, kinds = _ggn_blocks(
        shapes, "tanh", _mode(), theta, X, _layer_index(shapes), 1, k, n_classes == 2
    )
    # parameter order: W row-major (feature i, output j) then b (output j)
    Xt = np.column_stack([X, np.ones(90)])
    if n_classes == 2:
        p = 1 / (1 + np.exp(-logits[:, 0]))
        G = (Xt * (p * (1 - p))[:, None]).T @ Xt
    else:
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        G = np.zeros((4 * k, 4 * k))
        order = np.r_[[i * k + j for i in range(3) for j in range(k)], 3 * k + np.arange(k)]
        for n in range(90):
            block = np.kron(np.outer(Xt[n], Xt[n]), np.diag(p[n]) - np.outer(p[n], p[n]))
            G += block  # index (i * k + j): feature i (bias last), output j
        # the kron order is (feature, output) with the bias as feature 3 = module order
        G = G[np.ix_(order, order)]
    assert list(kinds) == ["block"]
    np.testing.assert_allclose(
        eig[0], np.clip(np.linalg.eigvalsh(G), 0, None), rtol=1e-8, atol=1e-8
    )


def test_fixed_point_maximises_the_laplace_evidence():
    """MacKay's fixed point is a stationary point (here the maximum) of the Laplace log
    evidence over the per-layer precisions, at fixed MAP weights and curvature."""
    rng = np.random.default_rng(3)
    eig = [rng.gamma(0.5, 20.0, size=40), rng.gamma(0.5, 2.0, size=12)]
    sizes = np.array([40.0, 12.0])
    sq_norms = np.array([3.0, 25.0])
    delta = _fixed_point(eig, sq_norms, np.ones(2))
    best = _log_evidence(-10.0, eig, sq_norms, sizes, delta)
    for layer in (0, 1):
        for factor in (0.8, 0.95, 1.05, 1.25):
            d = delta.copy()
            d[layer] *= factor
            assert _log_evidence(-10.0, eig, sq_norms, sizes, d) < best
    # and the precisions follow what the data determine: few well-determined
    # parameters and a small norm -> a large precision (small prior scale)
    assert delta[0] > delta[1]


def test_scales_are_seeded_and_shaped(blobs):
    X, y = blobs
    a = evidence_prior_scales(X, y, hidden_layer_sizes=(4,), random_state=SEED)
    b = evidence_prior_scales(X, y, hidden_layer_sizes=(4,), random_state=SEED)
    assert a == b
    assert len(a.sigmas) == 2 and all(np.isfinite(a.sigmas)) and min(a.sigmas) > 0
    assert a.curvature == ("block", "block") and a.map_iterations > 0
    with pytest.raises(ValueError, match="X must be"):
        evidence_prior_scales(X[:, 0], y)


def test_per_layer_prior_scales_enter_the_model_log_density(blobs):
    """build_model(prior_sigma=(s0, s1)): the log density differs from the N(0, 1)
    model's by exactly the Normal log densities of each layer's weights."""
    X, y = blobs
    sig = (0.4, 2.5)
    m1 = build_model(X, y, hidden_layer_sizes=(4,), prior_sigma=1.0, random_state=SEED)
    m2 = build_model(X, y, hidden_layer_sizes=(4,), prior_sigma=sig, random_state=SEED)
    point = m1.initial_point()
    diff = m2.compile_logp()(point) - m1.compile_logp()(point)
    expected = 0.0
    for name, s in (("w0", sig[0]), ("b0", sig[0]), ("w1", sig[1]), ("b1", sig[1])):
        v = point[name]
        expected += norm.logpdf(v, scale=s).sum() - norm.logpdf(v, scale=1.0).sum()
    np.testing.assert_allclose(diff, expected, rtol=1e-10)
    with pytest.raises(ValueError, match="one per layer"):
        build_model(X, y, hidden_layer_sizes=(4,), prior_sigma=(1.0, 2.0, 3.0))


def _small(**kw):
    return BayesianMLPClassifier(
        (4,), n_iter=3000, n_draws=50, posterior_temperature=1.0, random_state=SEED, **kw
    )


def test_estimator_evidence_prior_is_used_reproducible_and_saved(blobs, tmp_path):
    X, y = blobs
    X_in, y_in = X.copy(), y.copy()
    clf = _small(prior_sigma="evidence").fit(X, y)
    np.testing.assert_array_equal(X, X_in)
    np.testing.assert_array_equal(y, y_in)
    assert clf.prior_sigma_ == clf.evidence_.sigmas and len(clf.prior_sigma_) == 2
    assert clf.posterior_.spec.prior_sigma == clf.prior_sigma_
    again = _small(prior_sigma="evidence").fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    plain = _small(prior_sigma=1.0).fit(X, y)
    assert plain.prior_sigma_ == 1.0 and plain.evidence_ is None
    # the default, "auto", is the evidence for an in-memory classifier
    auto = _small().fit(X, y)
    assert auto.prior_sigma == "auto" and auto.evidence_ == clf.evidence_
    np.testing.assert_array_equal(auto.predict_proba(X), clf.predict_proba(X))
    path = clf.save(tmp_path / "m.nc")
    loaded = BayesianMLPClassifier.load(path)
    assert loaded.prior_sigma_ == clf.prior_sigma_ and loaded.evidence_ == clf.evidence_
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize(
    "make, kwargs, fit_kw, match",
    [
        (BayesianMLPRegressor, {}, {}, "classifiers only"),
        (BayesianMLPClassifier, {"prior": "gamma_precision"}, {}, "prior='normal'"),
        (BayesianMLPClassifier, {}, {"groups": np.repeat([0, 1], 45)}, "hierarchical"),
        (BayesianMLPClassifier, {"prior_sigma": "evidenz"}, {}, "prior_sigma"),
    ],
)
def test_evidence_prior_refusals_are_clear(blobs, make, kwargs, fit_kw, match):
    X, y = blobs
    params = {"prior_sigma": "evidence", **kwargs}
    with pytest.raises(ValueError, match=match):
        make((4,), random_state=SEED, **params).fit(X, y.astype(float), **fit_kw)


def test_large_layers_use_the_diagonal_of_their_block(blobs, monkeypatch):
    """Beyond MAX_BLOCK parameters a layer's curvature is its GGN block's diagonal
    (the block is then never formed); it equals the exact block's diagonal."""
    X, y = blobs
    shapes = ((3, 4), (4, 3))
    theta = np.random.default_rng(4).normal(size=31)
    layer_of = _layer_index(shapes)
    args = (shapes, "tanh", _mode(), theta, X, layer_of, 2, 3, False)
    exact, kinds = _ggn_blocks(*args)
    assert list(kinds) == ["block", "block"]
    monkeypatch.setattr(evidence, "MAX_BLOCK", 15)  # layer 0 has 16 parameters, layer 1 15
    diag, kinds = _ggn_blocks(*args)
    assert list(kinds) == ["diagonal", "block"]
    np.testing.assert_allclose(diag[1], exact[1], rtol=1e-10, atol=1e-12)
    # the exact block's diagonal, recomputed from the Jacobian of the layer-0 columns
    from pymc_bnn.inference.evidence import _jacobian

    logits, J = _jacobian(shapes, "tanh", 90, _mode())(theta, X)
    J = np.asarray(J).reshape(90, 3, 31)[:, :, :16]
    z = np.asarray(logits) - np.asarray(logits).max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    lam = np.einsum("nk,nkp->p", p, J**2) - np.einsum("nk,nkp->np", p, J).__pow__(2).sum(0)
    np.testing.assert_allclose(
        np.sort(diag[0]), np.sort(np.clip(lam, 0, None)), rtol=1e-8, atol=1e-10
    )


def test_many_rows_use_a_subset_scaled_to_all(blobs, monkeypatch):
    """Beyond ``max_rows`` the evidence uses a subset whose log-likelihood and
    curvature are scaled by n / max_rows: with every subset row counted twice by hand
    (weight 2), the result is the same as on the doubled subset itself."""
    X, y = blobs
    chosen = np.arange(0, 90, 2)  # 45 of the 90 rows, every class present
    monkeypatch.setattr(evidence, "_row_subset", lambda n, size, rng: chosen[:size])
    sub = evidence_prior_scales(X, y, hidden_layer_sizes=(4,), max_rows=45, random_state=SEED)
    twice = np.repeat(chosen, 2)
    full = evidence_prior_scales(X[twice], y[twice], hidden_layer_sizes=(4,), random_state=SEED)
    np.testing.assert_allclose(sub.sigmas, full.sigmas, rtol=1e-3)
    np.testing.assert_allclose(sub.log_evidence, full.log_evidence, rtol=1e-3)
    with pytest.raises(ValueError, match="max_rows"):
        evidence_prior_scales(X, y, max_rows=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scales_stay_in_range_when_the_data_determine_nothing():
    """A layer with no well-determined weights (constant inputs) has no evidence for
    any scale: the fixed point keeps it within SIGMA_RANGE instead of 0 or infinity."""
    lo, hi = SIGMA_RANGE
    delta = _fixed_point([np.zeros(3), np.ones(2)], np.array([0.0, 4.0]), np.ones(2))
    assert np.all(np.isfinite(delta))
    assert lo <= 1 / np.sqrt(delta[0]) <= hi
    # layer 1: d = gamma / 4 with gamma = 2 / (1 + d), i.e. d^2 + d - 1/2 = 0
    np.testing.assert_allclose(delta[1], (np.sqrt(3) - 1) / 2, rtol=1e-5)
    X = np.zeros((40, 2))
    y = np.repeat([0, 1], 20)
    ev = evidence_prior_scales(X, y, hidden_layer_sizes=(3,), random_state=SEED)
    assert all(lo <= s <= hi for s in ev.sigmas)
    proba = (
        BayesianMLPClassifier(
            (3,), n_iter=500, n_draws=20, posterior_temperature=1.0, random_state=SEED
        )
        .fit(X, y)
        .predict_proba(X)
    )
    assert np.all(np.isfinite(proba))


def test_jacobian_chunks_are_bounded_and_sum_to_the_whole(blobs, monkeypatch):
    """Rows per Jacobian call: the largest power of two that keeps the Jacobian within
    CHUNK_BYTES; curvature summed over small chunks equals the one-chunk curvature."""
    shapes = ((20, 16), (16, 1))
    rows = evidence.jacobian_chunk_rows(10**6, shapes)
    assert rows & (rows - 1) == 0
    assert rows * 353 * 8 <= evidence.CHUNK_BYTES < 2 * rows * 353 * 8
    assert evidence.jacobian_chunk_rows(7, shapes) == 8  # padded to a power of two
    assert (
        evidence.jacobian_chunk_rows(8, shapes) == 8
        and evidence.jacobian_chunk_rows(1, shapes) == 1
    )
    X, y = blobs
    shapes = ((3, 4), (4, 3))
    theta = np.random.default_rng(5).normal(size=31)
    args = (shapes, "tanh", _mode(), theta, X, _layer_index(shapes), 2, 3, False)
    whole, _ = _ggn_blocks(*args)
    monkeypatch.setattr(evidence, "CHUNK_BYTES", 8 * 3 * 31 * 16)
    assert evidence.jacobian_chunk_rows(90, shapes) == 16  # 6 calls, the last padded
    chunked, _ = _ggn_blocks(*args)
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_blas_runs_single_threaded_in_the_step_and_gives_the_same_scales(blobs, monkeypatch):
    """The step's small BLAS / LAPACK calls run on BLAS_THREADS threads (on a busy
    machine two spinning BLAS threads made it 20-50x slower), and the thread count does
    not change the result beyond rounding."""
    from threadpoolctl import threadpool_info, threadpool_limits

    X, y = blobs
    seen = []
    real = np.linalg.eigvalsh

    def spy(a):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        return real(a)

    monkeypatch.setattr(np.linalg, "eigvalsh", spy)
    with threadpool_limits(limits=2, user_api="blas"):
        limited = evidence_prior_scales(X, y, hidden_layer_sizes=(4,), random_state=SEED)
        in_step, seen[:] = list(seen), []
        monkeypatch.setattr(evidence, "BLAS_THREADS", 2)
        two = evidence_prior_scales(X, y, hidden_layer_sizes=(4,), random_state=SEED)
    assert in_step and all(s == {1} for s in in_step)
    assert seen and all(s != {1} for s in seen)  # the spy does see a wider setting
    np.testing.assert_allclose(limited.sigmas, two.sigmas, rtol=1e-6)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 3)), ((5, 3), (3, 2), (2, 1))])
def test_row_by_row_jacobian_equals_the_jacobian_of_all_logits(shapes):
    """The compiled Jacobian (one row's Jacobian vectorised over rows) equals the
    obvious one: PyTensor's Jacobian of the whole raveled logit vector, whose rows'
    off-diagonal blocks are zero."""
    import pytensor
    import pytensor.tensor as pt

    from pymc_bnn.inference.evidence import _jacobian, _logits, _n_params

    rng = np.random.default_rng(6)
    X = rng.normal(size=(7, shapes[0][0]))
    theta = rng.normal(size=_n_params(shapes))
    logits, J = _jacobian(shapes, "tanh", 7, _mode())(theta, X)
    t = pt.vector("t", dtype="float64")
    x = pt.matrix("x", dtype="float64")
    out = _logits(t, x, shapes, "tanh")
    obvious = pytensor.function([t, x], [out, pytensor.gradient.jacobian(out.ravel(), t)])
    want_logits, want_J = obvious(theta, X)
    k = shapes[-1][1]
    np.testing.assert_allclose(np.asarray(logits), want_logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(J), want_J.reshape(7, k, -1), rtol=1e-10, atol=1e-12)


def test_map_fits_stop_at_map_ftol(blobs, monkeypatch):
    """The MAP fits run L-BFGS-B with ftol=MAP_FTOL (scipy's default ran to the
    iteration cap on larger tables while the scales had settled)."""
    X, y = blobs
    seen = []
    real = evidence.minimize

    def spy(*args, options=None, **kwargs):
        seen.append(options)
        return real(*args, options=options, **kwargs)

    monkeypatch.setattr(evidence, "minimize", spy)
    evidence_prior_scales(X, y, hidden_layer_sizes=(3,), random_state=SEED)
    assert [o["ftol"] for o in seen] == [evidence.MAP_FTOL] * 2
