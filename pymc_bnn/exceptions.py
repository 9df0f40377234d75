"""The warnings the package raises, in one place.

Import them from here (``from pymc_bnn.exceptions import SamplingWarning``) to filter
or record them. Variational fits that stop before the ELBO levels off raise
scikit-learn's own ``ConvergenceWarning`` (re-exported here), as scikit-learn's
iterative estimators do, so that tools which silence or record it treat these
estimators alike. The module imports nothing of the package: every module may use it.
"""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning

__all__ = ["ConvergenceWarning", "InputScaleWarning", "SamplingWarning", "TargetLeakageWarning"]


class InputScaleWarning(UserWarning):
    """Input features are far from the unit scale that the network's priors assume."""


class SamplingWarning(ConvergenceWarning):
    """NUTS draws that may not represent the posterior: divergent transitions, or
    R-hat / ESS of the network's outputs beyond the thresholds of
    :func:`pymc_bnn.inference.diagnose`.

    A subclass of scikit-learn's ``ConvergenceWarning`` (which an unconverged ADVI
    fit raises): code that silences or records ``ConvergenceWarning`` (as
    scikit-learn's tools do, e.g. in ``GridSearchCV`` loops) treats NUTS the same,
    while ``SamplingWarning`` can still be filtered on its own.
    """


class TargetLeakageWarning(UserWarning):
    """A single input column predicts the target almost perfectly: likely derived from
    the target, or an identifier of a table sorted by it
    (:func:`pymc_bnn.tabular.leaking_columns`)."""
