"""Fit a model from :func:`pymc_bnn.network.model.build_model` by ADVI, full-rank ADVI or NUTS:
:func:`fit`, which checks the arguments, seeds the run, restarts a diverged VI fit and
returns a :class:`~pymc_bnn.inference.posterior.Posterior` with its diagnostics.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pymc_bnn.inference._nuts import NUTS_INITS, chain_points, check_nuts_sampler, sample_nuts
from pymc_bnn.inference._vi import MINIBATCH_ADVI_LEARNING_RATE, VI_DEFAULTS, check_engine, fit_vi
from pymc_bnn.inference.diagnostics import with_diagnostics
from pymc_bnn.inference.posterior import Posterior
from pymc_bnn.network._checks import (
    check_choice,
    check_positive_float,
    check_positive_int,
    check_random_seed,
)
from pymc_bnn.network.model import network_spec

if TYPE_CHECKING:
    import pymc as pm

__all__ = ["METHODS", "fit"]

#: Inference methods accepted by :func:`fit`.
METHODS = ("advi", "fullrank_advi", "nuts")


def _params_finite(approx) -> bool:
    return all(np.all(np.isfinite(p.get_value())) for p in approx.params)


def fit(
    model: pm.Model,
    *,
    method: str = "advi",
    n_iter: int | None = None,
    learning_rate: float | None = None,
    init_sigma: float = 0.1,
    tol: float | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    nuts_sampler: str | None = None,
    random_seed: int | None = None,
    progressbar: bool = False,
    backend: str | None = None,
    max_restarts: int = 2,
    callbacks: Sequence = (),
    engine: str = "auto",
    nuts_init: str = "jitter",
    init_n_iter: int = 5_000,
    target_accept: float | None = None,
    warn: bool = True,
    minibatch_source=None,
) -> Posterior:
    """Fit the posterior of a Bayesian MLP.

    Parameters
    ----------
    model : pm.Model
        A model from :func:`pymc_bnn.build_model`.
    method : {"advi", "fullrank_advi", "nuts"}, default "advi"
    n_iter : int, optional
        Optimisation steps (VI). Default 10,000 (ADVI) or 20,000 (full-rank ADVI).
    learning_rate : float, optional
        Adam step size (VI). Default 0.01 (ADVI) or 0.003 (full-rank ADVI); 0.03 for
        ADVI on a minibatch model (:data:`MINIBATCH_ADVI_LEARNING_RATE`). On a
        minibatch model the step size is held for the first half of the steps and then
        lowered geometrically to a tenth (:func:`minibatch_learning_rate`). PyMC's
        default optimiser (adagrad_window) stalls at 86-92% test accuracy on the
        moons benchmark; Adam at these rates reaches ~96%.
    init_sigma : float, default 0.1
        Starting standard deviation of every variational factor (VI).
    tol : float, optional
        If set, stop early once the largest relative change of any single
        variational parameter over 100 steps falls below ``tol`` (PyMC's
        ``CheckParametersConvergence``, its default ``diff="relative"``, ``ord=inf``).
        Parameters near zero keep that change large, so on BNNs only a loose ``tol``
        (around 1) stops a run early; the fit's ELBO check (``diagnostics``) says
        whether a run of ``n_iter`` steps levelled off.
    draws, tune, chains : int
        NUTS draws and tuning steps per chain, and number of chains. nutpie cannot run
        without tuning: there ``tune=0`` runs one tuning step.
    nuts_sampler : {"numpyro", "nutpie", "pymc"}, optional
        NUTS backend; default the fastest installed for the model, plain or
        hierarchical (:func:`default_nuts_sampler`).
    random_seed : int, optional
        Seed of everything random in the fit.
    progressbar : bool, default False
    backend : str, optional
        PyTensor backend for the VI step function ("numba", "c", "jax"); default
        PyTensor's own default.
    max_restarts : int, default 2
        If the ELBO becomes NaN, restart from scratch with a 10x smaller learning rate
        (with a warning) at most this many times, then raise ``FloatingPointError``.
    callbacks : sequence of callables
        Extra PyMC VI callbacks ``f(approx, losses, i)``; called after every step by
        the ``"pymc"`` engine, after every chunk of 1,000 steps by ``"jax"``.
    engine : {"auto", "jax", "pymc"}, default "auto"
        How VI steps are run. ``"pymc"``: ``pm.fit``'s loop, one compiled call per step.
        ``"jax"``: the same PyMC objective and Adam updates, 1,000 steps per compiled
        JAX call (:mod:`pymc_bnn.inference._compiled_vi`; ~5-10x faster on small networks),
        compiled once per model structure: a later fit whose model has the same
        log-density graph (other data, prior scale, learning rate or seed) reuses it.
        ``"auto"``: ``"jax"`` when jax is installed, else ``"pymc"``.
    nuts_init : {"jitter", "advi"}, default "jitter"
        How NUTS chains start. ``"jitter"``: PyMC's default (the model's initial
        point plus uniform jitter). ``"advi"``: a warm start, as the TensorFlow
        Probability BNN guide recommends: fit mean-field ADVI for ``init_n_iter``
        steps and start each chain from its own draw of the approximation (nutpie:
        one draw for all chains), so that warm-up begins in the bulk of the posterior
        instead of far out in the prior.
    init_n_iter : int, default 5000
        ADVI steps of the warm start.
    target_accept : float in (0, 1), optional
        NUTS: the acceptance rate step-size adaptation aims at; None: the backend's
        default (0.8). Higher values (0.9-0.99) take smaller steps, which removes
        divergences in curved regions at the cost of longer trajectories.
    warn : bool, default True
        Warn when the run's diagnostics fail (:func:`diagnose`): a
        ``sklearn.exceptions.ConvergenceWarning`` when VI stopped before the ELBO
        levelled off, a :class:`SamplingWarning` for NUTS divergences, R-hat or ESS.
    minibatch_source : object, optional
        Minibatch ADVI on data that are not in the model's containers (e.g. larger than
        memory): an object whose ``fill(rng, rows)`` writes each step's rows of every
        minibatch container (X, y) into the arrays ``rows`` of shape
        (n_steps, batch_size, ...), such as :class:`pymc_bnn.dask.BlockSampler`. The
        model is then built on a placeholder sample with ``total_size`` the full row
        count. Needs ``method="advi"`` or ``"fullrank_advi"``, a minibatch model and the
        compiled engine (jax).

    Returns
    -------
    Posterior
        With ``diagnostics`` from :func:`diagnose` (NUTS: at the model's training
        data).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import build_model, fit
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> post = fit(build_model(X, y, hidden_layer_sizes=(3,), random_state=0), n_iter=3000,
    ...            random_seed=0)
    >>> post.loss.shape, post.diagnostics["converged"]
    ((3000,), True)
    """
    from pymc_bnn._runtime.compile_cache import keep_generated_source

    keep_generated_source()  # PyTensor's generated source in the cache, not in /tmp
    spec = network_spec(model)
    method = check_choice("method", method, METHODS)
    default_n_iter, default_lr = VI_DEFAULTS.get(method, (1, 1.0))
    if method == "advi" and spec.batch_size is not None:
        default_lr = MINIBATCH_ADVI_LEARNING_RATE
    n_iter = check_positive_int("n_iter", default_n_iter if n_iter is None else n_iter)
    learning_rate = check_positive_float(
        "learning_rate", default_lr if learning_rate is None else learning_rate
    )
    init_sigma = check_positive_float("init_sigma", init_sigma)
    if tol is not None:
        tol = check_positive_float("tol", tol)
    draws = check_positive_int("draws", draws)
    tune = check_positive_int("tune", tune, minimum=0)
    chains = check_positive_int("chains", chains)
    max_restarts = check_positive_int("max_restarts", max_restarts, minimum=0)
    init_n_iter = check_positive_int("init_n_iter", init_n_iter)
    if target_accept is not None and (
        isinstance(target_accept, bool)
        or not isinstance(target_accept, float | int)
        or not 0 < target_accept < 1
    ):
        raise ValueError(f"target_accept must be a number in (0, 1); got {target_accept!r}.")
    engine = check_engine(engine)
    if method == "nuts" and spec.batch_size is not None:
        # NUTS needs the exact log density: on pm.Minibatch slices numpyro failed deep
        # in its tracing, nutpie with an AttributeError, and PyMC silently sampled a
        # random minibatch's log density
        raise ValueError(
            f"method='nuts' needs a full-batch model; this one was built with "
            f"batch_size={spec.batch_size}. Build it without batch_size."
        )
    if minibatch_source is not None and (
        method == "nuts" or spec.batch_size is None or engine != "jax"
    ):
        raise ValueError(
            "minibatch_source needs ADVI on a minibatch model (batch_size) "
            "with the compiled engine (jax installed, engine='auto' or 'jax')."
        )
    if random_seed is None:
        random_seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
    seed = check_random_seed(random_seed)

    if method == "nuts":
        sampler = check_nuts_sampler(nuts_sampler, hierarchical=spec.hierarchical)
        nuts_init = check_choice("nuts_init", nuts_init, NUTS_INITS)
        init_seed, sample_seed = (
            int(c.generate_state(1)[0] >> 1) for c in np.random.SeedSequence(seed).spawn(2)
        )
        initvals = None
        if nuts_init == "advi":
            # only a start point: whether its ELBO levelled off does not matter
            warm = fit(
                model,
                method="advi",
                n_iter=init_n_iter,
                random_seed=init_seed,
                engine=engine,
                warn=False,
            )
            initvals = chain_points(
                model, warm.approx.sample(chains, random_seed=init_seed), from_draws=True
            )
            if sampler == "nutpie":  # nutpie takes one start for all chains
                initvals = initvals[0]
        nuts = None if target_accept is None else {"target_accept": float(target_accept)}
        idata = sample_nuts(
            model,
            sampler,
            draws=draws,
            tune=tune,
            chains=chains,
            seed=sample_seed,
            initvals=initvals,
            progressbar=progressbar,
            nuts=nuts,
        )
        posterior = Posterior(
            method=method, spec=spec, seed=seed, idata=idata, nuts_sampler=sampler, model=model
        )
        return with_diagnostics(posterior, warn=warn)

    lr = learning_rate
    for attempt in range(max_restarts + 1):
        try:
            approx, loss, used_engine = fit_vi(
                model,
                spec,
                method=method,
                n_iter=n_iter,
                learning_rate=lr,
                init_sigma=init_sigma,
                tol=tol,
                seed=seed,
                progressbar=progressbar,
                backend=backend,
                callbacks=callbacks,
                engine=engine,
                minibatch_source=minibatch_source,
            )
            if _params_finite(approx):
                break
            reason = "the variational parameters became NaN or infinite"
        except FloatingPointError:
            reason = "the ELBO became NaN"
        if attempt == max_restarts:
            raise FloatingPointError(
                f"{method} diverged: {reason} (learning rates tried down to {lr:g}). "
                "Standardise the features (e.g. sklearn's StandardScaler), lower "
                "learning_rate, or use a smaller prior_sigma."
            )
        warnings.warn(
            f"{method} diverged ({reason}) at learning_rate={lr:g}; restarting with "
            f"learning_rate={lr / 10:g}.",
            RuntimeWarning,
            stacklevel=2,
        )
        lr /= 10
    loss.setflags(write=False)
    posterior = Posterior(
        method=method,
        spec=spec,
        seed=seed,
        approx=approx,
        loss=loss,
        learning_rate=lr,
        engine=used_engine,
    )
    return with_diagnostics(posterior, warn=warn)
