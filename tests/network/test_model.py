import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.compile.sharedvalue import SharedVariable
from reference import numpy_forward_proba

from pymc_bnn import build_model, default_initial_values, forward, network_spec


def test_variables_shapes_and_likelihood(tiny):
    X, y = tiny
    model = build_model(X, y, hidden_layer_sizes=(4, 3), random_state=0)
    spec = network_spec(model)
    assert spec.layer_shapes == [(2, 4), (4, 3), (3, 1)]
    shapes = {v.name: tuple(model.initial_point()[v.name].shape) for v in model.free_RVs}
    assert shapes == {"w0": (2, 4), "b0": (4,), "w1": (4, 3), "b1": (3,), "w2": (3, 1), "b2": (1,)}
    assert isinstance(model["y_obs"].owner.op, type(pm.Bernoulli.dist(0.5).owner.op))
    # data live in pm.Data containers
    assert {"X", "y"} <= set(model.named_vars) and model["X"] in model.data_vars


def test_multiclass_uses_categorical_with_one_logit_per_class(tiny):
    X, _ = tiny
    y = np.arange(40) % 3
    model = build_model(X, y, hidden_layer_sizes=(4,), random_state=0)
    assert network_spec(model).n_outputs == 3
    assert model.initial_point()["w1"].shape == (4, 3)
    assert "categorical" in str(model["y_obs"].owner.op).lower()


def test_initial_values_are_seeded_distinct_and_unsaturated(tiny):
    X, y = tiny
    a = build_model(X, y, random_state=1).initial_point()
    b = build_model(X, y, random_state=1).initial_point()
    c = build_model(X, y, random_state=2).initial_point()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["w0"], c["w0"])
    # no two hidden units start identical (symmetric start)
    assert np.unique(a["w0"].round(8), axis=1).shape[1] == a["w0"].shape[1]
    # first-layer pre-activations are of order one: tanh not saturated
    pre = X @ a["w0"] + a["b0"]
    assert np.mean(np.abs(np.tanh(pre)) > 0.99) < 0.2


@pytest.mark.parametrize(
    "layout", [{}, {"feature_major": True}, {"feature_major": True, "unroll": 3}]
)
def test_forward_batched_equals_per_draw_numpy(layout):
    """Every way of writing the layers (row-major matmuls, feature-major matmuls, and
    those mixed with unrolled layers: with unroll=3 the middle layer, fan-in 5, is a
    matmul between two unrolled ones) gives the NumPy loop's values."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3))
    weights = [
        (rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 5))),
        (rng.normal(size=(4, 5, 2)), rng.normal(size=(4, 2))),
        (rng.normal(size=(4, 2, 2)), rng.normal(size=(4, 2))),
    ]
    for activation in ("tanh", "relu", "logistic"):
        logits = forward(
            pt.as_tensor(X),
            [(pt.as_tensor(W), pt.as_tensor(b)) for W, b in weights],
            activation=activation,
            **layout,
        ).eval()
        assert logits.shape == (4, 7, 2)
        expected = numpy_forward_proba(X, weights, activation)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        np.testing.assert_allclose(e / e.sum(-1, keepdims=True), expected, rtol=1e-10)


def _transposes_data(model) -> bool:
    """Whether the model's log density reads its data ``X`` transposed (feature-major)."""
    from pytensor.graph.basic import ancestors
    from pytensor.tensor.elemwise import DimShuffle

    return any(
        v.owner is not None
        and isinstance(v.owner.op, DimShuffle)
        and v.owner.op.new_order == (1, 0)
        and v.owner.inputs[0] is model["X"]
        for v in ancestors([model.logp()])
    )


@pytest.mark.parametrize(
    "hidden, n_features, expected",
    [
        ((5, 5), 2, True),  # the moons default
        ((16,), 16, True),  # every fan-in at the bound
        ((17,), 2, False),  # the output layer's fan-in above it
        ((5, 5), 17, False),  # the input layer's
    ],
)
def test_small_networks_are_computed_feature_major(hidden, n_features, expected, monkeypatch):
    """build_model takes the feature-major layout for networks whose every fan-in is
    at most FEATURE_MAJOR_MAX_FAN_IN, and its log density and gradient equal the
    row-major model's at the same point."""
    import pymc_bnn.network.model as M

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, n_features))
    y = (X[:, 0] > 0).astype(int)
    model = build_model(X, y, hidden_layer_sizes=hidden, random_state=0)
    assert _transposes_data(model) == expected
    point = model.initial_point()
    monkeypatch.setattr(M, "FEATURE_MAJOR_MAX_FAN_IN", 0 if expected else 10**6)
    other = build_model(X, y, hidden_layer_sizes=hidden, random_state=0)
    assert _transposes_data(other) != expected
    for m in (model, other):
        assert m.initial_point().keys() == point.keys()
    values = [(m.compile_logp()(point), m.compile_dlogp()(point)) for m in (model, other)]
    np.testing.assert_allclose(values[0][0], values[1][0], rtol=1e-12)
    np.testing.assert_allclose(values[0][1], values[1][1], rtol=1e-10, atol=1e-12)


def test_minibatch_slices_x_and_y_together_with_total_size():
    n = 200
    X = np.arange(n, dtype=float)[:, None] * np.ones((1, 2))
    y = np.arange(n) % 2
    model = build_model(X, y, batch_size=16, random_state=0)
    from pytensor.graph.traversal import ancestors

    value = model.rvs_to_values[model["y_obs"]]
    mb_nodes = {
        v.owner
        for v in ancestors([value])
        if v.owner is not None and type(v.owner.op).__name__ == "MinibatchOp"
    }
    assert len(mb_nodes) == 1, "the likelihood must see a pm.Minibatch slice"
    (node,) = mb_nodes
    # the rows that reach the likelihood: a batch of 16, X and y from the same rows
    f = pm.compile([], list(node.outputs[:2]), random_seed=0)
    X_mb, y_mb = f()
    assert X_mb.shape == (16, 2) and y_mb.shape == (16,)
    np.testing.assert_array_equal(X_mb[:, 0].astype(int) % 2, y_mb)
    X_mb2, _ = f()
    assert not np.array_equal(X_mb, X_mb2), "successive steps must see different rows"
    # total_size: a shared input (a runner compiled for one data size serves another)
    total_size = model["y_obs"].owner.inputs[-1]
    assert isinstance(total_size, SharedVariable) and total_size.get_value() == n
    assert network_spec(model).n_rows == n


def test_minibatch_loglik_is_unbiased_for_full_data(moons):
    """The total_size-scaled minibatch log-likelihood estimates the full-data one.

    At a fixed weight point, 3000 independent minibatches of 50 rows: their mean must
    be within 4 standard errors of the full-data log-likelihood (a false alarm has
    probability ~6e-5).
    """
    X_train, _, y_train, _ = moons
    full = build_model(X_train, y_train, random_state=0)
    mb = build_model(X_train, y_train, batch_size=50, random_state=0)
    point = full.initial_point()
    full_ll = full.compile_logp(vars=[full["y_obs"]])(point)
    f = mb.compile_logp(vars=[mb["y_obs"]])
    draws = np.array([f(point) for _ in range(3000)])
    se = draws.std() / np.sqrt(draws.size)
    assert abs(draws.mean() - full_ll) < 4 * se
    assert draws.std() > 0  # really random batches


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"activation": "sigmoidal"}, "activation must be one of"),
        ({"hidden_layer_sizes": (5, 0)}, "hidden_layer_sizes"),
        ({"prior_sigma": -1.0}, "prior_sigma"),
        ({"prior_sigma": float("nan")}, "prior_sigma"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 1000}, "cannot exceed"),
        ({"n_classes": 1}, "n_classes"),
    ],
)
def test_bad_parameters_raise_clear_errors(tiny, kwargs, match):
    X, y = tiny
    with pytest.raises(ValueError, match=match):
        build_model(X, y, **kwargs)


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.ones(5), np.zeros(5, int), "2-D"),
        (np.full((4, 2), np.nan), np.zeros(4, int), "NaN"),
        (np.ones((4, 2)), np.zeros(3, int), "one entry per row"),
        (np.ones((4, 2)), np.array([0.5, 1, 0, 1]), "integer class codes"),
        (np.ones((4, 2)), np.array([-1, 1, 0, 1]), "negative"),
    ],
)
def test_bad_data_raise_clear_errors(X, y, match):
    with pytest.raises(ValueError, match=match):
        build_model(X, y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        # silently ignored: each parameter belongs to the other prior
        (
            {"prior": "gamma_precision", "prior_sigma": 2.0},
            r"prior_sigma=2\.0 is the scale of prior='normal'.*prior='gamma_precision'",
        ),
        (
            {"prior": "gamma_precision", "prior_sigma": (1.0, 0.5, 1.0)},
            r"prior_sigma=\(1\.0, 0\.5, 1\.0\) is",
        ),
        (
            {"precision_shape": 2.0},
            r"precision_shape=2\.0 sets the Gamma precision of "
            r"prior='gamma_precision'; prior='normal'",
        ),
        (
            {"precision_shape": 2.0, "precision_rate": 0.5},
            r"precision_shape=2\.0, precision_rate=0\.5 set the Gamma precision",
        ),
        # NumPy's TypeError ("a"), or deep in NumPy (-1); 1.5 was accepted
        (
            {"random_state": "a"},
            "random_state must be None, an integer >= 0, a numpy "
            "Generator, SeedSequence or BitGenerator; got 'a'",
        ),
        ({"random_state": -1}, "random_state must be None"),
        ({"random_state": 1.5}, "random_state must be None"),
        ({"random_state": True}, "random_state must be None"),
    ],
)
def test_parameters_of_the_other_prior_and_bad_seeds_are_refused(tiny, kwargs, match):
    X, y = tiny
    with pytest.raises(ValueError, match=match):
        build_model(X, y, **kwargs)


@pytest.mark.parametrize(
    "seed", [np.random.SeedSequence(4), np.random.PCG64(4), [4], np.random.default_rng(4)]
)
def test_random_state_takes_what_numpy_seeds_a_generator_with(tiny, seed):
    X, y = tiny
    start = build_model(X, y, random_state=seed).initial_point()
    same = build_model(
        X,
        y,
        random_state=np.random.default_rng(
            np.random.SeedSequence(4) if not isinstance(seed, list) else [4]
        ),
    ).initial_point()
    assert all(np.array_equal(start[k], same[k]) for k in start)


def test_the_default_values_of_the_other_priors_parameters_are_accepted(tiny):
    """What the estimators pass: both priors' parameters, the unused at their defaults."""
    X, y = tiny
    neal = build_model(
        X,
        y,
        prior="gamma_precision",
        prior_sigma=1.0,
        precision_shape=2.0,
        random_state=np.random.default_rng(0),
    )
    assert network_spec(neal).precision_shape == 2.0 and "prior_sigma" not in neal.named_vars
    normal = build_model(
        X,
        y,
        prior_sigma=(2.0, 0.5, 1.0),
        precision_shape=1.0,
        precision_rate=1.0,
        random_state=np.int64(3),
    )
    assert network_spec(normal).prior_sigma == (2.0, 0.5, 1.0)


def test_accepted_input_kinds_give_the_model_of_plain_ones(tiny):
    """A 0-d prior_sigma array is a scalar (len() of it raised a TypeError), and boolean
    targets are the classes 0 and 1 (refused as "not integer class codes")."""
    X, y = tiny
    plain = build_model(X, y, prior_sigma=2.0, random_state=0)
    for kwargs in ({"prior_sigma": np.array(2.0)}, {"prior_sigma": 2.0, "y": y.astype(bool)}):
        kwargs = {"y": y, **kwargs}
        model = build_model(X, random_state=0, **kwargs)
        assert network_spec(model) == network_spec(plain)
        np.testing.assert_array_equal(model["y"].get_value(), plain["y"].get_value())
        np.testing.assert_array_equal(model["prior_sigma"].get_value(), 2.0)


def test_missing_values_in_a_nullable_pandas_column_are_named(tiny):
    """pandas' Float64 column with NA raised pandas' own TypeError/ValueError."""
    pd = pytest.importorskip("pandas")
    X, y = tiny
    frame = pd.DataFrame(X, columns=["a", "b"]).astype("Float64")
    np.testing.assert_array_equal(build_model(frame, y)["X"].get_value(), X)
    frame.iloc[3, 1] = pd.NA
    with pytest.raises(ValueError, match="X contains NaN or missing values"):
        build_model(frame, y)
    with pytest.raises(ValueError, match="X must hold real numbers"):
        build_model(np.full(X.shape, "a"), y)


def test_inputs_are_not_mutated(tiny):
    X, y = tiny
    X0, y0 = X.copy(), y.copy()
    model = build_model(X, y, random_state=0)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)
    model["X"].set_value(np.zeros_like(X))
    assert np.array_equal(X, X0), "the model's data container must not alias the input"


def test_network_spec_rejects_foreign_models():
    with pm.Model() as m:
        pm.Normal("x")
    with pytest.raises(ValueError, match="not built by pymc_bnn.build_model"):
        network_spec(m)


def test_every_accepted_activation_has_a_function():
    """The input checks accept the names of pymc_bnn.network.spec (which imports no PyTensor);
    the forward pass needs a function for each, and for nothing else."""
    from pymc_bnn.network import model, spec

    assert tuple(model.ACTIVATIONS) == spec.ACTIVATION_NAMES
    assert model.NetworkSpec is spec.NetworkSpec
    assert (model.PRIORS, model.LIKELIHOODS) == (spec.PRIORS, spec.LIKELIHOODS)


@pytest.mark.parametrize("likelihood", ["normal", "categorical"])
def test_full_batch_total_size_weights_the_likelihood_only(likelihood):
    """A full-batch model built with total_size = k * rows has k times the
    log-likelihood and the same prior (a tempered ELBO whose KL term counts 1 / k);
    total_size = rows, or none, is the plain model; fewer than the rows is refused."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=30) if likelihood == "normal" else (X[:, 0] > 0) * 1
    kw = dict(hidden_layer_sizes=(3,), likelihood=likelihood, random_state=0)
    plain, same = build_model(X, y, **kw), build_model(X, y, total_size=30, **kw)
    weighted = build_model(X, y, total_size=120, **kw)
    point = plain.initial_point()

    def parts(model):
        return (
            model.compile_logp(vars=model.observed_RVs)(point),
            model.compile_logp(vars=model.free_RVs)(point),
        )

    (lik, prior), (lik4, prior4) = parts(plain), parts(weighted)
    assert lik4 == pytest.approx(4 * lik, rel=1e-12) and prior4 == pytest.approx(prior)
    assert parts(same) == pytest.approx((lik, prior), rel=1e-12)
    assert network_spec(weighted).n_rows == 120
    with pytest.raises(ValueError, match="total_size"):
        build_model(X, y, total_size=29, **kw)


def _draws_tree(model, n_draws=4):
    """A DataTree whose posterior is ``n_draws`` prior draws of ``model`` (one chain)."""
    import xarray as xr

    with model:
        prior = pm.sample_prior_predictive(draws=n_draws, random_seed=1).prior
    return xr.DataTree.from_dict({"posterior": prior.to_dataset()})


def test_pymc_model_transforms_run_inside_default_initial_values(tiny):
    """pm.compute_log_likelihood (hence az.loo), pm.do, clone_model refuse a model with
    initial values of its own (the seeded starting weights): inside the block they run,
    and give the pointwise log-likelihood NumPy computes; after it the model starts
    where it did."""
    from pymc.model.fgraph import clone_model

    X, y = tiny
    model = build_model(X, y, hidden_layer_sizes=(3,), random_state=0)
    start = model.initial_point()
    tree = _draws_tree(model)
    with pytest.raises(NotImplementedError, match="non-default initial_values"):
        pm.compute_log_likelihood(tree.copy(), model=model, progressbar=False)
    with default_initial_values(model) as same:
        assert same is model
        ll = pm.compute_log_likelihood(tree.copy(), model=model, progressbar=False)
        clone_model(model)
    assert "log_likelihood" not in tree.children  # the copy took the group
    post = tree.posterior
    weights = [(post[f"w{i}"].values[0], post[f"b{i}"].values[0]) for i in range(2)]
    proba = numpy_forward_proba(X, weights)[:, np.arange(len(y)), y]
    got = ll.log_likelihood["y_obs"].values[0]
    assert got.shape == (4, len(y))
    np.testing.assert_allclose(got, np.log(proba), rtol=1e-6)
    # and the model's own log density of one draw's likelihood, summed
    logp = model.compile_logp(vars=[model["y_obs"]])
    point = {n: post[n].values[0, 2] for n in ("w0", "b0", "w1", "b1")}
    np.testing.assert_allclose(got[2].sum(), logp(point), rtol=1e-6)
    after = model.initial_point()
    assert all(np.array_equal(start[k], after[k]) for k in start)
    with pytest.raises(NotImplementedError, match="non-default initial_values"):
        pm.compute_log_likelihood(tree.copy(), model=model, progressbar=False)


def test_default_initial_values_restores_them_after_an_error(tiny):
    X, y = tiny
    model = build_model(X, y, hidden_layer_sizes=(3,), groups=np.arange(len(y)) % 2, random_state=0)
    start, saved = model.initial_point(), dict(model.rvs_to_initial_values)
    with pytest.raises(RuntimeError, match="inside"):
        with default_initial_values(model):
            assert all(v is None for v in model.rvs_to_initial_values.values())
            raise RuntimeError("inside")
    assert all(model.rvs_to_initial_values[rv] is value for rv, value in saved.items())
    after = model.initial_point()
    assert all(np.array_equal(start[k], after[k]) for k in start)
