"""scikit-learn estimators on top of the functional layer (model -> inference -> predictive).

The public module of the estimators, by concept in: :mod:`pymc_bnn.classifier`
(:class:`BayesianMLPClassifier`), :mod:`pymc_bnn.regressor`
(:class:`BayesianMLPRegressor`), :mod:`pymc_bnn.base` (what they share:
:class:`~pymc_bnn.base.BayesianMLPBase`, :data:`MAX_DENSE_CELLS`,
:data:`AUTO_BATCH_SIZE`) and :mod:`pymc_bnn.fit_settings` (how a fit chooses its
settings, :data:`KL_WEIGHTS`). Every name is re-exported here, so existing imports keep
working. The constants are read where they are defined: patch them there.
"""

from pymc_bnn.base import AUTO_BATCH_SIZE, MAX_DENSE_CELLS  # noqa: F401  (re-exported)
from pymc_bnn.classifier import BayesianMLPClassifier
from pymc_bnn.exceptions import InputScaleWarning  # re-exported
from pymc_bnn.fit_settings import KL_WEIGHTS  # noqa: F401  (re-exported)
from pymc_bnn.regressor import BayesianMLPRegressor

__all__ = ["BayesianMLPClassifier", "BayesianMLPRegressor", "InputScaleWarning"]
