"""Scores of predicted class probabilities (part of :mod:`pymc_bnn.metrics`).

- proper scores: :func:`negative_log_likelihood`, :func:`brier_score` (scikit-learn's
  convention) and :func:`multiclass_brier` (summed over classes);
- selective prediction: :func:`risk_coverage_curve` (with its area, the AURC);
- uncertainty: :func:`predictive_entropy`, :func:`mutual_information` (from probability
  draws), and :func:`ood_auroc` to score how well an uncertainty separates
  out-of-distribution points from in-distribution ones;
- :func:`classification_summary`: the headline numbers in one dict.

Calibration metrics are in :mod:`pymc_bnn.metrics._calibration`. Import all of them
from :mod:`pymc_bnn.metrics`.

Examples
--------
>>> from pymc_bnn.metrics import brier_score, multiclass_brier
>>> y, p1 = [0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3]        # P(y = 1)
>>> round(brier_score(y, p1), 6), round(multiclass_brier(y, p1), 6)
(0.075, 0.15)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import log_loss, roc_auc_score

from pymc_bnn.metrics._calibration import expected_calibration_error
from pymc_bnn.metrics._inputs import (
    check_proba,
    check_probabilities,
    check_rows_sum_to_one,
    check_uncertainty,
    float_array,
    proba_matrix,
)
from pymc_bnn.network._checks import check_positive_int

__all__ = [
    "brier_score",
    "classification_summary",
    "multiclass_brier",
    "mutual_information",
    "negative_log_likelihood",
    "ood_auroc",
    "predictive_entropy",
    "risk_coverage_curve",
]


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
    codes, proba, _ = check_proba(y_true, proba, classes)
    proba = proba / proba.sum(axis=1, keepdims=True)
    return float(log_loss(codes, proba, labels=np.arange(proba.shape[1])))


def _summed_squared_error(codes: np.ndarray, proba: np.ndarray) -> float:
    """Mean over rows of ``sum_k (proba[i, k] - 1[codes[i] = k])**2`` (checked arrays)."""
    onehot = np.eye(proba.shape[1])[codes]
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


def brier_score(y_true: ArrayLike, proba: ArrayLike, *, classes: ArrayLike | None = None) -> float:
    """Brier score in scikit-learn's convention (:func:`sklearn.metrics.brier_score_loss`).

    Two classes: the mean squared error of the probability of the second (positive)
    class, ``mean((p - y)**2)`` with ``y`` 1 for the second class and 0 for the first,
    in [0, 1]. Three or more classes: the multi-class score ``mean over samples of
    sum_k (p_k - 1[y = k])**2``, in [0, 2], which is what ``brier_score_loss`` returns
    for multi-class input (its default ``scale_by_half="auto"`` halves the sum over
    classes for two classes only).

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
        0 for certain, correct predictions; at most 1 for two classes, 2 for more.

    Notes
    -----
    The same number as ``brier_score_loss(y_true, proba, labels=classes)`` (or, for a
    1-D ``proba``, ``brier_score_loss(y_true, proba, pos_label=classes[1])``).
    :func:`multiclass_brier` sums over the classes whatever their number: for two
    classes it is exactly twice this score, for more it is this score. (Up to
    pymc_bnn 0.2.0, ``brier_score`` returned that sum for two classes too.)

    Examples
    --------
    >>> round(brier_score([0, 1], [0.2, 0.6]), 6)   # (0.2**2 + 0.4**2) / 2
    0.1
    >>> p = [[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]]      # y = 0: .14; y = 2: .38
    >>> round(brier_score([0, 2], p, classes=[0, 1, 2]), 6)
    0.26
    """
    codes, proba, _ = check_proba(y_true, proba, classes)
    score = _summed_squared_error(codes, proba)
    # scikit-learn's scale_by_half="auto": the sum over classes halved for 2 classes
    return 0.5 * score if proba.shape[1] == 2 else score


def multiclass_brier(
    y_true: ArrayLike, proba: ArrayLike, *, classes: ArrayLike | None = None
) -> float:
    """Multi-class Brier score: mean over samples of ``sum_k (p_k - 1[y = k])**2``.

    Brier's original score, summed over *all* classes for any number of classes, so
    that it reads the same whatever the number of classes; it is
    ``sklearn.metrics.brier_score_loss(y_true, proba, labels=classes,
    scale_by_half=False)``.

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
    For a binary problem it is exactly **twice** :func:`brier_score`, i.e. twice
    scikit-learn's ``brier_score_loss`` ``mean((p - y)**2)`` (both classes contribute
    the same squared error). For three or more classes it equals :func:`brier_score`.

    Examples
    --------
    >>> round(multiclass_brier([0, 1], [0.2, 0.6]), 6)   # (2 * 0.2**2 + 2 * 0.4**2) / 2
    0.2
    """
    codes, proba, _ = check_proba(y_true, proba, classes)
    return _summed_squared_error(codes, proba)


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
    codes, proba, _ = check_proba(y_true, proba, classes)
    n = codes.shape[0]
    if uncertainty is None:
        u = 1.0 - proba.max(axis=1)
    else:
        u = check_uncertainty("uncertainty", uncertainty, n)
    order = np.argsort(u, kind="stable")
    errors = (proba.argmax(axis=1) != codes)[order]
    kept = np.arange(1, n + 1)
    risk = np.cumsum(errors) / kept
    return {"coverage": kept / n, "risk": risk, "threshold": u[order], "aurc": float(risk.mean())}


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
    u_in = check_uncertainty("uncertainty_in", uncertainty_in)
    u_out = check_uncertainty("uncertainty_out", uncertainty_out)
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
    from pymc_bnn.predictive._summary import summarize_proba

    # + 0.0 turns the -0.0 of a certain row (-(1 log 1 + 0)) into 0.0
    return summarize_proba(proba_matrix(proba)[None])["entropy"] + 0.0


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
    from pymc_bnn.predictive._summary import summarize_proba

    p = float_array("proba_draws", proba_draws)
    if p.ndim != 3 or 0 in p.shape[:2] or p.shape[2] < 2:
        raise ValueError(
            "proba_draws must have shape (n_draws, n_samples, n_classes) with at least "
            f"one draw, one sample and 2 classes; got shape {p.shape}."
        )
    check_probabilities("proba_draws", p)
    check_rows_sum_to_one("proba_draws", p)
    return summarize_proba(p)["mutual_info"]


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
        ``brier``: :func:`brier_score`, scikit-learn's convention (two classes: mean
        squared error of the second class's probability, in [0, 1]; more classes:
        summed over classes, in [0, 2]);
        ``multiclass_brier``: :func:`multiclass_brier`, summed over classes whatever
        their number, in [0, 2] (twice ``brier`` for two classes, equal to it for more);
        ``ece``: top-label :func:`expected_calibration_error` with ``n_bins`` bins;
        ``aurc``: area under the :func:`risk_coverage_curve`, points ranked by
        ``1 - proba.max(axis=1)``.
        Every value but ``n`` is a float.

    Examples
    --------
    >>> s = classification_summary([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.3], n_bins=2)
    >>> list(s), s["n"], s["accuracy"]
    (['n', 'accuracy', 'nll', 'brier', 'multiclass_brier', 'ece', 'aurc'], 4, 0.75)
    """
    n_bins = check_positive_int("n_bins", n_bins)
    codes, p, _ = check_proba(y_true, proba, classes)
    return {
        "n": int(codes.shape[0]),
        "accuracy": float(np.mean(p.argmax(axis=1) == codes)),
        "nll": negative_log_likelihood(y_true, proba, classes=classes),
        "brier": brier_score(y_true, proba, classes=classes),
        "multiclass_brier": multiclass_brier(y_true, proba, classes=classes),
        "ece": expected_calibration_error(y_true, proba, n_bins=n_bins, classes=classes),
        "aurc": risk_coverage_curve(y_true, proba, classes=classes)["aurc"],
    }
