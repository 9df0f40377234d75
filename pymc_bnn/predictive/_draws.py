"""Weight draws from a fitted posterior: tempering, and fast draws from a VI approximation.

:func:`posterior_draws` gives a fitted :class:`~pymc_bnn.inference.Posterior`'s draws as
an ArviZ DataTree: fresh draws from a variational approximation (optionally tempered,
:func:`tempered`), or an MCMC fit's stored draws. For the models
:func:`pymc_bnn.network.model.build_model` builds, VI draws come from a sampler compiled once
per approximation *structure* (:func:`vi_draws`; equal to PyMC's ``approx.sample``,
tested), not from the two functions ``approx.sample`` compiles on every call.
:func:`pymc_bnn.predictive.posterior_predictive` turns these draws into a
:class:`~pymc_bnn.predictive.PosteriorPredictive`.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import threading
import weakref
from numbers import Real

import numpy as np
import pytensor
import pytensor.tensor as pt

__all__ = [
    "check_n_draws",
    "check_temperature",
    "fast_draws_apply",
    "posterior_draws",
    "tempered",
    "vi_draws",
]


def check_n_draws(n_draws, *, allow_none: bool):
    """Validate a number of draws: a positive integer (or None where ``allow_none``)."""
    if n_draws is None and allow_none:
        return None
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}.")
    return int(n_draws)


def check_temperature(temperature) -> float:
    """Validate a posterior temperature: a positive, finite number."""
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, Real)
        or not np.isfinite(temperature)
        or temperature <= 0
    ):
        raise ValueError(f"temperature must be a positive finite number; got {temperature!r}.")
    return float(temperature)


def _softplus_inv(sigma: np.ndarray) -> np.ndarray:
    """Inverse of ``log1p(exp(rho))`` (PyMC's ``rho2sigma``), stable for small and
    large ``sigma``."""
    return sigma + np.log(-np.expm1(-sigma))


@contextlib.contextmanager
def tempered(approx, temperature: float):
    """Temporarily temper a Gaussian variational approximation: ``q -> q**(1/T)``.

    For a Gaussian ``q = N(mu, Sigma)`` in PyMC's unconstrained space,
    ``q**(1/T)`` normalised is ``N(mu, T * Sigma)``: every standard deviation (mean
    field) or the whole Cholesky factor (full rank) is multiplied by ``sqrt(T)``,
    the mean is unchanged. ``T < 1`` is a *cold* posterior (Wenzel et al. 2020),
    ``T > 1`` a warm one. The approximation's parameters are restored on exit, even
    after an error; draws made inside the block with a fixed seed use the same
    standard-normal noise for every ``T`` (common random numbers).

    Parameters
    ----------
    approx : pymc Approximation
        Mean-field (``pm.ADVI``) or full-rank (``pm.FullRankADVI``) approximation.
    temperature : float
        ``T > 0``; 1 leaves the approximation as it is.
    """
    temperature = check_temperature(temperature)
    saved = []
    try:
        if temperature != 1.0:
            scale = np.sqrt(temperature)
            for group in approx.groups:
                params = group.params_dict
                if "rho" in params:
                    shared = params["rho"]
                    rho = shared.get_value()
                    sigma = np.logaddexp(0.0, rho.astype(np.float64))
                    new = _softplus_inv(scale * sigma)
                elif "L_tril" in params:
                    shared = params["L_tril"]
                    rho = shared.get_value()
                    n = group.ddim
                    rows, cols = np.tril_indices(n)
                    diag = rows == cols
                    new = scale * rho.astype(np.float64)
                    # the diagonal is stored through softplus (pymc's rho2sigma)
                    new[diag] = _softplus_inv(scale * np.logaddexp(0.0, rho[diag]))
                else:
                    raise ValueError(
                        f"cannot temper a {type(group).__name__}: only mean-field and "
                        "full-rank Gaussian approximations are supported."
                    )
                saved.append((shared, rho))
                shared.set_value(new.astype(rho.dtype))
        yield approx
    finally:
        for shared, value in saved:
            shared.set_value(value)


def posterior_draws(
    posterior, *, n_draws: int = 500, random_seed: int | None = None, temperature: float = 1.0
):
    """Posterior draws as an ArviZ DataTree.

    VI: ``n_draws`` fresh draws from the approximation (seeded by ``random_seed``),
    tempered to ``q**(1/temperature)`` (see :func:`tempered`). Laplace: as many draws
    from ``Normal(theta, temperature A^-1)``, and the MAP weights in a group of their own
    (:func:`pymc_bnn.inference.laplace.laplace_idata`).
    MCMC: the stored draws, all of them (``n_draws`` is ignored); ``temperature``
    must be 1 (MCMC draws cannot be tempered after the fact).
    """
    temperature = check_temperature(temperature)
    if posterior.laplace is not None:
        from pymc_bnn.inference.laplace import laplace_idata

        return laplace_idata(
            posterior.laplace,
            posterior.spec.layer_shapes,
            check_n_draws(n_draws, allow_none=False),
            random_seed,
            temperature,
        )
    if posterior.is_variational:
        n_draws = check_n_draws(n_draws, allow_none=False)
        with tempered(posterior.approx, temperature) as approx:
            if random_seed is not None and fast_draws_apply(posterior):
                return _vi_idata(approx, n_draws, random_seed)
            return approx.sample(n_draws, random_seed=random_seed)
    if temperature != 1.0:
        raise ValueError(
            f"temperature={temperature} applies to variational posteriors only; this "
            f"posterior was fit by {posterior.method!r} (its draws are used as they are)."
        )
    return posterior.idata


def fast_draws_apply(posterior) -> bool:
    """Whether every variable a trace of the posterior's model records is a function of
    the model's free variables alone (no data containers, no random generators, no
    other shared inputs): then :func:`vi_draws` / :func:`_vi_idata` compute the whole
    record (free variables, their constrained values, deterministic weights) in one
    function compiled per approximation *structure*. True for every model of
    :func:`pymc_bnn.network.model.build_model` (Normal prior: the weights are free variables;
    Neal's prior and hierarchical networks: log-transformed precisions and scales,
    weights as deterministics of them)."""
    return _model_record(posterior.approx.model)[1]


def _recorded_vars(model) -> list:
    """``model.unobserved_value_vars``: what a trace of the model records."""
    return _model_record(model)[0]


def _model_record(model) -> tuple[list, bool]:
    """The model's recorded variables and whether :func:`fast_draws_apply` holds, built
    once per model: ``model.unobserved_value_vars`` rebuilds the graphs on every access
    (measurably so with Neal's prior), and the temperature selection draws 39 times
    per fit (measurements: research/notes/code-measurements.md)."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import graph_inputs

    record = _RECORDS.get(model)
    if record is None:
        recorded = model.unobserved_value_vars
        values = set(model.value_vars)
        fast = all(v in values or isinstance(v, Constant) for v in graph_inputs(recorded))
        record = _RECORDS[model] = (recorded, fast)
    return record


#: model -> (recorded variables, whether :func:`fast_draws_apply` holds); a model's
#: variables never change once it is fit
_RECORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _vi_idata(approx, n_draws: int, random_seed: int):
    """``approx.sample(n_draws, random_seed=random_seed)``, equal (tested), for a model
    where :func:`fast_draws_apply` holds: the record of :func:`vi_draws` written into
    PyMC's own trace and converted by ``pm.to_inference_data`` — without the two
    functions ``approx.sample`` compiles on every call (its sampler, and the trace's
    point function), each a compilation per call that leaves some never-freed Numba
    code (measurements: research/notes/code-measurements.md)."""
    import pymc as pm
    from pymc.backends.base import MultiTrace
    from pymc.backends.ndarray import NDArray

    model = approx.model
    draws = vi_draws(approx, n_draws, random_seed)
    names = [v.name for v in _recorded_vars(model)]
    # the trace records fn(*point.values()) under these names: the point holds them,
    # in this order, already computed
    trace = NDArray(
        model=model,
        fn=lambda *values: values,
        var_shapes={name: draws[name].shape[1:] for name in names},
        var_dtypes={name: draws[name].dtype for name in names},
    )
    try:
        trace.setup(draws=n_draws, chain=0)
        for i in range(n_draws):
            trace.record({name: draws[name][i] for name in names}, in_warmup=False)
    finally:
        trace.close()
    return pm.to_inference_data(MultiTrace([trace]), model=model, log_likelihood=False)


def vi_draws(approx, n_draws: int, random_seed: int) -> dict[str, np.ndarray]:
    """What the trace of ``approx.sample(n_draws, random_seed=random_seed)`` records,
    by variable name (free variables in PyMC's unconstrained space, their constrained
    values, deterministics), equal to it (tested), faster.

    ``approx.sample`` compiles a sampler and a trace function on every call and builds a
    per-draw trace and an InferenceData (the temperature selection makes 39 calls per
    fit; measurements: research/notes/code-measurements.md). Here the same sampler graph
    (PyMC's ``rslice`` + ``set_size_and_deterministic``, as in ``sample_dict_fn``),
    with the model's recorded variables vectorised over the draws on top of it, is
    compiled once per approximation *structure* with the variational parameters as
    inputs, seeded as PyMC seeds it, and returns the arrays. Valid where
    :func:`fast_draws_apply` holds.
    """
    from pymc.pytensorf import reseed_rngs
    from pymc.util import _get_seeds_per_chain

    (seed,) = _get_seeds_per_chain(random_seed, 1)
    sampler = _vi_sampler(approx)
    with sampler["lock"]:
        for mine, theirs in zip(sampler["params"], approx.params, strict=True):
            mine.set_value(theirs.get_value(borrow=True), borrow=True)
        reseed_rngs(sampler["rngs"], seed)
        draws = sampler["fn"](n_draws)
    return dict(zip(sampler["names"], draws))


_VI_SAMPLERS: collections.OrderedDict = collections.OrderedDict()
_VI_SAMPLERS_MAX = 16


@functools.cache
def _sampler_mode():
    """How the VI sampler is compiled: PyTensor's Python VM over each Op's NumPy
    ``perform``, without elementwise fusion (which would replace NumPy's ufuncs by
    Python scalar loops).

    The sampler is a few dozen whole-array NumPy operations (a normal draw, ``mu +
    sigma * eps``, the transforms and deterministics, over (n_draws, n_params)), so
    compiled code gains nothing per call, while PyTensor's default Numba linker costs a
    JIT compilation (seconds and a large share of a process's memory on a machine whose
    PyTensor cache is cold, far less once it is warm; measurements:
    research/notes/choices.md, benchmarks/results/repeated_fits_cold_machine.md), and
    an import of Numba. The draws
    come from NumPy's own ``Generator`` (which Numba's mirrors): they equal
    ``approx.sample``'s to rounding (NumPy's and Numba's ``exp`` / ``log1p`` can differ
    in the last place; tested)."""
    from pytensor.compile.mode import Mode
    from pytensor.graph.rewriting.db import RewriteDatabaseQuery
    from pytensor.link.vm import VMLinker

    return Mode(
        VMLinker(use_cloop=False, c_thunks=False),
        RewriteDatabaseQuery(include=["fast_run"], exclude=["fusion"]),
    )


def _vi_sampler(approx) -> dict:
    """The compiled sampler of an approximation's structure (bounded LRU cache).

    Keyed by the approximation's layout and parameter shapes; a cached sampler is used
    only if the model's recorded variables are the same graph of its free variables as
    the cached one's (``equal_computations``; e.g. the same deterministic weights), else
    it is built again."""
    from pymc.pytensorf import compile as pymc_compile
    from pymc.pytensorf import find_rng_nodes
    from pytensor.graph.basic import equal_computations
    from pytensor.graph.replace import graph_replace, vectorize_graph

    model = approx.model
    recorded = _recorded_vars(model)
    names = [v.name for v in recorded]
    orderings = [
        tuple((name, o[1], o[2], str(o[3])) for name, o in ordering.items())
        for ordering in approx.collect("ordering")
    ]
    key = (
        type(approx).__name__,
        tuple(type(g).__name__ for g in approx.groups),
        tuple(orderings),
        tuple((p.type, p.get_value(borrow=True).shape) for p in approx.params),
        tuple(names),
    )
    key = repr(key)  # slices are not hashable before Python 3.12
    with _VI_SAMPLERS_LOCK:
        sampler = _VI_SAMPLERS.get(key)
        if sampler is not None and (
            model in sampler["models"]
            or equal_computations(
                recorded, sampler["recorded"], in_xs=model.value_vars, in_ys=sampler["value_vars"]
            )
        ):
            sampler["models"].add(model)  # checked once per model
            _VI_SAMPLERS.move_to_end(key)
            return sampler
    value_names = [name for ordering in approx.collect("ordering") for name in ordering]
    size = pt.iscalar("n_draws")
    sampled = approx.set_size_and_deterministic([approx.rslice(n) for n in value_names], size, 0)
    by_name = dict(zip(value_names, sampled))
    # each recorded variable is a graph of one draw's free variables: vectorised over
    # the draws (the leading axis of the sampled values)
    outs = vectorize_graph(recorded, replace={v: by_name[v.name] for v in model.value_vars})
    # private parameters and generators: the cached sampler never touches the state of
    # the approximation it was built from
    private = {
        p: pytensor.shared(np.array(p.get_value()), name=p.name, shape=p.type.shape)
        for p in approx.params
    }
    private.update(
        {
            r: pytensor.shared(copy.deepcopy(r.get_value()), name=r.name)
            for r in find_rng_nodes(outs)
        }
    )
    outs = graph_replace(outs, private, strict=False)
    sampler = {
        "names": names,
        "params": [private[p] for p in approx.params],
        "rngs": find_rng_nodes(outs),
        "fn": pymc_compile([size], outs, mode=_sampler_mode()),
        "recorded": recorded,
        "value_vars": list(model.value_vars),
        "models": weakref.WeakSet([model]),
        "lock": threading.Lock(),
    }
    with _VI_SAMPLERS_LOCK:
        _VI_SAMPLERS[key] = sampler
        _VI_SAMPLERS.move_to_end(key)
        while len(_VI_SAMPLERS) > _VI_SAMPLERS_MAX:
            _VI_SAMPLERS.popitem(last=False)
    return sampler


_VI_SAMPLERS_LOCK = threading.Lock()
