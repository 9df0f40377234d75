"""Scores of regression predictions (part of :mod:`pymc_bnn.metrics`).

:func:`interval_coverage` (of predictive intervals), :func:`gaussian_nll` and
:func:`crps_gaussian` (of Gaussian predictives), :func:`crps_ensemble` (of predictive
draws), and :func:`regression_summary` (the headline numbers in one dict).

Import them from :mod:`pymc_bnn.metrics`.

Examples
--------
>>> from pymc_bnn.metrics import crps_gaussian
>>> round(crps_gaussian([0.0, 1.0], 0.0, 1.0), 4)
0.4181
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

from pymc_bnn.metrics._inputs import check_finite, check_like_targets, check_targets, float_array

__all__ = [
    "binned_coverage",
    "crps_ensemble",
    "crps_gaussian",
    "gaussian_nll",
    "interval_coverage",
    "regression_summary",
]


# ------------------------------------------------------------------------ regression
def binned_coverage(
    y_true: ArrayLike, mean: ArrayLike, lower: ArrayLike, upper: ArrayLike, n_bins: int = 5
) -> dict:
    """Interval coverage in bins of the predicted value: the rows sorted by ``mean``
    and split into ``n_bins`` groups of (nearly) equal size (quintiles by default).
    Intervals whose width ignores how the noise grows with the predicted value cover
    too much at one end and too little at the other; the overall coverage hides it.

    Returns
    -------
    dict with ``low``, ``high`` (each bin's smallest and largest predicted value),
    ``coverage`` and ``count``: lists of ``n_bins`` (fewer where there are fewer rows).

    Examples
    --------
    >>> out = binned_coverage([0, 1, 2, 30], [0, 1, 2, 3], [-1, 0, 1, 2], [1, 2, 3, 4],
    ...                       n_bins=2)
    >>> out["coverage"], out["count"], out["low"], out["high"]
    ([1.0, 0.5], [2, 2], [0.0, 2.0], [1.0, 3.0])
    """
    y = check_targets(y_true)
    mu = check_like_targets("mean", mean, y.shape[0])
    lo = check_like_targets("lower", lower, y.shape[0])
    hi = check_like_targets("upper", upper, y.shape[0])
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins!r}.")
    order = np.argsort(mu, kind="stable")
    groups = [g for g in np.array_split(order, min(int(n_bins), y.shape[0])) if g.size]
    inside = (lo <= y) & (y <= hi)
    return {
        "low": [float(mu[g].min()) for g in groups],
        "high": [float(mu[g].max()) for g in groups],
        "coverage": [float(inside[g].mean()) for g in groups],
        "count": [int(g.size) for g in groups],
    }


def interval_coverage(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike) -> float:
    """Fraction of targets inside their predictive interval, ``lower <= y <= upper``.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    lower, upper : arrays of shape (n_samples,), or scalars
        Interval bounds (e.g. the 5% and 95% predictive quantiles), ``lower <= upper``.

    Returns
    -------
    float
        In [0, 1]; for well-calibrated 90% intervals, about 0.9.

    Examples
    --------
    >>> interval_coverage([0.0, 1.0, 5.0, 2.0], [-1, 0, 0, 2], [1, 2, 3, 2])
    0.75
    """
    y = check_targets(y_true)
    lo = check_like_targets("lower", lower, y.shape[0])
    hi = check_like_targets("upper", upper, y.shape[0])
    bad = lo > hi
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ValueError(
            f"lower must be <= upper; lower > upper at {int(bad.sum())} of {y.shape[0]} "
            f"points (first at index {i}: lower={lo[i]!r}, upper={hi[i]!r})."
        )
    return float(np.mean((lo <= y) & (y <= hi)))


def _normal_params(y_true, mean, std) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = check_targets(y_true)
    mu = check_like_targets("mean", mean, y.shape[0])
    sd = check_like_targets("std", std, y.shape[0])
    if np.any(sd <= 0):
        raise ValueError(
            f"std must be > 0; got {int(np.sum(sd <= 0))} value(s) <= 0 (smallest {sd.min()!r})."
        )
    return y, mu, sd


def gaussian_nll(y_true: ArrayLike, mean: ArrayLike, std: ArrayLike) -> float:
    """Mean negative log density of the targets under Normal(mean, std**2) predictives.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    mean : array of shape (n_samples,), or a scalar
    std : array of shape (n_samples,), or a scalar
        Predictive standard deviations, > 0.

    Returns
    -------
    float
        ``mean(0.5 log(2 pi) + log std + 0.5 ((y - mean) / std)**2)`` in nats (can be
        negative: it is a density).

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(gaussian_nll([0.0], [0.0], [1.0]), 0.5 * np.log(2 * np.pi)))
    True
    """
    y, mu, sd = _normal_params(y_true, mean, std)
    z = (y - mu) / sd
    return float(np.mean(0.5 * np.log(2 * np.pi) + np.log(sd) + 0.5 * z**2))


def crps_gaussian(y_true: ArrayLike, mean: ArrayLike, std: ArrayLike) -> float:
    """Mean continuous ranked probability score of Normal(mean, std**2) predictives.

    The closed form of Gneiting & Raftery (2007), with ``z = (y - mean) / std``:
    ``std * (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi))``.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    mean : array of shape (n_samples,), or a scalar
    std : array of shape (n_samples,), or a scalar
        Predictive standard deviations, > 0.

    Returns
    -------
    float
        In the units of ``y`` (lower is better; a point forecast's CRPS is its
        absolute error).

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(crps_gaussian([0.0], 0.0, 1.0), (np.sqrt(2) - 1) / np.sqrt(np.pi)))
    True
    """
    y, mu, sd = _normal_params(y_true, mean, std)
    z = (y - mu) / sd
    pdf = np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi)
    crps = sd * (z * (2 * ndtr(z) - 1) + 2 * pdf - 1 / np.sqrt(np.pi))
    return float(np.mean(crps))


def crps_ensemble(y_true: ArrayLike, samples: ArrayLike) -> float:
    """Mean CRPS of predictive draws (the empirical distribution of each row of samples).

    The energy form ``E|X - y| - 0.5 E|X - X'|``, with ``X, X'`` independent draws
    from the empirical distribution of the ``m`` samples (so ``X = X'`` is allowed:
    this is the CRPS of the empirical CDF, not the "fair" ``m (m - 1)`` version).
    ``E|X - X'|`` is computed from the sorted draws as
    ``2 / m**2 * sum_i (2 i - m - 1) x_(i)`` in ``O(m log m)``, not ``O(m**2)``.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    samples : array of shape (n_samples, n_draws)
        Row ``i`` holds the predictive draws for ``y_true[i]``.

    Returns
    -------
    float
        In the units of ``y``; tends to :func:`crps_gaussian` as draws of a Normal grow
        in number (the difference shrinks like ``1 / n_draws``, plus Monte Carlo error).

    Examples
    --------
    >>> crps_ensemble([0.0], [[-1.0, 1.0]])   # E|X - y| = 1, E|X - X'| = 1
    0.5
    """
    y = check_targets(y_true)
    x = float_array("samples", samples)
    if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[1] == 0:
        raise ValueError(
            f"samples must have shape (n_samples, n_draws) = ({y.shape[0]}, m) with "
            f"m >= 1, one row per entry of y_true; got shape {x.shape}."
        )
    check_finite("samples", x)
    m = x.shape[1]
    x = np.sort(x, axis=1)  # a sorted copy
    abs_error = np.mean(np.abs(x - y[:, None]), axis=1)
    weights = 2.0 * np.arange(1, m + 1) - m - 1
    half_spread = (x @ weights) / m**2  # 0.5 E|X - X'|
    return float(np.mean(abs_error - half_spread))


def regression_summary(
    y_true: ArrayLike,
    mean: ArrayLike,
    std: ArrayLike,
    *,
    lower: ArrayLike | None = None,
    upper: ArrayLike | None = None,
) -> dict:
    """Headline numbers of Gaussian predictive distributions (and intervals), in one dict.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    mean : array of shape (n_samples,), or a scalar
        Predictive means.
    std : array of shape (n_samples,), or a scalar
        Predictive standard deviations, > 0.
    lower, upper : arrays of shape (n_samples,), or scalars, optional
        Predictive interval bounds (e.g. the 5% and 95% quantiles); both or neither.

    Returns
    -------
    dict, in this key order, with
        ``n`` (int): number of samples;
        ``rmse``, ``mae``: root mean squared and mean absolute error of ``mean``;
        ``nll``: :func:`gaussian_nll` (nats);
        ``crps``: :func:`crps_gaussian` (units of ``y``);
        and, with ``lower`` and ``upper``: ``coverage`` (:func:`interval_coverage`) and
        ``mean_interval_width`` (``mean(upper - lower)``).
        Every value but ``n`` is a float.

    Raises
    ------
    ValueError
        For mismatched shapes, non-finite values, ``std <= 0``, ``lower > upper``, or
        only one of ``lower`` and ``upper``.

    Examples
    --------
    >>> s = regression_summary([0.0, 2.0], [1.0, 1.0], 1.0, lower=0.5, upper=2.5)
    >>> s["rmse"], s["mae"], s["coverage"], s["mean_interval_width"]
    (1.0, 1.0, 0.5, 2.0)
    """
    if (lower is None) != (upper is None):
        given, missing = ("lower", "upper") if upper is None else ("upper", "lower")
        raise ValueError(f"lower and upper must be given together; got {given} without {missing}.")
    y, mu, sd = _normal_params(y_true, mean, std)
    summary = {
        "n": int(y.shape[0]),
        "rmse": float(np.sqrt(np.mean((y - mu) ** 2))),
        "mae": float(np.mean(np.abs(y - mu))),
        "nll": gaussian_nll(y, mu, sd),
        "crps": crps_gaussian(y, mu, sd),
    }
    if lower is not None:
        summary["coverage"] = interval_coverage(y, lower, upper)
        n = y.shape[0]
        width = check_like_targets("upper", upper, n) - check_like_targets("lower", lower, n)
        summary["mean_interval_width"] = float(np.mean(width))
    return summary
