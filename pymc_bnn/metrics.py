"""Uncertainty and calibration metrics: plain functions of ``(y_true, predictions)``.

Everything here is NumPy / SciPy / scikit-learn on arrays a user already holds (for
instance ``clf.predict_proba(X_test)`` of any classifier); nothing fits or samples.
:mod:`pymc_bnn.plotting` draws what these functions compute.

Classification, from class probabilities ``proba`` of shape ``(n_samples, n_classes)``
(columns in ``classes`` order) or ``(n_samples,)`` (binary: probability of the second
class):

- calibration: :func:`expected_calibration_error` (top-label or class-wise),
  :func:`ece_consistency` (the ECE the same predictions would show if calibrated, and
  whether the observed one exceeds it) and :func:`reliability_curve` (the binned
  numbers of a reliability diagram);
- proper scores: :func:`negative_log_likelihood`, :func:`brier_score`;
- selective prediction: :func:`risk_coverage_curve` (with its area, the AURC);
- uncertainty: :func:`predictive_entropy`, :func:`mutual_information` (from probability
  draws), and :func:`ood_auroc` to score how well an uncertainty separates
  out-of-distribution points from in-distribution ones.

Regression: :func:`interval_coverage`, :func:`gaussian_nll`, :func:`crps_gaussian` and
:func:`crps_ensemble` (from predictive draws).

Summaries (one dict of headline numbers, e.g. for a report):
:func:`classification_summary`, :func:`regression_summary`.

Every function checks its inputs (shapes agree, values finite, probabilities in [0, 1]
and rows summing to 1) and raises a ValueError naming the bad argument; nothing
passed in is modified.

Examples
--------
>>> from pymc_bnn import metrics
>>> y = [0, 1, 1, 0]
>>> p1 = [0.1, 0.8, 0.6, 0.3]                   # P(y = 1)
>>> round(metrics.expected_calibration_error(y, p1, n_bins=2), 6)
0.25
>>> round(metrics.brier_score(y, p1), 6)        # 2 x sklearn's binary Brier score
0.15
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr
from sklearn.metrics import log_loss, roc_auc_score

from pymc_bnn._validation import check_choice, check_positive_int

__all__ = [
    "brier_score",
    "classification_summary",
    "crps_ensemble",
    "crps_gaussian",
    "ece_consistency",
    "expected_calibration_error",
    "gaussian_nll",
    "interval_coverage",
    "mutual_information",
    "negative_log_likelihood",
    "ood_auroc",
    "predictive_entropy",
    "regression_summary",
    "reliability_curve",
    "risk_coverage_curve",
]

#: Largest allowed deviation of a row of class probabilities from summing to 1
#: (float32 predictives carry ~1e-7 rounding error per probability).
ROW_SUM_ATOL = 1e-6

ECE_METHODS = ("top_label", "classwise")
CONFIDENCES = ("auto", "positive", "top")


# --------------------------------------------------------------------------- checks
def _float_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array (not copied when it already is one; never written)."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers; got {value!r}.") from None


def _check_finite(name: str, a: np.ndarray) -> None:
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinity (shape {a.shape}).")


def _check_probabilities(name: str, a: np.ndarray) -> None:
    """Every value finite and in [0, 1] (row sums: :func:`_check_rows_sum_to_one`)."""
    if not np.all(np.isfinite(a)) or a.min() < 0 or a.max() > 1:
        raise ValueError(
            f"{name} must hold finite probabilities in [0, 1]; got values from "
            f"{np.nanmin(a)} to {np.nanmax(a)} (shape {a.shape})."
        )


def _check_rows_sum_to_one(name: str, a: np.ndarray) -> None:
    deviation = np.abs(a.sum(axis=-1) - 1.0)
    if np.any(deviation > ROW_SUM_ATOL):
        worst = np.unravel_index(np.argmax(deviation), deviation.shape)
        raise ValueError(
            f"the class probabilities in each row of {name} must sum to 1 (within "
            f"{ROW_SUM_ATOL:g}); row {tuple(int(i) for i in worst)} of {name} (shape "
            f"{a.shape}) sums to {a.sum(axis=-1)[worst]!r}."
        )


def _proba_matrix(proba, *, name: str = "proba") -> np.ndarray:
    """Class probabilities as a float array of shape (n_samples, n_classes).

    A 1-D input is the probability of the second class of a binary problem.
    """
    p = _float_array(name, proba)
    if p.ndim not in (1, 2) or p.shape[0] == 0:
        raise ValueError(
            f"{name} must have shape (n_samples, n_classes) or (n_samples,) with "
            f"n_samples >= 1; got shape {p.shape}."
        )
    if p.ndim == 2 and p.shape[1] < 2:
        raise ValueError(
            f"{name} must have one column per class (at least 2); got shape {p.shape}. "
            "For a binary problem pass the probability of the second class as a 1-D array."
        )
    _check_probabilities(name, p)
    if p.ndim == 1:
        return np.column_stack([1.0 - p, p])
    _check_rows_sum_to_one(name, p)
    return p


def _check_proba(y_true, proba, classes):
    """Check labels against class probabilities.

    Returns
    -------
    codes : int array of shape (n_samples,)
        Column of ``proba`` holding each sample's true class.
    proba : float array of shape (n_samples, n_classes)
    classes : array of shape (n_classes,)
    """
    y_true = np.asarray(y_true)
    p = _float_array("proba", proba)
    if p.ndim not in (1, 2) or y_true.ndim != 1 or p.shape[0] != y_true.shape[0]:
        raise ValueError(
            "proba must have shape (n_samples, n_classes) or (n_samples,) and y_true shape "
            f"(n_samples,); got {p.shape} and {y_true.shape}."
        )
    if y_true.size == 0:
        raise ValueError("y_true and proba are empty.")
    p = _proba_matrix(p)
    classes = np.unique(y_true) if classes is None else np.asarray(classes)
    if classes.ndim != 1 or np.unique(classes).size != classes.size:
        raise ValueError(
            f"classes must be a 1-D array of distinct labels; got {classes.tolist()!r}."
        )
    if classes.shape[0] != p.shape[1]:
        raise ValueError(
            f"proba has {p.shape[1]} columns but there are {classes.shape[0]} classes "
            f"{classes.tolist()}; pass classes= (e.g. clf.classes_) in proba's column order."
        )
    order = np.argsort(classes, kind="stable")
    pos = np.minimum(np.searchsorted(classes[order], y_true), classes.size - 1)
    unknown = classes[order][pos] != y_true
    if np.any(unknown):
        raise ValueError(
            f"y_true holds labels not in classes {classes.tolist()}: "
            f"{np.unique(y_true[unknown]).tolist()}."
        )
    return order[pos], p, classes


def _targets(y_true) -> np.ndarray:
    y = _float_array("y_true", y_true)
    if y.ndim != 1 or y.shape[0] == 0:
        raise ValueError(f"y_true must be a non-empty 1-D array; got shape {y.shape}.")
    _check_finite("y_true", y)
    return y


def _like_targets(name: str, value, n: int) -> np.ndarray:
    """A finite prediction of shape (n,), or a scalar broadcast to it (read-only view)."""
    a = _float_array(name, value)
    if a.shape not in ((), (n,)):
        raise ValueError(
            f"{name} must have shape ({n},) like y_true, or be a scalar; got shape {a.shape}."
        )
    _check_finite(name, a)
    return np.broadcast_to(a, (n,))


def _uncertainty_vector(name: str, value, n: int | None = None) -> np.ndarray:
    u = _float_array(name, value)
    if u.ndim != 1 or u.shape[0] == 0 or (n is not None and u.shape[0] != n):
        want = "(n_samples,)" if n is None else f"({n},), one score per sample,"
        raise ValueError(f"{name} must have shape {want} and be non-empty; got {u.shape}.")
    _check_finite(name, u)
    return u


# ---------------------------------------------------------------------- binning
def _top_label(proba: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Confidence (top-class probability) and whether the top class is right (0/1).

    Ties between classes go to the first column (``argmax``).
    """
    return proba.max(axis=1), (proba.argmax(axis=1) == codes).astype(float)


def _binned(p: np.ndarray, hit: np.ndarray, n_bins: int) -> dict:
    """Equal-width binning of probabilities ``p`` against 0/1 outcomes ``hit``.

    Bin ``i`` is ``[i / n_bins, (i + 1) / n_bins)``, the last one closed. The one
    implementation behind :func:`reliability_curve` and
    :func:`expected_calibration_error`.
    """
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.searchsorted(edges[1:-1], p, side="right")
    count = np.bincount(idx, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(idx, weights=p, minlength=n_bins) / count
        freq = np.bincount(idx, weights=hit, minlength=n_bins) / count
    filled = count > 0
    ece = float(np.sum(count[filled] / p.size * np.abs(freq[filled] - mean_conf[filled])))
    return {"edges": edges, "count": count, "mean_confidence": mean_conf, "frequency": freq,
            "ece": ece}


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
        the last one closed.
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
    codes, proba, classes = _check_proba(y_true, proba, classes)
    n_classes = proba.shape[1]
    if confidence == "auto":
        confidence = "positive" if n_classes == 2 else "top"
    if confidence == "positive":
        if n_classes != 2:
            raise ValueError(
                f"confidence='positive' needs 2 classes; got {n_classes}. Use 'top'."
            )
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
        the last one closed.
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
    codes, proba, _ = _check_proba(y_true, proba, classes)
    return _ece(proba, codes, n_bins, method)


def _ece(proba: np.ndarray, codes: np.ndarray, n_bins: int, method: str) -> float:
    """:func:`expected_calibration_error` of checked arrays."""
    if method == "top_label":
        return _binned(*_top_label(proba, codes), n_bins)["ece"]
    per_class = [_binned(proba[:, k], (codes == k).astype(float), n_bins)["ece"]
                 for k in range(proba.shape[1])]
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
    codes, proba, _ = _check_proba(y_true, proba, classes)
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
    return {"ece": observed, "expected_if_calibrated": floor, "excess": observed - floor,
            "p_value": float((1 + np.sum(null >= observed)) / (1 + n_resamples))}


# ------------------------------------------------------------------ proper scores
def negative_log_likelihood(
    y_true: ArrayLike, proba: ArrayLike, *, classes: ArrayLike | None = None
) -> float:
    """Mean negative log-probability of the true class (log loss), natural log.

    Wraps :func:`sklearn.metrics.log_loss` with ``labels=classes``, so a class absent
    from ``y_true`` is still scored in its column.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Columns in ``classes`` order (1-D: probability of the second class).
    classes : array of shape (n_classes,), optional
        Default ``np.unique(y_true)``.

    Returns
    -------
    float
        ``-mean(log p[i, y_i])`` in nats. Probabilities are clipped to
        ``[eps, 1 - eps]`` (float64 ``eps``) as scikit-learn does, so a zero
        probability for the true class costs about 36 nats, not infinity. Rows are
        renormalised to sum to exactly 1 first (they may be off by up to 1e-6).

    Examples
    --------
    >>> import numpy as np
    >>> nll = negative_log_likelihood([0, 1], [0.5, 0.25])   # -(log .5 + log .25) / 2
    >>> bool(np.isclose(nll, 1.5 * np.log(2)))
    True
    """
    codes, proba, _ = _check_proba(y_true, proba, classes)
    proba = proba / proba.sum(axis=1, keepdims=True)
    return float(log_loss(codes, proba, labels=np.arange(proba.shape[1])))


def brier_score(
    y_true: ArrayLike, proba: ArrayLike, *, classes: ArrayLike | None = None
) -> float:
    """Multi-class Brier score: mean over samples of ``sum_k (p_k - 1[y = k])**2``.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Columns in ``classes`` order (1-D: probability of the second class).
    classes : array of shape (n_classes,), optional
        Default ``np.unique(y_true)``.

    Returns
    -------
    float
        In [0, 2]; 0 for certain, correct predictions.

    Notes
    -----
    This is Brier's original score, summed over *all* classes. For a binary problem it
    is **twice** the usual binary Brier score ``mean((p - y)**2)`` of
    :func:`sklearn.metrics.brier_score_loss` (both classes contribute the same squared
    error), so it is comparable across numbers of classes.

    Examples
    --------
    >>> round(brier_score([0, 1], [0.2, 0.6]), 6)   # (2 * 0.2**2 + 2 * 0.4**2) / 2
    0.2
    """
    codes, proba, _ = _check_proba(y_true, proba, classes)
    onehot = np.eye(proba.shape[1])[codes]
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


# ------------------------------------------------------------ selective prediction
def risk_coverage_curve(
    y_true: ArrayLike,
    proba: ArrayLike,
    *,
    uncertainty: ArrayLike | None = None,
    classes: ArrayLike | None = None,
) -> dict:
    """Risk of the top-class prediction when only the most certain points are kept.

    Points are ranked from most to least certain by ``uncertainty`` (a stable sort:
    ties keep their order in the input, so the curve is deterministic). Keeping the
    first ``i`` of ``n`` points gives coverage ``i / n`` and risk = their error rate.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Columns in ``classes`` order (1-D: probability of the second class). The
        prediction is the top class (ties: the first column).
    uncertainty : array of shape (n_samples,), optional
        Any per-point score, larger = less certain (e.g. :func:`predictive_entropy` or
        :func:`mutual_information`). Default ``1 - proba.max(axis=1)``.
    classes : array of shape (n_classes,), optional
        Default ``np.unique(y_true)``.

    Returns
    -------
    dict with
        ``coverage`` (n_samples,): ``1/n, 2/n, ..., 1``;
        ``risk`` (n_samples,): error rate among the retained points;
        ``threshold`` (n_samples,): uncertainty of the last retained point (retain
        points with uncertainty <= threshold, up to ties);
        ``aurc``: area under the risk-coverage curve, ``mean(risk)`` (Geifman &
        El-Yaniv, 2017; lower is better, ``risk[-1]`` is the plain error rate).

    Examples
    --------
    >>> rc = risk_coverage_curve([0, 1, 1], [0.1, 0.4, 0.8])   # the 0.4 is wrong
    >>> rc["coverage"].round(3).tolist(), rc["risk"].round(3).tolist()
    ([0.333, 0.667, 1.0], [0.0, 0.0, 0.333])
    """
    codes, proba, _ = _check_proba(y_true, proba, classes)
    n = codes.shape[0]
    if uncertainty is None:
        u = 1.0 - proba.max(axis=1)
    else:
        u = _uncertainty_vector("uncertainty", uncertainty, n)
    order = np.argsort(u, kind="stable")
    errors = (proba.argmax(axis=1) != codes)[order]
    kept = np.arange(1, n + 1)
    risk = np.cumsum(errors) / kept
    return {"coverage": kept / n, "risk": risk, "threshold": u[order],
            "aurc": float(risk.mean())}


def ood_auroc(uncertainty_in: ArrayLike, uncertainty_out: ArrayLike) -> float:
    """AUROC of telling out-of-distribution points from in-distribution ones by uncertainty.

    Out-of-distribution points are the positives, the score is the uncertainty (larger
    = more likely OOD); computed by :func:`sklearn.metrics.roc_auc_score`.

    Parameters
    ----------
    uncertainty_in : array of shape (n_in,)
        Uncertainty at in-distribution points (e.g. a test set).
    uncertainty_out : array of shape (n_out,)
        Uncertainty at out-of-distribution points.

    Returns
    -------
    float
        1: every OOD point is more uncertain than every in-distribution point; 0.5: no
        better than chance (e.g. identical scores); ties count one half.

    Examples
    --------
    >>> ood_auroc([0.1, 0.2, 0.3], [0.25, 0.9])   # 5 of the 6 pairs ordered right
    0.8333333333333334
    """
    u_in = _uncertainty_vector("uncertainty_in", uncertainty_in)
    u_out = _uncertainty_vector("uncertainty_out", uncertainty_out)
    is_out = np.concatenate([np.zeros(u_in.shape[0]), np.ones(u_out.shape[0])])
    return float(roc_auc_score(is_out, np.concatenate([u_in, u_out])))


# ---------------------------------------------------------------------- uncertainty
def predictive_entropy(proba: ArrayLike) -> np.ndarray:
    """Entropy of predicted class probabilities, in nats (total predictive uncertainty).

    Parameters
    ----------
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Class probabilities (e.g. the posterior predictive mean); rows sum to 1.

    Returns
    -------
    entropy : array of shape (n_samples,)
        ``-sum_k p_k log p_k`` (with ``0 log 0 = 0``), in ``[0, log n_classes]``.

    Notes
    -----
    The same arithmetic as the ``entropy`` of :func:`pymc_bnn.summarize_proba`
    (which this function calls on a single draw).

    Examples
    --------
    >>> import numpy as np
    >>> h = predictive_entropy([[0.5, 0.5], [1.0, 0.0]])
    >>> bool(np.allclose(h, [np.log(2), 0.0]))
    True
    """
    # predictive holds the one implementation; imported here so that the rest of
    # this module needs nothing beyond NumPy / SciPy / scikit-learn.
    from pymc_bnn.predictive import summarize_proba

    return summarize_proba(_proba_matrix(proba)[None])["entropy"]


def mutual_information(proba_draws: ArrayLike) -> np.ndarray:
    """Mutual information between the prediction and the weights (epistemic uncertainty).

    Parameters
    ----------
    proba_draws : array of shape (n_draws, n_samples, n_classes)
        Class-probability draws (e.g. ``PosteriorPredictive.sample_proba(X)``).

    Returns
    -------
    mutual_info : array of shape (n_samples,)
        Entropy of the mean over draws minus the mean entropy of the draws (the BALD
        score), in nats, clipped at 0 against rounding; 0 when all draws agree.

    Notes
    -----
    The same arithmetic as the ``mutual_info`` of :func:`pymc_bnn.summarize_proba`,
    which this function calls.

    Examples
    --------
    >>> import numpy as np
    >>> draws = [[[1.0, 0.0]], [[0.0, 1.0]]]   # 2 draws that disagree completely
    >>> bool(np.allclose(mutual_information(draws), np.log(2)))
    True
    """
    from pymc_bnn.predictive import summarize_proba

    p = _float_array("proba_draws", proba_draws)
    if p.ndim != 3 or 0 in p.shape[:2] or p.shape[2] < 2:
        raise ValueError(
            "proba_draws must have shape (n_draws, n_samples, n_classes) with at least "
            f"one draw, one sample and 2 classes; got shape {p.shape}."
        )
    _check_probabilities("proba_draws", p)
    _check_rows_sum_to_one("proba_draws", p)
    return summarize_proba(p)["mutual_info"]


# ------------------------------------------------------------------------ regression
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
    y = _targets(y_true)
    lo = _like_targets("lower", lower, y.shape[0])
    hi = _like_targets("upper", upper, y.shape[0])
    bad = lo > hi
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ValueError(
            f"lower must be <= upper; lower > upper at {int(bad.sum())} of {y.shape[0]} "
            f"points (first at index {i}: lower={lo[i]!r}, upper={hi[i]!r})."
        )
    return float(np.mean((lo <= y) & (y <= hi)))


def _normal_params(y_true, mean, std) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = _targets(y_true)
    mu = _like_targets("mean", mean, y.shape[0])
    sd = _like_targets("std", std, y.shape[0])
    if np.any(sd <= 0):
        raise ValueError(
            f"std must be > 0; got {int(np.sum(sd <= 0))} value(s) <= 0 (smallest "
            f"{sd.min()!r})."
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
    y = _targets(y_true)
    x = _float_array("samples", samples)
    if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[1] == 0:
        raise ValueError(
            f"samples must have shape (n_samples, n_draws) = ({y.shape[0]}, m) with "
            f"m >= 1, one row per entry of y_true; got shape {x.shape}."
        )
    _check_finite("samples", x)
    m = x.shape[1]
    x = np.sort(x, axis=1)  # a sorted copy
    abs_error = np.mean(np.abs(x - y[:, None]), axis=1)
    weights = 2.0 * np.arange(1, m + 1) - m - 1
    half_spread = (x @ weights) / m**2  # 0.5 E|X - X'|
    return float(np.mean(abs_error - half_spread))


# ------------------------------------------------------------------------- summaries
def classification_summary(
    y_true: ArrayLike,
    proba: ArrayLike,
    *,
    classes: ArrayLike | None = None,
    n_bins: int = 15,
) -> dict:
    """Headline numbers of predicted class probabilities, in one dict.

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Columns in ``classes`` order (1-D: probability of the second class).
    classes : array of shape (n_classes,), optional
        Default ``np.unique(y_true)``.
    n_bins : int, default 15
        Bins of the expected calibration error.

    Returns
    -------
    dict, in this key order, with
        ``n`` (int): number of samples;
        ``accuracy``: share of samples whose top class (ties: the first column) is
        the true one;
        ``nll``: :func:`negative_log_likelihood` (nats);
        ``brier``: :func:`brier_score` (summed over classes, in [0, 2]);
        ``ece``: top-label :func:`expected_calibration_error` with ``n_bins`` bins;
        ``aurc``: area under the :func:`risk_coverage_curve`, points ranked by
        ``1 - proba.max(axis=1)``.
        Every value but ``n`` is a float.

    Examples
    --------
    >>> s = classification_summary([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.3], n_bins=2)
    >>> list(s), s["n"], s["accuracy"]
    (['n', 'accuracy', 'nll', 'brier', 'ece', 'aurc'], 4, 0.75)
    """
    n_bins = check_positive_int("n_bins", n_bins)
    codes, p, _ = _check_proba(y_true, proba, classes)
    return {
        "n": int(codes.shape[0]),
        "accuracy": float(np.mean(p.argmax(axis=1) == codes)),
        "nll": negative_log_likelihood(y_true, proba, classes=classes),
        "brier": brier_score(y_true, proba, classes=classes),
        "ece": expected_calibration_error(y_true, proba, n_bins=n_bins, classes=classes),
        "aurc": risk_coverage_curve(y_true, proba, classes=classes)["aurc"],
    }


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
        raise ValueError(
            f"lower and upper must be given together; got {given} without {missing}."
        )
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
        width = _like_targets("upper", upper, n) - _like_targets("lower", lower, n)
        summary["mean_interval_width"] = float(np.mean(width))
    return summary
