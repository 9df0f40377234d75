"""The peers the benchmarks compare against, written with the peers' own APIs.

- :func:`numpy_mean_proba`: the naive reference, a NumPy loop over posterior draws;
- :func:`pymc_classic_model`: the network as the classic PyMC example writes it, with a
  ``pm.Deterministic`` of the class-1 probability (for ``pm.sample_posterior_predictive``);
- :func:`numpyro_bnn`: the same network and priors as a NumPyro model;
- :func:`jax_mean_proba`: a ``jax.jit``-compiled forward pass, ``vmap`` over draws.

All assume the benchmark architecture of ``pymc_bnn.build_model``: Normal(0, sigma)
priors on weights ``w{i}`` of shape (fan_in, fan_out) and biases ``b{i}`` of shape
(fan_out,), hidden activation tanh, and for two classes one logit with a Bernoulli
likelihood. They are re-written here on purpose (not imported from ``pymc_bnn``) so
that they are independent implementations to compare against.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "jax_mean_proba",
    "numpy_mean_proba",
    "numpy_proba_draws",
    "numpyro_bnn",
    "pymc_classic_model",
    "weight_names",
]


def weight_names(n_layers: int) -> list[tuple[str, str]]:
    return [(f"w{i}", f"b{i}") for i in range(n_layers)]


def _proba_one(X, draws, d, n_layers):
    h = X
    for i, (w, b) in enumerate(weight_names(n_layers)):
        h = h @ draws[w][d] + draws[b][d]
        if i < n_layers - 1:
            h = np.tanh(h)
    return 1.0 / (1.0 + np.exp(-h[:, 0]))


def numpy_mean_proba(X: np.ndarray, draws: dict, n_layers: int) -> np.ndarray:
    """Posterior-mean probability of class 1, shape (n_points,): a loop over draws.

    ``draws[name]`` has the draws on its first axis, e.g. ``w0`` (n_draws, fan_in, fan_out).
    """
    n_draws = draws["w0"].shape[0]
    acc = np.zeros(X.shape[0])
    for d in range(n_draws):
        acc += _proba_one(X, draws, d, n_layers)
    return acc / n_draws


def numpy_proba_draws(X: np.ndarray, draws: dict, n_layers: int) -> np.ndarray:
    """Probability of class 1 under every draw, shape (n_draws, n_points)."""
    return np.stack([_proba_one(X, draws, d, n_layers) for d in range(draws["w0"].shape[0])])


def pymc_classic_model(X: np.ndarray, y: np.ndarray, layer_shapes, *, sigma: float = 1.0):
    """The classic PyMC example's network, plus ``p = pm.Deterministic(sigmoid(logit))``.

    Variable names and shapes match ``pymc_bnn.build_model``, so an InferenceData of
    draws from a ``pymc_bnn`` posterior can be fed to ``pm.sample_posterior_predictive``.
    """
    import pymc as pm

    n_layers = len(layer_shapes)
    with pm.Model() as model:
        X_data = pm.Data("X", X)
        y_data = pm.Data("y", y)
        h = X_data
        for i, ((w, b), (fan_in, fan_out)) in enumerate(zip(weight_names(n_layers), layer_shapes)):
            W = pm.Normal(w, 0.0, sigma, shape=(fan_in, fan_out))
            B = pm.Normal(b, 0.0, sigma, shape=(fan_out,))
            h = pm.math.dot(h, W) + B
            if i < n_layers - 1:
                h = pm.math.tanh(h)
        logit = h[:, 0]
        pm.Deterministic("p", pm.math.sigmoid(logit))
        pm.Bernoulli("y_obs", logit_p=logit, observed=y_data)
    return model


def numpyro_bnn(
    X, y=None, *, layer_shapes, sigma: float = 1.0, subsample_size=None, with_p: bool = True
):
    """NumPyro model identical to ``pymc_bnn.build_model`` (binary, tanh).

    With ``subsample_size`` the likelihood sees a random minibatch of rows per call,
    scaled to the full data (``numpyro.plate(..., subsample_size=...)``). ``with_p``
    adds ``numpyro.deterministic("p", sigmoid(logit))`` (for ``Predictive``); leave it
    out for inference, as the PyMC model has no such variable.
    """
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    n_layers = len(layer_shapes)
    weights = []
    for (w, b), (fan_in, fan_out) in zip(weight_names(n_layers), layer_shapes):
        W = numpyro.sample(w, dist.Normal(0.0, sigma).expand([fan_in, fan_out]).to_event(2))
        B = numpyro.sample(b, dist.Normal(0.0, sigma).expand([fan_out]).to_event(1))
        weights.append((W, B))

    def logit_of(Xb):
        h = Xb
        for i, (W, B) in enumerate(weights):
            h = h @ W + B
            if i < n_layers - 1:
                h = jnp.tanh(h)
        return h[..., 0]

    if subsample_size is None:
        logit = logit_of(X)
        if with_p:
            numpyro.deterministic("p", jax.nn.sigmoid(logit))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("y_obs", dist.Bernoulli(logits=logit), obs=y)
    else:
        with numpyro.plate("data", X.shape[0], subsample_size=subsample_size):
            Xb = numpyro.subsample(X, event_dim=1)
            yb = None if y is None else numpyro.subsample(y, event_dim=0)
            numpyro.sample("y_obs", dist.Bernoulli(logits=logit_of(Xb)), obs=yb)


def jax_mean_proba(n_layers: int, *, chunk: int = 1024):
    """``f(X, draws) -> (n_points,)``: jit-compiled, vmap over draws, X in fixed chunks.

    Rows are processed ``chunk`` at a time (the last chunk zero-padded, so one compiled
    shape serves every chunk) to bound the (n_draws, chunk, width) intermediates.
    """
    import jax
    import jax.numpy as jnp

    names = weight_names(n_layers)

    def forward(X, ws):
        h = X
        for i, (w, b) in enumerate(names):
            h = h @ ws[w] + ws[b]
            if i < n_layers - 1:
                h = jnp.tanh(h)
        return jax.nn.sigmoid(h[:, 0])

    @jax.jit
    def chunk_mean(Xc, ws):
        return jax.vmap(forward, in_axes=(None, 0))(Xc, ws).mean(axis=0)

    def f(X, ws):
        n = X.shape[0]
        step = min(chunk, n)
        out = np.empty(n)
        for start in range(0, n, step):
            Xc = X[start : start + step]
            m = Xc.shape[0]
            if m < step:
                Xc = np.concatenate([Xc, np.zeros((step - m, X.shape[1]), dtype=X.dtype)])
            out[start : start + m] = np.asarray(chunk_mean(Xc, ws))[:m]
        return out

    return f
