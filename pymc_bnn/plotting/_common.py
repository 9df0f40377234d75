"""Helpers shared by the :mod:`pymc_bnn.plotting` modules.

Examples
--------
>>> import numpy as np
>>> class_label(np.int64(1)), class_label("yes")
('1', "'yes'")
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> n_open = len(plt.get_fignums())
>>> try:
...     with closing_new_figures():
...         fig, ax = plt.subplots()
...         raise ValueError("bad input found after the figure was made")
... except ValueError:
...     pass
>>> len(plt.get_fignums()) == n_open
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["class_label", "closing_new_figures"]


def class_label(c) -> str:
    """A class label for a figure: ``1`` rather than numpy's ``np.int64(1)``.

    Parameters
    ----------
    c : class label (a NumPy scalar, a Python number, a string, ...)

    Returns
    -------
    str
        ``str`` of the Python value; strings quoted (their ``repr``).
    """
    c = c.item() if isinstance(c, np.generic) else c
    return repr(c) if isinstance(c, str) else str(c)


@contextmanager
def closing_new_figures() -> Iterator[None]:
    """Close the pyplot figures opened inside the block if the block raises.

    A plotting function that makes its own figure and then fails (bad input found
    late, a classifier that cannot predict) would otherwise leave an empty figure
    open, which a notebook shows and a long session accumulates. Figures that were
    open before the block (a user's ``ax``) are left alone.

    Yields
    ------
    None
    """
    before = set(plt.get_fignums())
    try:
        yield
    except BaseException:
        for num in sorted(set(plt.get_fignums()) - before):
            plt.close(num)
        raise
