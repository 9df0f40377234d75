"""Uncertainty a user can act on.

- :mod:`~pymc_bnn.uncertainty._conformal`: split conformal prediction on a fitted
  estimator's posterior predictive: :class:`ConformalRegressor` (intervals) and
  :class:`ConformalClassifier` (class sets) whose coverage holds in finite samples,
  optionally within each group (Mondrian).
"""

from pymc_bnn.uncertainty._conformal import (
    ConformalClassifier,
    ConformalRegressor,
    conformal_quantile,
)

__all__ = ["ConformalClassifier", "ConformalRegressor", "conformal_quantile"]
