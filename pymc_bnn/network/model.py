"""Build the PyMC model of a Bayesian multi-layer perceptron classifier.

The network forward pass lives in exactly one place, :func:`forward`, which is used
both to define the likelihood here and to compute predictive probabilities in
:mod:`pymc_bnn.predictive`. The architecture record :class:`NetworkSpec` and the names
of the priors and likelihoods live in :mod:`pymc_bnn.network.spec` (below the input checks,
which need them too) and are re-exported here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pytensor
import pytensor.tensor as pt

if TYPE_CHECKING:  # PyMC is imported where a model is built, not to predict
    import pymc as pm

from pymc_bnn.network._checks import check_model_inputs
from pymc_bnn.network.spec import LIKELIHOODS, PRIORS, NetworkSpec

__all__ = [
    "ACTIVATIONS",
    "LIKELIHOODS",
    "PRIORS",
    "noise_sd",
    "NetworkSpec",
    "build_model",
    "default_initial_values",
    "forward",
    "network_spec",
]


def _relu(x):
    return pt.maximum(x, 0.0)


#: Hidden-layer activations, by name: one for each of the names the input checks
#: accept, :data:`pymc_bnn.network.spec.ACTIVATION_NAMES`.
ACTIVATIONS: dict[str, Callable] = {
    "tanh": pt.tanh,
    "relu": _relu,
    "logistic": pt.sigmoid,
}

#: Smallest noise standard deviation of a heteroscedastic network (in target units).
MIN_NOISE = 1e-3
#: The model's graph computes a network whose every layer has at most this many inputs
#: feature-major (:func:`forward`'s ``feature_major``): XLA's CPU dots and gradient
#: reductions over a handful of features run faster with the points on the last axis.
#: Within the bound a compiled ADVI step ran as fast or faster feature-major; above it
#: the two layouts ran about equally, and a wide network slower feature-major. The bound
#: keeps every network measured at least as fast; it is the predictive's notion of a
#: small network (``predictive.UNROLL_MAX``) (measurements:
#: research/notes/code-measurements.md).
FEATURE_MAJOR_MAX_FAN_IN = 16


# Models built here -> their architecture. A weak map, so models are not kept alive.
_SPECS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def network_spec(model: pm.Model) -> NetworkSpec:
    """Return the :class:`NetworkSpec` of a model made by :func:`build_model`.

    Raises
    ------
    ValueError
        If ``model`` was not built by :func:`build_model`.
    """
    try:
        return _SPECS[model]
    except (KeyError, TypeError):
        raise ValueError(
            "This model was not built by pymc_bnn.build_model; its network architecture "
            "is unknown. Build it with pymc_bnn.build_model(X, y, ...)."
        ) from None


@contextlib.contextmanager
def default_initial_values(model: pm.Model) -> Iterator[pm.Model]:
    """Within the block, ``model`` has PyMC's default initial values; on exit (also on
    an error) its own come back.

    :func:`build_model` gives every weight a seeded, symmetry-breaking starting value
    (``initval=``; see its ``random_state``), which fits start from. PyMC's model
    transforms (:func:`pymc.model.fgraph.fgraph_from_model`, and through it
    ``pm.compute_log_likelihood``, ``pm.do``, ``pm.observe``,
    :func:`pymc.model.fgraph.clone_model`) refuse a model with initial values of its
    own ("Cannot convert models with non-default initial_values"). Initial values only
    matter to fitting, so these transforms may run without them: the block sets every
    entry of ``model.rvs_to_initial_values`` to None and restores them afterwards. Fit
    outside the block, so that fits start where they always do.

    Parameters
    ----------
    model : pm.Model
        Any PyMC model, typically one from :func:`build_model`.

    Yields
    ------
    pm.Model
        ``model`` itself.

    Examples
    --------
    The pointwise log-likelihood of a NUTS fit ``post = fit(m, method="nuts")``, for
    ArviZ's LOO (on a copy: ``pm.compute_log_likelihood`` adds its group to the tree
    it is given, and ``post.idata`` is the fit's own record)::

        with default_initial_values(m):
            idata = pm.compute_log_likelihood(post.idata.copy(), model=m)
        az.loo(idata)
    """
    saved = dict(model.rvs_to_initial_values)
    try:
        for rv in saved:
            model.rvs_to_initial_values[rv] = None
        yield model
    finally:
        for rv, value in saved.items():
            model.rvs_to_initial_values[rv] = value


def forward(
    X,
    weights: Sequence[tuple],
    *,
    activation: str = "tanh",
    groups=None,
    unroll: int = 0,
    feature_major: bool = False,
):
    """Network forward pass: inputs to output logits.

    Works on one set of weights or on a batch of posterior draws at once: every
    weight may carry leading batch dimensions, which broadcast against ``X``.

    Parameters
    ----------
    X : tensor of shape (n_points, n_features)
    weights : sequence of (W, b) pairs
        ``W`` of shape (..., fan_in, fan_out) and ``b`` of shape (..., fan_out),
        input layer first. With ``groups``: one set per group, ``W`` of shape
        (..., n_groups, fan_in, fan_out) and ``b`` of shape (..., n_groups, fan_out).
    activation : str
        Hidden-layer activation, a key of :data:`ACTIVATIONS`.
    groups : integer tensor of shape (n_points,), optional
        Group of each point: row ``i`` goes through the weights of group
        ``groups[i]`` (gathered per row, no loop over groups).
    unroll : int, default 0
        Layers whose ``W`` has a static fan-in of at most ``unroll`` are written as a
        sum of ``fan_in`` broadcast products instead of a matmul (the same values up to
        rounding). The compiled predictive uses it for small networks, where XLA then
        fuses every layer into one loop; 0 (the model's graph): matmuls only.
    feature_major : bool, default False
        Compute the matmul layers as ``W^T h`` on activations of shape
        (..., fan, n_points), transposing back at the end: the same values up to
        rounding, with the points as the last, contiguous axis (see
        :data:`FEATURE_MAJOR_MAX_FAN_IN`). Ignored with ``groups``.

    Returns
    -------
    logits : tensor of shape (..., n_points, n_outputs)

    Examples
    --------
    >>> import numpy as np, pytensor.tensor as pt
    >>> X = pt.as_tensor(np.ones((4, 2)))
    >>> W = [(pt.ones((3, 2, 5)), pt.zeros((3, 5))), (pt.ones((3, 5, 1)), pt.zeros((3, 1)))]
    >>> forward(X, W).eval().shape
    (3, 4, 1)
    """
    act = ACTIVATIONS[activation]
    h = pt.as_tensor(X)
    # True while h is held feature-major, (..., fan, n_points)
    transposed = False
    last = len(weights) - 1
    for i, (W, b) in enumerate(weights):
        fan_in = W.type.shape[-2] if unroll and groups is None else None
        if fan_in is not None and fan_in <= unroll:
            if transposed:
                h, transposed = pt.swapaxes(h, -1, -2), False
            # b + sum_j h_j W_j: elementwise, so XLA fuses the whole network into one
            # loop (a batched dot with K = 5 is slow, and breaks the fusion)
            out = pt.expand_dims(b, -2)
            for j in range(fan_in):
                out = out + pt.expand_dims(h[..., j], -1) * pt.expand_dims(W[..., j, :], -2)
            h = out
        elif groups is None and feature_major:
            if not transposed:
                h, transposed = pt.swapaxes(h, -1, -2), True
            h = pt.matmul(pt.swapaxes(W, -1, -2), h) + pt.expand_dims(b, -1)
        elif groups is None:
            h = pt.matmul(h, W) + pt.expand_dims(b, -2)
        else:
            # (..., n, fan_in, 1) * (..., n, fan_in, fan_out), summed over fan_in
            h = (pt.expand_dims(h, -1) * W[..., groups, :, :]).sum(axis=-2) + b[..., groups, :]
        if i < last:
            h = act(h)
    return pt.swapaxes(h, -1, -2) if transposed else h


def noise_sd(raw):
    """Noise standard deviation of a heteroscedastic network from its second output:
    ``softplus(raw) + MIN_NOISE`` (smooth, positive, linear for large ``raw``; unlike
    ``exp`` it cannot overflow from one large output)."""
    return pt.softplus(raw) + MIN_NOISE


def _layer_scales(spec: NetworkSpec, layer: int, hyper: dict):
    """Prior standard deviations ``(weights, biases)`` of one layer.

    ``hyper["prior_sigma"]`` (a shared scalar, or a shared vector of one scale per
    layer) for the fixed Normal prior; for Neal's
    prior, ``1 / sqrt(tau)`` of two precisions ``w{i}_precision`` and ``b{i}_precision``
    ~ Gamma(``hyper["precision_shape"]``, ``hyper["precision_rate"]``) (shared scalars).
    """
    import pymc as pm

    if spec.prior == "normal":
        sigma = hyper["prior_sigma"]
        if sigma.ndim == 1:
            sigma = sigma[layer]
        return sigma, sigma
    scales = []
    for kind in ("w", "b"):
        tau = pm.Gamma(
            f"{kind}{layer}_precision", alpha=hyper["precision_shape"], beta=hyper["precision_rate"]
        )
        scales.append(1.0 / pt.sqrt(tau))
    return tuple(scales)


def initial_sds(fan_in: int) -> tuple[float, float]:
    """Standard deviations of a layer's random starting weights and biases: small
    enough that tanh units start unsaturated whatever the fan-in."""
    return min(1.0, 2.0 / np.sqrt(fan_in)), 0.1


def _normal_block(name: str, shape: tuple, scale, init: np.ndarray, spec: NetworkSpec):
    """``name ~ Normal(0, scale)``; non-centred (``name_raw`` ~ N(0, 1)) when ``scale``
    is itself random, which NUTS and mean-field ADVI both handle far better."""
    import pymc as pm

    if spec.prior == "normal":  # a fixed scale (a shared input, not a random variable)
        return pm.Normal(name, 0.0, scale, shape=shape, initval=init)
    # the precision starts at its prior mean, so the raw value is init * sqrt(mean)
    raw = pm.Normal(
        f"{name}_raw",
        0.0,
        1.0,
        shape=shape,
        initval=init * np.sqrt(spec.precision_shape / spec.precision_rate),
    )
    return pm.Deterministic(name, raw * scale)


def _layer_param(name: str, shape: tuple, scale, init: np.ndarray, spec: NetworkSpec, rng):
    """One weight matrix or bias vector: plain, or per group (hierarchical).

    Hierarchical, non-centred: ``name = name_mu + name_sd * name_eps`` with the
    population value ``name_mu`` under the layer prior, ``name_sd ~ HalfNormal(1)``
    (how far groups stray from the population) and ``name_eps ~ N(0, 1)`` of shape
    (n_groups, *shape). Groups start near the population (eps ~ N(0, 0.1^2)).
    """
    import pymc as pm

    if not spec.hierarchical:
        return _normal_block(name, shape, scale, init, spec)
    mu = _normal_block(f"{name}_mu", shape, scale, init, spec)
    sd = pm.HalfNormal(f"{name}_sd", 1.0, initval=0.5)
    eps = pm.Normal(
        f"{name}_eps",
        0.0,
        1.0,
        shape=(spec.n_groups, *shape),
        initval=rng.normal(0.0, 0.1, size=(spec.n_groups, *shape)),
    )
    return pm.Deterministic(name, mu + sd * eps)


def build_model(
    X: np.ndarray,
    y: np.ndarray,
    *,
    hidden_layer_sizes: Sequence[int] = (5, 5),
    activation: str = "tanh",
    prior: str = "normal",
    prior_sigma: float = 1.0,
    precision_shape: float = 1.0,
    precision_rate: float = 1.0,
    n_classes: int | None = None,
    likelihood: str = "categorical",
    heteroscedastic: bool = False,
    noise_scale: float = 0.5,
    groups: np.ndarray | None = None,
    n_groups: int | None = None,
    batch_size: int | None = None,
    total_size: int | None = None,
    random_state: int | np.random.Generator | None = None,
) -> pm.Model:
    """Build a Bayesian MLP classifier (or regressor) as a PyMC model.

    Weights and biases get independent Normal(0, ``prior_sigma``) priors, or with
    ``prior="gamma_precision"`` Neal's hierarchical prior: each layer's weights share
    one precision ``tau ~ Gamma(precision_shape, precision_rate)`` and its biases
    another, ``w ~ Normal(0, 1 / sqrt(tau))``, so the data choose how strongly each
    layer is regularised. Two classes use a Bernoulli likelihood on one logit, more
    classes a Categorical likelihood on ``n_classes`` logits. The training data live
    in ``pm.Data`` containers named ``"X"``, ``"y"`` (and ``"groups"``); with
    ``batch_size`` the likelihood sees ``pm.Minibatch`` slices of them (rows drawn
    together) with ``total_size=n_rows``, held in a shared int64 scalar named
    ``"total_size"`` (like the prior's parameters: an input of the compiled ADVI
    runner, so fits on data of another size do not compile again). The prior's
    parameters (``"prior_sigma"``, or ``"precision_shape"`` and ``"precision_rate"``)
    are registered as the model's data too, so that ``pm.sample_posterior_predictive``
    on a trace of the model knows them unchanged.

    With ``groups`` the network is hierarchical (multi-task): every group has its own
    weights and biases in every layer, drawn around population values,
    ``w_g = w_mu + w_sd * w_eps[g]`` (non-centred), so related groups share strength
    while each keeps its own decision surface. Every layer is per group and the data
    decide how much each varies: on the 18 rotated-moons tasks of notebook 05, NUTS
    keeps a large spread on the input layer (``w0_sd`` 0.4-0.8, the rotation) and
    shrinks the middle layer to the population (``w1_sd`` ~ 0.04); the output layer's
    spread differed between runs (0.09 and 1.3: the posterior is multimodal).

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Training inputs (float).
    y : array of shape (n_rows,)
        Integer class codes in ``0 .. n_classes - 1`` (booleans are classes 0 and 1);
        real targets for regression, used as given. :class:`BayesianMLPRegressor`
        standardises its target; with ``likelihood="normal"`` here, standardise ``y``
        yourself: the priors and ``noise_scale`` suit a target of unit scale, and the
        heteroscedastic noise floor :data:`MIN_NOISE` is in ``y``'s units.
    hidden_layer_sizes : sequence of int, default (5, 5)
        Units per hidden layer. ``()`` gives Bayesian logistic / softmax regression.
    activation : {"tanh", "relu", "logistic"}, default "tanh"
    prior : {"normal", "gamma_precision"}, default "normal"
    prior_sigma : float or sequence of float, default 1.0
        Standard deviation of the weight and bias priors (``prior="normal"``); a
        sequence gives one per layer, input layer first (e.g. from
        :func:`pymc_bnn.inference.evidence.evidence_prior_scales`). Another value than 1.0 with
        ``prior="gamma_precision"`` is refused rather than ignored.
    precision_shape, precision_rate : float, default 1.0
        Gamma shape and rate of the per-layer precisions (``prior="gamma_precision"``);
        another value than 1.0 with ``prior="normal"`` is refused rather than ignored.
    n_classes : int, optional
        Number of classes; defaults to ``y.max() + 1`` (and at least 2).
    likelihood : {"categorical", "normal"}, default "categorical"
    heteroscedastic : bool, default False
        Regression: learn the noise level as a function of x.
    noise_scale : float, default 0.5
        Regression: scale of the HalfCauchy prior on the noise sd (homoscedastic).
    groups : int array of shape (n_rows,), optional
        Group (task) code of each row, in ``0 .. n_groups - 1``.
    n_groups : int, optional
        Number of groups; defaults to ``groups.max() + 1``.
    batch_size : int, optional
        Minibatch size; None trains on all rows at every step.
    total_size : int, optional
        The number of rows the likelihood stands for (default: the rows of ``X``).
        Minibatch models: larger when ``X`` is a placeholder sample of data streamed
        into the fit from elsewhere (``pymc_bnn.fit(minibatch_source=...)``). Any
        model: ``total_size = rows / kl_weight`` weights the likelihood against the
        prior, a tempered ("cold") ELBO whose KL term counts ``kl_weight`` times.
    random_state : int >= 0, numpy Generator, SeedSequence or BitGenerator, optional
        Seeds the initial values of the weights, drawn from N(0, s^2) with
        ``s = min(1, 2 / sqrt(fan_in))``: hidden units start distinct (no symmetric
        start at zero) and with pre-activations of order one (neither saturated nor so
        small that mean-field ADVI prunes them to the prior).

    Returns
    -------
    pm.Model
        Network weights ``w0, b0, w1, b1, ...`` (input layer first; free variables
        under the fixed prior, deterministics otherwise, of shape
        (n_groups, fan_in, fan_out) when hierarchical); its architecture is available
        through :func:`network_spec`. The weights' starting values are the model's
        initial values, which PyMC's model transforms (``pm.compute_log_likelihood``,
        ``pm.do``, ``pm.observe``) refuse: run those inside
        :func:`default_initial_values`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(20, 2)); y = (X[:, 0] > 0).astype(int)
    >>> model = build_model(X, y, hidden_layer_sizes=(3,), random_state=0)
    >>> sorted(model.named_vars)
    ['X', 'b0', 'b1', 'prior_sigma', 'w0', 'w1', 'y', 'y_obs']
    """
    import pymc as pm

    X, y, groups, spec = check_model_inputs(
        X,
        y,
        hidden_layer_sizes=hidden_layer_sizes,
        activation=activation,
        prior_sigma=prior_sigma,
        n_classes=n_classes,
        batch_size=batch_size,
        prior=prior,
        precision_shape=precision_shape,
        precision_rate=precision_rate,
        groups=groups,
        n_groups=n_groups,
        likelihood=likelihood,
        heteroscedastic=heteroscedastic,
        noise_scale=noise_scale,
    )
    # anything np.random.default_rng takes (an int >= 0, a Generator, a SeedSequence or
    # BitGenerator, a sequence of ints >= 0), but a bool; its own errors for "a" or -1
    # came from deep inside NumPy
    try:
        if isinstance(random_state, bool):
            raise TypeError
        rng = np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise ValueError(
            f"random_state must be None, an integer >= 0, a numpy Generator, "
            f"SeedSequence or BitGenerator; got {random_state!r}."
        ) from None
    n_given = spec.n_rows
    if total_size is not None:
        if (
            isinstance(total_size, bool)
            or not isinstance(total_size, int | np.integer)
            or total_size < spec.n_rows
        ):
            raise ValueError(
                f"total_size must be an int >= the rows of X ({spec.n_rows}); got {total_size!r}."
            )
        spec = dataclasses.replace(spec, n_rows=int(total_size))
    # the prior's parameters are shared inputs, not constants of the graph: fits that
    # differ only in them (a grid search, a hyperprior study) reuse one compiled ADVI
    # runner (pymc_bnn.inference._runner_cache)
    names = ("prior_sigma",) if spec.prior == "normal" else ("precision_shape", "precision_rate")
    hyper = {
        n: pytensor.shared(np.asarray(getattr(spec, n), dtype=np.float64), name=n) for n in names
    }

    with pm.Model() as model:
        data = [pm.Data("X", X), pm.Data("y", y)]
        if groups is not None:
            data.append(pm.Data("groups", groups))
        # the prior's parameters registered as the model's data, as pm.Data would (their
        # values go into a trace's constant_data): pm.sample_posterior_predictive takes
        # an unregistered shared input as changed since the trace, and warned that every
        # weight had been implicitly frozen
        for v in hyper.values():
            model.register_data_var(v)
        if spec.batch_size is None:
            observed = data
            # a full-batch likelihood counted as total_size rows: weighted by
            # total_size / rows, i.e. the ELBO's KL term by rows / total_size (the
            # regressor's kl_weight); a shared input, as for minibatches
            total_size = (
                None
                if spec.n_rows == n_given
                else [pytensor.shared(np.int64(spec.n_rows), name="total_size")]
            )
        else:
            observed = pm.Minibatch(*data, batch_size=spec.batch_size)
            # a shared input, not a constant of the graph, as the prior scales: minibatch
            # fits on data of another size (CV folds, streamed data) reuse one compiled
            # ADVI runner (PyMC takes a symbolic total_size in a list, one per dimension)
            total_size = [pytensor.shared(np.int64(spec.n_rows), name="total_size")]
        X_obs, y_obs = observed[0], observed[1]
        g_obs = observed[2] if groups is not None else None

        weights = []
        for layer, ((w_name, b_name), (fan_in, fan_out)) in enumerate(
            zip(spec.weight_names, spec.layer_shapes)
        ):
            w_scale, b_scale = _layer_scales(spec, layer, hyper)
            w_sd, b_sd = initial_sds(fan_in)
            W = _layer_param(
                w_name,
                (fan_in, fan_out),
                w_scale,
                rng.normal(0.0, w_sd, size=(fan_in, fan_out)),
                spec,
                rng,
            )
            b = _layer_param(
                b_name, (fan_out,), b_scale, rng.normal(0.0, b_sd, size=fan_out), spec, rng
            )
            weights.append((W, b))

        small = max(fan_in for fan_in, _ in spec.layer_shapes) <= FEATURE_MAJOR_MAX_FAN_IN
        logits = forward(
            X_obs, weights, activation=spec.activation, groups=g_obs, feature_major=small
        )
        if spec.is_regression:
            if spec.heteroscedastic:
                sigma = noise_sd(logits[:, 1])
            else:
                sigma = pm.HalfCauchy("sigma", beta=spec.noise_scale)
            pm.Normal("y_obs", mu=logits[:, 0], sigma=sigma, observed=y_obs, total_size=total_size)
        elif spec.n_classes == 2:
            pm.Bernoulli("y_obs", logit_p=logits[:, 0], observed=y_obs, total_size=total_size)
        else:
            pm.Categorical("y_obs", logit_p=logits, observed=y_obs, total_size=total_size)

    _SPECS[model] = spec
    return model
