"""Fast posterior predictive: class-probability draws from a fitted posterior.

A fitted :class:`~pymc_bnn.inference.Posterior` is turned into a fixed set of weight
draws (fresh draws from a VI approximation, or thinned MCMC draws), and ONE compiled
PyTensor function evaluates the network for all draws at once — a batched forward
pass over the draw axis built from :func:`pymc_bnn.network.model.forward`, the same function
that defines the likelihood.

Why weight draws + a batched forward rather than ``approx.sample_node`` over a
symbolic data input: (1) the same draws serve every chunk of a large input (a
``sample_node`` function would draw new weights per call, so chunks would not share
draws), (2) VI and MCMC posteriors use the same code, and (3) the compiled function
depends only on the architecture's depth and activation, not on one approximation's
shared variables, so it is compiled once per process and reused across fits.
``tests/predictive/test_predictive.py`` checks it against a NumPy loop over draws and against
PyMC's ``sample_node``.

The compiled functions, and the backend they run on, are in
:mod:`pymc_bnn.predictive._forward` (a small network's fused loop of its own shapes, or on
JAX a wide network's one GEMM for all draws, reduced over the draws inside the call);
the draws themselves (tempering, fast VI draws) come from :mod:`pymc_bnn.predictive._draws`.
This module chunks the rows through them and summarises the draws.
"""

from __future__ import annotations

import collections
import functools
from dataclasses import dataclass

import numpy as np
from scipy import special

from pymc_bnn._runtime import device as _jax_device
from pymc_bnn.inference.laplace import (
    LINEARIZATION_GROUP,
    kept_linearisation,
    laplace_draws,
    linearised_outputs,
)
from pymc_bnn.network._checks import check_predictive_targets, check_predictive_X, check_random_seed
from pymc_bnn.network._flat import flatten
from pymc_bnn.network.model import NetworkSpec
from pymc_bnn.predictive._draws import (
    check_n_draws,
    check_temperature,
    fast_draws_apply,
    posterior_draws,
    tempered,
    vi_draws,
)

# UNROLL_MAX, WIDE_MIN_ROWS: re-exported, so that ``predictive.UNROLL_MAX`` keeps working
from pymc_bnn.predictive._forward import (  # noqa: F401
    UNROLL_MAX,
    WIDE_MIN_ROWS,
    backend,
    compiled_forward,
    compiled_wide,
    network_head,
    padded_rows,
    shared_first_layers,
    static_shapes,
)
from pymc_bnn.predictive._summary import summarize_proba, xlogx

__all__ = [
    "PosteriorPredictive",
    "from_idata",
    "posterior_draws",
    "posterior_predictive",
    "summarize_proba",
    "tempered",
]

#: Upper bound on the working memory of one chunk of the batched forward pass. 16 MB
#: (~200 rows at 500 draws of width 5) keeps a chunk in cache, which ran faster than
#: larger chunks on a large input and on a small one (measurements:
#: research/notes/code-measurements.md).
CHUNK_BYTES = 16 * 2**20
#: Bound on the output columns of one chunk of the unrolled (fused) predictive, which
#: stores nothing else (~1,000 rows of a two-class network at 500 draws): the fastest
#: chunk size measured, whose outputs still stay in cache; chunks twice as large, whose
#: outputs no longer do, ran much slower, and the matmul path's smaller bound slower too
#: (measurements: research/notes/code-measurements.md).
FUSED_CHUNK_BYTES = 8 * 2**20
#: Bound on the working memory of one call of the wide predictive (a layer wider than
#: :data:`~pymc_bnn.predictive._forward.UNROLL_MAX`, on JAX), by JAX platform: its live
#: buffers are a few (n_draws, rows, width) activations. On a CPU the first layer is one
#: GEMM whose cost does not fall with more rows once the draws' weights are streamed once per call
#: (784-100-10, 500 draws: ~100 rows per call already run at the GEMM's speed); a GPU
#: needs thousands of rows per call to stay busy (benchmarks/results/wide_network.md).
WIDE_CHUNK_BYTES = {"cpu": 64 * 2**20, "gpu": 1 << 30}
#: Calls of the wide predictive dispatched before the oldest one's outputs are read:
#: JAX runs them asynchronously, so the host converts and sends the next rows while the
#: device computes. With one call in flight the GPU waited on the host, at well under
#: half the rows per second of the device alone (measurements:
#: benchmarks/results/wide_network.md).
WIDE_IN_FLIGHT = 3


@dataclass(frozen=True, eq=False)
class PosteriorPredictive:
    """Posterior predictive of a fitted network, from a fixed set of weight draws.

    Attributes
    ----------
    spec : NetworkSpec
    weights : tuple of (W, b)
        Weight draws, input layer first: ``W`` of shape (n_draws, fan_in, fan_out),
        ``b`` of shape (n_draws, fan_out). Read-only arrays. Hierarchical networks
        (``spec.n_groups > 0``): ``W`` of shape (n_draws, n_groups + 1, fan_in,
        fan_out) and ``b`` of shape (n_draws, n_groups + 1, fan_out), where the last
        entry of the group axis holds the population-level weights.

    noise : ndarray of shape (n_draws,) or None
        Noise sd draws of a homoscedastic regression network (else None).
    linearized_at : ndarray of shape (n_params,) or (n_points, n_params), or None
        A Laplace posterior's MAP weights, flat (:func:`pymc_bnn.network._flat.flatten`):
        each draw's output is then that of the network *linearised* there, ``f(x;
        theta) + J(x) (theta_s - theta)`` (:mod:`pymc_bnn.inference.laplace`), not ``f(x;
        theta_s)``. None: the network itself. Several rows: the modes of several
        Laplace fits, each draw linearised at its own fit's (see
        ``linearized_splits``).
    linearized_from : int, default 0
        With ``linearized_at``: the first draw that is linearised. The draws before it
        are the network's own (a mixture: e.g. ADVI draws, then Laplace draws; every
        summary is over all draws, so it is the equal-weight mixture of the draws);
        0: all are linearised.
    linearized_splits : tuple of int, default ()
        With several points (a 2-D ``linearized_at``): the draws where the second,
        third, ... point's draws begin (increasing, after ``linearized_from``); the
        draws from ``linearized_from`` to the first split are linearised at the first
        point, and so on.

    Methods taking ``groups`` route each point through its group's weights; a point
    of group code -1 (a group not seen in training), or every point when ``groups``
    is None, goes through the population-level weights. Classification networks
    have ``sample_proba`` / ``summary`` / ``mean_proba``; regression networks
    ``sample_normal`` / ``normal_summary`` / ``quantiles``.
    """

    spec: NetworkSpec
    weights: tuple
    noise: np.ndarray | None = None
    linearized_at: np.ndarray | None = None
    linearized_from: int = 0
    linearized_splits: tuple = ()

    def __post_init__(self):
        if self.linearized_from and not 0 < self.linearized_from < self.n_draws:
            raise ValueError(
                f"linearized_from={self.linearized_from} must lie in 1 .. "
                f"{self.n_draws - 1} (a mixture of network and linearised draws)."
            )
        if self.linearized_from and self.linearized_at is None:
            raise ValueError("linearized_from needs linearized_at (the linearisation point).")
        points = (
            0
            if self.linearized_at is None
            else (self.linearized_at.shape[0] if np.ndim(self.linearized_at) == 2 else 1)
        )
        splits = [int(s) for s in self.linearized_splits]
        bounds = [self.linearized_from, *splits, self.n_draws]
        if (points and len(splits) != points - 1) or any(
            a >= b for a, b in zip(bounds, bounds[1:])
        ):
            raise ValueError(
                f"linearized_splits={tuple(splits)} must give where each of the "
                f"{max(points, 1)} linearisation points' draws after the first begin, "
                f"increasing from linearized_from={self.linearized_from} to "
                f"n_draws={self.n_draws}."
            )

    @property
    def n_draws(self) -> int:
        """Number of posterior draws."""
        return int(self.weights[0][0].shape[0])

    def _function(self, dtype: str | None = None, head: str | None = None):
        """``g(X, *args) -> list`` of the output columns, each (n_draws, n_points), in
        the compiled function's dtype (views of one array when it returns one)."""
        mode, default = backend()
        dtype = dtype or default
        f = compiled_forward(
            len(self.weights),
            self.spec.activation,
            head or network_head(self.spec),
            mode,
            dtype,
            self.spec.hierarchical,
            static_shapes(self.spec),
        )

        def columns(X, *args):
            out = f(X.astype(dtype, copy=False), *args)
            if isinstance(out, list):
                return [np.asarray(c) for c in out]
            out = np.asarray(out)
            return [out[..., c] for c in range(out.shape[-1])]

        return columns

    def _inputs(self, dtype: str) -> list:
        """Weight draws in ``dtype`` (converted once per dtype, not per call)."""
        cache = self.__dict__.setdefault("_input_cache", {})
        if dtype not in cache:
            cache[dtype] = [
                np.ascontiguousarray(a, dtype=dtype) for pair in self.weights for a in pair
            ]
        return cache[dtype]

    def _dtype_for(self, X: np.ndarray) -> str:
        """The backend's dtype, or float64 when inputs or weights exceed float32's
        range (|x| > 1e30): such values would overflow to inf in float32."""
        _, dtype = backend()
        if dtype == "float64":
            return dtype
        # max and -min rather than abs: no temporary copy of X
        big = X.size and max(X.max(), -X.min()) > 1e30
        return "float64" if big or self._weights_exceed_float32 else dtype

    @functools.cached_property
    def _weights_exceed_float32(self) -> bool:
        """Whether any weight draw has |w| > 1e30 (checked once; draws are fixed)."""
        return any(np.max(np.abs(a)) > 1e30 for pair in self.weights for a in pair)

    @property
    def _width(self) -> int:
        """Columns of the compiled function's output."""
        return 2 if self.spec.is_regression else self.spec.n_classes

    def _require(self, regression: bool, method: str) -> None:
        if self.spec.is_regression != regression:
            kind = "regression" if self.spec.is_regression else "classification"
            raise ValueError(f"{method} is not available for a {kind} network.")

    @property
    def _wide(self) -> bool:
        """Whether the wide predictive (:func:`compiled_wide`) serves this network: on
        JAX, a plain (not hierarchical) network with a layer wider than
        :data:`~pymc_bnn.predictive._forward.UNROLL_MAX`."""
        return (
            backend()[0] == "JAX"
            and not self.spec.hierarchical
            and static_shapes(self.spec) is None
            and self.linearized_at is None
        )

    def _device_inputs(self, dtype: str) -> tuple[bool, list]:
        """``(shared, inputs)`` of :func:`compiled_wide` in ``dtype``, on JAX's device once
        per predictive (500 draws of 784-100-10: 160 MB of float32); ``shared``: the
        distinct first layers only (:func:`shared_first_layers`)."""
        cache = self.__dict__.setdefault("_device_cache", {})
        if dtype not in cache:
            (W0, b0), *rest = self.weights
            runs = shared_first_layers(W0, b0) if rest else None
            if runs is not None:
                W0, b0 = W0[runs[0]], b0[runs[0]]
            n_draws, fan_in, fan_out = W0.shape
            first = np.ascontiguousarray(W0.transpose(1, 0, 2), dtype=dtype)
            arrays = [
                np.ascontiguousarray(a, dtype=dtype)
                for a in (
                    first.reshape(fan_in, n_draws * fan_out),
                    b0,
                    *(a for p in rest for a in p),
                )
            ]
            arrays[2:2] = [] if runs is None else [runs[1].astype(np.int64)]
            cache[dtype] = (runs is not None, _jax_device.on_device(arrays))
        return cache[dtype]

    def _chunk_rows(self) -> int:
        if self._wide:
            # a few live (n_draws, rows, width) float32 buffers (the GEMM's output, the
            # activation, the next layer's) and the row itself
            widest = max([*self.spec.hidden_layer_sizes, self._width])
            per_row = 3 * 4 * self.n_draws * widest + 8 * self.spec.n_features
            budget = WIDE_CHUNK_BYTES["cpu" if _jax_device.platform() == "cpu" else "gpu"]
            return max(1, budget // per_row)
        if static_shapes(self.spec) is not None:
            # one fused loop: only the output columns are stored (counted at 8 bytes,
            # so a float64 call stays within the bound too)
            return max(1, FUSED_CHUNK_BYTES // (8 * self.n_draws * self._width))
        widest = max([*self.spec.hidden_layer_sizes, self._width])
        # a few live (n_draws, rows, width) float64 buffers per layer output, and the
        # rows of X once (XLA does not broadcast them over the draws, so hundreds of
        # rows of thousands of features fit one call in little memory; counting the
        # features per draw had cut a wide input to one row per call, hundreds of times
        # slower; measurements: research/notes/code-measurements.md);
        # hierarchical networks also gather one (fan_in, fan_out) weight matrix per
        # draw and row
        per_row = 4 * 8 * self.n_draws * widest + 8 * self.spec.n_features
        if self.spec.hierarchical:
            per_row += 2 * 8 * self.n_draws * max(a * b for a, b in self.spec.layer_shapes)
        return max(1, CHUNK_BYTES // per_row)

    def _group_index(self, groups, n: int):
        """Row index into the group axis of the weights (population for -1 / None)."""
        if not self.spec.hierarchical:
            if groups is not None:
                raise ValueError(
                    "groups were given, but this network has no groups (it was fit without groups)."
                )
            return None
        population = self.spec.n_groups
        if groups is None:
            return np.full(n, population, dtype=np.int64)
        groups = np.asarray(groups)
        if groups.shape != (n,) or not np.issubdtype(groups.dtype, np.integer):
            raise ValueError(
                f"groups must be integer group codes of shape ({n},); got dtype "
                f"{groups.dtype} and shape {groups.shape}."
            )
        if groups.size and (groups.min() < -1 or groups.max() >= population):
            raise ValueError(
                f"group codes must lie in -1 .. {population - 1} (-1: unseen group); got "
                f"values from {groups.min()} to {groups.max()}."
            )
        return np.where(groups < 0, population, groups).astype(np.int64)

    def _chunks(
        self,
        X: np.ndarray,
        groups=None,
        *,
        head: str | None = None,
        dtype: str | None = None,
        columns: bool = False,
    ):
        """``(start, outputs)`` per chunk of rows: a float64 (n_draws, rows, k) array,
        or with ``columns`` the list of the ``k`` (n_draws, rows) columns in the
        compiled dtype (no copy). ``head`` / ``dtype`` default to the network's own
        head and :meth:`_dtype_for`."""
        X = check_predictive_X(X, self.spec.n_features)
        index = self._group_index(groups, X.shape[0])
        if self.linearized_at is not None:
            if self.linearized_from or np.ndim(self.linearized_at) == 2:
                yield from self._mixture_chunks(X, columns=columns, head=head, dtype=dtype)
            else:
                yield from self._linearized_chunks(X, columns=columns, head=head)
            return
        dtype = dtype or self._dtype_for(X)
        if self._wide:
            for start, rows, (out,) in self._wide_calls(X, "none", head=head, dtype=dtype):
                cols = [out[:, :rows, c] for c in range(out.shape[-1])]
                if self.noise is not None:
                    cols.append(np.broadcast_to(self.noise[:, None], cols[0].shape))
                yield start, (cols if columns else np.stack(cols, axis=-1, dtype=np.float64))
            return
        f = self._function(dtype, head)
        flat = self._inputs(dtype)
        step = self._chunk_rows()
        n = X.shape[0]
        for start in range(0, n, step):
            rows = min(step, n - start)
            # Every call gets exactly ``step`` rows (a short chunk is zero-padded, the
            # padding dropped below): a JAX function is compiled once per input shape,
            # and in float32 XLA's rounding depends on the shape; with one shape, a
            # point's probabilities do not depend on how many other points come along.
            chunk = X[start : start + rows]
            if rows < step:
                chunk = np.concatenate([chunk, np.zeros((step - rows, X.shape[1]))])
            args = [chunk]
            if index is not None:
                g = index[start : start + rows]
                args.append(np.concatenate([g, np.zeros(step - rows, dtype=np.int64)]))
            cols = [c[:, :rows] for c in f(*args, *flat)]
            if self.noise is not None:  # homoscedastic regression: constant sd per draw
                cols.append(np.broadcast_to(self.noise[:, None], cols[0].shape))
            if columns:
                yield start, cols
            else:  # one float64 (n_draws, rows, k) array, converted while copied
                out = np.empty((*cols[0].shape, len(cols)))
                for k, col in enumerate(cols):
                    out[..., k] = col
                yield start, out

    @functools.cached_property
    def _offsets(self) -> np.ndarray:
        """The draws' distances from the linearisation point, (n_draws, n_params)."""
        return flatten(self.weights) - self.linearized_at[None, :]

    @functools.cached_property
    def _parts(self) -> list[PosteriorPredictive]:
        """A mixture's predictives (views of the draws), in the order of the draws: the
        network's own draws (before :attr:`linearized_from`; none where it is 0), then
        the linearised draws of each point (:attr:`linearized_splits`), each a
        predictive linearised at one point."""

        def take(part):
            weights = tuple((W[part], b[part]) for W, b in self.weights)
            return weights, None if self.noise is None else self.noise[part]

        parts = []
        if self.linearized_from:
            parts.append(PosteriorPredictive(self.spec, *take(slice(None, self.linearized_from))))
        points = np.atleast_2d(self.linearized_at)
        bounds = [self.linearized_from, *self.linearized_splits, None]
        for point, start, stop in zip(points, bounds, bounds[1:]):
            parts.append(
                PosteriorPredictive(self.spec, *take(slice(start, stop)), linearized_at=point)
            )
        return parts

    def _mixture_chunks(self, X: np.ndarray, *, columns: bool, head: str | None, dtype):
        """:meth:`_chunks` of a mixture: each chunk of rows through each part's draws
        (:attr:`_parts`: the network's own on its fast path, then the linearised ones),
        stacked along the draws in float64."""
        first, *rest = self._parts

        def part_chunks(part, rows, as_columns):
            if part.linearized_at is None:
                return part._chunks(X[rows], head=head, dtype=dtype, columns=as_columns)
            return part._linearized_chunks(X[rows], columns=as_columns, head=head)

        def more(rows):  # the other parts' draws at X[rows], one (draws, rows, k) array
            yield (
                0,
                np.concatenate(
                    [
                        np.concatenate([out for _, out in part_chunks(part, rows, False)], axis=1)
                        for part in rest
                    ]
                ),
            )

        chunks = part_chunks(first, slice(None), columns)
        yield from append_draws(chunks, more, columns) if rest else chunks

    def _linearized_chunks(self, X: np.ndarray, *, columns: bool, head: str | None = None):
        """:meth:`_chunks` of a network linearised at :attr:`linearized_at` (float64): a
        homoscedastic regression network's mean and noise sd, or a classification
        network's class probabilities (the linearised logits through the link; ``head
        = "normal"``: the logits themselves)."""
        if self.spec.heteroscedastic or self.spec.hierarchical:
            raise ValueError(
                "a linearised predictive is for a network without groups "
                "(and, for regression, a homoscedastic one)."
            )
        head = head or network_head(self.spec)
        step = self._chunk_rows()
        for start in range(0, X.shape[0], step):
            logits = linearised_outputs(
                self.spec.layer_shapes,
                self.spec.activation,
                self.linearized_at,
                X[start : start + step],
                self._offsets,
            )
            if self.spec.is_regression:
                mean = logits[..., 0]
                cols = [mean, np.broadcast_to(self.noise[:, None], mean.shape)]
            elif head == "normal":
                cols = [logits[..., c] for c in range(logits.shape[-1])]
            elif head == "bernoulli":
                cols = [special.expit(-logits[..., 0]), special.expit(logits[..., 0])]
            else:
                proba = special.softmax(logits, axis=-1)
                cols = [proba[..., c] for c in range(proba.shape[-1])]
            yield start, (cols if columns else np.stack(cols, axis=-1))

    def _wide_calls(
        self, X: np.ndarray, reduce: str, *, head: str | None = None, dtype: str | None = None
    ):
        """``(start, rows, outputs)`` per chunk of rows, through the wide predictive
        (:func:`compiled_wide` with ``reduce``): the outputs as NumPy arrays of the
        padded chunk (the first ``rows`` points are real).

        The weights stay on the device (:meth:`_device_inputs`); the compiled program is
        called directly with them, and up to :data:`WIDE_IN_FLIGHT` later chunks are
        dispatched before a chunk's outputs are read.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.spec.n_features:
            raise ValueError(
                f"X must have shape (n_points, {self.spec.n_features}); got {X.shape}."
            )
        dtype = dtype or self._dtype_for(X)
        shared, weights = self._device_inputs(dtype)
        f = compiled_wide(
            len(self.weights),
            self.spec.activation,
            head or network_head(self.spec),
            dtype,
            reduce,
            shared,
        )
        program = _jax_device.jitted_program(f)
        if program is None:  # another PyTensor layout: the checked call, host arrays
            host = [np.asarray(w) for w in weights]
            program = lambda chunk, *_: f(chunk, *host)  # noqa: E731
        step = self._chunk_rows()
        n = X.shape[0]
        pending = collections.deque()
        with _jax_device.matmul_precision():
            for start in range(0, n, step):
                rows = min(step, n - start)
                if rows == step:  # a new array each call: JAX may read it after return
                    chunk = X[start : start + rows].astype(dtype)
                else:
                    chunk = np.zeros((padded_rows(rows, step), X.shape[1]), dtype=dtype)
                    chunk[:rows] = X[start : start + rows]
                pending.append((start, rows, program(chunk, *weights)))
                if len(pending) > WIDE_IN_FLIGHT:
                    first, count, out = pending.popleft()
                    yield first, count, [np.asarray(o) for o in out]
            while pending:
                first, count, out = pending.popleft()
                yield first, count, [np.asarray(o) for o in out]

    def _outputs(self, X: np.ndarray, groups=None) -> np.ndarray:
        """The network's outputs before any link, in float64, for every draw: shape
        (n_draws, n_points, n_outputs) (a homoscedastic regressor's noise sd appended
        as a last column). For the convergence diagnostics: class probabilities in
        float32 saturate at 1 for logits above ~17, which would tie confident draws."""
        return np.concatenate(
            [out for _, out in self._chunks(X, groups, head="normal", dtype="float64")], axis=1
        )

    def sample_proba(self, X: np.ndarray, groups=None) -> np.ndarray:
        """Class-probability draws.

        Parameters
        ----------
        X : array of shape (n_points, n_features)
        groups : int array of shape (n_points,), optional
            Group codes of a hierarchical network (-1: unseen, population weights).

        Returns
        -------
        proba : array of shape (n_draws, n_points, n_classes)
            Column ``k`` is the probability of class code ``k``; rows sum to 1.
        """
        self._require(False, "sample_proba")
        return self._sample(check_predictive_X(X, self.spec.n_features), groups)

    def _sample(self, X, groups) -> np.ndarray:
        """All chunks' outputs in one (n_draws, n_points, width) array."""
        out = np.empty((self.n_draws, X.shape[0], self._width))
        for start, chunk in self._chunks(X, groups):
            out[:, start : start + chunk.shape[1]] = chunk
        return out

    def summary(self, X: np.ndarray, groups=None) -> dict[str, np.ndarray]:
        """Summaries of the predictive at ``X`` (see :func:`summarize_proba`).

        Computed chunk by chunk, so memory stays bounded however many points.
        """
        self._require(False, "summary")
        X = check_predictive_X(X, self.spec.n_features)
        n = X.shape[0]
        k = self.spec.n_classes
        out = {
            "mean": np.empty((n, k)),
            "std": np.empty((n, k)),
            "entropy": np.empty(n),
            "mutual_info": np.empty(n),
        }
        if self._wide:  # reduced over the draws inside the compiled call
            self._group_index(groups, n)
            for start, rows, (mean, var, expected) in self._wide_calls(X, "moments"):
                stop = start + rows
                mean = mean[:rows]
                entropy = -xlogx(mean).sum(axis=-1)
                out["mean"][start:stop] = mean
                out["std"][start:stop] = np.sqrt(var[:rows])
                out["entropy"][start:stop] = entropy
                out["mutual_info"][start:stop] = np.maximum(entropy - expected[:rows], 0.0)
            return out
        for start, chunk in self._chunks(X, groups):
            stop = start + chunk.shape[1]
            for key, value in summarize_proba(chunk).items():
                out[key][start:stop] = value
        return out

    def mean_proba(self, X: np.ndarray, groups=None) -> np.ndarray:
        """Posterior predictive class probabilities, shape (n_points, n_classes)."""
        self._require(False, "mean_proba")
        X = check_predictive_X(X, self.spec.n_features)
        out = np.empty((X.shape[0], self.spec.n_classes))
        if self._wide:  # the mean over draws, inside the compiled call
            self._group_index(groups, X.shape[0])
            for start, rows, (mean,) in self._wide_calls(X, "mean"):
                out[start : start + rows] = mean[:rows]
            return out
        for start, cols in self._chunks(X, groups, columns=True):
            for k, col in enumerate(cols):  # accumulated in float64
                out[start : start + col.shape[1], k] = col.mean(axis=0, dtype=np.float64)
        return out

    def sample_normal(self, X: np.ndarray, groups=None) -> tuple[np.ndarray, np.ndarray]:
        """Per-draw predictive Normal of a regression network.

        Returns
        -------
        mean, sd : arrays of shape (n_draws, n_points)
            The network output and the noise sd of each posterior draw: given the
            draw, ``y ~ Normal(mean, sd)``. The posterior predictive is their mixture.
        """
        self._require(True, "sample_normal")
        out = self._sample(check_predictive_X(X, self.spec.n_features), groups)
        return out[..., 0], out[..., 1]

    def normal_summary(self, X: np.ndarray, groups=None) -> dict[str, np.ndarray]:
        """Moments of the posterior predictive of a regression network.

        Returns
        -------
        dict of arrays of shape (n_points,): ``mean``; ``std``, the total predictive
        sd, ``sqrt(epistemic_std**2 + aleatoric_std**2)``; ``epistemic_std``, the sd
        of the mean over draws (uncertainty about the function); ``aleatoric_std``,
        the root mean noise variance (the noise the model expects).
        """
        self._require(True, "normal_summary")
        X = check_predictive_X(X, self.spec.n_features)
        n = X.shape[0]
        out = {k: np.empty(n) for k in ("mean", "std", "epistemic_std", "aleatoric_std")}
        if self._wide:  # moments over the draws, inside the compiled call
            self._group_index(groups, n)
            noise_var = None if self.noise is None else np.mean(self.noise**2)
            for start, rows, (mean, var) in self._wide_calls(X, "moments"):
                stop = start + rows
                mean, var = mean[:rows], var[:rows]
                epistemic = var[:, 0]
                # E[sd^2] of each point: var + mean^2 of the sd column, or the noise draws'
                aleatoric = (
                    var[:, 1] + mean[:, 1] ** 2 if noise_var is None else np.full(rows, noise_var)
                )
                out["mean"][start:stop] = mean[:, 0]
                out["epistemic_std"][start:stop] = np.sqrt(epistemic)
                out["aleatoric_std"][start:stop] = np.sqrt(aleatoric)
                out["std"][start:stop] = np.sqrt(epistemic + aleatoric)
            return out
        for start, chunk in self._chunks(X, groups):
            stop = start + chunk.shape[1]
            mu, sd = chunk[..., 0], chunk[..., 1]
            epistemic = mu.var(axis=0)
            aleatoric = np.mean(sd**2, axis=0)
            out["mean"][start:stop] = mu.mean(axis=0)
            out["epistemic_std"][start:stop] = np.sqrt(epistemic)
            out["aleatoric_std"][start:stop] = np.sqrt(aleatoric)
            out["std"][start:stop] = np.sqrt(epistemic + aleatoric)
        return out

    def quantiles(self, X: np.ndarray, q, groups=None) -> np.ndarray:
        """Quantiles of the posterior predictive of a regression network.

        The predictive is the equal-weight mixture of the draws' Normals; its
        quantiles are found by bisection on the mixture CDF (to 1e-6 of the predictive
        sd), so they are exact for the draws held and deterministic.

        Parameters
        ----------
        q : float or sequence of float in (0, 1)

        Returns
        -------
        array of shape (n_q, n_points)
        """
        from scipy.special import ndtr

        self._require(True, "quantiles")
        q = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if q.ndim != 1 or not np.all((q > 0) & (q < 1)):  # NaN fails this too
            raise ValueError(
                "q must be a level or a 1-D sequence of levels strictly between "
                f"0 and 1; got {q.tolist()}."
            )
        X = check_predictive_X(X, self.spec.n_features)
        out = np.empty((q.shape[0], X.shape[0]))
        for start, chunk in self._chunks(X, groups):
            stop = start + chunk.shape[1]
            mu, sd = chunk[..., 0], chunk[..., 1]  # (n_draws, rows)
            lo = np.broadcast_to((mu - 10 * sd).min(axis=0), (q.shape[0], mu.shape[1])).copy()
            hi = np.broadcast_to((mu + 10 * sd).max(axis=0), lo.shape).copy()
            tol = 1e-6 * np.sqrt(mu.var(axis=0) + np.mean(sd**2, axis=0))
            for _ in range(200):  # ~30 halvings reach tol; the cap guards float spacing
                if not np.any(hi - lo > tol):
                    break
                mid = 0.5 * (lo + hi)
                cdf = ndtr((mid[:, None, :] - mu) / sd).mean(axis=1)
                below = cdf < q[:, None]
                lo = np.where(below, mid, lo)
                hi = np.where(below, hi, mid)
            out[:, start:stop] = 0.5 * (lo + hi)
        return out

    def log_density(self, X: np.ndarray, y, groups=None) -> np.ndarray:
        """Log posterior predictive density of each point's target.

        ``log mean_s p(y_i | x_i, theta_s)`` over the draws held: for a regression
        network the log density of the predictive mixture of Normals at ``y_i`` (in
        the network's units), for a classifier the log of the mean probability of
        class code ``y_i``. Computed chunk by chunk (``logsumexp`` over draws), so
        the (draws x points) densities are never held whole.

        Parameters
        ----------
        X : array of shape (n_points, n_features)
        y : array of shape (n_points,)
            Targets (regression) or integer class codes (classification).

        Returns
        -------
        ndarray of shape (n_points,)
        """
        X = check_predictive_X(X, self.spec.n_features)
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},); got {y.shape}.")
        y = check_predictive_targets(y, None if self.spec.is_regression else self.spec.n_classes)
        if not self.spec.is_regression:
            return -mean_proba_nll(self.mean_proba(X, groups), y.astype(np.int64))
        out = np.empty(X.shape[0])
        for start, chunk in self._chunks(X, groups):
            stop = start + chunk.shape[1]
            out[start:stop] = -mixture_nll(chunk[..., 0], chunk[..., 1], y[start:stop], axis=0)
        return out


def mixture_nll(mean, sd, y, *, axis: int) -> np.ndarray:
    """``-log mean N(y | mean, sd**2)`` over the draws' ``axis``."""
    from scipy.special import logsumexp

    logpdf = -0.5 * ((y - mean) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2 * np.pi)
    return -(logsumexp(logpdf, axis=axis) - np.log(mean.shape[axis]))


def mean_proba_nll(proba, y) -> np.ndarray:
    """``-log proba[..., i, y_i]`` of mean class probabilities ``(..., n_rows, k)``."""
    picked = np.take_along_axis(
        proba, np.broadcast_to(y[:, None], (*proba.shape[:-1], 1)), axis=-1
    )[..., 0]
    return -np.log(np.clip(picked, 1e-300, None))


def append_draws(chunks, more, columns: bool):
    """``(start, outputs)`` chunks (:meth:`PosteriorPredictive._chunks`) with more draws
    of the same rows after each chunk's own, in float64: ``more(rows)`` gives the
    ``(start, (draws, rows, k))`` chunks of the other draws at ``X[rows]``."""
    for start, own in chunks:
        rows = slice(start, start + (own[0] if columns else own).shape[1])
        other = np.concatenate([out for _, out in more(rows)], axis=1)
        if columns:
            yield (
                start,
                [
                    np.concatenate([np.asarray(c, dtype=np.float64), other[..., k]])
                    for k, c in enumerate(own)
                ],
            )
        else:
            yield start, np.concatenate([own, other])


def _readonly(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


def from_idata(spec: NetworkSpec, idata, *, n_draws: int | None = None) -> PosteriorPredictive:
    """Posterior predictive from stored draws (an ArviZ DataTree with a posterior group).

    Parameters
    ----------
    spec : NetworkSpec
    idata : xarray.DataTree
        Holds ``w0, b0, ...`` with dims ``(chain, draw, ...)``.
    n_draws : int, optional
        Use that many draws, evenly thinned over the (chain, draw) stack; None: all.
    """
    post = idata.posterior
    total = int(post.sizes["chain"] * post.sizes["draw"])
    n_draws = check_n_draws(n_draws, allow_none=True)
    if n_draws is None:
        idx = slice(None)
    elif n_draws > total:
        raise ValueError(
            f"n_draws={n_draws} exceeds the {total} stored posterior draws; sample longer "
            "(draws x chains) or ask for fewer."
        )
    else:
        idx = np.unique(np.linspace(0, total - 1, n_draws).round().astype(int))
    # the linearisation points of the draws kept, and where each one's draws begin
    linearized_at, first_linear, splits = kept_linearisation(
        idata[LINEARIZATION_GROUP] if LINEARIZATION_GROUP in idata.children else None,
        spec.weight_names,
        np.arange(total)[idx],
    )

    def values(name):
        if name not in post:
            raise ValueError(f"the posterior draws hold no variable {name!r}.")
        values = post[name].values
        return values.reshape(total, *values.shape[2:])[idx]

    return _from_values(spec, values, linearized_at, first_linear, splits)


def _from_values(
    spec: NetworkSpec, values, linearized_at=None, linearized_from: int = 0, linearized_splits=()
) -> PosteriorPredictive:
    """A predictive from ``values(name) -> draws of shape (n_draws, ...)``."""

    def get(name):
        if not spec.hierarchical:
            return _readonly(values(name))
        # per-group draws, then the population-level draws as one more "group"
        return _readonly(np.concatenate([values(name), values(f"{name}_mu")[:, None]], axis=1))

    weights = tuple((get(w), get(b)) for w, b in spec.weight_names)
    noise = None
    if spec.is_regression and not spec.heteroscedastic:
        noise = _readonly(values("sigma"))
    n_sets = (spec.n_groups + 1,) if spec.hierarchical else ()
    for (W, b), shape in zip(weights, spec.layer_shapes):
        if W.shape[1:] != (*n_sets, *shape) or b.shape[1:] != (*n_sets, shape[1]):
            raise ValueError(
                f"stored weight draws of shape {W.shape[1:]} do not match the "
                f"architecture {spec.layer_shapes}"
                + (f" with {spec.n_groups} groups." if spec.hierarchical else ".")
            )
    if linearized_at is not None:
        linearized_at = _readonly(linearized_at)
    return PosteriorPredictive(
        spec=spec,
        weights=weights,
        noise=noise,
        linearized_at=linearized_at,
        linearized_from=linearized_from,
        linearized_splits=tuple(linearized_splits),
    )


def posterior_predictive(
    posterior,
    *,
    n_draws: int | None = 500,
    random_seed: int | None = None,
    temperature: float = 1.0,
) -> PosteriorPredictive:
    """Weight draws from a fitted posterior, ready for fast prediction.

    Parameters
    ----------
    posterior : Posterior
        From :func:`pymc_bnn.fit`.
    n_draws : int, optional
        Number of draws. VI: fresh draws from the approximation (None: 500).
        MCMC: that many draws evenly thinned from the stored chains (None: all).
    random_seed : int in 0 .. 2**32 - 1, optional
        Seed of the VI or Laplace draws (Laplace: or a sequence of them; MCMC: fixed).
    temperature : float, default 1.0
        VI and Laplace only: draw from the tempered approximation ``q**(1/temperature)`` (the
        spread around the mean scaled by ``sqrt(temperature)``; see :func:`tempered`).

    Returns
    -------
    PosteriorPredictive

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import build_model, fit, posterior_predictive
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> post = fit(build_model(X, y, hidden_layer_sizes=(3,), random_state=0), n_iter=3000,
    ...            random_seed=0)
    >>> posterior_predictive(post, n_draws=50, random_seed=1).sample_proba(X).shape
    (50, 40, 2)
    """
    # a sequence: only Laplace draws take one (PyMC's VI draws: one seed per chain)
    random_seed = check_random_seed(random_seed, sequence=posterior.laplace is not None)
    if posterior.laplace is not None:
        n_draws = check_n_draws(500 if n_draws is None else n_draws, allow_none=False)
        draws = laplace_draws(
            posterior.laplace,
            posterior.spec.layer_shapes,
            n_draws,
            random_seed,
            check_temperature(temperature),
        )
        return _from_values(posterior.spec, draws.__getitem__, posterior.laplace.theta)
    if posterior.is_variational:
        n_draws = 500 if n_draws is None else n_draws
        if random_seed is not None and fast_draws_apply(posterior):
            n_draws = check_n_draws(n_draws, allow_none=False)
            with tempered(posterior.approx, check_temperature(temperature)) as approx:
                draws = vi_draws(approx, n_draws, random_seed)
            return _from_values(posterior.spec, draws.__getitem__)
        idata = posterior_draws(
            posterior, n_draws=n_draws, random_seed=random_seed, temperature=temperature
        )
        return from_idata(posterior.spec, idata)
    posterior_draws(posterior, temperature=temperature)  # MCMC: rejects T != 1
    return from_idata(posterior.spec, posterior.idata, n_draws=n_draws)
