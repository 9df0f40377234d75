"""Fit a model from :func:`pymc_bnn.model.build_model` by ADVI, full-rank ADVI or NUTS.

All three go through PyMC's own machinery (``pm.ADVI`` / ``pm.FullRankADVI`` with
Adam, ``pm.sample`` with the fastest installed NUTS backend). This module adds the
defaults that converge on small BNNs, seeding, a NaN guard with bounded restarts,
an optional convergence stop, and an immutable result.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
from pymc.variational.callbacks import CheckParametersConvergence

from pymc_bnn._validation import (
    check_choice,
    check_positive_float,
    check_positive_int,
)
from pymc_bnn.model import NetworkSpec, network_spec

__all__ = [
    "ENGINES",
    "METHODS",
    "NUTS_INITS",
    "NUTS_SAMPLERS",
    "VI_DEFAULTS",
    "Posterior",
    "default_nuts_sampler",
    "fit",
    "sample_more",
]

#: Inference methods accepted by :func:`fit`.
METHODS = ("advi", "fullrank_advi", "nuts")
#: NUTS implementations PyMC can drive, fastest first (measured on moons, 2 chains x
#: 2000 steps on 2 cores: numpyro 48 s, nutpie 120 s, PyMC 135 s).
NUTS_SAMPLERS = ("numpyro", "nutpie", "pymc")
_NUTS_MODULES = {"numpyro": ("numpyro", "jax"), "nutpie": ("nutpie",), "pymc": ()}
#: Default (n_iter, learning_rate) per VI method. Full-rank ADVI's gradient on the
#: Cholesky factor is much noisier: at 0.01 it wanders (moons: -ELBO ~250, 85%); at
#: 0.003 for 20k steps it reaches ~130 and 96%.
VI_DEFAULTS = {"advi": (10_000, 0.01), "fullrank_advi": (20_000, 0.003)}
#: How NUTS chains start: ``"jitter"`` (PyMC's initial point plus uniform jitter, as
#: ``pm.sample``) or ``"advi"`` (one draw per chain from a quick mean-field ADVI fit).
NUTS_INITS = ("jitter", "advi")


@dataclass(frozen=True)
class Posterior:
    """Result of :func:`fit`: an immutable record of one fitted posterior.

    Attributes
    ----------
    method : str
        ``"advi"``, ``"fullrank_advi"`` or ``"nuts"``.
    spec : NetworkSpec
        Architecture of the fitted network.
    seed : int
        The seed that was used (init jitter, minibatch order, ADVI noise, NUTS).
    approx : pymc Approximation or None
        The variational approximation (VI methods only).
    idata : xarray.DataTree or None
        Stored posterior draws: from NUTS, or from a VI fit whose approximation was
        dropped by pickling / :meth:`BayesianMLPClassifier.save`. ``None`` for a live
        VI fit (draw from ``approx`` instead).
    loss : ndarray of shape (n_steps,)
        Negative ELBO per optimisation step, always in full-data units (a minibatch
        run reports its ``total_size``-scaled estimate of the full-data value). Empty
        for NUTS. Read-only.
    learning_rate : float or None
        Adam learning rate of the run that produced ``approx`` (after any restart).
    nuts_sampler : str or None
        NUTS backend used.
    engine : str or None
        How the VI steps were run: ``"jax"`` (compiled scan) or ``"pymc"`` (pm.fit).
    model : pm.Model or None
        The model NUTS sampled (kept so that :func:`sample_more` can continue the
        chains); None for VI (the approximation holds it) and after loading.
    """

    method: str
    spec: NetworkSpec
    seed: int
    approx: object | None = None
    idata: object | None = None
    loss: np.ndarray = field(default_factory=lambda: np.empty(0))
    learning_rate: float | None = None
    nuts_sampler: str | None = None
    engine: str | None = None
    model: object | None = field(default=None, repr=False, compare=False)

    @property
    def is_variational(self) -> bool:
        """Whether this posterior is a variational approximation."""
        return self.approx is not None

    @property
    def n_stored_draws(self) -> int | None:
        """Number of stored MCMC draws (chains x draws), or None for VI (unlimited)."""
        if self.idata is None:
            return None
        post = self.idata.posterior
        return int(post.sizes["chain"] * post.sizes["draw"])


def default_nuts_sampler() -> str:
    """Return the fastest NUTS backend that is installed (see :data:`NUTS_SAMPLERS`)."""
    for name in NUTS_SAMPLERS:
        if all(importlib.util.find_spec(mod) is not None for mod in _NUTS_MODULES[name]):
            return name
    return "pymc"  # pragma: no cover - "pymc" needs no extra module


def _check_nuts_sampler(name: str | None) -> str:
    if name is None:
        return default_nuts_sampler()
    check_choice("nuts_sampler", name, NUTS_SAMPLERS)
    missing = [m for m in _NUTS_MODULES[name] if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"nuts_sampler={name!r} needs {', '.join(missing)}, which is not installed. "
            f"Install it with: pip install 'pymc_bnn[{'bench' if name == 'numpyro' else name}]'"
            f" (or pip install {' '.join(missing)}), or choose another of {list(NUTS_SAMPLERS)}."
        )
    return name


def _set_initial_spread(approx, init_sigma: float) -> None:
    """Start every variational standard deviation at ``init_sigma``.

    PyMC starts mean-field ADVI at sigma = softplus(0) ~ 0.69 and full-rank ADVI at
    the identity. For a BNN under N(0, 1) priors such wide starting noise drives the
    hidden units to the prior before the means have learned anything (measured on
    moons: final -ELBO ~184 and 84% accuracy, against ~119 and 96% from 0.1).
    """
    for group in approx.groups:
        params = group.params_dict
        if "rho" in params:
            rho = np.full(group.ddim, np.log(np.expm1(init_sigma)))
            params["rho"].set_value(rho.astype(params["rho"].dtype))
        elif "L_tril" in params:
            n = group.ddim
            L = (init_sigma * np.eye(n))[np.tril_indices(n)]
            params["L_tril"].set_value(L.astype(params["L_tril"].dtype))


ENGINES = ("auto", "jax", "pymc")
#: ADVI steps per compiled call of the scan engine (losses, NaN guard and callbacks are
#: checked between calls).
SCAN_CHUNK = 1000


def _check_engine(engine: str) -> str:
    from pymc_bnn._compiled_vi import jax_available

    check_choice("engine", engine, ENGINES)
    if engine == "auto":
        return "jax" if jax_available() else "pymc"
    if engine == "jax" and not jax_available():
        raise ImportError(
            "engine='jax' needs jax, which is not installed. Install it with: "
            "pip install 'pymc_bnn[bench]' (or pip install jax), or use engine='pymc'."
        )
    return engine


def _run_scan(inference, *, n_iter, learning_rate, seed, callbacks, progressbar):
    """ADVI by :class:`pymc_bnn._compiled_vi.ScanADVI`; returns the loss history."""
    from pymc_bnn._compiled_vi import ScanADVI

    runner = ScanADVI(inference, learning_rate=learning_rate, mode="JAX")
    rng = np.random.default_rng(seed)
    losses, done = [], 0
    # PyMC's convergence check reads only the variational parameters; other callbacks
    # may evaluate the model, so they run with the data back in NumPy form.
    params_only = [cb for cb in callbacks if isinstance(cb, CheckParametersConvergence)]
    others = [cb for cb in callbacks if not isinstance(cb, CheckParametersConvergence)]
    try:
        while done < n_iter:
            k = min(SCAN_CHUNK, n_iter - done)
            with runner.data_on_device():
                while True:
                    chunk = runner.run(k, rng)
                    losses.append(chunk)
                    done += k
                    if not np.all(np.isfinite(chunk)):
                        raise FloatingPointError("NaN occurred in optimization.")
                    runner.materialize()
                    for cb in params_only:
                        cb(inference.approx, np.concatenate(losses), done)
                    if progressbar:
                        print(f"ADVI step {done:,}/{n_iter:,}: loss {chunk.mean():,.5g}",
                              flush=True)
                    k = min(SCAN_CHUNK, n_iter - done)
                    if others or k <= 0:
                        break
            for cb in others:
                cb(inference.approx, np.concatenate(losses), done)
    except StopIteration:
        pass
    finally:
        runner.materialize()
    return np.concatenate(losses)


def _fit_vi(model, spec, *, method, n_iter, learning_rate, init_sigma, tol, seed,
            progressbar, backend, callbacks, engine):
    inference_cls = pm.ADVI if method == "advi" else pm.FullRankADVI
    with model:
        inference = inference_cls(random_seed=seed)
    approx = inference.approx
    _set_initial_spread(approx, init_sigma)
    # Report and optimise the full-data ELBO whatever the batch size: Adam is
    # invariant to the constant factor, and loss curves stay comparable.
    approx.scale_cost_to_minibatch = False
    cbs = list(callbacks)
    if tol is not None:
        cbs.append(CheckParametersConvergence(every=100, tolerance=tol))
    if engine == "jax":
        from pymc_bnn._compiled_vi import ScanUnsupported

        try:
            with model:
                loss = _run_scan(inference, n_iter=n_iter, learning_rate=learning_rate,
                                 seed=seed, callbacks=cbs, progressbar=progressbar)
            return approx, loss, "jax"
        except ScanUnsupported as err:  # pragma: no cover - guards future PyMC changes
            warnings.warn(f"compiled ADVI unavailable ({err}); using pm.fit.", RuntimeWarning,
                          stacklevel=3)
    # pm.fit logs "Finished [100%]: Average Loss = ..." even without a progress bar
    log = logging.getLogger("pymc.variational.inference")
    level = log.level
    if not progressbar:
        log.setLevel(logging.WARNING)
    try:
        with model:
            inference.fit(
                n=n_iter,
                obj_optimizer=pm.adam(learning_rate=learning_rate),
                callbacks=cbs,
                progressbar=progressbar,
                backend=backend,
            )
    finally:
        log.setLevel(level)
    loss = np.asarray(inference.hist, dtype=np.float64)
    return approx, loss, "pymc"


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
        Adam step size (VI). Default 0.01 (ADVI) or 0.003 (full-rank ADVI). PyMC's
        default optimiser (adagrad_window) stalls at 86-92% test accuracy on the
        moons benchmark; Adam at these rates reaches ~96%.
    init_sigma : float, default 0.1
        Starting standard deviation of every variational factor (VI).
    tol : float, optional
        If set, stop early once the relative change of the variational parameters
        over 100 steps falls below ``tol`` (PyMC's ``CheckParametersConvergence``).
    draws, tune, chains : int
        NUTS draws and tuning steps per chain, and number of chains.
    nuts_sampler : {"numpyro", "nutpie", "pymc"}, optional
        NUTS backend; default the fastest installed (:func:`default_nuts_sampler`).
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
        JAX call (:mod:`pymc_bnn._compiled_vi`; ~5-10x faster on small networks).
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

    Returns
    -------
    Posterior

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import build_model, fit
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> post = fit(build_model(X, y, hidden_layer_sizes=(3,)), n_iter=200, random_seed=0)
    >>> post.loss.shape
    (200,)
    """
    spec = network_spec(model)
    method = check_choice("method", method, METHODS)
    default_n_iter, default_lr = VI_DEFAULTS.get(method, (1, 1.0))
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
    engine = _check_engine(engine)
    if random_seed is None:
        random_seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
    seed = int(random_seed)

    if method == "nuts":
        sampler = _check_nuts_sampler(nuts_sampler)
        nuts_init = check_choice("nuts_init", nuts_init, NUTS_INITS)
        init_seed, sample_seed = (int(c.generate_state(1)[0] >> 1)
                                  for c in np.random.SeedSequence(seed).spawn(2))
        initvals = None
        if nuts_init == "advi":
            warm = fit(model, method="advi", n_iter=init_n_iter, random_seed=init_seed,
                       engine=engine)
            initvals = _chain_points(model, warm.approx.sample(chains, random_seed=init_seed),
                                     from_draws=True)
            if sampler == "nutpie":  # nutpie takes one start for all chains
                initvals = initvals[0]
        idata = _sample_nuts(model, sampler, draws=draws, tune=tune, chains=chains,
                             seed=sample_seed, initvals=initvals, progressbar=progressbar)
        return Posterior(method=method, spec=spec, seed=seed, idata=idata,
                         nuts_sampler=sampler, model=model)

    lr = learning_rate
    for attempt in range(max_restarts + 1):
        try:
            approx, loss, used_engine = _fit_vi(
                model, spec, method=method, n_iter=n_iter, learning_rate=lr,
                init_sigma=init_sigma, tol=tol, seed=seed, progressbar=progressbar,
                backend=backend, callbacks=callbacks, engine=engine,
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
    return Posterior(method=method, spec=spec, seed=seed, approx=approx, loss=loss,
                     learning_rate=lr, engine=used_engine)


# ----------------------------------------------------------------------------- NUTS
def _numpyro_chain_method(chains: int) -> str:
    import jax

    # numpyro runs chains in parallel only over several XLA devices; say
    # "sequential" up front rather than have it warn and fall back.
    return "parallel" if jax.local_device_count() >= chains else "sequential"


def _sample_nuts(model, sampler, *, draws, tune, chains, seed, initvals, progressbar,
                 nuts=None, step=None):
    """``pm.sample`` with one of PyMC's NUTS backends; returns the DataTree."""
    kwargs = {}
    nuts = dict(nuts or {})
    if sampler == "numpyro":
        nuts.setdefault("chain_method", _numpyro_chain_method(chains))
        if initvals is not None:
            nuts.setdefault("jitter", False)  # start exactly where asked
    elif sampler == "pymc" and initvals is not None:
        kwargs["init"] = "adapt_diag"  # no jitter around the given start
    if nuts:
        kwargs["nuts"] = nuts
    if step is not None:
        kwargs["step"] = step
    with model:
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            nuts_sampler=sampler,
            initvals=initvals,
            random_seed=seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
            **kwargs,
        )


def _chain_points(model, idata, *, from_draws: bool = False) -> list[dict[str, np.ndarray]]:
    """Start points (free variables, constrained values), one per chain: the last draw
    of each chain, or with ``from_draws`` each draw of the first chain (a VI sample)."""
    post = idata.posterior
    names = [rv.name for rv in model.free_RVs]
    if from_draws:
        return [{n: np.asarray(post[n].values[0, i]) for n in names}
                for i in range(post.sizes["draw"])]
    return [{n: np.asarray(post[n].values[c, -1]) for n in names}
            for c in range(post.sizes["chain"])]


def _unconstrained_draws(model, post, chain: int) -> list[np.ndarray]:
    """Draws of one chain in the sampler's space: one (n_draws, size) array per value
    variable, in ``model.value_vars`` order (how PyMC flattens a point for NUTS)."""
    import pytensor.tensor as pt

    out = []
    for value_var in model.value_vars:
        rv = model.values_to_rvs[value_var]
        x = post[rv.name].values[chain]
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            x = transform.forward(pt.as_tensor(x), *rv.owner.inputs).eval()
        out.append(np.asarray(x, dtype=np.float64).reshape(x.shape[0], -1))
    return out


def _resume_plan(posterior) -> list[dict]:
    """Per chain: where to continue and with which NUTS parameters.

    ``start``: the chain's last draw. ``step_size``: its adapted step size (the last
    value in ``sample_stats``). ``inv_mass``: a diagonal inverse mass matrix, the
    variance of the chain's draws in the unconstrained space with the regularisation
    Stan and numpyro apply at the end of warm-up (``n / (n + 5) * var + 1e-3 * 5 /
    (n + 5)``); PyMC's backends do not return the matrix warm-up ended with, so it is
    re-estimated from the draws, the estimator warm-up itself uses.
    """
    idata = posterior.idata
    model = posterior.model
    post = idata.posterior
    stats = idata.sample_stats
    if "step_size" not in stats:
        raise ValueError("the stored draws have no step sizes; cannot continue the chains.")
    starts = _chain_points(model, idata)
    plans = []
    for c, start in enumerate(starts):
        draws = np.concatenate(_unconstrained_draws(model, post, c), axis=1)
        n = draws.shape[0]
        var = draws.var(axis=0) if n > 1 else np.ones(draws.shape[1])
        inv_mass = n / (n + 5.0) * var + 1e-3 * 5.0 / (n + 5.0)
        step_size = float(np.asarray(stats["step_size"].values[c]).reshape(-1)[-1])
        plans.append({"start": start, "step_size": step_size, "inv_mass": inv_mass})
    return plans


def _concat_runs(trees, dim: str):
    """Join the ``posterior`` and ``sample_stats`` of several runs along ``dim``
    (``"chain"`` or ``"draw"``), keeping the variables every run has and numbering
    ``dim`` afresh; other groups (observed data, ...) come from the first run."""
    import xarray as xr

    groups = {}
    for name in ("posterior", "sample_stats"):
        parts = [t[name].to_dataset() for t in trees]
        keep = [v for v in parts[0].data_vars if all(v in p.data_vars for p in parts)]
        joined = xr.concat([p[keep] for p in parts], dim=dim, combine_attrs="override")
        groups[f"/{name}"] = joined.assign_coords({dim: np.arange(joined.sizes[dim])})
    for name in trees[0].children:
        if name not in ("posterior", "sample_stats"):
            groups[f"/{name}"] = trees[0][name].to_dataset()
    return xr.DataTree.from_dict(groups)


def sample_more(
    posterior: Posterior,
    draws: int,
    *,
    tune: int = 0,
    random_seed: int | None = None,
    progressbar: bool = False,
) -> Posterior:
    """Continue the NUTS chains of a fitted posterior and append the new draws.

    Each chain restarts from its last draw with its adapted step size and a diagonal
    mass matrix estimated from its draws (see :func:`_resume_plan`), without further
    adaptation unless ``tune > 0`` (then warm-up runs again from there, seeded with
    those values). Supported backends: numpyro and PyMC (nutpie takes no per-chain
    start points).

    Parameters
    ----------
    posterior : Posterior
        From :func:`fit` with ``method="nuts"`` in this process (``posterior.model``
        set; a loaded posterior has no model).
    draws : int
        New draws per chain.
    tune : int, default 0
        Adaptation steps before the new draws (0: keep the adapted parameters).
    random_seed : int, optional
        Seed of the new draws; default derived from the posterior's seed and length.

    Returns
    -------
    Posterior
        The same run with ``draws`` more draws per chain: ``idata.posterior`` of shape
        (chains, old_draws + draws, ...); the old draws are unchanged.
    """
    draws = check_positive_int("draws", draws)
    tune = check_positive_int("tune", tune, minimum=0)
    if posterior.method != "nuts":
        raise ValueError(f"sample_more continues NUTS chains; this posterior is {posterior.method!r}.")
    if posterior.model is None:
        raise ValueError(
            "this posterior has no model attached (it was loaded from a file or "
            "unpickled); refit to draw more."
        )
    sampler = posterior.nuts_sampler
    if sampler not in ("numpyro", "pymc"):
        raise ValueError(
            f"sample_more supports the numpyro and pymc NUTS backends; this run used {sampler!r}."
        )
    model = posterior.model
    n_old = int(posterior.idata.posterior.sizes["draw"])
    if random_seed is None:
        random_seed = int(np.random.SeedSequence([posterior.seed, n_old]).generate_state(1)[0] >> 1)
    plans = _resume_plan(posterior)
    seeds = [int(c.generate_state(1)[0] >> 1)
             for c in np.random.SeedSequence(int(random_seed)).spawn(len(plans))]
    pieces = []
    for plan, seed in zip(plans, seeds):
        adapt = tune > 0
        if sampler == "numpyro":
            nuts = {"step_size": plan["step_size"], "inverse_mass_matrix": plan["inv_mass"],
                    "adapt_step_size": adapt, "adapt_mass_matrix": adapt}
            idata = _sample_nuts(model, sampler, draws=draws, tune=tune, chains=1, seed=seed,
                                 initvals=plan["start"], progressbar=progressbar, nuts=nuts)
        else:
            with model:
                step = pm.NUTS(vars=model.value_vars, scaling=plan["inv_mass"], is_cov=True,
                               step_scale=plan["step_size"] * len(plan["inv_mass"]) ** 0.25)
            idata = _sample_nuts(model, sampler, draws=draws, tune=tune, chains=1, seed=seed,
                                 initvals=plan["start"], progressbar=progressbar, step=step)
        pieces.append(idata)
    new = _concat_runs(pieces, "chain")
    return dataclasses.replace(posterior, idata=_concat_runs([posterior.idata, new], "draw"))
