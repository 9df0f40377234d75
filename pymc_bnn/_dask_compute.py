"""One helper of the dask input paths, kept apart so that ``pymc_bnn.evidence`` can
use it without importing :mod:`pymc_bnn.dask` (downstream of the compile cache's digest).
"""

from __future__ import annotations

import threading

#: Held by :func:`compute`: dask's configuration is process-wide, and two overlapping
#: ``dask.config.set`` blocks (the fit's thread and the block loader's) could restore
#: it in the wrong order and leave fusion off in the user's process.
_UNFUSED = threading.Lock()


def compute(*collections):
    """``dask.compute`` of the package's own reads, with dask's low-level fusion off.

    Linear fusion renames a chain of tasks to a key such as
    ``('standard_normal-getitem-<token>', 1)`` that another graph of the same arrays
    (another slice, another block) defines with other dependencies. A distributed
    scheduler that still knows that key from an earlier or concurrent computation then
    fails with a spurious ``KeyError`` (dask/dask#9888, open): a second fit on the same
    collections hit it in most runs. Unfused, each key names one task whatever the
    graph; a streamed fit's reads are a few tasks per block, so nothing is lost.
    Computations of the user's own in other threads meanwhile run unfused too, which
    changes no result.

    Returns
    -------
    tuple
        One computed value per collection, as ``dask.compute`` returns them.

    Examples
    --------
    >>> import dask.array as da  # doctest: +SKIP
    >>> X = da.ones((1_000, 3), chunks=(250, 3))  # doctest: +SKIP
    >>> head, total = compute(X[:5], X.sum())  # doctest: +SKIP
    >>> head.shape, float(total)  # doctest: +SKIP
    ((5, 3), 3000.0)
    """
    import dask

    with _UNFUSED, dask.config.set({"optimization.fuse.active": False}):
        return dask.compute(*collections)
