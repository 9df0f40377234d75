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
# # Three-class spiral: Bayesian vs plain MLP uncertainty
#
# Three interleaved spiral arms in the plane. A Bayesian MLP (the package's default:
# mean-field ADVI and a Laplace fit mixed, with a linear part; `inference_`) and a
# scikit-learn `MLPClassifier` of the same architecture both classify them well; the
# question is what they say **away from the data**. For the Bayesian net we map the
# predictive entropy (total uncertainty) and the mutual information between the label
# and the weights (the epistemic part: disagreement between posterior draws); for the
# plain MLP, the entropy of its single softmax output.
#
# Set `PYMC_BNN_QUICK=1` for a fast run (fewer steps and points, coarser maps).

# %%
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.plotting import compare_maps, uncertainty_map

QUICK = os.environ.get("PYMC_BNN_QUICK") == "1"
SEED = 0
HIDDEN = (20, 20)
N_ITER = 3_000 if QUICK else 10_000  # ADVI steps
N_DRAWS = 100 if QUICK else 500  # posterior draws per prediction
N_PER_ARM = 120 if QUICK else 200
RESOLUTION = 40 if QUICK else 120  # map grid points per axis
LIMS = (-4.0, 4.0)  # the maps reach well beyond the data (radius <= 2.5)
# at full settings the entropy comparison is also saved as a README figure
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").is_file())
FIGURES = None if QUICK else ROOT / "docs" / "figures"
if FIGURES is not None:
    FIGURES.mkdir(parents=True, exist_ok=True)
print(f"quick mode: {QUICK}")


# %% [markdown]
# ## Data: a seeded three-arm spiral

# %%
def spiral(n_per_arm, *, n_arms=3, turns=0.9, noise=0.2, radius=2.5, seed=0):
    """Points on ``n_arms`` interleaved spiral arms; returns X (n, 2) and y (n,)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for k in range(n_arms):
        r = rng.uniform(0.1, 1.0, n_per_arm)
        theta = 2 * np.pi * (k / n_arms + turns * r) + rng.normal(0.0, noise, n_per_arm)
        X.append(radius * np.column_stack([r * np.cos(theta), r * np.sin(theta)]))
        y.append(np.full(n_per_arm, k))
    return np.concatenate(X), np.concatenate(y)


X, y = spiral(N_PER_ARM, seed=SEED)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=SEED)
print(f"train {X_train.shape}, test {X_test.shape}")

fig, ax = plt.subplots(figsize=(5, 4.5))
for k in range(3):
    ax.scatter(*X_train[y_train == k].T, s=10, label=f"arm {k}")
ax.set(xlabel="$x_1$", ylabel="$x_2$", title="Three-arm spiral (training part)",
       aspect="equal")
ax.legend();

# %% [markdown]
# ## Fit both networks

# %%
t0 = time.perf_counter()
# the package's default as a user gets it (at full settings no n_iter: a set n_iter
# makes inference="auto" ADVI alone, without the Laplace half and the linear part)
bnn = BayesianMLPClassifier(hidden_layer_sizes=HIDDEN, n_iter=N_ITER if QUICK else None,
                            n_draws=N_DRAWS, random_state=SEED).fit(X_train, y_train)
bnn_s = time.perf_counter() - t0
t0 = time.perf_counter()
mlp = MLPClassifier(hidden_layer_sizes=HIDDEN, max_iter=3_000, random_state=SEED)
mlp.fit(X_train, y_train)
mlp_s = time.perf_counter() - t0
print(f"Bayesian MLP (default, {bnn.inference_}): {bnn_s:.1f} s, test accuracy "
      f"{bnn.score(X_test, y_test):.1%}")
print(f"sklearn MLPClassifier: {mlp_s:.1f} s, test accuracy {mlp.score(X_test, y_test):.1%}")

# %% [markdown]
# ## Uncertainty maps
#
# Predictive entropy on one colour scale (at most ln 3 ≈ 1.10 nats, a uniform guess
# over the three classes):

# %%
with plt.rc_context({"font.size": 13}):  # readable when shown 600 px wide
    fig = compare_maps({"Bayesian MLP (default)": bnn, "sklearn MLPClassifier": mlp},
                       kind="entropy", X=X_test, y=y_test, lims=LIMS, resolution=RESOLUTION,
                       panel_size=3.6, suptitle="Three-arm spiral: predictive entropy")
if FIGURES is not None:
    fig.savefig(FIGURES / "spiral_entropy_bnn_vs_mlp.png", dpi=110)

# %% [markdown]
# The Bayesian net's mutual information: how much its posterior draws disagree.

# %%
uncertainty_map(bnn, kind="mutual_info", X=X_test, y=y_test, lims=LIMS,
                resolution=RESOLUTION, title="Bayesian MLP: mutual information");

# %% [markdown]
# How often is each network nearly certain (entropy below 0.1 nats) far from the data,
# at radius 3.2 to 4 (the data end at 2.5)? Beside the default we fit the classic
# example's posterior: Normal(0, 1) priors on every weight, untempered
# (`prior_sigma=1.0, posterior_temperature=1.0`).

# %%
classic = BayesianMLPClassifier(hidden_layer_sizes=HIDDEN, n_iter=N_ITER, n_draws=N_DRAWS,
                                prior_sigma=1.0, posterior_temperature=1.0,
                                random_state=SEED).fit(X_train, y_train)
print(f"classic Bayesian MLP: test accuracy {classic.score(X_test, y_test):.1%}")
rng = np.random.default_rng(SEED + 1)
angle, radius = rng.uniform(0, 2 * np.pi, 2000), rng.uniform(3.2, 4.0, 2000)
far = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
p = mlp.predict_proba(far)
far_entropy = {
    "Bayesian MLP (default)": bnn.predict_uncertainty(far)["entropy"],
    "Bayesian MLP (classic: N(0, 1), untempered)": classic.predict_uncertainty(far)["entropy"],
    "sklearn MLP": -(p * np.log(np.clip(p, 1e-300, None))).sum(axis=1),
}
for name, h in far_entropy.items():
    print(f"{name}: nearly certain at {np.mean(h < 0.1):.0%} of the far points, "
          f"median entropy {np.median(h):.2f} nats")
print(f"default: prior sd per layer {np.round(bnn.prior_sigma_, 2)}, "
      f"temperature {bnn.posterior_temperature_:g}")

# %% [markdown]
# **What we see.** Both networks fit the arms and are unsure on the borders between
# them. Away from the data the plain MLP extrapolates its softmax into large regions
# where it is nearly certain; only thin bands of doubt continue the decision boundaries
# outwards (nearly certain at 95% of the far points). The *classic* Bayesian net
# (Normal(0, 1) priors, the posterior as fitted) stays unsure there: its draws
# disagree, and it is nearly certain at only 16% of the far points. The **default**
# Bayesian net is tuned for calibrated probabilities on held-out data like the training
# data: its per-layer prior scales (chosen by the evidence) and its cold temperature
# (chosen by cross-fitting) narrow the posterior, and far from the data it is nearly
# certain at about half of the points (54%; at 85% in this notebook's previous
# execution, when the default was ADVI alone, before its Laplace half and linear part).
# This is the price of
# calibration measured on data like the training data; it is listed among the known
# limits in the README. Where uncertainty *far from the data* matters more than
# calibration near it, use the classic settings printed above (or NUTS). On digits, the
# default still flags unseen classes better than the MLP (notebook 08, OOD AUROC).
