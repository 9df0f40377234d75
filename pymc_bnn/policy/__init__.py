"""The default policy: how the estimators' ``fit`` chooses what to run, and says so.

- :mod:`~pymc_bnn.policy.thresholds`: every tuned number of the default, one line each
  with a link to its measurement.
- :mod:`~pymc_bnn.policy._choice`: what ``inference="auto"`` fits, as plain functions of
  an estimator's ``get_params()`` and the data's size.
- :mod:`~pymc_bnn.policy._settings`: the KL weight, the prior scales, the temperature
  and the fits a default makes (:class:`FitSettingsMixin`).
- :mod:`~pymc_bnn.policy._ensemble`: the default fits made of several MAP networks and
  their Laplace approximations (classifier and regressor).
- :mod:`~pymc_bnn.policy._tempering`: the posterior temperature by cross-fitting.
- :mod:`~pymc_bnn.policy._noise`: a regressor's noise model by held-out likelihood
  (:func:`choose_noise`).
- :mod:`~pymc_bnn.policy._describe`: a fitted estimator's choices in plain words
  (:func:`describe`); :mod:`~pymc_bnn.policy._nuts_words`, a NUTS run's.
"""

from pymc_bnn._runtime.lazy import lazy_exports

_EXPORTS = {
    "NOISE_MODELS": "pymc_bnn.policy._noise",
    "NoiseChoice": "pymc_bnn.policy._noise",
    "choose_noise": "pymc_bnn.policy._noise",
    "describe": "pymc_bnn.policy._describe",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
