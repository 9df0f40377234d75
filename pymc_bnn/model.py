"""Build the PyMC model of a Bayesian multi-layer perceptron classifier.

The network forward pass lives in exactly one place, :func:`forward`, which is used
both to define the likelihood here and to compute predictive probabilities in
:mod:`pymc_bnn.predictive`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = ["ACTIVATIONS", "NetworkSpec", "build_model", "forward", "network_spec"]


def _relu(x):
    return pt.maximum(x, 0.0)


#: Hidden-layer activations, by name.
ACTIVATIONS: dict[str, Callable] = {
    "tanh": pt.tanh,
    "relu": _relu,
    "logistic": pt.sigmoid,
}


@dataclass(frozen=True)
class NetworkSpec:
    """Architecture of a Bayesian MLP, as recorded by :func:`build_model`.

    Attributes
    ----------
    n_features : int
        Number of input columns.
    hidden_layer_sizes : tuple of int
        Units per hidden layer (may be empty: Bayesian logistic / softmax regression).
    n_classes : int
        Number of classes. Two classes use one logit and a Bernoulli likelihood;
        more use one logit per class and a Categorical likelihood.
    activation : str
        Name of the hidden-layer activation, a key of :data:`ACTIVATIONS`.
    prior_sigma : float
        Standard deviation of the Normal(0, prior_sigma) prior on weights and biases.
    n_rows : int
        Number of training rows (the ``total_size`` of the likelihood).
    batch_size : int or None
        Minibatch size, or None for full-batch training.
    """

    n_features: int
    hidden_layer_sizes: tuple[int, ...]
    n_classes: int
    activation: str
    prior_sigma: float
    n_rows: int
    batch_size: int | None

    @property
    def n_outputs(self) -> int:
        """Width of the output layer: 1 for binary problems, ``n_classes`` otherwise."""
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def layer_shapes(self) -> list[tuple[int, int]]:
        """``(fan_in, fan_out)`` of every weight matrix, input layer first."""
        sizes = [self.n_features, *self.hidden_layer_sizes, self.n_outputs]
        return list(zip(sizes[:-1], sizes[1:]))

    @property
    def weight_names(self) -> list[tuple[str, str]]:
        """Model variable names ``(weight, bias)`` of every layer, input layer first."""
        return [(f"w{i}", f"b{i}") for i in range(len(self.layer_shapes))]


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


def forward(X, weights: Sequence[tuple], *, activation: str = "tanh"):
    """Network forward pass: inputs to output logits.

    Works on one set of weights or on a batch of posterior draws at once: every
    weight may carry leading batch dimensions, which broadcast against ``X``.

    Parameters
    ----------
    X : tensor of shape (n_points, n_features)
    weights : sequence of (W, b) pairs
        ``W`` of shape (..., fan_in, fan_out) and ``b`` of shape (..., fan_out),
        input layer first.
    activation : str
        Hidden-layer activation, a key of :data:`ACTIVATIONS`.

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
    last = len(weights) - 1
    for i, (W, b) in enumerate(weights):
        h = pt.matmul(h, W) + pt.expand_dims(b, -2)
        if i < last:
            h = act(h)
    return h


def build_model(
    X: np.ndarray,
    y: np.ndarray,
    *,
    hidden_layer_sizes: Sequence[int] = (5, 5),
    activation: str = "tanh",
    prior_sigma: float = 1.0,
    n_classes: int | None = None,
    batch_size: int | None = None,
    random_state: int | np.random.Generator | None = None,
) -> pm.Model:
    """Build a Bayesian MLP classifier as a PyMC model.

    Weights and biases get independent Normal(0, ``prior_sigma``) priors. Two classes
    use a Bernoulli likelihood on one logit, more classes a Categorical likelihood on
    ``n_classes`` logits. The training data live in ``pm.Data`` containers named
    ``"X"`` and ``"y"``; with ``batch_size`` the likelihood sees ``pm.Minibatch``
    slices of them (rows of X and y drawn together) with ``total_size=n_rows``.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Training inputs (float).
    y : array of shape (n_rows,)
        Integer class codes in ``0 .. n_classes - 1``.
    hidden_layer_sizes : sequence of int, default (5, 5)
        Units per hidden layer. ``()`` gives Bayesian logistic / softmax regression.
    activation : {"tanh", "relu", "logistic"}, default "tanh"
    prior_sigma : float, default 1.0
        Standard deviation of the weight and bias priors.
    n_classes : int, optional
        Number of classes; defaults to ``y.max() + 1`` (and at least 2).
    batch_size : int, optional
        Minibatch size; None trains on all rows at every step.
    random_state : int or numpy Generator, optional
        Seeds the initial values of the weights, drawn from N(0, s^2) with
        ``s = min(1, 2 / sqrt(fan_in))``: hidden units start distinct (no symmetric
        start at zero) and with pre-activations of order one (neither saturated nor so
        small that mean-field ADVI prunes them to the prior).

    Returns
    -------
    pm.Model
        Free variables ``w0, b0, w1, b1, ...`` (input layer first); its architecture
        is available through :func:`network_spec`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(20, 2)); y = (X[:, 0] > 0).astype(int)
    >>> model = build_model(X, y, hidden_layer_sizes=(3,), random_state=0)
    >>> sorted(model.named_vars)[:4]
    ['X', 'b0', 'b1', 'w0']
    """
    from pymc_bnn._validation import check_model_inputs

    X, y, spec = check_model_inputs(
        X,
        y,
        hidden_layer_sizes=hidden_layer_sizes,
        activation=activation,
        prior_sigma=prior_sigma,
        n_classes=n_classes,
        batch_size=batch_size,
    )
    rng = np.random.default_rng(random_state)

    with pm.Model() as model:
        X_data = pm.Data("X", X)
        y_data = pm.Data("y", y)
        if spec.batch_size is None:
            X_obs, y_obs = X_data, y_data
            total_size = None
        else:
            X_obs, y_obs = pm.Minibatch(X_data, y_data, batch_size=spec.batch_size)
            total_size = spec.n_rows

        weights = []
        for (w_name, b_name), (fan_in, fan_out) in zip(spec.weight_names, spec.layer_shapes):
            scale = min(1.0, 2.0 / np.sqrt(fan_in))
            W = pm.Normal(
                w_name,
                0.0,
                spec.prior_sigma,
                shape=(fan_in, fan_out),
                initval=rng.normal(0.0, scale, size=(fan_in, fan_out)),
            )
            b = pm.Normal(
                b_name,
                0.0,
                spec.prior_sigma,
                shape=(fan_out,),
                initval=rng.normal(0.0, 0.1, size=fan_out),
            )
            weights.append((W, b))

        logits = forward(X_obs, weights, activation=spec.activation)
        if spec.n_classes == 2:
            pm.Bernoulli("y_obs", logit_p=logits[:, 0], observed=y_obs, total_size=total_size)
        else:
            pm.Categorical("y_obs", logit_p=logits, observed=y_obs, total_size=total_size)

    _SPECS[model] = spec
    return model
