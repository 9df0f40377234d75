"""Uncertainty maps of fitted 2-feature classifiers (part of :mod:`pymc_bnn.plotting`).

:func:`uncertainty_map` (one classifier), :func:`compare_maps` (several, side by side
on one colour scale), :func:`task_maps` (one small map per task of a multi-task
problem) and the grid they are evaluated on, :func:`grid_2d`; :data:`KINDS` lists what
a map can show. Import them from :mod:`pymc_bnn.plotting`.

The maps work for any fitted 2-feature classifier: a
:class:`pymc_bnn.BayesianMLPClassifier` (through ``predict_uncertainty``) or, for
``kind="mean"`` and ``kind="entropy"``, any estimator with ``predict_proba`` (e.g.
scikit-learn's ``MLPClassifier``, whose "entropy" is that of its one softmax output).

Examples
--------
>>> from pymc_bnn.plotting import grid_2d
>>> xx, yy, points = grid_2d((-1, 1), 3)
>>> points[:3].tolist()
[[-1.0, -1.0], [0.0, -1.0], [1.0, -1.0]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from pymc_bnn.plotting._common import class_label, closing_new_figures

__all__ = ["KINDS", "compare_maps", "grid_2d", "task_maps", "uncertainty_map"]

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
    if (
        isinstance(resolution, bool)
        or not isinstance(resolution, (int, np.integer))
        or resolution < 2
    ):
        raise ValueError(
            f"resolution must be a whole number of grid points per axis, at "
            f"least 2; got {resolution!r}."
        )
    lo, hi = lims
    axis = np.linspace(lo, hi, resolution)
    xx, yy = np.meshgrid(axis, axis)
    return xx, yy, np.column_stack([xx.ravel(), yy.ravel()])


def _cmap(kind: str):
    if kind == "mean":
        return sns.diverging_palette(250, 12, s=85, l=25, as_cmap=True)
    return sns.cubehelix_palette(light=1, as_cmap=True)


def _check_kind(kind) -> str:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}; got {kind!r}.")
    return kind


def _check_2d_classifier(clf, kind: str) -> None:
    if hasattr(clf, "predict_interval") and not hasattr(clf, "classes_"):
        raise ValueError(
            f"an uncertainty map shows a classifier's class probabilities; "
            f"{type(clf).__name__} is a regressor."
        )
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


def _check_class_index(class_index) -> int | None:
    """None, or a whole number >= 0 (its upper bound is checked against the classifier)."""
    if class_index is None:
        return None
    # negative indices are refused rather than counted from the end: the column shown
    # is named in the title, and "-1" read as "the last class" is easy to misread
    if (
        isinstance(class_index, bool)
        or not isinstance(class_index, (int, np.integer))
        or class_index < 0
    ):
        raise ValueError(
            f"class_index must be None or a whole number >= 0 (a column of "
            f"classes_); got {class_index!r}."
        )
    return int(class_index)


def _check_overlay(X, y, groups=None):
    """Points to overlay as float arrays: ``X`` (n, 2), ``y`` and ``groups`` (n,) or None.

    Checked before a figure is made, so that a wrong length names the argument rather
    than failing deep inside seaborn.
    """
    if X is None:
        if y is not None:
            raise ValueError("y colours the overlaid points: it needs X.")
        return None, None, None
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            "X to overlay must be an array of numbers of shape (n_points, 2)."
        ) from None
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X to overlay must have shape (n_points, 2); got {X.shape}.")
    checked = []
    for name, value in (("y", y), ("groups", groups)):
        a = None if value is None else np.asarray(value)
        if a is not None and a.shape != (X.shape[0],):
            raise ValueError(
                f"{name} must have shape ({X.shape[0]},), one value per row of X; got {a.shape}."
            )
        checked.append(a)
    return X, *checked


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
            if not 0 <= k < n_classes:
                raise ValueError(
                    f"class_index must be in [0, {n_classes - 1}] ({type(clf).__name__} "
                    f"has {n_classes} classes); got {class_index!r}."
                )
            values = summary[kind][:, k]
            label = label.replace("P(class)", f"P(y = {class_label(clf.classes_[k])})")
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
    """Overlay points ``X`` (checked by :func:`_check_overlay`), coloured by ``y``."""
    hue = y
    palette = None
    if hue is not None:
        if hue_order is None:
            palette = sns.color_palette("colorblind", n_colors=len(np.unique(hue)))
        else:  # fixed colours per class, even if a subset lacks some classes
            colours = sns.color_palette("colorblind", n_colors=len(hue_order))
            palette = dict(zip(hue_order, colours))
            hue_order = list(hue_order)
    sns.scatterplot(
        x=X[:, 0],
        y=X[:, 1],
        hue=hue,
        palette=palette,
        s=s,
        hue_order=hue_order,
        edgecolor="white",
        linewidth=0.3,
        ax=ax,
        legend=legend and y is not None,
    )
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
        Column of ``classes_`` shown by ``mean``/``std``, in ``[0, n_classes - 1]``
        (negative indices are refused).
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
        For an unknown ``kind``, a classifier not fit on 2 features, ``std`` /
        ``mutual_info`` asked of a classifier without ``predict_uncertainty``, a
        ``class_index`` that is not a column of ``classes_``, or ``X`` / ``y`` of the
        wrong shape. A figure this function made is closed when it raises.
    """
    kind = _check_kind(kind)
    _check_2d_classifier(clf, kind)
    class_index = _check_class_index(class_index)
    X, y, _ = _check_overlay(X, y)
    xx, yy, points = grid_2d(lims, resolution)
    # the classifier predicts before a figure is made: what it rejects leaves none open
    values, label, n_classes = _map_values(clf, points, kind, class_index)
    levels = _levels(kind, n_classes, vmax, values)
    with closing_new_figures():
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 5))
        cs = _draw_map(
            ax,
            xx,
            yy,
            values.reshape(xx.shape),
            kind=kind,
            levels=levels,
            lims=lims,
            title=title if title is not None else label,
        )
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
        features, a bad ``class_index``, ``X`` / ``y`` of the wrong shape, or
        ``len(ax) != len(classifiers)``. A figure this function made is closed when it
        raises (e.g. when a classifier is not fitted).

    Examples
    --------
    >>> fig = compare_maps({"ADVI": advi_clf, "NUTS": nuts_clf}, kind="std")  # doctest: +SKIP
    """
    kind = _check_kind(kind)
    if not isinstance(classifiers, Mapping) or len(classifiers) == 0:
        raise ValueError("classifiers must be a non-empty dict of name -> fitted classifier.")
    for clf in classifiers.values():
        _check_2d_classifier(clf, kind)
    class_index = _check_class_index(class_index)
    X, y, _ = _check_overlay(X, y)
    n = len(classifiers)
    if ax is not None:
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != n:
            raise ValueError(f"ax must hold one Axes per classifier ({n}); got {len(axes)}.")

    xx, yy, points = grid_2d(lims, resolution)
    # every classifier predicts before a figure is made: what one rejects leaves none open
    maps = [_map_values(clf, points, kind, class_index) for clf in classifiers.values()]
    labels = {label for _, label, _ in maps}
    shared_label = labels.pop() if len(labels) == 1 else KINDS[kind]
    vmax = None
    if share_scale:
        all_binary_mean = kind == "mean" and all(k == 2 for _, _, k in maps)
        vmax = 1.0 if all_binary_mean else max(float(np.nanmax(v)) for v, _, _ in maps)
    with closing_new_figures():
        if ax is None:
            fig, axes = plt.subplots(
                1,
                n,
                figsize=(panel_size * n + 1.2, panel_size),
                sharex=True,
                sharey=True,
                squeeze=False,
                layout="constrained",
            )
            axes = list(axes[0])
        else:
            fig = axes[0].figure
        for i, (a, name, (values, label, n_classes)) in enumerate(zip(axes, classifiers, maps)):
            levels = _levels(kind, n_classes, vmax if share_scale else None, values)
            cs = _draw_map(
                a, xx, yy, values.reshape(xx.shape), kind=kind, levels=levels, lims=lims, title=name
            )
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
        ``models`` does not have; ``X`` without ``groups``, or ``y`` / ``groups`` of
        another length than ``X``; a bad ``class_index``; too few ``ax``. A figure this
        function made is closed when it raises (e.g. when a classifier is not fitted).

    Examples
    --------
    >>> fig = task_maps(hier_clf, X=X_train, y=y_train, groups=g_train)  # doctest: +SKIP
    >>> fig = task_maps({t: clf_t for t, clf_t in separate.items()})  # doctest: +SKIP
    """
    kind = _check_kind(kind)
    if isinstance(models, Mapping):
        if len(models) == 0:
            raise ValueError(
                "models must be a fitted classifier or a non-empty dict of "
                "task -> fitted classifier."
            )
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
    X_all, y_all, g_all = _check_overlay(X, y, groups)
    class_index = _check_class_index(class_index)
    clfs = [view(t) for t in tasks]
    for clf in clfs:
        _check_2d_classifier(clf, kind)
    n = len(tasks)
    if ax is not None:
        grid = np.asarray(ax, dtype=object)
        ncols_grid = grid.shape[-1] if grid.ndim == 2 else len(grid.ravel())
        axes = list(grid.ravel())
        if len(axes) < n:
            raise ValueError(f"ax must hold at least one Axes per task ({n}); got {len(axes)}.")

    xx, yy, points = grid_2d(lims, resolution)
    # every task's classifier predicts before a figure is made: what one rejects leaves
    # none open
    maps = [_map_values(clf, points, kind, class_index) for clf in clfs]
    labels = {label for _, label, _ in maps}
    label = labels.pop() if len(labels) == 1 else KINDS[kind]
    if vmax is None:
        binary_mean = kind == "mean" and all(k == 2 for _, _, k in maps)
        vmax = 1.0 if binary_mean else max(float(np.nanmax(v)) for v, _, _ in maps)
    hue_order = None if y_all is None else np.unique(y_all)
    titles = {} if titles is None else titles
    with closing_new_figures():
        if ax is None:
            ncols = max(1, min(int(ncols), n))
            nrows = -(-n // ncols)
            fig, axes = plt.subplots(
                nrows,
                ncols,
                figsize=(panel_size * ncols + 1.0, panel_size * nrows + 0.3),
                sharex=True,
                sharey=True,
                squeeze=False,
                layout="constrained",
            )
            ncols_grid = ncols
            axes = list(axes.ravel())
        else:
            fig = axes[0].figure
        for extra in axes[n:]:
            extra.set_visible(False)
        axes = axes[:n]
        for i, (a, task, (values, _, n_classes)) in enumerate(zip(axes, tasks, maps)):
            levels = _levels(kind, n_classes, vmax, values)
            cs = _draw_map(
                a,
                xx,
                yy,
                values.reshape(xx.shape),
                kind=kind,
                levels=levels,
                lims=lims,
                title=titles.get(task, f"task {class_label(task)}"),
            )
            a.title.set_fontsize("small")
            if X_all is not None:
                rows = g_all == task
                _scatter(
                    a,
                    X_all[rows],
                    None if y_all is None else y_all[rows],
                    legend=False,
                    s=9,
                    hue_order=hue_order,
                )
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
