"""nutpie models compiled once per model structure: NUTS fits of a structure already
sampled in the process skip nutpie's compilation (~10 s for the hierarchical moons
network, every time: nutpie's Numba ``cfunc`` wrappers are never cached on disk).

``pm.sample(nuts_sampler="nutpie")`` compiles the model for every call. nutpie's own
API separates the two steps: ``nutpie.compile_pymc_model`` builds the log density and
its gradient as C callbacks that read the model's shared variables (data, prior
scales) through pointers, and ``CompiledPyMCModel.with_data`` swaps those values
without compiling again. :func:`sample_nutpie` keeps compiled models keyed by the
model's structure (the same check as the ADVI runners': equal random-variable graphs,
value types and transforms, inputs paired in order, plus here the deterministics and
coordinates, which nutpie's trace is laid out by) and samples a later model of that
structure on its own data, its own initial point and its own seed.

It does what ``pm.sample``'s nutpie branch does — the same chain seed, the same
initial-point function (support point, every free variable jittered, ``initvals``
overriding), ``patch_nutpie_idata`` on the result — so a fit gives the same draws
either way (tested, bit for bit, for a compiled and a reused model). A cached model
keeps neither the model's variables nor its PyTensor functions, and its data
arrays are emptied; nutpie's compiled callbacks still hold a reference to the copy of
the data made when they were compiled (at most ``maxsize`` such copies).
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time

import numpy as np
from pytensor.graph.basic import Constant, equal_computations
from pytensor.graph.traversal import ancestors

from pymc_bnn._runtime.threads import default_threads
from pymc_bnn.inference._structure import detached, model_graph, transform_key

__all__ = ["NUTPIE_MODELS", "NutpieModels", "sample_nutpie"]


def _signature(model):
    """(coarse key, graph outputs, graph inputs) of what nutpie compiles and traces."""
    outputs, inputs = model_graph(model)
    outputs = [*outputs, *model.deterministics]
    inputs = list(
        dict.fromkeys(
            [
                *inputs,
                *(
                    v
                    for v in ancestors(model.deterministics)
                    if v.owner is None and not isinstance(v, Constant)
                ),
            ]
        )
    )
    rvs = [*model.free_RVs, *model.observed_RVs]
    key = (
        tuple(rv.name for rv in model.free_RVs),
        tuple(d.name for d in model.deterministics),
        tuple(str(v.type) for v in inputs),
        tuple(str(model.rvs_to_values[rv].type) for rv in model.free_RVs),
        tuple(transform_key(model.rvs_to_transforms.get(rv)) for rv in rvs),
        tuple((k, None if v is None else tuple(v)) for k, v in model.coords.items()),
        tuple(sorted((k, str(v)) for k, v in model.named_vars_to_dims.items())),
        bool(model.check_bounds),
    )
    return key, outputs, inputs


@dataclasses.dataclass
class _Entry:
    key: tuple
    outputs: list
    inputs: list
    #: the compiled model, with empty data
    compiled: object
    #: position in ``inputs`` of each shared variable nutpie reads, by its name
    positions: dict
    #: those of them whose shape the trace's layout depends on (their shape at compile)
    shape_bound: dict

    def same(self, key, outputs, inputs) -> bool:
        return (
            key == self.key
            and len(inputs) == len(self.inputs)
            and len(outputs) == len(self.outputs)
            and equal_computations(outputs, self.outputs, inputs, self.inputs)
        )


class NutpieModels:
    """Compiled nutpie models kept for reuse (LRU, ``maxsize`` entries), keyed by
    model structure; ``hits`` and ``misses`` count lookups, ``compiles`` compilations."""

    def __init__(self, maxsize: int = 4):
        self.maxsize = maxsize
        self._entries = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = self.compiles = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def compiled_for(self, model):
        """A compiled model carrying ``model``'s data (from the cache, or compiled)."""
        key, outputs, inputs = _signature(model)
        with self._lock:
            entry = next(
                (
                    e
                    for e in reversed(self._entries.values())
                    if e.same(key, outputs, inputs) and self._fits(e, inputs)
                ),
                None,
            )
            if entry is not None:
                self._entries.move_to_end(id(entry))
                self.hits += 1
            else:
                self.misses += 1
        if entry is None:
            entry, compiled = self._compile(model, key, outputs, inputs)
            if entry is None:  # not reusable: sampled as compiled
                return compiled
            with self._lock:
                if self.maxsize > 0:
                    self._entries[id(entry)] = entry
                    while len(self._entries) > self.maxsize:
                        self._entries.popitem(last=False)
        return entry.compiled.with_data(
            **{name: inputs[i].get_value(borrow=True) for name, i in entry.positions.items()}
        )

    @staticmethod
    def _fits(entry, inputs) -> bool:
        """Whether the trace's layout (variable shapes) can be that of ``inputs``."""
        return all(
            np.shape(inputs[entry.positions[name]].get_value(borrow=True)) == shape
            for name, shape in entry.shape_bound.items()
        )

    def _compile(self, model, key, outputs, inputs):
        """Compile ``model``; keep the result without the model's variables."""
        import nutpie

        with self._lock:
            self.compiles += 1
        compiled = nutpie.compile_pymc_model(model, backend="numba")
        shared = compiled.shared_var_keys
        names = [v.name for v in shared]
        if any(v not in inputs or names.count(v.name) != 1 for v in shared):
            return None, compiled  # read outside the graph compared, or by an ambiguous name
        positions = {v.name: inputs.index(v) for v in shared}
        layout = ancestors([*model.free_RVs, *model.deterministics])
        shape_bound = {v.name: np.shape(v.get_value(borrow=True)) for v in shared if v in layout}
        # kept: the compiled callbacks and the layout of the trace. Not kept: the
        # model's shared variables (only their names are needed, by with_data) and
        # its PyTensor functions, which sampling does not use; the data are emptied.
        blank = {}
        for v in shared:
            value = np.asarray(v.get_value(borrow=True))
            blank[v.name] = np.zeros((0,) * value.ndim, dtype=value.dtype)
        kept = dataclasses.replace(
            compiled.with_data(**blank),
            shared_var_keys={_Name(v.name): k for v, k in shared.items()},
            logp_func=None,
            expand_func=None,
        )
        _, outputs, inputs = detached(key, outputs, inputs)  # the graph, without data
        entry = _Entry(
            key=key,
            outputs=outputs,
            inputs=inputs,
            compiled=kept,
            positions=positions,
            shape_bound=shape_bound,
        )
        return entry, compiled


@dataclasses.dataclass(frozen=True)
class _Name:
    """What ``CompiledPyMCModel.with_data`` reads of a shared variable: its name."""

    name: str


#: The process-wide cache (``NUTPIE_MODELS.clear()`` empties it).
NUTPIE_MODELS = NutpieModels()


def _initial_point_func(model, initvals):
    """nutpie's start: PyMC's initial point of ``model`` (support point, every free
    variable jittered, ``initvals`` overriding), flat in ``model.free_RVs`` order —
    what ``nutpie.compile_pymc_model`` builds for the model it compiles."""
    from pymc.initial_point import make_initial_point_fn

    fn = make_initial_point_fn(
        model=model,
        overrides=initvals,
        default_strategy="support_point",
        jitter_rvs=set(model.free_RVs),
        return_transformed=True,
    )
    names = [model.rvs_to_values[rv].name for rv in model.free_RVs]
    lock = threading.Lock()  # nutpie calls it from its chains' threads

    def flat(seed=None):
        with lock:
            point = fn(seed)
        return np.concatenate([np.asarray(point[n], dtype=np.float64).ravel() for n in names])

    return flat


def sample_nutpie(
    model,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    initvals=None,
    progressbar: bool = False,
    nuts=None,
    cache: NutpieModels | None = None,
):
    """``pm.sample(nuts_sampler="nutpie", ...)`` through a cache of compiled models.

    The same chain seed (PyMC's: the first of ``chains`` spawned generators), initial
    point, settings (``nuts`` as PyMC's ``nuts=``) and ``DataTree`` as PyMC gives.
    ``tune=0`` is taken as ``tune=1``: nutpie's adaptation needs at least one tuning
    step (with none, its Rust sampler panics).
    """
    import nutpie
    from pymc.backends.arviz import patch_nutpie_idata
    from pymc.util import get_random_generator
    from threadpoolctl import threadpool_limits

    cache = NUTPIE_MODELS if cache is None else cache
    if initvals is not None and not isinstance(initvals, dict):
        raise NotImplementedError("nutpie takes one start for all chains (a dict)")
    # PyMC's: one integer from each of `chains` spawned generators; nutpie takes the first
    chain_seed = int(get_random_generator(seed).spawn(chains)[0].integers(2**30))
    compiled = cache.compiled_for(model)
    compiled = dataclasses.replace(
        compiled, initial_point_func=_initial_point_func(model, initvals)
    )
    nuts = dict(nuts or {})
    if "max_treedepth" in nuts:
        nuts["maxdepth"] = nuts.pop("max_treedepth")
    # the chains run in parallel on the cores the package may use (default_threads:
    # PYMC_BNN_NUM_THREADS, joblib's OMP_NUM_THREADS, the CPUs). pm.sample takes half
    # the CPUs (it counts hardware threads twice), i.e. one chain at a time on 2
    # cores: the chains are independent, so the draws are the same either way.
    cores = max(1, min(chains, default_threads()))
    t0 = time.time()
    with threadpool_limits(limits=cores):  # as pm.sample's BLAS limiter
        # at least one tuning step: nutpie asserts one (tune=0 panicked its workers)
        idata = nutpie.sample(
            compiled,
            draws=draws,
            tune=max(int(tune), 1),
            chains=chains,
            cores=cores,
            seed=chain_seed,
            save_warmup=False,
            store_unconstrained=False,
            progress_bar=bool(progressbar),
            **nuts,
        )
    patch_nutpie_idata(idata, model, sampling_time=time.time() - t0)
    return idata
