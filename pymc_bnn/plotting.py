"""Figures of fitted classifiers: uncertainty maps (per model or per task), loss curves,
reliability diagrams, and posterior intervals of scalar parameters; and figures of
predictions a user already holds: risk-coverage curves, uncertainty histograms and
predicted-vs-actual plots of regressions (these draw what :mod:`pymc_bnn.metrics`
computes).

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
>>> from pymc_bnn.cli import moons_split
>>> from pymc_bnn.plotting import uncertainty_map
>>> X_train, X_test, y_train, y_test = moons_split()
>>> clf = BayesianMLPClassifier(n_iter=2000, random_state=0).fit(X_train, y_train)
>>> ax = uncertainty_map(clf, kind="std", X=X_test, y=y_test, resolution=40)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from pymc_bnn._validation import check_positive_int
from pymc_bnn.metrics import interval_coverage, reliability_curve, risk_coverage_curve

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

#: What an uncertainty map can show, with its colour-bar label.
KINDS = {
    "mean": "posterior predictive mean P(class)",
    "std": "posterior predictive std of P(class)",
    "entropy": "predictive entropy (nats)",
    "mutual_info": "mutual information (nats)",
}

#: Kinds that need posterior draws (``predict_uncertainty``), not only ``predict_proba``.
_BAYESIAN_KINDS = ("std", "mutual_info")
_N_LEVELS = 21


def grid_2d(lims=(-3.0, 3.0), resolution: int = 100):
    """A square grid over ``lims`` in both coordinates.

    Parameters
    ----------
    lims : (float, float)
        Lower and upper limit of both coordinates.
    resolution : int
        Grid points per axis.

    Returns
    -------
    xx, yy : arrays of shape (resolution, resolution)
    points : array of shape (resolution**2, 2)
        ``np.column_stack([xx.ravel(), yy.ravel()])``.

    Examples
    --------
    >>> xx, yy, points = grid_2d((-1, 1), 5)
    >>> xx.shape, points.shape
    ((5, 5), (25, 2))
    """
    lo, hi = lims
    axis = np.linspace(lo, hi, resolution)
    xx, yy = np.meshgrid(axis, axis)
    return xx, yy, np.column_stack([xx.ravel(), yy.ravel()])


def _cmap(kind: str):
    if kind == "mean":
        return sns.diverging_palette(250, 12, s=85, l=25, as_cmap=True)
    return sns.cubehelix_palette(light=1, as_cmap=True)


def _class_str(c) -> str:
    """A class label for a figure: ``1`` rather than numpy's ``np.int64(1)``."""
    c = c.item() if isinstance(c, np.generic) else c
    return repr(c) if isinstance(c, str) else str(c)


def _check_kind(kind) -> str:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}; got {kind!r}.")
    return kind


def _check_2d_classifier(clf, kind: str) -> None:
    n_features = getattr(clf, "n_features_in_", 2)
    if n_features != 2:
        raise ValueError(
            f"an uncertainty map needs a classifier fit on 2 features; "
            f"{type(clf).__name__} has n_features_in_={n_features}."
        )
    if not hasattr(clf, "predict_uncertainty"):
        if kind in _BAYESIAN_KINDS:
            raise ValueError(
                f"kind={kind!r} needs posterior draws, i.e. a classifier with "
                f"predict_uncertainty (such as pymc_bnn.BayesianMLPClassifier); "
                f"{type(clf).__name__} has only predict_proba: use kind='mean' or 'entropy'."
            )
        if not hasattr(clf, "predict_proba"):
            raise ValueError(
                f"an uncertainty map needs a classifier with predict_uncertainty or "
                f"predict_proba; {type(clf).__name__} has neither."
            )


def _map_values(clf, points: np.ndarray, kind: str, class_index: int | None):
    """Values of ``kind`` at ``points`` and their colour-bar label.

    Returns
    -------
    values : array of shape (n_points,)
    label : str
    n_classes : int
    """
    if hasattr(clf, "predict_uncertainty"):
        summary = clf.predict_uncertainty(points)
        label = KINDS[kind]
    else:  # a point-estimate classifier: its probabilities are the "mean"
        mean = np.asarray(clf.predict_proba(points), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(mean > 0, mean * np.log(mean), 0.0)
        summary = {"mean": mean, "entropy": -plogp.sum(axis=1)}
        label = {"mean": "predicted P(class)", "entropy": "softmax entropy (nats)"}[kind]
    n_classes = summary["mean"].shape[1]
    if kind in ("mean", "std"):
        if class_index is None and n_classes > 2:
            col = summary["mean"].argmax(axis=1)
            values = np.take_along_axis(summary[kind], col[:, None], axis=1)[:, 0]
            label = label.replace("P(class)", "max-class P")
        else:
            k = 1 if class_index is None else class_index
            if not -n_classes <= k < n_classes:
                raise ValueError(
                    f"class_index must be in [0, {n_classes - 1}]; got {class_index!r}."
                )
            values = summary[kind][:, k]
            label = label.replace("P(class)", f"P(y = {_class_str(clf.classes_[k])})")
    else:
        values = summary[kind]
    return np.asarray(values, dtype=float), label, n_classes


def _levels(kind: str, n_classes: int, vmax: float | None, values) -> np.ndarray:
    if vmax is None:
        if kind == "mean" and n_classes == 2:
            vmax = 1.0
        else:
            vmax = float(np.nanmax(values))
    return np.linspace(0.0, max(float(vmax), 1e-12), _N_LEVELS)


def _scatter(ax, X, y, *, legend: bool = True, s: float = 14, hue_order=None) -> None:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X to overlay must have shape (n_points, 2); got {X.shape}.")
    hue = None if y is None else np.asarray(y)
    palette = None
    if hue is not None:
        if hue_order is None:
            palette = sns.color_palette("colorblind", n_colors=len(np.unique(hue)))
        else:  # fixed colours per class, even if a subset lacks some classes
            colours = sns.color_palette("colorblind", n_colors=len(hue_order))
            palette = dict(zip(hue_order, colours))
            hue_order = list(hue_order)
    sns.scatterplot(x=X[:, 0], y=X[:, 1], hue=hue, palette=palette, s=s, hue_order=hue_order,
                    edgecolor="white", linewidth=0.3, ax=ax, legend=legend and y is not None)
    if legend and y is not None and ax.get_legend() is not None:
        ax.get_legend().set_title("class")


def _draw_map(ax, xx, yy, Z, *, kind, levels, lims, title):
    extend = "max" if np.nanmax(Z) > levels[-1] else "neither"
    cs = ax.contourf(xx, yy, Z, levels=levels, cmap=_cmap(kind), extend=extend)
    ax.set(xlim=lims, ylim=lims, xlabel="$x_1$", ylabel="$x_2$", title=title)
    ax.set_aspect("equal")
    return cs


def _colorbar(fig, cs, ax, label, **kwargs):
    """A colour bar with a few round ticks (not one per contour level)."""
    cb = fig.colorbar(cs, ax=ax, label=label, **kwargs)
    ticks = MaxNLocator(nbins=5).tick_values(cs.levels[0], cs.levels[-1])
    cb.set_ticks(ticks[(ticks >= cs.levels[0]) & (ticks <= cs.levels[-1] + 1e-12)])
    return cb


def uncertainty_map(
    clf,
    *,
    kind: str = "mean",
    X=None,
    y=None,
    lims=(-3.0, 3.0),
    resolution: int = 100,
    class_index: int | None = None,
    ax=None,
    colorbar: bool = True,
    title: str | None = None,
    vmax: float | None = None,
):
    """Map of the (posterior) predictive of a fitted 2-feature classifier.

    Parameters
    ----------
    clf : fitted classifier on 2 features
        With ``predict_uncertainty`` and ``classes_`` (e.g.
        :class:`pymc_bnn.BayesianMLPClassifier`) for every ``kind``; any classifier with
        ``predict_proba`` for ``kind="mean"`` or ``"entropy"``.
    kind : {"mean", "std", "entropy", "mutual_info"}
        ``mean``/``std``: of the probability of class ``classes_[class_index]``
        (default: the second class of a binary problem; for more classes, the
        largest class probability and its std). ``entropy``: total predictive
        uncertainty; ``mutual_info``: its epistemic part (nats).
    X : array of shape (n_points, 2), optional
        Points to overlay.
    y : array of shape (n_points,), optional
        Their labels (colours the points).
    lims : (float, float)
        Range of both axes.
    resolution : int
        Grid points per axis (the classifier is evaluated at ``resolution**2`` points).
    class_index : int, optional
        Column of ``classes_`` shown by ``mean``/``std``.
    ax : matplotlib Axes, optional
        Drawn on if given, else a new figure is made.
    colorbar : bool, default True
    title : str, optional
        Default: the colour-bar label.
    vmax : float, optional
        Top of the colour scale (default: 1 for a binary mean, else the map's maximum).
        Pass the same value to several maps to compare them on one scale.

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        For an unknown ``kind``, a classifier not fit on 2 features, or ``std`` /
        ``mutual_info`` asked of a classifier without ``predict_uncertainty``.
    """
    kind = _check_kind(kind)
    _check_2d_classifier(clf, kind)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 5))
    xx, yy, points = grid_2d(lims, resolution)
    values, label, n_classes = _map_values(clf, points, kind, class_index)
    levels = _levels(kind, n_classes, vmax, values)
    cs = _draw_map(ax, xx, yy, values.reshape(xx.shape), kind=kind, levels=levels, lims=lims,
                   title=title if title is not None else label)
    if colorbar:
        _colorbar(ax.figure, cs, ax, label)
    if X is not None:
        _scatter(ax, X, y)
    return ax


def compare_maps(
    classifiers: Mapping[str, object],
    *,
    kind: str = "std",
    X=None,
    y=None,
    lims=(-3.0, 3.0),
    resolution: int = 100,
    class_index: int | None = None,
    share_scale: bool = True,
    ax: Sequence | None = None,
    panel_size: float = 4.0,
    suptitle: str | None = None,
):
    """One uncertainty map per classifier, side by side, on a shared colour scale.

    Parameters
    ----------
    classifiers : dict of str -> fitted 2-feature classifier
        Panel title -> classifier (see :func:`uncertainty_map` for what each ``kind``
        needs), drawn left to right in the dict's order.
    kind : {"mean", "std", "entropy", "mutual_info"}, default "std"
    X : array of shape (n_points, 2), optional
        Points overlaid on every panel.
    y : array of shape (n_points,), optional
        Their labels.
    lims, resolution, class_index
        As in :func:`uncertainty_map`.
    share_scale : bool, default True
        One colour scale (``0`` to the largest value over all panels) and one colour
        bar for all panels, so that colours mean the same everywhere; False gives each
        panel its own scale and colour bar.
    ax : sequence of matplotlib Axes, optional
        One Axes per classifier (e.g. a row from ``plt.subplots``); default: a new
        figure with one row of panels.
    panel_size : float
        Width of one panel in inches (new figure only).
    suptitle : str, optional

    Returns
    -------
    matplotlib Figure
        Its first ``len(classifiers)`` axes are the maps, in order.

    Raises
    ------
    ValueError
        For an empty ``classifiers``, an unknown ``kind``, a classifier not fit on 2
        features, or ``len(ax) != len(classifiers)``.

    Examples
    --------
    >>> fig = compare_maps({"ADVI": advi_clf, "NUTS": nuts_clf}, kind="std")  # doctest: +SKIP
    """
    kind = _check_kind(kind)
    if not isinstance(classifiers, Mapping) or len(classifiers) == 0:
        raise ValueError("classifiers must be a non-empty dict of name -> fitted classifier.")
    for clf in classifiers.values():
        _check_2d_classifier(clf, kind)
    n = len(classifiers)
    if ax is None:
        fig, axes = plt.subplots(1, n, figsize=(panel_size * n + 1.2, panel_size),
                                 sharex=True, sharey=True, squeeze=False,
                                 layout="constrained")
        axes = list(axes[0])
    else:
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != n:
            raise ValueError(f"ax must hold one Axes per classifier ({n}); got {len(axes)}.")
        fig = axes[0].figure

    xx, yy, points = grid_2d(lims, resolution)
    maps = [_map_values(clf, points, kind, class_index) for clf in classifiers.values()]
    labels = {label for _, label, _ in maps}
    shared_label = labels.pop() if len(labels) == 1 else KINDS[kind]
    vmax = None
    if share_scale:
        all_binary_mean = kind == "mean" and all(k == 2 for _, _, k in maps)
        vmax = 1.0 if all_binary_mean else max(float(np.nanmax(v)) for v, _, _ in maps)
    for i, (a, name, (values, label, n_classes)) in enumerate(zip(axes, classifiers, maps)):
        levels = _levels(kind, n_classes, vmax if share_scale else None, values)
        cs = _draw_map(a, xx, yy, values.reshape(xx.shape), kind=kind, levels=levels,
                       lims=lims, title=name)
        if not share_scale:
            _colorbar(fig, cs, a, label)
        if X is not None:
            _scatter(a, X, y, legend=i == 0)
        if i > 0:
            a.set_ylabel("")
    if share_scale:
        _colorbar(fig, cs, axes, shared_label, shrink=0.9)
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig


class _GroupView:
    """One group of a multi-task classifier, seen as a plain 2-feature classifier: its
    predictions pass ``groups=[group] * n_points`` (for :func:`task_maps`)."""

    def __init__(self, clf, group):
        self._clf, self._group = clf, group
        self.classes_ = clf.classes_
        self.n_features_in_ = getattr(clf, "n_features_in_", 2)
        if hasattr(clf, "predict_uncertainty"):
            self.predict_uncertainty = self._predict_uncertainty
        else:
            self.predict_proba = self._predict_proba

    def _groups(self, X):
        groups = np.empty(len(X), dtype=np.asarray(self._clf.groups_).dtype)
        groups[:] = self._group
        return groups

    def _predict_uncertainty(self, X):
        return self._clf.predict_uncertainty(X, groups=self._groups(X))

    def _predict_proba(self, X):
        return self._clf.predict_proba(X, groups=self._groups(X))


def task_maps(
    models,
    *,
    kind: str = "mean",
    X=None,
    y=None,
    groups=None,
    tasks=None,
    titles: Mapping | None = None,
    lims=(-3.0, 3.0),
    resolution: int = 60,
    class_index: int | None = None,
    vmax: float | None = None,
    ncols: int = 6,
    ax: Sequence | None = None,
    panel_size: float = 1.7,
    colorbar: bool = True,
    suptitle: str | None = None,
):
    """One small map per task (group) of a multi-task problem, on one colour scale.

    Either one hierarchical classifier, fit with ``fit(X, y, groups=...)``, whose panel
    for task ``t`` predicts with ``groups=t`` (that task's weights); or one classifier
    per task, e.g. separate networks each fit on its own task's rows.

    Parameters
    ----------
    models : fitted classifier with ``groups_``, or dict of task -> fitted classifier
        All on 2 features (see :func:`uncertainty_map` for what each ``kind`` needs).
    kind : {"mean", "std", "entropy", "mutual_info"}, default "mean"
    X : array of shape (n_points, 2), optional
        Points to overlay; each panel shows the rows of its task (needs ``groups``).
    y : array of shape (n_points,), optional
        Their labels (colours the points, one colour per class on every panel).
    groups : array of shape (n_points,), optional
        Task of each row of ``X``.
    tasks : sequence, optional
        Tasks to draw, in order; default every task of ``models`` (``groups_`` of a
        hierarchical classifier, the keys of a dict).
    titles : dict of task -> str, optional
        Panel titles; default ``"task {t}"``.
    lims, resolution, class_index
        As in :func:`uncertainty_map` (``resolution`` is per panel: keep it small).
    vmax : float, optional
        Top of the shared colour scale (default: 1 for a binary mean, else the largest
        value over all panels). Pass the same value to several figures to compare them.
    ncols : int, default 6
        Panels per row (new figure only).
    ax : sequence of matplotlib Axes, optional
        At least one Axes per task (e.g. ``fig.subfigures(...)[0].subplots(3, 6)``);
        extra Axes are hidden. Default: a new figure.
    panel_size : float
        Size of one panel in inches (new figure only).
    colorbar : bool, default True
        One colour bar for all panels.
    suptitle : str, optional

    Returns
    -------
    matplotlib Figure (or SubFigure, if ``ax`` lives in one)
        Its first ``len(tasks)`` axes are the maps, in order (then the colour bar).

    Raises
    ------
    ValueError
        For an unknown ``kind``; a single classifier fit without groups; a task that
        ``models`` does not have; ``X`` without ``groups``; too few ``ax``.

    Examples
    --------
    >>> fig = task_maps(hier_clf, X=X_train, y=y_train, groups=g_train)  # doctest: +SKIP
    >>> fig = task_maps({t: clf_t for t, clf_t in separate.items()})  # doctest: +SKIP
    """
    kind = _check_kind(kind)
    if isinstance(models, Mapping):
        if len(models) == 0:
            raise ValueError("models must be a fitted classifier or a non-empty dict of "
                             "task -> fitted classifier.")
        known = list(models)
        view = models.__getitem__
    else:
        if not hasattr(models, "groups_"):
            raise ValueError(
                f"a single classifier must be fit with groups (fit(X, y, groups=...)); "
                f"{type(models).__name__} has no groups_. For one classifier per task, "
                f"pass a dict of task -> classifier."
            )
        known = list(np.asarray(models.groups_))
        view = lambda t: _GroupView(models, t)  # noqa: E731
    tasks = known if tasks is None else list(tasks)
    missing = [t for t in tasks if t not in known]
    if missing or not tasks:
        raise ValueError(f"tasks must be a non-empty subset of {known}; unknown: {missing}.")
    if X is not None and groups is None:
        raise ValueError("X to overlay needs groups= (the task of each row).")
    clfs = [view(t) for t in tasks]
    for clf in clfs:
        _check_2d_classifier(clf, kind)

    n = len(tasks)
    if ax is None:
        ncols = max(1, min(int(ncols), n))
        nrows = -(-n // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(panel_size * ncols + 1.0,
                                                        panel_size * nrows + 0.3),
                                 sharex=True, sharey=True, squeeze=False,
                                 layout="constrained")
        ncols_grid = ncols
        axes = list(axes.ravel())
    else:
        grid = np.asarray(ax, dtype=object)
        ncols_grid = grid.shape[-1] if grid.ndim == 2 else len(grid.ravel())
        axes = list(grid.ravel())
        if len(axes) < n:
            raise ValueError(f"ax must hold at least one Axes per task ({n}); got {len(axes)}.")
        fig = axes[0].figure
    for extra in axes[n:]:
        extra.set_visible(False)
    axes = axes[:n]

    xx, yy, points = grid_2d(lims, resolution)
    maps = [_map_values(clf, points, kind, class_index) for clf in clfs]
    labels = {label for _, label, _ in maps}
    label = labels.pop() if len(labels) == 1 else KINDS[kind]
    if vmax is None:
        binary_mean = kind == "mean" and all(k == 2 for _, _, k in maps)
        vmax = 1.0 if binary_mean else max(float(np.nanmax(v)) for v, _, _ in maps)
    X_all = None if X is None else np.asarray(X)
    g_all = None if groups is None else np.asarray(groups)
    hue_order = None if y is None else np.unique(np.asarray(y))
    titles = {} if titles is None else titles
    for i, (a, task, (values, _, n_classes)) in enumerate(zip(axes, tasks, maps)):
        levels = _levels(kind, n_classes, vmax, values)
        cs = _draw_map(a, xx, yy, values.reshape(xx.shape), kind=kind, levels=levels,
                       lims=lims, title=titles.get(task, f"task {_class_str(task)}"))
        a.title.set_fontsize("small")
        if X_all is not None:
            rows = g_all == task
            _scatter(a, X_all[rows], None if y is None else np.asarray(y)[rows],
                     legend=False, s=9, hue_order=hue_order)
        a.tick_params(labelbottom=False, labelleft=False, length=0)
        a.set(xticks=[], yticks=[])
        col = i % ncols_grid
        if i + ncols_grid < n:  # a panel below: its x label is enough
            a.set_xlabel("")
        if col != 0:
            a.set_ylabel("")
    if colorbar:
        cb = _colorbar(fig, cs, axes, label, shrink=0.9)
        cb.ax.yaxis.label.set_fontsize("small")
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig


def _posterior_draws(source, name: str) -> np.ndarray:
    """The draws of scalar variable ``name`` from an idata-like ``source`` or a dict."""
    if hasattr(source, "posterior"):
        post = source.posterior
        available = list(getattr(post, "data_vars", post))
    elif isinstance(source, Mapping):
        post, available = source, list(source)
    else:
        raise ValueError(
            f"each posterior must be an ArviZ DataTree / InferenceData (e.g. clf.idata_) "
            f"or a dict of name -> draws; got {type(source).__name__}."
        )
    if name not in available:
        raise ValueError(f"no variable {name!r} in the posterior; it has {available}.")
    var = post[name]
    dims = getattr(var, "dims", None)
    if dims is not None and set(dims) - {"chain", "draw"}:
        raise ValueError(
            f"{name!r} has dims {dims}: posterior_intervals plots scalar variables (only "
            f"chain and draw dimensions)."
        )
    draws = np.asarray(var, dtype=float).ravel()
    if dims is None and np.ndim(var) > 1:
        raise ValueError(f"{name!r} must be a 1-D array of draws; got shape {np.shape(var)}.")
    return draws


def posterior_intervals(
    posteriors: Mapping[str, object],
    var_names: Sequence[str],
    *,
    prob: float = 0.94,
    log: bool = False,
    ax=None,
    xlabel: str = "posterior value",
    title: str | None = None,
):
    """Posterior mean and central interval of scalar variables, for one or more fits.

    One row per variable (top to bottom in ``var_names`` order); each fit is a marker
    at the posterior mean with a line over the central ``prob`` interval, offset
    vertically so that fits of the same variable can be compared.

    Parameters
    ----------
    posteriors : dict of str -> posterior
        Legend label -> an ArviZ DataTree / InferenceData with a ``posterior`` group
        (e.g. ``clf.idata_``), or a dict of variable name -> 1-D array of draws.
    var_names : sequence of str
        Scalar variables (e.g. a hierarchical network's group spreads ``w0_sd``,
        ``w1_sd``, ... or Neal's precisions ``w0_precision``, ...).
    prob : float, default 0.94
        Probability mass of the central interval (quantiles ``(1 - prob) / 2`` and
        ``(1 + prob) / 2`` of the draws).
    log : bool, default False
        Logarithmic x axis (for precisions or spreads over orders of magnitude).
    ax : matplotlib Axes, optional
    xlabel : str
    title : str, optional

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        For an empty ``posteriors`` or ``var_names``, ``prob`` outside (0, 1), a missing
        or non-scalar variable, or (``log=True``) non-positive draws.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = posterior_intervals({"fit": {"a_sd": [0.5, 1.0, 1.5]}}, ["a_sd"])
    """
    if not isinstance(posteriors, Mapping) or len(posteriors) == 0:
        raise ValueError("posteriors must be a non-empty dict of label -> posterior.")
    var_names = [var_names] if isinstance(var_names, str) else list(var_names)
    if not var_names:
        raise ValueError("var_names must name at least one variable.")
    if not 0.0 < float(prob) < 1.0:
        raise ValueError(f"prob must be in (0, 1); got {prob!r}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.45 * len(var_names) * len(posteriors) + 1.5))
    n_fits = len(posteriors)
    # the first fit on top within each variable's row, as in the legend
    offsets = ((n_fits - 1) / 2 - np.arange(n_fits)) * min(0.6 / max(n_fits - 1, 1), 0.25)
    colours = sns.color_palette("colorblind", n_colors=n_fits)
    q = [(1.0 - prob) / 2, (1.0 + prob) / 2]
    for j, (label, source) in enumerate(posteriors.items()):
        for i, name in enumerate(var_names):
            draws = _posterior_draws(source, name)
            if log and np.any(draws <= 0):
                raise ValueError(f"log=True needs positive draws; {name!r} of {label!r} "
                                 f"has values <= 0.")
            lo, hi = np.quantile(draws, q)
            y = -i + offsets[j]
            ax.plot([lo, hi], [y, y], color=colours[j], lw=2, solid_capstyle="butt")
            ax.plot([draws.mean()], [y], marker="o", color=colours[j], ms=6,
                    label=label if i == 0 else None, ls="none")
    ax.set_yticks(-np.arange(len(var_names)), var_names)
    ax.set_ylim(-len(var_names) + 0.5, 0.5)
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel=f"{xlabel} (mean, {prob:.0%} interval)",
           title=title if title is not None else "Posterior intervals")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return ax


def loss_curve(loss, *, window: int = 200, ax=None, label: str | None = None):
    """Plot a loss (negative ELBO) history, raw and smoothed by a running mean.

    Parameters
    ----------
    loss : array of shape (n_steps,)
    window : int
        Width of the running mean (drawn only if ``n_steps >= window > 1``).
    ax : matplotlib Axes, optional
    label : str, optional
        Legend label of this curve (call again on the same ``ax`` to overlay runs).

    Returns
    -------
    matplotlib Axes
    """
    loss = np.asarray(loss, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    steps = np.arange(1, loss.size + 1)
    raw = ax.plot(steps, loss, alpha=0.3, lw=0.7, gid="pymc_bnn-loss-raw",
                  label=None if label is None else f"{label} (raw)")
    if loss.size >= window > 1:
        smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1 :], smooth, color=raw[0].get_color(), lw=1.8,
                label=f"{label or 'loss'} ({window}-step mean)")
    # y range: the bulk of every raw curve on this ax (several runs may share it)
    ranges = []
    for line in ax.lines:
        if line.get_gid() == "pymc_bnn-loss-raw":
            values = np.asarray(line.get_ydata(), dtype=float)
            values = values[np.isfinite(values)]
            if values.size:
                ranges.append(np.percentile(values, [0.5, 99.0]))
    lo, hi = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else (0.0, 1.0)
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    ax.set(xlabel="optimisation step", ylabel="negative ELBO (full-data units)",
           ylim=(lo - pad, hi + pad))
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    return ax


def calibration_table(y_true, proba, *, n_bins: int = 10, classes=None,
                      confidence: str = "auto") -> dict:
    """Binned calibration of predicted probabilities (the numbers of a reliability diagram).

    :func:`pymc_bnn.metrics.reliability_curve` with 10 bins by default (it computes
    these numbers; ``reliability_curve`` defaults to 15 bins).

    Parameters
    ----------
    y_true : array of shape (n_samples,)
        True labels.
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Predicted class probabilities, columns in ``classes`` order (a 1-D array is the
        probability of the second class).
    n_bins : int, default 10
        Equal-width bins over [0, 1]; bin ``i`` is ``[i / n_bins, (i + 1) / n_bins)``,
        the last one closed.
    classes : array of shape (n_classes,), optional
        Labels of ``proba``'s columns; default ``np.unique(y_true)``.
    confidence : {"auto", "positive", "top"}
        ``positive``: bin the probability of the second class and report the fraction
        of samples of that class (binary only). ``top``: bin the top-class probability
        (the confidence) and report the fraction of correct top-class predictions.
        ``auto``: ``positive`` for two classes, ``top`` for more.

    Returns
    -------
    dict with
        ``edges`` (n_bins + 1,): bin edges;
        ``count`` (n_bins,): samples per bin;
        ``mean_confidence`` (n_bins,): mean binned probability per bin (NaN if empty);
        ``frequency`` (n_bins,): observed frequency per bin (NaN if empty);
        ``ece``: expected calibration error, ``sum(count / n * |frequency - mean_confidence|)``;
        ``confidence``: ``"positive"`` or ``"top"``; ``positive_class``: the class whose
        probability is binned (``positive`` only, else None).

    Examples
    --------
    >>> t = calibration_table([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_bins=2)
    >>> t["count"].tolist(), t["frequency"].tolist()
    ([2, 2], [0.0, 1.0])
    """
    return reliability_curve(y_true, proba, n_bins=n_bins, classes=classes,
                             confidence=confidence)


def reliability_diagram(
    y_true,
    proba,
    *,
    n_bins: int = 10,
    ax=None,
    classes=None,
    confidence: str = "auto",
    label: str | None = None,
    show_counts: bool = True,
):
    """Reliability (calibration) diagram: observed frequency against predicted probability.

    Points on the diagonal are perfectly calibrated; below it the model is
    over-confident. Grey bars (right axis) show how many samples fall in each bin.
    Binary problems bin the probability of the second class; multi-class problems
    bin the top-class probability (confidence) against the top-class accuracy (see
    :func:`calibration_table`, which returns the plotted numbers).

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        E.g. ``clf.predict_proba(X_test)``.
    n_bins : int, default 10
    ax : matplotlib Axes, optional
    classes : array of shape (n_classes,), optional
        Labels of ``proba``'s columns (e.g. ``clf.classes_``); default ``np.unique(y_true)``.
    confidence : {"auto", "positive", "top"}
        See :func:`calibration_table`.
    label : str, optional
        Legend label (the expected calibration error is appended). Call again on the
        same ``ax`` to overlay models.
    show_counts : bool, default True
        Draw the per-bin sample counts as bars on a right-hand axis.

    Returns
    -------
    matplotlib Axes
        The calibration axes (the counts live on a twin axes).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = reliability_diagram([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_bins=5)
    """
    table = calibration_table(y_true, proba, n_bins=n_bins, classes=classes,
                              confidence=confidence)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5))
    if not any(line.get_gid() == "pymc_bnn-diagonal" for line in ax.lines):
        ax.plot([0, 1], [0, 1], ls="--", color="0.45", lw=1, label="perfect calibration",
                gid="pymc_bnn-diagonal")
    filled = table["count"] > 0
    name = f"{label} " if label else ""
    ax.plot(table["mean_confidence"][filled], table["frequency"][filled], marker="o", lw=1.6,
            label=f"{name}(ECE {table['ece']:.3f})", zorder=3)
    if table["confidence"] == "positive":
        c = _class_str(table["positive_class"])
        xlabel, ylabel = f"predicted P(y = {c})", f"observed frequency of y = {c}"
    else:
        xlabel, ylabel = "confidence (top-class probability)", "accuracy of the top class"
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel=xlabel, ylabel=ylabel,
           title=ax.get_title() or "Reliability diagram")
    if show_counts:
        twin = ax.twinx()
        width = np.diff(table["edges"])
        twin.bar(table["edges"][:-1], table["count"], width=width, align="edge",
                 color="0.6", alpha=0.35, edgecolor="0.4", lw=0.5, zorder=0)
        twin.set(ylim=(0, 3.0 * max(int(table["count"].max()), 1)),
                 ylabel="samples per bin (bars)")
        ax.set_zorder(twin.get_zorder() + 1)
        ax.patch.set_visible(False)
    ax.legend(loc="upper left")
    return ax


def _vector(name: str, value, n: int | None = None) -> np.ndarray:
    """A finite, non-empty float array of shape (n,) (any length if ``n`` is None)."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers; got {value!r}.") from None
    if a.ndim != 1 or a.size == 0 or (n is not None and a.shape[0] != n):
        want = "(n_samples,)" if n is None else f"({n},), one value per point,"
        raise ValueError(f"{name} must have shape {want} and be non-empty; got {a.shape}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return a


def risk_coverage_plot(
    y_true,
    proba,
    *,
    uncertainty=None,
    classes=None,
    ax=None,
    label: str | None = None,
):
    """Risk-coverage curve: the error rate when only the most certain points are kept.

    Points are ranked from most to least certain; at coverage ``c`` the most certain
    fraction ``c`` is kept and the curve shows its error rate (the numbers of
    :func:`pymc_bnn.metrics.risk_coverage_curve`). A useful uncertainty gives a curve
    that is low on the left and rises only towards coverage 1. A dotted horizontal line
    in the same colour marks the error rate with every point kept (what abstaining at
    random would give at any coverage).

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Columns in ``classes`` order (1-D: probability of the second class).
    uncertainty : array of shape (n_samples,), optional
        Per-point score, larger = less certain (e.g. predictive entropy or mutual
        information). Default ``1 - proba.max(axis=1)``.
    classes : array of shape (n_classes,), optional
        Default ``np.unique(y_true)``.
    ax : matplotlib Axes, optional
    label : str, optional
        Legend label (the AURC is appended). Call again on the same ``ax`` to overlay
        models or uncertainty scores.

    Returns
    -------
    matplotlib Axes
        With two new lines: the curve (x = coverage, y = risk) and the dotted error rate.

    Raises
    ------
    ValueError
        For the bad inputs :func:`pymc_bnn.metrics.risk_coverage_curve` rejects.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = risk_coverage_plot([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.3], label="BNN")
    >>> ax.get_legend().get_texts()[0].get_text()
    'BNN (AURC 0.062)'
    """
    rc = risk_coverage_curve(y_true, proba, uncertainty=uncertainty, classes=classes)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.5))
    name = f"{label} " if label else ""
    (curve,) = ax.plot(rc["coverage"], rc["risk"], lw=1.8, gid="pymc_bnn-risk-coverage",
                       label=f"{name}(AURC {rc['aurc']:.3f})")
    ax.axhline(rc["risk"][-1], color=curve.get_color(), ls=":", lw=1)
    top = max(float(np.max(line.get_ydata())) for line in ax.lines
              if line.get_gid() == "pymc_bnn-risk-coverage")
    ax.set(xlim=(0, 1), ylim=(0, max(1.08 * top, 0.01)),
           xlabel="coverage (share of most certain points kept)",
           ylabel="risk (error rate among kept points)",
           title=ax.get_title() or "Risk-coverage")
    ax.legend(loc="upper left")
    return ax


def uncertainty_histogram(
    uncertainty,
    *,
    correct=None,
    ax=None,
    xlabel: str = "predictive entropy (nats)",
    bins: int = 30,
    labels: tuple[str, str] = ("correct", "wrong"),
):
    """Histogram of a per-point uncertainty, optionally split into right and wrong predictions.

    With ``correct``, the two groups are drawn as overlaid density histograms on the
    same bins (densities, so that a small group of errors is as visible as the large
    group of right answers): a model that knows when it does not know puts its wrong
    predictions at higher uncertainty. Each legend entry gives the group's size and
    median.

    Parameters
    ----------
    uncertainty : array of shape (n_samples,)
        E.g. predictive entropy, mutual information or a predictive std.
    correct : bool array of shape (n_samples,), optional
        Whether each prediction is right (0/1 integers are accepted).
    ax : matplotlib Axes, optional
    xlabel : str, default "predictive entropy (nats)"
    bins : int, default 30
        Number of equal-width bins over the range of ``uncertainty``.
    labels : (str, str), default ("correct", "wrong")
        Legend names of the ``correct`` and the other points (e.g. "interval covers
        the truth", "interval misses").

    Returns
    -------
    matplotlib Axes
        One bar container per drawn group (``ax.containers``).

    Raises
    ------
    ValueError
        For an empty or non-finite ``uncertainty``, a ``correct`` of another length or
        not boolean, or ``bins < 1``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = uncertainty_histogram([0.1, 0.2, 0.6, 0.7], correct=[True, True, False, True],
    ...                            bins=5)
    >>> len(ax.containers)
    2
    """
    u = _vector("uncertainty", uncertainty)
    bins = check_positive_int("bins", bins)
    if correct is not None:
        c = np.asarray(correct)
        if c.shape != u.shape:
            raise ValueError(f"correct must have shape {u.shape} like uncertainty; "
                             f"got {c.shape}.")
        if c.dtype != bool:
            if c.dtype.kind not in "iuf" or not np.all((c == 0) | (c == 1)):
                raise ValueError("correct must be a boolean array (or 0/1).")
            c = c.astype(bool)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.5))
    edges = np.histogram_bin_edges(u, bins=bins)
    colours = sns.color_palette("colorblind")
    if correct is None:
        ax.hist(u, bins=edges, color=colours[0], alpha=0.8, edgecolor="white", lw=0.4)
        ylabel = "points"
    else:
        for mask, colour, name in ((c, colours[0], labels[0]), (~c, colours[1], labels[1])):
            if mask.any():
                ax.hist(u[mask], bins=edges, density=True, color=colour, alpha=0.55,
                        edgecolor="white", lw=0.4,
                        label=f"{name} (n={int(mask.sum())}, median {np.median(u[mask]):.3g})")
        ax.legend(loc="upper right")
        ylabel = "density"
    ax.set(xlabel=xlabel, ylabel=ylabel, title=ax.get_title() or "Uncertainty")
    return ax


def predicted_vs_actual(
    y_true,
    mean,
    *,
    lower=None,
    upper=None,
    ax=None,
    coverage: float | None = None,
):
    """Regression predictions against the truth, with predictive intervals.

    One point per sample at (actual, predicted mean), and the dashed line y = x of
    perfect predictions. With ``lower`` and ``upper`` each point carries its interval
    as a vertical line; points whose interval misses the truth are drawn in a second
    colour and the title gives the empirical coverage
    (:func:`pymc_bnn.metrics.interval_coverage`).

    Parameters
    ----------
    y_true : array of shape (n_samples,)
    mean : array of shape (n_samples,)
        Predicted means.
    lower, upper : arrays of shape (n_samples,), optional
        Predictive interval bounds, ``lower <= upper``; both or neither.
    ax : matplotlib Axes, optional
    coverage : float in (0, 1), optional
        The nominal coverage of the intervals (e.g. 0.9), shown in the legend and the
        title beside the empirical coverage; needs ``lower`` and ``upper``.

    Returns
    -------
    matplotlib Axes
        Lines: the diagonal. Collections: per drawn group (covered, missed; or all
        points without intervals) a LineCollection of intervals (intervals only) and
        a PathCollection of points.

    Raises
    ------
    ValueError
        For arrays of different lengths or with NaN, only one of ``lower`` and
        ``upper``, ``lower > upper``, or ``coverage`` outside (0, 1) or without intervals.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = predicted_vs_actual([0.0, 1.0, 2.0, 3.0], [0.2, 0.9, 2.5, 2.8],
    ...                          lower=[-1, 0, 2.2, 2], upper=[1, 2, 2.8, 4], coverage=0.9)
    >>> ax.get_title()
    'Predicted vs actual: 90% intervals cover 75.0%'
    """
    y = _vector("y_true", y_true)
    mu = _vector("mean", mean, y.shape[0])
    if (lower is None) != (upper is None):
        raise ValueError("lower and upper must be given together; got "
                         f"{'lower' if upper is None else 'upper'} only.")
    if coverage is not None:
        if lower is None:
            raise ValueError("coverage is the nominal level of the intervals: it needs "
                             "lower and upper.")
        if not 0.0 < float(coverage) < 1.0:
            raise ValueError(f"coverage must be in (0, 1); got {coverage!r}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5))
    colours = sns.color_palette("colorblind")
    points = dict(s=14, edgecolor="white", linewidth=0.3, zorder=3)
    if lower is None:
        ax.scatter(y, mu, color=colours[0], label="predicted mean", **points)
        span = np.concatenate([y, mu])
        title = "Predicted vs actual"
    else:
        lo, hi = _vector("lower", lower, y.shape[0]), _vector("upper", upper, y.shape[0])
        empirical = interval_coverage(y, lo, hi)  # also checks lower <= upper
        covered = (lo <= y) & (y <= hi)
        name = "interval" if coverage is None else f"{100 * float(coverage):g}% interval"
        groups = ((covered, colours[0], "covers the truth"), (~covered, colours[3], "misses"))
        for mask, colour, text in groups:
            if mask.any():
                ax.vlines(y[mask], lo[mask], hi[mask], color=colour, alpha=0.45, lw=1)
                ax.scatter(y[mask], mu[mask], color=colour,
                           label=f"{name} {text} ({int(mask.sum())})", **points)
        span = np.concatenate([y, mu, lo, hi])
        title = f"Predicted vs actual: {name}s cover {empirical:.1%}"
    a, b = float(span.min()), float(span.max())
    pad = 0.05 * (b - a) if b > a else 1.0
    lims = (a - pad, b + pad)
    ax.plot(lims, lims, ls="--", color="0.45", lw=1, label="y = x (perfect prediction)",
            gid="pymc_bnn-diagonal")
    ax.set(xlim=lims, ylim=lims, xlabel="actual value", ylabel="predicted mean", title=title)
    ax.legend(loc="upper left", fontsize="small")
    return ax
