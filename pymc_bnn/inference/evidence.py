"""Per-layer prior scales chosen by the evidence of a Laplace approximation.

MacKay's empirical Bayes ("evidence framework", MacKay 1992; for modern networks Immer
et al. 2021, "Scalable marginal likelihood estimation for model selection in deep
learning"): fit the network's maximum a posteriori (MAP) weights under a Normal prior
with one precision ``delta_l`` per layer, approximate the posterior around them by a
Gaussian whose precision is the generalised Gauss-Newton (GGN) curvature of the
log-likelihood plus ``delta_l``, and choose each ``delta_l`` to maximise the marginal
likelihood (evidence) of that Gaussian. MacKay's fixed point does it:

    gamma_l = P_l - delta_l * tr_l[(GGN + delta)^-1],   delta_l = gamma_l / |theta_l|^2

(``gamma_l``: the number of well-determined parameters of layer ``l``). The curvature
is taken block-diagonal by layer, each block exact (eigen-decomposed once) up to
:data:`MAX_BLOCK` parameters and diagonal beyond; then every fixed-point step is a sum
over eigenvalues. Two rounds: MAP at the starting prior, evidence step, MAP again at
the new prior (warm-started), evidence step.

The evidence is the marginal likelihood of the *prior scales*: unlike the ELBO of a
mean-field fit, it prefers small first-layer scales and large output scales where the
data say so (see ``docs/calibration.md``). The network is the one of
:func:`pymc_bnn.network.model.forward`; the functions are compiled once per structure (JAX
when installed), with data and precisions as inputs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from pymc_bnn._runtime.compile_cache import compiled_function
from pymc_bnn.network._checks import check_hidden_layer_sizes, is_dask_collection

# the flat-parameter network, under the names this module and its tests have used
from pymc_bnn.network._flat import compile_mode as _mode
from pymc_bnn.network._flat import flat_logits as _logits
from pymc_bnn.network._flat import layer_index as _layer_index
from pymc_bnn.network._flat import n_params as _n_params
from pymc_bnn.network._flat import network_jacobian as _jacobian
from pymc_bnn.network.model import initial_sds

__all__ = ["EvidencePrior", "evidence_prior_scales", "jacobian_chunk_rows"]

#: Largest layer (weights + biases) whose GGN block is eigen-decomposed exactly; larger
#: layers use the block's diagonal.
MAX_BLOCK = 3000
#: Working memory of one chunk of rows of the Jacobian.
CHUNK_BYTES = 32 * 2**20
#: Rows used by the MAP fits and the curvature; beyond it, a seeded random subset of
#: this many rows stands for all of them, its log-likelihood and curvature scaled by
#: ``n_rows / MAX_ROWS`` (an unbiased estimate of the full sums, as ``total_size`` does
#: for minibatches), so the cost of the evidence step is bounded whatever the data size.
MAX_ROWS = 20_000
#: Range the chosen prior standard deviations are kept in. A layer whose MAP weights
#: all vanish (e.g. constant inputs) has no evidence for any scale; on standardised
#: inputs, scales outside this range never describe a usable network.
SIGMA_RANGE = (1e-2, 1e2)
#: Threads of NumPy's BLAS / LAPACK during the evidence step (L-BFGS-B, the curvature
#: products and eigendecompositions are all small): on a busy machine, BLAS's default
#: threads (one per core) spin waiting for work and compete for the cores, which made
#: the step many times slower than one thread (measurements:
#: research/notes/code-measurements.md).
BLAS_THREADS = 1
#: L-BFGS-B's ``ftol`` for the MAP fits: stop when an iteration lowers the objective (per
#: row) by less than this fraction. The MAP of a network keeps creeping long after the
#: prior scales it implies have settled (scipy's default, 2.2e-9, ran thousands of
#: iterations per round on a large table, for seconds each, to move the scales by a few
#: percent); see ``benchmarks/results/fit_scaling.md`` (measurements:
#: research/notes/code-measurements.md).
MAP_FTOL = 1e-6


@dataclass(frozen=True)
class EvidencePrior:
    """Result of :func:`evidence_prior_scales`.

    Attributes
    ----------
    sigmas : tuple of float, one per layer (input layer first)
        Prior standard deviations ``1 / sqrt(delta_l)`` of each layer's weights and biases.
    log_evidence : float
        Laplace log marginal likelihood at ``sigmas`` (nats, up to a constant).
    curvature : tuple of str, one per layer
        ``"block"`` (exact GGN block) or ``"diagonal"`` (the block's diagonal).
    map_iterations : int
        L-BFGS iterations of the MAP fits, summed over rounds.
    """

    sigmas: tuple[float, ...]
    log_evidence: float
    curvature: tuple[str, ...]
    map_iterations: int

    def as_dict(self) -> dict:
        return {
            "sigmas": list(self.sigmas),
            "log_evidence": self.log_evidence,
            "curvature": list(self.curvature),
            "map_iterations": self.map_iterations,
        }


@functools.lru_cache(maxsize=16)
def _value_grad(layer_shapes: tuple, activation: str, bernoulli: bool, mode: str):
    """``f(theta, X, Y, delta) -> (objective, gradient, loglik)``; ``Y`` is the target
    as a float column (Bernoulli) or one-hot matrix (categorical)."""
    theta = pt.tensor("theta", dtype="float64", shape=(_n_params(layer_shapes),))
    X = pt.matrix("X", dtype="float64")
    Y = pt.matrix("Y", dtype="float64")
    delta = pt.vector("delta", dtype="float64")
    logits = _logits(theta, X, layer_shapes, activation)
    if bernoulli:
        loglik = (Y * logits - pt.softplus(logits)).sum()
    else:
        loglik = (Y * pt.special.log_softmax(logits, axis=-1)).sum()
    objective = -loglik + 0.5 * (delta * theta**2).sum()
    return compiled_function(
        ("_value_grad", layer_shapes, activation, bernoulli),
        [theta, X, Y, delta],
        [objective, pt.grad(objective, theta), loglik],
        mode=mode,
    )


def jacobian_chunk_rows(n_rows: int, layer_shapes) -> int:
    """Rows per Jacobian call: a power of two, the Jacobian (rows, n_out, P) of float64
    within :data:`CHUNK_BYTES`; fewer rows than that are padded to a power of two. The
    compiled function's shape is static: powers of two let tables of any size share a
    few compiled functions (a chunk of any other number of rows, say, was compiled anew
    for each network, a cost paid by a table's first fit; measurements:
    ``benchmarks/results/fit_scaling.md``, research/notes/code-measurements.md)."""
    n_out = layer_shapes[-1][1]
    by_jacobian = max(1, CHUNK_BYTES // (8 * n_out * _n_params(layer_shapes)))
    return min(1 << (max(n_rows, 1) - 1).bit_length(), 1 << (by_jacobian.bit_length() - 1))


def _ggn_blocks(shapes, activation, mode, theta, X, layer_of, n_layers, n_out, bernoulli):
    """Per layer: the GGN block (P_l, P_l) when P_l <= MAX_BLOCK, else its diagonal."""
    P = theta.size
    # a layer's parameters are contiguous in theta (layer_of is sorted)
    bounds = np.searchsorted(layer_of, np.arange(n_layers + 1))
    layers = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    blocks = [
        np.zeros((c.stop - c.start,) * (2 if c.stop - c.start <= MAX_BLOCK else 1)) for c in layers
    ]
    n = X.shape[0]
    step = jacobian_chunk_rows(n, shapes)
    jacobian = _jacobian(shapes, activation, step, mode)
    for start in range(0, n, step):
        rows = min(step, n - start)
        chunk = X[start : start + rows]
        if rows < step:  # the compiled function takes exactly ``step`` rows
            chunk = np.concatenate([chunk, np.zeros((step - rows, X.shape[1]))])
        logits, J = jacobian(theta, chunk)
        logits = np.asarray(logits)[:rows]
        J = np.asarray(J).reshape(-1, n_out, P)[:rows]
        # GGN = sum_n J_n^T Lambda_n J_n = plus^T plus - minus^T minus
        if bernoulli:  # Lambda_n = p (1 - p)
            p = 1.0 / (1.0 + np.exp(-logits[:, 0]))
            terms = [(J[:, 0, :] * np.sqrt(p * (1.0 - p))[:, None], 1.0)]
        else:  # Lambda_n = diag p_n - p_n p_n^T
            z = logits - logits.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            terms = [
                ((J * np.sqrt(p)[:, :, None]).reshape(-1, P), 1.0),
                (np.einsum("nk,nkp->np", p, J), -1.0),
            ]
        for cols, block in zip(layers, blocks):
            for F, sign in terms:
                Fl = F[:, cols]
                block += sign * (Fl.T @ Fl if block.ndim == 2 else np.einsum("ij,ij->j", Fl, Fl))
    eig = [np.clip(np.linalg.eigvalsh(b) if b.ndim == 2 else b, 0.0, None) for b in blocks]
    return eig, ["block" if b.ndim == 2 else "diagonal" for b in blocks]


def _row_subset(n_rows: int, size: int, rng) -> np.ndarray:
    """``size`` distinct rows of ``n_rows``, drawn by ``rng``, in increasing order."""
    return np.sort(rng.choice(n_rows, size=size, replace=False))


def _fixed_point(eig, sq_norms, delta, *, max_iter=500, rtol=1e-6):
    """MacKay's updates of the per-layer precisions, from ``delta`` (kept so that
    ``1 / sqrt(delta)`` stays within :data:`SIGMA_RANGE`)."""
    lo, hi = SIGMA_RANGE[1] ** -2, SIGMA_RANGE[0] ** -2
    delta = delta.copy()
    for _ in range(max_iter):
        new = np.empty_like(delta)
        for layer, lam in enumerate(eig):
            gamma = np.sum(lam / (lam + delta[layer]))  # = P_l - delta_l tr_l(H^-1)
            new[layer] = min(max(gamma / max(sq_norms[layer], 1e-300), lo), hi)
        done = np.allclose(new, delta, rtol=rtol, atol=0.0)
        delta = new
        if done:
            break
    return delta


def _log_evidence(loglik, eig, sq_norms, sizes, delta) -> float:
    return float(
        loglik
        - 0.5 * np.dot(delta, sq_norms)
        + 0.5 * np.dot(sizes, np.log(delta))
        - 0.5 * sum(np.sum(np.log(lam + d)) for lam, d in zip(eig, delta))
    )


def evidence_prior_scales(
    X: np.ndarray,
    y: np.ndarray,
    *,
    hidden_layer_sizes=(5, 5),
    activation: str = "tanh",
    n_classes: int | None = None,
    prior_sigma: float = 1.0,
    rounds: int = 2,
    max_iter: int = 2000,
    max_rows: int = MAX_ROWS,
    random_state: int | None = None,
) -> EvidencePrior:
    """Prior standard deviation of each layer chosen by the Laplace evidence.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Training inputs (already scaled as the network will see them). Of a dask array
        only the rows used are kept in memory (all of them up to ``max_rows``, else the
        random subset; dask reads them block by block), so data larger than memory
        work as data in memory do.
    y : int array of shape (n_rows,)
        Class codes ``0 .. n_classes - 1`` (a dask array with a dask ``X``).
    hidden_layer_sizes : sequence of int
    activation : str
    n_classes : int, optional
        Defaults to ``y.max() + 1`` (at least 2).
    prior_sigma : float, default 1.0
        Starting prior scale of every layer (the first MAP fit's prior).
    rounds : int, default 2
        MAP fit + evidence step, repeated (the MAP warm-started).
    max_iter : int, default 2000
        L-BFGS iterations per MAP fit.
    max_rows : int, default :data:`MAX_ROWS`
        With more rows than this, a random subset of ``max_rows`` rows is used, its
        log-likelihood and curvature scaled up to the full data.
    random_state : int, optional
        Seeds the MAP fit's starting weights (and the subset of rows).

    Returns
    -------
    EvidencePrior
        ``sigmas`` has one value per layer (``len(hidden_layer_sizes) + 1``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(80, 2)); y = (X[:, 0] > 0).astype(int)
    >>> ev = evidence_prior_scales(X, y, hidden_layer_sizes=(3,), random_state=0)
    >>> len(ev.sigmas)
    2
    """
    # dask arrays stay lazy until the rows to use are known; the rest is converted now
    lazy = is_dask_collection(X)
    if not lazy:
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(
            f"X must be (n_rows, n_features) and y (n_rows,); got {X.shape} and {y.shape}."
        )
    k = int(n_classes) if n_classes is not None else max(2, int(np.asarray(y.max())) + 1)
    bernoulli = k == 2
    n_out = 1 if bernoulli else k
    if int(rounds) < 1:
        raise ValueError(f"rounds must be >= 1; got {rounds!r}.")
    if int(max_rows) < 1:
        raise ValueError(f"max_rows must be >= 1; got {max_rows!r}.")
    widths = (X.shape[1], *check_hidden_layer_sizes(hidden_layer_sizes), n_out)
    shapes = tuple(zip(widths[:-1], widths[1:]))
    layer_of = _layer_index(shapes)
    n_layers = len(shapes)
    sizes = np.bincount(layer_of, minlength=n_layers).astype(np.float64)
    mode = _mode()
    value_grad = _value_grad(shapes, activation, bernoulli, mode)
    rng = np.random.default_rng(random_state)
    theta = np.concatenate(
        [
            rng.normal(0.0, sd, size=size)
            for a, b in shapes
            for sd, size in zip(initial_sds(a), (a * b, b))
        ]
    )
    # weight > 1: a subset of rows stands for all (MAX_ROWS); the objective
    # -w loglik + delta |theta|^2 / 2 is w times the one of precisions delta / w
    weight = 1.0
    rows = None
    if X.shape[0] > int(max_rows):
        rows = _row_subset(X.shape[0], int(max_rows), rng)
        weight = X.shape[0] / int(max_rows)
        X, y = X[rows], y[rows]
    if lazy:  # only the rows used come into memory, X's and y's in one pass: where
        # both come from one source (a DataFrame's columns) it is read once, not twice
        from pymc_bnn.dask import compute

        X, y = compute(X, y)
        # copies: a distributed cluster may hand back unaligned buffers, which
        # PyTensor's functions refuse
        X = np.array(X, dtype=np.float64, order="C", copy=True)
        y = np.array(y, dtype=np.int64, copy=True)
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"X has NaN or infinite values in row {first if rows is None else int(rows[first])}."
        )
    Y = y[:, None].astype(np.float64) if bernoulli else np.eye(k)[y]
    n_used = X.shape[0]
    delta = np.full(n_layers, 1.0 / float(prior_sigma) ** 2)
    iterations = 0
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        for _ in range(int(rounds)):
            d = delta[layer_of] / weight

            def fun(t, d=d):  # per row: L-BFGS-B's tolerances then mean the same at any n
                value, grad, _ = value_grad(t, X, Y, d)
                return float(value) / n_used, np.asarray(grad, dtype=np.float64) / n_used

            result = minimize(
                fun,
                theta,
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": int(max_iter), "ftol": MAP_FTOL},
            )
            if not np.all(np.isfinite(result.x)):
                raise FloatingPointError("the MAP fit of the evidence step diverged.")
            theta, iterations = result.x, iterations + int(result.nit)
            loglik = weight * float(value_grad(theta, X, Y, d)[2])
            eig, kinds = _ggn_blocks(
                shapes, activation, mode, theta, X, layer_of, n_layers, n_out, bernoulli
            )
            eig = [weight * lam for lam in eig]
            sq_norms = np.bincount(layer_of, weights=theta**2, minlength=n_layers)
            delta = _fixed_point(eig, sq_norms, delta)
    return EvidencePrior(
        sigmas=tuple(float(s) for s in 1.0 / np.sqrt(delta)),
        log_evidence=_log_evidence(loglik, eig, sq_norms, sizes, delta),
        curvature=tuple(kinds),
        map_iterations=iterations,
    )
