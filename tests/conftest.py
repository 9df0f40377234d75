"""Shared fixtures: fixed seeds, data sets, and session-scoped fitted models.

Fits are session-scoped so that each PyTensor graph is compiled and each model fit
once per test run; tests never assume that a compile cache is warm. JAX's persistent
compilation cache (pymc_bnn.compile_cache) points at a new empty directory for the
session (inherited by the subprocesses of the notebook, CLI and benchmark tests), so
a run never reads what an earlier run compiled; ``PYMC_BNN_COMPILE_CACHE`` set by
the caller is respected.
"""

import atexit
import os
import shutil
import tempfile

if "PYMC_BNN_COMPILE_CACHE" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="pymc_bnn-test-jax-cache-")
    os.environ["PYMC_BNN_COMPILE_CACHE"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

matplotlib.use("Agg")

from pymc_bnn import BayesianMLPClassifier  # noqa: E402
from pymc_bnn.cli import moons_split  # noqa: E402

SEED = 0


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
    """The default estimator (mean-field ADVI, full batch) fit on moons."""
    X_train, _, y_train, _ = moons
    return BayesianMLPClassifier(random_state=SEED).fit(X_train, y_train)


@pytest.fixture(scope="session")
def minibatch_clf(moons):
    """Minibatch ADVI (batch_size=50) on moons, otherwise default settings."""
    X_train, _, y_train, _ = moons
    return BayesianMLPClassifier(batch_size=50, random_state=SEED).fit(X_train, y_train)


@pytest.fixture(scope="session")
def blobs_clf(blobs3):
    X_train, _, y_train, _ = blobs3
    return BayesianMLPClassifier(hidden_layer_sizes=(8,), n_iter=4000, posterior_temperature=1.0,
                                 random_state=SEED).fit(
        X_train, y_train
    )
