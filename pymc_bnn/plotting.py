"""Figures of a fitted classifier: uncertainty maps over the input plane, loss curves.

Every function takes an optional ``ax``, draws on it, and returns it; none calls
``plt.show()``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

__all__ = ["KINDS", "grid_2d", "loss_curve", "uncertainty_map"]

#: What an uncertainty map can show, with its colour-bar label.
KINDS = {
    "mean": "posterior predictive mean P(class)",
    "std": "posterior predictive std of P(class)",
    "entropy": "predictive entropy (nats)",
    "mutual_info": "mutual information (nats)",
}


def grid_2d(lims=(-3.0, 3.0), resolution: int = 100):
    """A square grid over ``lims`` in both coordinates.

    Returns
    -------
    xx, yy : arrays of shape (resolution, resolution)
    points : array of shape (resolution**2, 2)
    """
    lo, hi = lims
    axis = np.linspace(lo, hi, resolution)
    xx, yy = np.meshgrid(axis, axis)
    return xx, yy, np.column_stack([xx.ravel(), yy.ravel()])


def _cmap(kind: str):
    if kind == "mean":
        return sns.diverging_palette(250, 12, s=85, l=25, as_cmap=True)
    return sns.cubehelix_palette(light=1, as_cmap=True)


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
):
    """Map of the posterior predictive of a fitted 2-feature classifier.

    Parameters
    ----------
    clf : fitted estimator with ``predict_uncertainty`` and ``classes_``
        e.g. :class:`pymc_bnn.BayesianMLPClassifier` fit on 2 features.
    kind : {"mean", "std", "entropy", "mutual_info"}
        ``mean``/``std``: of the probability of class ``classes_[class_index]``
        (default: the second class of a binary problem; for more classes, the
        largest class probability and its std).
    X, y : arrays, optional
        Points to overlay, coloured by label.
    lims : (float, float)
        Range of both axes.
    resolution : int
        Grid points per axis.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}; got {kind!r}.")
    if getattr(clf, "n_features_in_", 2) != 2:
        raise ValueError(
            f"an uncertainty map needs a classifier of 2 features; got {clf.n_features_in_}."
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 5))
    xx, yy, points = grid_2d(lims, resolution)
    summary = clf.predict_uncertainty(points)
    n_classes = summary["mean"].shape[1]
    label = KINDS[kind]
    if kind in ("mean", "std"):
        if class_index is None and n_classes > 2:
            col = summary["mean"].argmax(axis=1)
            values = np.take_along_axis(summary[kind], col[:, None], axis=1)[:, 0]
            label = label.replace("P(class)", "max-class P")
        else:
            k = 1 if class_index is None else class_index
            values = summary[kind][:, k]
            label = label.replace("P(class)", f"P(y = {clf.classes_[k]!r})")
    else:
        values = summary[kind]
    Z = values.reshape(xx.shape)
    if kind == "mean" and n_classes == 2:
        levels = np.linspace(0.0, 1.0, 21)
    else:
        levels = np.linspace(0.0, max(float(Z.max()), 1e-12), 21)
    cs = ax.contourf(xx, yy, Z, levels=levels, cmap=_cmap(kind))
    if colorbar:
        ax.figure.colorbar(cs, ax=ax, label=label)
    if X is not None:
        X = np.asarray(X)
        hue = None if y is None else np.asarray(y)
        palette = sns.color_palette("colorblind", n_colors=len(np.unique(hue))) if hue is not None else None
        sns.scatterplot(x=X[:, 0], y=X[:, 1], hue=hue, palette=palette, s=14,
                        edgecolor="white", linewidth=0.3, ax=ax, legend=y is not None)
    ax.set(xlim=lims, ylim=lims, xlabel="$x_1$", ylabel="$x_2$",
           title=title if title is not None else label)
    return ax


def loss_curve(loss, *, window: int = 200, ax=None, label: str | None = None):
    """Plot a loss (negative ELBO) history, raw and smoothed by a running mean.

    Parameters
    ----------
    loss : array of shape (n_steps,)
    window : int
        Width of the running mean.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    loss = np.asarray(loss, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    steps = np.arange(1, loss.size + 1)
    raw = ax.plot(steps, loss, alpha=0.3, lw=0.7, label=None if label is None else f"{label} (raw)")
    if loss.size >= window > 1:
        smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1 :], smooth, color=raw[0].get_color(), lw=1.8,
                label=f"{label or 'loss'} ({window}-step mean)")
    lo, hi = np.nanpercentile(loss, [0.5, 99.0]) if loss.size else (0, 1)
    ax.set(xlabel="optimisation step", ylabel="negative ELBO (full-data units)",
           ylim=(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)))
    ax.legend()
    return ax
