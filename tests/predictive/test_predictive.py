import arviz as az
import numpy as np
import pytensor
import pytest
from reference import numpy_forward_proba

import pymc_bnn.predictive._draws as D
import pymc_bnn.predictive._forward as FG
import pymc_bnn.predictive._predictive as P
from pymc_bnn import NetworkSpec, posterior_predictive, summarize_proba

#: The predictive runs in float32 on JAX when jax is installed (else float64 NUMBA):
#: probabilities then carry ~1e-7 absolute rounding error.
ATOL = 2e-6 if FG.backend()[1] == "float32" else 1e-12


def _spec(hidden=(4, 3), n_classes=2, n_features=2, activation="tanh"):
    return NetworkSpec(
        n_features=n_features,
        hidden_layer_sizes=hidden,
        n_classes=n_classes,
        activation=activation,
        prior_sigma=1.0,
        n_rows=10,
        batch_size=None,
    )


def _idata(spec, n_chains=2, n_draws=25, seed=0):
    rng = np.random.default_rng(seed)
    post = {}
    for (w, b), (fi, fo) in zip(spec.weight_names, spec.layer_shapes):
        post[w] = rng.normal(size=(n_chains, n_draws, fi, fo))
        post[b] = rng.normal(size=(n_chains, n_draws, fo))
    return az.from_dict({"posterior": post})


@pytest.mark.parametrize("n_classes, activation", [(2, "tanh"), (3, "relu"), (4, "logistic")])
def test_compiled_predictive_equals_numpy_loop_over_mcmc_draws(n_classes, activation):
    spec = _spec(n_classes=n_classes, activation=activation)
    pred = P.from_idata(spec, _idata(spec))
    X = np.random.default_rng(1).normal(size=(33, 2))
    expected = numpy_forward_proba(X, pred.weights, activation)
    proba = pred.sample_proba(X)
    assert proba.shape == (50, 33, n_classes)
    np.testing.assert_allclose(proba, expected, rtol=0, atol=ATOL)
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=0, atol=ATOL)


def test_compiled_predictive_equals_numpy_loop_over_vi_draws(advi_clf, moons):
    _, X_test, _, _ = moons
    pred = advi_clf.predictive_
    expected = numpy_forward_proba(X_test, pred.weights)
    np.testing.assert_allclose(advi_clf.sample_proba(X_test), expected, rtol=0, atol=ATOL)
    np.testing.assert_allclose(advi_clf.predict_proba(X_test), expected.mean(0), rtol=0, atol=ATOL)


def test_vi_draws_match_pymc_sample_node(advi_clf, moons):
    """The toolkit's predictive and PyMC's sample_node (the classic example's path)
    estimate the same posterior predictive mean. Both average 2000 independent draws,
    so their difference has sd <= sqrt(2 * 0.25 / 2000) ~ 0.016 per point; we allow
    5 sd on the worst of 50 points and 0.01 on the mean absolute difference."""
    import pytensor.tensor as pt

    from pymc_bnn import forward

    _, X_test, _, _ = moons
    X_test = X_test[:50]
    approx = advi_clf.approx_
    model = approx.model
    Xs = pt.matrix("Xs")
    weights = [(model[w], model[b]) for w, b in advi_clf.posterior_.spec.weight_names]
    p = pt.sigmoid(forward(Xs, weights)[:, 0])
    n = pt.iscalar("n")
    f = pytensor.function([Xs, n], approx.sample_node(p, size=n))
    reference = f(X_test, 2000).mean(0)
    ours = P.posterior_predictive(advi_clf.posterior_, n_draws=2000, random_seed=5).mean_proba(
        X_test
    )[:, 1]
    diff = np.abs(ours - reference)
    assert diff.max() < 5 * 0.016 and diff.mean() < 0.01


@pytest.mark.parametrize(
    "hidden, backend",
    [
        ((4, 3), None),  # unrolled
        ((FG.UNROLL_MAX + 1, 3), ("NUMBA", "float64")),  # matmuls (the wide path needs JAX)
    ],
)
def test_large_inputs_are_processed_in_chunks(monkeypatch, hidden, backend):
    """The chunked path is really taken, and gives the same answer as one pass."""
    if backend is not None:  # patched where PosteriorPredictive looks it up
        monkeypatch.setattr(P, "backend", lambda: backend)
    spec = _spec(hidden=hidden)
    pred = P.from_idata(spec, _idata(spec))
    X = np.random.default_rng(2).normal(size=(1000, 2))
    whole = pred.sample_proba(X)
    calls = []
    real = P.PosteriorPredictive._function

    def spying_function(self, *args):
        f = real(self, *args)

        def spy(*args):
            calls.append(args[0].shape[0])
            return f(*args)

        return spy

    # 100 rows per chunk: 50 draws; the matmul path counts 4 float64 buffers of the
    # widest layer per row and the row's 2 features, the unrolled one the 2 output
    # columns at 8 bytes
    monkeypatch.setattr(P, "CHUNK_BYTES", (50 * 4 * 8 * max(hidden) + 8 * 2) * 100)
    monkeypatch.setattr(P, "FUSED_CHUNK_BYTES", 50 * 8 * 2 * 100)
    monkeypatch.setattr(P.PosteriorPredictive, "_function", spying_function)
    chunked = pred.sample_proba(X)
    summary = pred.summary(X)
    assert calls[:10] == [100] * 10 and len(calls) == 20
    # different chunk sizes: equal up to float32 rounding when running on JAX
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=ATOL)
    np.testing.assert_allclose(summary["mean"], whole.mean(0), rtol=0, atol=ATOL)


@pytest.mark.parametrize("backend", [("NUMBA", "float64"), ("JAX", "float32")])
def test_wide_inputs_are_counted_once_per_row_not_per_draw(monkeypatch, backend):
    """A chunk's rows do not shrink with the number of features per draw: X is not
    broadcast over the draws. (3,000 features into 32 units: the old count gave 1 row
    per call, and a default fit's temperature scoring took 239 s instead of ~1 s.)"""
    monkeypatch.setattr(P, "backend", lambda: backend)
    narrow = P.from_idata(_spec(hidden=(32,), n_features=20), _idata(_spec((32,), 2, 20)))
    wide = P.from_idata(
        _spec(hidden=(32,), n_features=3000), _idata(_spec((32,), 2, 3000), n_chains=1, n_draws=4)
    )
    if backend[0] == "NUMBA":
        per_draw, budget = 4 * 8 * 32, P.CHUNK_BYTES
    else:  # the wide predictive: three float32 activations per draw and row
        per_draw, budget = 3 * 4 * 32, P.WIDE_CHUNK_BYTES["cpu"]
        assert narrow._wide and wide._wide
    assert narrow._chunk_rows() == budget // (50 * per_draw + 8 * 20)
    assert wide._chunk_rows() == budget // (4 * per_draw + 8 * 3000) > 500


def test_every_call_has_one_shape_and_subsets_are_invariant(monkeypatch):
    """Inputs of any size reach the compiled function as full chunks (one JAX compile,
    one float32 rounding pattern): a point's prediction is bit-identical whether it
    is predicted alone, with a few others, or with many."""
    spec = _spec()
    pred = P.from_idata(spec, _idata(spec))
    shapes = []
    real = P.PosteriorPredictive._function

    def spying_function(self, *args):
        f = real(self, *args)
        return lambda X, *w: (shapes.append(X.shape[0]), f(X, *w))[1]

    monkeypatch.setattr(P.PosteriorPredictive, "_function", spying_function)
    X = np.random.default_rng(4).normal(size=(2000, 2))
    full = pred.sample_proba(X)
    np.testing.assert_allclose(full, numpy_forward_proba(X, pred.weights), rtol=0, atol=ATOL)
    for lo, hi in [(0, 1), (5, 12), (37, 1500), (1999, 2000)]:
        np.testing.assert_array_equal(pred.sample_proba(X[lo:hi]), full[:, lo:hi])
    assert len(set(shapes)) == 1


def test_fast_backend_is_taken_and_fallback_equals_numpy(monkeypatch):
    import importlib.util

    spec = _spec()
    pred = P.from_idata(spec, _idata(spec))
    X = np.random.default_rng(5).normal(size=(16, 2))
    if importlib.util.find_spec("jax") is not None:
        assert FG.backend() == ("JAX", "float32")
        f = FG.compiled_forward(3, "tanh", True, *FG.backend())
        assert "JAX" in type(f.maker.linker).__name__
    # the NUMBA float64 fallback (no jax) agrees with NumPy to rounding
    monkeypatch.setattr(P, "backend", lambda: ("NUMBA", "float64"))
    fallback = P.from_idata(spec, _idata(spec))
    np.testing.assert_allclose(
        fallback.sample_proba(X), numpy_forward_proba(X, pred.weights), rtol=1e-10, atol=1e-13
    )


def test_compiled_function_is_reused_across_posteriors():
    """One compiled function per small network's shapes, whatever its draws; networks
    with a layer wider than UNROLL_MAX share one function of symbolic shapes."""
    FG.compiled_forward.cache_clear()
    for seed in range(3):
        spec = _spec(hidden=(4, 3))
        P.from_idata(spec, _idata(spec, seed=seed, n_draws=10 + seed)).mean_proba(np.zeros((4, 2)))
    info = FG.compiled_forward.cache_info()
    assert info.misses == 1 and info.hits >= 2
    wide = FG.UNROLL_MAX + 1
    compiled = FG.compiled_wide if FG.backend()[0] == "JAX" else FG.compiled_forward
    compiled.cache_clear()
    for seed in range(3):
        spec = _spec(hidden=(wide + seed, 3 + seed))
        P.from_idata(spec, _idata(spec, seed=seed)).mean_proba(np.zeros((4, 2)))
    info = compiled.cache_info()
    assert info.misses == 1 and info.hits >= 2


@pytest.mark.parametrize(
    "hidden, n_features, n_classes",
    [
        ((5, 5), 2, 2),  # every layer unrolled
        ((FG.UNROLL_MAX,), FG.UNROLL_MAX, 3),  # at the bound: unrolled
        ((FG.UNROLL_MAX + 1, 3), 2, 2),  # one layer too wide: matmuls
        ((4,), FG.UNROLL_MAX + 1, 3),
    ],
)
def test_unrolled_predictive_is_taken_for_small_networks_and_equals_numpy(
    hidden, n_features, n_classes
):
    spec = _spec(hidden=hidden, n_features=n_features, n_classes=n_classes)
    pred = P.from_idata(spec, _idata(spec))
    unrolled = max(a for a, _ in spec.layer_shapes) <= FG.UNROLL_MAX
    assert (FG.static_shapes(spec) is not None) == unrolled
    X = np.random.default_rng(4).normal(size=(37, n_features))
    np.testing.assert_allclose(
        pred.sample_proba(X), numpy_forward_proba(X, pred.weights), rtol=0, atol=ATOL
    )
    f = FG.compiled_forward(
        len(hidden) + 1,
        "tanh",
        "bernoulli" if n_classes == 2 else "categorical",
        *FG.backend(),
        False,
        FG.static_shapes(spec),
    )
    ops = {type(node.op).__name__ for node in f.maker.fgraph.toposort()}
    names = " ".join(sorted(ops)).lower()
    # the unrolled graph has no dot product left; the symbolic one has one per layer
    assert ("dot" in names or "matmul" in names) != unrolled, ops


@pytest.mark.parametrize("n_classes", [2, 3])
def test_unrolled_predictive_equals_the_matmul_one(n_classes):
    """The unrolled function returns one (n_draws, n_points) array per class, equal to
    the columns of the symbolic (matmul) function's output."""
    spec = _spec(hidden=(5, 5), n_classes=n_classes)
    pred = P.from_idata(spec, _idata(spec, n_draws=40))
    X = np.random.default_rng(6).normal(size=(300, 2))
    mode, dtype = FG.backend()
    head = "bernoulli" if n_classes == 2 else "categorical"
    args = [X.astype(dtype)] + pred._inputs(dtype)
    fused = FG.compiled_forward(3, "tanh", head, mode, dtype, False, FG.static_shapes(spec))(*args)
    plain = np.asarray(FG.compiled_forward(3, "tanh", head, mode, dtype, False, None)(*args))
    assert isinstance(fused, list) and len(fused) == n_classes
    np.testing.assert_allclose(np.stack(fused, axis=-1), plain, rtol=0, atol=ATOL)
    # and the estimator-facing summaries agree with the NumPy reference
    ref = numpy_forward_proba(X, pred.weights)
    np.testing.assert_allclose(pred.mean_proba(X), ref.mean(0), rtol=0, atol=ATOL)
    np.testing.assert_allclose(pred.summary(X)["std"], ref.std(0), rtol=0, atol=ATOL)


def test_unroll_refuses_shapes_that_do_not_describe_the_network():
    with pytest.raises(ValueError, match="shapes"):
        FG.compiled_forward(3, "tanh", "bernoulli", "NUMBA", "float64", False, ((2, 5), (5, 1)))


def test_summaries_match_their_definitions():
    rng = np.random.default_rng(3)
    proba = rng.dirichlet(np.ones(3), size=(200, 7))  # (n_draws, n_points, n_classes)
    s = summarize_proba(proba)
    mean = proba.mean(0)
    np.testing.assert_allclose(s["mean"], mean)
    np.testing.assert_allclose(s["std"], proba.std(0))
    H = -(mean * np.log(mean)).sum(-1)
    np.testing.assert_allclose(s["entropy"], H)
    np.testing.assert_allclose(s["mutual_info"], H + (proba * np.log(proba)).sum(-1).mean(0))
    assert np.all(s["mutual_info"] >= 0)
    # identical draws carry no epistemic uncertainty
    same = np.repeat(proba[:1], 10, axis=0)
    np.testing.assert_allclose(summarize_proba(same)["mutual_info"], 0.0, atol=1e-12)


def test_mcmc_thinning_and_limits():
    spec = _spec()
    idata = _idata(spec, n_chains=2, n_draws=25)
    assert P.from_idata(spec, idata).n_draws == 50
    thin = P.from_idata(spec, idata, n_draws=10)
    assert thin.n_draws == 10
    with pytest.raises(ValueError, match="exceeds the 50 stored"):
        P.from_idata(spec, idata, n_draws=51)
    with pytest.raises(ValueError, match="n_draws must be a positive integer"):
        P.from_idata(spec, idata, n_draws=0)
    with pytest.raises(ValueError, match="do not match the architecture"):
        P.from_idata(_spec(hidden=(5, 3)), idata)


def test_weight_draws_are_read_only_and_wrong_width_rejected():
    spec = _spec()
    pred = P.from_idata(spec, _idata(spec))
    with pytest.raises(ValueError):
        pred.weights[0][0][0, 0, 0] = 1.0
    with pytest.raises(ValueError, match=r"shape \(n_points, 2\)"):
        pred.sample_proba(np.zeros((3, 5)))


def test_vi_predictive_is_seeded(advi_clf):
    post = advi_clf.posterior_
    a = posterior_predictive(post, n_draws=20, random_seed=1).weights[0][0]
    b = posterior_predictive(post, n_draws=20, random_seed=1).weights[0][0]
    c = posterior_predictive(post, n_draws=20, random_seed=2).weights[0][0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# ------------------------------------------ VI draws: compiled once per structure
#: The fast sampler evaluates its graph with NumPy's ufuncs, ``approx.sample`` with
#: PyTensor's default (Numba-compiled) loops: the same normal draws (NumPy's Generator,
#: which Numba mirrors), but ``exp`` / ``log1p`` may round differently in the last place,
#: and ``mu + sigma * eps`` near 0 carries that to ~1e-14 relative (measured: 2.5e-14).
DRAWS_RTOL, DRAWS_ATOL = 1e-12, 1e-14


def _weights_close(a, b):
    """The same draws up to :data:`DRAWS_RTOL` (and not merely similar ones)."""
    pairs = [
        (x, y)
        for pa, pb in zip(a.weights, b.weights, strict=True)
        for x, y in zip(pa, pb, strict=True)
    ]
    return all(
        x.shape == y.shape and np.allclose(x, y, rtol=DRAWS_RTOL, atol=DRAWS_ATOL) for x, y in pairs
    )


@pytest.mark.parametrize("temperature", [1.0, 0.3])
def test_vi_draws_equal_approx_sample_and_the_fast_path_is_taken(tiny, temperature, monkeypatch):
    """``posterior_predictive`` draws a VI posterior's weights with a sampler compiled
    once per approximation structure: the same draws as PyMC's ``approx.sample`` with
    the same seed (the slow path), for a second fit too (the cached sampler gets that
    fit's parameters), and ``approx.sample`` is not called."""
    from pymc_bnn import build_model, fit

    X, y = tiny
    posts = [
        fit(
            build_model(X[:n], y[:n], hidden_layer_sizes=(3,), random_state=s),
            n_iter=300,
            random_seed=s,
            warn=False,
        )
        for n, s in ((40, 0), (30, 1))
    ]
    slow = []
    for p in posts:
        with D.tempered(p.approx, temperature) as approx:
            slow.append(P.from_idata(p.spec, approx.sample(50, random_seed=5)))

    for p in posts:
        _refuse_approx_sample(monkeypatch, p)
    fast = [
        posterior_predictive(p, n_draws=50, random_seed=5, temperature=temperature) for p in posts
    ]
    assert _weights_close(fast[0], slow[0]) and _weights_close(fast[1], slow[1])
    assert not _weights_close(fast[0], fast[1])
    # the sampler runs on PyTensor's Python VM: no Numba JIT (seconds on a cold
    # machine, ~100 MB per process) and no C thunks
    from pytensor.link.vm import VMLinker

    linker = D._vi_sampler(posts[0].approx)["fn"].maker.linker
    assert isinstance(linker, VMLinker) and not linker.use_cloop and not linker.c_thunks


def _refuse_approx_sample(monkeypatch, post):
    def refuse(*args, **kwargs):
        raise AssertionError("approx.sample was called")

    monkeypatch.setattr(post.approx, "sample", refuse)


def _assert_same_datatree(fast, slow):
    """The same groups, variables, dims, coordinates and attributes (creation time
    aside), and the same values up to :data:`DRAWS_RTOL`."""
    import xarray as xr

    assert sorted(fast.children) == sorted(slow.children)
    for group in slow.children:
        a, b = fast[group].to_dataset(), slow[group].to_dataset()
        a.attrs.pop("created_at"), b.attrs.pop("created_at")
        assert a.attrs == b.attrs
        assert {k: v.dtype for k, v in a.data_vars.items()} == {
            k: v.dtype for k, v in b.data_vars.items()
        }
        xr.testing.assert_allclose(a, b, rtol=DRAWS_RTOL, atol=DRAWS_ATOL)


@pytest.mark.parametrize("temperature", [1.0, 0.3])
def test_vi_draws_of_transformed_and_deterministic_weights_take_the_fast_path(
    tiny, temperature, monkeypatch
):
    """Neal's prior makes the weights deterministics of log-transformed precisions: the
    fast path records them too (one function per structure, the deterministics
    vectorised over the draws), equal to ``approx.sample``'s trace (to rounding), for a second
    fit of the same structure as well, without calling it."""
    from pymc_bnn import build_model, fit

    X, y = tiny
    posts = [
        fit(
            build_model(
                X[:n], y[:n], hidden_layer_sizes=(3,), prior="gamma_precision", random_state=s
            ),
            n_iter=300,
            random_seed=s,
            warn=False,
        )
        for n, s in ((40, 0), (30, 1))
    ]
    slow = []
    for post in posts:
        assert D.fast_draws_apply(post)
        with D.tempered(post.approx, temperature) as approx:
            slow.append(approx.sample(30, random_seed=2))
    assert "w0_precision" in slow[0].posterior and "w0_precision_log__" not in slow[0].posterior
    for post, expected in zip(posts, slow):
        _refuse_approx_sample(monkeypatch, post)
        fast = D.posterior_draws(post, n_draws=30, random_seed=2, temperature=temperature)
        _assert_same_datatree(fast, expected)
        assert _weights_close(
            posterior_predictive(post, n_draws=30, random_seed=2, temperature=temperature),
            P.from_idata(post.spec, expected),
        )
    assert not np.allclose(slow[0].posterior["w0"], slow[1].posterior["w0"])


def test_vi_draws_of_a_model_recording_data_use_approx_sample(tiny):
    """A model whose recorded variables depend on data (here a deterministic of a
    ``pm.Data`` container added to the built model) is not sampled by a sampler shared
    across fits of its structure: ``approx.sample`` records it, and the weights are the
    same as the fast path would give."""
    import pymc as pm

    from pymc_bnn import build_model, fit

    X, y = tiny
    model = build_model(X, y, hidden_layer_sizes=(3,), random_state=0)
    with model:
        pm.Deterministic("w0_dot_x", (model["X"][0] @ model["w0"]).sum())
    post = fit(model, n_iter=300, random_seed=0, warn=False)
    assert not D.fast_draws_apply(post)
    idata = D.posterior_draws(post, n_draws=20, random_seed=2)
    assert "w0_dot_x" in idata.posterior
    expected = np.einsum("i,dij->d", X[0], idata.posterior["w0"].values[0])
    np.testing.assert_allclose(idata.posterior["w0_dot_x"].values[0], expected, rtol=1e-10)
    plain = fit(
        build_model(X, y, hidden_layer_sizes=(3,), random_state=0),
        n_iter=300,
        random_seed=0,
        warn=False,
    )
    assert _weights_close(
        posterior_predictive(post, n_draws=20, random_seed=2),
        posterior_predictive(plain, n_draws=20, random_seed=2),
    )


@pytest.mark.parametrize("temperature", [1.0, 0.2])
def test_vi_idata_equals_approx_sample(tiny, temperature, monkeypatch):
    """``posterior_draws`` (the estimators' ``idata_``) of a plain Normal-prior network:
    the same DataTree as PyMC's ``approx.sample`` (groups, variables, dims, values to rounding;
    creation time aside), which is not called."""
    from pymc_bnn import build_model, fit

    X, y = tiny
    post = fit(
        build_model(X, y, hidden_layer_sizes=(3,), random_state=0),
        n_iter=300,
        random_seed=0,
        warn=False,
    )
    with D.tempered(post.approx, temperature) as approx:
        slow = approx.sample(40, random_seed=3)
    _refuse_approx_sample(monkeypatch, post)
    fast = D.posterior_draws(post, n_draws=40, random_seed=3, temperature=temperature)
    _assert_same_datatree(fast, slow)


# ------------------------------------------------------------- the wide predictive
needs_jax = pytest.mark.skipif(
    FG.backend()[0] != "JAX", reason="the wide predictive runs on the JAX backend"
)


def _numpy_outputs(X, weights, activation="tanh"):
    """Per-draw network outputs before any link, float64: (n_draws, n_points, k)."""
    acts = {"tanh": np.tanh, "relu": lambda a: np.maximum(a, 0)}
    out = []
    for s in range(weights[0][0].shape[0]):
        h = X
        for i, (W, b) in enumerate(weights):
            h = h @ W[s] + b[s]
            if i < len(weights) - 1:
                h = acts[activation](h)
        out.append(h)
    return np.stack(out)


@needs_jax
@pytest.mark.parametrize("n_classes, activation", [(2, "tanh"), (4, "relu")])
def test_wide_predictive_equals_numpy_loop_and_is_taken(monkeypatch, n_classes, activation):
    """A network with a layer wider than UNROLL_MAX goes through compiled_wide: per-draw
    probabilities for sample_proba, the mean over draws for mean_proba and the moments
    for summary, all reduced inside the compiled call, equal to a NumPy loop."""
    spec = _spec(
        hidden=(FG.UNROLL_MAX + 8, 5), n_classes=n_classes, n_features=20, activation=activation
    )
    pred = P.from_idata(spec, _idata(spec))
    assert pred._wide
    reduced = []
    real = FG.compiled_wide
    monkeypatch.setattr(P, "compiled_wide", lambda *a: (reduced.append(a[4]), real(*a))[1])
    # inputs of a standardised table's scale for weights of N(0, 1) draws (larger
    # logits would only magnify float32 rounding)
    X = np.random.default_rng(7).normal(scale=0.25, size=(300, 20))
    ref = numpy_forward_proba(X, pred.weights, activation)
    np.testing.assert_allclose(pred.sample_proba(X), ref, rtol=0, atol=ATOL)
    np.testing.assert_allclose(pred.mean_proba(X), ref.mean(0), rtol=0, atol=ATOL)
    ours, theirs = pred.summary(X), summarize_proba(ref)
    for key in ("mean", "std"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=0, atol=ATOL)
    # entropies of float32 probabilities: ~log(k) x their relative rounding
    for key in ("entropy", "mutual_info"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=0, atol=2e-5)
    assert reduced == ["none", "mean", "moments"]
    # the diagnostics' float64 outputs (logits) through the same function
    np.testing.assert_allclose(
        pred._outputs(X), _numpy_outputs(X, pred.weights, activation), rtol=1e-10, atol=1e-10
    )


@needs_jax
@pytest.mark.parametrize("heteroscedastic", [False, True])
def test_wide_regression_predictive_equals_numpy_loop(heteroscedastic):
    from scipy.special import softplus

    from pymc_bnn.network.model import MIN_NOISE

    spec = NetworkSpec(
        n_features=20,
        hidden_layer_sizes=(FG.UNROLL_MAX + 3,),
        n_classes=0,
        activation="tanh",
        prior_sigma=1.0,
        n_rows=10,
        batch_size=None,
        likelihood="normal",
        heteroscedastic=heteroscedastic,
    )
    idata = _idata(spec)
    if not heteroscedastic:
        idata.posterior["sigma"] = np.abs(idata.posterior["b0"][..., 0]) + 0.1
    pred = P.from_idata(spec, idata)
    assert pred._wide
    X = np.random.default_rng(8).normal(size=(150, 20))
    out = _numpy_outputs(X, pred.weights)
    mu = out[..., 0]
    sd = (
        softplus(out[..., 1]) + MIN_NOISE
        if heteroscedastic
        else np.broadcast_to(pred.noise[:, None], mu.shape)
    )
    mean, sd_draws = pred.sample_normal(X)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sd_draws, sd, rtol=1e-5, atol=1e-5)
    s = pred.normal_summary(X)
    np.testing.assert_allclose(s["mean"], mu.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s["epistemic_std"], mu.std(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(s["aleatoric_std"], np.sqrt((sd**2).mean(0)), rtol=1e-4)
    np.testing.assert_allclose(s["std"], np.sqrt(mu.var(0) + (sd**2).mean(0)), rtol=1e-4)


@needs_jax
def test_wide_predictive_sends_its_weights_once_and_calls_the_program(monkeypatch):
    """The weight draws cross to JAX's device once per predictive, whatever the number
    of predictions; each chunk calls the jitted program itself (no NumPy round trip)."""
    sent, called = [], []
    real_put, real_program = P._jax_device.on_device, P._jax_device.jitted_program

    def program_spy(fn):
        program = real_program(fn)
        assert program is not None  # the PyTensor layout this relies on
        return lambda X, *w: (called.append((X.shape[0], type(w[0]).__module__)), program(X, *w))[1]

    monkeypatch.setattr(
        P._jax_device, "on_device", lambda arrays: (sent.append(len(arrays)), real_put(arrays))[1]
    )
    monkeypatch.setattr(P._jax_device, "jitted_program", program_spy)
    spec = _spec(hidden=(FG.UNROLL_MAX + 1,), n_classes=3, n_features=20)
    pred = P.from_idata(spec, _idata(spec))
    X = np.random.default_rng(9).normal(size=(40, 20))
    for _ in range(3):
        pred.mean_proba(X), pred.summary(X), pred.sample_proba(X)
    assert sent == [4]  # W0, b0, W1, b1 of float32, once
    assert len(called) == 9 and all(m.startswith("jax") for _, m in called)


@needs_jax
def test_wide_predictive_chunks_pad_short_inputs_and_agree(monkeypatch):
    """Large inputs go in chunks of ``_chunk_rows`` rows, a short last chunk padded to a
    power of two from WIDE_MIN_ROWS; the answer equals one pass, and a point's
    probabilities do not depend (beyond float32 rounding) on the other points."""
    spec = _spec(hidden=(FG.UNROLL_MAX + 4, 3), n_features=20)
    pred = P.from_idata(spec, _idata(spec))
    X = np.random.default_rng(10).normal(size=(1030, 20))
    whole = pred.sample_proba(X)
    per_row = 3 * 4 * pred.n_draws * (FG.UNROLL_MAX + 4) + 8 * 20
    monkeypatch.setattr(P, "WIDE_CHUNK_BYTES", {"cpu": 100 * per_row, "gpu": 100 * per_row})
    sizes = []
    real = P._jax_device.jitted_program
    monkeypatch.setattr(
        P._jax_device,
        "jitted_program",
        lambda fn: lambda X, *w: (sizes.append(X.shape[0]), real(fn)(X, *w))[1],
    )
    assert pred._chunk_rows() == 100
    np.testing.assert_allclose(pred.sample_proba(X), whole, rtol=0, atol=ATOL)
    np.testing.assert_allclose(pred.mean_proba(X), whole.mean(0), rtol=0, atol=ATOL)
    assert sizes == [100] * 10 + [64] + [100] * 10 + [64]
    for lo, hi in [(0, 1), (5, 70), (999, 1030)]:
        np.testing.assert_allclose(pred.sample_proba(X[lo:hi]), whole[:, lo:hi], rtol=0, atol=ATOL)
    assert [FG.padded_rows(r, 1000) for r in (1, 64, 65, 600, 1000)] == [64, 64, 128, 1000, 1000]
    assert FG.padded_rows(3, 20) == 20


def _small_regression():
    spec = NetworkSpec(
        n_features=2,
        hidden_layer_sizes=(3,),
        n_classes=0,
        activation="tanh",
        prior_sigma=1.0,
        n_rows=10,
        batch_size=None,
        likelihood="normal",
    )
    idata = _idata(spec)
    idata.posterior["sigma"] = np.abs(idata.posterior["b0"][..., 0]) + 0.1
    return P.from_idata(spec, idata)


@pytest.mark.parametrize("wide", [False, True])
def test_a_nan_input_is_refused_not_predicted_as_nan(monkeypatch, wide):
    """The functional layer's predictive gave NaN probabilities for a NaN row, silently
    (the estimators check their own input); every method, small and wide networks."""
    spec = _spec()
    pred = P.from_idata(spec, _idata(spec))
    monkeypatch.setattr(type(pred), "_wide", property(lambda self: wide))
    X = np.random.default_rng(0).normal(size=(4, 2))
    X[2, 1] = np.nan
    for method in (pred.sample_proba, pred.summary, pred.mean_proba):
        with pytest.raises(ValueError, match=r"X contains NaN or infinity \(first in row 2\)"):
            method(X)
    X[2, 1] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        pred.log_density(X, np.zeros(4))
    reg = _small_regression()
    for method in (reg.sample_normal, reg.normal_summary, lambda X: reg.quantiles(X, 0.5)):
        with pytest.raises(ValueError, match="NaN or infinity"):
            method(X)
    # a list is an array like any other (its .shape was read before the conversion)
    rows = np.random.default_rng(1).normal(size=(3, 2))
    np.testing.assert_array_equal(pred.mean_proba(rows.tolist()), pred.mean_proba(rows))


def test_log_density_takes_only_class_codes_and_finite_targets():
    """-1 had scored the last class and 0.5 class 0, silently; 2 of two classes was a
    NumPy IndexError."""
    spec = _spec()
    pred = P.from_idata(spec, _idata(spec))
    X = np.random.default_rng(0).normal(size=(3, 2))
    ok = pred.log_density(X, np.array([0, 1, 1]))
    np.testing.assert_allclose(ok, np.log(pred.mean_proba(X)[[0, 1, 2], [0, 1, 1]]))
    np.testing.assert_array_equal(pred.log_density(X, np.array([0.0, 1.0, 1.0])), ok)
    for bad, shown in (([0, 1, -1], "-1"), ([0.5, 1, 0], "0.5"), ([0, 1, 2], "2")):
        with pytest.raises(ValueError, match=f"class codes 0 .. 1; position .* holds .*{shown}"):
            pred.log_density(X, np.array(bad))
    reg = _small_regression()
    with pytest.raises(ValueError, match="y must hold finite numbers; position 1 holds"):
        reg.log_density(X, np.array([0.0, np.nan, 1.0]))


def test_quantile_levels_must_lie_in_the_open_unit_interval():
    """A NaN level had returned the bisection's lower bracket as a quantile."""
    reg = _small_regression()
    X = np.random.default_rng(0).normal(size=(3, 2))
    for q in ([np.nan], [0.0], [1.0], [[0.1, 0.9]]):
        with pytest.raises(ValueError, match="q must be a level or a 1-D sequence of levels"):
            reg.quantiles(X, q)
    assert reg.quantiles(X, [0.1, 0.9]).shape == (2, 3)
