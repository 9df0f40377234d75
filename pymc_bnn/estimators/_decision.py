"""Decisions from predicted probabilities: a cost-aware threshold for two classes.

The 0.5 threshold minimises the error rate, which on an imbalanced table (a 4.5 %
positive class) can mean predicting every row negative. Where a missed positive (a
false negative) costs ``cost_fn_fp`` times a false alarm (a false positive), the
decision that minimises the expected cost of a row whose probability of being positive
is ``p`` is to predict positive when ``p * cost_fn_fp > (1 - p)``, i.e. when ``p`` is at
least ``1 / (1 + cost_fn_fp)`` (Elkan 2001, "The foundations of cost-sensitive
learning"). It needs calibrated probabilities, which the posterior predictive is meant
to give (``docs/calibration.md``), and no data of its own: the threshold is the costs'.
:func:`threshold_curves` shows what any threshold does on labelled rows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cost_threshold", "expected_cost", "one_class_message", "threshold_curves"]


def cost_threshold(cost_fn_fp: float) -> float:
    """The probability of the positive class above which predicting it costs less:
    ``1 / (1 + cost_fn_fp)`` (see the module).

    Examples
    --------
    >>> cost_threshold(1.0), round(cost_threshold(9.0), 3)
    (0.5, 0.1)
    """
    cost = float(cost_fn_fp)
    if not np.isfinite(cost) or cost <= 0:
        raise ValueError(f"cost_fn_fp must be a positive number; got {cost_fn_fp!r}.")
    return 1.0 / (1.0 + cost)


def expected_cost(
    positive: np.ndarray, p_positive: np.ndarray, threshold: float, cost_fn_fp: float
) -> float:
    """The mean cost per row of predicting positive where ``p_positive >= threshold``,
    in units of one false positive (a false negative costs ``cost_fn_fp``)."""
    positive = np.asarray(positive, dtype=bool)
    predicted = np.asarray(p_positive, dtype=float) >= threshold
    fn = np.sum(positive & ~predicted)
    fp = np.sum(~positive & predicted)
    return float((cost_fn_fp * fn + fp) / max(positive.size, 1))


def threshold_curves(
    positive: np.ndarray, p_positive: np.ndarray, thresholds: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Precision and recall of predicting positive where ``p_positive >= t``, for each
    ``t`` of ``thresholds`` (default 0.01, 0.02, ..., 0.99): ``{"thresholds",
    "precision", "recall", "predicted_positive"}`` (precision NaN where nothing is
    predicted positive)."""
    positive = np.asarray(positive, dtype=bool)
    p = np.asarray(p_positive, dtype=float)
    t = np.round(np.arange(1, 100) / 100, 2) if thresholds is None else np.asarray(thresholds)
    predicted = p[None, :] >= t[:, None]
    tp = (predicted & positive[None, :]).sum(axis=1)
    n_pred = predicted.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(n_pred > 0, tp / n_pred, np.nan)
    recall = tp / max(int(positive.sum()), 1)
    return {
        "thresholds": t,
        "precision": precision,
        "recall": recall,
        "predicted_positive": n_pred / max(p.size, 1),
    }


def one_class_message(predicted: np.ndarray, classes, p_positive: np.ndarray) -> str | None:
    """A note where every row of two classes is predicted the same class although some
    rows give the other one a real chance (the largest such probability over 0.05):
    what happened and the option that sets a cost-aware threshold; else None."""
    predicted = np.asarray(predicted)
    if len(classes) != 2 or predicted.size == 0 or np.unique(predicted).size > 1:
        return None
    p = np.asarray(p_positive, dtype=float)
    other = classes[1] if predicted[0] == classes[0] else classes[0]
    chance = p.max() if other == classes[1] else (1.0 - p).max()
    if chance <= 0.05:
        return None
    label = str(predicted[0])
    return (
        f"every row predicted {label!r} at 0.5 ({str(other)!r}: up to {chance:.0%}); "
        "see --cost-fn-fp"
    )
