"""The network as a function of one flat parameter vector, for the MAP-based methods.

The evidence step (:mod:`pymc_bnn.inference.evidence`) and the Laplace approximation
(:mod:`pymc_bnn.inference.laplace`) work with ``theta``, all weights and biases in one vector,
layer by layer (``W`` row-major, then ``b``), and with the Jacobian of the network's
outputs with respect to it. The network is :func:`pymc_bnn.network.model.forward`, the one that
defines the likelihood; the functions are compiled once per structure (JAX when
installed) through :func:`pymc_bnn._runtime.compile_cache.compiled_function`.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytensor
import pytensor.tensor as pt

from pymc_bnn._runtime.compile_cache import compiled_function
from pymc_bnn.network.model import forward

__all__ = [
    "compile_mode",
    "flat_logits",
    "flatten",
    "layer_index",
    "n_params",
    "network_jacobian",
    "unflatten",
]


def compile_mode() -> str:
    """PyTensor's mode for these functions: JAX when installed (its programs cached on
    disk), else Numba."""
    if importlib.util.find_spec("jax") is not None:
        from pymc_bnn._runtime.compile_cache import enable

        enable()
        return "JAX"
    return "NUMBA"


def n_params(layer_shapes) -> int:
    """Number of weights and biases of a network of ``layer_shapes``."""
    return sum(a * b + b for a, b in layer_shapes)


def layer_index(layer_shapes) -> np.ndarray:
    """The layer (0 = input layer) of every entry of ``theta``."""
    return np.concatenate([np.full(a * b + b, k) for k, (a, b) in enumerate(layer_shapes)])


def unflatten(theta, layer_shapes) -> list:
    """``[(W, b), ...]`` of ``theta`` (a symbolic or NumPy vector, or a NumPy array whose
    last axis is the parameters: then each ``W`` keeps the leading axes)."""
    weights, start = [], 0
    lead = tuple(getattr(theta, "shape", ())[:-1]) if isinstance(theta, np.ndarray) else ()
    for fan_in, fan_out in layer_shapes:
        W = theta[..., start : start + fan_in * fan_out].reshape((*lead, fan_in, fan_out))
        start += fan_in * fan_out
        weights.append((W, theta[..., start : start + fan_out]))
        start += fan_out
    return weights


def flatten(weights) -> np.ndarray:
    """Inverse of :func:`unflatten` for NumPy weights ``[(W, b), ...]`` with leading axes
    (e.g. draws): an array of shape ``(*lead, n_params)``."""
    parts = []
    for W, b in weights:
        lead = W.shape[:-2]
        parts += [W.reshape(*lead, -1), b.reshape(*lead, -1)]
    return np.concatenate(parts, axis=-1)


def flat_logits(theta, X, layer_shapes, activation):
    """The network's outputs (before any link) at the rows of ``X`` (symbolic)."""
    return forward(X, unflatten(theta, layer_shapes), activation=activation)


@functools.lru_cache(maxsize=16)
def network_jacobian(layer_shapes: tuple, activation: str, rows: int, mode: str):
    """``f(theta, X) -> (logits (rows, k), d logits / d theta (rows, k, P))`` for
    ``rows`` points (a static shape, so that data sets of similar size share one
    compiled function).

    The Jacobian of one row's logits is built for a single row and vectorised over the
    rows (:func:`pytensor.graph.replace.vectorize_graph`): each row's ``k`` backward
    passes touch that row only. The Jacobian of the whole ``(rows * k)`` logit vector
    (``jacobian(logits.ravel(), theta, vectorize=True)``) carries every cotangent through
    every row instead: the same values at ``rows`` times the work and memory.
    """
    from pytensor.graph.replace import vectorize_graph

    theta = pt.tensor("theta", dtype="float64", shape=(n_params(layer_shapes),))
    x = pt.tensor("x", dtype="float64", shape=(layer_shapes[0][0],))
    logits = flat_logits(theta, x[None, :], layer_shapes, activation)[0]
    jac = pytensor.gradient.jacobian(logits, theta, vectorize=True)
    X = pt.tensor("X", dtype="float64", shape=(rows, layer_shapes[0][0]))
    outputs = vectorize_graph([logits, jac], {x: X})
    # the key is the one this function had in pymc_bnn.inference.evidence: cached programs still hit
    return compiled_function(
        ("_jacobian_rows", layer_shapes, activation, rows), [theta, X], outputs, mode=mode
    )
