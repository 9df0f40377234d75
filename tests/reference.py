"""Slow, obvious reference implementations that the fast paths are tested against."""

import numpy as np


def numpy_forward_proba(X, weights, activation="tanh"):
    """The slow, obvious path: a Python loop over draws, NumPy only.

    weights: sequence of (W (n_draws, fan_in, fan_out), b (n_draws, fan_out)).
    Returns (n_draws, n_points, n_classes).
    """
    acts = {
        "tanh": np.tanh,
        "relu": lambda a: np.maximum(a, 0),
        "logistic": lambda a: 1 / (1 + np.exp(-a)),
    }
    n_draws = weights[0][0].shape[0]
    out = []
    for s in range(n_draws):
        h = X
        for i, (W, b) in enumerate(weights):
            h = h @ W[s] + b[s]
            if i < len(weights) - 1:
                h = acts[activation](h)
        if h.shape[1] == 1:
            p1 = 1 / (1 + np.exp(-h[:, 0]))
            out.append(np.column_stack([1 - p1, p1]))
        else:
            e = np.exp(h - h.max(axis=1, keepdims=True))
            out.append(e / e.sum(axis=1, keepdims=True))
    return np.stack(out)


def numpy_logits(theta, X, shapes):
    """A tanh MLP's logits from its flat weights (``pymc_bnn.network._flat``'s order), by
    hand: the slow, obvious path."""
    from pymc_bnn.network._flat import unflatten

    h = X
    layers = unflatten(theta, shapes)
    for i, (W, b) in enumerate(layers):
        h = h @ W + b
        if i < len(layers) - 1:
            h = np.tanh(h)
    return h
