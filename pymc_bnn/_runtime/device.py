"""Where compiled JAX programs run, and how arrays are kept there between calls.

PyTensor's JAX functions take NumPy inputs and return NumPy-convertible outputs: every
call sends its inputs to the device. For inputs that stay the same from call to call
(a fitted network's weight draws, a minibatch fit's data) that transfer is the whole
cost on a GPU and a copy on a CPU. The helpers here let a caller put such arrays on
the device once and call the jitted program that a PyTensor function wraps directly,
with device arrays in and device arrays out.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np

__all__ = [
    "jitted_program",
    "platform",
    "on_device",
    "matmul_precision",
    "untraceable_checks_ignored",
    "GPU_MATMUL_PRECISION",
]

#: JAX's matmul precision for the predictive on a GPU. JAX's default there may multiply
#: float32 matrices in reduced precision (TF32: a 10-bit mantissa), which moved class
#: probabilities from float64 NumPy far beyond float32 rounding, by an amount that
#: varied between set-ups; ``"highest"`` keeps float32 products (agreement < 1e-7, as on
#: a CPU). Predictions are what users read, so they get full float32, at some cost in the
#: jitted forward's speed on a GPU (measurements: benchmarks/results/wide_network.md,
#: research/notes/code-measurements.md).
GPU_MATMUL_PRECISION = "highest"


def jitted_program(fn):
    """The jitted program a PyTensor function of the JAX backend calls, or None when
    the function is not laid out as expected (another backend or PyTensor version).

    The program takes the function's inputs positionally (device or NumPy arrays) and
    returns its outputs as a sequence of device arrays, without the NumPy conversion
    and input checks of ``fn(...)``.
    """
    thunk = getattr(fn, "vm", None)
    code = getattr(thunk, "__code__", None)
    defaults = getattr(thunk, "__defaults__", None)
    params = ("fgraph_jit", "thunk_inputs", "thunk_outputs")
    if (
        code is None
        or defaults is None
        or len(defaults) != len(params)
        or code.co_varnames[: len(params)] != params
        or not callable(defaults[0])
    ):
        return None
    return defaults[0]


@functools.cache
def platform() -> str:
    """JAX's default platform (``"cpu"``, ``"gpu"``, ``"tpu"``), or ``"none"`` without
    jax. Read once per process: JAX's backend is fixed once initialised."""
    try:
        import jax
    except ImportError:
        return "none"
    return jax.default_backend()


def on_device(arrays):
    """Each array as a JAX array on JAX's default device (one transfer each)."""
    import jax

    return [jax.device_put(np.asarray(a)) for a in arrays]


def matmul_precision():
    """The context under which the predictive's programs are traced and run: JAX's
    matmul precision :data:`GPU_MATMUL_PRECISION` on a GPU, nothing elsewhere (a CPU
    multiplies float32 in float32 already)."""
    if platform() != "gpu":
        return contextlib.nullcontext()
    import jax

    return jax.default_matmul_precision(GPU_MATMUL_PRECISION)


@contextlib.contextmanager
def untraceable_checks_ignored():
    """PyTensor's runtime shape and parameter checks (a broadcast of two symbolic
    lengths that are equal by construction; 0 <= p <= 1 of a sigmoid output) cannot be
    traced by JAX, and PyTensor warns so each time it links such a graph."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipping .* as JAX tracing would remove it")
        yield
