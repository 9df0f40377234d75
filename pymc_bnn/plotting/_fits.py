"""Figures of fits: loss curves and posterior intervals (part of :mod:`pymc_bnn.plotting`).

:func:`loss_curve` (a negative-ELBO history, raw and smoothed) and
:func:`posterior_intervals` (posterior mean and central interval of scalar variables,
for one or more fits). Import them from :mod:`pymc_bnn.plotting`.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from pymc_bnn.plotting import loss_curve
>>> ax = loss_curve([3.0, 2.0, 1.5, 1.2, 1.1], window=2, label="ADVI")
>>> [line.get_label() for line in ax.lines]
['ADVI (raw)', 'ADVI (2-step mean)']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from pymc_bnn.network._checks import check_positive_int
from pymc_bnn.plotting._common import closing_new_figures

__all__ = ["loss_curve", "posterior_intervals"]


def _posterior_draws(source, name: str, label) -> np.ndarray:
    """The draws of scalar variable ``name`` from an idata-like ``source`` or a dict
    (the fit called ``label``): non-empty and finite."""
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
    try:
        draws = np.asarray(var, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name!r} of {label!r} must be an array of numbers (draws); got {var!r}."
        ) from None
    if dims is None and draws.ndim > 1:
        raise ValueError(f"{name!r} must be a 1-D array of draws; got shape {draws.shape}.")
    draws = draws.ravel()
    if draws.size == 0:
        raise ValueError(f"{name!r} of {label!r} has no draws.")
    # a NaN draw makes the mean and quantiles NaN, and matplotlib silently draws nothing
    bad = ~np.isfinite(draws)
    if bad.any():
        raise ValueError(
            f"{name!r} of {label!r} has {int(bad.sum())} NaN or infinite "
            f"draws of {draws.size} (first at draw {int(np.argmax(bad))})."
        )
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
        or non-scalar variable, a variable with no draws or with NaN or infinite draws,
        or (``log=True``) non-positive draws; before any figure is made.

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
    # every variable of every fit checked before a figure is made
    all_draws = {}
    for label, source in posteriors.items():
        for name in var_names:
            draws = _posterior_draws(source, name, label)
            if log and np.any(draws <= 0):
                raise ValueError(
                    f"log=True needs positive draws; {name!r} of {label!r} has values <= 0."
                )
            all_draws[label, name] = draws
    with closing_new_figures():
        return _draw_intervals(
            all_draws, posteriors, var_names, prob=prob, log=log, ax=ax, xlabel=xlabel, title=title
        )


def _draw_intervals(all_draws, posteriors, var_names, *, prob, log, ax, xlabel, title):
    """The figure of :func:`posterior_intervals`, from its checked draws."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.45 * len(var_names) * len(posteriors) + 1.5))
    n_fits = len(posteriors)
    # the first fit on top within each variable's row, as in the legend
    offsets = ((n_fits - 1) / 2 - np.arange(n_fits)) * min(0.6 / max(n_fits - 1, 1), 0.25)
    colours = sns.color_palette("colorblind", n_colors=n_fits)
    q = [(1.0 - prob) / 2, (1.0 + prob) / 2]
    for j, label in enumerate(posteriors):
        for i, name in enumerate(var_names):
            draws = all_draws[label, name]
            lo, hi = np.quantile(draws, q)
            y = -i + offsets[j]
            ax.plot([lo, hi], [y, y], color=colours[j], lw=2, solid_capstyle="butt")
            ax.plot(
                [draws.mean()],
                [y],
                marker="o",
                color=colours[j],
                ms=6,
                label=label if i == 0 else None,
                ls="none",
            )
    ax.set_yticks(-np.arange(len(var_names)), var_names)
    ax.set_ylim(-len(var_names) + 0.5, 0.5)
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(
        xlabel=f"{xlabel} (mean, {prob:.0%} interval)",
        title=title if title is not None else "Posterior intervals",
    )
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return ax


def loss_curve(loss, *, window: int = 200, ax=None, label: str | None = None):
    """Plot a loss (negative ELBO) history, raw and smoothed by a running mean.

    Parameters
    ----------
    loss : array of shape (n_steps,)
    window : int
        Width of the running mean (drawn only if ``n_steps >= window > 1``; 0 or 1:
        none).
    ax : matplotlib Axes, optional
    label : str, optional
        Legend label of this curve (call again on the same ``ax`` to overlay runs).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        For a ``loss`` that is not a 1-D array of numbers, or a ``window`` that is not a
        whole number >= 0; before any figure is made.
    """
    try:
        loss = np.asarray(loss, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"loss must be a 1-D array of numbers; got {loss!r}.") from None
    if loss.ndim != 1:
        raise ValueError(f"loss must be a 1-D array (one value per step); got shape {loss.shape}.")
    # 0 and 1 (no running mean) stay allowed, as before
    window = check_positive_int("window", window, minimum=0)
    with closing_new_figures():
        return _draw_loss(loss, window, ax, label)


def _draw_loss(loss: np.ndarray, window: int, ax, label):
    """The figure of :func:`loss_curve`, from its checked arguments."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    steps = np.arange(1, loss.size + 1)
    raw = ax.plot(
        steps,
        loss,
        alpha=0.3,
        lw=0.7,
        gid="pymc_bnn-loss-raw",
        label=None if label is None else f"{label} (raw)",
    )
    if loss.size >= window > 1:
        smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
        ax.plot(
            steps[window - 1 :],
            smooth,
            color=raw[0].get_color(),
            lw=1.8,
            label=f"{label or 'loss'} ({window}-step mean)",
        )
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
    ax.set(
        xlabel="optimisation step",
        ylabel="negative ELBO (full-data units)",
        ylim=(lo - pad, hi + pad),
    )
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    return ax
