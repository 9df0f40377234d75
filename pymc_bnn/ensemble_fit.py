"""The classifier's default fit: a mixture of last-layer Laplace approximations.

A plain function over the data and settings (:func:`fit_ensemble`) that returns one
immutable result (:class:`EnsembleFit`); the estimator stores its fields
(:func:`fitted_attributes`) and keeps no scratch state. The method itself is
:mod:`pymc_bnn.inference.map_ensemble`; why it is the default, against a deep ensemble
of scikit-learn MLPs at the same cost: ``docs/experiments/laplace-ensemble.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from pymc_bnn.composed_draws import start_seed, start_shares
from pymc_bnn.fit_settings import LAPLACE_ENSEMBLE
from pymc_bnn.inference import Posterior
from pymc_bnn.inference.map_ensemble import fit_laplace_ensemble
from pymc_bnn.laplace import laplace_idata, mixture_idata
from pymc_bnn.spec import NetworkSpec

__all__ = ["ENSEMBLE_MEMBERS", "EnsembleFit", "fit_ensemble", "fitted_attributes"]

#: MAP fits (members) of the mixture: the size of the deep ensemble it is measured
#: against (Lakshminarayanan et al. 2017 found five members enough on MNIST-sized
#: problems), so the two cost about the same.
ENSEMBLE_MEMBERS = 5


@dataclass(frozen=True)
class EnsembleFit:
    """Result of :func:`fit_ensemble`.

    Attributes
    ----------
    posterior : Posterior
        ``method="laplace_ensemble"``, its predictive draws stored (``idata``): each
        member's share (:func:`pymc_bnn.composed_draws.start_shares`) of the members'
        last-layer Gaussians at ``temperature``, plain network draws; at temperature 0
        one draw per member (its MAP weights).
    temperature : float
        The scale of the Gaussians' covariances (0: the MAP ensemble's predictive).
    selection : TemperatureSelection or None
        How the members' held-out rows chose ``temperature`` (None: given).
    record : dict
        Plain data: ``members``, ``epochs`` and ``converged`` (each member's), the output
        layer's prior sd and log evidence of each member's Laplace approximation, and
        the rows each member held out while the temperature was chosen.
    """

    posterior: Posterior
    temperature: float
    selection: object
    record: dict


def fit_ensemble(X: np.ndarray, y: np.ndarray, *, hidden_layer_sizes: tuple, n_classes: int,
                 activation: str, prior_sigma, temperature, n_draws: int, init_seed: int,
                 predict_seed: int) -> EnsembleFit:
    """Fit the mixture of Laplace approximations on ``X`` (n_rows, n_features) and the
    class codes ``y`` (n_rows,), and draw its ``n_draws`` predictive draws.

    ``prior_sigma``: the Normal prior's sd of the MAP fits (one, or one per layer; the
    output layer's is then chosen again by each member's Laplace evidence).
    ``temperature``: ``"auto"`` (chosen on held-out rows) or a number."""
    spec = NetworkSpec(n_features=X.shape[1], hidden_layer_sizes=tuple(hidden_layer_sizes),
                       n_classes=int(n_classes), activation=activation, prior_sigma=1.0,
                       n_rows=X.shape[0], batch_size=None)
    shapes = spec.layer_shapes
    fit = fit_laplace_ensemble(X, y, layer_shapes=shapes, activation=activation,
                               prior_sigma=prior_sigma, n_members=ENSEMBLE_MEMBERS,
                               seed=init_seed, temperature=temperature)
    # at temperature 0 every draw of a member is its MAP: one draw each is the same
    # predictive (an equal mixture of the members) at a fraction of its cost
    shares = ([1] * len(fit.gaussians) if fit.temperature == 0
              else start_shares(n_draws, len(fit.gaussians)))
    idata = mixture_idata(None, [
        laplace_idata(g, shapes, n, start_seed(predict_seed, k), temperature=fit.temperature)
        for k, (g, n) in enumerate(zip(fit.gaussians, shares))], spec.weight_names)
    output_sigmas = [float(g.prior_sigmas[-1]) for g in fit.gaussians]
    hidden = np.broadcast_to(np.asarray(prior_sigma, dtype=float), (len(shapes),))[:-1]
    # the spec records the prior of the first member's Gaussian (the others' output
    # scales are in the record)
    spec = dataclasses.replace(spec, prior_sigma=(*[float(s) for s in hidden],
                                                  output_sigmas[0]))
    maps = fit.maps
    last = np.array([c[np.isfinite(c)][-1] for c in maps.loss_curve.T])
    record = {
        "members": len(fit.gaussians),
        "epochs": [int(e) for e in maps.n_epochs],
        "converged": [bool(c) for c in maps.converged],
        "output_prior_sigma": output_sigmas,
        "log_evidence": [float(g.log_evidence) for g in fit.gaussians],
        "heldout_rows": [int(h.sum()) for h in fit.holdout],
        "temperature": float(fit.temperature),
    }
    diagnostics = {"method": LAPLACE_ENSEMBLE, "converged": bool(np.all(maps.converged)),
                   "message": ("" if np.all(maps.converged)
                               else "a MAP fit ran its most epochs without meeting the "
                                    "stopping rule: standardise the features"),
                   "final_loss": float(np.mean(last))}
    # the members' mean objective per epoch, each member's last value carried on
    # after it stopped
    curve = np.empty(maps.loss_curve.shape[0])
    for i, row in enumerate(maps.loss_curve):
        curve[i] = np.mean(np.where(np.isfinite(row), row, last))
    curve.setflags(write=False)
    posterior = Posterior(method=LAPLACE_ENSEMBLE, spec=spec, seed=int(init_seed), idata=idata,
                          loss=curve, diagnostics=diagnostics)
    return EnsembleFit(posterior=posterior, temperature=float(fit.temperature),
                       selection=fit.selection, record=record)


def fitted_attributes(result: EnsembleFit) -> dict:
    """The estimator's fitted attributes from ``result``, by name."""
    from pymc_bnn.linear_part import predictive_from_idata

    post = result.posterior
    return {
        "posterior_": post, "approx_": None, "loss_curve_": post.loss,
        "diagnostics_": dict(post.diagnostics), "idata_": post.idata,
        "predictive_": predictive_from_idata(post.spec, post.idata),
        "prior_sigma_": post.spec.prior_sigma, "evidence_": None,
        "posterior_temperature_": result.temperature,
        "temperature_selection_": result.selection, "ensemble_": dict(result.record),
        "kl_weight_": 1.0, "kl_weight_selection_": None, "inference_selection_": None,
        "mixture_": None, "linear_part_": None, "start_losses_": None,
    }
