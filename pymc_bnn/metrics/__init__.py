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
- proper scores: :func:`negative_log_likelihood`, :func:`brier_score` (scikit-learn's
  convention: for two classes the mean squared error of the positive-class
  probability) and :func:`multiclass_brier` (summed over classes, in [0, 2]: twice
  :func:`brier_score` for two classes);
- selective prediction: :func:`risk_coverage_curve` (with its area, the AURC);
- uncertainty: :func:`predictive_entropy`, :func:`mutual_information` (from probability
  draws), and :func:`ood_auroc` to score how well an uncertainty separates
  out-of-distribution points from in-distribution ones.

Regression: :func:`interval_coverage`, :func:`gaussian_nll`, :func:`crps_gaussian` and
:func:`crps_ensemble` (from predictive draws).

Summaries (one dict of headline numbers, e.g. for a report):
:func:`classification_summary`, :func:`regression_summary`.

The functions live in :mod:`pymc_bnn.metrics._calibration`,
:mod:`pymc_bnn.metrics._classification` and :mod:`pymc_bnn.metrics._regression` (their
input checks in :mod:`pymc_bnn.metrics._inputs`); import them from here.

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
>>> round(metrics.brier_score(y, p1), 6)        # sklearn's brier_score_loss
0.075
>>> round(metrics.multiclass_brier(y, p1), 6)   # summed over both classes: 2 x 0.075
0.15
"""

from __future__ import annotations

# CONFIDENCES, ECE_METHODS and ROW_SUM_ATOL: public here too, outside __all__
from pymc_bnn.metrics._calibration import (
    CONFIDENCES,  # noqa: F401
    ECE_METHODS,  # noqa: F401
    ece_consistency,
    expected_calibration_error,
    reliability_curve,
)
from pymc_bnn.metrics._classification import (
    brier_score,
    classification_summary,
    multiclass_brier,
    mutual_information,
    negative_log_likelihood,
    ood_auroc,
    predictive_entropy,
    risk_coverage_curve,
)
from pymc_bnn.metrics._inputs import ROW_SUM_ATOL  # noqa: F401
from pymc_bnn.metrics._regression import (
    binned_coverage,
    crps_ensemble,
    crps_gaussian,
    gaussian_nll,
    interval_coverage,
    regression_summary,
)

__all__ = [
    "binned_coverage",
    "brier_score",
    "classification_summary",
    "crps_ensemble",
    "crps_gaussian",
    "ece_consistency",
    "expected_calibration_error",
    "gaussian_nll",
    "interval_coverage",
    "multiclass_brier",
    "mutual_information",
    "negative_log_likelihood",
    "ood_auroc",
    "predictive_entropy",
    "regression_summary",
    "reliability_curve",
    "risk_coverage_curve",
]
