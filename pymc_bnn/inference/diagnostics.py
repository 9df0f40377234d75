"""Convergence diagnostics of a fitted posterior (:func:`diagnose`): did ADVI's ELBO
level off; are NUTS's draws free of divergences, with R-hat and ESS of the network's
outputs within bounds. :func:`pymc_bnn.inference.fit` stores them in
``Posterior.diagnostics`` and warns when a check fails.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from pymc_bnn.exceptions import ConvergenceWarning, SamplingWarning
from pymc_bnn.inference.posterior import Posterior

__all__ = [
    "ELBO_MIN_STEPS",
    "ELBO_MIN_WINDOW",
    "ELBO_NOISE_Z",
    "ELBO_RELATIVE_TOL",
    "ELBO_TRIM",
    "ELBO_WINDOW_FRACTION",
    "ESS_PER_CHAIN",
    "N_DIAGNOSTIC_POINTS",
    "RHAT_THRESHOLD",
    "diagnose",
    "warn_diagnostics",
    "with_diagnostics",
]

# Thresholds of :func:`diagnose`; the reasoning is in its docstring.
#: VI: each of the two compared windows holds this fraction of the steps ...
ELBO_WINDOW_FRACTION = 0.1
#: ... but at least this many steps (fewer when the run is shorter than twice that).
ELBO_MIN_WINDOW = 200
#: VI: the windows' levels are means without this fraction of the lowest and of the
#: highest losses (one spike of a heavy-tailed minibatch loss would move a plain mean).
ELBO_TRIM = 0.1
#: VI: a run shorter than this cannot be judged (it is reported as not converged).
ELBO_MIN_STEPS = 20
#: VI: a decrease counts as real only beyond this many standard errors of the noise.
ELBO_NOISE_Z = 3.0
#: VI: ... and matters only when larger than this fraction of the loss.
ELBO_RELATIVE_TOL = 0.01
#: NUTS: largest acceptable rank-normalised split R-hat (Vehtari et al. 2021).
RHAT_THRESHOLD = 1.01
#: NUTS: smallest acceptable bulk and tail ESS, per chain (Vehtari et al. 2021).
ESS_PER_CHAIN = 100
#: NUTS: R-hat and ESS are computed at (at most) this many training points.
N_DIAGNOSTIC_POINTS = 50
#: NUTS: tail ESS is the smaller ESS of the 5% and 95% quantiles (Vehtari et al. 2021).
_TAIL_PROB = 0.05

_VI_LABELS = {"advi": "ADVI", "fullrank_advi": "Full-rank ADVI"}


def diagnose(posterior: Posterior, *, X: np.ndarray | None = None, groups=None) -> dict:
    """Convergence diagnostics of a fitted posterior.

    :func:`fit` and :func:`sample_more` call this once per run, store the result as
    ``Posterior.diagnostics`` (the estimators copy it to ``diagnostics_``) and warn
    when a check fails (``sklearn.exceptions.ConvergenceWarning`` for VI,
    :class:`SamplingWarning` for NUTS). Call it directly to re-check, e.g. a loaded
    NUTS posterior at its training points.

    **VI** (``"advi"``, ``"fullrank_advi"``): did the ELBO level off? The loss history
    ends with two windows, the last ``max(200, 10%)`` steps (at most half the run) and
    as many before them. The level of each is its 10%-trimmed mean (``ELBO_TRIM``:
    the mean without the lowest and the highest 10% of its losses, so that a few
    spikes of a heavy-tailed minibatch loss do not fake a fall; ~6% less efficient
    than the mean for Gaussian noise). The run has *not* converged when the level of
    the last window is lower than that of the one before both

    - by more than 3 standard errors (``ELBO_NOISE_Z``) of the difference of the two
      levels (taken as that of plain means). The noise level is estimated from the
      loss itself, robustly: 1.4826 x the median absolute deviation of the
      step-to-step differences, / sqrt(2). Differences remove the trend; the median
      ignores the heavy tails of ADVI's one-sample ELBO estimate (and of minibatch
      estimates, ~4x noisier on moons at 50 of 500 rows). 3 rather than 2 because
      window levels vary more than independent noise says: the parameters wander
      under Adam's constant step (on moons a default run's loss *rose* by 2.7 such
      standard errors between its last two windows), and
    - by more than 1% of the loss (``ELBO_RELATIVE_TOL``; relative to
      ``max(|final_loss|, 1)``, the loss being in nats): above every default
      full-batch fit on moons and below every 1,000-step fit (the measurement:
      ``research/notes/code-measurements.md``, "ELBO convergence thresholds").

    Both are needed to flag a run: a decrease within the noise (minibatch runs) is no
    evidence of progress, and a significant decrease smaller than 1% of the loss (long
    runs on large data sets, whose mean loss is known very precisely) does not call
    for more steps. Runs of fewer than 20 steps cannot be judged and count as not
    converged. Plateaus (a loss flat for thousands of steps before a drop) cannot be
    told from convergence by any such test.

    **NUTS**: the number of divergent transitions (``sample_stats["diverging"]``), and
    R-hat and ESS of *predictive quantities*, the network's outputs at up to 50 of the
    training points (rows ``linspace(0, n - 1, 50)``, rounded): the logit for two
    classes, the logits centred over classes for more (softmax identifies only
    those), the mean for regression (standardised units). Not of the weights: hidden
    units can be permuted and a tanh unit's signs flipped without changing the
    network, so chains that found equivalent modes disagree on every weight while
    agreeing on every prediction. R-hat is ArviZ's rank-normalised split R-hat, ESS
    ArviZ's bulk ESS and tail ESS (the smaller of the 5% and 95% quantiles' ESS), with
    the thresholds of Vehtari et al. (2021, Bayesian Analysis 16(2), "Rank-
    normalization, folding, and localization: an improved R-hat for assessing
    convergence of MCMC"): R-hat <= 1.01 and ESS >= 100 per chain, for every quantity.
    A check that cannot be run (R-hat of one chain; R-hat and ESS without points) is
    reported as None and does not count.

    Parameters
    ----------
    posterior : Posterior
        From :func:`fit` or :func:`sample_more`, or a loaded one.
    X : array of shape (n_points, n_features), optional
        NUTS only: the points at which the outputs are checked, normally the training
        data (at most 50 evenly spaced rows are used). Default: the model's training
        data when ``posterior.model`` is set (a NUTS fit in this process), else none
        (only divergences are checked).
    groups : int array of shape (n_points,), optional
        NUTS, hierarchical networks: group codes of the rows of ``X`` (-1 or omitted:
        population-level weights). With ``X`` omitted, the model's groups.

    Returns
    -------
    dict
        Plain JSON-able values (str, int, float, bool or None). Always ``"method"``,
        ``"converged"`` (bool: no check failed) and ``"message"`` (which checks failed
        and what to do; ``""`` when converged).

        VI: ``"n_steps"``; ``"window"`` (steps per window); ``"final_loss"`` and
        ``"previous_loss"`` (trimmed mean loss of the last window and of the one
        before);
        ``"decrease"`` (``previous_loss - final_loss``, > 0 while falling);
        ``"relative_decrease"`` (``decrease / max(|final_loss|, 1)``); ``"noise_se"``
        (standard error of ``decrease``); ``"z"`` (``decrease / noise_se``; None when
        the loss is constant); the thresholds ``"z_threshold"`` and
        ``"relative_threshold"``. Statistics are None for runs shorter than 20 steps.

        NUTS: ``"n_chains"``, ``"n_draws"`` (per chain), ``"n_divergences"`` (None if
        the sampler reported none); ``"quantity"`` (``"logit"``, ``"centred_logit"``
        or ``"mean"``), ``"n_points"``, ``"n_quantities"`` (points x outputs);
        ``"max_rhat"``, ``"min_ess_bulk"``, ``"min_ess_tail"`` over the quantities;
        the thresholds ``"rhat_threshold"`` (1.01) and ``"ess_threshold"``
        (100 x chains).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import build_model, fit
    >>> from pymc_bnn.inference import diagnose
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> post = fit(build_model(X, y, hidden_layer_sizes=(3,), random_state=0), n_iter=5000,
    ...            random_seed=0)
    >>> d = diagnose(post)
    >>> d == dict(post.diagnostics), d["n_steps"], d["window"], d["converged"]
    (True, 5000, 500, True)
    """
    if not isinstance(posterior, Posterior):
        raise TypeError(
            f"posterior must be a Posterior (from pymc_bnn.fit); got {type(posterior).__name__}."
        )
    if posterior.method in _VI_LABELS:
        return _diagnose_vi(posterior.method, posterior.loss)
    if posterior.idata is None:
        raise ValueError("this NUTS posterior holds no draws to diagnose.")
    return _diagnose_nuts(posterior, X, groups)


def _diagnose_vi(method: str, loss) -> dict:
    loss = np.asarray(loss, dtype=np.float64)
    n = int(loss.size)
    out = {
        "method": method,
        "converged": False,
        "message": "",
        "n_steps": n,
        "window": 0,
        "final_loss": None,
        "previous_loss": None,
        "decrease": None,
        "relative_decrease": None,
        "noise_se": None,
        "z": None,
        "z_threshold": ELBO_NOISE_Z,
        "relative_threshold": ELBO_RELATIVE_TOL,
    }
    label = _VI_LABELS[method]
    if n < ELBO_MIN_STEPS:
        out["message"] = (
            f"{label} ran only {n} step{'s' * (n != 1)}, too few to tell whether the ELBO "
            f"levelled off (at least {ELBO_MIN_STEPS} are needed); increase n_iter."
        )
        return out
    from scipy.stats import trim_mean

    w = min(max(ELBO_MIN_WINDOW, int(ELBO_WINDOW_FRACTION * n)), n // 2)
    last, previous = loss[n - w :], loss[n - 2 * w : n - w]
    final = float(trim_mean(last, ELBO_TRIM))
    prev = float(trim_mean(previous, ELBO_TRIM))
    decrease = prev - final
    relative = decrease / max(abs(final), 1.0)
    steps = np.diff(loss[n - 2 * w :])
    noise_sd = 1.4826 * float(np.median(np.abs(steps - np.median(steps)))) / np.sqrt(2.0)
    se = noise_sd * np.sqrt(2.0 / w)  # of the difference of two means of w steps
    z = decrease / se if se > 0 else None
    significant = decrease > ELBO_NOISE_Z * se
    converged = not (significant and relative > ELBO_RELATIVE_TOL)
    out.update(
        converged=bool(converged),
        window=int(w),
        final_loss=final,
        previous_loss=prev,
        decrease=float(decrease),
        relative_decrease=float(relative),
        noise_se=float(se),
        z=None if z is None else float(z),
    )
    if not converged:
        sigmas = "" if z is None else f", {z:.1f} standard errors of its step-to-step noise"
        out["message"] = (
            f"{label} stopped before the ELBO levelled off: the loss (negative ELBO) was "
            f"still falling, its (trimmed) mean over the last {w:,} of {n:,} steps "
            f"{relative:.1%} ({decrease:.4g}) below that of the {w:,} steps before{sigmas}. "
            f"Increase n_iter (e.g. to {2 * n:,}) or the learning_rate; the run counts as "
            f"converged when that fall is within {ELBO_NOISE_Z:g} standard errors or below "
            f"{ELBO_RELATIVE_TOL:.0%}."
        )
    return out


def _network_outputs(posterior: Posterior, X: np.ndarray, groups) -> tuple[np.ndarray, str]:
    """The network's outputs at ``X`` for every stored draw: an array of shape
    (chains, draws, n_quantities) and the quantity's name.

    Uses the predictive's compiled forward pass (the same graph as the likelihood)
    with its identity head, in float64 (``PosteriorPredictive._outputs``).
    """
    from pymc_bnn.predictive._predictive import from_idata

    spec = posterior.spec
    post = posterior.idata.posterior
    n_chains, n_draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    # draws stacked chain-major: (n_chains * n_draws, n_points, n_outputs)
    out = from_idata(spec, posterior.idata)._outputs(X, groups)
    if spec.is_regression:
        values, quantity = out[..., 0], "mean"
    elif spec.n_classes == 2:
        values, quantity = out[..., 0], "logit"
    else:
        values, quantity = out - out.mean(axis=-1, keepdims=True), "centred_logit"
    return values.reshape(n_chains, n_draws, -1), quantity


def _diagnostic_rows(n: int) -> np.ndarray:
    """The (at most ``N_DIAGNOSTIC_POINTS``) evenly spaced rows checked by NUTS."""
    return np.unique(np.linspace(0, n - 1, min(n, N_DIAGNOSTIC_POINTS)).round().astype(np.int64))


def _diagnose_nuts(posterior: Posterior, X, groups) -> dict:
    import arviz as az

    spec = posterior.spec
    post = posterior.idata.posterior
    n_chains, n_draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    stats = posterior.idata.children.get("sample_stats")
    n_div = None
    if stats is not None and "diverging" in stats:
        n_div = int(np.asarray(stats["diverging"].values).sum())
    if X is None and posterior.model is not None:
        model = posterior.model
        X = np.asarray(model["X"].get_value())
        if groups is None and "groups" in model.named_vars:
            groups = np.asarray(model["groups"].get_value())
    out = {
        "method": posterior.method,
        "converged": False,
        "message": "",
        "n_chains": n_chains,
        "n_draws": n_draws,
        "n_divergences": n_div,
        "quantity": None,
        "n_points": 0,
        "n_quantities": 0,
        "max_rhat": None,
        "min_ess_bulk": None,
        "min_ess_tail": None,
        "rhat_threshold": RHAT_THRESHOLD,
        "ess_threshold": ESS_PER_CHAIN * n_chains,
    }
    if X is not None:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != spec.n_features or X.shape[0] == 0:
            raise ValueError(
                f"X must have shape (n_points, {spec.n_features}) with n_points >= 1; "
                f"got {X.shape}."
            )
        rows = _diagnostic_rows(X.shape[0])
        if groups is not None:
            groups = np.asarray(groups)
            if groups.shape != (X.shape[0],):
                raise ValueError(
                    f"groups must have shape ({X.shape[0]},), one code per row "
                    f"of X; got {groups.shape}."
                )
            groups = groups[rows]
        values, quantity = _network_outputs(posterior, np.ascontiguousarray(X[rows]), groups)
        # constant quantities (or a single chain) give NaN, with numpy warnings
        with np.errstate(divide="ignore", invalid="ignore"):
            rhat = np.asarray(az.rhat(values, method="rank", chain_axis=0, draw_axis=1))
            bulk = np.asarray(az.ess(values, method="bulk", chain_axis=0, draw_axis=1))
            tail = np.asarray(
                az.ess(values, method="tail", prob=_TAIL_PROB, chain_axis=0, draw_axis=1)
            )
        out.update(
            quantity=quantity,
            n_points=int(rows.size),
            n_quantities=int(values.shape[2]),
            max_rhat=_reduce(np.nanmax, rhat),
            min_ess_bulk=_reduce(np.nanmin, bulk),
            min_ess_tail=_reduce(np.nanmin, tail),
        )
    out["message"] = _nuts_message(out, resumable=posterior.nuts_sampler != "nutpie")
    out["converged"] = out["message"] == ""
    return out


def _reduce(fn, values: np.ndarray) -> float | None:
    """``fn`` over the finite entries as a float, or None when there are none."""
    finite = values[np.isfinite(values)]
    return float(fn(finite)) if finite.size else None


def _nuts_message(d: dict, *, resumable: bool = True) -> str:
    """Which NUTS checks failed, with the numbers and what to do ("" when none did);
    ``resumable``: whether :func:`sample_more` can continue these chains (not nutpie's)."""
    problems, advice = [], []
    total = d["n_chains"] * d["n_draws"]
    if d["n_divergences"]:
        problems.append(f"{d['n_divergences']} divergent transitions in {total:,} draws")
        advice.append(
            "divergences: raise target_accept (pymc_bnn.fit(..., target_accept=0.95)), "
            "lengthen tune, start from ADVI (nuts_init='advi'), or use a smaller "
            "prior_sigma"
        )
    mixing = []
    if d["max_rhat"] is not None and d["max_rhat"] > d["rhat_threshold"]:
        mixing.append(f"R-hat up to {d['max_rhat']:.3f} (> {d['rhat_threshold']:g})")
    low = [
        f"{kind} ESS as low as {d[key]:.0f}"
        for kind, key in (("bulk", "min_ess_bulk"), ("tail", "min_ess_tail"))
        if d[key] is not None and d[key] < d["ess_threshold"]
    ]
    if low:
        mixing.append(f"{' and '.join(low)} (< {d['ess_threshold']}, i.e. 100 per chain)")
    if mixing:
        names = {"logit": "logits", "centred_logit": "centred logits", "mean": "means"}
        problems.append(
            ", ".join(mixing) + f" for the network's {names[d['quantity']]} at "
            f"{d['n_points']} training points"
        )
        advice.append(
            "R-hat/ESS: lengthen tune and draws"
            + (" (or continue the chains with sample_more)" if resumable else "")
            + ", or run more chains"
        )
    if not problems:
        return ""
    return (
        "NUTS draws may not represent the posterior: "
        + "; ".join(problems)
        + ". To do: "
        + "; ".join(advice)
        + "."
    )


def warn_diagnostics(diagnostics, *, stacklevel: int) -> None:
    """Warn with ``diagnostics["message"]`` when a check failed."""
    if diagnostics.get("converged", True) or not diagnostics.get("message"):
        return
    category = SamplingWarning if diagnostics["method"] == "nuts" else ConvergenceWarning
    warnings.warn(diagnostics["message"], category, stacklevel=stacklevel + 1)


def with_diagnostics(posterior: Posterior, *, warn: bool) -> Posterior:
    """``posterior`` with its :func:`diagnose` result, warning (at the caller of the
    public function that called this) when a check failed."""
    diagnostics = diagnose(posterior)
    if warn:
        warn_diagnostics(diagnostics, stacklevel=3)
    return dataclasses.replace(posterior, diagnostics=diagnostics)
