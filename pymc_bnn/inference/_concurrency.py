"""Fits run at the same time, in threads: :func:`fit_concurrently` and the lock
(:data:`GRAPH_LOCK`) that serialises their graph work while their compiled ADVI steps
overlap. How many threads by default: :func:`pymc_bnn._runtime.threads.default_threads`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence

from pymc_bnn._runtime.threads import default_threads
from pymc_bnn.network._checks import check_positive_int

__all__ = ["GRAPH_LOCK", "GraphLock", "fit_concurrently"]


class GraphLock:
    """Serialises the graph work of concurrent fits; compiled runs happen outside it.

    PyMC model building, PyTensor graph rewriting and compilation are not documented
    as thread-safe, and ``warnings.catch_warnings`` (used around compilation) is not.
    A fit run by :func:`fit_concurrently` holds this lock except while its compiled
    ADVI steps run (:meth:`released`, in :mod:`pymc_bnn.inference._vi`): JAX releases the GIL
    there, so that is where the threads overlap.
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._local = threading.local()

    def __enter__(self):
        self._lock.acquire()
        self._local.depth = getattr(self._local, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        self._local.depth -= 1
        self._lock.release()
        return False

    @contextlib.contextmanager
    def released(self):
        """Let other fits do graph work meanwhile, if this thread holds the lock."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = 0
        for _ in range(depth):
            self._lock.release()
        try:
            yield
        finally:
            for _ in range(depth):
                self._lock.acquire()
            self._local.depth = depth


GRAPH_LOCK = GraphLock()


def fit_concurrently(
    tasks: Sequence[Callable[[], object]], *, n_threads: int | None = None
) -> list:
    """Run independent fits at the same time, in threads; results in task order.

    Each task is a callable without arguments that builds a model and calls
    :func:`fit` (e.g. a default estimator fit's final network and its three
    cross-fitting networks). The compiled ADVI steps of different tasks overlap (JAX
    releases the GIL); everything else in a task — model building, compilation,
    diagnostics — runs under one process-wide lock, one task at a time. Two fits of
    the same structure at the same time use two runners, the second cloned from the
    first without compiling (:class:`pymc_bnn.inference._runner_cache.RunnerCache`). A task's
    result does not depend on the threads: each fit draws only from its own seed.

    The first task runs in the calling thread (its warnings are raised there, as in
    a plain call); the others are shared out among ``n_threads - 1`` threads and the
    calling thread as each becomes free. When a task raises, no further task starts
    and the first failure (in task order) is raised once the running ones are done.

    Parameters
    ----------
    tasks : sequence of callables ``() -> object``
    n_threads : int, optional
        At most this many tasks at a time; default :func:`default_threads` (1: one
        after the other, in the calling thread).

    Returns
    -------
    list
        ``[task() for task in tasks]``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import build_model, fit
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> tasks = [lambda s=s: fit(build_model(X, y, hidden_layer_sizes=(3,), random_state=s),
    ...                          n_iter=3000, random_seed=s) for s in range(3)]
    >>> [p.seed for p in fit_concurrently(tasks, n_threads=2)]
    [0, 1, 2]
    """
    tasks = list(tasks)
    n = default_threads() if n_threads is None else check_positive_int("n_threads", n_threads)
    n = min(n, len(tasks))
    if n <= 1:
        return [task() for task in tasks]
    results: list = [None] * len(tasks)
    errors: list = [None] * len(tasks)
    pending = iter(range(1, len(tasks)))  # task 0 is the calling thread's
    take = threading.Lock()
    failed = threading.Event()

    def run(i: int) -> None:
        try:
            with GRAPH_LOCK:
                results[i] = tasks[i]()
        except BaseException as err:  # noqa: BLE001 - re-raised below, in task order
            errors[i] = err
            failed.set()

    def work() -> None:
        while not failed.is_set():
            with take:
                i = next(pending, None)
            if i is None:
                return
            run(i)

    threads = [
        threading.Thread(target=work, name=f"pymc_bnn-fit-{k}", daemon=True) for k in range(n - 1)
    ]
    for t in threads:
        t.start()
    run(0)
    work()
    for t in threads:
        t.join()
    for err in errors:
        if err is not None:
            raise err
    return results
