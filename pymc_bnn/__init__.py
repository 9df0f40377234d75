"""pymc_bnn: Bayesian neural networks on PyMC, with fast compiled predictives.

The public API, in pipeline order (see ``DESIGN.md``):

- :func:`build_model` — a PyMC model of a Bayesian MLP (classification or regression;
  optionally hierarchical over groups, optionally under Neal's precision prior);
- :func:`fit` — ADVI, full-rank ADVI or NUTS, returning an immutable :class:`Posterior`;
  :func:`sample_more` continues NUTS chains;
- :func:`posterior_predictive` — a :class:`PosteriorPredictive` with one compiled, batched forward
  pass giving class-probability draws ``(n_draws, n_points, n_classes)`` (or, for
  regression, per-draw means and noise sds);
- :class:`BayesianMLPClassifier` and :class:`BayesianMLPRegressor` — the scikit-learn
  estimators on top of them.

Uncertainty and calibration metrics (expected calibration error, reliability curves,
risk–coverage, OOD AUROC, NLL, Brier score, interval coverage, CRPS) are plain NumPy /
scikit-learn functions of ``(y_true, predictions)`` in the submodule
:mod:`pymc_bnn.metrics` (``from pymc_bnn import metrics``), not re-exported here.
"""

from pymc_bnn import metrics as metrics  # the submodule pymc_bnn.metrics
from pymc_bnn.estimator import BayesianMLPClassifier, BayesianMLPRegressor
from pymc_bnn.inference import Posterior, fit, sample_more
from pymc_bnn.model import NetworkSpec, build_model, forward, network_spec
from pymc_bnn.predictive import PosteriorPredictive, posterior_predictive, summarize_proba

__all__ = [
    "BayesianMLPClassifier",
    "BayesianMLPRegressor",
    "NetworkSpec",
    "Posterior",
    "PosteriorPredictive",
    "build_model",
    "fit",
    "forward",
    "network_spec",
    "posterior_predictive",
    "sample_more",
    "summarize_proba",
]

__version__ = "0.2.0"
