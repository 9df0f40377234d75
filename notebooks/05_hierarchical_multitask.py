# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Hierarchical multi-task BNN on 18 rotated moons
#
# Eighteen related classification tasks: each is a two-moons data set (noise 0.3,
# scaled) rotated by its own angle drawn from Normal(0, 90°), with only 50 training
# and 50 test points. Fit **one network per task** and each net sees 50 noisy points;
# fit **one hierarchical network** over all tasks (`fit(X, y, groups=g)`) and every
# task gets its own weights, drawn around population-level weights, so that what one
# task learns about the moons' shape informs the others while each keeps its own
# rotation (T. Wiecki's "hierarchical Bayesian neural networks" benchmark).
#
# We fit both with mean-field ADVI and with NUTS (the default backends: numpyro for the
# separate networks, nutpie for the hierarchical one, whose correlated group scales it
# adapts to in a third of numpyro's steps), compare train and test accuracy and fit
# time with the reference numbers of the issue, look at the decision surfaces task by
# task, and at how far the posterior lets each layer's per-task weights stray from the
# population (the group spreads `w0_sd`, `w1_sd`, `w2_sd`). What this notebook shows is
# why a plain `BayesianMLPClassifier().fit(X, y, groups=g)` samples with NUTS
# (`inference="auto"`): ADVI gains little from the hierarchy.
#
# Set `PYMC_BNN_QUICK=1` for a fast run (2 tasks, fewer ADVI steps and NUTS draws,
# coarser maps). Timings are wall-clock on a shared 2-core machine: expect noise.

# %%
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.datasets import make_rotated_moons
from pymc_bnn.plotting import posterior_intervals, task_maps

QUICK = os.environ.get("PYMC_BNN_QUICK") == "1"
SEED = 0
N_TASKS = 2 if QUICK else 18
N_ITER = 1_000 if QUICK else None  # ADVI steps; None: the estimator's default (10,000)
N_DRAWS = 50 if QUICK else 500  # ADVI: draws per prediction; NUTS: draws per chain
TUNE = 100 if QUICK else 1000  # NUTS warm-up steps per chain (2 chains)
RESOLUTION = 20 if QUICK else 60  # map grid points per axis, per task panel
# at full settings the main comparison is also saved as a README figure
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").is_file())
FIGURES = None if QUICK else ROOT / "docs" / "figures"
if FIGURES is not None:
    FIGURES.mkdir(parents=True, exist_ok=True)
print(f"quick mode: {QUICK}")

# %% [markdown]
# ## Data: 18 rotated two-moons tasks, 50 train / 50 test points each

# %%
data = make_rotated_moons(n_tasks=N_TASKS, n_samples=100, noise=0.3, random_state=SEED)
X_train, y_train, g_train = data["X_train"], data["y_train"], data["groups_train"]
X_test, y_test, g_test = data["X_test"], data["y_test"], data["groups_test"]
TASKS = np.unique(g_train)
print(f"{TASKS.size} tasks; train {X_train.shape}, test {X_test.shape}")
print("rotation angles (degrees):", np.round(data["angles"]).astype(int))

fig, axes = plt.subplots(1, 6, figsize=(13, 2.4), sharex=True, sharey=True,
                         layout="constrained")
for ax, task in zip(axes, TASKS):
    rows = g_train == task
    for k, marker in ((0, "o"), (1, "s")):
        ax.scatter(*X_train[rows & (y_train == k)].T, s=10, marker=marker)
    ax.set(title=f"task {task}: {data['angles'][task]:+.0f}°", aspect="equal",
           xlim=(-3, 3), ylim=(-3, 3))
fig.suptitle("Training points of the first six tasks (one rotated moons data set each)");

# %% [markdown]
# ## Fit: separate networks vs one hierarchical network
#
# The same 2-5-5-1 tanh architecture throughout, with Normal priors: N(0, 1) for the
# NUTS and the hierarchical fits, and for the separate ADVI networks one scale per
# layer from the Laplace evidence (the default `prior_sigma="auto"`). *Separate*:
# 18 independent estimators, each fit on its task's 50 training points (the fit time is
# the sum of the 18 fits). *Hierarchical*: one estimator on all 900 training points
# with `groups=`; every weight matrix and bias vector is per task,
# `w[g] = w_mu + w_sd * eps[g]`, with a HalfNormal(1) spread `w_sd` per layer.
#
# NUTS runs 2 chains of `TUNE` warm-up and `N_DRAWS` draws each. For the hierarchical
# net we also try `nuts_init="advi"`: start the chains from draws of a quick ADVI fit
# rather than from PyMC's jittered initial point.

# %%
SETTINGS = {
    "ADVI": dict(inference="advi", n_iter=N_ITER),
    "NUTS": dict(inference="nuts", tune=TUNE),
    "NUTS, ADVI init": dict(inference="nuts", tune=TUNE, nuts_init="advi"),
}


def fit_separate(**kwargs):
    """One estimator per task, each fit on its own task's training rows."""
    return {task: BayesianMLPClassifier(n_draws=N_DRAWS, random_state=SEED, **kwargs)
            .fit(X_train[g_train == task], y_train[g_train == task]) for task in TASKS}


def fit_hierarchical(**kwargs):
    clf = BayesianMLPClassifier(n_draws=N_DRAWS, random_state=SEED, **kwargs)
    return clf.fit(X_train, y_train, groups=g_train)


def predict(model, X, groups):
    """Per-task predictions: a hierarchical estimator, or a dict task -> estimator."""
    if isinstance(model, dict):
        out = np.empty(len(X), dtype=y_train.dtype)
        for task, clf in model.items():
            out[groups == task] = clf.predict(X[groups == task])
        return out
    return model.predict(X, groups=groups)  # groups=: each task's own weights


models, rows = {}, []
for kind, fit_fn in (("separate", fit_separate), ("hierarchical", fit_hierarchical)):
    for method, kwargs in SETTINGS.items():
        if kind == "separate" and method == "NUTS, ADVI init":
            continue
        t0 = time.perf_counter()
        model = fit_fn(**kwargs)
        seconds = time.perf_counter() - t0
        name = f"{kind}, {method}"
        models[name] = model
        # every task has 50 train and 50 test points: the overall accuracy is also
        # the mean of the per-task accuracies
        train_acc = np.mean(predict(model, X_train, g_train) == y_train)
        test_acc = np.mean(predict(model, X_test, g_test) == y_test)
        rows.append((name, seconds, train_acc, test_acc))
        print(f"{name}: {seconds:.0f} s, train {train_acc:.1%}, test {test_acc:.1%}")

# %% [markdown]
# ## Accuracy and fit time
#
# Below the measured rows, the numbers quoted in the issue (other machines, other
# implementations: for orientation only).

# %%
table = ["| model | fit time (s) | train accuracy | test accuracy |", "|---|---|---|---|"]
table += [f"| {n} | {t:.0f} | {a:.1%} | {b:.1%} |" for n, t, a, b in rows]
table += [
    "| *issue: separate BNNs (blog)* | | *86.89%* | *82.22%* |",
    "| *issue: hierarchical BNN (blog, blackjax NUTS)* | *59* | *91.00%* | *87.33%* |",
    "| *issue: quick PyMC model, separate, ADVI* | | | *76.4%* |",
    "| *issue: quick PyMC model, separate, NUTS* | | | *84.7%* |",
    "| *issue: quick PyMC model, hierarchical, ADVI* | *35* | | *87.2%* |",
    "| *issue: quick PyMC model, hierarchical, NUTS (numpyro)* | *194* | | *88.2%* |",
]
display(Markdown("\n".join(table)))
acc = {name: test for name, _, _, test in rows}
for method in ("ADVI", "NUTS"):
    gain = acc[f"hierarchical, {method}"] - acc[f"separate, {method}"]
    print(f"{method}: hierarchical - separate test accuracy = {100 * gain:+.1f} points")

# %% [markdown]
# Did NUTS sample cleanly? Divergent transitions per fit (hierarchical models are
# prone to them when a group spread approaches zero):

# %%
for name, model in models.items():
    if "NUTS" in name:
        fits = model.values() if isinstance(model, dict) else [model]
        n_div = sum(int(m.posterior_.idata.sample_stats["diverging"].sum()) for m in fits)
        n_transitions = sum(m.chains * m.n_draws for m in fits)
        print(f"{name}: {n_div} divergent of {n_transitions} transitions")

# %% [markdown]
# ### Task by task
#
# Test accuracy of every task, separate against hierarchical (NUTS). Points above the
# diagonal are tasks that the hierarchical network classifies better.

# %%
def per_task_accuracy(model):
    hits = predict(model, X_test, g_test) == y_test
    return np.array([hits[g_test == task].mean() for task in TASKS])


sep_acc = per_task_accuracy(models["separate, NUTS"])
hier_acc = per_task_accuracy(models["hierarchical, NUTS"])
fig, ax = plt.subplots(figsize=(4.8, 4.6), layout="constrained")
ax.plot([0.5, 1], [0.5, 1], ls="--", color="0.5", lw=1)
ax.scatter(sep_acc, hier_acc, s=30)
for task, a, b in zip(TASKS, sep_acc, hier_acc):
    ax.annotate(str(task), (a, b), xytext=(3, 3), textcoords="offset points", fontsize=8)
ax.set(xlabel="separate network (NUTS)", ylabel="hierarchical network (NUTS)",
       title="Test accuracy per task", xlim=(0.5, 1.02), ylim=(0.5, 1.02), aspect="equal")
print(f"hierarchical better on {np.sum(hier_acc > sep_acc)}, worse on "
      f"{np.sum(hier_acc < sep_acc)}, tied on {np.sum(hier_acc == sep_acc)} of {TASKS.size}")

# %% [markdown]
# ## Decision surfaces
#
# The posterior predictive mean P(y = 1) of every task, training points overlaid: the
# separate networks (top) against the hierarchical network (bottom, each panel
# predicted with that task's weights), both by NUTS. Panel titles give the rotation
# angle and the task's test accuracy.

# %%
def surfaces(kind, models_by_title, suptitle, vmax=None):
    ncols = 6 if TASKS.size > 6 else TASKS.size
    nrows = -(-TASKS.size // ncols)
    fig = plt.figure(figsize=(1.75 * ncols + 1.2, 2 * (1.75 * nrows + 0.5)),
                     layout="constrained")
    for subfig, (title, (model, task_acc)) in zip(fig.subfigures(2, 1),
                                                  models_by_title.items()):
        titles = {t: f"{t}: {data['angles'][t]:+.0f}°, {a:.0%}"
                  for t, a in zip(TASKS, task_acc)}
        task_maps(model, kind=kind, X=X_train, y=y_train, groups=g_train, titles=titles,
                  resolution=RESOLUTION, vmax=vmax, ax=subfig.subplots(nrows, ncols),
                  suptitle=title)
    fig.suptitle(suptitle, fontsize="x-large")
    return fig


nuts_pair = {
    f"separate networks (NUTS): test accuracy {acc['separate, NUTS']:.1%}":
        (models["separate, NUTS"], sep_acc),
    f"hierarchical network (NUTS): test accuracy {acc['hierarchical, NUTS']:.1%}":
        (models["hierarchical, NUTS"], hier_acc),
}
fig = surfaces("mean", nuts_pair, "Rotated moons: posterior predictive mean per task")
if FIGURES is not None:
    fig.savefig(FIGURES / "rotated_moons_hierarchical.png", dpi=90)

# %% [markdown]
# The posterior predictive standard deviation of P(y = 1), on one colour scale up to
# 0.5 (the largest possible standard deviation of a probability):

# %%
surfaces("std", nuts_pair, "Rotated moons: posterior predictive std per task", vmax=0.5);

# %% [markdown]
# And the two ADVI fits' means, for comparison with NUTS:

# %%
advi_pair = {
    f"separate networks (ADVI): test accuracy {acc['separate, ADVI']:.1%}":
        (models["separate, ADVI"], per_task_accuracy(models["separate, ADVI"])),
    f"hierarchical network (ADVI): test accuracy {acc['hierarchical, ADVI']:.1%}":
        (models["hierarchical, ADVI"], per_task_accuracy(models["hierarchical, ADVI"])),
}
surfaces("mean", advi_pair, "Rotated moons, ADVI: posterior predictive mean per task");

# %% [markdown]
# ## How different are the tasks' weights? The group spreads
#
# `w{i}_sd` (`b{i}_sd`) is the standard deviation of layer *i*'s weights (biases)
# across tasks around the population weights: near 0, every task shares that layer;
# large, each task has its own. Posterior mean and 94% interval:

# %%
SPREADS = [f"{kind}{layer}_sd" for kind in ("w", "b") for layer in range(3)]
hierarchical = {method: models[f"hierarchical, {method}"] for method in SETTINGS}
fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
posterior_intervals({m: clf.idata_ for m, clf in hierarchical.items()}, SPREADS, log=True,
                    ax=ax, xlabel="group spread", title="Posterior group spreads per layer")
for method, clf in hierarchical.items():
    means = {v: float(clf.idata_.posterior[v].mean()) for v in SPREADS}
    print(f"{method:>16}: " + ", ".join(f"{v} {m:.2f}" for v, m in means.items()))

# %% [markdown]
# ## Population weights: predictions without `groups`
#
# Without `groups=` (or for a task label not seen in training) the hierarchical
# network predicts with the population weights `w_mu`; `score(X, y)` does the same.
# With tasks rotated every which way, no single decision surface fits them all, so
# this is a poor classifier of the known tasks: always pass `groups=` for them.

# %%
hier_nuts = models["hierarchical, NUTS"]
print(f"population weights (score without groups): test accuracy "
      f"{hier_nuts.score(X_test, y_test):.1%}")
print(f"per-task weights (predict with groups): test accuracy "
      f"{np.mean(hier_nuts.predict(X_test, groups=g_test) == y_test):.1%}")

# %% [markdown]
# **What we see** (full settings, seed 0; times on a shared 2-core machine, so only
# their order of magnitude means much):
#
# * **With NUTS the hierarchy pays off**: the hierarchical network reaches ~90% test
#   accuracy against ~85% for separate networks, about 5 points more, better on 15 of
#   the 18 tasks, worse on one and tied on two. That meets the target (at least
#   88%, and at least 4 points above separate networks fit the same way) and is above
#   the reference numbers (87.3% for the blog's hierarchical BNN, 88.2% for the
#   quick PyMC model). With nutpie, the default NUTS backend for hierarchical networks,
#   2 chains of 1,500 steps took 51 s here. That is why `BayesianMLPClassifier().fit(X, y, groups=g)` samples with NUTS by
#   default (`inference="auto"`; see `research/notes/calibration-log.md`).
# * The separate networks' surfaces are close to straight lines through 50 noisy
#   points; the hierarchical network's are all the same S-shaped moons boundary,
#   rotated per task, with the uncertainty band hugging it: each task borrows the
#   boundary's shape from the others.
# * The posterior says *where* the tasks differ: the input layer's spread `w0_sd`
#   is large (~0.8) and every deeper spread is small (0.04 to 0.15). That is what a
#   rotation is: rotating the inputs is a linear map that the first layer's weights
#   absorb, so the tasks can share everything after it.
# * **Mean-field ADVI gains little from the hierarchy** (about 1 point at full
#   settings): it halves the input-layer spread (~0.4) and shrinks the others further,
#   so its tasks are pulled too close to the population. Mean-field ADVI is known to
#   under-estimate variances, and scale parameters near zero (the hierarchical
#   "funnel") are where it suffers most. It is, however, fast (seconds).
# * Warm-starting NUTS from ADVI draws (`nuts_init="advi"`) reached the same accuracy
#   and the same spreads, in about the same time, so there was little for it to fix
#   here.
# * `score(X, y)`, which uses the population weights, is far below the per-task
#   accuracy: pass `groups=` to predict for known tasks.
