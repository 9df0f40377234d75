"""Calibration metrics of predicted class probabilities (part of :mod:`pymc_bnn.metrics`).

:func:`reliability_curve` (the binned numbers of a reliability diagram),
:func:`expected_calibration_error` (top-label or class-wise) and
:func:`ece_consistency` (the ECE the same predictions would show if calibrated, and
whether the observed one exceeds it). One equal-width binning is behind all three.

Import them from :mod:`pymc_bnn.metrics`.

Examples
--------
>>> from pymc_bnn.metrics import expected_calibration_error
>>> round(expected_calibration_error([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_bins=2), 6)
0.25
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from pymc_bnn.metrics._inputs import check_proba
from pymc_bnn.network._checks import check_choice, check_positive_int

__all__ = ["ece_consistency", "expected_calibration_error", "reliability_curve"]

ECE_METHODS = ("top_label", "classwise")
CONFIDENCES = ("auto", "positive", "top")


# ---------------------------------------------------------------------- binning
def _top_label(proba: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Confidence (top-class probability) and whether the top class is right (0/1).

    Ties between classes go to the first column (``argmax``).
    """
    return proba.max(axis=1), (proba.argmax(axis=1) == codes).astype(float)


def _binned(p: np.ndarray, hit: np.ndarray, n_bins: int) -> dict:
    """Equal-width binning of probabilities ``p`` against 0/1 outcomes ``hit``.

    Bin ``i`` is ``[i / n_bins, (i + 1) / n_bins)``, the last one closed; a
    probability equal to the float ``i / n_bins`` falls in bin ``i``. The one
    implementation behind :func:`reliability_curve` and
    :func:`expected_calibration_error`.
    """
    # i / n_bins, correctly rounded: np.linspace computes i * (1 / n_bins) and can round
    # an edge past it (linspace(0, 1, 11)[7] is 0.7000000000000001), which put a
    # probability of exactly 0.7 in the bin below
    edges = np.arange(n_bins + 1) / n_bins
    idx = np.searchsorted(edges[1:-1], p, side="right")
    count = np.bincount(idx, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(idx, weights=p, minlength=n_bins) / count
        freq = np.bincount(idx, weights=hit, minlength=n_bins) / count
    filled = count > 0
    ece = float(np.sum(count[filled] / p.size * np.abs(freq[filled] - mean_conf[filled])))
    return {
        "edges": edges,
        "count": count,
        "mean_confidence": mean_conf,
        "frequency": freq,
        "ece": ece,
    }


# -------------------------------------------------------------------- calibration
def reliability_curve(
    y_true: ArrayLike,
    proba: ArrayLike,
    *,
    n_bins: int = 15,
    classes: ArrayLike | None = None,
    confidence: str = "auto",
) -> dict:
    """Binned calibration of predicted probabilities (the numbers of a reliability diagram).

    Parameters
    ----------
    y_true : array of shape (n_samples,)
        True labels.
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Predicted class probabilities, columns in ``classes`` order (a 1-D array is the
        probability of the second class). Rows must sum to 1 (within 1e-6).
    n_bins : int, default 15
        Equal-width bins over [0, 1]; bin ``i`` is ``[i / n_bins, (i + 1) / n_bins)``,
        the last one closed (0.7 falls in bin 7 of 10).
    classes : array of shape (n_classes,), optional
        Labels of ``proba``'s columns; default ``np.unique(y_true)``.
    confidence : {"auto", "positive", "top"}
        ``positive``: bin the probability of the second class and report the fraction
        of samples of that class (binary only). ``top``: bin the top-class probability
        (the confidence) and report the fraction of correct top-class predictions.
        ``auto``: ``positive`` for two classes, ``top`` for more.

    Returns
    -------
    dict with
        ``edges`` (n_bins + 1,): bin edges;
        ``count`` (n_bins,): samples per bin;
        ``mean_confidence`` (n_bins,): mean binned probability per bin (NaN if empty);
        ``frequency`` (n_bins,): observed frequency per bin (NaN if empty);
        ``ece``: expected calibration error, ``sum(count / n * |frequency - mean_confidence|)``;
        ``confidence``: ``"positive"`` or ``"top"``; ``positive_class``: the class whose
        probability is binned (``positive`` only, else None).

    Raises
    ------
    ValueError
        For mismatched shapes, probabilities outside [0, 1] or rows not summing to 1,
        labels not in ``classes``, a non-positive ``n_bins``, an unknown ``confidence``,
        or ``confidence="positive"`` with more than two classes.

    See Also
    --------
    expected_calibration_error : the same ``ece`` with ``confidence="top"`` (its default
        ``method="top_label"``) and its class-wise variant.

    Examples
    --------
    >>> t = reliability_curve([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_bins=2)
    >>> t["count"].tolist(), t["frequency"].tolist()
    ([2, 2], [0.0, 1.0])
    """
    n_bins = check_positive_int("n_bins", n_bins)
    confidence = check_choice("confidence", confidence, CONFIDENCES)
    codes, proba, classes = check_proba(y_true, proba, classes)
    n_classes = proba.shape[1]
    if confidence == "auto":
        confidence = "positive" if n_classes == 2 else "top"
    if confidence == "positive":
        if n_classes != 2:
            raise ValueError(f"confidence='positive' needs 2 classes; got {n_classes}. Use 'top'.")
        p, hit, positive = proba[:, 1], (codes == 1).astype(float), classes[1]
    else:
        (p, hit), positive = _top_label(proba, codes), None
    return {**_binned(p, hit, n_bins), "confidence": confidence, "positive_class": positive}


def expected_calibration_error(
    y_true: ArrayLike,
    proba: ArrayLike,
    *,
    n_bins: int = 15,
    classes: ArrayLike | None = None,
    method: str = "top_label",
) -> float:
    """Expected calibration error (ECE) of predicted class probabilities.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
        True labels.
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Predicted class probabilities, columns in ``classes`` order (a 1-D array is the
        probability of the second class). Rows must sum to 1 (within 1e-6).
    n_bins : int, default 15
        Equal-width bins over [0, 1]; bin ``i`` is ``[i / n_bins, (i + 1) / n_bins)``,
        the last one closed (0.7 falls in bin 7 of 10).
    classes : array of shape (n_classes,), optional
        Labels of ``proba``'s columns; default ``np.unique(y_true)``.
    method : {"top_label", "classwise"}, default "top_label"
        ``top_label`` (Guo et al., 2017): bin the confidence (top-class probability)
        and sum ``count / n * |accuracy - mean confidence|`` over bins; ties between
        classes go to the first column. ``classwise`` (Kull et al., 2019): the mean over
        classes ``k`` of the ECE of ``p(class k)`` against the frequency of class ``k``.

    Returns
    -------
    float
        In [0, 1]; 0 for perfect calibration (at this binning).

    Notes
    -----
    For a binary problem, ``top_label`` bins ``max(p, 1 - p)`` (in [0.5, 1]), whereas
    :func:`reliability_curve` (and the reliability diagram) bins ``p`` of the second
    class by default; ``classwise`` equals that curve's ``ece`` up to samples lying
    exactly on a bin edge (the two classes' bins mirror each other). When every
    ``p >= 0.5`` the top class is always the second one and the three coincide.

    Examples
    --------
    >>> y = [0, 1, 1, 0]
    >>> p1 = [0.1, 0.8, 0.6, 0.3]   # all right, confidences 0.9 0.8 0.6 0.7: one bin
    >>> expected_calibration_error(y, p1, n_bins=2)
    0.25
    >>> round(expected_calibration_error(y, p1, n_bins=2, method="classwise"), 6)
    0.25
    """
    n_bins = check_positive_int("n_bins", n_bins)
    method = check_choice("method", method, ECE_METHODS)
    codes, proba, _ = check_proba(y_true, proba, classes)
    return _ece(proba, codes, n_bins, method)


def _ece(proba: np.ndarray, codes: np.ndarray, n_bins: int, method: str) -> float:
    """:func:`expected_calibration_error` of checked arrays."""
    if method == "top_label":
        return _binned(*_top_label(proba, codes), n_bins)["ece"]
    per_class = [
        _binned(proba[:, k], (codes == k).astype(float), n_bins)["ece"]
        for k in range(proba.shape[1])
    ]
    return float(np.mean(per_class))


def ece_consistency(
    y_true: ArrayLike,
    proba: ArrayLike,
    *,
    n_bins: int = 15,
    classes: ArrayLike | None = None,
    method: str = "top_label",
    n_resamples: int = 1000,
    random_state: int | np.random.Generator | None = None,
) -> dict:
    """How large an ECE these predictions would show if they were perfectly calibrated.

    The binned ECE of a finite test set is biased upwards: a perfectly calibrated model
    scores above 0, and more so the fewer points its bins hold and the further its
    probabilities are from 0 and 1. *Consistency resampling* (Bröcker & Smith, 2007,
    "Increasing the reliability of reliability diagrams") measures that floor for the
    predictions at hand: labels are drawn from ``proba`` itself (row ``i``'s label from
    the categorical distribution ``proba[i]``), which makes the predictions calibrated
    by construction, and the ECE of each draw is computed exactly as
    :func:`expected_calibration_error` computes the observed one. Two models' ECEs on
    the same test set are then compared on what they show beyond their own floors.

    Parameters
    ----------
    y_true, proba, n_bins, classes, method
        As in :func:`expected_calibration_error`.
    n_resamples : int, default 1000
        Number of label draws.
    random_state : int, numpy Generator or None
        Seed of the label draws.

    Returns
    -------
    dict with
        ``ece``: the observed :func:`expected_calibration_error`;
        ``expected_if_calibrated``: the mean ECE over the draws (the floor);
        ``excess``: ``ece - expected_if_calibrated``;
        ``p_value``: share of draws whose ECE is at least the observed one, counting
        the observation itself (``(1 + k) / (1 + n_resamples)``): small values say the
        miscalibration is more than the test set's size explains.

    Examples
    --------
    A model that predicts 0.75 for every point, right on 3 of 4: its ECE is 0, but a
    calibrated model's ECE on 4 points is ``E|k/4 - 0.75|`` with ``k ~ Binomial(4,
    0.75)``, i.e. 40.5 / 256 = 0.158:

    >>> r = ece_consistency([1, 1, 1, 0], [0.75] * 4, n_bins=10, n_resamples=20_000,
    ...                     random_state=0)
    >>> r["ece"], round(r["expected_if_calibrated"], 3), r["p_value"]
    (0.0, 0.158, 1.0)
    """
    n_bins = check_positive_int("n_bins", n_bins)
    method = check_choice("method", method, ECE_METHODS)
    n_resamples = check_positive_int("n_resamples", n_resamples)
    codes, proba, _ = check_proba(y_true, proba, classes)
    observed = _ece(proba, codes, n_bins, method)
    rng = np.random.default_rng(random_state)
    # a drawn label is the number of the first n_classes - 1 cumulative probabilities
    # that u reaches (at most n_classes - 1: the last class)
    upper = np.cumsum(proba, axis=1)[:, :-1]
    null = np.empty(n_resamples)
    for r in range(n_resamples):
        u = rng.random((proba.shape[0], 1))
        null[r] = _ece(proba, np.sum(u >= upper, axis=1), n_bins, method)
    floor = float(null.mean())
    return {
        "ece": observed,
        "expected_if_calibrated": floor,
        "excess": observed - floor,
        "p_value": float((1 + np.sum(null >= observed)) / (1 + n_resamples)),
    }
