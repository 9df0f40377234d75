"""pymc_bnn: Bayesian neural-network classifiers on PyMC, with fast compiled predictives.

The public API, in pipeline order (see ``DESIGN.md``):

- :func:`build_model` — a PyMC model of a Bayesian MLP classifier;
- :func:`fit` — ADVI, full-rank ADVI or NUTS, returning an immutable :class:`Posterior`;
- :func:`posterior_predictive` — a :class:`PosteriorPredictive` with one compiled, batched forward
  pass giving class-probability draws ``(n_draws, n_points, n_classes)``;
- :class:`BayesianMLPClassifier` — the scikit-learn estimator on top of them.
"""

from pymc_bnn.estimator import BayesianMLPClassifier
from pymc_bnn.inference import Posterior, fit
from pymc_bnn.model import NetworkSpec, build_model, forward, network_spec
from pymc_bnn.predictive import PosteriorPredictive, posterior_predictive, summarize_proba

__all__ = [
    "BayesianMLPClassifier",
    "NetworkSpec",
    "Posterior",
    "PosteriorPredictive",
    "build_model",
    "fit",
    "forward",
    "network_spec",
    "posterior_predictive",
    "summarize_proba",
]

__version__ = "0.1.0"
