"""pymc_bnn.dask: lazy block-wise predictions on a distributed cluster, CV on its workers.

One small ``distributed.LocalCluster`` (2 worker processes, 1 thread each) serves the
module; its tests share one xdist worker.
"""

import sys

import numpy as np
import pytest

from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.xdist_group("dask")
SEED = 0
RTOL = 1e-6  # the same compiled predictive; float32 draws when jax is installed


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
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
    return BayesianMLPClassifier((4,), n_iter=3000, n_draws=100, posterior_temperature=1.0,
                                 random_state=SEED).fit(X, y)


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
    holders = [k for k, v in graph.items()
               if isinstance(getattr(v, "value", v), BayesianMLPClassifier)]
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
    hier = BayesianMLPClassifier((3,), n_iter=3000, n_draws=50, posterior_temperature=1.0,
                                 random_state=SEED).fit(X, y, groups=groups)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]), npartitions=3)
    lazy = hier.predict_proba(frame.to_dask_array(lengths=True),
                              groups=da.from_array(groups, chunks=150))
    np.testing.assert_allclose(lazy.compute(), hier.predict_proba(X, groups=groups),
                               rtol=RTOL)
    plain = BayesianMLPClassifier((3,), n_iter=3000, n_draws=50, posterior_temperature=1.0,
                                  random_state=SEED).fit(X, y)
    np.testing.assert_allclose(plain.predict_proba(frame).compute(), plain.predict_proba(X),
                               rtol=RTOL)


def test_regressor_intervals_on_blocks(client, data):
    X = data[0]
    target = X[:, 0] - X[:, 1]
    reg = BayesianMLPRegressor((3,), n_draws=50, posterior_temperature=1.0,
                               random_state=SEED).fit(X, target)
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
    est = BayesianMLPClassifier((4,), n_iter=2000, n_draws=50, posterior_temperature=1.0,
                                random_state=SEED)
    serial = cross_val_score(est, X, y, cv=3)
    with parallel_backend("dask"):
        on_cluster = cross_val_score(est, X, y, cv=3, n_jobs=-1)
    np.testing.assert_array_equal(on_cluster, serial)
