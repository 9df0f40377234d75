"""Experiment: NUTS on the regression network at the evidence's prior precisions, in
coordinates whitened by the package's Laplace fit, on the standard UCI splits.

Question: the Laplace (GLM) default is one mode linearised; NUTS on the full
hierarchical model reached boston split 0 LL -2.16 but took ~600 s. Is the posterior of
the network *at the evidence's per-layer precisions* (empirical Bayes) affordable and
better, when NUTS runs in coordinates where the Laplace Gaussian is standard Normal?

Per split (inputs and target standardised with the training split's statistics):

1. ``pymc_bnn.inference.laplace.fit_laplace`` (the package's ``inference="laplace"`` fit without
   the temperature): MAP ``theta0``, precision ``A = L L^T``, noise sd, per-layer prior
   precisions ``delta``.
2. numpyro NUTS (one chain, ``warmup`` + ``draws``, diagonal mass adapted, maximum tree
   depth 8) on ``z`` with ``theta = theta0 + L^-T z``: potential ``beta/2 |y - f(X;
   theta)|^2 + 1/2 sum delta theta^2``. ``noise=fixed``: the evidence's noise sd;
   ``noise=sampled``: log sd a further coordinate (flat prior on log sd), scaled by
   ``1/sqrt(2n)``.
3. Predictive: the draws pushed through the network itself (not linearised); test LL is
   the log of the mean over draws of each draw's Normal density, RMSE of the mean. The
   GLM predictive of the same Laplace fit (untempered) is printed beside it.

pymc_bnn's predictive is not used for the NUTS draws (the network is re-written in JAX
here); the Laplace fit is the package's. Usage::

    python research/experiments/laplace_whitened_nuts.py SET SPLITS WARMUP DRAWS CHAINS \
        {fixed,sampled} OUT.json
"""

import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg as sla
from scipy.special import logsumexp
from sklearn.preprocessing import StandardScaler
from uci_regression import DATA_DIR, load_split

jax.config.update("jax_enable_x64", True)
from numpyro.infer import MCMC, NUTS

from pymc_bnn.inference.laplace import fit_laplace


def mlp(theta, X, shapes):
    h = X
    start = 0
    for k, (a, b) in enumerate(shapes):
        W = theta[start : start + a * b].reshape(a, b)
        start += a * b
        c = theta[start : start + b]
        start += b
        h = h @ W + c
        if k < len(shapes) - 1:
            h = jnp.tanh(h)
    return h[:, 0]


def run(name, split, warmup, draws, chains, temp=1.0, noise="fixed"):
    Xtr, ytr, Xte, yte = load_split(DATA_DIR, name, split)
    sc = StandardScaler().fit(Xtr)
    X = sc.transform(Xtr)
    Xt = sc.transform(Xte)
    ym, ys = ytr.mean(), ytr.std()
    y = (ytr - ym) / ys
    shapes = ((X.shape[1], 50), (50, 1))
    t0 = time.perf_counter()
    g, info = fit_laplace(X, y, layer_shapes=shapes, random_state=split)
    t_lap = time.perf_counter() - t0
    P = g.theta.size
    from pymc_bnn.network._flat import layer_index

    li = layer_index(shapes)
    delta = 1.0 / np.asarray(g.prior_sigmas) ** 2
    dvec = jnp.asarray(delta[li])
    beta = 1.0 / g.noise_sd**2
    L = np.tril(g.chol)  # A = L L^T ; theta = theta0 + L^-T z
    LinvT = jnp.asarray(sla.solve_triangular(L, np.eye(P), lower=True).T)
    th0 = jnp.asarray(g.theta)
    Xj = jnp.asarray(X)
    yj = jnp.asarray(y)
    n = len(y)
    ls0 = math.log(g.noise_sd)
    lscale = 1.0 / math.sqrt(2 * n)

    def theta_of(z):
        return th0 + LinvT @ z[:P]

    def log_sd(z):
        return ls0 + lscale * z[P] if noise == "sampled" else ls0

    def potential(z):
        th = theta_of(z)
        r = yj - mlp(th, Xj, shapes)
        ls = log_sd(z)  # flat prior on log sd (Jeffreys) when sampled
        # fixed noise: z[P] is a decoupled standard Normal (never an improper direction)
        extra = 0.0 if noise == "sampled" else 0.5 * z[P] ** 2
        return (
            0.5 * jnp.exp(-2 * ls) * r @ r + n * ls + 0.5 * jnp.sum(dvec * th**2)
        ) / temp + extra

    kernel = NUTS(
        potential_fn=potential, adapt_mass_matrix=True, dense_mass=False, max_tree_depth=8
    )
    mcmc = MCMC(
        kernel,
        num_warmup=warmup,
        num_samples=draws,
        num_chains=chains,
        chain_method="sequential",
        progress_bar=False,
    )
    t1 = time.perf_counter()
    mcmc.run(
        jax.random.PRNGKey(split),
        init_params=jnp.zeros((chains, P + 1)) if chains > 1 else jnp.zeros(P + 1),
        extra_fields=("num_steps",),
    )
    z = jax.block_until_ready(mcmc.get_samples())  # JAX dispatches asynchronously
    steps = mcmc.get_extra_fields()["num_steps"]
    t_nuts = time.perf_counter() - t1
    thetas = jax.vmap(theta_of)(z)
    F = np.asarray(jax.vmap(lambda th: mlp(th, jnp.asarray(Xt), shapes))(thetas)) * ys + ym
    sd = (
        np.exp(np.asarray(jax.vmap(log_sd)(z)))[:, None] * ys
        if noise == "sampled"
        else g.noise_sd * ys
    )
    lp = -0.5 * ((yte - F) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2 * np.pi)
    ll = float(np.mean(logsumexp(lp, axis=0) - np.log(F.shape[0])))
    rmse = float(np.sqrt(np.mean((F.mean(0) - yte) ** 2)))
    # GLM Laplace on the same fit, for comparison
    Jl = jax.vmap(lambda x: jax.grad(lambda th: mlp(th, x[None], shapes)[0])(th0))(jnp.asarray(Xt))
    f0 = np.asarray(mlp(th0, jnp.asarray(Xt), shapes))
    v = np.sum(np.asarray(Jl @ LinvT) ** 2, axis=1) + g.noise_sd**2
    from scipy.stats import norm

    ll_glm = float(np.mean(norm.logpdf(yte, f0 * ys + ym, np.sqrt(v) * ys)))
    print(
        f"{name} {split} {noise} laplace {t_lap:.1f}s GLM ll {ll_glm:.3f} | NUTS {t_nuts:.1f}s ll {ll:.3f} rmse {rmse:.3f} steps med {np.median(steps):.0f} max {np.max(steps)}",
        flush=True,
    )
    return dict(
        set=name,
        split=split,
        noise=noise,
        ll_glm=ll_glm,
        ll=ll,
        rmse=rmse,
        laplace_s=t_lap,
        nuts_s=t_nuts,
        steps_median=float(np.median(steps)),
        noise_sd_evidence=g.noise_sd,
        noise_sd_nuts=float(np.median(sd / ys)),
    )


if __name__ == "__main__":
    name = sys.argv[1]
    splits = [int(s) for s in sys.argv[2].split(",")]
    w, d, c = (int(x) for x in sys.argv[3:6])
    noise = sys.argv[6]
    out = sys.argv[7]
    rows = [run(name, s, w, d, c, 1.0, noise) for s in splits]
    json.dump(rows, open(out, "w"), indent=1)
