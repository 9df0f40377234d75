"""A scikit-learn Pipeline that keeps the Bayesian estimators' own methods.

``sklearn.pipeline.Pipeline`` forwards ``predict``, ``predict_proba`` and ``score``
through its transformers, but not the methods only a Bayesian estimator has:
``predict_uncertainty``, ``predict_interval``, ``sample_proba``, ``sample_y`` and
``log_predictive_density``. :class:`BayesianPipeline` forwards them too (each exists on
the pipeline exactly when its last step has it), and saves and loads a tabular
pipeline (:class:`~pymc_bnn.tabular.TabularPreprocessor` then a Bayesian MLP) as one
no-pickle model file, the one the ``pymc-bnn`` command line writes.

Examples
--------
>>> from sklearn.preprocessing import StandardScaler
>>> from pymc_bnn import BayesianMLPRegressor
>>> pipe = BayesianPipeline([("scale", StandardScaler()),
...                          ("model", BayesianMLPRegressor(random_state=0))])
>>> hasattr(pipe, "predict_interval"), hasattr(pipe, "sample_proba")
(True, False)
"""

from __future__ import annotations

from pathlib import Path

from sklearn.pipeline import Pipeline
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from pymc_bnn.tabular._transform import TabularPreprocessor

__all__ = ["BayesianPipeline", "load_pipeline", "make_tabular_pipeline", "save_pipeline"]


def _last_step_has(method: str):
    """Whether the pipeline's last step has ``method`` (for ``available_if``: the
    pipeline then has it too, so ``hasattr`` tells the truth)."""

    def check(pipeline) -> bool:
        return hasattr(pipeline._final_estimator, method)

    return check


class BayesianPipeline(Pipeline):
    """A :class:`sklearn.pipeline.Pipeline` whose last step is a Bayesian MLP.

    Everything a ``Pipeline`` does, plus the Bayesian estimators' own methods: each
    transforms ``X`` through the fitted steps before the last one, then calls the last
    step's method with the remaining arguments (e.g. ``groups``, ``coverage``,
    ``n_draws``). ``predict(X, return_std=True)`` works as in any pipeline.

    Parameters
    ----------
    steps, memory, verbose
        As for :class:`sklearn.pipeline.Pipeline`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> from pymc_bnn import BayesianMLPClassifier
    >>> X = np.random.default_rng(0).normal(size=(60, 2)) * 100
    >>> y = (X[:, 0] > 0).astype(int)
    >>> pipe = BayesianPipeline([("scale", StandardScaler()), ("model",
    ...     BayesianMLPClassifier((4,), n_iter=500, posterior_temperature=1.0,
    ...                           random_state=0))]).fit(X, y)  # doctest: +SKIP
    >>> sorted(pipe.predict_uncertainty(X[:3]))  # doctest: +SKIP
    ['entropy', 'mean', 'mutual_info', 'std']
    """

    def _transformed(self, X):
        check_is_fitted(self)
        for _, _, step in self._iter(with_final=False, filter_passthrough=True):
            X = step.transform(X)
        return X

    @available_if(_last_step_has("predict_uncertainty"))
    def predict_uncertainty(self, X, **kwargs):
        """The last step's ``predict_uncertainty`` of the transformed ``X``."""
        return self._final_estimator.predict_uncertainty(self._transformed(X), **kwargs)

    @available_if(_last_step_has("predict_interval"))
    def predict_interval(self, X, **kwargs):
        """The last step's ``predict_interval`` of the transformed ``X``."""
        return self._final_estimator.predict_interval(self._transformed(X), **kwargs)

    @available_if(_last_step_has("sample_proba"))
    def sample_proba(self, X, **kwargs):
        """The last step's ``sample_proba`` of the transformed ``X``."""
        return self._final_estimator.sample_proba(self._transformed(X), **kwargs)

    @available_if(_last_step_has("sample_y"))
    def sample_y(self, X, **kwargs):
        """The last step's ``sample_y`` of the transformed ``X``."""
        return self._final_estimator.sample_y(self._transformed(X), **kwargs)

    @available_if(_last_step_has("log_predictive_density"))
    def log_predictive_density(self, X, y, **kwargs):
        """The last step's ``log_predictive_density`` of the transformed ``X`` and
        ``y`` (per row, in ``y``'s units)."""
        return self._final_estimator.log_predictive_density(self._transformed(X), y, **kwargs)

    def save(self, path, *, info: dict | None = None) -> Path:
        """Write a fitted tabular pipeline to one model file (:func:`save_pipeline`)."""
        return save_pipeline(self, path, info=info)

    @classmethod
    def load(cls, path) -> BayesianPipeline:
        """Read a pipeline written by :meth:`save` (:func:`load_pipeline`)."""
        return load_pipeline(path)


def make_tabular_pipeline(estimator, **preprocessor_params) -> BayesianPipeline:
    """A :class:`BayesianPipeline`: :class:`TabularPreprocessor`, then ``estimator``.

    Parameters
    ----------
    estimator : BayesianMLPClassifier or BayesianMLPRegressor
    **preprocessor_params
        Passed to :class:`TabularPreprocessor` (``numeric``, ``categorical``,
        ``as_categorical``, ``max_categories``, ``keep``).

    Returns
    -------
    BayesianPipeline with steps ``"preprocess"`` and ``"model"``; save it with its
    ``save`` method (:func:`save_pipeline`).

    Examples
    --------
    >>> from pymc_bnn import BayesianMLPClassifier
    >>> pipe = make_tabular_pipeline(BayesianMLPClassifier(random_state=0))
    >>> [name for name, _ in pipe.steps]
    ['preprocess', 'model']
    """
    return BayesianPipeline(
        [("preprocess", TabularPreprocessor(**preprocessor_params)), ("model", estimator)]
    )


def _tabular_parts(pipeline):
    from pymc_bnn.estimators._base import BayesianMLPBase

    steps = getattr(pipeline, "steps", None)
    if (
        steps is None
        or len(steps) != 2
        or not isinstance(steps[0][1], TabularPreprocessor)
        or not isinstance(steps[1][1], BayesianMLPBase)
    ):
        raise TypeError(
            "save_pipeline takes a Pipeline of a TabularPreprocessor and a "
            "BayesianMLPClassifier or BayesianMLPRegressor "
            "(see make_tabular_pipeline)."
        )
    return steps[0][1], steps[1][1]


def save_pipeline(pipeline: Pipeline, path, *, info: dict | None = None) -> Path:
    """Write a fitted tabular pipeline to one netCDF-4 model file (no pickle).

    The network is stored as by ``estimator.save``; the preprocessing state
    (:meth:`TabularPreprocessor.get_state`) and ``info`` (a JSON-able dict, e.g. how
    the model was made) go into the file's JSON metadata.

    Returns
    -------
    pathlib.Path
    """
    from pymc_bnn.estimators import persistence

    pre, est = _tabular_parts(pipeline)
    check_is_fitted(pre)
    return persistence.save(
        est, path, extra={"preprocessing": pre.get_state(), "info": dict(info or {})}
    )


def load_pipeline(path) -> BayesianPipeline:
    """Read a pipeline written by :func:`save_pipeline` (reads arrays and JSON only).

    Returns
    -------
    BayesianPipeline
        Steps ``"preprocess"`` (fitted :class:`TabularPreprocessor`) and ``"model"``.
        The ``info`` saved with it is in
        ``pymc_bnn.estimators.persistence.read_metadata(path)["extra"]["info"]``.

    Raises
    ------
    FileNotFoundError, ValueError
        If the file is missing, damaged, not a pymc_bnn model file, or holds an
        estimator saved without preprocessing.
    """
    from pymc_bnn.estimators import persistence
    from pymc_bnn.estimators._classifier import BayesianMLPClassifier
    from pymc_bnn.estimators._regressor import BayesianMLPRegressor

    est, extra = persistence.load_any(path, (BayesianMLPClassifier, BayesianMLPRegressor))
    if "preprocessing" not in extra:
        raise ValueError(
            f"{path} holds a {type(est).__name__} saved without preprocessing "
            "(by its save method); load it with "
            f"{type(est).__name__}.load, or save a tabular pipeline with "
            "pymc_bnn.tabular.pipeline.save_pipeline."
        )
    try:
        pre = TabularPreprocessor.from_state(extra["preprocessing"])
    except ValueError as err:
        raise ValueError(f"{path} is a damaged pymc_bnn model file: {err}") from None
    if pre.get_feature_names_out().shape[0] != est.n_features_in_:
        raise ValueError(
            f"{path} is a damaged pymc_bnn model file: the preprocessing makes "
            f"{pre.get_feature_names_out().shape[0]} features, the network "
            f"takes {est.n_features_in_}."
        )
    return BayesianPipeline([("preprocess", pre), ("model", est)])
