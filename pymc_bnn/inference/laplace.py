"""Linearised Laplace approximation of a network, tuned by its evidence.

``inference="laplace"`` of :class:`~pymc_bnn.BayesianMLPRegressor` and
:class:`~pymc_bnn.BayesianMLPClassifier`. MacKay's evidence framework (MacKay 1992)
with the "GLM" predictive of Immer, Korzepa & Bauer (2021, "Improving predictions of
Bayesian neural nets via local linearization"). Regression below; a classifier
(``likelihood="categorical"``) has a Bernoulli (one logit) or softmax likelihood in
place of the Normal, no noise precision, and the GGN ``sum_i J_i^T H_i J_i`` with
``H_i`` the Hessian of row ``i``'s negative log likelihood in its logits
(:func:`_class_curvature`); its predictive passes the linearised logits through the
link, draw by draw.

1. The maximum a posteriori (MAP) weights ``theta`` of ``y ~ Normal(f(x; theta), 1/beta)``
   under ``theta_l ~ Normal(0, 1/delta_l)``, one precision per layer (L-BFGS-B).
2. The generalised Gauss-Newton (GGN) curvature at the MAP, exact and whole: ``A =
   beta J^T J + diag(delta)`` with ``J`` the Jacobian of the network's output at the
   training rows (``P x P``; at most :data:`MAX_PARAMS` weights).
3. MacKay's fixed point for the prior precisions *and* the noise precision, which
   maximise the Laplace evidence: ``gamma_l = P_l - delta_l tr_l(A^-1)``,
   ``delta_l = gamma_l / |theta_l|^2``, ``beta = (n - sum gamma) / |y - f|^2``; then the MAP
   again under the new precisions (warm-started), for up to :data:`ROUNDS` rounds. The
   round whose precisions have the highest evidence *at their own MAP* is kept: once
   the MAP moves, the fixed point no longer climbs the evidence, and on noisy tables
   later rounds chased the noise (diabetes: test RMSE 101 keeping the last round, 77
   keeping the best; ``research/notes/uci_regression.md``), and the rounds stop
   once :data:`PATIENCE` in a row fall below the best.
4. The posterior ``Normal(theta, A^-1)``, and the predictive of the network *linearised*
   at the MAP, ``f(x; theta) + J(x) (theta' - theta)``, for which that Gaussian is the
   exact posterior (a Bayesian GLM): ``Normal(f(x; theta), J(x) A^-1 J(x)^T + 1/beta)``.
   The same draws pushed through the network itself ("sampled Laplace") predict far
   worse (yacht RMSE 17 against 0.4; ``research/notes/uci_regression.md``).

**Last layer only** (``fit_laplace(hidden_prior_sigmas=)``; Kristiadi, Hein & Hennig
2020, "Being Bayesian, even just a bit, fixes overconfidence in ReLU networks", and the
default of Daxberger et al. 2021, "Laplace Redux"): the hidden layers keep given prior
scales and are a point estimate at the MAP; the Gaussian, its curvature and the
evidence's rounds cover the output layer, a GLM in the last hidden layer's activations
(its curvature from those activations, :func:`last_layer_curvature`: no Jacobian of the
whole network). Its cost grows with the output layer's size, not the network's; the
network is linear in its output layer, so its draws need no linearisation. The
classifier's ADVI + Laplace mixture uses it where the whole network's curvature is too
costly (:func:`pymc_bnn.estimators._classifier.laplace_structure`).

The package keeps its draw-based predictive: :func:`laplace_draws` gives weight draws
``theta + L^-T z`` (``A = L L^T``) and the MAP they are linearised at, and
:class:`~pymc_bnn.predictive.PosteriorPredictive` evaluates ``f(x; theta) + J(x) (theta_s -
theta)`` for each draw; the mixture of the draws' Normals is the GLM predictive up to
Monte Carlo error (tested against the closed form).

Everything is in the estimator's standardised units (inputs as given, the target
standardised). Measurements against mean-field ADVI on the standard UCI splits:
``research/notes/uci_regression.md``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
import scipy.linalg as sla
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from pymc_bnn._runtime.compile_cache import compiled_function
from pymc_bnn.inference.evidence import jacobian_chunk_rows
from pymc_bnn.network._flat import (
    compile_mode,
    flat_logits,
    flatten,
    layer_index,
    n_params,
    network_jacobian,
    unflatten,
)
from pymc_bnn.network.model import initial_sds

__all__ = [
    "FIRST_LINEARIZED",
    "LINEARIZATION_GROUP",
    "LINEARIZATION_POINT",
    "LINEARIZATION_SPLITS",
    "MAX_PARAMS",
    "kept_linearisation",
    "LaplaceGaussian",
    "fit_laplace",
    "laplace_draws",
    "laplace_idata",
    "last_hidden",
    "last_layer_curvature",
    "linearised_outputs",
    "mixture_idata",
]

#: Group of a Laplace posterior's draws (``idata_``, saved files) holding the MAP
#: weights the predictive linearises the network at.
LINEARIZATION_GROUP = "linearization"
#: Attribute of :data:`LINEARIZATION_GROUP` in a mixture's draws: the index of the first
#: linearised draw (the draws before it are the network's own, e.g. ADVI's).
FIRST_LINEARIZED = "first_linearized_draw"
#: Several Laplace fits' draws (a mixture of their Gaussians, each linearised at its own
#: mode): the dimension of :data:`LINEARIZATION_GROUP` along which the modes lie, and
#: the attribute giving the draws where the second, third, ... mode's draws begin.
LINEARIZATION_POINT = "linearization_point"
LINEARIZATION_SPLITS = "linearization_splits"

#: Most weights the exact posterior precision (``P x P``, float64) is built for: 4,096
#: weights hold 128 MiB per matrix; the curvature of larger networks would need a
#: structured approximation (diagonal, Kronecker factors) this module does not make.
MAX_PARAMS = 4096
#: Most MAP / evidence rounds; they stop earlier once no precision moves by more than
#: :data:`HYPER_RTOL` (relative, log scale) between rounds, or after :data:`PATIENCE`
#: rounds below the best.
ROUNDS = 8
HYPER_RTOL = 0.01
#: Rounds stop once this many in a row have a lower evidence than the best so far: the
#: kept round is the best, and on the UCI sets the evidence, once it falls, fell on
#: (``research/notes/uci_regression.md``).
PATIENCE = 2
#: MacKay fixed-point sweeps per round (each one Cholesky factorisation).
SWEEPS = 3
#: Half the L-BFGS-B iterations of the first MAP fit, from random weights.
MAX_ITER = 2000
#: Levenberg-Marquardt steps on the exact GGN: after each later round's new precisions
#: (warm-started), and to finish the final MAP. L-BFGS-B alone stalls short of the mode
#: when the noise precision is large (smooth tables), and the Gaussian is only
#: meaningful at a mode; a Gauss-Newton step costs rows x weights^2.
ROUND_STEPS = 20
POLISH_STEPS = 20

#: Range of the precisions: prior sds within [1e-2, 1e2] (as the evidence step's
#: ``SIGMA_RANGE``), the noise sd (standardised target) within [1e-3, 10].
DELTA_RANGE = (1e-4, 1e4)
BETA_RANGE = (1e-2, 1e6)


@dataclass(frozen=True)
class LaplaceGaussian:
    """The Gaussian posterior of a linearised network, in standardised units.

    Attributes
    ----------
    theta : ndarray of shape (P,)
        The MAP weights, flat (:func:`pymc_bnn.network._flat.unflatten`).
    chol : ndarray of shape (P - first_random, P - first_random)
        Lower Cholesky factor ``L`` of the posterior precision ``A = L L^T`` of the
        weights ``theta[first_random:]``.
    noise_sd : float or None
        The noise standard deviation ``1 / sqrt(beta)`` chosen by the evidence (None
        for a classification network).
    prior_sigmas : tuple of float
        The prior standard deviation of each layer, ``1 / sqrt(delta_l)``.
    log_evidence : float
        Laplace approximation of the log marginal likelihood at the final precisions.
    effective_parameters : tuple of float
        ``gamma_l``, the well-determined parameters of each layer (NaN for a layer the
        Gaussian does not cover).
    first_random : int
        Index of the first weight the Gaussian covers: 0 (all of them), or the output
        layer's first weight for a last-layer fit (:func:`fit_laplace`
        ``hidden_prior_sigmas``), whose hidden weights are a point estimate at
        ``theta``. The network's outputs are linear in its output layer, so the draws
        of a last-layer fit need no linearisation: the network itself is exact.
    """

    theta: np.ndarray
    chol: np.ndarray
    noise_sd: float | None
    prior_sigmas: tuple
    log_evidence: float
    effective_parameters: tuple
    first_random: int = 0

    @property
    def last_layer(self) -> bool:
        """Whether the Gaussian covers the output layer only."""
        return self.first_random > 0


@functools.lru_cache(maxsize=16)
def _value_grad(layer_shapes: tuple, activation: str, mode: str, classify: bool = False):
    """``f(theta, X, y, beta, delta) -> (objective, gradient, data term)``, the negative
    log joint up to constants: regression ``beta/2 |y - f|^2 + 1/2 sum delta theta^2``
    (the data term: the residual sum of squares); classification (``classify``, ``y``
    one-hot (n, k), or (n, 1) of 0/1 for one logit) ``beta * nll + 1/2 sum delta
    theta^2`` (the data term: the negative log likelihood ``nll``; ``beta`` is 1)."""
    theta = pt.tensor("theta", dtype="float64", shape=(n_params(layer_shapes),))
    X = pt.matrix("X", dtype="float64")
    beta = pt.scalar("beta", dtype="float64")
    delta = pt.vector("delta", dtype="float64")
    logits = flat_logits(theta, X, layer_shapes, activation)
    if classify:
        y = pt.matrix("y", dtype="float64")
        if layer_shapes[-1][1] == 1:  # Bernoulli on one logit
            data = (pt.softplus(logits) - y * logits).sum()
        else:
            data = -(y * pt.special.log_softmax(logits, axis=1)).sum()
        objective = beta * data + 0.5 * (delta * theta**2).sum()
        key = ("_laplace_value_grad_classify", layer_shapes, activation)
    else:
        y = pt.vector("y", dtype="float64")
        data = ((y - logits[:, 0]) ** 2).sum()
        objective = 0.5 * beta * data + 0.5 * (delta * theta**2).sum()
        key = ("_laplace_value_grad", layer_shapes, activation)
    return compiled_function(
        key, [theta, X, y, beta, delta], [objective, pt.grad(objective, theta), data], mode=mode
    )


def _output_jacobians(layer_shapes, activation, mode, theta, X, rows=None):
    """``(start, outputs (rows, k), Jacobian (rows, k, P))`` per chunk of the rows of
    ``X`` (the compiled function's rows are a power of two; ``rows`` caps a chunk)."""
    n, P = X.shape[0], theta.size
    step = jacobian_chunk_rows(n, layer_shapes)
    f = network_jacobian(layer_shapes, activation, step, mode)
    for start in range(0, n, step):
        rows = min(step, n - start)
        chunk = X[start : start + rows]
        if rows < step:
            chunk = np.concatenate([chunk, np.zeros((step - rows, X.shape[1]))])
        logits, jac = f(theta, chunk)
        yield (start, np.asarray(logits)[:rows], np.asarray(jac).reshape(step, -1, P)[:rows])


def _jacobian_rows(layer_shapes, activation, mode, theta, X) -> tuple[np.ndarray, np.ndarray]:
    """The network's first output (n,) and its Jacobian (n, P) at the rows of ``X``."""
    n, P = X.shape[0], theta.size
    out, J = np.empty(n), np.empty((n, P))
    for start, logits, jac in _output_jacobians(layer_shapes, activation, mode, theta, X):
        out[start : start + len(logits)] = logits[:, 0]
        J[start : start + len(logits)] = jac[:, 0]
    return out, J


def _class_curvature(layer_shapes, activation, mode, theta, X, Y):
    """Classification at ``theta``: ``(G, g)``, the lower triangle of the generalised
    Gauss-Newton matrix ``sum_i J_i^T H_i J_i`` (``H_i`` the Hessian of row ``i``'s
    negative log likelihood in its logits: ``p (1 - p)`` for one logit, ``diag(p) - p
    p^T`` for a softmax) and the likelihood's gradient ``sum_i J_i^T (p_i - y_i)``."""
    return _class_curvature_of(
        _output_jacobians(layer_shapes, activation, mode, theta, X), Y, theta.size
    )


def _class_curvature_of(chunks, Y, P):
    """:func:`_class_curvature` from ``(start, logits, Jacobian)`` chunks of rows (of
    ``P`` weights): memory stays (rows x k x P) per chunk. ``H = M^T M`` with ``M =
    diag(sqrt p) - sqrt(p) p^T`` (as ``sum p = 1``), so each chunk adds ``(M J)^T (M J)``
    by a symmetric rank-k update."""
    G, g = np.zeros((P, P), order="F"), np.zeros(P)
    for start, z, J in chunks:
        y = Y[start : start + len(z)]
        if z.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-z))
            weighted = J[:, 0] * np.sqrt(p * (1.0 - p))
            g += J[:, 0].T @ (p[:, 0] - y[:, 0])
        else:
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            root = np.sqrt(p)
            MJ = root[:, :, None] * J - root[:, :, None] * np.einsum("nl,nlp->np", p, J)[:, None]
            weighted = MJ.reshape(-1, P)
            g += np.einsum("nkp,nk->p", J, p - y)
        G = sla.blas.dsyrk(1.0, weighted, beta=1.0, c=G, trans=1, lower=1, overwrite_c=1)
    return G, g


@functools.lru_cache(maxsize=16)
def _features(layer_shapes: tuple, activation: str, mode: str):
    """``f(theta_hidden, X) -> [h]``: the last hidden layer's activations, ``theta_hidden``
    the weights of every layer but the output layer (flat, as ``theta``'s head)."""
    from pymc_bnn.network.model import ACTIVATIONS

    hidden = layer_shapes[:-1]
    theta = pt.tensor("theta", dtype="float64", shape=(n_params(hidden),))
    X = pt.matrix("X", dtype="float64")
    h = ACTIVATIONS[activation](flat_logits(theta, X, hidden, activation))
    return compiled_function(
        ("_laplace_features", layer_shapes, activation), [theta, X], [h], mode=mode
    )


def last_hidden(layer_shapes, activation: str, mode: str, theta, X) -> np.ndarray:
    """The last hidden layer's activations at the rows of ``X`` (the inputs themselves
    for a network without hidden layers), (n_rows, H), for weights ``theta`` (flat:
    every layer's, or all but the output layer's)."""
    layer_shapes = tuple(layer_shapes)
    if len(layer_shapes) == 1:
        return np.asarray(X, dtype=np.float64)
    head = n_params(layer_shapes[:-1])
    return np.asarray(_features(layer_shapes, activation, mode)(theta[:head], X)[0])


def last_layer_curvature(layer_shapes, activation, mode, theta, X, Y, classify):
    """``(G, g)`` of the output layer's weights only (``theta``'s tail: ``W`` flattened
    row by row, then ``b``), as :func:`_class_curvature` (or, regression, ``J^T J`` and
    ``-J^T (y - f)``) over those weights. With ``h~`` the last hidden layer's
    activations and a 1 appended (the bias), weight ``j k + c`` (``W[j, c]``, or ``b[c]``
    for ``j = H``) has ``d z_c / d theta = h~_j`` and no other output moves with it, so
    ``G[j k + c, j' k + c'] = sum_i h~_ij h~_ij' H_i[c, c']``: ``rows x k^2 x (H + 1)^2``
    multiplications, not the ``rows x k^3 x (H + 1)^2`` of a dense Jacobian's."""
    H, k = layer_shapes[-1]
    first = theta.size - (H * k + k)
    h = last_hidden(layer_shapes, activation, mode, theta, X)
    phi = np.column_stack([h, np.ones(len(h))])
    z = phi @ theta[first:].reshape(H + 1, k)
    if not classify:
        return phi.T @ phi, -(phi.T @ (Y - z[:, 0])).ravel()
    if k == 1:
        p = 1.0 / (1.0 + np.exp(-z))
        hess = (p * (1.0 - p))[:, :, None]
    else:
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        hess = p[:, :, None] * np.eye(k) - p[:, :, None] * p[:, None, :]
    g = (phi.T @ (p - Y)).ravel()
    G = np.zeros((H + 1, k, k, H + 1))
    step = max(1, (32 * 2**20) // (8 * (H + 1) * k * k))
    for start in range(0, len(phi), step):
        rows = phi[start : start + step]
        weighted = rows[:, :, None] * hess[start : start + step].reshape(len(rows), 1, k * k)
        G += np.tensordot(weighted, rows, axes=([0], [0])).reshape(H + 1, k, k, H + 1)
    # (j, c, c', j') -> (j, c, j', c')
    return np.ascontiguousarray(G.transpose(0, 1, 3, 2)).reshape((H + 1) * k, (H + 1) * k), g


def _gram(J) -> np.ndarray:
    """The lower triangle of ``J^T J`` (the upper is left zero) by a symmetric rank-k
    update: half the multiplications of ``J.T @ J``. Every use factors it by Cholesky
    with ``lower=True``, which reads the lower triangle only."""
    return sla.blas.dsyrk(1.0, J, trans=1, lower=1)


def _precision_chol(G, beta, delta_vec) -> np.ndarray:
    A = beta * G
    A[np.diag_indices_from(A)] += delta_vec
    return sla.cholesky(A, lower=True, check_finite=False)


def _diag_inverse(L) -> np.ndarray:
    """``diag(A^-1)`` from ``A = L L^T``: the column sums of ``(L^-1)**2``."""
    Linv = sla.solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False)
    return np.einsum("ij,ij->j", Linv, Linv)


def _log_evidence(L, data, sq_norms, n, beta, delta, sizes, classify=False) -> float:
    """The Laplace evidence; ``data`` is the residual sum of squares (regression) or the
    negative log likelihood (classification) at the MAP."""
    logdet = 2.0 * np.sum(np.log(np.diag(L)))
    loglik = (
        -data
        if classify
        else -0.5 * beta * data + 0.5 * n * math.log(beta) - 0.5 * n * math.log(2 * math.pi)
    )
    return float(
        loglik - 0.5 * np.dot(delta, sq_norms) + 0.5 * np.dot(sizes, np.log(delta)) - 0.5 * logdet
    )


def _mackay(G, ssr, sq_norms, layer_of, sizes, n, beta, delta, classify=False):
    """:data:`SWEEPS` fixed-point sweeps of (beta, delta) at a fixed MAP and GGN
    (classification: delta only, ``beta`` stays 1)."""
    for _ in range(SWEEPS):
        L = _precision_chol(G, beta, delta[layer_of])
        trace = np.bincount(layer_of, weights=_diag_inverse(L), minlength=len(sizes))
        gamma = np.clip(sizes - delta * trace, 0.0, sizes)
        delta = np.clip(gamma / np.maximum(sq_norms, 1e-300), *DELTA_RANGE)
        if not classify:
            beta = float(np.clip(max(n - gamma.sum(), 1.0) / max(ssr, 1e-300), *BETA_RANGE))
    return beta, delta


def _lm_polish(value_grad, curvature, theta, X, y, beta, delta_vec, steps):
    """Levenberg-Marquardt steps on the exact GGN of the MAP objective (each accepted
    only if it lowers the objective); ``curvature(theta) -> (G, g)``, the GGN's lower
    triangle and the gradient of the data term (both without ``beta``). Returns
    ``(theta, steps taken)``."""
    loss = float(value_grad(theta, X, y, beta, delta_vec)[0])
    damping, taken = 1e-6, 0
    for _ in range(steps):
        G, g_data = curvature(theta)
        g = beta * g_data + delta_vec * theta
        A = beta * G
        A[np.diag_indices_from(A)] += delta_vec
        scale = np.diag(A).copy()
        while True:
            M = A.copy()
            M[np.diag_indices_from(M)] += damping * scale
            new = theta - sla.cho_solve(
                sla.cho_factor(M, lower=True, check_finite=False), g, check_finite=False
            )
            new_loss = float(value_grad(new, X, y, beta, delta_vec)[0])
            if new_loss <= loss:
                damping = max(damping / 10, 1e-12)
                break
            damping *= 10
            if damping > 1e8:
                return theta, taken
        theta, decrease, loss = new, loss - new_loss, new_loss
        taken += 1
        if decrease <= 1e-12 * max(1.0, abs(loss)):
            break
    return theta, taken


def fit_laplace(
    X: np.ndarray,
    y: np.ndarray,
    *,
    layer_shapes,
    activation: str = "tanh",
    random_state: int | None = None,
    likelihood: str = "normal",
    start: LaplaceGaussian | None = None,
    hidden_prior_sigmas=None,
) -> tuple[LaplaceGaussian, dict]:
    """Fit the evidence-tuned linearised Laplace approximation (see the module).

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
    y : array of shape (n_rows,)
        The standardised target, or (``likelihood="categorical"``) the class codes
        ``0 .. k - 1``.
    layer_shapes : sequence of (fan_in, fan_out)
        The network's layers: one output for regression and two classes (Bernoulli on
        one logit), one per class for more (softmax).
    activation : str
    random_state : int, optional
        Seeds the starting weights of the first MAP fit.
    likelihood : {"normal", "categorical"}
        Regression (the noise precision chosen by the evidence too) or classification.
    start : LaplaceGaussian, optional
        A posterior of the same network on other rows (e.g. all of them, for a fit on
        a fold): its precisions are kept, not chosen again, and the MAP is found from
        its weights by :data:`POLISH_STEPS` Gauss-Newton steps (no rounds, no random
        start): a fraction of a full fit's cost. A last-layer ``start`` gives a
        last-layer fit (its hidden weights refit by L-BFGS-B first).
    hidden_prior_sigmas : sequence of float, optional
        A **last-layer** fit (Kristiadi, Hein & Hennig 2020; the default of Daxberger et
        al. 2021, "Laplace Redux"): the hidden layers keep these prior scales (one per
        hidden layer, e.g. chosen by :func:`pymc_bnn.inference.evidence.evidence_prior_scales`)
        and are a point estimate at the MAP; the Gaussian, its curvature and the
        evidence's rounds cover the output layer only (``H k + k`` weights: the rounds
        move it alone, the hidden activations held, then the whole MAP is found once
        more under the kept precisions), so its cost does not grow with the square of
        the network's size, and no size limit applies to the hidden layers. Ignored
        for a network without hidden layers (its output layer is all of it). Default:
        the whole network (at most :data:`MAX_PARAMS` weights).

    Returns
    -------
    (LaplaceGaussian, dict)
        The posterior (of the round of the highest evidence) and its diagnostics
        (``map_iterations``, ``polish_steps``, ``rounds``, ``gradient_norm``: of the
        kept MAP objective per row, ``loss``: each round's negative log evidence at
        its own MAP).
    """
    shapes = tuple((int(a), int(b)) for a, b in layer_shapes)
    P = n_params(shapes)
    last = len(shapes) > 1 and (
        hidden_prior_sigmas is not None or (start is not None and start.last_layer)
    )
    first = P - n_params(shapes[-1:]) if last else 0
    if P - first > MAX_PARAMS:
        raise ValueError(
            f"inference='laplace' builds the exact {P - first} x {P - first} posterior "
            f"precision; it supports {'an output layer' if last else 'networks'} of at "
            f"most {MAX_PARAMS} weights and biases. Use fewer hidden units, or "
            "inference='advi'."
        )
    X = np.ascontiguousarray(X, dtype=np.float64)
    classify = likelihood == "categorical"
    n = X.shape[0]
    if classify:  # one-hot targets, or the 0/1 column of one logit
        codes = np.asarray(y, dtype=np.int64)
        k = shapes[-1][1]
        y = codes[:, None].astype(np.float64) if k == 1 else np.eye(k)[codes]
    else:
        y = np.ascontiguousarray(y, dtype=np.float64)
    mode = compile_mode()
    value_grad = (
        _value_grad(shapes, activation, mode, True)
        if classify
        else _value_grad(shapes, activation, mode)
    )
    layer_of = layer_index(shapes)
    sizes = np.bincount(layer_of).astype(np.float64)
    rng = np.random.default_rng(random_state)
    theta = np.concatenate(
        [
            rng.normal(0.0, sd, size=size)
            for a, b in shapes
            for sd, size in zip(initial_sds(a), (a * b, b))
        ]
    )
    beta, delta = 1.0, np.ones(len(shapes))
    if last and hidden_prior_sigmas is not None:
        hidden = np.asarray(hidden_prior_sigmas, dtype=np.float64).ravel()
        if hidden.shape != (len(shapes) - 1,) or not np.all(np.isfinite(hidden) & (hidden > 0)):
            raise ValueError(
                f"hidden_prior_sigmas must be {len(shapes) - 1} positive "
                f"numbers, one per hidden layer; got {hidden_prior_sigmas!r}."
            )
        delta[:-1] = 1.0 / hidden**2
    if start is not None:
        theta = np.array(start.theta, dtype=np.float64)
        if theta.shape != (P,):
            raise ValueError(f"start has {theta.size} weights; this network has {P}.")
        delta = 1.0 / np.square(np.asarray(start.prior_sigmas, dtype=np.float64))
        beta = 1.0 if start.noise_sd is None else 1.0 / start.noise_sd**2
    # the layers the Gaussian covers: the whole network, or the output layer
    rounds_of = layer_of[first:] - layer_of[first]
    covered = slice(len(shapes) - 1, None) if last else slice(None)
    iterations, losses, polished = 0, [], 0

    def curvature(t):
        """``(G, g)`` over the covered weights: the GGN's lower triangle and the data
        term's gradient (``t``: all the weights)."""
        if last:
            return last_layer_curvature(shapes, activation, mode, t, X, y, classify)
        if classify:
            return _class_curvature(shapes, activation, mode, t, X, y)
        f, J = _jacobian_rows(shapes, activation, mode, t, X)
        return _gram(J), -(J.T @ (y - f))

    def map_fit(theta, max_iter):
        d = delta[layer_of]

        def fun(t):  # per row: the tolerances mean the same at any n
            value, grad, _ = value_grad(t, X, y, beta, d)
            return float(value) / n, np.asarray(grad, dtype=np.float64) / n

        result = minimize(
            fun,
            theta,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": 1e-12, "gtol": 1e-9},
        )
        if not np.all(np.isfinite(result.x)):
            raise FloatingPointError("the MAP fit of the Laplace approximation diverged.")
        return result.x, int(result.nit)

    def polish(theta, steps):
        """Gauss-Newton steps on the covered weights (the rest held): ``(theta, steps
        taken)``. The output layer of a last-layer fit is a GLM in the hidden layer's
        activations: its MAP is convex given them."""
        head = theta[:first]  # empty for a whole-network fit

        def value(t, X, y, beta, _):  # the objective of all weights, the head held
            return value_grad(np.concatenate([head, t]), X, y, beta, delta[layer_of])

        out, taken = _lm_polish(
            value,
            lambda t: curvature(np.concatenate([head, t])),
            theta[first:],
            X,
            y,
            beta,
            delta[layer_of][first:],
            steps,
        )
        return np.concatenate([head, out]), taken

    with threadpool_limits(limits=1, user_api="blas"):
        best = None

        def state(theta):
            """The posterior at ``theta`` under the current precisions, and the Laplace
            evidence of those precisions there (of the covered weights' Gaussian; a
            last-layer fit's hidden weights count by their prior density only)."""
            if classify or last:  # the data term: the nll, or the residual sum of squares
                G, _ = curvature(theta)
                ssr = float(value_grad(theta, X, y, beta, delta[layer_of])[2])
            else:
                f, J = _jacobian_rows(shapes, activation, mode, theta, X)
                G = _gram(J)
                ssr = float(np.sum((y - f) ** 2))
            sq_norms = np.bincount(layer_of, weights=theta**2, minlength=len(shapes))
            L = _precision_chol(G, beta, delta[layer_of][first:])
            return {
                "theta": theta,
                "beta": beta,
                "delta": delta,
                "G": G,
                "ssr": ssr,
                "sq_norms": sq_norms,
                "L": L,
                "log_evidence": _log_evidence(L, ssr, sq_norms, n, beta, delta, sizes, classify),
            }

        if start is not None:  # the precisions given: the MAP from the start's weights
            if last:  # the hidden weights too: by L-BFGS-B (no curvature of theirs)
                theta, nit = map_fit(theta, MAX_ITER)
                iterations += nit
            theta, polished = polish(theta, POLISH_STEPS)
            best = state(theta)
            losses.append(-best["log_evidence"])
        for r in range(0 if start is not None else ROUNDS + 1):
            if r == 0:
                theta, nit = map_fit(theta, 2 * MAX_ITER)
                iterations += nit
            # a last-layer fit's rounds move its output layer only (the evidence of its
            # prior given the hidden activations, a GLM's); warm: Gauss-Newton steps
            # converge where L-BFGS-B creeps
            if r > 0 or last:
                theta, nit = polish(theta, ROUND_STEPS if r < ROUNDS else POLISH_STEPS)
                polished += nit
            # each round's precisions at their own MAP: their evidence is comparable
            current = state(theta)
            losses.append(-current["log_evidence"])
            if best is None or current["log_evidence"] > best["log_evidence"]:
                best, worse = current, 0
            else:
                worse += 1
            if r == ROUNDS or (PATIENCE and worse >= PATIENCE):
                break
            new_beta, new_delta = _mackay(
                current["G"],
                current["ssr"],
                current["sq_norms"][covered],
                rounds_of,
                sizes[covered],
                n,
                beta,
                delta[covered],
                classify,
            )
            new_delta = np.concatenate([delta[: len(delta) - len(new_delta)], new_delta])
            change = max(
                abs(math.log(new_beta / beta)), float(np.max(np.abs(np.log(new_delta / delta))))
            )
            beta, delta = new_beta, new_delta
            if change < HYPER_RTOL:  # settled: one more round polishes the MAP
                theta, nit = polish(theta, POLISH_STEPS)
                polished += nit
                current = state(theta)
                losses.append(-current["log_evidence"])
                if current["log_evidence"] > best["log_evidence"]:
                    best = current
                break
        if last and start is None:  # the whole MAP under the kept precisions, once
            beta, delta = best["beta"], best["delta"]
            theta, nit = map_fit(best["theta"], MAX_ITER)
            iterations += nit
            theta, nit = polish(theta, POLISH_STEPS)
            polished += nit
            best = state(theta)
            losses.append(-best["log_evidence"])
        theta, beta, delta, L = best["theta"], best["beta"], best["delta"], best["L"]
        gamma = np.full(len(shapes), np.nan)
        gamma[covered] = sizes[covered] - delta[covered] * np.bincount(
            rounds_of, weights=_diag_inverse(L), minlength=len(sizes[covered])
        )
        log_evidence = best["log_evidence"]
        grad = np.asarray(value_grad(theta, X, y, beta, delta[layer_of])[1]) / n
    gaussian = LaplaceGaussian(
        theta=theta,
        chol=L,
        noise_sd=None if classify else float(1.0 / math.sqrt(beta)),
        prior_sigmas=tuple(float(s) for s in 1.0 / np.sqrt(delta)),
        log_evidence=log_evidence,
        effective_parameters=tuple(float(g) for g in gamma),
        first_random=first,
    )
    info = {
        "map_iterations": iterations,
        "polish_steps": polished,
        "rounds": len(losses),
        "gradient_norm": float(np.linalg.norm(grad)),
        "loss": np.array(losses),
    }
    return gaussian, info


def laplace_draws(
    gaussian: LaplaceGaussian, layer_shapes, n_draws: int, random_seed, temperature: float = 1.0
) -> dict[str, np.ndarray]:
    """Weight draws ``theta + sqrt(T) L^-T z`` (``z`` standard Normal, seeded) as
    ``{"w0": (n_draws, fan_in, fan_out), "b0": ..., "sigma": (n_draws,)}``: the
    tempered posterior ``Normal(theta, T A^-1)``, and a regression network's noise sd
    (a point estimate, the same in every draw)."""
    rng = np.random.default_rng(random_seed)
    first = gaussian.first_random
    z = rng.standard_normal((gaussian.theta.size - first, int(n_draws)))
    step = sla.solve_triangular(gaussian.chol, z, lower=True, trans="T", check_finite=False)
    flat = np.repeat(gaussian.theta[None, :], int(n_draws), axis=0)
    flat[:, first:] += math.sqrt(float(temperature)) * step.T
    out = {}
    for i, (W, b) in enumerate(unflatten(flat, layer_shapes)):
        out[f"w{i}"], out[f"b{i}"] = np.ascontiguousarray(W), np.ascontiguousarray(b)
    if gaussian.noise_sd is not None:
        out["sigma"] = np.full(int(n_draws), gaussian.noise_sd)
    return out


def linearised_outputs(
    layer_shapes, activation: str, theta: np.ndarray, X: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """``f(x; theta) + J(x) offset_s`` at the rows of ``X`` for every row ``offset_s``
    of ``offsets`` (n_draws, P): the outputs of the network linearised at ``theta``,
    shape (n_draws, n_rows, n_outputs)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty((offsets.shape[0], X.shape[0], int(layer_shapes[-1][1])))
    for start, f, J in _output_jacobians(tuple(layer_shapes), activation, compile_mode(), theta, X):
        rows, k, P = J.shape
        out[:, start : start + rows] = f[None] + (offsets @ J.reshape(rows * k, P).T).reshape(
            -1, rows, k
        )
    return out


def laplace_idata(
    gaussian: LaplaceGaussian, layer_shapes, n_draws: int, random_seed, temperature: float = 1.0
):
    """:func:`laplace_draws` as an ArviZ DataTree: a ``posterior`` group (one chain) and
    the :data:`LINEARIZATION_GROUP` group with the MAP weights. A last-layer Gaussian's
    draws have no such group: the network is linear in its output layer, so the
    network itself is its linearisation, and its draws are plain network draws."""
    import xarray as xr

    draws = laplace_draws(gaussian, layer_shapes, n_draws, random_seed, temperature)

    def variable(name, values, lead):
        return (lead + tuple(f"{name}_dim_{i}" for i in range(values.ndim - len(lead))), values)

    posterior = xr.Dataset(
        {name: variable(name, values[None], ("chain", "draw")) for name, values in draws.items()},
        coords={"chain": [0], "draw": np.arange(int(n_draws))},
    )
    if gaussian.last_layer:
        return xr.DataTree.from_dict({"/posterior": posterior})
    point = {}
    for i, (W, b) in enumerate(unflatten(gaussian.theta, layer_shapes)):
        point[f"w{i}"], point[f"b{i}"] = variable(f"w{i}", W, ()), variable(f"b{i}", b, ())
    return xr.DataTree.from_dict(
        {"/posterior": posterior, f"/{LINEARIZATION_GROUP}": xr.Dataset(point)}
    )


def mixture_idata(network, linearised, weight_names):
    """One DataTree of a mixture's draws (each part's share is its number of draws):
    the ``posterior`` group holds the network draws of ``network`` (e.g. ADVI's; None:
    no such draws) then the linearised draws of ``linearised`` (:func:`laplace_idata`;
    a list: several Laplace fits', one after the other) along ``draw``, in one chain,
    and the :data:`LINEARIZATION_GROUP` group the linearisation point, with the index
    of the first linearised draw in its :data:`FIRST_LINEARIZED` attribute (several
    fits: their modes along :data:`LINEARIZATION_POINT`, and where each mode's draws
    after the first begin in :data:`LINEARIZATION_SPLITS`; no such group where the
    fits have none: a last-layer fit's draws are the network's own). Only the weights
    and biases (``weight_names``: pairs) are kept, and a regression network's noise sd
    (``sigma``, where every part has it): the predictive needs nothing else."""
    import xarray as xr

    linearised = list(linearised) if isinstance(linearised, (list, tuple)) else [linearised]
    parts = ([] if network is None else [network]) + linearised
    names = [name for pair in weight_names for name in pair]
    if all("sigma" in tree.posterior for tree in parts):
        names.append("sigma")

    def one_chain(tree):
        post = tree.posterior.to_dataset()[names]
        stacked = post.stack(sample=("chain", "draw")).transpose("sample", ...)
        return stacked.drop_vars(["sample", "chain", "draw"]).rename(sample="draw")

    chains = [one_chain(tree) for tree in parts]
    both = xr.concat(chains, dim="draw").expand_dims("chain")
    both = both.assign_coords(chain=[0], draw=np.arange(both.sizes["draw"]))
    with_point = [LINEARIZATION_GROUP in tree.children for tree in linearised]
    if not any(with_point):  # last-layer fits': plain draws
        return xr.DataTree.from_dict({"/posterior": both})
    if not all(with_point):
        raise ValueError("a mixture's Laplace fits are either all linearised or none.")
    firsts = np.cumsum([c.sizes["draw"] for c in chains])[:-1].tolist()
    first = 0 if network is None else int(chains[0].sizes["draw"])
    points = [tree[LINEARIZATION_GROUP].to_dataset() for tree in linearised]
    if len(points) == 1:
        point = points[0]
    else:
        point = xr.concat(points, dim=LINEARIZATION_POINT)
        splits = firsts[len(firsts) - len(points) + 1 :]
        point.attrs[LINEARIZATION_SPLITS] = [int(v) for v in splits]
    point.attrs[FIRST_LINEARIZED] = first
    return xr.DataTree.from_dict({"/posterior": both, f"/{LINEARIZATION_GROUP}": point})


def kept_linearisation(point, weight_names, kept):
    """The linearisation of stored draws of which ``kept`` (indices into the (chain,
    draw) stack, increasing) are kept: ``(linearized_at, linearized_from, splits)`` for
    :class:`pymc_bnn.predictive.PosteriorPredictive`. ``point``: the draws'
    :data:`LINEARIZATION_GROUP` (None: nothing linearised: ``(None, 0, ())``); a mode
    none of whose draws are kept is dropped, one mode left is a flat point."""
    if point is None:
        return None, 0, ()
    # (n_points, n_params): several fits' modes along LINEARIZATION_POINT
    points = np.atleast_2d(flatten([(point[w].values, point[b].values) for w, b in weight_names]))
    # the draws from FIRST_LINEARIZED on are linearised, those from each split on at
    # the next mode
    starts = [
        int(point.attrs.get(FIRST_LINEARIZED, 0)),
        *(int(v) for v in np.atleast_1d(point.attrs.get(LINEARIZATION_SPLITS, []))),
    ]
    firsts = [int(np.sum(kept < start)) for start in starts]  # among the kept draws
    ends = [*firsts[1:], kept.size]
    keep = [i for i, (a, b) in enumerate(zip(firsts, ends)) if b > a]
    if not keep:  # none of the linearised draws kept
        return None, 0, ()
    first, *splits = (firsts[i] for i in keep)
    return (points[keep[0]] if len(keep) == 1 else points[keep]), first, tuple(splits)
