"""A self-contained HTML report of a model's calibration and uncertainty on held-out data.

:func:`write_report` turns predictions a user already holds (class probabilities, or
regression means and standard deviations) and the true targets into one folder:

- ``index.html``: a single page that can be mailed as it is (figures embedded as
  base64 PNG, inline CSS, no JavaScript, no external resources) with a metrics table,
  three figures each with a plain-language legend, and an "about this model" table;
- the three figures as PNG files, and ``overview.png`` with the three side by side
  (e.g. for a README); for two classes a fourth, ``threshold.png``: precision and recall
  of the second class against the decision threshold;
- ``metrics.json``: the numbers of the metrics table, i.e.
  :func:`pymc_bnn.metrics.classification_summary` or
  :func:`pymc_bnn.metrics.regression_summary`.

This module only consumes :mod:`pymc_bnn.metrics` and :mod:`pymc_bnn.plotting`. Figures
are drawn on :class:`matplotlib.figure.Figure` objects that pyplot never sees, so a
report neither changes the matplotlib backend nor leaves figures open.

Examples
--------
>>> import tempfile
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, size=60)
>>> p1 = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, size=60), 0.01, 0.99)  # P(y = 1)
>>> path = write_report(tempfile.mkdtemp(), task="classification", y_true=y, proba=p1,
...                     info={"model": "BayesianMLPClassifier", "hidden_layer_sizes": "(8,)"})
>>> path.name, sorted(p.name for p in path.parent.iterdir())
('index.html', ['index.html', 'metrics.json', 'overview.png', 'reliability.png', \
'risk_coverage.png', 'threshold.png', 'uncertainty.png'])
"""

from __future__ import annotations

import base64
import html
import io
import json
import numbers
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike
from scipy.special import ndtri

from pymc_bnn import metrics, plotting
from pymc_bnn.network._checks import check_choice

__all__ = ["write_report"]

TASKS = ("classification", "regression")

#: Per-point arrays of each task (checked against ``len(y_true)``), and the required ones.
_ARRAYS = {
    "classification": ("proba", "entropy", "mutual_info"),
    "regression": ("mean", "std", "lower", "upper"),
}
_REQUIRED = {"classification": ("proba",), "regression": ("mean", "std")}
_OPTIONS = {"classification": ("classes",), "regression": ("interval",)}

#: Bins of the ECE in the table and of the reliability diagram (the same number).
_N_BINS = 15
#: Nominal levels of the central Gaussian intervals of the regression calibration plot.
_LEVELS = np.arange(1, 10) / 10
_PANEL_SIZE = (5.2, 4.4)
_DPI = 110

#: Metrics table: key -> (name, plain-language meaning), per task.
_METRIC_TEXT = {
    "classification": {
        "n": ("points", "held-out points scored"),
        "accuracy": (
            "accuracy",
            "share of points whose most probable class is the true one (higher is better)",
        ),
        "nll": (
            "log loss",
            "mean negative log-probability of the true class, in nats; "
            "punishes confident mistakes (lower is better)",
        ),
        "brier": (
            "Brier score",
            "mean squared error of the predicted probabilities, as "
            "scikit-learn's brier_score_loss computes it: with two "
            "classes that of the second class's probability, from 0 "
            "to 1; with more, summed over the classes, from 0 to 2 "
            "(lower is better)",
        ),
        "multiclass_brier": (
            "multi-class Brier score",
            "squared error of the predicted "
            "probabilities summed over all "
            "classes, from 0 to 2: twice the "
            "Brier score with two classes, the "
            "same with more (lower is better)",
        ),
        "ece": (
            "ECE",
            f"expected calibration error: mean gap between confidence and "
            f"accuracy over {_N_BINS} bins (lower is better; 0 = calibrated)",
        ),
        "aurc": (
            "AURC",
            "area under the risk-coverage curve, points ranked by confidence (lower is better)",
        ),
    },
    "regression": {
        "n": ("points", "held-out points scored"),
        "rmse": ("RMSE", "root mean squared error of the predicted mean (lower is better)"),
        "mae": ("MAE", "mean absolute error of the predicted mean (lower is better)"),
        "nll": (
            "Gaussian NLL",
            "mean negative log density of the truth under "
            "Normal(mean, std), in nats (lower is better)",
        ),
        "crps": (
            "CRPS",
            "continuous ranked probability score, in units of y: scores the "
            "whole predictive distribution (lower is better)",
        ),
        "coverage": (
            "interval coverage",
            "share of actual values inside their predictive "
            "interval (should be close to the nominal level)",
        ),
        "mean_interval_width": (
            "mean interval width",
            "in units of y (narrower is better, at the right coverage)",
        ),
    },
}

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{margin-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.3em .7em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{display:inline-block;width:31%;min-width:320px;margin:0 1% 1.5em 0;vertical-align:top}
img{width:100%;height:auto}
figcaption{font-size:.9em;color:#444}
footer{font-size:.8em;color:#777;margin-top:2em}
"""


class _Panel(NamedTuple):
    """One figure of the report: its file, title, how to draw it on an Axes, its legend."""

    file: str
    title: str
    draw: Callable[[object], object]
    legend: str


# ------------------------------------------------------------------------------ checks
def _check_inputs(task: str, y_true, given: dict) -> int:
    """Check which arrays are given and their lengths; return ``len(y_true)``."""
    other = "regression" if task == "classification" else "classification"
    stray = [k for k in _ARRAYS[other] + _OPTIONS[other] if given[k] is not None]
    if stray:
        verb = "is" if len(stray) == 1 else "are"
        raise ValueError(f"{', '.join(stray)} {verb} for task={other!r}, not task={task!r}.")
    for name in _REQUIRED[task]:
        if given[name] is None:
            raise ValueError(f"{name} is required for task={task!r}.")
    if y_true is None or np.ndim(y_true) != 1 or np.shape(y_true)[0] == 0:
        raise ValueError(f"y_true must be a non-empty 1-D array; got shape {np.shape(y_true)}.")
    n = np.shape(y_true)[0]
    for name in _ARRAYS[task]:
        value = given[name]
        if value is None:
            continue
        shape = np.shape(value)
        want_ndim = (1, 2) if name == "proba" else (1,)
        if len(shape) not in want_ndim or shape[0] != n:
            want = "(n_samples, n_classes) or (n_samples,)" if name == "proba" else "(n_samples,)"
            raise ValueError(
                f"{name} must have shape {want} with n_samples = len(y_true) = {n}; "
                f"got shape {shape}."
            )
        if name != "proba":
            try:
                finite = np.all(np.isfinite(np.asarray(value, dtype=float)))
            except (TypeError, ValueError):
                finite = False
            if not finite:
                raise ValueError(f"{name} must hold finite numbers.")
    return n


def _info_rows(info) -> list[tuple[str, str]]:
    """``info`` as (key, value) strings, not yet escaped."""
    if info is None:
        return []
    if not isinstance(info, Mapping):
        raise ValueError(
            f"info must be a dict of str -> str or number, or None; got {type(info).__name__}."
        )
    rows = []
    for key, value in info.items():
        if isinstance(value, (Mapping, np.ndarray)):
            raise ValueError(
                f"info must be flat (values str or numbers); info[{key!r}] is a "
                f"{type(value).__name__}."
            )
        if isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
            value = f"{float(value):.6g}"
        rows.append((str(key), str(value)))
    return rows


# ----------------------------------------------------------------------------- panels
def _threshold_panel(y, p_positive, classes, cost_fn_fp) -> _Panel:
    """Two classes: precision and recall of the second class against the threshold,
    with 0.5 and (``cost_fn_fp``) the cost's threshold marked."""
    from pymc_bnn.estimators._decision import cost_threshold, threshold_curves

    curves = threshold_curves(np.asarray(y) == classes[1], p_positive)

    def draw(ax):
        t = curves["thresholds"]
        ax.plot(t, curves["precision"], label="precision")
        ax.plot(t, curves["recall"], label="recall")
        ax.plot(
            t, curves["predicted_positive"], ls=":", color="0.4", label="share predicted positive"
        )
        ax.axvline(0.5, color="0.6", lw=1)
        if cost_fn_fp is not None:
            ax.axvline(
                cost_threshold(cost_fn_fp),
                color="C3",
                lw=1.5,
                label=f"cost threshold (--cost-fn-fp {cost_fn_fp:g})",
            )
        ax.set_xlabel(f"threshold on P({classes[1]})")
        ax.set_ylim(-0.02, 1.02)
        # below the axes: the legend hides no curve
        ax.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize=8, frameon=False
        )

    return _Panel(
        "threshold.png",
        f"Predicting {classes[1]!r}: precision and recall by threshold",
        draw,
        f"Predicting {classes[1]!r} wherever its probability is at least the "
        "threshold: precision (the share of those predictions that are right) and "
        "recall (the share of its rows found). The grey line is the 0.5 threshold; "
        "where a missed case costs r false alarms, the threshold that minimises "
        "the expected cost is 1 / (1 + r) (--cost-fn-fp r; red line).",
    )


def _classification_panels(y, proba, classes, entropy, mutual_info) -> list[_Panel]:
    p = np.asarray(proba, dtype=float)
    p = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    labels = np.unique(y) if classes is None else np.asarray(classes)
    correct = labels[p.argmax(axis=1)] == y
    entropy = metrics.predictive_entropy(p) if entropy is None else np.asarray(entropy, float)

    def reliability(ax):
        plotting.reliability_diagram(
            y, p, n_bins=_N_BINS, classes=labels, confidence="top", ax=ax, label="observed"
        )

    def risk_coverage(ax):
        plotting.risk_coverage_plot(y, p, classes=labels, ax=ax, label="ranked by confidence")
        if mutual_info is not None:
            plotting.risk_coverage_plot(
                y,
                p,
                uncertainty=mutual_info,
                classes=labels,
                ax=ax,
                label="ranked by mutual information",
            )

    def uncertainty(ax):
        ax.set_title("Predictive entropy: correct vs wrong")
        plotting.uncertainty_histogram(entropy, correct=correct, ax=ax)

    return [
        _Panel(
            "reliability.png",
            "Calibration (reliability diagram)",
            reliability,
            "Predictions are grouped by their confidence (the probability given to the "
            "predicted class); each point shows how often those predictions were right. "
            "A calibrated model's points lie on the dashed diagonal: below it the model "
            "is over-confident (it says 90% but is right less often), above it "
            "under-confident. Grey bars count the predictions per bin; points resting "
            "on few predictions are noisy.",
        ),
        _Panel(
            "risk_coverage.png",
            "Selective prediction (risk-coverage)",
            risk_coverage,
            "Predictions are sorted from most to least certain; the curve gives the "
            "error rate when only the most certain share (the coverage) is kept. A "
            "useful uncertainty keeps the curve low on the left, rising only near "
            "coverage 1; the dotted line is the error rate with every point kept. "
            "Lower AURC is better.",
        ),
        _Panel(
            "uncertainty.png",
            "Uncertainty of right and wrong predictions",
            uncertainty,
            "Predictive entropy (total uncertainty) of correct and of wrong "
            "predictions, each histogram scaled to area 1. A model that knows when it "
            "does not know puts its wrong predictions at higher entropy: the two "
            "histograms should be well separated.",
        ),
    ]


def _coverage_calibration(ax, y, mu, sd):
    """Empirical coverage of central Gaussian intervals mean +- z std against nominal."""
    z = ndtri((1.0 + _LEVELS) / 2.0)
    observed = [metrics.interval_coverage(y, mu - zi * sd, mu + zi * sd) for zi in z]
    ax.plot([0, 1], [0, 1], ls="--", color="0.45", lw=1, label="perfect calibration")
    gap = float(np.mean(np.abs(np.asarray(observed) - _LEVELS)))
    ax.plot(_LEVELS, observed, marker="o", lw=1.6, label=f"observed (mean gap {gap:.3f})")
    ax.set(
        xlim=(0, 1),
        ylim=(0, 1),
        xlabel="nominal coverage of mean ± z·std",
        ylabel="observed coverage",
        title="Interval calibration",
    )
    ax.legend(loc="upper left")


def _regression_panels(y, mean, std, lower, upper, interval) -> list[_Panel]:
    y, mu, sd = (np.asarray(a, dtype=float) for a in (y, mean, std))
    covered = None
    if lower is not None:
        lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        covered = (lo <= y) & (y <= hi)

    def predicted(ax):
        plotting.predicted_vs_actual(y, mu, lower=lower, upper=upper, coverage=interval, ax=ax)

    def uncertainty(ax):
        ax.set_title("Predictive standard deviation")
        plotting.uncertainty_histogram(
            sd,
            correct=covered,
            ax=ax,
            xlabel="predictive std",
            labels=("interval covers the truth", "interval misses"),
        )

    split = (
        (
            " Split by whether the interval covered the truth (each histogram scaled to "
            "area 1): for a calibrated model misses happen at the nominal rate at every "
            "std, so both have the same shape; misses piling up at small std mean the "
            "model is over-confident there."
        )
        if covered is not None
        else ""
    )
    return [
        _Panel(
            "predicted_vs_actual.png",
            "Predicted vs actual",
            predicted,
            "Each point is one held-out row: its actual value (x) against the predicted "
            "mean (y), with its predictive interval when given. Good: points close to "
            "the dashed y = x line, and about the nominal share of intervals (e.g. 90%) "
            "crossing it; intervals that miss the truth are drawn in orange-red.",
        ),
        _Panel(
            "calibration.png",
            "Interval calibration",
            lambda ax: _coverage_calibration(ax, y, mu, sd),
            "Share of actual values inside the central Gaussian intervals mean ± z·std "
            "of nominal coverage 10%, 20%, ..., 90%. A calibrated model lies on the "
            "diagonal; below it the intervals are too narrow (over-confident), above it "
            "too wide.",
        ),
        _Panel(
            "uncertainty.png",
            "Predictive uncertainty",
            uncertainty,
            "How uncertain the model is across the held-out rows (predictive standard "
            "deviation)." + split,
        ),
    ]


def _png(panels: list[_Panel]) -> bytes:
    """The panels drawn side by side on one figure, as PNG bytes."""
    width, height = _PANEL_SIZE
    fig = Figure(figsize=(width * len(panels), height), layout="constrained")
    for ax, panel in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels):
        panel.draw(ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI)
    return buffer.getvalue()


# ------------------------------------------------------------------------------- html
def _percent(level: float) -> str:
    """0.9 -> '90%', 0.975 -> '97.5%'."""
    return f"{100 * float(level):g}%"


def _format(value) -> str:
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return f"{float(value):.4g}"


def _table(header: tuple[str, ...], rows, numeric_column: int | None = None) -> str:
    """An HTML table; every cell is escaped here."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(
            ('<td class="num">' if i == numeric_column else "<td>") + html.escape(str(c)) + "</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>\n" + "\n".join(body) + "</table>"


def _html(title: str, intro: str, metric_rows, figures, info_rows) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{intro}</p>",
        "<h2>Metrics</h2>",
        _table(("metric", "value", "meaning"), metric_rows, 1),
        "<h2>Figures</h2>",
    ]
    for panel, png in figures:
        data = base64.b64encode(png).decode("ascii")
        parts.append(
            f'<figure><img src="data:image/png;base64,{data}" '
            f'alt="{html.escape(panel.title)}"><figcaption><strong>'
            f"{html.escape(panel.title)}.</strong> {html.escape(panel.legend)}"
            "</figcaption></figure>"
        )
    if info_rows:
        parts += ["<h2>About this model</h2>", _table(("item", "value"), info_rows)]
    parts += [
        "<footer>Written by pymc_bnn.plotting.report.write_report.</footer>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(parts)


# ------------------------------------------------------------------------------- main
def write_report(
    out_dir: str | os.PathLike,
    *,
    task: str,
    y_true: ArrayLike,
    proba: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    entropy: ArrayLike | None = None,
    mutual_info: ArrayLike | None = None,
    mean: ArrayLike | None = None,
    std: ArrayLike | None = None,
    lower: ArrayLike | None = None,
    upper: ArrayLike | None = None,
    interval: float | None = None,
    info: Mapping[str, object] | None = None,
    title: str = "pymc_bnn report",
    cost_fn_fp: float | None = None,
) -> Path:
    """Write an HTML calibration and uncertainty report of held-out predictions.

    Parameters
    ----------
    out_dir : str or path
        Folder to write into (created with its parents if missing; files of the same
        names are overwritten).
    task : {"classification", "regression"}
    y_true : array of shape (n_samples,)
        True labels (classification) or values (regression).
    proba : array of shape (n_samples, n_classes), or (n_samples,) for binary
        Classification (required): predicted class probabilities, columns in
        ``classes`` order (1-D: probability of the second class).
    classes : array of shape (n_classes,), optional
        Classification: labels of ``proba``'s columns (e.g. ``clf.classes_``); default
        ``np.unique(y_true)``.
    entropy : array of shape (n_samples,), optional
        Classification: predictive entropy per point (nats); default computed from
        ``proba`` by :func:`pymc_bnn.metrics.predictive_entropy`.
    mutual_info : array of shape (n_samples,), optional
        Classification: mutual information per point (epistemic uncertainty); adds a
        second risk-coverage curve ranked by it.
    mean, std : arrays of shape (n_samples,)
        Regression (required): predictive means and standard deviations (> 0).
    lower, upper : arrays of shape (n_samples,), optional
        Regression: predictive interval bounds; both or neither.
    interval : float in (0, 1), optional
        Regression: nominal coverage of ``lower``/``upper`` (e.g. 0.9); needs them.
    info : dict of str -> str or number, optional
        Shown in an "about this model" table (e.g. data columns, settings, package
        versions); lists are joined with commas.
    title : str, default "pymc_bnn report"
    cost_fn_fp : float, optional
        Two classes: what a missed case of the second class costs, in false alarms; the
        threshold figure marks the threshold of least expected cost, ``1 / (1 +
        cost_fn_fp)`` (:mod:`pymc_bnn.estimators._decision`).

    Returns
    -------
    pathlib.Path
        ``out_dir / "index.html"``. Beside it: ``metrics.json`` (the summary dict of
        :func:`pymc_bnn.metrics.classification_summary` or
        :func:`pymc_bnn.metrics.regression_summary`), the three figures
        (classification: ``reliability.png``, ``risk_coverage.png``,
        ``uncertainty.png``; regression: ``predicted_vs_actual.png``,
        ``calibration.png``, ``uncertainty.png``) and ``overview.png`` (all three side
        by side).

    Raises
    ------
    ValueError
        For an unknown ``task``; a required array missing; an array of the other task;
        a per-point array whose length differs from ``y_true``'s or with NaN; ``interval``
        outside (0, 1) or without ``lower``/``upper``; an ``info`` that is not a flat
        dict; and the bad values :mod:`pymc_bnn.metrics` rejects. Nothing is written
        when the inputs are rejected.

    Notes
    -----
    Every user-supplied string (``title``, class labels, ``info``) is HTML-escaped.
    The reliability diagram bins the confidence (top-class probability) in the same
    15 bins as the table's ECE, so the two ECEs agree; the table's AURC ranks points
    by confidence, as the first risk-coverage curve does.

    Examples
    --------
    >>> import tempfile
    >>> y = np.array([0.1, 1.2, 1.9, 3.2])
    >>> path = write_report(tempfile.mkdtemp(), task="regression", y_true=y,
    ...                     mean=[0.0, 1.0, 2.0, 3.0], std=[0.3, 0.3, 0.3, 0.3],
    ...                     lower=[-0.5, 0.5, 1.5, 2.5], upper=[0.5, 1.5, 2.5, 3.5],
    ...                     interval=0.9)
    >>> import json
    >>> json.loads((path.parent / "metrics.json").read_text())["coverage"]
    1.0
    """
    task = check_choice("task", task, TASKS)
    given = dict(
        proba=proba,
        classes=classes,
        entropy=entropy,
        mutual_info=mutual_info,
        mean=mean,
        std=std,
        lower=lower,
        upper=upper,
        interval=interval,
    )
    _check_inputs(task, y_true, given)
    info_rows = _info_rows(info)
    y = np.asarray(y_true)
    text = _METRIC_TEXT[task]
    if task == "classification":
        summary = metrics.classification_summary(y, proba, classes=classes, n_bins=_N_BINS)
        labels = np.unique(y) if classes is None else np.asarray(classes)
        per_class = ", ".join(f"{html.escape(str(c))} ({int(np.sum(y == c))})" for c in labels)
        intro = (
            f"Classification, {summary['n']} held-out points, {len(labels)} classes. "
            f"Points per class: {per_class}."
        )
        panels = _classification_panels(y, proba, classes, entropy, mutual_info)
        if len(labels) == 2:
            p = np.asarray(proba, dtype=float)
            panels.append(_threshold_panel(y, p if p.ndim == 1 else p[:, 1], labels, cost_fn_fp))
        elif cost_fn_fp is not None:
            raise ValueError("cost_fn_fp applies to two classes.")
    else:
        if interval is not None:
            if lower is None:
                raise ValueError(
                    "interval is the nominal coverage of lower/upper: pass lower and upper too."
                )
            if (
                isinstance(interval, bool)
                or not isinstance(interval, numbers.Real)
                or not (0.0 < interval < 1.0)
            ):
                raise ValueError(f"interval must be a number in (0, 1); got {interval!r}.")
        summary = metrics.regression_summary(y, mean, std, lower=lower, upper=upper)
        intro = f"Regression, {summary['n']} held-out points"
        if lower is None:
            intro += " (no predictive intervals given)."
        elif interval is None:
            intro += ", with predictive intervals."
        else:
            intro += f", {_percent(interval)} predictive intervals."
            name, meaning = text["coverage"]
            text = {
                **text,
                "coverage": (
                    name,
                    meaning.replace("nominal level", f"nominal level, {_percent(interval)}"),
                ),
            }
        panels = _regression_panels(y, mean, std, lower, upper, interval)
    metric_rows = [(text[k][0], _format(v), text[k][1]) for k, v in summary.items()]
    if task == "regression" and lower is not None:
        bins = metrics.binned_coverage(y, mean, lower, upper)
        for k, (lo, hi, cov, n) in enumerate(
            zip(bins["low"], bins["high"], bins["coverage"], bins["count"])
        ):
            metric_rows.append(
                (
                    f"coverage, predicted {_format(lo)} to {_format(hi)}",
                    _format(cov),
                    f"Coverage among the {n} points whose predicted value is in this range "
                    f"(fifth {k + 1} of {len(bins['count'])} by predicted value): near the "
                    "nominal level in every fifth when the intervals follow the data's "
                    "spread.",
                )
            )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    for panel in panels:
        png = _png([panel])
        (out / panel.file).write_bytes(png)
        figures.append((panel, png))
    (out / "overview.png").write_bytes(_png(panels[:3]))
    (out / "metrics.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    index = out / "index.html"
    index.write_text(_html(str(title), intro, metric_rows, figures, info_rows), encoding="utf-8")
    return index
