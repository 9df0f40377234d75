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
# # Bayesian MLP regression: priors, widths, NUTS vs ADVI, heteroscedastic noise
#
# The example of the NumPyro Bayesian-neural-network lecture: `x ~ U(-1, 1)` and
# `y = x sin(5x) + N(0, 0.1²)`, here with a gap in the inputs at -0.5 < x < 0 so that
# we can watch the epistemic uncertainty grow where there are no data, and predictions
# on -1.5 ≤ x ≤ 1.5, beyond the data on both sides. With `BayesianMLPRegressor` we look
# at
#
# 1. how the prior scale, the hidden width and the activation shape the predictive mean
#    and its 95% band (NUTS, so that what we see is the posterior, not the optimiser);
# 2. NUTS vs mean-field ADVI for one network: fit, noise estimate, band, time;
# 3. data whose noise grows with x: a heteroscedastic network (`heteroscedastic=True`,
#    a second output head for the noise sd) against the homoscedastic one, and the
#    split of the predictive sd into its epistemic and aleatoric parts;
# 4. whether the 90% intervals cover 90% of held-out points;
# 5. what the default does: on a table this small, a short NUTS run (four chains of
#    100 warm-up iterations and 100 draws); on larger ones, five MAP networks with a
#    Gaussian over each output layer (`inference="laplace_ensemble"`), beside the
#    approximations a user can ask for by name.
#
# Set `PYMC_BNN_QUICK=1` for a fast run (shorter NUTS chains, fewer ADVI steps, ADVI
# in place of NUTS where another NUTS fit shows the same code at work). Fit
# times are wall-clock seconds on whatever machine ran the notebook (the committed run:
# 2 shared cores), so they are only a rough guide.

# %%
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from pymc_bnn import BayesianMLPRegressor

QUICK = os.environ.get("PYMC_BNN_QUICK") == "1"
SEED = 0
N_TRAIN = 150  # training points (outside the gap)
GAP = (-0.5, 0.0)  # no training inputs here
NOISE_SD = 0.1
NUTS = dict(inference="nuts", tune=100 if QUICK else 1000, n_draws=50 if QUICK else 500,
            chains=2)  # n_draws per chain
ADVI_STEPS = 2_000 if QUICK else None  # None: the estimator's default (10,000 steps)
ADVI_LONG_STEPS = 5_000 if QUICK else 50_000
ADVI_DRAWS = 100 if QUICK else 1000  # posterior draws per prediction (VI)
# section 1's panels: NUTS; in quick mode (a smoke run) ADVI for all but the baseline,
# as a NUTS fit costs ~6 s of set-up whatever its length (at T = 1, as NUTS: no
# cross-fitted temperature choice)
STUDY_FIT = (dict(inference="advi", n_iter=ADVI_STEPS, n_draws=ADVI_DRAWS,
                  posterior_temperature=1.0) if QUICK else NUTS)
# section 3: NUTS; in quick mode the homoscedastic network by ADVI as well (NUTS on a
# homoscedastic network is the section 1 baseline)
HOMOSCEDASTIC_FIT = STUDY_FIT if QUICK else NUTS
# at full settings three figures are also saved for the README / docs
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").is_file())
FIGURES = None if QUICK else ROOT / "docs" / "figures"
if FIGURES is not None:
    FIGURES.mkdir(parents=True, exist_ok=True)
print(f"quick mode: {QUICK}")


# %% [markdown]
# ## Data

# %%
def truth(x):
    return x * np.sin(5 * x)


def sample_inputs(n, rng, gap=GAP):
    """``n`` inputs uniform on [-1, 1] outside ``gap`` (rejection sampling)."""
    x = rng.uniform(-1, 1, 4 * n)
    return x[(x < gap[0]) | (x > gap[1])][:n]


rng = np.random.default_rng(SEED)
x_train = sample_inputs(N_TRAIN, rng)
y_train = truth(x_train) + rng.normal(0, NOISE_SD, x_train.size)
X_train = x_train[:, None]
# held out: from the same distribution as the training data, and from inside the gap
x_test = sample_inputs(1000, rng)
y_test = truth(x_test) + rng.normal(0, NOISE_SD, x_test.size)
x_gap = rng.uniform(*GAP, 300)
y_gap = truth(x_gap) + rng.normal(0, NOISE_SD, x_gap.size)

grid = np.linspace(-1.5, 1.5, 301)
X_grid = grid[:, None]
on_data = (np.abs(grid) <= 1) & ~((grid > GAP[0]) & (grid < GAP[1]))
in_gap = (grid > GAP[0]) & (grid < GAP[1])
beyond = np.abs(grid) > 1
print(f"{x_train.size} training points; y scale {y_train.std():.3f}")

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(grid, truth(grid), "k--", lw=1, label="x sin(5x)")
ax.scatter(x_train, y_train, s=8, c="C0", label="training data")
ax.axvspan(*GAP, color="0.9", label="gap")
ax.set(xlabel="x", ylabel="y", title="Training data")
ax.legend(fontsize=8);


# %% [markdown]
# Helpers: fit with timing, and draw the predictive mean with its central 95% interval
# (`predict_interval` gives exact quantiles of the posterior predictive mixture:
# network uncertainty plus noise). The RMSE is that of the predictive mean against the
# true function on the grid points in the data range (gap excluded).

# %%
def fit_timed(**params):
    reg = BayesianMLPRegressor(random_state=SEED, **params)
    t0 = time.perf_counter()
    reg.fit(X_train, y_train)
    reg.fit_seconds_ = time.perf_counter() - t0  # our own bookkeeping
    return reg


def noise_draws(reg):
    """Posterior draws of the (homoscedastic) noise sd, in units of y."""
    return reg.idata_.posterior["sigma"].values.ravel() * reg.y_scale_


def n_divergent(reg):
    """Divergent NUTS transitions (None for VI fits)."""
    if reg.inference != "nuts":
        return None
    return int(reg.idata_.sample_stats["diverging"].sum())


def summary(reg):
    mean = reg.predict(X_grid)
    lower, upper = reg.predict_interval(X_grid, coverage=0.95)
    width = upper - lower
    epistemic = reg.predict_uncertainty(X_grid)["epistemic_std"]
    return {
        "rmse": float(np.sqrt(np.mean((mean - truth(grid))[on_data] ** 2))),
        "noise": float(noise_draws(reg).mean()),
        "w_data": float(width[on_data].mean()),
        "w_gap": float(width[in_gap].mean()),
        "w_beyond": float(width[beyond].mean()),
        "epi_data": float(epistemic[on_data].mean()),
        "epi_gap": float(epistemic[in_gap].mean()),
        "seconds": reg.fit_seconds_,
        "divergences": n_divergent(reg),
    }


def band(ax, reg, title, *, color="C1", ylim=(-2.5, 2.5), data=(x_train, y_train),
         true_fn=truth):
    mean = reg.predict(X_grid)
    lower, upper = reg.predict_interval(X_grid, coverage=0.95)
    ax.fill_between(grid, lower, upper, color=color, alpha=0.3, lw=0, label="95% interval")
    ax.plot(grid, mean, color=color, lw=1.5, label="predictive mean")
    ax.plot(grid, true_fn(grid), "k--", lw=1, label="true function")
    ax.scatter(*data, s=4, c="0.35", zorder=3)
    ax.set(title=title, ylim=ylim, xlim=(grid[0], grid[-1]))


def table(rows):
    """A Markdown table of :func:`summary` dicts, one row per setting."""
    head = ["setting", "fit (s)", "RMSE", "noise sd", "95% width: data", "gap",
            "beyond", "epistemic sd: data", "gap", "divergences"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in rows.items():
        div = "–" if s["divergences"] is None else str(s["divergences"])
        cells = [name, f"{s['seconds']:.1f}", f"{s['rmse']:.3f}", f"{s['noise']:.3f}",
                 f"{s['w_data']:.2f}", f"{s['w_gap']:.2f}", f"{s['w_beyond']:.2f}",
                 f"{s['epi_data']:.3f}", f"{s['epi_gap']:.3f}", div]
        lines.append("| " + " | ".join(cells) + " |")
    display(Markdown("\n".join(lines)))


# %% [markdown]
# ## 1. Prior scale, hidden width, activation
#
# One hidden layer, Normal(0, `prior_sigma`) priors on every weight and bias
# (`prior="normal"`; the regressor's default, Neal's prior, infers each layer's scale
# instead and refuses any other `prior_sigma`: section 5), sampled with NUTS (2 chains). The
# baseline is 10 tanh units with `prior_sigma=1`; each row
# of the figure changes one thing. (The targets are standardised inside the estimator,
# so the prior scale is relative to a target of unit variance.)

# %%
BASE = dict(hidden_layer_sizes=(10,), activation="tanh", prior="normal", prior_sigma=1.0)
STUDY = {  # row -> {panel title: overrides of BASE}
    "prior scale": {"prior_sigma = 0.1": dict(prior_sigma=0.1),
                    "prior_sigma = 1": {},
                    "prior_sigma = 10": dict(prior_sigma=10.0)},
    "hidden width": {"2 units": dict(hidden_layer_sizes=(2,)),
                     "10 units": {},
                     "100 units": dict(hidden_layer_sizes=(100,))},
    "activation": {"tanh": {},
                   "relu": dict(activation="relu"),
                   "logistic": dict(activation="logistic")},
}
fits = {}  # frozen overrides -> fitted estimator (the baseline is fitted once)
for row, panels in STUDY.items():
    for title, overrides in panels.items():
        key = tuple(sorted(overrides.items()))
        if key not in fits:
            fits[key] = fit_timed(**{**BASE, **overrides}, **(STUDY_FIT if key else NUTS))
            print(f"{row}: {title}: {fits[key].fit_seconds_:.1f} s")

# %%
with plt.rc_context({"font.size": 11}):
    fig, axes = plt.subplots(3, 3, figsize=(13, 10.5), sharex=True, sharey=True,
                             layout="constrained")
    for ax_row, (row, panels) in zip(axes, STUDY.items()):
        for ax, (title, overrides) in zip(ax_row, panels.items()):
            band(ax, fits[tuple(sorted(overrides.items()))], title)
            ax.axvspan(*GAP, color="0.93", zorder=0)
        ax_row[0].set_ylabel(f"{row}\ny")
    for ax in axes[-1]:
        ax.set_xlabel("x")
    axes[0, 0].legend(loc="lower left", fontsize=8)
    fig.suptitle("Bayesian MLP (1 hidden layer, NUTS): predictive mean and 95% interval; "
                 "baseline 10 tanh units, prior_sigma = 1")
if FIGURES is not None:
    fig.savefig(FIGURES / "regression_prior_width.png", dpi=100)

# %%
table({f"{row}: {title}": summary(fits[tuple(sorted(overrides.items()))])
       for row, panels in STUDY.items() for title, overrides in panels.items()})

# %% [markdown]
# **What we see** (numbers from the committed full run; "noise sd" is the posterior
# mean of the noise sd, truth 0.1; the widths and epistemic sds are averages over the
# grid points in each region).
#
# * **Prior scale.** With `prior_sigma = 0.1` the weights cannot grow large enough to
#   bend the function: the network predicts a nearly constant mean, it **underfits**
#   (RMSE about 0.46), and the model explains the signal it cannot fit as noise (noise
#   sd about 0.48), so the band is wide and flat everywhere. `prior_sigma = 1` fits well
#   (RMSE about 0.025, noise sd 0.10). With `prior_sigma = 10` the fit on the data is
#   as good, but the prior puts mass on huge weights, so wherever there are no data —
#   the gap and beyond ±1 — the draws fan out and the band explodes (clipped in the
#   plot; mean width about 2.7 in the gap and 8.6 beyond ±1, against 0.5 and 0.7 at
#   `prior_sigma = 1`). That posterior is also harder to sample: NUTS reports divergent
#   transitions.
# * **Width.** Two tanh units are too few for three bumps: underfit (RMSE about 0.11),
#   again with an inflated noise estimate, and no widening in the gap — a network that
#   cannot bend has nothing to be unsure about there. Ten and a hundred units both fit;
#   the wider network's band grows faster beyond the data (with Normal(0, 1) priors not
#   scaled by the width, the prior variance of the output grows with the number of
#   units). It is also by far the slowest to sample (about 7 times the 10-unit fit).
# * **Activation.** tanh and logistic saturate, so beyond the data their draws level
#   off and the band grows slowly; relu draws continue as straight lines with different
#   slopes, so the mean and the band continue linearly. The logistic network is the
#   smoothest (its units are tanh units at half the slope for the same weights) and
#   bridges the gap with a flatter curve and a narrower band; relu and logistic follow
#   the bumps a little less closely than tanh (RMSE about 0.04 and 0.05 against
#   0.025).
# * **Gap.** In every setting that fits, the band widens in the gap between the two
#   groups of data: that is epistemic uncertainty, the posterior draws disagree where
#   no data pin them down (for the baseline, the epistemic sd is about 0.09 in the gap
#   against 0.02 on the data).

# %% [markdown]
# ## 2. NUTS vs mean-field ADVI
#
# The baseline network (10 tanh units, `prior_sigma = 1`) fit by mean-field ADVI with
# the default number of steps and with five times as many, against the NUTS fit above.
# The histograms are the posterior draws of the noise sd (`idata_.posterior["sigma"]`,
# which is in standardised units, times `y_scale_`).

# %%
methods = {"NUTS": fits[()]}
for n_iter in (ADVI_STEPS, ADVI_LONG_STEPS):
    reg = fit_timed(**BASE, inference="advi", n_iter=n_iter, n_draws=ADVI_DRAWS)
    methods[f"ADVI, {reg.loss_curve_.size:,} steps"] = reg
for name, reg in methods.items():
    budget = (f"{reg.loss_curve_.size:,} steps" if reg.loss_curve_.size
              else f"{reg.chains} x ({reg.tune} tune + {reg.n_draws} draws)")
    print(f"{name}: {budget}, {reg.fit_seconds_:.1f} s")
table({name: summary(reg) for name, reg in methods.items()})

# %%
with plt.rc_context({"font.size": 11}):
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), layout="constrained",
                             width_ratios=[1, 1, 1, 0.8])
    for ax, (name, reg), color in zip(axes, methods.items(), ("C1", "C0", "C2")):
        band(ax, reg, name, color=color, ylim=(-1.5, 1.5))
        ax.axvspan(*GAP, color="0.93", zorder=0)
        ax.set_xlabel("x")
    axes[0].set_ylabel("y")
    axes[0].legend(loc="lower left", fontsize=8)
    ax = axes[-1]
    for (name, reg), color in zip(methods.items(), ("C1", "C0", "C2")):
        ax.hist(noise_draws(reg), bins=30, density=True, alpha=0.5, color=color, label=name)
    ax.axvline(NOISE_SD, color="k", ls="--", label="true noise sd")
    ax.set(xlabel="noise sd", ylabel="posterior density", title="Noise sd")
    ax.legend(fontsize=7)
    fig.suptitle("10 tanh units, prior_sigma = 1: NUTS vs mean-field ADVI")
if FIGURES is not None:
    fig.savefig(FIGURES / "regression_nuts_vs_advi.png", dpi=100)

# %% [markdown]
# Has ADVI converged? The loss (negative ELBO) per step, smoothed over 500 steps. Both
# runs use the same seed, so the shorter run is the first part of the longer one.

# %%
(short_name, short), (long_name, long_run) = list(methods.items())[1:]
for name, reg in ((short_name, short), (long_name, long_run)):
    print(f"{name}: mean loss over the last 1,000 steps {reg.loss_curve_[-1000:].mean():.1f}")
smooth = np.convolve(long_run.loss_curve_, np.ones(500) / 500, mode="valid")
fig, ax = plt.subplots(figsize=(7, 3.8))
ax.plot(np.arange(smooth.size) + 500, smooth, color="C2", label=long_name)
ax.axvline(short.loss_curve_.size, color="C0", ls=":", label=f"end of {short_name}")
ax.set(xlabel="step", ylabel="negative ELBO", yscale="log",
       title="Mean-field ADVI loss (running mean of 500 steps)")
ax.legend();

# %% [markdown]
# **What we see.** NUTS recovers the function (RMSE about 0.025) and the noise level
# (posterior mean 0.100 against the true 0.1). Mean-field ADVI **underfits** x sin(5x):
# it shaves off the bumps (RMSE about 0.11) and absorbs what it misses into a noise
# estimate well above the truth (about 0.165), so its band is wider than NUTS's on the
# data. Five times as many steps change almost nothing — the loss has levelled off:
# this is the mean-field optimum, not a lack of steps (a known pathology of mean-field
# VI for neural networks: the KL term on every weight's variance pushes the fit towards
# simpler functions and more noise). Nor does ADVI's band widen in the gap: its
# posterior on the weights is too narrow (it ignores their correlations), so its
# epistemic sd is about the same everywhere and the band is nearly all noise. ADVI
# takes a few seconds here, NUTS several times as long (the times are noisy: a shared
# 2-core machine).

# %% [markdown]
# ## 3. Heteroscedastic noise
#
# New data: 300 points on [-1, 1] (no gap), the same function, but with noise sd
# rising linearly from 0.05 at x = -1 to 0.45 at x = 1. We fit the same network with a
# single learned noise level and with `heteroscedastic=True`, where a second output
# head gives the noise sd as a function of x, `sigma(x) = softplus(g(x)) + 0.001`.

# %%
def noise_sd_het(x):
    return 0.05 + 0.2 * (x + 1)


rng_het = np.random.default_rng(SEED + 1)
x_het = rng_het.uniform(-1, 1, 300)
y_het = truth(x_het) + rng_het.normal(0, noise_sd_het(x_het))
x_het_test = rng_het.uniform(-1, 1, 2000)
y_het_test = truth(x_het_test) + rng_het.normal(0, noise_sd_het(x_het_test))

het_fits = {}
for name, het, settings in (("homoscedastic", False, HOMOSCEDASTIC_FIT),
                            ("heteroscedastic", True, NUTS)):
    reg = BayesianMLPRegressor(**BASE, heteroscedastic=het, random_state=SEED, **settings)
    t0 = time.perf_counter()
    reg.fit(x_het[:, None], y_het)
    reg.fit_seconds_ = time.perf_counter() - t0
    het_fits[name] = reg
    print(f"{name}: {reg.fit_seconds_:.1f} s, R^2 on held-out points "
          f"{reg.score(x_het_test[:, None], y_het_test):.3f}")

# %% [markdown]
# `predict_uncertainty` splits the predictive sd into the spread of the network's mean
# over the posterior draws (epistemic) and the root mean noise variance (aleatoric):
# `std**2 = epistemic_std**2 + aleatoric_std**2`.

# %%
inside = np.abs(grid) <= 1
moments = {name: reg.predict_uncertainty(X_grid) for name, reg in het_fits.items()}
for name, reg in het_fits.items():
    lower, upper = reg.predict_interval(X_grid, coverage=0.95)
    width = upper - lower
    r_width = np.corrcoef(width[inside], noise_sd_het(grid[inside]))[0, 1]
    aleatoric = moments[name]["aleatoric_std"][inside]
    max_err = np.max(np.abs(aleatoric - noise_sd_het(grid[inside])))
    print(f"{name}: correlation of the 95% width with the true noise sd on [-1, 1]: "
          f"{r_width:.3f}; largest error of the aleatoric sd there: {max_err:.3f}")
print(f"homoscedastic noise sd: {noise_draws(het_fits['homoscedastic']).mean():.3f}")
het = moments["heteroscedastic"]
for x0 in (-1.0, 0.0, 1.0):
    i = np.argmin(np.abs(grid - x0))
    print(f"x = {x0:+.0f}: true noise sd {noise_sd_het(x0):.2f}, heteroscedastic "
          f"aleatoric {het['aleatoric_std'][i]:.3f}, epistemic {het['epistemic_std'][i]:.3f}")

# %%
with plt.rc_context({"font.size": 11}):
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.9), layout="constrained")
    for ax, (name, reg), color in zip(axes, het_fits.items(), ("C0", "C1")):
        band(ax, reg, name, color=color, ylim=(-2.5, 2.5), data=(x_het, y_het))
        ax.set_xlabel("x")
    axes[0].set_ylabel("y")
    axes[0].legend(loc="lower left", fontsize=8)
    ax = axes[2]
    ax.plot(grid[inside], noise_sd_het(grid[inside]), "k--", label="true noise sd")
    ax.plot(grid, moments["heteroscedastic"]["aleatoric_std"], "C1",
            label="heteroscedastic")
    ax.plot(grid, moments["homoscedastic"]["aleatoric_std"], "C0", label="homoscedastic")
    ax.axvspan(1, grid[-1], color="0.93", zorder=0)
    ax.axvspan(grid[0], -1, color="0.93", zorder=0)
    ax.set(xlabel="x", ylabel="sd", title="Predicted aleatoric sd", xlim=(grid[0], grid[-1]))
    ax.legend(fontsize=8)
    ax = axes[3]
    ax.plot(grid, het["std"], "k", label="total")
    ax.plot(grid, het["aleatoric_std"], "C1", label="aleatoric")
    ax.plot(grid, het["epistemic_std"], "C4", label="epistemic")
    ax.axvspan(1, grid[-1], color="0.93", zorder=0)
    ax.axvspan(grid[0], -1, color="0.93", zorder=0)
    ax.set(xlabel="x", ylabel="sd", xlim=(grid[0], grid[-1]),
           title="Heteroscedastic: predictive sd")
    ax.legend(loc="upper left", fontsize=8)
    fig.suptitle("Noise sd rising with x: homoscedastic vs heteroscedastic network (NUTS)")
if FIGURES is not None:
    fig.savefig(FIGURES / "regression_heteroscedastic.png", dpi=100)

# %% [markdown]
# **What we see.** The homoscedastic model has one noise level for all x (about 0.28,
# roughly the average of the true ones): its band is too wide on the left, where the
# data are nearly noiseless, and too narrow on the right. The heteroscedastic head
# follows the true noise sd on the data — a little high at the ends, where it has
# fewest neighbours on one side — so its interval width tracks the true noise: a
# correlation of about 0.96 on [-1, 1], against almost none for the homoscedastic model,
# whose width only varies through the small epistemic part. Both models fit the mean
# equally well (the same held-out R²). Within the data the predictive sd is nearly all
# aleatoric; beyond x = ±1 (shaded) the epistemic part grows, and the noise head simply
# extrapolates its trend, which no data check there.

# %% [markdown]
# ## 4. Do the 90% intervals cover 90% of held-out points?

# %%
def coverage(reg, x, y, level=0.9):
    lower, upper = reg.predict_interval(x[:, None], coverage=level)
    return float(np.mean((y >= lower) & (y <= upper)))


lines = ["| model | data | held-out points | 90% coverage |", "|---|---|---|---|"]
for name, reg in methods.items():
    lines.append(f"| {name} | x sin(5x), noise 0.1 | off the gap ({x_test.size}) | "
                 f"{coverage(reg, x_test, y_test):.1%} |")
    lines.append(f"| {name} | x sin(5x), noise 0.1 | in the gap ({x_gap.size}) | "
                 f"{coverage(reg, x_gap, y_gap):.1%} |")
for name, reg in het_fits.items():
    for part, mask in (("all", np.ones(x_het_test.size, bool)), ("x < 0", x_het_test < 0),
                       ("x > 0", x_het_test > 0)):
        lines.append(f"| {name} | rising noise | {part} ({mask.sum()}) | "
                     f"{coverage(reg, x_het_test[mask], y_het_test[mask]):.1%} |")
display(Markdown("\n".join(lines)))

# %% [markdown]
# Off the gap NUTS covers about 90%; mean-field ADVI about 94%, its inflated noise
# more than paying for the missed bumps. In the gap the intervals also have to carry
# the epistemic uncertainty: NUTS, whose band widens there, over-covers (about 95%),
# ADVI, whose band does not, under-covers (about 84%). On the rising-noise data the
# homoscedastic model's overall coverage (about 89%) hides that it over-covers the quiet
# half (about 98%) and under-covers the noisy half (about 80%); the heteroscedastic
# model is close to 90% in both halves.


# %% [markdown]
# ## 5. The default: a short NUTS run on small tables, the approximations above
#
# With `inference="auto"` (the default) and the default Gamma-precision prior, the
# regressor samples the whole model (weights, their precisions, the noise) with NUTS
# where a short run is affordable: chains of 100 warm-up iterations and 100 draws,
# run two at a time in threads, wherever the training rows times the network's
# parameters are at most 500,000 (`pymc_bnn.policy.thresholds.AUTO_NUTS_MAX_WORK`; here
# 150 × 46): two chains, or four where four cost no more than two at the limit (at most
# 250,000, as here; the chains find different modes and predict better together). Under Neal's prior nearly every NUTS iteration takes the most leapfrog
# steps (1,023), each a gradient over all the rows, so that product sets the run's
# cost. Above it the regressor fits five networks to their MAP weights, each with its
# noise sd and stopped on a tenth of the rows it holds out, and gives each output
# layer its exact Gaussian posterior (`inference="laplace_ensemble"`; it costs about a
# deep ensemble's time, `benchmarks/results/default_frontier.md`). The approximations
# below can be asked for by name: mean-field ADVI, the linearised Laplace approximation
# at the MAP with per-layer prior precisions and the noise precision set by MacKay's
# evidence, and their mixture (`inference="advi+laplace"`, the Laplace share stacked on
# three held-out folds; the default above the limit before the ensemble). Below, the
# default beside them, on the first data set (the one with the gap), with the default
# network (5, 5).

# %%
# each approximation first, so that the default's fit time is not its compilation's
choice = {"ADVI": fit_timed(inference="advi"), "Laplace": fit_timed(inference="laplace"),
          "mixture": fit_timed(inference="advi+laplace")}
choice["default (auto)"] = fit_timed()
print("default:", choice["default (auto)"].inference_, choice["default (auto)"].nuts_run_)
print("the mixture's Laplace share:", choice["mixture"].mixture_["laplace_weight"], "in",
      choice["mixture"].mixture_.get("laplace_starts", 1), "Laplace fits")

lines = ["| fit | method | fit (s) | test LL off the gap | in the gap | RMSE (grid) | "
         "90% coverage off the gap | in the gap |", "|" + "---|" * 8]
for name, reg in choice.items():
    ll = reg.log_predictive_density(x_test[:, None], y_test).mean()
    ll_gap = reg.log_predictive_density(x_gap[:, None], y_gap).mean()
    s = summary(reg)
    lines.append(f"| {name} | {reg.inference_} | {reg.fit_seconds_:.1f} | {ll:.3f} | "
                 f"{ll_gap:.3f} | {s['rmse']:.3f} | {coverage(reg, x_test, y_test):.1%} | "
                 f"{coverage(reg, x_gap, y_gap):.1%} |")
display(Markdown("\n".join(lines)))

# %%
with plt.rc_context({"font.size": 11}):
    fig, axes = plt.subplots(1, 4, figsize=(19, 3.8), sharey=True, layout="constrained")
    for ax, name, color in zip(axes, choice, ("C0", "C1", "C2", "C3")):
        band(ax, choice[name], f"{name} ({choice[name].inference_})", color=color,
             ylim=(-1.5, 1.5))
        ax.axvspan(*GAP, color="0.93", zorder=0)
        ax.set_xlabel("x")
    axes[0].set_ylabel("y")
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle("The default and the approximations it uses on larger tables, network "
                 "(5, 5): predictive mean and 95% interval")

# %% [markdown]
# **What we see** (the committed run). The Laplace fit follows the bumps that
# mean-field ADVI shaves off (RMSE about 0.025 against 0.10, as in section 2), and off
# the gap its held-out log density is far higher (about 0.87 against 0.55 per point).
# The ADVI + Laplace mixture gave the Laplace half 0.98 of its draws
# here, shared by three Laplace fits from their own starts: nearly the Laplace fit off
# the gap (0.864), with the widest band in the gap, where the three modes disagree (99%
# covered, density 0.09). The default's short NUTS run (four chains here) matches the
# Laplace fit off the gap (0.867, RMSE 0.024, 90% covered) and has by far the highest
# density in the gap (0.42 against 0.09-0.31): its band there is wide where the data say
# nothing, as the long NUTS run's of section 1; it over-covers the gap too (98%), as the
# Laplace fit does. It costs more than the approximations (about 9 s here against 1-2
# s; the first fit also compiles). On the standard UCI tables the short run
# beat the approximations by 0.05-0.35 nats in the mean; the comparison is in
# `research/notes/uci_regression.md`.
