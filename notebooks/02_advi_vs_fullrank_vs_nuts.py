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
# # Mean-field ADVI vs full-rank ADVI vs NUTS on two moons
#
# The same network (2-5-5-1 tanh, Normal priors: for ADVI with the per-layer scales the
# default `prior_sigma="auto"` chooses from the Laplace evidence, for NUTS N(0, 1), which
# is what "auto" means there) and data, three ways to
# approximate the posterior. Mean-field ADVI is the fastest but ignores correlations
# between weights and is known to under-estimate posterior spread; full-rank ADVI
# models the correlations; NUTS samples the exact posterior (up to Monte-Carlo error)
# within the modes its two chains find. All three are the posterior as fitted
# (untempered). We compare test accuracy, fit time, calibration and, above all,
# **where** each is uncertain.
#
# Set `PYMC_BNN_QUICK=1` for a fast run (fewer steps and draws, coarser maps).

# %%
import os
import time

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.datasets import moons_split
from pymc_bnn.plotting import compare_maps, reliability_diagram

QUICK = os.environ.get("PYMC_BNN_QUICK") == "1"
SEED = 0
RESOLUTION = 30 if QUICK else 120  # map grid points per axis
N_DRAWS = 50 if QUICK else 500  # VI: draws per prediction; NUTS: draws per chain
print(f"quick mode: {QUICK}")

# None: the estimator's defaults (10k ADVI / 20k full-rank steps, tune 1000). The ADVI
# fits are untempered (posterior_temperature=1.0), as NUTS's draws are: the maps compare
# the three posteriors as fitted, not the default's cross-fitted temperature
SETTINGS = {
    "mean-field ADVI": dict(inference="advi", n_iter=1_000 if QUICK else None,
                            posterior_temperature=1.0),
    "full-rank ADVI": dict(inference="fullrank_advi", n_iter=2_000 if QUICK else None,
                           posterior_temperature=1.0),
    "NUTS": dict(inference="nuts", tune=150 if QUICK else 1000, chains=2),
}

# %%
X_train, X_test, y_train, y_test = moons_split(random_state=SEED)

classifiers, rows = {}, []
for name, kwargs in SETTINGS.items():
    clf = BayesianMLPClassifier(n_draws=N_DRAWS, random_state=SEED, **kwargs)
    t0 = time.perf_counter()
    clf.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    classifiers[name] = clf
    steps = (f"{clf.loss_curve_.size:,} steps" if clf.loss_curve_.size
             else f"{clf.chains} x ({clf.tune} tune + {clf.n_draws} draws)")
    rows.append((name, steps, seconds, clf.score(X_test, y_test)))
    print(f"{name}: {seconds:.1f} s")

# %%
table = ["| method | budget | fit time (s) | test accuracy |", "|---|---|---|---|"]
table += [f"| {n} | {s} | {t:.1f} | {a:.1%} |" for n, s, t, a in rows]
display(Markdown("\n".join(table)))

# %% [markdown]
# ## Where is each method uncertain?
#
# The posterior predictive standard deviation of P(y = 1), on one colour scale.

# %%
compare_maps(classifiers, kind="std", X=X_test, y=y_test, resolution=RESOLUTION,
             suptitle="Posterior predictive std of P(y = 1)");

# %% [markdown]
# The epistemic part of the uncertainty (mutual information between the label and the
# weights), on one scale:

# %%
compare_maps(classifiers, kind="mutual_info", X=X_test, y=y_test, resolution=RESOLUTION,
             suptitle="Mutual information (nats)");

# %% [markdown]
# Mean-field ADVI concentrates its uncertainty in a narrow band along the decision
# boundary; full-rank ADVI and NUTS spread it further into the regions without data.
# All three predict the test half about equally well.

# %%
fig, ax = plt.subplots(figsize=(5.5, 5))
for i, (name, clf) in enumerate(classifiers.items()):
    reliability_diagram(y_test, clf.predict_proba(X_test), classes=clf.classes_, ax=ax,
                        label=name, n_bins=8, show_counts=i == 0)
