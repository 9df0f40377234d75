# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Posterior-predictive strategies: time and memory
#
# `benchmarks/ppc_strategies.py` times several ways to compute posterior-predictive
# class probabilities of the moons network (a NumPy loop over draws, the toolkit's
# compiled batched forward pass, PyMC's `sample_node` and `sample_posterior_predictive`,
# JAX / NumPyro) at several numbers of points, and records the median wall time and
# the peak extra memory of one call. This notebook plots its JSON result.
#
# It reads `benchmarks/results/ppc_strategies.json` (written by
# `python benchmarks/ppc_strategies.py`), else the committed reference result in
# `benchmarks/results/reference/`, else it runs the benchmark itself in quick mode
# (under `PYMC_BNN_QUICK=1`, in a single process to save time).

# %%
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

QUICK = os.environ.get("PYMC_BNN_QUICK") == "1"
print(f"quick mode: {QUICK}")

# the repository root: this notebook runs from notebooks/ (or from the root)
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "benchmarks").is_dir())
CANDIDATES = [ROOT / "benchmarks" / "results" / "ppc_strategies.json",
              ROOT / "benchmarks" / "results" / "reference" / "ppc_strategies.json"]

# %%
source = next((p for p in CANDIDATES if p.is_file()), None)
if source is None:  # run it, into a temporary folder removed afterwards
    with tempfile.TemporaryDirectory(prefix="ppc_strategies_") as tmp:
        out = Path(tmp) / "ppc_strategies.json"
        cmd = [sys.executable, str(ROOT / "benchmarks" / "ppc_strategies.py"), "--quick",
               "--out", str(out)]
        if QUICK:
            cmd += ["--isolation", "none"]
        print("no stored result; running:",
              " ".join(Path(c).name if "/" in c else c for c in cmd))
        subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, text=True)
        result = json.loads(out.read_text())
    print("result: a quick run made now")
else:
    result = json.loads(source.read_text())
    print(f"result: {source.relative_to(ROOT)}")

# %% [markdown]
# The rows: one per (strategy, number of points). Strategies that were skipped (e.g. a
# missing optional dependency, or more than the memory cap of draws x points) or failed
# are listed with the reason and left out of the plots.

# %%
rows = result["rows"]


def peak_mb(row):
    """Peak memory of one call, MB (``peak_extra_mb``; older files: ``peak_mb``)."""
    return row.get("peak_extra_mb", row.get("peak_mb"))


ok = [r for r in rows if r.get("status", "ok") == "ok" and r.get("median_s") is not None]
not_ok = [r for r in rows if r not in ok]
strategies = list(dict.fromkeys(r["strategy"] for r in ok))
sizes = sorted({int(r["n_points"]) for r in ok})
cell = {(r["strategy"], int(r["n_points"])): r for r in ok}

fmt = lambda v, spec: "—" if v is None else format(v, spec)  # noqa: E731
lines = ["| strategy | points | median s | peak MB |", "|---|---|---|---|"]
lines += [f"| {r['strategy']} | {int(r['n_points']):,} | {fmt(r['median_s'], '.3g')} | "
          f"{fmt(peak_mb(r), '.1f')} |" for r in ok]
display(Markdown("\n".join(lines)))
for r in not_ok:
    print(f"{r['strategy']} at {int(r['n_points']):,} points: "
          f"{r.get('status', '?')} ({r.get('reason') or 'no reason recorded'})")
if "fit" in result:
    print("fit:", {k: result["fit"][k] for k in ("method", "n_iter", "test_accuracy")
                   if k in result["fit"]})

# %% [markdown]
# ## Median time per call
#
# One group of bars per number of points, one bar per strategy; log scale.

# %%
def grouped_bars(ax, values, ylabel):
    width = 0.8 / max(len(strategies), 1)
    x = np.arange(len(sizes))
    colors = plt.get_cmap("tab10").colors
    for i, s in enumerate(strategies):
        v = [values(cell[(s, n)]) if (s, n) in cell else np.nan for n in sizes]
        v = [np.nan if (u is None or u <= 0) else u for u in v]
        ax.bar(x + (i - (len(strategies) - 1) / 2) * width, v, width,
               label=s, color=colors[i % len(colors)])
    ax.set_xticks(x, [f"{n:,} points" for n in sizes])
    ax.set_yscale("log")
    ax.set(xlabel="points evaluated", ylabel=ylabel)
    ax.grid(axis="y", which="major", alpha=0.4)
    ax.legend(fontsize=8, ncols=2)
    return ax


fig, ax = plt.subplots(figsize=(10, 5))
grouped_bars(ax, lambda r: r["median_s"], "median wall time per call (s, log scale)")
ax.set_title("Posterior predictive of the moons BNN: time per call");

# %% [markdown]
# ## Peak extra memory per call

# %%
if any(peak_mb(r) for r in ok):
    fig, ax = plt.subplots(figsize=(10, 5))
    grouped_bars(ax, peak_mb, "peak extra memory of one call (MB, log scale)")
    ax.set_title("Posterior predictive of the moons BNN: memory per call")
else:
    print("no memory measurements in this result")

# %% [markdown]
# Read the times within one result only: the benchmark machine has 2 shared cores, and
# a quick run uses fewer draws (see `config` in the JSON) than the full one.

# %%
print({k: result["config"][k] for k in ("quick", "n_draws", "n_iter", "repeats", "isolation")
       if k in result.get("config", {})})
