"""Figures of fitted classifiers: uncertainty maps (per model or per task), loss curves,
reliability diagrams, and posterior intervals of scalar parameters; and figures of
predictions a user already holds: risk-coverage curves, uncertainty histograms and
predicted-vs-actual plots of regressions (these draw what :mod:`pymc_bnn.metrics`
computes).

The functions live in :mod:`pymc_bnn.plotting._maps` (uncertainty maps),
:mod:`pymc_bnn.plotting._fits` (loss curves, posterior intervals) and
:mod:`pymc_bnn.plotting._predictions` (reliability diagrams, risk-coverage curves,
uncertainty histograms, predicted vs actual); import them from here.

Every function takes an optional ``ax`` (a sequence of Axes for :func:`compare_maps` and
:func:`task_maps`), draws on it, and returns it (or its Figure); none calls
``plt.show()``. Maps have labelled axes and a colour bar.

The maps work for any fitted 2-feature classifier: a
:class:`pymc_bnn.BayesianMLPClassifier` (through ``predict_uncertainty``) or, for
``kind="mean"`` and ``kind="entropy"``, any estimator with ``predict_proba`` (e.g.
scikit-learn's ``MLPClassifier``, whose "entropy" is that of its one softmax output).

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from pymc_bnn import BayesianMLPClassifier
>>> from pymc_bnn.datasets import moons_split
>>> from pymc_bnn.plotting import uncertainty_map
>>> X_train, X_test, y_train, y_test = moons_split()
>>> clf = BayesianMLPClassifier(n_iter=2000, random_state=0).fit(X_train, y_train)
>>> ax = uncertainty_map(clf, kind="std", X=X_test, y=y_test, resolution=40)
"""

from __future__ import annotations

from pymc_bnn.plotting._fits import loss_curve, posterior_intervals
from pymc_bnn.plotting._maps import KINDS, compare_maps, grid_2d, task_maps, uncertainty_map
from pymc_bnn.plotting._predictions import (
    calibration_table,
    predicted_vs_actual,
    reliability_diagram,
    risk_coverage_plot,
    uncertainty_histogram,
)

__all__ = [
    "KINDS",
    "calibration_table",
    "compare_maps",
    "grid_2d",
    "loss_curve",
    "posterior_intervals",
    "predicted_vs_actual",
    "reliability_diagram",
    "risk_coverage_plot",
    "task_maps",
    "uncertainty_histogram",
    "uncertainty_map",
]
