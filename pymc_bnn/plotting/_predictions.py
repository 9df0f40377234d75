"""Figures of predictions a user already holds (part of :mod:`pymc_bnn.plotting`).

Reliability diagrams (:func:`reliability_diagram`, with the numbers it plots from
:func:`calibration_table`), risk-coverage curves (:func:`risk_coverage_plot`),
uncertainty histograms (:func:`uncertainty_histogram`) and predicted-vs-actual plots of
regressions (:func:`predicted_vs_actual`). They draw what :mod:`pymc_bnn.metrics`
computes. Import them from :mod:`pymc_bnn.plotting`.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from pymc_bnn.plotting import reliability_diagram
>>> ax = reliability_diagram([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_bins=2, label="BNN")
>>> ax.get_xlabel()
'predicted P(y = 1)'
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from pymc_bnn.metrics._calibration import reliability_curve
from pymc_bnn.metrics._classification import risk_coverage_curve
from pymc_bnn.metrics._regression import interval_coverage
from pymc_bnn.network._checks import check_positive_int
from pymc_bnn.plotting._common import class_label

__all__ = [
    "calibration_table",
    "predicted_vs_actual",
    "reliability_diagram",
    "risk_coverage_plot",
    "uncertainty_histogram",
]


def calibration_table(
    y_true, proba, *, n_bins: int = 10, classes=None, confidence: str = "auto"
) -> dict:
    """Binned calibration of predicted probabilities (the numbers of a reliability diagram).

    :func:`pymc_bnn.metrics.reliability_curve` with 10 bins by default (it computes
    these numbers; ``reliability_curve`` defaults to 15 bins).

    Its ``ece`` is the ECE of these bins: by default 10 bins of, for two classes, the
    probability of the second class. It is not the package's headline
    :func:`pymc_bnn.metrics.expected_calibration_error`, which by default bins the
    top-label confidence in 15 bins; ``n_bins=15, confidence="top"`` gives that number.

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
    return reliability_curve(y_true, proba, n_bins=n_bins, classes=classes, confidence=confidence)


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
    over-confident. Bars (right axis), in the colour of their curve, show how many
    samples fall in each bin; overlaid models share that axis. Binary problems bin the
    probability of the second class; multi-class problems bin the top-class probability
    (confidence) against the top-class accuracy (see :func:`calibration_table`, which
    returns the plotted numbers).

    The legend's ECE is that of the plotted bins, and says which: e.g. ``ECE 0.042: 10
    bins of P(y = 1)``. With the defaults it differs from
    :func:`pymc_bnn.metrics.expected_calibration_error` (top label, 15 bins); pass
    ``n_bins=15, confidence="top"`` to plot the bins of that number.

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
        Legend label (the expected calibration error of the plotted bins is appended).
        Call again on the same ``ax`` to overlay models.
    show_counts : bool, default True
        Draw the per-bin sample counts as bars on a right-hand axis (one for all the
        models drawn on ``ax``, scaled to the largest count).

    Returns
    -------
    matplotlib Axes
        The calibration axes (the counts live on a twin axes).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = reliability_diagram([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_bins=5)
    >>> ax.get_legend().get_texts()[1].get_text()
    '(ECE 0.250: 5 bins of P(y = 1))'
    """
    table = calibration_table(y_true, proba, n_bins=n_bins, classes=classes, confidence=confidence)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5))
    if not any(line.get_gid() == "pymc_bnn-diagonal" for line in ax.lines):
        ax.plot(
            [0, 1],
            [0, 1],
            ls="--",
            color="0.45",
            lw=1,
            label="perfect calibration",
            gid="pymc_bnn-diagonal",
        )
    filled = table["count"] > 0
    if table["confidence"] == "positive":
        c = class_label(table["positive_class"])
        xlabel, ylabel = f"predicted P(y = {c})", f"observed frequency of y = {c}"
        binned = f"P(y = {c})"
    else:
        xlabel, ylabel = "confidence (top-class probability)", "accuracy of the top class"
        binned = "top-label confidence"
    name = f"{label} " if label else ""
    # the legend names what was binned: with the defaults this ECE is not the headline
    # expected_calibration_error (top label, 15 bins), and a bare "ECE" read as if it were
    (curve,) = ax.plot(
        table["mean_confidence"][filled],
        table["frequency"][filled],
        marker="o",
        lw=1.6,
        zorder=3,
        label=f"{name}(ECE {table['ece']:.3f}: {n_bins} bins of {binned})",
    )
    ax.set(
        xlim=(0, 1),
        ylim=(0, 1),
        xlabel=xlabel,
        ylabel=ylabel,
        title=ax.get_title() or "Reliability diagram",
    )
    if show_counts:
        twin = _count_axes(ax)
        twin.bar(
            table["edges"][:-1],
            table["count"],
            width=np.diff(table["edges"]),
            align="edge",
            color=curve.get_color(),
            alpha=0.3,
            edgecolor=curve.get_color(),
            lw=0.6,
            zorder=0,
        )
        # one scale for every model's bars on this axis: the largest count of them all
        top = max((p.get_height() for p in twin.patches), default=0.0)
        twin.set(ylim=(0, 3.0 * max(top, 1.0)), ylabel="samples per bin (bars)")
        ax.set_zorder(twin.get_zorder() + 1)
        ax.patch.set_visible(False)
    ax.legend(loc="best")  # where it hides the fewest points (a fixed corner hid some)
    return ax


_COUNTS_GID = "pymc_bnn-reliability-counts"


def _count_axes(ax):
    """The right-hand axis of bin counts of :func:`reliability_diagram` on ``ax``.

    The one made by an earlier call on the same ``ax`` if there is one (a twin sharing
    its x axis and its place in the figure, marked by its gid), so that overlaid models
    share one count scale and one set of right-hand ticks; else a new twin. The place
    matters: panels of ``plt.subplots(sharex=True)`` share their x axis too, and one
    panel's bars went onto another's count axis.
    """
    where = ax.get_position().bounds
    for other in ax.figure.axes:
        if (
            other is not ax
            and other.get_gid() == _COUNTS_GID
            and ax.get_shared_x_axes().joined(ax, other)
            and np.allclose(other.get_position().bounds, where)
        ):
            return other
    twin = ax.twinx()
    twin.set_gid(_COUNTS_GID)
    return twin


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
    (curve,) = ax.plot(
        rc["coverage"],
        rc["risk"],
        lw=1.8,
        gid="pymc_bnn-risk-coverage",
        label=f"{name}(AURC {rc['aurc']:.3f})",
    )
    ax.axhline(rc["risk"][-1], color=curve.get_color(), ls=":", lw=1)
    top = max(
        float(np.max(line.get_ydata()))
        for line in ax.lines
        if line.get_gid() == "pymc_bnn-risk-coverage"
    )
    ax.set(
        xlim=(0, 1),
        ylim=(0, max(1.08 * top, 0.01)),
        xlabel="coverage (share of most certain points kept)",
        ylabel="risk (error rate among kept points)",
        title=ax.get_title() or "Risk-coverage",
    )
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
            raise ValueError(f"correct must have shape {u.shape} like uncertainty; got {c.shape}.")
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
                ax.hist(
                    u[mask],
                    bins=edges,
                    density=True,
                    color=colour,
                    alpha=0.55,
                    edgecolor="white",
                    lw=0.4,
                    label=f"{name} (n={int(mask.sum())}, median {np.median(u[mask]):.3g})",
                )
        ax.legend(loc="best")  # where it hides the fewest bars
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
        raise ValueError(
            "lower and upper must be given together; got "
            f"{'lower' if upper is None else 'upper'} only."
        )
    if coverage is not None:
        if lower is None:
            raise ValueError(
                "coverage is the nominal level of the intervals: it needs lower and upper."
            )
        if not 0.0 < float(coverage) < 1.0:
            raise ValueError(f"coverage must be in (0, 1); got {coverage!r}.")
    if lower is not None:  # checked before a figure is made: a bad one leaves none open
        lo, hi = _vector("lower", lower, y.shape[0]), _vector("upper", upper, y.shape[0])
        empirical = interval_coverage(y, lo, hi)  # also checks lower <= upper
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5))
    colours = sns.color_palette("colorblind")
    points = dict(s=14, edgecolor="white", linewidth=0.3, zorder=3)
    if lower is None:
        ax.scatter(y, mu, color=colours[0], label="predicted mean", **points)
        span = np.concatenate([y, mu])
        title = "Predicted vs actual"
    else:
        covered = (lo <= y) & (y <= hi)
        name = "interval" if coverage is None else f"{100 * float(coverage):g}% interval"
        groups = ((covered, colours[0], "covers the truth"), (~covered, colours[3], "misses"))
        for mask, colour, text in groups:
            if mask.any():
                ax.vlines(y[mask], lo[mask], hi[mask], color=colour, alpha=0.45, lw=1)
                ax.scatter(
                    y[mask],
                    mu[mask],
                    color=colour,
                    label=f"{name} {text} ({int(mask.sum())})",
                    **points,
                )
        span = np.concatenate([y, mu, lo, hi])
        title = f"Predicted vs actual: {name}s cover {empirical:.1%}"
    a, b = float(span.min()), float(span.max())
    pad = 0.05 * (b - a) if b > a else 1.0
    lims = (a - pad, b + pad)
    ax.plot(
        lims,
        lims,
        ls="--",
        color="0.45",
        lw=1,
        label="y = x (perfect prediction)",
        gid="pymc_bnn-diagonal",
    )
    ax.set(xlim=lims, ylim=lims, xlabel="actual value", ylabel="predicted mean", title=title)
    ax.legend(loc="upper left", fontsize="small")
    return ax
