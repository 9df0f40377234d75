"""PyMC's ADVI objective, run K optimisation steps per call inside one compiled scan.

``pm.fit`` calls a compiled step function once per step from a Python loop; on a small
BNN most of each step is call overhead (argument typing, the loop, the progress bar),
not compiled work. Here the very same graph — PyMC's ELBO estimate, its gradients and
PyMC's Adam updates, taken from ``inference.objective.updates`` — is wrapped in a
``pytensor.scan`` over K steps and compiled once (JAX backend when installed, where XLA
vectorises ``tanh``). Two random inputs are drawn outside the scan with NumPy, from
the same distributions PyMC would use: the standard-normal noise of the
reparameterisation trick (shape (K, 1, d)) and, for minibatch models, the row indices
of each step's batch (uniform with replacement, as ``pm.Minibatch``). Everything else
is PyMC's: same ELBO, same ``total_size`` scaling, same optimiser, same parameters.

A compiled runner is kept (:class:`~pymc_bnn.inference._runner_cache.RunnerCache`) and
serves every later fit whose model has an equal log-density graph: data, prior scale,
learning rate and seed are inputs, everything else that shapes the graph is checked, not
assumed.

Minibatch rows are gathered with NumPy too, and passed in as (K, batch, ...) inputs
that replace the outputs of PyMC's ``MinibatchOp``: the compiled function never sees
the full data, so a call costs the same for 10^3 or 10^6 rows. (With the data inside
the scan, XLA's CPU cost model counted the whole data array as each step's gather cost
and split those 50-row gathers over its thread pool, which slowed the steps on large
data; and PyTensor passed the NumPy data to JAX at every call, a copy of the whole
array unless the data were held as JAX arrays; measurements:
research/notes/choices.md.) As JAX runs a call asynchronously,
the noise and rows of the next call are drawn and gathered meanwhile.

That is the CPU's layout. On an accelerator the host is the bound instead (a 784-100-10
network needs ~80,000 normal draws and a 500 x 784 gather per step, and their transfer):
there the data are put on the device once per fit, the scan gathers each step's rows
from an index input, and the noise is drawn on the device from a key of the fit's seeded
generator (:func:`device_steps`; the same indices, so the device gather gives the host
gather's fit bit for bit).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomType

from pymc_bnn._runtime import device as _jax_device
from pymc_bnn._runtime.compile_cache import stored_class
from pymc_bnn._runtime.device import jitted_program as _jitted_program
from pymc_bnn._runtime.device import untraceable_checks_ignored as _untraceable_checks_ignored
from pymc_bnn.inference._structure import model_graph, shared_inputs

__all__ = [
    "ScanUnsupported",
    "jax_available",
    "ScanADVI",
    "DEVICE_GATHER",
    "DEVICE_NOISE",
    "device_steps",
]

#: Where a minibatch model's rows are gathered: True, inside the compiled scan, from the
#: data held on JAX's device once per fit (each step reads the rows of an index input);
#: False, on the host with NumPy (each call receives (K, batch, ...) rows); None (the
#: default): inside the scan on an accelerator, on the host on a CPU. The indices are
#: the same draws either way, so both give the same fit (tested). On a CPU the host
#: gather measured faster (XLA's CPU cost model splits each small gather over threads);
#: on a GPU the host gather and the transfer of the rows bound the step rate
#: (benchmarks/results/wide_network.md).
DEVICE_GATHER: bool | None = None
#: Where the reparameterisation noise is drawn: True, on JAX's device by
#: ``jax.random.normal`` from a key drawn from the fit's seeded generator (nothing but
#: the key leaves the host); False, with NumPy on the host and sent with each call;
#: None (the default): on the device on an accelerator, on the host on a CPU. The host
#: noise is NumPy's standard-normal stream, so fits on a CPU are unchanged; on a GPU,
#: drawing ~80,000 normals per step on the host (a 784-100-10 network) was the bound.
DEVICE_NOISE: bool | None = None


def device_steps(mode: str) -> tuple[bool, bool]:
    """``(gather, noise)``: whether a runner compiled for ``mode`` gathers minibatch
    rows and draws its noise on the device (:data:`DEVICE_GATHER`, :data:`DEVICE_NOISE`
    resolved for this process's JAX platform)."""
    accelerator = mode == "JAX" and _jax_device.platform() not in ("cpu", "none")
    return (
        bool(accelerator if DEVICE_GATHER is None else DEVICE_GATHER) and mode == "JAX",
        bool(accelerator if DEVICE_NOISE is None else DEVICE_NOISE) and mode == "JAX",
    )


class ScanUnsupported(RuntimeError):
    """The objective's graph has a shape the scan engine does not handle."""


def jax_available() -> bool:
    return importlib.util.find_spec("jax") is not None


def _clear_constant_traces(variables) -> None:
    """Drop the debugging stack traces of constants, in these graphs and inner graphs.

    PyTensor rewrites copy a replaced variable's ``tag.trace`` onto its replacement,
    including onto constants that PyTensor reuses across compilations. Compiling one
    scan per fit triples such a constant's trace list every time, so a process that
    fits repeatedly runs out of memory within a few dozen fits (measurements:
    research/notes/code-measurements.md). Traces only serve error messages, so
    constants get an empty one before and after each compilation.
    """
    seen = set()
    stack = list(ancestors(variables))
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, Constant):
            v.tag.trace = []
        inner = getattr(getattr(v.owner, "op", None), "fgraph", None)
        if inner is not None:
            stack.extend(ancestors(inner.outputs))


def _aligned_empty(shape, dtype, align: int = 64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data start on an ``align``-byte boundary.

    JAX on CPU takes 64-byte aligned NumPy arguments without copying them; NumPy's own
    large arrays are only 16-byte aligned, so each call would copy them.
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes].view(dtype).reshape(shape)


def _minibatch_nodes(outputs):
    return list(
        {
            v.owner
            for v in ancestors(outputs)
            if v.owner is not None and type(v.owner.op).__name__ == "MinibatchOp"
        }
    )


@stored_class
class ScanADVI:
    """Compile ``chunk(eps, idx) -> losses`` running ``len(eps)`` ADVI steps.

    Parameters
    ----------
    inference : pm.ADVI or pm.FullRankADVI
        Its approximation's parameters are updated in place, as by ``inference.fit``.
    learning_rate : float
        Adam step size (PyMC's ``pm.adam``).
    mode : str
        PyTensor backend ("JAX" or "NUMBA").
    device_gather, device_noise : bool, default False
        Gather a minibatch model's rows inside the scan from the data held on the device,
        and draw the noise on the device (see :data:`DEVICE_GATHER`,
        :data:`DEVICE_NOISE`); JAX only.
    """

    def __init__(
        self,
        inference,
        *,
        learning_rate: float,
        mode: str,
        device_gather: bool = False,
        device_noise: bool = False,
    ):
        import pymc as pm

        if mode == "JAX":
            from pymc_bnn._runtime.compile_cache import enable

            enable()
        # an input, not a constant: a cached runner serves fits at any step size
        self.learning_rate = pytensor.shared(np.float64(learning_rate), name="learning_rate")
        updates = inference.objective.updates(
            obj_n_mc=1, obj_optimizer=pm.adam(learning_rate=self.learning_rate)
        )
        # The runner computes on private copies of the approximation's parameters and
        # of the model's shared inputs (data, prior scale): a cached runner serves
        # later fits (see bind) without ever writing into an earlier fit's model or
        # posterior; the fit's own parameters receive the results (materialize).
        # in the order of model_graph's inputs: bind pairs a later fit's with these
        model = inference.approx.model
        model_inputs = shared_inputs(model_graph(model)[1])
        if set(model_inputs) != set(shared_inputs(graph_inputs([model.logp()]))):
            raise ScanUnsupported(
                "the model's log density has shared inputs outside its random variables' graphs"
            )
        private = {v: _private_copy(v, copy=True) for v in inference.approx.params}
        private.update({v: _private_copy(v, copy=False) for v in model_inputs})
        keys = [private.get(k, k) for k in updates]
        loss, *values = graph_replace([updates.loss, *updates.values()], private, strict=False)
        state_updates = dict(zip(keys, values))
        outputs = [loss, *state_updates.values()]
        rv_nodes = {
            v.owner
            for v in ancestors(outputs)
            if v.owner is not None and isinstance(v.owner.op, RandomVariable)
        }
        if len(rv_nodes) != 1:
            raise ScanUnsupported(f"expected one noise variable, found {len(rv_nodes)}")
        (noise_node,) = rv_nodes
        noise = noise_node.outputs[1]
        if noise.type.ndim != 2 or noise.type.shape[0] != 1:
            raise ScanUnsupported(f"unexpected noise shape {noise.type.shape}")
        self.ddim = int(noise.type.shape[1])
        mb_nodes = _minibatch_nodes(outputs)
        # PyMC's graph may hold clones of the one pm.Minibatch (e.g. in the logp and in
        # the total_size scaling). With the same data and the same rng state they draw
        # the same rows, so one index input replaces them all.
        if len({tuple(node.inputs) for node in mb_nodes}) > 1:
            raise ScanUnsupported("minibatches over different data or rngs")
        self.minibatch = None
        #: whether each step's rows are gathered inside the scan (minibatch models)
        self.gather_on_device = bool(device_gather and mb_nodes)
        #: whether the noise is drawn on the device
        self.noise_on_device = bool(device_noise)
        if (device_gather or device_noise) and mode != "JAX":
            raise ScanUnsupported(f"device-side steps need the JAX backend, not {mode}")
        eps_seq = pt.tensor3("eps", dtype=noise.type.dtype)
        inputs = [eps_seq]
        # minibatch containers (shared data sliced together) and, for each, the input
        # of its gathered rows for all K steps: (K, batch, *row shape)
        self._containers, rows_all = [], []
        if mb_nodes:
            mb = mb_nodes[0]
            # the containers sliced together; last input is the rng
            self._containers = list(mb.inputs[:-1])
            if not all(isinstance(c, SharedVariable) for c in self._containers):
                raise ScanUnsupported("minibatch over data that are not shared variables")
            batch = mb.outputs[0].type.shape[0]
            if batch is None:
                raise ScanUnsupported("minibatch size is not static")
            n_rows = int(self._containers[0].get_value(borrow=True).shape[0])
            self.minibatch = (batch, n_rows)
            if self.gather_on_device:
                # each step's row indices, (K, batch): the same rows of every container
                row_index = pt.matrix("row_index", dtype="int64")
                inputs.append(row_index)
            else:
                for c, out in zip(self._containers, mb.outputs[:-1]):
                    rows_all.append(
                        pt.tensor(
                            f"{c.name or 'data'}_rows",
                            dtype=out.type.dtype,
                            shape=(None, *out.type.shape),
                        )
                    )
                inputs.extend(rows_all)
        self.state = [s for s in state_updates if not isinstance(s.type, RandomType)]
        self.mode = mode
        # what a reuse for another fit of the same structure rebinds (see bind): the
        # variational parameters, the optimiser's state (reset to its start) and the
        # model's data containers
        self.params = [private[p] for p in inference.approx.params]
        self._targets = list(inference.approx.params)
        self._start = {
            s: np.array(s.get_value(borrow=True)) for s in self.state if s not in self.params
        }
        #: private copies of the shared inputs of the model's log density (data
        #: containers, prior scale), which :meth:`bind` sets to another fit's values
        self.inputs = [private[v] for v in model_inputs]
        # input buffers reused from call to call, two sets (see _draw), and the inputs
        # drawn ahead for the next call: (rng, n_steps, arrays)
        self._buffers = {}
        self._slot = 0
        self._ahead = None
        #: draw the next call's inputs while JAX runs the current one (see run)
        self.draw_ahead = mode == "JAX"
        #: minibatch models: an object whose ``fill(rng, rows)`` writes each step's rows
        #: of every container into ``rows`` (e.g. pymc_bnn.dask.BlockSampler), used
        #: instead of the containers' values (then placeholders); None: the containers
        self.row_source = None

        def step(eps_t, t, *states):
            repl = dict(zip(self.state, states))
            repl[noise] = eps_t
            for node in mb_nodes:
                if self.gather_on_device:
                    # the data stay in the graph (held on the device: data_on_device)
                    for out, c in zip(node.outputs[:-1], self._containers):
                        repl[out] = c[row_index[t]]
                    continue
                for out, rows in zip(node.outputs[:-1], rows_all):
                    # read step t's rows inside the scan (a second scan sequence would
                    # make the JAX backend compute the number of steps dynamically)
                    repl[out] = rows[t]
            new = graph_replace([state_updates[s] for s in self.state] + [loss], repl, strict=False)
            return [t + 1, *new]

        t0 = pt.constant(np.int64(0))
        result = pytensor.scan(
            step,
            sequences=[eps_seq],
            outputs_info=[t0, *self.state, None],
            return_updates=False,
        )
        result = result[1:]
        finals = [r[-1] for r in result[:-1]]
        # read-only shared inputs left in the graph (full-batch data; a minibatch
        # model's containers when gathered on the device): see data_on_device()
        self.data = [
            v
            for v in ancestors([*finals, result[-1]])
            if isinstance(v, SharedVariable)
            and v not in state_updates
            and not isinstance(v.type, RandomType)
            and v.type.ndim > 0
        ]
        _clear_constant_traces([*finals, result[-1]])
        with _untraceable_checks_ignored():
            try:
                self.fn = pytensor.function(
                    inputs, result[-1], updates=dict(zip(self.state, finals)), mode=mode
                )
            except NotImplementedError as err:
                # e.g. a Categorical likelihood over per-group weights: its row count
                # reaches an ARange through a runtime-checked broadcast, which JAX
                # cannot trace
                first = str(err).strip().splitlines()[0] if str(err).strip() else ""
                raise ScanUnsupported(
                    f"the {mode} backend cannot compile this model's objective ({first})"
                ) from err
        _clear_constant_traces(self.fn.maker.fgraph.outputs)

    @contextlib.contextmanager
    def data_on_device(self):
        """Hold the data containers as JAX arrays while running, then restore them.

        PyTensor's JAX functions copy NumPy-valued shared variables that are not 64-byte
        aligned to the device on every call (a copy of the whole data array per call;
        measurements: research/notes/choices.md). This concerns only data still in the
        compiled graph: full-batch models,
        and minibatch models whose rows are gathered on the device (on a GPU the data
        then cross to it once per fit); otherwise minibatch rows are gathered outside
        it (see :meth:`run`) and this is a no-op.
        """
        if self.mode != "JAX" or not self.data:
            yield
            return
        import jax.numpy as jnp

        saved = [(v, v.get_value(borrow=True)) for v in self.data]
        try:
            for v, value in saved:
                v.set_value(jnp.asarray(value), borrow=True)
            yield
        finally:
            for v, value in saved:
                v.set_value(value, borrow=True)

    def run(self, n_steps: int, rng: np.random.Generator) -> np.ndarray:
        """Run ``n_steps`` ADVI steps; returns their losses (n_steps,).

        The random inputs are drawn from ``rng``: the noise, and for minibatch models
        each step's rows, uniformly with replacement (as ``pm.Minibatch``), the same
        rows of every container, gathered here with NumPy: O(n_steps x batch) whatever
        the number of rows. JAX runs the call asynchronously; meanwhile the inputs of
        the next call (same ``rng``, same ``n_steps``) are drawn ahead. A next call
        with fewer steps uses the first ``n_steps`` of them; one with another ``rng``,
        more steps or new data values (``set_value``) draws anew. The losses are a
        deterministic function of the seed of ``rng`` and the sequence of ``n_steps``.
        """
        ahead, self._ahead = self._ahead, None
        if (
            ahead is not None
            and ahead[0] is rng
            and ahead[1] >= n_steps
            and ahead[4] is self.row_source
            and all(a is b for a, b in zip(ahead[2], self._data_values()))
        ):
            args = [a[:n_steps] for a in ahead[3]]
        else:
            args = self._draw(n_steps, rng)
        if self.noise_on_device:
            # the first argument is a device array (_device_noise), which the checked
            # call would copy back to the host; the rest are NumPy arrays _draw made
            # of the right types
            self.fn.trust_input = True
        out = self.fn(*args)
        if self.draw_ahead:
            try:
                self._ahead = (
                    rng,
                    n_steps,
                    self._data_values(),
                    self._draw(n_steps, rng),
                    self.row_source,
                )
            except ValueError:  # data of another size: the next call raises it
                pass
        # reading the losses waits for the call to complete: its input buffers may be
        # refilled by the call after next
        return np.array(out, dtype=np.float64)

    def _draw(self, n_steps: int, rng: np.random.Generator) -> list[np.ndarray]:
        """The inputs of one call, in the next of two alternating sets of buffers.

        The buffers are 64-byte aligned (JAX on CPU then reads them without a copy)
        and reused (no page faults of fresh allocations); two sets, as the inputs of
        one call are drawn while the previous call may still read its own.
        """
        slot, self._slot = self._slot, 1 - self._slot
        if self.noise_on_device:
            eps = _device_noise(int(rng.integers(2**63)), (n_steps, 1, self.ddim))
        else:
            eps = rng.standard_normal(
                out=self._buffer((slot, "eps"), (n_steps, 1, self.ddim), np.float64)
            )
        args = [eps]
        if self.minibatch is not None and self.row_source is not None:
            if self.gather_on_device:
                raise ValueError(
                    "a runner that gathers rows on the device cannot take rows from a row_source"
                )
            batch = self.minibatch[0]
            rows = [
                self._buffer((slot, i), (n_steps, batch, *value.shape[1:]), value.dtype)
                for i, value in enumerate(self._data_values())
            ]
            self.row_source.fill(rng, rows)
            args.extend(rows)
        elif self.minibatch is not None:
            batch, n_rows = self.minibatch
            idx = rng.integers(0, n_rows, size=(n_steps, batch))
            for i, (c, value) in enumerate(zip(self._containers, self._data_values())):
                if value.shape[0] != n_rows:
                    raise ValueError(f"{c.name} has {value.shape[0]} rows, expected {n_rows}")
                if self.gather_on_device:
                    continue  # the indices are enough (appended once, below)
                rows = self._buffer((slot, i), (n_steps, batch, *value.shape[1:]), value.dtype)
                # indices are in range by construction: mode="wrap" skips NumPy's
                # buffered bounds check of mode="raise"
                np.take(value, idx, axis=0, out=rows, mode="wrap")
                args.append(rows)
            if self.gather_on_device:
                args.append(idx)
        return args

    def input_bytes_per_step(self) -> int:
        """Bytes of one step's random inputs to the compiled call: the noise of every
        variational parameter and, for a minibatch model, a batch of rows of every
        container (see :meth:`_draw`)."""
        per_step = self.ddim * np.dtype(np.float64).itemsize
        if self.gather_on_device:
            per_step += self.minibatch[0] * np.dtype(np.int64).itemsize
        elif self.minibatch is not None:
            batch = self.minibatch[0]
            per_step += sum(batch * value[:1].nbytes for value in self._data_values())
        return per_step

    def _data_values(self) -> list:
        return [c.get_value(borrow=True) for c in self._containers]

    def _buffer(self, key, shape, dtype) -> np.ndarray:
        buf = self._buffers.get(key)
        if buf is None or buf.shape != tuple(shape) or buf.dtype != np.dtype(dtype):
            buf = self._buffers[key] = _aligned_empty(shape, dtype)
        return buf

    def materialize(self) -> None:
        """Store plain NumPy arrays back in the shared variables (JAX leaves its own),
        and the variational parameters in the bound fit's approximation."""
        for s in self.state:
            s.set_value(np.array(s.get_value(borrow=True)))
        for p, target in zip(self.params, self._targets, strict=True):
            target.set_value(np.array(p.get_value(borrow=True)))

    def bind(self, inference, inputs, *, learning_rate: float) -> None:
        """Run for another fit of the same structure (see
        :class:`~pymc_bnn.inference._runner_cache.RunnerCache`).

        ``inputs`` are that fit's counterparts of :attr:`inputs` (same order). Its
        starting parameters, learning rate, data and prior scales are copied in; the
        optimiser starts afresh, exactly as in a newly compiled runner.
        """
        for p, target in zip(self.params, inference.approx.params, strict=True):
            p.set_value(np.array(target.get_value(borrow=True)))
        self._targets = list(inference.approx.params)
        for s, value in self._start.items():
            s.set_value(value.copy())
        self.learning_rate.set_value(np.float64(learning_rate))
        for mine, theirs in zip(self.inputs, inputs, strict=True):
            mine.set_value(theirs.get_value(borrow=True), borrow=True)
        if self.minibatch is not None:
            self.minibatch = (self.minibatch[0], int(self._data_values()[0].shape[0]))
        self._ahead = None

    def clone(self) -> ScanADVI:
        """A runner of the same compiled program with state of its own.

        What a second thread fitting the same structure at the same time uses: PyTensor's
        ``Function.copy`` with every shared variable the runner owns swapped for a new
        one (variational parameters, optimiser state, learning rate, data and prior-scale
        inputs), which re-links the program without rewriting or compiling the graph
        again (~0.1 s against ~1 s). The clone is bound to its fit by :meth:`bind`, as
        any cached runner; this runner may be running meanwhile (only its graph and
        its constant start values are read). The clone calls this runner's jitted JAX
        program (:func:`_share_jitted_program`): nothing is traced or compiled again.
        """
        owned = [
            i.variable
            for i in self.fn.maker.inputs
            if isinstance(i.variable, SharedVariable)
            and not isinstance(i.variable.type, RandomType)
        ]
        owned += [v for v in (*self.inputs, self.learning_rate) if v not in owned]
        fresh = {}
        for v in owned:
            # data are only read (and replaced by bind): shared, not copied
            fresh[v] = _private_copy(v, copy=v not in self.inputs)
        in_fn = {i.variable for i in self.fn.maker.inputs}
        new = copy.copy(self)
        with _untraceable_checks_ignored():  # the program is linked again
            new.fn = self.fn.copy(swap={v: f for v, f in fresh.items() if v in in_fn})
        _share_jitted_program(self.fn, new.fn)
        new.learning_rate = fresh[self.learning_rate]
        new.state = [fresh[s] for s in self.state]
        new.params = [fresh[p] for p in self.params]
        new._start = {fresh[s]: value.copy() for s, value in self._start.items()}
        new.inputs = [fresh[v] for v in self.inputs]
        new.data = [fresh[v] for v in self.data]
        new._containers = [fresh[c] for c in self._containers]
        new._targets, new._buffers, new._slot = [], {}, 0
        new._ahead, new.row_source = None, None
        return new

    def release(self) -> None:
        """Drop the references to the last fit's data and approximation."""
        for c in self.inputs:
            value = c.get_value(borrow=True)
            if value.ndim:
                c.set_value(np.empty((0,) * value.ndim, dtype=value.dtype), borrow=True)
        self._targets = []
        self._ahead = None
        self.row_source = None


@functools.cache
def _normal_sampler():
    import jax

    def normal(seed, shape):
        return jax.random.normal(jax.random.key(seed), shape, dtype="float64")

    return jax.jit(normal, static_argnums=1)


def _device_noise(seed: int, shape: tuple):
    """Standard-normal float64 draws of ``shape`` made on JAX's device from ``seed``
    (a device array: only the seed crosses from the host)."""
    return _normal_sampler()(seed, shape)


def _share_jitted_program(src, dst) -> bool:
    """Make ``dst`` (``src.copy(swap=...)``: the same graph, inputs in the same order,
    storage of its own) call ``src``'s jitted program instead of its own newly linked
    one, which would trace and compile the program again on its first call (~1 s when
    JAX's disk cache does not have it). Returns whether it could."""
    program = _jitted_program(src)
    if program is None or _jitted_program(dst) is None:
        return False
    dst.vm.__defaults__ = (program, *dst.vm.__defaults__[1:])
    return True


def _private_copy(v: SharedVariable, *, copy: bool) -> SharedVariable:
    """A shared variable of ``v``'s type and name holding ``v``'s current value in its
    own storage; ``copy=False`` shares the array (data the runner only reads). A value
    JAX left there (a runner between :meth:`ScanADVI.run` and ``materialize``, as when
    a busy runner is cloned) comes back as a NumPy array: shared on a JAX array,
    PyTensor would make a variable of another type."""
    value = v.get_value(borrow=True)
    value = np.array(value) if copy else np.asarray(value)
    return pytensor.shared(value, name=v.name, shape=v.type.shape, borrow=True)
