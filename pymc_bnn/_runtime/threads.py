"""How many threads the package may use: :func:`default_threads`.

The concurrent fits (:func:`pymc_bnn.inference.fit_concurrently`; the package
``pymc_bnn.inference`` re-exports this module's names) and the parallel NUTS chains
(:func:`pymc_bnn.inference._compiled_nuts.sample_nutpie`) both take their default from
here. A module of its own, importing nothing of the package, so that neither of them
imports the other for it.
"""

from __future__ import annotations

import os

__all__ = ["THREADS_ENV", "default_threads"]

#: Environment variable capping the threads of
#: :func:`pymc_bnn.inference.fit_concurrently` (1: the fits run one after the other)
#: and the NUTS chains run at once.
THREADS_ENV = "PYMC_BNN_NUM_THREADS"


def default_threads() -> int:
    """Threads :func:`pymc_bnn.inference.fit_concurrently` uses by default.

    The environment variable ``PYMC_BNN_NUM_THREADS`` when set; otherwise the CPUs
    this process may run on, capped by ``OMP_NUM_THREADS`` when set: joblib sets it in
    its worker processes to each worker's share of the cores, so that
    ``cross_val_score(..., n_jobs=k)`` does not run k x (number of cores) fits at once.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    for name in (THREADS_ENV, "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                n = int(value)
            except ValueError:
                n = 0
            if n < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}.")
            return n if name == THREADS_ENV else max(1, min(cpus, n))
    return max(1, cpus)
