"""pymc_bnn: Bayesian neural networks on PyMC, with fast compiled predictives.

The public API, in pipeline order (see ``docs/design.md``):

- :func:`build_model` — a PyMC model of a Bayesian MLP (classification or regression;
  optionally hierarchical over groups, optionally under Neal's precision prior);
  :func:`default_initial_values` lets PyMC's model transforms (``pm.compute_log_likelihood``,
  ``pm.do``, ``pm.observe``) take it;
- :func:`fit` — ADVI, full-rank ADVI or NUTS, returning an immutable :class:`Posterior`;
  :func:`sample_more` continues NUTS chains;
- :func:`posterior_predictive` — a :class:`PosteriorPredictive` with one compiled, batched forward
  pass giving class-probability draws ``(n_draws, n_points, n_classes)`` (or, for
  regression, per-draw means and noise sds);
- :class:`BayesianMLPClassifier` and :class:`BayesianMLPRegressor` — the scikit-learn
  estimators on top of them; :class:`BayesianPipeline` (and
  :func:`make_tabular_pipeline` for a table) keeps their Bayesian methods behind
  preprocessing steps.

Uncertainty and calibration metrics (expected calibration error, reliability curves,
risk–coverage, OOD AUROC, NLL, Brier score, interval coverage, CRPS) are plain NumPy /
scikit-learn functions of ``(y_true, predictions)`` in the submodule
:mod:`pymc_bnn.metrics` (``from pymc_bnn import metrics``), not re-exported here.
"""

from pymc_bnn._runtime.lazy import lazy_exports

# Names are imported on first use (PEP 562), so that ``import pymc_bnn`` and the
# command line start without importing PyMC until a model is needed.
_EXPORTS = {
    "BayesianMLPClassifier": "pymc_bnn.estimators._classifier",
    "BayesianMLPRegressor": "pymc_bnn.estimators._regressor",
    "Posterior": "pymc_bnn.inference",
    "fit": "pymc_bnn.inference",
    "sample_more": "pymc_bnn.inference",
    "NetworkSpec": "pymc_bnn.network.spec",
    "build_model": "pymc_bnn.network.model",
    "default_initial_values": "pymc_bnn.network.model",
    "forward": "pymc_bnn.network.model",
    "network_spec": "pymc_bnn.network.model",
    "PosteriorPredictive": "pymc_bnn.predictive._predictive",
    "posterior_predictive": "pymc_bnn.predictive._predictive",
    "summarize_proba": "pymc_bnn.predictive._predictive",
    "BayesianPipeline": "pymc_bnn.tabular.pipeline",
    "make_tabular_pipeline": "pymc_bnn.tabular.pipeline",
    # submodules, by the names they had before the stages became subpackages
    "metrics": "pymc_bnn.metrics",
    "tabular": "pymc_bnn.tabular",
    "datasets": "pymc_bnn.datasets",
    "plotting": "pymc_bnn.plotting",
    "exceptions": "pymc_bnn.exceptions",
    "persistence": "pymc_bnn.estimators.persistence",
    "report": "pymc_bnn.plotting.report",
    "evidence": "pymc_bnn.inference.evidence",
    "pipeline": "pymc_bnn.tabular.pipeline",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "BayesianMLPClassifier",
    "BayesianMLPRegressor",
    "BayesianPipeline",
    "NetworkSpec",
    "Posterior",
    "PosteriorPredictive",
    "build_model",
    "default_initial_values",
    "fit",
    "forward",
    "make_tabular_pipeline",
    "network_spec",
    "posterior_predictive",
    "sample_more",
    "summarize_proba",
]

__version__ = "0.2.0"
