"""Shared fixtures: fixed seeds, data sets, and session-scoped fitted models.

Fits are session-scoped so that each PyTensor graph is compiled and each model fit
once per test run. No test assumes that a compile cache is warm: every test passes
with the caches empty (as on a new machine, or with ``PYMC_BNN_COMPILE_CACHE`` set to a
new empty folder) or switched off, and the tests of the cache itself use folders of
their own. The run (and the notebook, CLI and benchmark processes it starts) uses the
compilation cache a user's process uses (pymc_bnn._runtime.compile_cache: JAX's programs and
pymc_bnn's compiled functions, in ``$XDG_CACHE_HOME/pymc_bnn/jax`` unless
``PYMC_BNN_COMPILE_CACHE`` says otherwise), as PyTensor's compile directory always was:
a later run, from any clone of the same commit, reads what an earlier one compiled
(issue #13: ``make test`` 14 min with the caches empty, see the README).

Under pytest-xdist (``make test``: two workers, ``--dist loadgroup``) every worker
computes the module- and session-scoped fixtures its own tests use. Tests that share a
costly one (:data:`SHARED_FITS`: a fitted model) therefore run on one worker, in one
``xdist_group`` per connected set of such tests (see ``pytest_collection_modifyitems``),
so that the fixture is computed once per run rather than once per worker.
"""

import os

# Under pytest-xdist the workers already share the cores out, one each, as joblib's
# workers do: there a default fit's concurrent ADVI fits (pymc_bnn.inference
# .fit_concurrently) would only oversubscribe them, so each worker (and the notebook,
# CLI and benchmark subprocesses it starts) fits one at a time. The tests of the
# concurrent path set PYMC_BNN_NUM_THREADS or n_threads themselves.
if os.environ.get("PYTEST_XDIST_WORKER") and "PYMC_BNN_NUM_THREADS" not in os.environ:
    os.environ["PYMC_BNN_NUM_THREADS"] = "1"

import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

matplotlib.use("Agg")

from pymc_bnn import BayesianMLPClassifier  # noqa: E402
from pymc_bnn.datasets import moons_split  # noqa: E402

SEED = 0

#: Module- or session-scoped fixtures holding a costly fit, by name (the same name in
#: two modules is two fixtures). Every test that uses one, directly or through another
#: fixture, joins one xdist group with all the other tests using it (and with the tests
#: sharing any other listed fixture or ``xdist_group`` mark with those).
SHARED_FITS = frozenset(
    {
        "advi_clf",
        "minibatch_clf",
        "blobs_clf",  # here
        "fast_clf",  # test_estimator
        "tiny_post",  # test_inference
        "nuts_clf",  # test_diagnostics
        "hier_clf",  # test_hierarchical, test_plotting
        "small_clf",
        "small_clf3",  # test_plotting
        "reg",
        "het_reg",  # test_regressor
        "vi_posterior",  # test_tempering
    }
)


def _explicit_group(item):
    names = {
        str(m.args[0] if m.args else m.kwargs.get("name", "default"))
        for m in item.iter_markers("xdist_group")
    }
    if len(names) > 1:
        raise pytest.UsageError(f"{item.nodeid} has several xdist_group marks: {names}")
    return names.pop() if names else None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the marks (same hook)
def pytest_collection_modifyitems(config, items):
    """Put the tests sharing a :data:`SHARED_FITS` fixture into one xdist group.

    Connected sets (union-find) over the tests, the shared fixtures they use and their
    explicit ``xdist_group`` marks: a set holding an explicit group takes its name, a
    set holding two explicit groups is an error, and any other set of two or more tests
    is named after its first shared fixture. Without ``--dist loadgroup`` the marks are
    unused.
    """
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)

    tests = []
    for item in items:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        nodes = [
            ("fixture", fd.baseid, name)
            for name in item.fixturenames
            if name in SHARED_FITS and name in defs
            for fd in defs[name][-1:]
        ]  # the definition this test gets
        explicit = _explicit_group(item)
        if explicit is not None:
            nodes.append(("group", explicit))
        if not nodes:
            continue
        tests.append((item, explicit, nodes[0]))
        for node in nodes[1:]:
            union(nodes[0], node)
    members = {}
    for item, explicit, node in tests:
        members.setdefault(find(node), []).append((item, explicit))
    for root, group in members.items():
        explicit = {e for _, e in group if e is not None}
        if len(explicit) > 1:
            raise pytest.UsageError(
                f"tests sharing a fixture of SHARED_FITS carry different xdist_group marks "
                f"{sorted(explicit)}: {[i.nodeid for i, _ in group]}"
            )
        if explicit:
            name = explicit.pop()
        elif len(group) > 1:
            name = f"shared-{root[2]}"
        else:
            continue
        for item, e in group:
            if e is None:
                item.add_marker(pytest.mark.xdist_group(name))
    _heaviest_first(items)


#: A slow test (a benchmark's or a notebook's quick run, NUTS, a LocalCluster) costs
#: tens of seconds, another test about one: the weight of a unit of work.
SLOW_WEIGHT = 10


def _heaviest_first(items) -> None:
    """Order the units of work (an xdist group, or a test of its own) heaviest first.

    pytest-xdist (``--dist loadgroup --no-loadscope-reorder``, ``make test``) hands
    the units to the workers in this order, each worker keeping up to three tests
    queued: a long test handed out last keeps one worker busy while the other has
    nothing left. By default xdist orders the units by their number of tests, which
    left single long tests (the notebooks' runs) for the end: replayed with the
    durations of a warm 663-s run, that order ends 105 s after the first worker
    finishes, this one within 2 s of it (the best order of those durations, longest
    first, equally). Within a unit, and between units of equal weight, the collection
    order is kept.
    """
    units = {}
    for item in items:
        units.setdefault(_explicit_group(item) or item.nodeid, []).append(item)
    items[:] = [
        item for unit in sorted(units.values(), key=_unit_weight, reverse=True) for item in unit
    ]


def _unit_weight(unit) -> int:
    return sum(SLOW_WEIGHT if item.get_closest_marker("slow") else 1 for item in unit)


@pytest.fixture(scope="session")
def moons():
    """The reference problem: scaled make_moons(1000, noise=0.2), split 50/50."""
    X_train, X_test, y_train, y_test = moons_split(random_state=SEED)
    return X_train, X_test, y_train, y_test


@pytest.fixture(scope="session")
def blobs3():
    """A 3-class problem: three Gaussian blobs in 2-D, split 50/50."""
    from sklearn.datasets import make_blobs
    from sklearn.model_selection import train_test_split

    X, y = make_blobs(n_samples=300, centers=3, cluster_std=1.5, random_state=SEED)
    X = (X - X.mean(0)) / X.std(0)
    return train_test_split(X, y, test_size=0.5, random_state=SEED)


@pytest.fixture(scope="session")
def tiny():
    """40 points, 2 features, a linear boundary: for structural tests."""
    rng = np.random.default_rng(SEED)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture(scope="session")
def advi_clf(moons):
    """The default estimator with mean-field ADVI alone (full batch) fit on moons
    (``inference="auto"`` fits it with a Laplace half too:
    tests/policy/test_mixture_classifier.py)."""
    X_train, _, y_train, _ = moons
    return BayesianMLPClassifier(inference="advi", random_state=SEED).fit(X_train, y_train)


@pytest.fixture(scope="session")
def minibatch_clf(moons):
    """Minibatch ADVI (batch_size=50) on moons, otherwise default settings."""
    X_train, _, y_train, _ = moons
    return BayesianMLPClassifier(batch_size=50, random_state=SEED).fit(X_train, y_train)


@pytest.fixture(scope="session")
def blobs_clf(blobs3):
    X_train, _, y_train, _ = blobs3
    return BayesianMLPClassifier(
        hidden_layer_sizes=(8,), n_iter=4000, posterior_temperature=1.0, random_state=SEED
    ).fit(X_train, y_train)
