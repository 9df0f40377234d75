"""Helpers shared by the :mod:`pymc_bnn.plotting` modules.

Examples
--------
>>> import numpy as np
>>> class_label(np.int64(1)), class_label("yes")
('1', "'yes'")
"""

from __future__ import annotations

import numpy as np

__all__ = ["class_label"]


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
