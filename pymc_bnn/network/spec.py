"""What a Bayesian MLP is, by name: the :class:`NetworkSpec` and the choices it names.

Both the model builder (:mod:`pymc_bnn.network.model`, which re-exports everything here) and
the input checks (:mod:`pymc_bnn.network._checks`) need these, so they live below both of
them. The module imports neither PyTensor nor PyMC: the light modules that use the
input checks (metrics, plotting, the report) stay light, and the activations'
PyTensor functions stay in :data:`pymc_bnn.network.model.ACTIVATIONS`, keyed by
:data:`ACTIVATION_NAMES`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACTIVATION_NAMES", "LIKELIHOODS", "PRIORS", "NetworkSpec"]

#: Hidden-layer activations, by name (the keys of :data:`pymc_bnn.network.model.ACTIVATIONS`).
ACTIVATION_NAMES = ("tanh", "relu", "logistic")

#: Weight priors. ``"normal"``: every weight and bias ~ Normal(0, prior_sigma).
#: ``"gamma_precision"``: Neal's hierarchical prior, one Gamma(shape, rate) precision
#: per layer for its weights and another for its biases, learned with the weights.
PRIORS = ("normal", "gamma_precision")

#: Likelihoods. ``"categorical"``: classification (Bernoulli on one logit for two
#: classes, Categorical on one logit per class otherwise). ``"normal"``: regression,
#: Normal(f(x), sigma) with ``sigma ~ HalfCauchy(noise_scale)``, or with a second
#: output giving a per-point ``sigma(x)`` (heteroscedastic).
LIKELIHOODS = ("categorical", "normal")


@dataclass(frozen=True)
class NetworkSpec:
    """Architecture of a Bayesian MLP, as recorded by :func:`pymc_bnn.build_model`.

    Attributes
    ----------
    n_features : int
        Number of input columns.
    hidden_layer_sizes : tuple of int
        Units per hidden layer (may be empty: Bayesian logistic / softmax regression).
    n_classes : int
        Number of classes. Two classes use one logit and a Bernoulli likelihood;
        more use one logit per class and a Categorical likelihood. 0 for regression.
    activation : str
        Name of the hidden-layer activation, one of :data:`ACTIVATION_NAMES`.
    prior_sigma : float or tuple of float
        Standard deviation of the Normal(0, prior_sigma) prior on weights and biases;
        a tuple holds one per layer (input layer first).
    n_rows : int
        Number of training rows (the ``total_size`` of the likelihood).
    batch_size : int or None
        Minibatch size, or None for full-batch training.
    prior : str
        ``"normal"`` or ``"gamma_precision"`` (see :data:`PRIORS`).
    precision_shape, precision_rate : float
        Shape and rate of the Gamma prior on each layer's precision
        (``prior="gamma_precision"`` only).
    n_groups : int
        Number of groups (tasks) of a hierarchical network; 0 for a plain network.
    likelihood : str
        ``"categorical"`` (classification) or ``"normal"`` (regression).
    heteroscedastic : bool
        Regression: a second output gives the noise scale per point.
    noise_scale : float
        Regression: scale of the HalfCauchy prior on the (homoscedastic) noise sd.
    """

    n_features: int
    hidden_layer_sizes: tuple[int, ...]
    n_classes: int
    activation: str
    prior_sigma: float | tuple[float, ...]
    n_rows: int
    batch_size: int | None
    prior: str = "normal"
    precision_shape: float = 1.0
    precision_rate: float = 1.0
    n_groups: int = 0
    likelihood: str = "categorical"
    heteroscedastic: bool = False
    noise_scale: float = 0.5

    @property
    def is_regression(self) -> bool:
        """Whether the network models a real-valued target."""
        return self.likelihood == "normal"

    @property
    def hierarchical(self) -> bool:
        """Whether the network has per-group weights."""
        return self.n_groups > 0

    @property
    def n_outputs(self) -> int:
        """Width of the output layer: 1 for binary problems, ``n_classes`` for more
        classes; regression: 1, or 2 (mean and noise) when heteroscedastic."""
        if self.is_regression:
            return 2 if self.heteroscedastic else 1
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
