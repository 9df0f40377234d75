"""pymc_bnn.dask: lazy block-wise predictions on a distributed cluster, CV on its workers.

One small ``distributed.LocalCluster`` (2 worker processes, 1 thread each) serves the
module; its tests share one xdist worker.
"""

import sys

import numpy as np
import pytest

from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor
from pymc_bnn.estimators import InputScaleWarning

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.xdist_group("dask")
SEED = 0
RTOL = 1e-6  # the same compiled predictive; float32 draws when jax is installed


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:  # any free port
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(SEED)
    X = rng.normal(size=(400, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, "up", "down")
    groups = np.where(X[:, 2] > 0, "a", "b")
    return X, y, groups


@pytest.fixture(scope="module")
def clf(data):
    X, y, _ = data
    # a fast fit (prior 1.0: the evidence's scales here, output sd ~6, need ~10,000
    # ADVI steps to level off; these tests are about dask, not the prior)
    return BayesianMLPClassifier(
        (4,),
        n_iter=3000,
        n_draws=100,
        posterior_temperature=1.0,
        prior_sigma=1.0,
        random_state=SEED,
    ).fit(X, y)


def test_predictions_are_lazy_row_chunked_and_equal_numpy(client, clf, data):
    X = data[0]
    Xd = da.from_array(X, chunks=(90, 2))  # column chunks are merged
    proba = clf.predict_proba(Xd)
    labels = clf.predict(Xd)
    u = clf.predict_uncertainty(Xd)
    assert isinstance(proba, da.Array) and proba.chunks == ((90, 90, 90, 90, 40), (2,))
    assert labels.dtype == clf.classes_.dtype and labels.chunks == ((90, 90, 90, 90, 40),)
    np.testing.assert_allclose(proba.compute(), clf.predict_proba(X), rtol=RTOL)
    assert labels.compute().tolist() == clf.predict(X).tolist()
    ref = clf.predict_uncertainty(X)
    computed = client.compute(u, sync=True)
    for key in ("mean", "std", "entropy", "mutual_info"):
        assert computed[key].shape == ref[key].shape
        np.testing.assert_allclose(computed[key], ref[key], rtol=RTOL, atol=1e-9)


def test_the_estimator_is_one_graph_key_that_every_block_uses(clf, data):
    proba = clf.predict_proba(da.from_array(data[0], chunks=100))
    graph = dict(proba.__dask_graph__())
    # dask wraps literal data in a node with a .value (dask >= 2024.12)
    holders = [
        k for k, v in graph.items() if isinstance(getattr(v, "value", v), BayesianMLPClassifier)
    ]
    assert len(holders) == 1
    deps = proba.dask.get_all_dependencies()
    from dask.core import flatten

    blocks = list(flatten(proba.__dask_keys__()))
    assert len(blocks) == 4
    assert all(holders[0] in _ancestors(deps, k) for k in blocks)


def _ancestors(deps, key):
    seen, stack = set(), [key]
    while stack:
        for d in deps.get(stack.pop(), ()):
            if d not in seen:
                seen.add(d)
                stack.append(d)
    return seen


def test_dask_dataframe_and_groups(client, data):
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X, y, groups = data
    hier = BayesianMLPClassifier(
        (3,), n_iter=3000, n_draws=50, posterior_temperature=1.0, random_state=SEED
    ).fit(X, y, groups=groups)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]), npartitions=3)
    lazy = hier.predict_proba(
        frame.to_dask_array(lengths=True), groups=da.from_array(groups, chunks=150)
    )
    np.testing.assert_allclose(lazy.compute(), hier.predict_proba(X, groups=groups), rtol=RTOL)
    plain = BayesianMLPClassifier(
        (3,), n_iter=3000, n_draws=50, posterior_temperature=1.0, random_state=SEED
    ).fit(X, y)
    # fit without feature names: scikit-learn's warning for a frame, once (not per block)
    with pytest.warns(
        UserWarning, match="X has feature names, but BayesianMLPClassifier was fitted without"
    ) as caught:
        lazy = plain.predict_proba(frame)
        computed = lazy.compute()
    assert len(caught) == 1 and caught[0].filename == __file__
    np.testing.assert_allclose(computed, plain.predict_proba(X), rtol=RTOL)


def test_regressor_intervals_on_blocks(client, data):
    X = data[0]
    target = X[:, 0] - X[:, 1]
    reg = BayesianMLPRegressor((3,), n_draws=50, posterior_temperature=1.0, random_state=SEED).fit(
        X, target
    )
    Xd = da.from_array(X, chunks=120)
    mean, std = reg.predict(Xd, return_std=True)
    lower, upper = reg.predict_interval(Xd, coverage=0.8)
    ref_mean, ref_std = reg.predict(X, return_std=True)
    ref_lower, ref_upper = reg.predict_interval(X, coverage=0.8)
    got = client.compute([mean, std, lower, upper], sync=True)
    for a, b in zip(got, (ref_mean, ref_std, ref_lower, ref_upper)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-9)


def test_bad_dask_input(clf, data):
    with pytest.raises(ValueError, match="has 2 features, but the estimator was fit with 3"):
        clf.predict_proba(da.from_array(data[0][:, :2]))
    with pytest.raises(ValueError, match="one label per row"):
        clf.predict_proba(da.from_array(data[0]), groups=np.zeros(5))


def test_missing_dask_names_the_extra(monkeypatch):
    from pymc_bnn import dask as adapter

    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r"pip install 'pymc_bnn\[dask\]'"):
        adapter._require_dask()


@pytest.mark.slow
def test_cross_validation_on_the_cluster_equals_serial(client, data):
    """joblib's dask backend runs the folds on the workers; same seeds, same scores."""
    from joblib import parallel_backend
    from sklearn.model_selection import cross_val_score

    X, y, _ = data
    est = BayesianMLPClassifier(
        (4,), n_iter=2000, n_draws=50, posterior_temperature=1.0, prior_sigma=1.0, random_state=SEED
    )
    serial = cross_val_score(est, X, y, cv=3)
    with parallel_backend("dask"):
        on_cluster = cross_val_score(est, X, y, cv=3, n_jobs=-1)
    np.testing.assert_array_equal(on_cluster, serial)


# ------------------------------------------------------------------ out-of-core fits
def test_reads_of_the_same_arrays_again_raise_no_spurious_key_error(client):
    """dask's linear fusion gives a fused chain a key that another graph of the same
    arrays defines otherwise, and the distributed scheduler then fails with a KeyError
    (dask/dask#9888): a second fit on the same collections did, in most runs. The
    package's reads run unfused (``pymc_bnn.dask.compute``); here the reads of three
    fits of one pair of arrays generated on the workers, as a fit makes them."""
    import dask

    from pymc_bnn.dask import BlockSampler, streamed_inputs

    clf = BayesianMLPClassifier((2,), batch_size=64)
    fused = dask.config.get("optimization.fuse.active")
    for _ in range(3):
        X = da.random.default_rng(SEED).standard_normal((4_000, 3), chunks=(2_000, 3))
        stream = streamed_inputs(clf, X, (X[:, 0] + X[:, 1] ** 2 > 1).astype(np.int64))
        sampler = BlockSampler([stream["X"], stream["codes"]], pool_blocks=1)
        sampler.close()
        assert stream["X0"].shape == (64, 3) and sampler.loads == 1
    assert dask.config.get("optimization.fuse.active") is fused  # put back as it was


@pytest.fixture(scope="module")
def moons20k():
    from sklearn.datasets import make_moons

    X, y = make_moons(20_000, noise=0.2, random_state=SEED)
    return (X - X.mean(0)) / X.std(0), y


def test_streamed_fit_matches_the_in_memory_minibatch_fit(moons20k):
    """Same model, same ELBO units (total_size = all rows), same accuracy within noise;
    the model's containers hold only a placeholder batch, and blocks were streamed."""
    X, y = moons20k
    # one fixed prior for both (the evidence's own test is below)
    streamed = BayesianMLPClassifier(batch_size=128, prior_sigma=1.0, random_state=SEED).fit(
        da.from_array(X, chunks=2000), da.from_array(y, chunks=2000)
    )
    memory = BayesianMLPClassifier(
        batch_size=128, posterior_temperature=1.0, prior_sigma=1.0, random_state=SEED
    ).fit(X, y)
    assert streamed.prior_sigma_ == 1.0 and streamed.evidence_ is None
    assert streamed.posterior_temperature_ == 1.0 and streamed.temperature_selection_ is None
    assert streamed.posterior_.spec.n_rows == memory.posterior_.spec.n_rows == 20_000
    assert streamed.approx_.model["X"].get_value().shape == (128, 2)
    assert streamed.posterior_.engine == "jax"
    last = slice(-2000, None)
    ratio = streamed.loss_curve_[last].mean() / memory.loss_curve_[last].mean()
    assert 0.97 < ratio < 1.03, ratio
    assert abs(streamed.score(X, y) - memory.score(X, y)) < 0.02
    again = BayesianMLPClassifier(batch_size=128, prior_sigma=1.0, random_state=SEED).fit(
        da.from_array(X, chunks=2000), da.from_array(y, chunks=2000)
    )
    np.testing.assert_array_equal(again.predict_proba(X[:50]), streamed.predict_proba(X[:50]))


def test_evidence_reads_only_its_rows_of_a_dask_array(in_process):
    """The evidence of dask arrays equals the evidence of the same rows in memory, for
    the random subset (more rows than max_rows) and for all rows; a non-finite value in
    a row it reads is named."""
    from pymc_bnn.inference.evidence import evidence_prior_scales

    rng = np.random.default_rng(SEED)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] - X[:, 1] ** 2 + 0.3 * rng.normal(size=600) > -0.5).astype(np.int64)
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    kw = dict(hidden_layer_sizes=(3,), n_classes=2, random_state=SEED)
    for max_rows in (200, 1000):
        lazy = evidence_prior_scales(Xd, yd, max_rows=max_rows, **kw)
        memory = evidence_prior_scales(X, y, max_rows=max_rows, **kw)
        assert lazy == memory
    bad = X.copy()
    bad[123, 2] = np.inf
    with pytest.raises(ValueError, match="X has NaN or infinite values in row 123"):
        evidence_prior_scales(da.from_array(bad, chunks=100), yd, **kw)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 500 steps
def test_streamed_default_takes_the_evidence_of_the_in_memory_default(moons20k, in_process):
    """prior_sigma="auto" on dask input: the prior scales of the same rows in memory
    (4,000 rows, below evidence.MAX_ROWS: all of them), used by the streamed fit."""
    # 4,000 of the 20,000 rows in 4 blocks: the evidence step, most of this test's time,
    # costs in proportion to its rows (~6.5 s a fit on all 20,000, ~1.2 s on 4,000); the
    # two evidences are equal exactly either way (the subset branch, more rows than
    # max_rows, is compared on dask input in test_evidence_reads_only_its_rows_of_a_dask_array)
    X, y = moons20k[0][:4000], moons20k[1][:4000]
    kw = dict(batch_size=128, n_iter=500, posterior_temperature=1.0, random_state=SEED)
    streamed = BayesianMLPClassifier(**kw).fit(
        da.from_array(X, chunks=1000), da.from_array(y, chunks=1000)
    )
    memory = BayesianMLPClassifier(**kw).fit(X, y)
    assert streamed.evidence_ is not None
    assert streamed.evidence_ == memory.evidence_
    assert streamed.prior_sigma_ == memory.prior_sigma_ == streamed.evidence_.sigmas


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 500 steps
def test_streamed_fit_on_parquet_columns_read_in_fewer_partitions(moons20k, in_process, tmp_path):
    """A table of 8 Parquet files, ``X = frame[features]`` and ``y = frame[target]``:
    dask's optimizer reads the one-column target in fewer partitions than the files,
    which made ``to_dask_array(lengths=True)`` fail inside fit (lengths of 3 partitions
    for a frame of 8). The fit now runs, reads X's and y's rows in line (its evidence
    equals the in-memory one of the same rows), and predicts on the frame lazily, each
    block under the frame's column names (which once warned, block by block, that the
    estimator had been fit with feature names)."""
    dd = pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    import pandas as pd

    X, y = moons20k[0][:4000], moons20k[1][:4000]
    table = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "label": y})
    for i in range(8):
        table.iloc[i * 500 : (i + 1) * 500].to_parquet(tmp_path / f"part{i}.parquet")
    frame = dd.read_parquet(tmp_path)
    features, target = frame[["a", "b"]], frame["label"]
    assert target.optimize().npartitions < target.npartitions == 8  # the case at issue
    kw = dict(batch_size=128, n_iter=500, posterior_temperature=1.0, random_state=SEED)
    streamed = BayesianMLPClassifier(**kw).fit(features, target)
    memory = BayesianMLPClassifier(**kw).fit(X, y)
    assert streamed.posterior_.spec.n_rows == 4000
    assert streamed.evidence_ is not None and streamed.evidence_ == memory.evidence_
    assert streamed.feature_names_in_.tolist() == ["a", "b"]
    lazy = streamed.predict_proba(features)
    assert isinstance(lazy, da.Array) and lazy.shape == (4000, 2)
    np.testing.assert_allclose(lazy.compute(), streamed.predict_proba(table[["a", "b"]]), rtol=RTOL)
    with pytest.raises(ValueError, match=r"columns \['b', 'a'\], but .* fit with \['a', 'b'\]"):
        streamed.predict_proba(frame[["b", "a"]])  # checked when the graph is built
    # fit with feature names, given an array: scikit-learn's warning, once (not per block)
    with pytest.warns(UserWarning, match="X does not have valid feature names") as caught:
        computed = streamed.predict_proba(da.from_array(X, chunks=500)).compute()
    assert len(caught) == 1 and caught[0].filename == __file__
    np.testing.assert_allclose(computed, lazy.compute(), rtol=RTOL)


@pytest.mark.parametrize("columns", [[0, 1, 2], ["a", 1, "c"]], ids=["integers", "mixed"])
def test_frame_column_names_are_taken_as_scikit_learn_takes_them(clf, data, in_process, columns):
    """A frame's columns are feature names only when all are strings, as for
    scikit-learn's own estimators (the anchor, on the same pandas table): integer
    columns give none (no warning when predicting with an estimator fit on arrays),
    mixed ones are a TypeError, at fit and at predict alike."""
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from pymc_bnn.dask import streamed_inputs

    X, y, _ = data
    table = pd.DataFrame(X, columns=columns)
    frame = dd.from_pandas(table, npartitions=3)
    fresh = BayesianMLPClassifier(batch_size=32)
    if columns == [0, 1, 2]:
        anchor = LogisticRegression().fit(table, y)
        streamed_inputs(fresh, frame, y)
        assert not hasattr(anchor, "feature_names_in_")
        assert not hasattr(fresh, "feature_names_in_")
        np.testing.assert_allclose(
            clf.predict_proba(frame).compute(), clf.predict_proba(X), rtol=RTOL
        )
        return
    message = "Feature names are only supported if all input features have string names"
    with pytest.raises(TypeError, match=message):
        LogisticRegression().fit(table, y)
    with pytest.raises(TypeError, match=message):
        streamed_inputs(fresh, frame, y)
    with pytest.raises(TypeError, match=message):
        clf.predict_proba(frame)


@pytest.fixture
def in_process():
    """dask computes in this process: the module's LocalCluster (the default scheduler
    while it lives) would add a round trip to a worker per block, thousands here."""
    import dask

    with dask.config.set(scheduler="synchronous"):
        yield


def test_block_sampler_draws_every_row_uniformly(in_process):
    """Over many calls each block of unequal size is drawn in proportion to its rows,
    rows within a block uniformly (chi-square), rows of X and y stay paired, and a block
    is replaced once ``echo`` x the mean block length rows were drawn, at most once per
    call. (Calls are correlated through the pool, so a chi-square test over all rows
    would not apply; block shares get a tolerance instead.)"""
    from scipy import stats

    from pymc_bnn.dask import BlockSampler

    sizes = (5, 10, 20, 25)  # mean 15 rows
    n = sum(sizes)
    X = da.from_array(np.arange(n, dtype=float)[:, None], chunks=(sizes, (1,)))
    y = da.from_array(np.arange(n), chunks=(sizes,))
    out = [np.empty((10, 12, 1)), np.empty((10, 12), dtype=np.int64)]  # 120 rows a call
    counts, first = {}, {}
    # echo 1: 3,000 calls for the statistics below; echo 4 only has to repeat its draws,
    # which the first 1,000 calls show as well as 3,000 (any difference in the schedule
    # changes the draws from that call on), at a third of the cost of its loop
    compared = 1000
    for echo, calls in ((1, 3000), (4, compared)):  # a new block every call (120 >= 15, >= 60)
        sampler = BlockSampler([X, y], pool_blocks=2, echo=echo, seed=1)
        rng = np.random.default_rng(2)
        counts[echo] = np.zeros(n)
        for i in range(calls):
            sampler.fill(rng, out)
            assert np.array_equal(out[0][..., 0], out[1])
            counts[echo] += np.bincount(out[1].ravel(), minlength=n)
            if i + 1 == compared:
                first[echo] = counts[echo].copy()
        sampler.close()
        assert sampler.loads == 2 + calls - 1  # the first call draws from the initial pool
    # echo 1 and 4 differ only in when a block is replaced: the same draws here
    np.testing.assert_array_equal(first[1], first[4])
    for echo, loads in ((16, 2 + 4), (24, 2 + 2), (48, 2 + 1)):  # 240, 360, 720 rows a block
        paced = BlockSampler([X, y], pool_blocks=2, echo=echo, seed=1)
        for _ in range(9):
            paced.fill(rng, out)
        paced.close()
        assert paced.loads == loads, (echo, paced.loads)
    edges = np.cumsum((0, *sizes))
    for a, b in zip(edges[:-1], edges[1:]):
        assert abs(counts[1][a:b].sum() / counts[1].sum() - (b - a) / n) < 0.03
        assert stats.chisquare(counts[1][a:b]).pvalue > 1e-4
    with pytest.raises(ValueError, match="echo must be a positive number"):
        BlockSampler([X, y], echo=0)


def test_streamed_regressor(moons20k):
    X = moons20k[0]
    signal = 3.0 * X[:, 0] - X[:, 1] + 10.0
    # with noise: on a noiseless target the ELBO keeps falling as the noise scale shrinks
    target = signal + np.random.default_rng(SEED).normal(0.0, 0.3, len(signal))
    reg = BayesianMLPRegressor((4,), batch_size=256, random_state=SEED).fit(
        da.from_array(X, chunks=4000), da.from_array(target, chunks=4000)
    )
    assert abs(reg.y_mean_ - target.mean()) < 1e-9 and abs(reg.y_scale_ - target.std()) < 1e-9
    rmse = np.sqrt(np.mean((reg.predict(X) - signal) ** 2))
    assert rmse < 0.1 * target.std()


def test_streamed_fit_warns_of_raw_features_from_its_first_rows(moons20k):
    """The scale check of a streamed fit reads only the first batch_size rows, and comes
    first (here the evidence step then stops at a NaN, so no network is fitted)."""
    X, y = moons20k
    raw = X * 100.0
    raw[12_345, 1] = np.nan
    with (
        pytest.warns(
            InputScaleWarning,
            match=r"Of 2 input features \(in the first 64 "
            r"rows\), 2 have root mean square above 10",
        ),
        pytest.raises(ValueError, match="X has NaN or infinite values in row"),
    ):
        BayesianMLPClassifier(batch_size=64, random_state=SEED).fit(
            da.from_array(raw, chunks=5000), da.from_array(y, chunks=5000)
        )


def test_streamed_fit_bad_input(moons20k):
    X, y = moons20k
    Xd, yd = da.from_array(X, chunks=5000), da.from_array(y, chunks=5000)
    with pytest.raises(ValueError, match="batch_size=None .full batches. needs the data in memory"):
        BayesianMLPClassifier(batch_size=None).fit(Xd, yd)
    with pytest.raises(ValueError, match="needs the data in memory"):
        BayesianMLPClassifier(batch_size=64, inference="nuts").fit(Xd, yd)
    with pytest.raises(ValueError, match="groups are not supported with dask"):
        BayesianMLPClassifier(batch_size=64).fit(Xd, yd, groups=np.zeros(len(y)))
    bad = X.copy()
    bad[12_345, 1] = np.nan
    # the block sampler names the block (the evidence's own message, naming the row, is
    # tested above); with the evidence step in front the error is as clear
    with pytest.raises(ValueError, match="X has NaN or infinite values in rows 10000 to 14999"):
        BayesianMLPClassifier(
            batch_size=64,
            n_iter=20_000,
            posterior_temperature=1.0,
            prior_sigma=1.0,
            random_state=SEED,
        ).fit(da.from_array(bad, chunks=5000), yd)
    with pytest.raises(ValueError, match="X has NaN or infinite values in row"):
        BayesianMLPClassifier(batch_size=64, random_state=SEED).fit(
            da.from_array(bad, chunks=5000), yd
        )


def test_streamed_fit_input_errors_are_clear(moons20k):
    """Each had failed deep in dask or NumPy, or blamed the wrong rows."""
    X, y = moons20k
    Xd, yd = da.from_array(X, chunks=5000), da.from_array(y, chunks=5000)
    with pytest.raises(ValueError, match=r"X must be 2-D; got a dask array of shape \(20000,\)"):
        BayesianMLPClassifier(batch_size=64).fit(Xd[:, 0], yd)
    with pytest.raises(
        ValueError,
        match=r"y must have one value per row of X \(20000\); "
        r"got shape \(19995,\)",
    ):
        BayesianMLPClassifier(batch_size=64).fit(Xd, y[:-5])
    target = X[:, 0].copy()
    target[5] = np.nan  # every block's encoded target had become NaN: "rows 15000 to ..."
    with pytest.raises(
        ValueError,
        match="y has NaN or infinite values .its mean over the collection is not finite.",
    ):
        BayesianMLPRegressor(batch_size=64).fit(Xd, da.from_array(target, chunks=5000))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 300 steps
def test_a_failed_refit_leaves_no_half_updated_model(moons20k):
    """A refit that failed had left the old network with the new target's NaN mean:
    predict returned NaN, silently. Now the estimator is unfitted again."""
    from sklearn.exceptions import NotFittedError

    X, y = moons20k
    target = 2.0 * X[:, 0] + 5.0
    reg = BayesianMLPRegressor(
        (3,), batch_size=64, n_iter=300, posterior_temperature=1.0, random_state=SEED
    ).fit(da.from_array(X[:2000], chunks=1000), da.from_array(target[:2000], chunks=1000))
    assert np.all(np.isfinite(reg.predict(X[:3])))
    bad = target[:2000].copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="y has NaN"):
        reg.fit(da.from_array(X[:2000], chunks=1000), da.from_array(bad, chunks=1000))
    with pytest.raises(NotFittedError):
        reg.predict(X[:3])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 300 steps
def test_masked_inputs_and_empty_partitions(clf, data):
    """X[mask], y[mask] have unknown row lengths (fit had compared y's NaN length), and a
    filtered frame can have empty partitions (predict had failed on a block of 0 rows)."""
    X, y, _ = data
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    keep = Xd[:, 0] > -100  # every row, lengths unknown to dask
    fitted = BayesianMLPClassifier(
        (3,),
        batch_size=64,
        n_iter=300,
        posterior_temperature=1.0,
        prior_sigma=1.0,
        random_state=SEED,
    ).fit(Xd[keep], yd[keep])
    assert fitted.n_features_in_ == 3
    gappy = Xd.rechunk(((100, 0, 300), (3,)))
    np.testing.assert_allclose(clf.predict_proba(gappy).compute(), clf.predict_proba(X), rtol=RTOL)
    u = clf.predict_uncertainty(gappy)
    assert u["entropy"].compute().shape == (400,) and u["mean"].compute().shape == (400, 2)
    assert clf.predict(gappy).compute().tolist() == clf.predict(X).tolist()


MEMORY_SCRIPT = r"""
import numpy as np, dask, dask.array as da, warnings
from distributed import Client, LocalCluster
from pymc_bnn import BayesianMLPClassifier

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

def data(n_rows=4_000_000):
    X = da.random.default_rng(0).standard_normal((n_rows, 10), chunks=(50_000, 10))
    return X, (X[:, 0] + X[:, 1] ** 2 > 1).astype(np.int64)

if __name__ == "__main__":
    # the blocks are generated on the workers and sent to this client, which fits
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster):
        clf = lambda n_iter: BayesianMLPClassifier((8,), batch_size=128, n_iter=n_iter,
                                                   random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # compiles (or reads back) this structure's programs once, on 2 blocks of
            # rows: the same ones as 3,000 steps on 80 (every compiled call runs 1,000
            # steps; the row count, total_size included, is an input; the evidence step
            # takes 20,000 rows of either)
            clf(1000).fit(*data(100_000))
            open("/proc/self/clear_refs", "w").write("5")   # reset the peak RSS
            before = rss("VmRSS:")
            fitted = clf(3000).fit(*data())
            peak = rss("VmHWM:")
            test = dask.compute(*[a[:20000] for a in data()])
        from pymc_bnn.inference._runner_cache import RUNNERS
        print(before, peak, fitted.score(*test), RUNNERS.hits)
"""


@pytest.mark.slow
@pytest.mark.extended  # a 2-worker cluster streaming 320 MB, ~1 minute: make test-extended
def test_streamed_fit_never_holds_the_array(tmp_path):
    """A 4e6 x 10 float64 array (320 MB), generated block by block on a 2-worker
    LocalCluster and never stored: the client's peak RSS grows by less than half of it
    while it fits (the default fit: the evidence step on 20,000 of its rows, ~80 MB at
    its peak whatever the data size; ~33 MB without it)."""
    import subprocess

    script = tmp_path / "fit_streamed.py"
    script.write_text(MEMORY_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    before, peak, accuracy, reused = proc.stdout.split()[-4:]
    growth = int(peak) - int(before)
    assert growth < 160e6, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert float(accuracy) > 0.85
    assert reused == "1"  # the measured fit ran the warm-up's ADVI runner: none compiled
