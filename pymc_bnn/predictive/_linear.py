"""A linear part in the classifier's predictive: a Bayesian logistic (softmax)
regression stacked with the network.

The former default's (``inference="auto"`` before the mixture of Laplace
approximations): no fit makes one now; models saved with one load into
:class:`StackedPredictive`, and :func:`predictive_from_idata` is every fit's and load's
predictive constructor. What follows describes how that default chose it.

On a near-linear table a network has to learn what logistic regression gets for free,
and on a few hundred rows it pays for it: on the command line's example tables the
default's NLL was 1-4 % above ``LogisticRegression``'s and its accuracy up to 4 points
lower (``research/notes/calibration-log.md``). Rather than choose a model, the
default stacks them (Yao, Vehtari, Simpson & Gelman 2018, "Using stacking to average
Bayesian predictive distributions"): the predictive is ``(1 - w) p_network + w
p_linear``, with the weight ``w`` the one of :data:`LINEAR_WEIGHTS` whose mixture has
the best log score on the same held-out folds that choose the temperatures. Where the
table is not linear the folds give ``w = 0`` and the fit is the network's alone,
draw for draw.

The linear model is the Laplace approximation of a network without a hidden layer
(:func:`pymc_bnn.inference.laplace.fit_laplace`): its prior precision chosen by the evidence, its
Gaussian posterior exact up to the logistic likelihood's curvature. Its draws are
stored beside the network's (the :data:`LINEAR_PART_GROUP` group of ``idata_``), and
:class:`StackedPredictive` appends them to the network's draws, so every summary is
over the mixture.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from pymc_bnn.network.spec import NetworkSpec
from pymc_bnn.predictive._predictive import PosteriorPredictive, append_draws, from_idata

__all__ = [
    "LINEAR_PART_GROUP",
    "LINEAR_WEIGHTS",
    "StackedPredictive",
    "choose_linear_weight",
    "linear_spec",
    "predictive_from_idata",
    "stacked_idata",
]

#: The group of ``idata_`` that holds the linear part's draws (``w0``, ``b0``).
LINEAR_PART_GROUP = "linear_part"
#: The linear part's shares of the draws tried on the held-out folds (ties: the
#: smaller). A grid, not a continuous optimum: the share becomes a number of draws, and
#: a tenth is finer than the folds can tell apart on a few hundred rows.
LINEAR_WEIGHTS = tuple(round(0.1 * k, 1) for k in range(11))


def linear_spec(spec: NetworkSpec) -> NetworkSpec:
    """The network without its hidden layers: logistic (softmax) regression on the same
    inputs and classes."""
    return dataclasses.replace(spec, hidden_layer_sizes=(), prior_sigma=1.0, n_groups=0)


def choose_linear_weight(
    network_rows, linear_rows, scales, weights=LINEAR_WEIGHTS
) -> tuple[float, np.ndarray]:
    """The stacking weight of the linear part on the held-out folds.

    Parameters
    ----------
    network_rows, linear_rows : sequence of ndarray
        Per fold, the held-out NLL of each scored row under the network's predictive
        (at its chosen temperatures) and the linear model's (at its own).
    scales : sequence of float
        Per fold, held-out rows per scored row (``FoldScores.scale``).
    weights : sequence of float in [0, 1]
        The shares tried.

    Returns
    -------
    (weight, scores) : (float, ndarray of shape (len(weights),))
        The share with the smallest held-out NLL of ``(1 - w) p_network + w p_linear``
        per row (ties within 1e-9: the smaller share), and every share's.
    """
    weights = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore"):  # log(0): that part is absent
        log_w, log_1w = np.log(weights), np.log1p(-weights)
    total, n = np.zeros(weights.size), 0.0
    for a, b, scale in zip(network_rows, linear_rows, scales, strict=True):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            raise ValueError("the network and the linear model were scored on different rows")
        total += scale * -np.logaddexp(log_1w[:, None] - a, log_w[:, None] - b).sum(axis=1)
        n += scale * a.size
    scores = total / n
    best = int(np.flatnonzero(scores <= scores.min() + 1e-9)[0])
    return float(weights[best]), scores


def stacked_idata(idata, linear):
    """``idata`` (the network's draws) with the linear model's draws (``linear``, a
    DataTree with their ``posterior``) in its :data:`LINEAR_PART_GROUP` group."""
    import xarray as xr

    groups = {f"/{name}": idata[name].to_dataset() for name in idata.children}
    groups[f"/{LINEAR_PART_GROUP}"] = linear.posterior.to_dataset()[["w0", "b0"]]
    return xr.DataTree.from_dict(groups)


def predictive_from_idata(
    spec: NetworkSpec, idata, *, n_draws: int | None = None
) -> PosteriorPredictive:
    """:func:`pymc_bnn.predictive.from_idata`, with the linear part's draws appended
    (a :class:`StackedPredictive`) where ``idata`` holds them.

    ``n_draws``: that many of the stored draws, thinned evenly (None: all), the
    network's and the linear part's in their stored proportions (the linear part's
    rounded, at least two network draws kept)."""
    import xarray as xr

    if LINEAR_PART_GROUP not in idata.children:
        return from_idata(spec, idata, n_draws=n_draws)
    draws = xr.DataTree.from_dict({"/posterior": idata[LINEAR_PART_GROUP].to_dataset()})
    n_network = n_linear = None
    if n_draws is not None:
        stored = idata[LINEAR_PART_GROUP].to_dataset()
        linear = stored.sizes["chain"] * stored.sizes["draw"]
        network = idata["posterior"].to_dataset()
        total = linear + network.sizes["chain"] * network.sizes["draw"]
        if n_draws > total:
            raise ValueError(
                f"n_draws={n_draws} exceeds the {total} stored posterior draws "
                "(the network's and the linear part's); ask for fewer."
            )
        n_linear = max(0, min(int(round(n_draws * linear / total)), n_draws - 2))
        n_network = n_draws - n_linear
    network = from_idata(spec, idata, n_draws=n_network)
    if n_linear == 0:
        return network
    return StackedPredictive(
        network.spec,
        network.weights,
        network.noise,
        network.linearized_at,
        network.linearized_from,
        network.linearized_splits,
        linear=from_idata(linear_spec(spec), draws, n_draws=n_linear),
    )


@dataclasses.dataclass(frozen=True, eq=False)
class StackedPredictive(PosteriorPredictive):
    """A network's predictive with a linear model's draws after its own: every summary
    is over all the draws, so the linear part's share of the mixture is its share of
    the draws.

    Attributes
    ----------
    linear : PosteriorPredictive
        The linear model's draws (a network spec without hidden layers, the same
        inputs and classes).
    """

    linear: PosteriorPredictive | None = None

    def __post_init__(self):
        if self.linear is None or self.spec.hierarchical or self.spec.is_regression:
            raise ValueError("a linear part is for a classification network without groups")
        super().__post_init__()

    @functools.cached_property
    def _network(self) -> PosteriorPredictive:
        """The network's own draws (a plain predictive)."""
        return PosteriorPredictive(
            self.spec,
            self.weights,
            self.noise,
            self.linearized_at,
            self.linearized_from,
            self.linearized_splits,
        )

    @property
    def n_draws(self) -> int:
        """Number of draws: the network's and the linear part's."""
        return int(self.weights[0][0].shape[0]) + self.linear.n_draws

    @property
    def _wide(self) -> bool:
        return False

    def _chunks(
        self,
        X: np.ndarray,
        groups=None,
        *,
        head: str | None = None,
        dtype: str | None = None,
        columns: bool = False,
    ):
        """The network's chunks (its own paths), the linear part's draws of the same
        rows after them, in float64."""
        if groups is not None:
            self._group_index(groups, np.shape(X)[0])  # refuses groups: none were fit
        X = np.asarray(X, dtype=np.float64)
        yield from append_draws(
            self._network._chunks(X, head=head, dtype=dtype, columns=columns),
            lambda rows: self.linear._chunks(X[rows], head=head, dtype="float64"),
            columns,
        )
