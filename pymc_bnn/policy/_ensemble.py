"""The classifier's default fit: a mixture of last-layer Laplace approximations.

A plain function over the data and settings (:func:`fit_ensemble`) that returns one
immutable result (:class:`EnsembleFit`); the estimator stores its fields
(:func:`fitted_attributes`) and keeps no scratch state. The method itself is
:mod:`pymc_bnn.inference._map_ensemble`; why it is the default, against a deep ensemble
of scikit-learn MLPs at the same cost: ``research/notes/laplace-ensemble.md``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from pymc_bnn.inference import Posterior
from pymc_bnn.inference._map_ensemble import (
    MapEnsemble,
    fit_map_ensemble,
    holdout_masks,
    last_layer_laplace,
    last_layer_regression,
    member_logit_draws,
    member_normal_moments,
)
from pymc_bnn.inference.laplace import laplace_idata, mixture_idata
from pymc_bnn.network.spec import NetworkSpec
from pymc_bnn.policy._settings import LAPLACE_ENSEMBLE
from pymc_bnn.policy.thresholds import (
    AUTO_ENSEMBLE_MAX_ROWS,
    ENSEMBLE_MEMBERS,
    NOISE_SCALES,
    REGRESSION_TEMPERATURES,
)
from pymc_bnn.predictive._composed import start_seed, start_shares

__all__ = [
    "AUTO_ENSEMBLE_MAX_ROWS",
    "ENSEMBLE_MEMBERS",
    "NOISE_SCALES",
    "REGRESSION_TEMPERATURES",
    "EnsembleFit",
    "LaplaceEnsemble",
    "fit_ensemble",
    "fit_laplace_ensemble",
    "fit_regression_ensemble",
    "fitted_attributes",
    "heldout_normal_calibration",
    "heldout_temperature",
    "one_standard_error_choice",
]


def _mean_proba(logits: np.ndarray) -> np.ndarray:
    """Class probabilities averaged over the draws (axis 0), (n_rows, n_classes)."""
    if logits.shape[-1] == 1:
        p = 1.0 / (1.0 + np.exp(-logits[..., 0]))
        p = p.mean(axis=0)
        return np.column_stack([1.0 - p, p])
    z = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return (p / p.sum(axis=-1, keepdims=True)).mean(axis=0)


def one_standard_error_choice(per_row: np.ndarray, values) -> int:
    """Index of the smallest of ``values`` whose summed score (``per_row``, (n_values,
    n_rows), lower is better) exceeds the best one's by at most one standard error of
    their rows' paired differences."""
    per_row = np.asarray(per_row, dtype=float)
    diff = per_row - per_row[int(np.argmin(per_row.sum(axis=1)))]
    se = diff.std(axis=1) * math.sqrt(per_row.shape[1])
    within = [j for j in range(len(values)) if diff[j].sum() <= se[j] + 1e-12]
    return min(within, key=lambda j: values[j])


def heldout_temperature(
    X: np.ndarray,
    y: np.ndarray,
    gaussians,
    holdout: np.ndarray,
    *,
    layer_shapes,
    activation: str = "tanh",
    seed: int = 0,
    temperatures=None,
    n_draws: int | None = None,
    mode: str | None = None,
):
    """The temperature of the members' Gaussians (covariances scaled by ``T``; ``T =
    0``: the MAP ensemble) chosen on each member's held-out rows: a
    :class:`pymc_bnn.policy._tempering.TemperatureSelection` (its scores: the held-out negative
    log likelihood per row at each temperature), or None where no member holds out
    rows.

    The one-standard-error rule (Breiman et al. 1984; Hastie, Tibshirani & Friedman,
    "Elements of Statistical Learning", 7.10): the smallest temperature whose summed
    held-out score is within one standard error of the best one's (of the rows' paired
    differences). Why: a few hundred held-out rows of a clean table score every
    temperature up to ~0.3 within noise of each other, and the best of them was then as
    often 2 as 0; where the data show a wider posterior predicts better (MNIST), it is
    better by far more than its standard error.
    """
    from pymc_bnn.policy._tempering import SCORE_DRAWS, TEMPERATURES, TemperatureSelection

    temperatures = (0.0, *TEMPERATURES) if temperatures is None else tuple(temperatures)
    n_draws = SCORE_DRAWS if n_draws is None else int(n_draws)
    y = np.asarray(y).astype(np.int64).ravel()
    per_row, splits = [], 0
    for k, (gaussian, held) in enumerate(zip(gaussians, holdout)):
        held = np.flatnonzero(held)
        if held.size == 0:
            continue
        mean, noise = member_logit_draws(
            gaussian,
            X[held],
            layer_shapes=layer_shapes,
            activation=activation,
            n_draws=n_draws,
            random_seed=[int(seed), 3, k],
            mode=mode,
        )
        rows = np.empty((len(temperatures), held.size))
        for j, T in enumerate(temperatures):
            proba = _mean_proba(mean[None] + math.sqrt(T) * noise)
            rows[j] = -np.log(np.clip(proba[np.arange(held.size), y[held]], 1e-300, None))
        per_row.append(rows)
        splits += 1
    if not per_row:
        return None
    per_row = np.concatenate(per_row, axis=1)  # (n_temperatures, held-out rows)
    choice = one_standard_error_choice(per_row, temperatures)
    return TemperatureSelection(
        temperature=float(temperatures[choice]),
        temperatures=tuple(float(t) for t in temperatures),
        scores=per_row.mean(axis=1),
        n_splits=splits,
    )


@dataclass(frozen=True)
class LaplaceEnsemble:
    """Result of :func:`fit_laplace_ensemble`.

    Attributes
    ----------
    gaussians : tuple of LaplaceGaussian
        Each member's last-layer Laplace approximation (:func:`last_layer_laplace`),
        around its MAP, from its training rows.
    maps : MapEnsemble
        The members' MAP fits.
    temperature : float
        The scale of the Gaussians' covariances the predictive uses (0: the MAP
        ensemble).
    selection : TemperatureSelection or None
        How the held-out rows chose ``temperature`` (None: given, or no rows held out).
    holdout : ndarray of shape (n_members, n_rows)
        Each member's held-out rows.
    noise_scale : float
        Regression: the factor of the members' fitted noise variance chosen on the
        held-out rows (already in the Gaussians' ``noise_sd``); 1 for a classifier.
    """

    gaussians: tuple
    maps: MapEnsemble
    temperature: float
    selection: object
    holdout: np.ndarray
    noise_scale: float = 1.0


def fit_laplace_ensemble(
    X: np.ndarray,
    y: np.ndarray,
    *,
    layer_shapes,
    activation: str = "tanh",
    prior_sigma=1.0,
    n_members: int = 5,
    seed: int = 0,
    temperature="auto",
    **map_kwargs,
) -> LaplaceEnsemble:
    """The mixture of last-layer Laplace approximations (see the module): the members'
    MAP fits (:func:`fit_map_ensemble`, each holding out its block of rows,
    :func:`holdout_masks`, where ``temperature="auto"``), each member's Gaussian from
    its training rows, and their temperature chosen on the held-out rows
    (:func:`heldout_temperature`; 1, the Gaussians as fitted, where too few rows to
    hold out), then the members refit on all rows from where they stopped and their
    Gaussians found again; or, with ``temperature`` a number, the members fit on all
    rows at once."""
    shapes = tuple((int(a), int(b)) for a, b in layer_shapes)
    auto = isinstance(temperature, str)
    holdout = (
        holdout_masks(y, n_members, seed)
        if auto
        else np.zeros((int(n_members), len(y)), dtype=bool)
    )
    maps = fit_map_ensemble(
        X,
        y,
        layer_shapes=shapes,
        activation=activation,
        prior_sigma=prior_sigma,
        n_members=n_members,
        seed=seed,
        holdout=holdout,
        **map_kwargs,
    )
    sigmas = np.broadcast_to(np.asarray(prior_sigma, dtype=np.float64), (len(shapes),))
    gaussians = tuple(
        last_layer_laplace(
            X[~held],
            np.asarray(y)[~held],
            theta,
            layer_shapes=shapes,
            activation=activation,
            hidden_prior_sigmas=sigmas[:-1],
        )
        for theta, held in zip(maps.thetas, holdout)
    )
    selection = None
    if auto:
        selection = heldout_temperature(
            X, y, gaussians, holdout, layer_shapes=shapes, activation=activation, seed=seed
        )
    T = float(temperature) if not auto else 1.0 if selection is None else selection.temperature
    if selection is not None:  # the held-out rows back in: every member on all rows
        maps = fit_map_ensemble(
            X,
            y,
            layer_shapes=shapes,
            activation=activation,
            prior_sigma=prior_sigma,
            n_members=n_members,
            seed=seed,
            starts=maps.thetas,
            **map_kwargs,
        )
        gaussians = tuple(
            last_layer_laplace(
                X,
                y,
                theta,
                layer_shapes=shapes,
                activation=activation,
                hidden_prior_sigmas=sigmas[:-1],
            )
            for theta in maps.thetas
        )
    return LaplaceEnsemble(
        gaussians=gaussians, maps=maps, temperature=T, selection=selection, holdout=holdout
    )


def heldout_normal_calibration(
    X: np.ndarray,
    y: np.ndarray,
    gaussians,
    holdout: np.ndarray,
    *,
    layer_shapes,
    activation: str = "tanh",
    temperatures=None,
    mode: str | None = None,
):
    """A regression ensemble's ``(selection, noise_scale)`` from each member's held-out
    rows: for every temperature ``T`` (:data:`REGRESSION_TEMPERATURES`) the factor ``c``
    of the noise variance (:data:`NOISE_SCALES`) whose predictive ``Normal(mean, T var +
    c noise_sd^2)`` scores the held-out rows best, then the temperature by the
    one-standard-error rule (:func:`one_standard_error_choice`); ``selection`` a
    :class:`pymc_bnn.policy._tempering.TemperatureSelection` (None, and ``c = 1``, where no
    member holds out rows)."""
    from scipy.stats import norm

    from pymc_bnn.policy._tempering import TemperatureSelection

    temperatures = (
        REGRESSION_TEMPERATURES if temperatures is None else tuple(float(t) for t in temperatures)
    )
    scales = np.asarray(NOISE_SCALES)
    y = np.asarray(y, dtype=np.float64).ravel()
    per_row, splits = [], 0
    for gaussian, held in zip(gaussians, holdout):
        held = np.flatnonzero(held)
        if held.size == 0:
            continue
        mean, var = member_normal_moments(
            gaussian, X[held], layer_shapes=layer_shapes, activation=activation, mode=mode
        )
        sd = np.sqrt(
            np.asarray(temperatures)[:, None, None] * var
            + scales[None, :, None] * gaussian.noise_sd**2
        )
        per_row.append(-norm.logpdf(y[held], mean, sd))  # (T, c, rows)
        splits += 1
    if not per_row:
        return None, 1.0
    per_row = np.concatenate(per_row, axis=2)
    best_c = np.argmin(per_row.sum(axis=2), axis=1)  # each temperature's noise factor
    rows = per_row[np.arange(len(temperatures)), best_c]
    choice = one_standard_error_choice(rows, temperatures)
    selection = TemperatureSelection(
        temperature=float(temperatures[choice]),
        temperatures=temperatures,
        scores=rows.mean(axis=1),
        n_splits=splits,
    )
    return selection, float(scales[best_c[choice]])


def fit_regression_ensemble(
    X: np.ndarray,
    y: np.ndarray,
    *,
    layer_shapes,
    activation: str = "tanh",
    prior_sigma=1.0,
    n_members: int = 5,
    seed: int = 0,
    temperature="auto",
    **map_kwargs,
) -> LaplaceEnsemble:
    """The regression mixture: each member holds out its block of rows
    (:func:`holdout_masks`, by the target's order) and trains on the rest, stopping on
    them (``validate``, :func:`fit_map_ensemble`) and fitting its noise sd; its output
    layer's exact Gaussian posterior given its features (:func:`last_layer_regression`);
    then the temperature and the noise variance's factor chosen on the held-out rows
    (:func:`heldout_normal_calibration`; with ``temperature`` a number, the factor
    only). The members are not refit on all rows: trained on past the point where
    their held-out error stopped falling they over-fit, and their held-out rows keep
    the noise honest, as a deep ensemble's members each trained on four folds of five
    (``research/notes/laplace-ensemble.md``, "Regression")."""
    shapes = tuple((int(a), int(b)) for a, b in layer_shapes)
    y = np.asarray(y, dtype=np.float64).ravel()
    holdout = holdout_masks(y, n_members, seed)
    maps = fit_map_ensemble(
        X,
        y,
        layer_shapes=shapes,
        activation=activation,
        prior_sigma=prior_sigma,
        n_members=n_members,
        seed=seed,
        holdout=holdout,
        regression=True,
        validate=True,
        **map_kwargs,
    )
    sigmas = np.broadcast_to(np.asarray(prior_sigma, dtype=np.float64), (len(shapes),))
    gaussians = tuple(
        last_layer_regression(
            X[~held],
            y[~held],
            theta,
            noise,
            layer_shapes=shapes,
            activation=activation,
            hidden_prior_sigmas=sigmas[:-1],
        )
        for theta, noise, held in zip(maps.thetas, maps.noise_sd, holdout)
    )
    auto = isinstance(temperature, str)
    selection, scale = heldout_normal_calibration(
        X,
        y,
        gaussians,
        holdout,
        layer_shapes=shapes,
        activation=activation,
        temperatures=None if auto else (float(temperature),),
    )
    T = float(temperature) if not auto else 1.0 if selection is None else selection.temperature
    gaussians = tuple(
        dataclasses.replace(g, noise_sd=g.noise_sd * math.sqrt(scale)) for g in gaussians
    )
    return LaplaceEnsemble(
        gaussians=gaussians,
        maps=maps,
        temperature=T,
        selection=selection if auto else None,
        holdout=holdout,
        noise_scale=scale,
    )


@dataclass(frozen=True)
class EnsembleFit:
    """Result of :func:`fit_ensemble`.

    Attributes
    ----------
    posterior : Posterior
        ``method="laplace_ensemble"``, its predictive draws stored (``idata``): each
        member's share (:func:`pymc_bnn.predictive._composed.start_shares`) of the members'
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


def fit_ensemble(
    X: np.ndarray,
    y: np.ndarray,
    *,
    hidden_layer_sizes: tuple,
    n_classes: int,
    activation: str,
    prior_sigma,
    temperature,
    n_draws: int,
    init_seed: int,
    predict_seed: int,
    noise_scale: float | None = None,
) -> EnsembleFit:
    """Fit the mixture of Laplace approximations on ``X`` (n_rows, n_features) and the
    class codes ``y`` (n_rows,), or with ``n_classes=0`` the standardised target
    (:func:`fit_regression_ensemble`), and draw its ``n_draws`` predictive draws.

    ``prior_sigma``: the Normal prior's sd of the MAP fits (one, or one per layer; the
    output layer's is then chosen again by each member's Laplace evidence).
    ``temperature``: ``"auto"`` (chosen on held-out rows) or a number. ``noise_scale``:
    a regression's spec's (the model's noise prior; the fit does not use it)."""
    regression = int(n_classes) == 0
    extra = {"likelihood": "normal", "noise_scale": float(noise_scale or 1.0)} if regression else {}
    spec = NetworkSpec(
        n_features=X.shape[1],
        hidden_layer_sizes=tuple(hidden_layer_sizes),
        n_classes=int(n_classes),
        activation=activation,
        prior_sigma=1.0,
        n_rows=X.shape[0],
        batch_size=None,
        **extra,
    )
    shapes = spec.layer_shapes
    fit = (fit_regression_ensemble if regression else fit_laplace_ensemble)(
        X,
        y,
        layer_shapes=shapes,
        activation=activation,
        prior_sigma=prior_sigma,
        n_members=ENSEMBLE_MEMBERS,
        seed=init_seed,
        temperature=temperature,
    )
    # at temperature 0 every draw of a member is its MAP: one draw each is the same
    # predictive (an equal mixture of the members) at a fraction of its cost
    shares = (
        [1] * len(fit.gaussians)
        if fit.temperature == 0
        else start_shares(n_draws, len(fit.gaussians))
    )
    idata = mixture_idata(
        None,
        [
            laplace_idata(g, shapes, n, start_seed(predict_seed, k), temperature=fit.temperature)
            for k, (g, n) in enumerate(zip(fit.gaussians, shares))
        ],
        spec.weight_names,
    )
    output_sigmas = [float(g.prior_sigmas[-1]) for g in fit.gaussians]
    hidden = np.broadcast_to(np.asarray(prior_sigma, dtype=float), (len(shapes),))[:-1]
    # the spec records the prior of the first member's Gaussian (the others' output
    # scales are in the record)
    spec = dataclasses.replace(spec, prior_sigma=(*[float(s) for s in hidden], output_sigmas[0]))
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
    if regression:
        record["noise_sd"] = [float(g.noise_sd) for g in fit.gaussians]
        record["noise_scale"] = float(fit.noise_scale)
    diagnostics = {
        "method": LAPLACE_ENSEMBLE,
        "converged": bool(np.all(maps.converged)),
        "message": (
            ""
            if np.all(maps.converged)
            else "a MAP fit ran its most epochs without meeting the "
            "stopping rule: standardise the features"
        ),
        "final_loss": float(np.mean(last)),
    }
    # the members' mean objective per epoch, each member's last value carried on
    # after it stopped
    curve = np.empty(maps.loss_curve.shape[0])
    for i, row in enumerate(maps.loss_curve):
        curve[i] = np.mean(np.where(np.isfinite(row), row, last))
    curve.setflags(write=False)
    posterior = Posterior(
        method=LAPLACE_ENSEMBLE,
        spec=spec,
        seed=int(init_seed),
        idata=idata,
        loss=curve,
        diagnostics=diagnostics,
    )
    return EnsembleFit(
        posterior=posterior,
        temperature=float(fit.temperature),
        selection=fit.selection,
        record=record,
    )


def fitted_attributes(result: EnsembleFit) -> dict:
    """The estimator's fitted attributes from ``result``, by name."""
    from pymc_bnn.predictive._linear import predictive_from_idata

    post = result.posterior
    return {
        "posterior_": post,
        "approx_": None,
        "loss_curve_": post.loss,
        "diagnostics_": dict(post.diagnostics),
        "idata_": post.idata,
        "predictive_": predictive_from_idata(post.spec, post.idata),
        "prior_sigma_": post.spec.prior_sigma,
        "evidence_": None,
        "posterior_temperature_": result.temperature,
        "temperature_selection_": result.selection,
        "ensemble_": dict(result.record),
        "kl_weight_": 1.0,
        "kl_weight_selection_": None,
        "inference_selection_": None,
        "mixture_": None,
        "linear_part_": None,
        "start_losses_": None,
    }
