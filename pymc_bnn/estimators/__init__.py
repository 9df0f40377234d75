"""The scikit-learn face: validate the input, run the default policy, store the result.

- :mod:`~pymc_bnn.estimators._classifier`: :class:`BayesianMLPClassifier`.
- :mod:`~pymc_bnn.estimators._regressor`: :class:`BayesianMLPRegressor`.
- :mod:`~pymc_bnn.estimators._base`: what they share (:class:`BayesianMLPBase`, the fit,
  the predictive methods, :data:`AUTO_BATCH_SIZE`, :data:`MAX_DENSE_CELLS`).
- :mod:`~pymc_bnn.estimators._decision`: decisions from predicted probabilities (a
  cost-aware threshold for two classes).
- :mod:`~pymc_bnn.estimators.persistence`: save and load fitted estimators in a format
  whose loading never executes code.

The constants are read where they are defined: patch them there.
"""

from pymc_bnn._runtime.lazy import lazy_exports

_EXPORTS = {
    "AUTO_BATCH_SIZE": "pymc_bnn.estimators._base",
    "MAX_DENSE_CELLS": "pymc_bnn.estimators._base",
    "BayesianMLPClassifier": "pymc_bnn.estimators._classifier",
    "BayesianMLPRegressor": "pymc_bnn.estimators._regressor",
    "InputScaleWarning": "pymc_bnn.exceptions",
    "KL_WEIGHTS": "pymc_bnn.policy._settings",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["BayesianMLPClassifier", "BayesianMLPRegressor", "InputScaleWarning"]
