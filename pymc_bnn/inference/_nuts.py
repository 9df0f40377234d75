"""NUTS for :func:`pymc_bnn.inference.fit`: the backends (numpyro, nutpie, PyMC) and the
fastest installed one, the chains' start points, and :func:`sample_more`, which
continues a run's chains.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util

import numpy as np

from pymc_bnn._runtime.threads import default_threads
from pymc_bnn.inference.diagnostics import with_diagnostics
from pymc_bnn.inference.posterior import Posterior
from pymc_bnn.network._checks import check_choice, check_positive_int, check_random_seed

__all__ = [
    "NUTS_INITS",
    "NUTS_SAMPLERS",
    "NUTS_SAMPLERS_HIERARCHICAL",
    "chain_points",
    "check_nuts_sampler",
    "default_nuts_sampler",
    "sample_more",
    "sample_nuts",
]

#: NUTS implementations PyMC can drive, fastest first for a plain network (on moons
#: numpyro took well under half of nutpie's or PyMC's time; measurements:
#: research/notes/code-measurements.md).
NUTS_SAMPLERS = ("numpyro", "nutpie", "pymc")
#: ... and for a hierarchical one (``groups=``), whose group scales and per-group
#: deviations are strongly correlated: nutpie's mass-matrix adaptation needs about a
#: third of numpyro's leapfrog steps there, and its chains finish in a fraction of
#: numpyro's time (measurements: research/notes/code-measurements.md).
NUTS_SAMPLERS_HIERARCHICAL = ("nutpie", "numpyro", "pymc")
#: The extra that installs each backend (``pip install 'pymc_bnn[<extra>]'``).
_NUTS_EXTRAS = {"numpyro": "jax", "nutpie": "nutpie"}
_NUTS_MODULES = {"numpyro": ("numpyro", "jax"), "nutpie": ("nutpie",), "pymc": ()}
#: How NUTS chains start: ``"jitter"`` (PyMC's initial point plus uniform jitter, as
#: ``pm.sample``) or ``"advi"`` (one draw per chain from a quick mean-field ADVI fit).
NUTS_INITS = ("jitter", "advi")


def default_nuts_sampler(*, hierarchical: bool = False) -> str:
    """Return the fastest installed NUTS backend for a plain network
    (:data:`NUTS_SAMPLERS`) or a hierarchical one (:data:`NUTS_SAMPLERS_HIERARCHICAL`).

    Examples
    --------
    >>> default_nuts_sampler() in NUTS_SAMPLERS
    True
    """
    for name in NUTS_SAMPLERS_HIERARCHICAL if hierarchical else NUTS_SAMPLERS:
        if all(importlib.util.find_spec(mod) is not None for mod in _NUTS_MODULES[name]):
            return name
    return "pymc"  # pragma: no cover - "pymc" needs no extra module


def check_nuts_sampler(name: str | None, *, hierarchical: bool = False) -> str:
    if name is None:
        return default_nuts_sampler(hierarchical=hierarchical)
    check_choice("nuts_sampler", name, NUTS_SAMPLERS)
    missing = [m for m in _NUTS_MODULES[name] if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"nuts_sampler={name!r} needs {', '.join(missing)}, which is not installed. "
            f"Install it with: pip install 'pymc_bnn[{_NUTS_EXTRAS[name]}]'"
            f" (or pip install {' '.join(missing)}), or choose another of {list(NUTS_SAMPLERS)}."
        )
    return name


def _numpyro_chain_method(chains: int, *, progressbar: bool = False):
    """How numpyro runs ``chains`` chains: ``"parallel"`` (``pmap``) where there is an
    XLA device for each; else one chain per thread (:class:`ThreadedChains`) where the
    package may use several threads and no progress bar was asked for (numpyro
    shows none for a callable ``chain_method``); else ``"sequential"``."""
    import jax

    if jax.local_device_count() >= chains:
        return "parallel"
    n_threads = min(chains, default_threads())
    if n_threads > 1 and not progressbar:
        return ThreadedChains(n_threads)
    return "sequential"


class ThreadedChains:
    """numpyro's ``chain_method`` as a callable: ``ThreadedChains(n)(f)(xs)`` runs
    ``f`` on each chain's slice of ``xs`` (the leading axis), ``n`` at a time in
    threads, and stacks the results, as numpyro's ``"sequential"`` does in a loop.

    Why: on a CPU JAX has one device, so numpyro's ``"parallel"`` falls back to one
    chain after another and a second core sits idle. Each chain's sampling loop is one
    compiled XLA call, which releases the GIL, so chains in threads overlap. Each
    chain draws only from its own key and start, so the draws are those of
    ``"sequential"`` (tested); on two cores about half its time (measurements:
    research/notes/uci_regression.md, "NUTS on the small tables").
    """

    def __init__(self, n_threads: int):
        self.n_threads = check_positive_int("n_threads", n_threads)
        self.calls = 0  # chains run through this object (what tests check was taken)

    def __call__(self, f):
        from concurrent.futures import ThreadPoolExecutor, as_completed

        import jax
        import jax.numpy as jnp

        from pymc_bnn._runtime.progress import chain_done

        def one_chain(x):
            # JAX dispatches asynchronously: without the wait a thread would return at
            # once and start its next chain, so that all chains ran at the same time on
            # the cores and slowed one another (four chains on two cores: 1.5x the time)
            return jax.block_until_ready(f(x))

        def run(xs):
            n = jax.tree.flatten(xs)[0][0].shape[0]
            parts = [jax.tree.map(lambda x, i=i: x[i], xs) for i in range(n)]
            pool = ThreadPoolExecutor(max_workers=min(n, self.n_threads))
            try:
                futures = [pool.submit(one_chain, part) for part in parts]
                for future in as_completed(futures):  # the fit's progress counts chains
                    future.result()
                    chain_done()
                ys = [future.result() for future in futures]
            except BaseException:  # Ctrl-C: do not wait for the running chains here
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
            self.calls += n
            return jax.tree.map(lambda *a: jnp.stack(a), *ys)

        return run


def sample_nuts(
    model, sampler, *, draws, tune, chains, seed, initvals, progressbar, nuts=None, step=None
):
    """``pm.sample`` with one of PyMC's NUTS backends; returns the DataTree.

    nutpie: the same sampling through a cache of compiled models
    (:func:`pymc_bnn.inference._compiled_nuts.sample_nutpie`), so that a later fit of the same
    structure does not compile again; the same draws as ``pm.sample`` (tested)."""
    import pymc as pm

    if sampler == "nutpie" and step is None:
        from pymc_bnn.inference._compiled_nuts import sample_nutpie

        return sample_nutpie(
            model,
            draws=draws,
            tune=tune,
            chains=chains,
            seed=seed,
            initvals=initvals,
            progressbar=progressbar,
            nuts=nuts,
        )
    kwargs = {}
    nuts = dict(nuts or {})
    if sampler == "numpyro":
        from pymc_bnn._runtime.compile_cache import enable

        enable()  # a second process reads the sampler's XLA programs back from disk
        nuts.setdefault("chain_method", _numpyro_chain_method(chains, progressbar=progressbar))
        if initvals is not None:
            nuts.setdefault("jitter", False)  # start exactly where asked
    elif sampler == "pymc" and initvals is not None:
        kwargs["init"] = "adapt_diag"  # no jitter around the given start
    if nuts:
        kwargs["nuts"] = nuts
    if step is not None:
        kwargs["step"] = step
    with model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            nuts_sampler=sampler,
            initvals=initvals,
            random_seed=seed,
            progressbar=progressbar,
            # without a progress bar, no "NUTS[numpyro]: [...]" / "Sampling 2 chains"
            # lines either (as pm.fit's "Finished" line in inference.vi): a fit is
            # silent unless asked; its diagnostics are in diagnostics_ (and a warning)
            quiet=not progressbar,
            compute_convergence_checks=False,
            **kwargs,
        )
    if sampler == "numpyro":
        _release_compiled_programs()
    return idata


def _release_compiled_programs():
    """Drop JAX's in-memory compiled programs after a numpyro run.

    Every run jits new closures (PyMC's log density, numpyro's sampling loop) that
    JAX's caches keep for the life of the process: 90 MiB a fit with the chains one
    after another, ~300 MiB with them in threads (a (20,) network on 200 rows), until a
    process of repeated fits (a benchmark, a cross-validation) ran out of memory
    (research/notes/uci_regression.md). Clearing them holds the process at its size
    (measured: 619-641 MiB over four fits); the cost is that other compiled JAX
    programs compile again on their next call (from the persistent cache where
    :mod:`pymc_bnn._runtime.compile_cache` enabled it)."""
    import jax

    jax.clear_caches()


def chain_points(model, idata, *, from_draws: bool = False) -> list[dict[str, np.ndarray]]:
    """Start points (free variables, constrained values), one per chain: the last draw
    of each chain, or with ``from_draws`` each draw of the first chain (a VI sample)."""
    post = idata.posterior
    names = [rv.name for rv in model.free_RVs]
    if from_draws:
        return [
            {n: np.asarray(post[n].values[0, i]) for n in names} for i in range(post.sizes["draw"])
        ]
    return [
        {n: np.asarray(post[n].values[c, -1]) for n in names} for c in range(post.sizes["chain"])
    ]


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
    starts = chain_points(model, idata)
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


@contextlib.contextmanager
def _fitted_data(model, idata):
    """Within the block, ``model``'s data containers hold the data the chains were
    fitted on (``idata``'s ``constant_data``); on exit (also on an error) the values
    they held before.

    Why: a user who predicted through the model (``pm.set_data({"X": X_new, ...})``)
    leaves the new rows in it, and continuing the chains on them samples another
    posterior, silently (training accuracy 0.98 -> 0.50). Containers already holding
    the fitted values are left untouched.
    """
    fitted = idata.children.get("constant_data")
    stored = set() if fitted is None else set(fitted.data_vars)
    # the fit's own data must be there; a container added to the model since (for
    # predictions, say) is not the fit's and is left as it is
    names = [v.name for v in model.data_vars]
    missing = [n for n in ("X", "y", "groups") if n in names and n not in stored]
    if missing:
        raise ValueError(
            f"the data the chains were fitted on are not stored with the draws (no "
            f"constant_data for {', '.join(missing)}); sample_more will not continue them "
            "on whatever data the model holds now. Refit instead."
        )
    saved = {}
    try:
        for var in (v for v in model.data_vars if v.name in stored):
            current = var.get_value()
            value = np.asarray(fitted[var.name].values)
            if current.shape == value.shape and np.array_equal(current, value):
                continue
            saved[var] = current
            var.set_value(value.astype(current.dtype))
        yield
    finally:
        for var, value in saved.items():
            var.set_value(value)


def sample_more(
    posterior: Posterior,
    draws: int,
    *,
    tune: int = 0,
    random_seed: int | None = None,
    progressbar: bool = False,
    warn: bool = True,
) -> Posterior:
    """Continue the NUTS chains of a fitted posterior and append the new draws.

    Each chain restarts from its last draw with its adapted step size and a diagonal
    mass matrix estimated from its draws (see :func:`_resume_plan`), without further
    adaptation unless ``tune > 0`` (then warm-up runs again from there, seeded with
    those values). Supported backends: numpyro and PyMC (nutpie takes no per-chain
    start points). The chains continue on the data they were fitted on (stored with
    the draws, ``constant_data``), whatever data the model holds now (after
    ``pm.set_data`` for predictions, say), and the model's data are as before afterwards.

    Parameters
    ----------
    posterior : Posterior
        From :func:`fit` with ``method="nuts"`` in this process (``posterior.model``
        set; a loaded posterior has no model).
    draws : int
        New draws per chain.
    tune : int, default 0
        Adaptation steps before the new draws (0: keep the adapted parameters).
    random_seed : int in 0 .. 2**32 - 1, optional
        Seed of the new draws; default derived from the posterior's seed and length.
    warn : bool, default True
        Warn (:class:`SamplingWarning`) when the diagnostics of all the draws fail.

    Returns
    -------
    Posterior
        The same run with ``draws`` more draws per chain: ``idata.posterior`` of shape
        (chains, old_draws + draws, ...); the old draws are unchanged.
        ``diagnostics`` are recomputed over all draws (:func:`diagnose`).
    """
    draws = check_positive_int("draws", draws)
    tune = check_positive_int("tune", tune, minimum=0)
    random_seed = check_random_seed(random_seed)
    if posterior.method != "nuts":
        raise ValueError(
            f"sample_more continues NUTS chains; this posterior is {posterior.method!r}."
        )
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
    seeds = [
        int(c.generate_state(1)[0] >> 1)
        for c in np.random.SeedSequence(int(random_seed)).spawn(len(plans))
    ]
    with _fitted_data(model, posterior.idata):
        more = _continue_chains(
            posterior, sampler, plans, seeds, draws=draws, tune=tune, progressbar=progressbar
        )
        # diagnosed at the model's data, which here are the fitted ones
        return with_diagnostics(more, warn=warn)


def _continue_chains(posterior, sampler, plans, seeds, *, draws, tune, progressbar):
    """:func:`sample_more`'s runs, one chain at a time, on the model's current data:
    the posterior with the new draws appended."""
    import pymc as pm

    model = posterior.model
    pieces = []
    for plan, seed in zip(plans, seeds):
        adapt = tune > 0
        if sampler == "numpyro":
            nuts = {
                "step_size": plan["step_size"],
                "inverse_mass_matrix": plan["inv_mass"],
                "adapt_step_size": adapt,
                "adapt_mass_matrix": adapt,
            }
            idata = sample_nuts(
                model,
                sampler,
                draws=draws,
                tune=tune,
                chains=1,
                seed=seed,
                initvals=plan["start"],
                progressbar=progressbar,
                nuts=nuts,
            )
        else:
            with model:
                step = pm.NUTS(
                    vars=model.value_vars,
                    scaling=plan["inv_mass"],
                    is_cov=True,
                    step_scale=plan["step_size"] * len(plan["inv_mass"]) ** 0.25,
                )
            idata = sample_nuts(
                model,
                sampler,
                draws=draws,
                tune=tune,
                chains=1,
                seed=seed,
                initvals=plan["start"],
                progressbar=progressbar,
                step=step,
            )
        pieces.append(idata)
    new = _concat_runs(pieces, "chain")
    return dataclasses.replace(posterior, idata=_concat_runs([posterior.idata, new], "draw"))
