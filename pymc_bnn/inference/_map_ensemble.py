"""MAP fits of several networks at once, and a last-layer Laplace approximation of each.

``inference="laplace_ensemble"``, the classifier's default: a mixture of Laplace
approximations (Eschenhagen et al. 2021, "Mixtures of Laplace approximations for
improved post-hoc uncertainty in deep learning"), each part as in Daxberger et al. 2021
("Laplace Redux"). :func:`pymc_bnn.policy._ensemble.fit_laplace_ensemble` runs the steps:

1. :func:`fit_map_ensemble`: ``n_members`` networks, each from starting weights of its
   own, trained to their maximum a posteriori (MAP) weights under the Normal prior by
   minibatch Adam with scikit-learn's ``MLPClassifier`` stopping rule (the training
   objective, averaged over an epoch, has not improved by :data:`TOL` for
   :data:`N_ITER_NO_CHANGE` epochs). All members train in one compiled program: a scan
   over the minibatch steps, the members on the same rows each step, the first layer
   one matrix product with the members' weights side by side. A member that has
   stopped is frozen while the others go on, so each member's weights are those it
   would reach alone (tested).
2. Each member holds out a block of the rows (:func:`holdout_masks`; disjoint blocks);
   :func:`last_layer_laplace` gives each member the Gaussian posterior of its output
   layer around its MAP (the network is linear in it: its draws need no
   linearisation), with the generalised Gauss-Newton curvature and one prior precision
   chosen by the Laplace evidence (MacKay's fixed point), the hidden layers a point
   estimate. Its cost grows with the output layer, not the network: at 784-100-10 a
   1,010-weight Gaussian per member.
3. :func:`pymc_bnn.policy._ensemble.heldout_temperature`: the scale of those Gaussians'
   covariances (0: the MAP ensemble itself) that predicts the held-out rows best, by the
   one-standard-error rule; the Gaussian as fitted was too wide on clean tables, and helped
   on MNIST's rotated digits at a fraction of its spread (``research/notes/laplace-ensemble.md``).
4. The members train on, from where they stopped, on all the rows (the held-out ones
   back in), and their Gaussians are found again there.

The predictive is the equal mixture of the members' Gaussians at that temperature:
plain network draws (:func:`pymc_bnn.inference.laplace.laplace_idata`) through the package's one
compiled predictive.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt

from pymc_bnn._runtime.compile_cache import compiled_function
from pymc_bnn.network._flat import n_params

__all__ = [
    "BATCH_SIZE",
    "DTYPE",
    "EPOCHS_PER_CALL",
    "HOLDOUT_FRACTION",
    "LEARNING_RATE",
    "MAX_EPOCHS",
    "MIN_CHECK_STEPS",
    "MIN_HOLDOUT",
    "N_ITER_NO_CHANGE",
    "TOL",
    "VALIDATION_PATIENCE",
    "MapEnsemble",
    "fit_map_ensemble",
    "holdout_masks",
    "last_layer_laplace",
    "last_layer_regression",
    "member_logit_draws",
    "member_normal_moments",
    "member_seeds",
]

#: Rows per Adam step, capped at the rows: scikit-learn's ``MLPClassifier`` default.
BATCH_SIZE = 200
#: Adam's step size: twice scikit-learn's ``MLPClassifier`` default (the MAP fits'
#: prior keeps the steps stable; on MNIST they stop in ~2/3 of the epochs, as good on
#: held-out rows: ``research/notes/laplace-ensemble.md``).
LEARNING_RATE = 2e-3
#: The stopping rule: scikit-learn's ``tol`` and ``n_iter_no_change``.
TOL = 1e-4
N_ITER_NO_CHANGE = 10
#: Most epochs: the small-table anchors' ``max_iter`` (``benchmarks/default_frontier.py``);
#: a member that reaches it has not met the stopping rule (the estimator warns).
MAX_EPOCHS = 2000
#: Fewest Adam steps between two checks of the stopping rule: on a small table an epoch
#: is one to three steps, and ten epochs without progress were a plateau the fit would
#: have left (two-moons members stopped at 0.85 accuracy); a check then spans several
#: epochs, its tolerance :data:`TOL` per epoch times their number (the same rate of
#: progress). MNIST's 4,000 rows take 20 steps an epoch, so its rule is scikit-learn's.
MIN_CHECK_STEPS = 20
#: Epochs run per call of the compiled program (the stopping rule is applied inside it,
#: epoch by epoch, so this only sets how often control returns to Python).
EPOCHS_PER_CALL = 10
#: The training program's precision: single, as the compiled predictive's (twice the
#: matrix products per second of double on a CPU); the Laplace step works in double.
DTYPE = "float32"
#: Each member holds out a block of this fraction of the rows (disjoint blocks): their
#: predictions there choose the Laplace approximations' temperature
#: (:func:`pymc_bnn.policy._ensemble.heldout_temperature`) at no extra fit; none below
#: :data:`MIN_HOLDOUT` rows a block.
HOLDOUT_FRACTION = 0.1
MIN_HOLDOUT = 5
#: Regression: calls of the training program (about :data:`EPOCHS_PER_CALL` epochs
#: each) without a fall in a member's held-out squared error before it stops: about 50
#: epochs, patient enough for Adam's noisy steps (:class:`_HeldOutWatch`).
VALIDATION_PATIENCE = 5
#: Adam's moment decay rates and the denominator's offset (Kingma & Ba; scikit-learn's).
ADAM = (0.9, 0.999, 1e-8)


@dataclass(frozen=True)
class MapEnsemble:
    """The MAP weights of every member (see the module).

    Attributes
    ----------
    thetas : ndarray of shape (n_members, n_params)
        Each member's weights, flat (:func:`pymc_bnn.network._flat.unflatten`).
    loss_curve : ndarray of shape (n_checks, n_members)
        Each member's training objective per row (negative log likelihood plus the
        prior's penalty over the rows), averaged over the steps between two checks of
        the stopping rule (an epoch, or several on a small table:
        :data:`MIN_CHECK_STEPS`), up to the check it stopped at (NaN after).
    n_epochs : ndarray of shape (n_members,)
        The epochs each member trained.
    converged : ndarray of shape (n_members,)
        Whether each member met the stopping rule (else it ran :data:`MAX_EPOCHS`).
    noise_sd : ndarray of shape (n_members,) or None
        A regression network's noise sd at each member's MAP (fitted with the weights);
        None for a classifier.
    """

    thetas: np.ndarray
    loss_curve: np.ndarray
    n_epochs: np.ndarray
    converged: np.ndarray
    noise_sd: np.ndarray | None = None


def member_seeds(seed: int, n_members: int) -> list[int]:
    """One starting-weights seed per member, from ``seed`` (NumPy's seed sequence)."""
    children = np.random.SeedSequence(int(seed)).spawn(int(n_members))
    return [int(c.generate_state(1)[0] >> 1) for c in children]


def initial_theta(layer_shapes, seed: int) -> np.ndarray:
    """Random starting weights of one member: the model's starting scales
    (:func:`pymc_bnn.network.model.initial_sds`), flat."""
    from pymc_bnn.network.model import initial_sds

    rng = np.random.default_rng(seed)
    parts = []
    for fan_in, fan_out in layer_shapes:
        w_sd, b_sd = initial_sds(fan_in)
        parts += [rng.normal(0.0, w_sd, fan_in * fan_out), rng.normal(0.0, b_sd, fan_out)]
    return np.concatenate(parts)


def _stacked_weights(theta, layer_shapes):
    """``[(W (K, a, b), b (K, b)), ...]`` of a symbolic ``theta`` of shape (K, P)."""
    weights, start = [], 0
    for fan_in, fan_out in layer_shapes:
        W = theta[:, start : start + fan_in * fan_out].reshape(
            (theta.type.shape[0], fan_in, fan_out)
        )
        start += fan_in * fan_out
        weights.append((W, theta[:, start : start + fan_out]))
        start += fan_out
    return weights


def _members_forward(Xb, weights, activation: str):
    """The members' logits at the same rows, (K, batch, k): the first layer as one
    matrix product with the members' weights side by side (``X (batch, d) @ (d, K H)``,
    one large product instead of K small ones), the others batched over members."""
    from pymc_bnn.network.model import ACTIVATIONS

    W0, b0 = weights[0]
    K, d, H = W0.type.shape
    h = pt.dot(Xb, W0.dimshuffle(1, 0, 2).reshape((d, K * H)))
    h = h.reshape((Xb.shape[0], K, H)).dimshuffle(1, 0, 2) + b0[:, None, :]
    for W, b in weights[1:]:
        h = pt.matmul(ACTIVATIONS[activation](h), W) + b[:, None, :]
    return h


def _nll(logits, Y, log_noise=None):
    """Negative log likelihood of each row, (K, batch): Bernoulli on one logit
    (``Y`` the 0/1 labels, (..., 1)), else softmax (``Y`` one-hot); with ``log_noise``
    (K,), each member's log noise sd, Normal (``Y`` the target, (..., 1); without the
    constant ``log(2 pi) / 2``). Sums accumulate in the inputs' precision (PyTensor's
    JAX sums of single precision return double)."""
    acc = logits.dtype
    if log_noise is not None:
        two = np.asarray(2.0, dtype=acc)
        scaled = (Y[..., 0] - logits[..., 0]) * pt.exp(-log_noise)[:, None]
        return scaled**2 / two + log_noise[:, None]
    if logits.type.shape[-1] == 1:
        return (pt.softplus(logits) - Y * logits)[..., 0]
    top = pt.max(logits, axis=-1, keepdims=True)
    lse = pt.log(pt.sum(pt.exp(logits - top), axis=-1, acc_dtype=acc)) + top[..., 0]
    return lse - pt.sum(Y * logits, axis=-1, acc_dtype=acc)


def _single_sums(outputs: list) -> list:
    """``outputs`` with every sum accumulating in its own precision: PyTensor
    accumulates a single-precision sum in double, and its JAX backend then returns
    double, which turns the rest of the step (the gradient's bias terms, the Adam
    update) to double."""
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.math import Sum

    swaps = {}
    for var in ancestors(outputs):
        node = var.owner
        if (
            node is not None
            and isinstance(node.op, Sum)
            and var is node.outputs[0]
            and node.op.acc_dtype != var.dtype
        ):
            swaps[var] = Sum(axis=node.op.axis, dtype=var.dtype, acc_dtype=var.dtype)(
                node.inputs[0]
            )
    return graph_replace(outputs, swaps, strict=False) if swaps else outputs


@functools.lru_cache(maxsize=16)
def _epochs_program(
    layer_shapes: tuple,
    activation: str,
    n_members: int,
    batch: int,
    steps_per_epoch: int,
    dtype: str,
    mode: str,
    regression: bool = False,
):
    """``f(theta, m, v, t, best, stale, X, Y, train, rows, delta, lr, tol) -> (theta, m, v, t,
    best, stale, epoch_losses)``: Adam steps over ``rows`` (n_steps, batch) row indices,
    the same rows for every member (each weighs only its training rows, ``train`` (K,
    n_rows) of 0 / 1), ``steps_per_epoch`` to an epoch, each member's stopping rule
    applied at each epoch's end (``stale`` > :data:`N_ITER_NO_CHANGE`: frozen).
    ``delta`` (K, P): each member's prior precision per weight over its training
    rows. ``regression``: a Normal likelihood, each member's log noise sd one more
    column of ``theta`` (its ``delta`` 0: a flat prior)."""

    K, P = n_members, n_params(layer_shapes) + int(regression)
    # constants in the program's precision (a Python float would upcast single to double)
    beta1, beta2, eps, half, one = (np.asarray(c, dtype=dtype) for c in (*ADAM, 0.5, 1.0))
    theta0 = pt.tensor("theta", dtype=dtype, shape=(K, P))
    m0, v0 = theta0.type("m"), theta0.type("v")
    t0 = pt.tensor("t", dtype=dtype, shape=(K,))
    best0 = pt.tensor("best", dtype=dtype, shape=(K,))
    stale0 = pt.tensor("stale", dtype="int64", shape=(K,))
    X = pt.matrix("X", dtype=dtype)
    Y = pt.matrix("Y", dtype=dtype)
    train = pt.matrix("train", dtype=dtype)
    rows = pt.tensor("rows", dtype="int64", shape=(None, batch))
    delta = pt.tensor("delta", dtype=dtype, shape=(K, P))
    lr = pt.scalar("lr", dtype=dtype)
    tol = pt.scalar("tol", dtype=dtype)
    step_no = pt.arange(rows.shape[0])
    nan = np.array(np.nan, dtype=dtype)

    def step(idx, i, theta, m, v, t, best, stale, running):
        active = pt.lt(stale, N_ITER_NO_CHANGE + 1)
        logits = _members_forward(X[idx], _stacked_weights(theta, layer_shapes), activation)
        weight = train[:, idx]
        count = pt.maximum(pt.sum(weight, axis=1, acc_dtype=dtype), one)
        log_noise = theta[:, -1] if regression else None
        objective = pt.sum(
            weight * _nll(logits, Y[idx][None], log_noise), axis=1, acc_dtype=dtype
        ) / count + half * pt.sum(delta * theta**2, axis=1, acc_dtype=dtype)
        grad = pytensor.grad(objective.sum(), theta)
        t1 = t + one
        m1 = beta1 * m + (one - beta1) * grad
        v1 = beta2 * v + (one - beta2) * grad**2
        # scikit-learn's form of the bias correction (folded into the step size)
        rate = lr * pt.sqrt(one - beta2**t1) / (one - beta1**t1)
        moved = theta - rate[:, None] * m1 / (pt.sqrt(v1) + eps)
        keep = active[:, None]
        running1 = running + objective
        end = pt.eq((i + 1) % steps_per_epoch, 0)
        epoch_loss = running1 / np.asarray(steps_per_epoch, dtype=dtype)
        improved = pt.lt(epoch_loss, best - tol)
        stale1 = pt.switch(end & active, pt.switch(improved, 0, stale + 1), stale)
        best1 = pt.switch(end & active, pt.minimum(best, epoch_loss), best)
        recorded = pt.switch(end & active, epoch_loss, nan)
        return _single_sums(
            [
                pt.switch(keep, moved, theta),
                pt.switch(keep, m1, m),
                pt.switch(keep, v1, v),
                pt.switch(active, t1, t),
                best1,
                stale1,
                pt.switch(end, pt.zeros_like(running1), running1),
                recorded,
            ]
        )

    outs = pytensor.scan(
        step,
        sequences=[rows, step_no],
        outputs_info=[theta0, m0, v0, t0, best0, stale0, pt.zeros((K,), dtype=dtype), None],
        return_updates=False,
    )
    theta, m, v, t, best, stale, _, recorded = outs
    epoch_losses = recorded[steps_per_epoch - 1 :: steps_per_epoch]
    return compiled_function(
        (
            "_map_ensemble_epochs",
            layer_shapes,
            activation,
            K,
            batch,
            steps_per_epoch,
            dtype,
            regression,
        ),
        [theta0, m0, v0, t0, best0, stale0, X, Y, train, rows, delta, lr, tol],
        [theta[-1], m[-1], v[-1], t[-1], best[-1], stale[-1], epoch_losses],
        mode=mode,
    )


def _targets(y: np.ndarray, n_outputs: int) -> np.ndarray:
    """The class codes as the likelihood's targets: (n, 1) labels for one logit, else
    one-hot (n, k)."""
    y = np.asarray(y).astype(np.int64).ravel()
    if n_outputs == 1:
        return y[:, None].astype(np.float64)
    return np.eye(n_outputs)[y]


def _epoch_rows(rng, n_rows: int, batch: int, steps: int, epochs: int) -> np.ndarray:
    """Row indices of ``epochs`` epochs, (epochs * steps, batch): a shuffle of the rows
    every epoch (shared by the members), the last batch topped up from the start of
    another shuffle."""
    out = np.empty((epochs, steps * batch), dtype=np.int64)
    for e in range(epochs):
        order = rng.permutation(n_rows)
        while order.size < steps * batch:
            order = np.concatenate([order, rng.permutation(n_rows)])
        out[e] = order[: steps * batch]
    return out.reshape(epochs * steps, batch)


def holdout_masks(
    y: np.ndarray, n_members: int, seed: int, fraction: float = HOLDOUT_FRACTION
) -> np.ndarray:
    """Each member's held-out rows, (n_members, n_rows) booleans: disjoint blocks of
    ``fraction`` of the rows each (stratified by class: the rows of each class dealt
    in turn, in a seeded order), so every member trains on the rest and the ensemble
    on all of them. None of them where a block would hold fewer than
    :data:`MIN_HOLDOUT` rows."""
    y = np.asarray(y).ravel()
    n = y.size
    n_blocks = max(int(round(1.0 / fraction)), int(n_members))
    if n // n_blocks < MIN_HOLDOUT:
        return np.zeros((int(n_members), n), dtype=bool)
    rng = np.random.default_rng([int(seed), 2])
    order = rng.permutation(n)
    order = order[np.argsort(y[order], kind="stable")]  # classes in turn, shuffled within
    block = np.empty(n, dtype=np.int64)
    block[order] = np.arange(n) % n_blocks
    return np.stack([block == k for k in range(int(n_members))])


class _HeldOutWatch:
    """Early stopping on each member's held-out rows (a regression's squared error):
    which members to freeze after a call of the training program, and each member's
    weights at its lowest held-out error. Why: the training objective's rule let a
    (50,) network over-fit the noisy wine table for 600-1,000 epochs, its held-out
    error rising after ~150 (``research/notes/laplace-ensemble.md``)."""

    def __init__(self, X, y, held, layer_shapes, activation, mode):
        self.X, self.y, self.held = X, np.asarray(y, dtype=np.float64), held
        self.shapes, self.activation, self.mode = layer_shapes, activation, mode
        K = held.shape[0]
        self.best = np.full(K, np.inf)
        self.stale = np.zeros(K, dtype=np.int64)
        self.weights = [None] * K

    def update(self, theta, active) -> np.ndarray:
        """Record the held-out errors at ``theta`` (K, P [+ 1]) of the ``active``
        members; the members to freeze now (booleans)."""
        H = self.shapes[-1][0]
        P = n_params(self.shapes)
        freeze = np.zeros(len(self.best), dtype=bool)
        for k in np.flatnonzero(active & self.held.any(axis=1)):
            rows = self.held[k]
            w = theta[k, :P].astype(np.float64)
            out = _phi(self.shapes, self.activation, self.mode, w, self.X[rows]) @ w[P - H - 1 :]
            error = float(np.mean((self.y[rows] - out) ** 2))
            if error < self.best[k] - TOL:
                self.best[k], self.stale[k], self.weights[k] = error, 0, theta[k].copy()
            else:
                self.stale[k] += 1
                freeze[k] = self.stale[k] >= VALIDATION_PATIENCE
        return freeze

    def best_weights(self, theta) -> np.ndarray:
        """``theta`` with each watched member's weights of its lowest held-out error."""
        out = theta.copy()
        for k, w in enumerate(self.weights):
            if w is not None:
                out[k] = w
        return out


def fit_map_ensemble(
    X: np.ndarray,
    y: np.ndarray,
    *,
    layer_shapes,
    activation: str = "tanh",
    prior_sigma=1.0,
    n_members: int = 5,
    seed: int = 0,
    holdout: np.ndarray | None = None,
    learning_rate: float = LEARNING_RATE,
    batch_size: int = BATCH_SIZE,
    max_epochs: int = MAX_EPOCHS,
    dtype: str = DTYPE,
    mode: str | None = None,
    starts: np.ndarray | None = None,
    regression: bool = False,
    start_noise_sd: np.ndarray | None = None,
    validate: bool = False,
) -> MapEnsemble:
    """Train ``n_members`` networks to their MAP weights at once (see the module).

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
    y : array of shape (n_rows,)
        Class codes ``0 .. k - 1``; with ``regression``, the (standardised) target.
    layer_shapes : sequence of (fan_in, fan_out)
        One output for two classes (Bernoulli), one per class for more (softmax), one
        for regression.
    activation : str
    prior_sigma : float or sequence of float
        The Normal prior's standard deviation, one for every layer or one per layer.
    n_members : int
    seed : int
        Seeds the members' starting weights (:func:`member_seeds`) and their minibatches.
    holdout : array of shape (n_members, n_rows), optional
        Rows each member does not train on (:func:`holdout_masks`); default none.
    learning_rate, batch_size, max_epochs
        Adam's step size, rows per step (capped at the rows) and the most epochs.
    dtype : {"float32", "float64"}
        The precision of the training program.
    mode : str, optional
        PyTensor's compile mode (default :func:`pymc_bnn.network._flat.compile_mode`).
    starts : array of shape (n_members, n_params), optional
        Starting weights in place of random ones.
    regression : bool
        A Normal likelihood whose noise sd each member fits with its weights (under a
        flat prior on its log; it starts at 1, the standardised target's sd).
    start_noise_sd : array of shape (n_members,), optional
        With ``starts``: the members' noise sds to start from.
    validate : bool
        Regression: also stop each member when the squared error of its held-out rows
        has not fallen by :data:`TOL` for :data:`VALIDATION_PATIENCE` calls of the
        program (:data:`EPOCHS_PER_CALL` epochs each), and keep its weights of the
        lowest held-out error (:class:`_HeldOutWatch`).

    Returns
    -------
    MapEnsemble
        Its weights in float64.
    """
    from pymc_bnn.network._flat import compile_mode, layer_index

    shapes = tuple((int(a), int(b)) for a, b in layer_shapes)
    X = np.ascontiguousarray(X, dtype=dtype)
    n_rows, K, P = X.shape[0], int(n_members), n_params(shapes)
    Y = (
        np.asarray(y, dtype=dtype).reshape(-1, 1)
        if regression
        else _targets(y, shapes[-1][1]).astype(dtype)
    )
    if holdout is None:
        holdout = np.zeros((K, n_rows), dtype=bool)
    train = ~np.asarray(holdout, dtype=bool)
    batch = int(min(batch_size, n_rows))
    steps = math.ceil(n_rows / batch)
    # epochs per check of the stopping rule: at least MIN_CHECK_STEPS steps each
    period = math.ceil(MIN_CHECK_STEPS / steps)
    sigmas = np.broadcast_to(np.asarray(prior_sigma, dtype=np.float64), (len(shapes),))
    per_weight = (1.0 / sigmas**2)[layer_index(shapes)]
    if regression:  # the log noise sd: a flat prior
        per_weight = np.append(per_weight, 0.0)
    delta = np.stack([per_weight / max(int(r.sum()), 1) for r in train]).astype(dtype)
    program = _epochs_program(
        shapes,
        activation,
        K,
        batch,
        steps * period,
        dtype,
        mode or compile_mode(),
        bool(regression),
    )
    seeds = member_seeds(seed, K)
    theta = (
        np.stack([initial_theta(shapes, s) for s in seeds])
        if starts is None
        else np.array(starts, dtype=np.float64).reshape(K, P)
    )
    if regression:
        noise = np.ones(K) if start_noise_sd is None else np.asarray(start_noise_sd, float)
        theta = np.column_stack([theta, np.log(noise)])
    theta = theta.astype(dtype)
    m, v, t = np.zeros_like(theta), np.zeros_like(theta), np.zeros(K, dtype)
    best, stale = np.full(K, np.inf, dtype), np.zeros(K, dtype=np.int64)
    rng = np.random.default_rng([int(seed), 1])
    per_call = max(1, EPOCHS_PER_CALL // period)  # checks per call
    most = math.ceil(max_epochs / period)
    curves, done = [], 0
    watch = _HeldOutWatch(X, Y[:, 0], ~train, shapes, activation, mode) if validate else None
    while done < most and np.any(stale <= N_ITER_NO_CHANGE):
        checks = min(per_call, most - done)
        rows = _epoch_rows(rng, n_rows, batch, steps, checks * period)
        theta, m, v, t, best, stale, losses = (
            np.array(a)
            for a in program(
                theta,
                m,
                v,
                t,
                best,
                stale,
                X,
                Y,
                train.astype(dtype),
                rows,
                delta,
                np.asarray(learning_rate, dtype=dtype),
                np.asarray(TOL * period, dtype=dtype),
            )
        )
        if not np.all(np.isfinite(theta)):
            raise FloatingPointError(
                "the MAP fits diverged (non-finite weights): standardise the features, or "
                "lower the learning rate."
            )
        curves.append(losses)
        done += checks
        if watch is not None:  # freeze the members whose held-out error stopped falling
            stale[watch.update(theta, active=stale <= N_ITER_NO_CHANGE)] = N_ITER_NO_CHANGE + 1
    if watch is not None:
        theta = watch.best_weights(theta)
    curve = np.concatenate(curves, axis=0).astype(np.float64)
    n_epochs = np.sum(np.isfinite(curve), axis=0) * period
    theta = theta.astype(np.float64)
    return MapEnsemble(
        thetas=theta[:, :P],
        loss_curve=curve,
        n_epochs=n_epochs,
        converged=stale > N_ITER_NO_CHANGE,
        noise_sd=np.exp(theta[:, P]) if regression else None,
    )


def _evidence_precision(
    eig: np.ndarray, sq_norm: float, n_params_: int, delta: float = 1.0, iters: int = 200
) -> float:
    """MacKay's fixed point ``delta = gamma / |theta|^2``, ``gamma = sum lambda / (lambda
    + delta)``, over the curvature's eigenvalues: the prior precision at which the
    Laplace evidence is stationary (within the evidence step's range)."""
    from pymc_bnn.inference.laplace import DELTA_RANGE

    for _ in range(iters):
        gamma = float(np.sum(eig / (eig + delta)))
        new = float(np.clip(gamma / max(sq_norm, 1e-300), *DELTA_RANGE))
        if abs(math.log(new / delta)) < 1e-6:
            return new
        delta = new
    return delta


def last_layer_laplace(
    X: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    *,
    layer_shapes,
    activation: str = "tanh",
    hidden_prior_sigmas=(1.0,),
    mode: str | None = None,
):
    """The last-layer Laplace approximation around one member's MAP ``theta``: a
    :class:`pymc_bnn.inference.laplace.LaplaceGaussian` whose Gaussian covers the output layer
    (GGN curvature, one prior precision chosen by the evidence) and whose hidden layers
    are a point estimate at ``theta``."""
    import scipy.linalg as sla

    from pymc_bnn.inference.laplace import LaplaceGaussian, last_layer_curvature
    from pymc_bnn.network._flat import compile_mode

    shapes = tuple((int(a), int(b)) for a, b in layer_shapes)
    X = np.ascontiguousarray(X, dtype=np.float64)
    H, k = shapes[-1]
    first = theta.size - (H * k + k)
    Y = _targets(y, k)
    G, _ = last_layer_curvature(
        shapes, activation, mode or compile_mode(), theta, X, Y, classify=True
    )
    G = 0.5 * (G + G.T)
    eig = np.clip(np.linalg.eigvalsh(G), 0.0, None)
    tail = theta[first:]
    delta = _evidence_precision(eig, float(tail @ tail), tail.size)
    A = G.copy()
    A[np.diag_indices_from(A)] += delta
    chol = sla.cholesky(A, lower=True, check_finite=False)
    z = _last_layer_logits(shapes, activation, mode, theta, X)
    nll = float(np.sum(_np_nll(z, Y)))
    log_evidence = (
        -nll
        - 0.5 * delta * float(tail @ tail)
        + 0.5 * tail.size * math.log(delta)
        - float(np.sum(np.log(np.diag(chol))))
    )
    gamma = float(np.sum(eig / (eig + delta)))
    sigmas = tuple(
        float(s)
        for s in np.broadcast_to(
            np.asarray(hidden_prior_sigmas, dtype=np.float64), (len(shapes) - 1,)
        )
    )
    return LaplaceGaussian(
        theta=np.array(theta, dtype=np.float64),
        chol=chol,
        noise_sd=None,
        prior_sigmas=(*sigmas, 1.0 / math.sqrt(delta)),
        log_evidence=float(log_evidence),
        effective_parameters=(*[float("nan")] * len(sigmas), gamma),
        first_random=int(first),
    )


def last_layer_regression(
    X: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    noise_sd: float,
    *,
    layer_shapes,
    activation: str = "tanh",
    hidden_prior_sigmas=(1.0,),
    mode: str | None = None,
    iters: int = 200,
):
    """A regression member's last-layer posterior: the network is linear in its output
    layer, so given the last hidden layer's features the Normal likelihood makes that
    layer's posterior exactly Gaussian (Bayesian linear regression; no curvature
    approximation). Its prior precision and the noise precision are chosen by their
    evidence (MacKay's fixed point, from ``noise_sd`` and the MAP's output layer), and the
    output layer is moved to the posterior mean at them. A
    :class:`pymc_bnn.inference.laplace.LaplaceGaussian` with that noise sd."""
    import scipy.linalg as sla

    from pymc_bnn.inference.laplace import BETA_RANGE, DELTA_RANGE, LaplaceGaussian

    shapes = tuple((int(a), int(b)) for a, b in layer_shapes)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    H, _ = shapes[-1]
    first = theta.size - (H + 1)
    phi = _phi(shapes, activation, mode, theta, X)
    gram = phi.T @ phi
    lam, U = np.linalg.eigh(gram)
    lam = np.clip(lam, 0.0, None)
    proj = U.T @ (phi.T @ y)
    n, tail = len(y), theta[first:]
    beta = 1.0 / float(noise_sd) ** 2
    delta = float(np.clip(tail.size / max(float(tail @ tail), 1e-300), *DELTA_RANGE))
    for _ in range(iters):
        mean = U @ (beta * proj / (beta * lam + delta))
        gamma = float(np.sum(beta * lam / (beta * lam + delta)))
        ssr = float(np.sum((y - phi @ mean) ** 2))
        new_delta = float(np.clip(gamma / max(float(mean @ mean), 1e-300), *DELTA_RANGE))
        new_beta = float(np.clip(max(n - gamma, 1.0) / max(ssr, 1e-300), *BETA_RANGE))
        done = abs(math.log(new_delta / delta)) < 1e-8 and abs(math.log(new_beta / beta)) < 1e-8
        delta, beta = new_delta, new_beta
        if done:
            break
    mean = U @ (beta * proj / (beta * lam + delta))
    ssr = float(np.sum((y - phi @ mean) ** 2))
    A = beta * gram
    A[np.diag_indices_from(A)] += delta
    chol = sla.cholesky(A, lower=True, check_finite=False)
    log_evidence = (
        0.5 * n * math.log(beta / (2 * math.pi))
        - 0.5 * beta * ssr
        - 0.5 * delta * float(mean @ mean)
        + 0.5 * mean.size * math.log(delta)
        - float(np.sum(np.log(np.diag(chol))))
    )
    gamma = float(np.sum(beta * lam / (beta * lam + delta)))
    sigmas = tuple(
        float(s)
        for s in np.broadcast_to(
            np.asarray(hidden_prior_sigmas, dtype=np.float64), (len(shapes) - 1,)
        )
    )
    moved = np.array(theta, dtype=np.float64)
    moved[first:] = mean
    return LaplaceGaussian(
        theta=moved,
        chol=chol,
        noise_sd=float(1.0 / math.sqrt(beta)),
        prior_sigmas=(*sigmas, 1.0 / math.sqrt(delta)),
        log_evidence=float(log_evidence),
        effective_parameters=(*[float("nan")] * len(sigmas), gamma),
        first_random=int(first),
    )


def member_normal_moments(
    gaussian, X, *, layer_shapes, activation: str, mode: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, variance)`` at the rows of ``X`` of a regression member's last-layer
    Gaussian: the network's output at its mean and the output's variance under the
    Gaussian (``phi A^-1 phi^T``; at temperature ``T`` the predictive is ``Normal(mean,
    T variance + noise_sd^2)``)."""
    import scipy.linalg as sla

    phi = _phi(layer_shapes, activation, mode, gaussian.theta, X)
    mean = phi @ gaussian.theta[gaussian.first_random :]
    half = sla.solve_triangular(gaussian.chol, phi.T, lower=True, check_finite=False)
    return mean, np.einsum("hn,hn->n", half, half)


def _phi(layer_shapes, activation, mode, theta, X) -> np.ndarray:
    """The output layer's inputs with a 1 appended (its bias), (n_rows, H + 1)."""
    from pymc_bnn.inference.laplace import last_hidden
    from pymc_bnn.network._flat import compile_mode

    h = last_hidden(layer_shapes, activation, mode or compile_mode(), theta, X)
    return np.column_stack([h, np.ones(len(h))])


def _last_layer_logits(layer_shapes, activation, mode, theta, X):
    H, k = layer_shapes[-1]
    return _phi(layer_shapes, activation, mode, theta, X) @ theta[
        theta.size - (H + 1) * k :
    ].reshape(H + 1, k)


def member_logit_draws(
    gaussian,
    X,
    *,
    layer_shapes,
    activation: str,
    n_draws: int,
    random_seed,
    mode: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, noise)``: a last-layer Gaussian's logits at the rows of ``X`` at its
    MAP, (n_rows, k), and ``n_draws`` standard draws of their deviation from it,
    (n_draws, n_rows, k): at temperature ``T`` the draws are ``mean + sqrt(T) noise``."""
    import scipy.linalg as sla

    H, k = layer_shapes[-1]
    phi = _phi(layer_shapes, activation, mode, gaussian.theta, X)
    mean = phi @ gaussian.theta[gaussian.first_random :].reshape(H + 1, k)
    z = np.random.default_rng(random_seed).standard_normal((gaussian.chol.shape[0], n_draws))
    offsets = sla.solve_triangular(gaussian.chol, z, lower=True, trans="T", check_finite=False)
    noise = np.einsum("nh,hks->snk", phi, offsets.reshape(H + 1, k, n_draws))
    return mean, noise


def _np_nll(z: np.ndarray, Y: np.ndarray) -> np.ndarray:
    if z.shape[1] == 1:
        return np.logaddexp(0.0, z[:, 0]) - Y[:, 0] * z[:, 0]
    top = z.max(axis=1, keepdims=True)
    return (np.log(np.exp(z - top).sum(axis=1)) + top[:, 0]) - (Y * z).sum(axis=1)
