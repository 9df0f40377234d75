"""The network: what a Bayesian MLP is, its PyMC model, and the checks of its inputs.

- :mod:`~pymc_bnn.network.spec`: :class:`NetworkSpec` and the choices it names
  (activations, priors, likelihoods).
- :mod:`~pymc_bnn.network.model`: :func:`build_model`, the PyMC model; :func:`forward`;
  :func:`default_initial_values`; :func:`network_spec`.
- :mod:`~pymc_bnn.network._flat`: the network as a function of one flat parameter
  vector, for the MAP-based methods.
- :mod:`~pymc_bnn.network._checks`: input and parameter checks shared by the
  functional layer and the estimators.
"""

from pymc_bnn._runtime.lazy import lazy_exports

_EXPORTS = {
    "ACTIVATIONS": "pymc_bnn.network.model",
    "ACTIVATION_NAMES": "pymc_bnn.network.spec",
    "LIKELIHOODS": "pymc_bnn.network.spec",
    "PRIORS": "pymc_bnn.network.spec",
    "NetworkSpec": "pymc_bnn.network.spec",
    "build_model": "pymc_bnn.network.model",
    "default_initial_values": "pymc_bnn.network.model",
    "forward": "pymc_bnn.network.model",
    "network_spec": "pymc_bnn.network.model",
    "noise_sd": "pymc_bnn.network.model",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
