"""The predictive: posterior -> weight draws -> class-probability (or Normal) draws ->
summaries.

- :mod:`~pymc_bnn.predictive._predictive`: :class:`PosteriorPredictive` and
  :func:`posterior_predictive`, one compiled, batched forward pass over the draws;
  :func:`from_idata`, the one constructor every fit and load uses.
- :mod:`~pymc_bnn.predictive._draws`: weight draws from a fitted posterior (tempering,
  fast draws from a VI approximation).
- :mod:`~pymc_bnn.predictive._forward`: the compiled forward graphs and the backend they
  run on.
- :mod:`~pymc_bnn.predictive._linear`: the linear part of the classifier's predictive
  (a Bayesian logistic model beside the network).
- :mod:`~pymc_bnn.predictive._composed`: the draws of a fit made of parts.
- :mod:`~pymc_bnn.predictive._summary`: summaries of class-probability draws (mean,
  entropy, mutual information, intervals).
"""

from pymc_bnn._runtime.lazy import lazy_exports

_EXPORTS = {
    name: "pymc_bnn.predictive._predictive"
    for name in (
        "PosteriorPredictive",
        "from_idata",
        "posterior_draws",
        "posterior_predictive",
        "summarize_proba",
        "tempered",
    )
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
