"""The compiled forward graphs of the posterior predictive, and the backend they run on.

ONE compiled PyTensor function evaluates the network for all weight draws at once — a
batched forward pass over the draw axis built from :func:`pymc_bnn.network.model.forward`, the
same function that defines the likelihood. The functions depend only on the
architecture (depth, activation, head, and for small networks the layer shapes), not
on one fit's draws, so each is compiled once per process (and stored in
:mod:`pymc_bnn._runtime.compile_cache`) and reused across fits; :mod:`pymc_bnn.predictive`
calls them chunk by chunk.

Two compiled forms, chosen by the network's shape: a small network (every layer at most
:data:`UNROLL_MAX` inputs) gets a function of its own shapes that XLA fuses into one
loop (:func:`compiled_forward`); a wider one, on JAX, a function whose first layer is
one matrix product for all draws, called with weight draws held on the device and
reducing over the draws inside the call where a summary is asked for
(:func:`compiled_wide`).
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytensor.tensor as pt

from pymc_bnn._runtime import device as _jax_device
from pymc_bnn._runtime.compile_cache import compiled_function
from pymc_bnn.network.model import ACTIVATIONS, NetworkSpec, forward, noise_sd

__all__ = [
    "UNROLL_MAX",
    "WIDE_MIN_ROWS",
    "backend",
    "compiled_forward",
    "compiled_wide",
    "network_head",
    "padded_rows",
    "shared_first_layers",
    "static_shapes",
]

#: Networks whose every layer has at most this many inputs get a predictive of their own
#: shapes with each layer written elementwise (:func:`pymc_bnn.network.model.forward`'s
#: ``unroll``), which XLA fuses into one loop over draws and points: as fast as batched
#: matmuls or faster for every network measured with up to 16 inputs and widths up to
#: 32 (measurements: research/notes/code-measurements.md). Wider networks share one
#: function of symbolic shapes.
UNROLL_MAX = 16


def backend() -> tuple[str, str]:
    """(PyTensor mode, dtype) of the predictive: JAX in float32 when jax is installed.

    JAX runs the forward pass several times faster than NUMBA, whose scalar libm
    ``tanh`` takes most of its time where XLA vectorises ``tanh``, and float32 faster
    again than float64 (measurements: research/notes/code-measurements.md).
    Probabilities in float32 carry ~1e-7 absolute error; summaries are accumulated in
    float64.
    """
    if importlib.util.find_spec("jax") is not None:
        return "JAX", "float32"
    return "NUMBA", "float64"


def network_head(spec: NetworkSpec) -> str:
    """How the last layer's outputs become predictions (see :func:`compiled_forward`)."""
    if spec.is_regression:
        return "normal_hetero" if spec.heteroscedastic else "normal"
    return "bernoulli" if spec.n_classes == 2 else "categorical"


def static_shapes(spec: NetworkSpec) -> tuple | None:
    """The layer shapes ``((fan_in, fan_out), ...)`` when the predictive is unrolled
    (every fan-in at most :data:`UNROLL_MAX`), else None (symbolic shapes; hierarchical
    networks always)."""
    shapes = tuple(tuple(s) for s in spec.layer_shapes)
    if spec.hierarchical or max(a for a, _ in shapes) > UNROLL_MAX:
        return None
    return shapes


def _head_columns(head: str, logits, n_out: int | None) -> list:
    """The head's output columns, each (n_draws, n_points) (``n_out``: the logits'
    static width)."""
    if head == "bernoulli":
        z = logits[..., 0]
        return [pt.sigmoid(-z), pt.sigmoid(z)]
    if head == "categorical":
        p = pt.special.softmax(logits, axis=-1)
        return [p[..., c] for c in range(n_out)]
    if head == "normal":  # every output (a regressor's one; a classifier's logits)
        return [logits[..., c] for c in range(n_out)]
    return [logits[..., 0], noise_sd(logits[..., 1])]


def _head_output(head: str, logits):
    """The head's outputs as one (n_draws, n_points, k) tensor (see :func:`_head_columns`)."""
    if head == "categorical":
        return pt.special.softmax(logits, axis=-1)
    if head == "normal":
        return logits
    return pt.stack(_head_columns(head, logits, None), axis=-1)


@functools.lru_cache(maxsize=None)
def compiled_forward(
    n_layers: int,
    activation: str,
    head: str,
    mode: str = "NUMBA",
    dtype: str = "float64",
    grouped: bool = False,
    shapes: tuple | None = None,
):
    """Compile ``f(X, [groups,] W0, b0, W1, b1, ...) -> out (n_draws, n_points, k)``.

    Classification heads give class probabilities (``k = n_classes``); regression
    heads the mean of each draw at each point (``"normal"``, ``k = 1``; the noise sd
    draws are constants added by the caller) or the mean and the noise sd
    (``"normal_hetero"``, ``k = 2``).

    Shapes are left symbolic, so one function serves every width, number of
    features, draws and points of a given depth and activation (JAX re-traces per
    input shape, which chunking keeps to a few shapes). ``grouped``: weights carry a
    group axis after the draw axis and each point is routed through its group's.

    ``shapes`` (the layer shapes, see :func:`static_shapes`): a function of those
    shapes, every layer unrolled into elementwise products, returning the ``k``
    columns as ``k`` separate (n_draws, n_points) arrays: XLA then computes the whole
    network in one fused loop and writes each column contiguously (an interleaved
    (n_draws, n_points, 2) output alone cost a large share of the call's time;
    measurements: research/notes/code-measurements.md).
    """
    X = pt.matrix("X", dtype=dtype)
    groups = pt.lvector("groups") if grouped else None
    if shapes is not None and (grouped or len(shapes) != n_layers):
        raise ValueError(f"shapes {shapes!r} do not describe {n_layers} plain layers.")
    w_shapes = (
        [(None,) * (4 if grouped else 3)] * n_layers
        if shapes is None
        else [(None, a, b) for a, b in shapes]
    )
    weights = [
        (
            pt.tensor(f"W{i}", dtype=dtype, shape=w_shapes[i]),
            pt.tensor(f"b{i}", dtype=dtype, shape=(None,) * (3 if grouped else 2)),
        )
        for i in range(n_layers)
    ]
    logits = forward(
        X,
        weights,
        activation=activation,
        groups=groups,
        unroll=UNROLL_MAX if shapes is not None else 0,
    )
    if shapes is not None:
        outputs = _head_columns(head, logits, shapes[-1][1])
    else:
        outputs = _head_output(head, logits)
    inputs = [X] + ([groups] if grouped else []) + [v for pair in weights for v in pair]
    # with JAX, a new process reads it back from pymc_bnn's compile cache
    return compiled_function(
        ("_compiled_forward", n_layers, activation, head, dtype, grouped, shapes),
        inputs,
        outputs,
        mode=mode,
        on_unused_input="ignore",
    )


@functools.lru_cache(maxsize=None)
def compiled_wide(
    n_layers: int, activation: str, head: str, dtype: str, reduce: str, shared: bool = False
):
    """Compile the wide predictive ``f(X, W0, b0, W1, b1, ...) -> outputs`` (JAX).

    The first layer's weights come laid out as one matrix ``W0`` of shape
    (n_features, n_draws * fan_out), the draws side by side, so that every draw's first
    layer is one GEMM of the shared rows, ``X @ W0`` (the input layer of a wide network
    holds most of its weights and its FLOPs; a matmul broadcast over the draws, or an
    einsum over (n_draws, n_features, fan_out) weights, relays those weights on every
    call). Later layers are batched matmuls over the draw axis, as in the model.

    ``shared``: the draws share a few distinct first layers (a mixture of last-layer
    Laplace approximations: each member's draws differ in the output layer only), and
    ``f(X, W0, b0, member, W1, b1, ...)`` takes those alone, ``W0`` of shape
    (n_features, n_distinct * fan_out), ``b0`` (n_distinct, fan_out), and each draw's
    index among them, ``member`` (n_draws,): the first layer costs a GEMM per distinct
    layer, not per draw (:func:`shared_first_layers`).

    ``reduce``: ``"none"``, the per-draw outputs (n_draws, n_points, k) as
    :func:`compiled_forward` returns them; ``"mean"``, their mean over draws
    (n_points, k); ``"moments"``, ``[mean, var]`` over draws (n_points, k) and, for a
    classification head, the mean over draws of each draw's entropy (n_points,). The
    reductions are accumulated in float64 inside the call: only (n_points, k) values
    leave the device, whatever the number of draws.
    """
    act = ACTIVATIONS[activation]
    X = pt.matrix("X", dtype=dtype)
    W0 = pt.matrix("W0", dtype=dtype)
    b0 = pt.matrix("b0", dtype=dtype)
    member = pt.vector("member", dtype="int64")
    rest = [
        (pt.tensor3(f"W{i}", dtype=dtype), pt.matrix(f"b{i}", dtype=dtype))
        for i in range(1, n_layers)
    ]
    n_draws, width = b0.shape[0], b0.shape[1]
    z = pt.dot(X, W0).reshape((X.shape[0], n_draws, width)).dimshuffle(1, 0, 2)
    z = z + b0[:, None, :]
    if shared:  # the distinct first layers' activations, one per draw
        logits = forward(act(z)[member], rest, activation=activation)
    else:
        logits = forward(act(z), rest, activation=activation) if rest else z
    out = _head_output(head, logits)
    if reduce != "none":
        wide = out.astype("float64")
        mean = wide.mean(axis=0)
        outputs = [mean]
        if reduce == "moments":
            outputs.append(pt.sqr(wide - mean).mean(axis=0))
            if head in ("bernoulli", "categorical"):
                xlogx = pt.switch(wide > 0, wide * pt.log(wide), 0.0)
                outputs.append(-xlogx.sum(axis=-1).mean(axis=0))
        out = outputs
    inputs = [X, W0, b0, *([member] if shared else [])] + [v for pair in rest for v in pair]
    # the bias's broadcast against the GEMM's output checks that their n_draws agree
    with _jax_device.untraceable_checks_ignored():
        return compiled_function(
            (
                "_compiled_wide",
                n_layers,
                activation,
                head,
                dtype,
                reduce,
                *(("shared",) if shared else ()),
            ),
            inputs,
            out,
            mode="JAX",
            on_unused_input="ignore",
        )


def shared_first_layers(W0: np.ndarray, b0: np.ndarray):
    """``(firsts, member)`` where runs of equal draws of the first layer (``W0`` of shape
    (n_draws, fan_in, fan_out), ``b0`` (n_draws, fan_out)) make at most half as many
    distinct layers as draws: the first draw of each run and each draw's run; else
    None (e.g. ADVI's or NUTS's draws, all distinct)."""
    n = W0.shape[0]
    new = np.ones(n, dtype=bool)
    for i in range(1, n):
        new[i] = not (np.array_equal(W0[i], W0[i - 1]) and np.array_equal(b0[i], b0[i - 1]))
    firsts = np.flatnonzero(new)
    return None if firsts.size > n // 2 else (firsts, np.cumsum(new) - 1)


#: Fewest rows of a call of the wide predictive (see :func:`padded_rows`).
WIDE_MIN_ROWS = 64


def padded_rows(rows: int, step: int) -> int:
    """Rows of the call that predicts ``rows`` rows of a wide network (chunks of
    ``step``): ``step``, or for a last, shorter chunk the next power of two from
    :data:`WIDE_MIN_ROWS` up. A few shapes, each compiled once, and a short input does
    not pay for a whole chunk (one row at 500 draws of 784-100-10: a 64-row call, not a
    chunk of a few hundred or, on a GPU, thousands). The rows of a call are
    independent, but XLA's matrix kernels may round a row differently for another
    number of rows: a point's probabilities agree across input sizes to float32
    rounding (bit for bit from 64 rows up on the 2-core CPU measured), not always exactly
    as in the small networks' fused predictive, whose calls all have one shape."""
    return min(step, max(WIDE_MIN_ROWS, 1 << (rows - 1).bit_length()))
