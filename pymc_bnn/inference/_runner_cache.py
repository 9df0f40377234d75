"""Compiled ADVI runners (:class:`~pymc_bnn.inference._compiled_vi.ScanADVI`) kept for
reuse, keyed by model structure (:class:`RunnerCache`, the process-wide
:data:`RUNNERS`), and stored on disk for a new process (:func:`dump_runner`,
:mod:`pymc_bnn._runtime.compile_cache`).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import io
import pickle
import threading
import warnings

import numpy as np
import pytensor
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable, equal_computations
from pytensor.graph.utils import Scratchpad

from pymc_bnn._runtime.device import untraceable_checks_ignored as _untraceable_checks_ignored
from pymc_bnn.inference._compiled_vi import ScanADVI, device_steps
from pymc_bnn.inference._structure import detached, model_graph, shared_inputs, transform_key

__all__ = ["RUNNERS", "STORE_FORMAT", "RunnerCache", "dump_runner"]


def _signature(inference):
    """(coarse hashable key, graph, graph inputs) of an ADVI problem's structure.

    Two problems with equal keys and equal graphs (:func:`equal_computations`, inputs
    paired in order) have the same ELBO up to the values of shared variables (data,
    prior scales, a minibatch model's ``total_size``, variational parameters), which a
    cached runner takes as inputs. Everything else — layer sizes, likelihood, prior
    family, batch size, dtypes, transforms — is a constant of the model's graphs or of
    the key, so a change in any of them means the runner is not reused. (A transform
    whose attributes have no stable ``repr`` only prevents reuse.)
    """
    approx = inference.approx
    model = approx.model
    outputs, inputs = model_graph(model)
    rvs = [*model.free_RVs, *model.observed_RVs]
    key = (
        type(inference).__name__,
        type(approx).__name__,
        bool(approx.scale_cost_to_minibatch),
        tuple((g.__class__.__name__, g.ddim) for g in approx.groups),
        tuple((p.type, p.get_value(borrow=True).shape) for p in approx.params),
        tuple(str(v.type) for v in inputs),
        tuple(str(model.rvs_to_values[rv].type) for rv in model.free_RVs),
        tuple(transform_key(model.rvs_to_transforms.get(rv)) for rv in rvs),
    )
    return key, outputs, inputs


#: Version of the layout of a stored runner (see dump_runner): another layout, another
#: file name.
STORE_FORMAT = 2


class _RunnerPickler(pickle.Pickler):
    """Pickles a runner, its compiled function and graphs, and nothing of a fit.

    - PyMC attaches printing helpers (bound to ``functools.partial`` objects, which do
      not pickle) to its random variables as instance attributes: left out (the
      variables print the same without);
    - PyMC's ``tag.observations`` of an observed variable points at the model's data:
      left out (no computation reads it);
    - any other shared variable than the runner's own (emptied by ``release``) would
      carry a fit's values to disk: refused (the runner is then not stored).
    """

    _DROPPED = ("str_repr", "_repr_latex_")

    def __init__(self, file, own):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._own = own

    def reducer_override(self, obj):
        if isinstance(obj, SharedVariable) and id(obj) not in self._own:
            raise pickle.PicklingError(f"shared variable {obj.name!r} is not the runner's")
        if isinstance(obj, Variable) and any(k in obj.__dict__ for k in self._DROPPED):
            reduced = list(obj.__reduce_ex__(5))
            reduced[2] = {k: v for k, v in reduced[2].items() if k not in self._DROPPED}
            return tuple(reduced)
        if isinstance(obj, Scratchpad) and "observations" in obj.__dict__:
            reduced = list(obj.__reduce_ex__(5))
            reduced[2] = {k: v for k, v in reduced[2].items() if k != "observations"}
            return tuple(reduced)
        return NotImplemented


def _store_name(key, outputs) -> str:
    """The file name of a problem's runner on disk (:mod:`pymc_bnn._runtime.compile_cache`):
    its key and a printout of its graph (types, shapes, constants, names)."""
    from pymc_bnn._runtime.compile_cache import entry_name

    return entry_name(STORE_FORMAT, key, pytensor.dprint(outputs, file="str", print_type=True))


def dump_runner(runner: ScanADVI) -> bytes:
    """The bytes of a released runner (:meth:`ScanADVI.release`) for the disk cache.

    Nothing of a fit is written: ``release`` has emptied the data and prior-scale
    inputs, the variational parameters and the optimiser state are set back to their
    start values (:meth:`ScanADVI.bind` sets them for every fit), the arguments of the
    last call (noise, minibatch rows) and the input buffers are left out, and the graph
    a later problem is compared with has placeholders for the model's shared inputs
    (:func:`detached`).
    """
    for p in runner.params:
        p.set_value(np.zeros_like(p.get_value(borrow=True)))
    for s, value in runner._start.items():
        s.set_value(value.copy())
    # a function keeps its last call's arguments (the noise, a minibatch's rows)
    for i, container in zip(runner.fn.maker.inputs, runner.fn.input_storage, strict=True):
        if not isinstance(i.variable, SharedVariable):
            container.storage[0] = None
    stored = copy.copy(runner)
    stored._buffers = {}
    own = {id(i.variable) for i in runner.fn.maker.inputs if isinstance(i.variable, SharedVariable)}
    own.update(
        id(v)
        for v in (
            *runner.inputs,
            *runner.state,
            *runner.params,
            *runner.data,
            *runner._containers,
            runner.learning_rate,
        )
    )
    buffer = io.BytesIO()
    _RunnerPickler(buffer, own).dump(stored)
    return buffer.getvalue()


def _write_runner(runner: ScanADVI) -> None:
    from pymc_bnn._runtime.compile_cache import write_entry

    try:
        data = dump_runner(runner)
    except Exception as err:  # noqa: BLE001 - a runner that does not pickle is not stored
        warnings.warn(
            f"pymc_bnn could not store a compiled ADVI runner on disk ({err!r}); "
            "a new process will compile it again.",
            RuntimeWarning,
            stacklevel=3,
        )
        return
    write_entry(runner.store_name, data)


def _read_runner(name, same) -> ScanADVI | None:
    """The runner stored under ``name`` by an earlier process, or None (also when
    ``name`` is None). ``same`` checks its graph against the new problem's."""
    from pymc_bnn._runtime.compile_cache import load_entry

    if name is None:
        return None
    with _untraceable_checks_ignored():  # unpickling links the program again
        runner = load_entry(name, lambda r: isinstance(r, ScanADVI) and same(r))
    if runner is not None:
        runner.store_name = None  # on disk already
    return runner


class RunnerCache:
    """Compiled :class:`ScanADVI` runners kept for reuse, keyed by model structure.

    A fit of the same network structure on new data (cross-validation folds, grid
    search over step sizes, ensemble members, the cross-fitted temperature fits)
    reuses a runner instead of compiling the scan again (~1.5-2 s of PyTensor graph
    rewriting and XLA compilation against ~0.25 s for 10,000 steps on moons). A
    structure met for the first time in a process is looked up on disk before it is
    compiled (:func:`dump_runner`; ``disk=False`` or ``PYMC_BNN_COMPILE_CACHE=off``
    switches that off), and a newly compiled runner is written there after its fit. A
    runner is taken out while a fit uses it, so concurrent fits (threads) never
    share one: a fit that finds every runner of its structure in use gets a clone of
    one (:meth:`ScanADVI.clone`, no compilation). At most ``maxsize`` idle runners are
    kept, least recently used first out, and an idle runner holds no data
    (:meth:`ScanADVI.release`).
    """

    def __init__(self, maxsize: int = 8, *, disk: bool = True):
        self.maxsize = maxsize
        #: whether runners are also read from and written to disk (JAX runners, where
        #: pymc_bnn._runtime.compile_cache is on): a new process then does not compile again
        self.disk = disk
        #: runners read from disk instead of compiled
        self.loads = 0
        self._idle = collections.OrderedDict()  # id(runner) -> runner
        self._busy = {}  # id(runner) -> runner, taken out by a fit
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        #: runners made by cloning one in use (fits of one structure at the same time)
        self.clones = 0

    def __len__(self) -> int:
        return len(self._idle)

    def _on_disk(self, mode: str) -> bool:
        from pymc_bnn._runtime.compile_cache import entry_dir

        return self.disk and mode == "JAX" and entry_dir() is not None

    def clear(self) -> None:
        with self._lock:
            self._idle.clear()

    @contextlib.contextmanager
    def runner(self, inference, *, learning_rate: float, mode: str, host_rows: bool = False):
        """A runner bound to ``inference`` (cached or newly compiled); back when done.

        Its steps run on the device as :func:`device_steps` says, except that
        ``host_rows`` (a fit whose rows come from a ``row_source``) gathers on the host.
        """
        key, outputs, inputs = _signature(inference)
        gather, noise = device_steps(mode)
        gather = gather and not host_rows
        key = (key, mode, gather, noise)

        def same(r) -> bool:
            k, t_outputs, t_inputs = r.signature
            return (
                k == key
                and len(t_inputs) == len(inputs)
                and len(t_outputs) == len(outputs)
                and equal_computations(outputs, t_outputs, inputs, t_inputs)
            )

        with self._lock:
            found = next((r for r in reversed(self._idle.values()) if same(r)), None)
            if found is not None:
                del self._idle[id(found)]
                self.hits += 1
            template = None if found else next((r for r in self._busy.values() if same(r)), None)
            if found is None and template is not None:
                self.clones += 1
            elif found is None:
                self.misses += 1
        compiled = False
        if found is not None:
            runner = found
        elif template is not None:
            runner = template.clone()
        else:
            name = _store_name(key, outputs) if self._on_disk(mode) else None
            runner = _read_runner(name, same)
            if runner is not None:
                with self._lock:
                    self.loads += 1
            else:
                runner = ScanADVI(
                    inference,
                    learning_rate=learning_rate,
                    mode=mode,
                    device_gather=gather,
                    device_noise=noise,
                )
                #: what a later fit's problem is compared with (see _signature),
                #: without the fit's data
                runner.signature = detached(key, outputs, inputs)
                runner.store_name = name
                compiled = True
        if not compiled:
            runner.bind(inference, shared_inputs(inputs), learning_rate=learning_rate)
        with self._lock:
            self._busy[id(runner)] = runner
        try:
            yield runner
        finally:
            runner.release()
            with self._lock:
                del self._busy[id(runner)]
            if compiled and runner.store_name is not None:
                # no one else holds it now: stored without the fit's data
                _write_runner(runner)
            with self._lock:
                if self.maxsize > 0:
                    self._idle[id(runner)] = runner
                    while len(self._idle) > self.maxsize:
                        self._idle.popitem(last=False)


#: The process-wide cache of compiled ADVI runners (``RUNNERS.clear()`` empties it).
RUNNERS = RunnerCache()
