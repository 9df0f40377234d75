"""Fit a model from :func:`pymc_bnn.model.build_model` by ADVI, full-rank ADVI or NUTS.

All three go through PyMC's own machinery (``pm.ADVI`` / ``pm.FullRankADVI`` with
Adam, ``pm.sample`` with the fastest installed NUTS backend). This module adds the
defaults that converge on small BNNs, seeding, a NaN guard with bounded restarts,
an optional convergence stop, convergence diagnostics (:func:`diagnose`, with a
warning when they fail) and an immutable result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import logging
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor
from pymc.variational.callbacks import CheckParametersConvergence

from pymc_bnn._validation import (
    check_choice,
    check_positive_float,
    check_positive_int,
)
from pymc_bnn.exceptions import ConvergenceWarning, SamplingWarning  # re-exported
from pymc_bnn.model import NetworkSpec, network_spec
# default_threads is public here (fit_concurrently's default); it lives in its own
# module so that the NUTS chains (pymc_bnn._compiled_nuts) need not import this one
from pymc_bnn.threads import THREADS_ENV, default_threads

__all__ = [
    "ENGINES",
    "METHODS",
    "NUTS_INITS",
    "NUTS_SAMPLERS",
    "VI_DEFAULTS",
    "Posterior",
    "SamplingWarning",
    "default_nuts_sampler",
    "default_threads",
    "diagnose",
    "fit",
    "fit_concurrently",
    "sample_more",
]

#: Inference methods accepted by :func:`fit`.
METHODS = ("advi", "fullrank_advi", "nuts")
#: NUTS implementations PyMC can drive, fastest first for a plain network (measured on
#: moons, 2 chains x 2000 steps on 2 cores: numpyro 48 s, nutpie 120 s, PyMC 135 s).
NUTS_SAMPLERS = ("numpyro", "nutpie", "pymc")
#: ... and for a hierarchical one (``groups=``), whose group scales and per-group
#: deviations are strongly correlated: nutpie's mass-matrix adaptation needs a third of
#: numpyro's leapfrog steps there (18 rotated-moons tasks, 2 chains x (1000 tune + 500
#: draws): 57 vs 154 steps per draw; 48 s vs 190 s on a busy 2-core machine).
NUTS_SAMPLERS_HIERARCHICAL = ("nutpie", "numpyro", "pymc")
#: The extra that installs each backend (``pip install 'pymc_bnn[<extra>]'``).
_NUTS_EXTRAS = {"numpyro": "jax", "nutpie": "nutpie"}
_NUTS_MODULES = {"numpyro": ("numpyro", "jax"), "nutpie": ("nutpie",), "pymc": ()}
#: Default (n_iter, learning_rate) per VI method. Full-rank ADVI's gradient on the
#: Cholesky factor is much noisier: at 0.01 it wanders (moons: -ELBO ~250, 85%); at
#: 0.003 for 20k steps it reaches ~130 and 96%.
VI_DEFAULTS = {"advi": (10_000, 0.01), "fullrank_advi": (20_000, 0.003)}
#: How NUTS chains start: ``"jitter"`` (PyMC's initial point plus uniform jitter, as
#: ``pm.sample``) or ``"advi"`` (one draw per chain from a quick mean-field ADVI fit).
NUTS_INITS = ("jitter", "advi")

# ---------------------------------------------------------------- diagnostics
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


class _ReadOnlyDict(Mapping):
    """A read-only mapping. Unlike ``types.MappingProxyType`` it can be pickled and
    deep-copied (estimators and their posteriors are)."""

    __slots__ = ("_data",)

    def __init__(self, data=()):
        object.__setattr__(self, "_data", dict(data))

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)

    def __setattr__(self, name, value):
        raise AttributeError("diagnostics are read-only")

    def __reduce__(self):
        return (type(self), (self._data,))


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
    diagnostics : Mapping
        Convergence diagnostics of the run, computed once by :func:`fit` (or
        :func:`sample_more`) with :func:`diagnose`; see there for the keys. A
        read-only mapping (a plain ``dict`` passed in is copied into one); empty when
        not computed.
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
    diagnostics: Mapping = field(default_factory=_ReadOnlyDict, compare=False)

    def __post_init__(self):
        if not isinstance(self.diagnostics, Mapping):
            raise TypeError(
                f"diagnostics must be a mapping (e.g. a dict); got "
                f"{type(self.diagnostics).__name__}."
            )
        if not isinstance(self.diagnostics, _ReadOnlyDict):
            object.__setattr__(self, "diagnostics", _ReadOnlyDict(self.diagnostics))

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


def _check_nuts_sampler(name: str | None, *, hierarchical: bool = False) -> str:
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
#: checked between calls) ...
SCAN_CHUNK = 1000
#: ... unless the call's random inputs (the noise of every variational parameter and a
#: minibatch's rows, for every step; two sets of buffers, see ScanADVI.run) would
#: exceed this many bytes: then a call runs the largest divisor of SCAN_CHUNK that
#: fits (wide inputs, e.g. 3,000 features into 32 units, or wide minibatches).
SCAN_CALL_BYTES = 128 * 2**20
#: Minibatch ADVI's step size: held for the first half of the steps, lowered
#: geometrically to this fraction of it by four fifths of them, and held there for the
#: last fifth (one value per compiled call, of at most :data:`SCAN_CHUNK` steps). Why: a
#: minibatch's gradient noise grows with rows / batch and does not shrink as the fit
#: converges, so at a constant step Adam's iterates keep jittering around the optimum
#: (Robbins and Monro: the steps must shrink); the last fifth at a constant step is
#: where the convergence check (:func:`diagnose`, the last two tenths) compares like
#: with like. Full-batch fits, whose only noise is ADVI's own Monte Carlo draw, keep
#: the constant step they were measured with. Measured in
#: ``benchmarks/results/fit_scaling.md``.
MINIBATCH_FINAL_LR_FRACTION = 0.1


def minibatch_learning_rate(learning_rate: float, step: int, n_iter: int) -> float:
    """The step size of minibatch ADVI at ``step`` of ``n_iter`` (see
    :data:`MINIBATCH_FINAL_LR_FRACTION`)."""
    start, end = n_iter // 2, (4 * n_iter) // 5
    progress = min(1.0, max(0.0, (step - start) / max(1, end - start)))
    return float(learning_rate) * MINIBATCH_FINAL_LR_FRACTION ** progress


#: Default step size of mean-field ADVI on a minibatch model. Adam divides by the
#: root mean square of the gradient, which a minibatch's noise inflates: at the
#: full-batch default (0.01) its steps were so small that 10,000 of them left the
#: ELBO far from where full batches took it; three times larger, then lowered
#: (:data:`MINIBATCH_FINAL_LR_FRACTION`), the fit reached a higher ELBO than the
#: full-batch one (``benchmarks/results/fit_scaling.md``).
MINIBATCH_ADVI_LEARNING_RATE = 0.03


def _steps_per_call(runner) -> int:
    """Steps per compiled call for ``runner``: :data:`SCAN_CHUNK`, or the largest of its
    divisors whose inputs fit in :data:`SCAN_CALL_BYTES` (a divisor, so that runs of a
    multiple of SCAN_CHUNK steps need one compiled length, as XLA's are static)."""
    fits = max(1, SCAN_CALL_BYTES // max(1, runner.input_bytes_per_step()))
    return max(d for d in range(1, SCAN_CHUNK + 1) if SCAN_CHUNK % d == 0 and d <= fits)


# --------------------------------------------------------------- concurrent fits
class _GraphLock:
    """Serialises the graph work of concurrent fits; compiled runs happen outside it.

    PyMC model building, PyTensor graph rewriting and compilation are not documented
    as thread-safe, and ``warnings.catch_warnings`` (used around compilation) is not.
    A fit run by :func:`fit_concurrently` holds this lock except while its compiled
    ADVI steps run (:meth:`released`, in :func:`_run_scan`): JAX releases the GIL
    there, so that is where the threads overlap.
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._local = threading.local()

    def __enter__(self):
        self._lock.acquire()
        self._local.depth = getattr(self._local, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        self._local.depth -= 1
        self._lock.release()
        return False

    @contextlib.contextmanager
    def released(self):
        """Let other fits do graph work meanwhile, if this thread holds the lock."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = 0
        for _ in range(depth):
            self._lock.release()
        try:
            yield
        finally:
            for _ in range(depth):
                self._lock.acquire()
            self._local.depth = depth


_GRAPH_LOCK = _GraphLock()


def fit_concurrently(tasks: Sequence[Callable[[], object]], *,
                     n_threads: int | None = None) -> list:
    """Run independent fits at the same time, in threads; results in task order.

    Each task is a callable without arguments that builds a model and calls
    :func:`fit` (e.g. a default estimator fit's final network and its three
    cross-fitting networks). The compiled ADVI steps of different tasks overlap (JAX
    releases the GIL); everything else in a task — model building, compilation,
    diagnostics — runs under one process-wide lock, one task at a time. Two fits of
    the same structure at the same time use two runners, the second cloned from the
    first without compiling (:class:`pymc_bnn._compiled_vi.RunnerCache`). A task's
    result does not depend on the threads: each fit draws only from its own seed.

    The first task runs in the calling thread (its warnings are raised there, as in
    a plain call); the others are shared out among ``n_threads - 1`` threads and the
    calling thread as each becomes free. When a task raises, no further task starts
    and the first failure (in task order) is raised once the running ones are done.

    Parameters
    ----------
    tasks : sequence of callables ``() -> object``
    n_threads : int, optional
        At most this many tasks at a time; default :func:`default_threads` (1: one
        after the other, in the calling thread).

    Returns
    -------
    list
        ``[task() for task in tasks]``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import build_model, fit
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> tasks = [lambda s=s: fit(build_model(X, y, hidden_layer_sizes=(3,)), n_iter=3000,
    ...                          random_seed=s) for s in range(3)]
    >>> [p.seed for p in fit_concurrently(tasks, n_threads=2)]
    [0, 1, 2]
    """
    tasks = list(tasks)
    n = default_threads() if n_threads is None else check_positive_int("n_threads", n_threads)
    n = min(n, len(tasks))
    if n <= 1:
        return [task() for task in tasks]
    results: list = [None] * len(tasks)
    errors: list = [None] * len(tasks)
    pending = iter(range(1, len(tasks)))  # task 0 is the calling thread's
    take = threading.Lock()
    failed = threading.Event()

    def run(i: int) -> None:
        try:
            with _GRAPH_LOCK:
                results[i] = tasks[i]()
        except BaseException as err:  # noqa: BLE001 - re-raised below, in task order
            errors[i] = err
            failed.set()

    def work() -> None:
        while not failed.is_set():
            with take:
                i = next(pending, None)
            if i is None:
                return
            run(i)

    threads = [threading.Thread(target=work, name=f"pymc_bnn-fit-{k}", daemon=True)
               for k in range(n - 1)]
    for t in threads:
        t.start()
    run(0)
    work()
    for t in threads:
        t.join()
    for err in errors:
        if err is not None:
            raise err
    return results


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


def _run_scan(inference, *, n_iter, learning_rate, seed, callbacks, progressbar,
              minibatch_source=None, decay=False):
    """ADVI by :class:`pymc_bnn._compiled_vi.ScanADVI`, compiled once per model
    structure (:data:`pymc_bnn._compiled_vi.RUNNERS`); returns the loss history."""
    from pymc_bnn._compiled_vi import RUNNERS

    with RUNNERS.runner(inference, learning_rate=learning_rate, mode="JAX",
                        host_rows=minibatch_source is not None) as runner:
        runner.row_source = minibatch_source
        try:
            # the compiled steps: other fits of fit_concurrently do graph work meanwhile
            with _GRAPH_LOCK.released():
                return _run_chunks(runner, inference, n_iter=n_iter, seed=seed,
                                   callbacks=callbacks, progressbar=progressbar,
                                   learning_rate=learning_rate if decay else None)
        finally:
            runner.row_source = None


def _run_chunks(runner, inference, *, n_iter, seed, callbacks, progressbar,
                learning_rate=None):
    """Run the compiled steps in calls; ``learning_rate`` given: the step size of each
    call is :func:`minibatch_learning_rate` at the call's middle step (else the
    runner's own, constant)."""
    rng = np.random.default_rng(seed)
    losses, done = [], 0
    per_call = _steps_per_call(runner)
    # PyMC's convergence check reads only the variational parameters; other callbacks
    # may evaluate the model, so they run with the data back in NumPy form.
    params_only = [cb for cb in callbacks if isinstance(cb, CheckParametersConvergence)]
    others = [cb for cb in callbacks if not isinstance(cb, CheckParametersConvergence)]
    with _Progress(n_iter, enabled=progressbar) as bar:
        try:
            while done < n_iter:
                k = min(per_call, n_iter - done)
                with runner.data_on_device():
                    while True:
                        if learning_rate is not None:
                            runner.learning_rate.set_value(np.float64(
                                minibatch_learning_rate(learning_rate, done + k // 2, n_iter)))
                        chunk = runner.run(k, rng)
                        losses.append(chunk)
                        done += k
                        if not np.all(np.isfinite(chunk)):
                            raise FloatingPointError("NaN occurred in optimization.")
                        runner.materialize()
                        for cb in params_only:
                            cb(inference.approx, np.concatenate(losses), done)
                        bar.advance(k, float(chunk.mean()))
                        k = min(per_call, n_iter - done)
                        if others or k <= 0:
                            break
                for cb in others:
                    cb(inference.approx, np.concatenate(losses), done)
        except StopIteration:
            pass
        finally:
            runner.materialize()
    return np.concatenate(losses)


class _Progress:
    """A progress bar of the compiled ADVI steps on stderr (rich, which PyMC uses for
    its own bars); does nothing unless ``enabled``."""

    def __init__(self, total: int, *, enabled: bool):
        self.total, self.enabled = total, enabled

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn)

            self._bar = Progress(TextColumn("ADVI"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("advi", total=self.total, loss="")
        return self

    def advance(self, steps: int, loss: float) -> None:
        if self.enabled:
            self._bar.update(self._task, advance=steps, loss=f"{loss:,.5g}")

    def __exit__(self, *exc):
        if self.enabled:
            self._bar.__exit__(*exc)
        return False


def _fit_vi(model, spec, *, method, n_iter, learning_rate, init_sigma, tol, seed,
            progressbar, backend, callbacks, engine, minibatch_source=None):
    inference_cls = pm.ADVI if method == "advi" else pm.FullRankADVI
    with model:
        inference = inference_cls(random_seed=seed)
    approx = inference.approx
    _set_initial_spread(approx, init_sigma)
    # Report and optimise the full-data ELBO whatever the batch size: Adam is
    # invariant to the constant factor, and loss curves stay comparable.
    approx.scale_cost_to_minibatch = False
    cbs = list(callbacks)
    decay = spec.batch_size is not None  # see MINIBATCH_FINAL_LR_FRACTION
    if tol is not None:
        cbs.append(CheckParametersConvergence(every=100, tolerance=tol))
    if engine == "jax":
        from pymc_bnn._compiled_vi import ScanUnsupported

        try:
            with model:
                loss = _run_scan(inference, n_iter=n_iter, learning_rate=learning_rate,
                                 seed=seed, callbacks=cbs, progressbar=progressbar,
                                 minibatch_source=minibatch_source, decay=decay)
            return approx, loss, "jax"
        except ScanUnsupported as err:
            if minibatch_source is not None:
                raise ValueError(f"minibatch_source needs the compiled ADVI engine, which "
                                 f"cannot run this model: {err}") from None
            # a correct but slower path; the Posterior records engine="pymc"
            logging.getLogger("pymc_bnn").info("compiled ADVI unavailable (%s); using pm.fit",
                                               err)
    # pm.fit logs "Finished [100%]: Average Loss = ..." even without a progress bar
    log = logging.getLogger("pymc.variational.inference")
    level = log.level
    if not progressbar:
        log.setLevel(logging.WARNING)
    step_size = pytensor.shared(np.float64(learning_rate), name="learning_rate")
    if decay:
        def set_step_size(approx, hist, i):
            step_size.set_value(np.float64(minibatch_learning_rate(learning_rate, i, n_iter)))

        cbs.insert(0, set_step_size)
    try:
        with model:
            inference.fit(
                n=n_iter,
                obj_optimizer=pm.adam(learning_rate=step_size),
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
        If set, stop early once the relative change of the variational parameters
        over 100 steps falls below ``tol`` (PyMC's ``CheckParametersConvergence``).
    draws, tune, chains : int
        NUTS draws and tuning steps per chain, and number of chains.
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
        JAX call (:mod:`pymc_bnn._compiled_vi`; ~5-10x faster on small networks),
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
    >>> post = fit(build_model(X, y, hidden_layer_sizes=(3,)), n_iter=3000, random_seed=0)
    >>> post.loss.shape, post.diagnostics["converged"]
    ((3000,), True)
    """
    from pymc_bnn.compile_cache import keep_generated_source

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
        isinstance(target_accept, bool) or not isinstance(target_accept, float | int)
        or not 0 < target_accept < 1
    ):
        raise ValueError(f"target_accept must be a number in (0, 1); got {target_accept!r}.")
    engine = _check_engine(engine)
    if minibatch_source is not None and (method == "nuts" or spec.batch_size is None
                                         or engine != "jax"):
        raise ValueError("minibatch_source needs ADVI on a minibatch model (batch_size) "
                         "with the compiled engine (jax installed, engine='auto' or 'jax').")
    if random_seed is None:
        random_seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
    seed = int(random_seed)

    if method == "nuts":
        sampler = _check_nuts_sampler(nuts_sampler, hierarchical=spec.hierarchical)
        nuts_init = check_choice("nuts_init", nuts_init, NUTS_INITS)
        init_seed, sample_seed = (int(c.generate_state(1)[0] >> 1)
                                  for c in np.random.SeedSequence(seed).spawn(2))
        initvals = None
        if nuts_init == "advi":
            # only a start point: whether its ELBO levelled off does not matter
            warm = fit(model, method="advi", n_iter=init_n_iter, random_seed=init_seed,
                       engine=engine, warn=False)
            initvals = _chain_points(model, warm.approx.sample(chains, random_seed=init_seed),
                                     from_draws=True)
            if sampler == "nutpie":  # nutpie takes one start for all chains
                initvals = initvals[0]
        nuts = None if target_accept is None else {"target_accept": float(target_accept)}
        idata = _sample_nuts(model, sampler, draws=draws, tune=tune, chains=chains,
                             seed=sample_seed, initvals=initvals, progressbar=progressbar,
                             nuts=nuts)
        posterior = Posterior(method=method, spec=spec, seed=seed, idata=idata,
                              nuts_sampler=sampler, model=model)
        return _with_diagnostics(posterior, warn=warn)

    lr = learning_rate
    for attempt in range(max_restarts + 1):
        try:
            approx, loss, used_engine = _fit_vi(
                model, spec, method=method, n_iter=n_iter, learning_rate=lr,
                init_sigma=init_sigma, tol=tol, seed=seed, progressbar=progressbar,
                backend=backend, callbacks=callbacks, engine=engine,
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
    posterior = Posterior(method=method, spec=spec, seed=seed, approx=approx, loss=loss,
                          learning_rate=lr, engine=used_engine)
    return _with_diagnostics(posterior, warn=warn)


def _with_diagnostics(posterior: Posterior, *, warn: bool) -> Posterior:
    """``posterior`` with its :func:`diagnose` result, warning (at the caller of the
    public function that called this) when a check failed."""
    diagnostics = diagnose(posterior)
    if warn:
        _warn_diagnostics(diagnostics, stacklevel=3)
    return dataclasses.replace(posterior, diagnostics=diagnostics)


# ----------------------------------------------------------------------------- NUTS
def _numpyro_chain_method(chains: int) -> str:
    import jax

    # numpyro runs chains in parallel only over several XLA devices; say
    # "sequential" up front rather than have it warn and fall back.
    return "parallel" if jax.local_device_count() >= chains else "sequential"


def _sample_nuts(model, sampler, *, draws, tune, chains, seed, initvals, progressbar,
                 nuts=None, step=None):
    """``pm.sample`` with one of PyMC's NUTS backends; returns the DataTree.

    nutpie: the same sampling through a cache of compiled models
    (:func:`pymc_bnn._compiled_nuts.sample_nutpie`), so that a later fit of the same
    structure does not compile again; the same draws as ``pm.sample`` (tested)."""
    if sampler == "nutpie" and step is None:
        from pymc_bnn._compiled_nuts import sample_nutpie

        return sample_nutpie(model, draws=draws, tune=tune, chains=chains, seed=seed,
                             initvals=initvals, progressbar=progressbar, nuts=nuts)
    kwargs = {}
    nuts = dict(nuts or {})
    if sampler == "numpyro":
        from pymc_bnn.compile_cache import enable

        enable()  # a second process reads the sampler's XLA programs back from disk
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
    warn: bool = True,
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
    more = dataclasses.replace(posterior, idata=_concat_runs([posterior.idata, new], "draw"))
    return _with_diagnostics(more, warn=warn)


# ----------------------------------------------------------------------- diagnostics
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
      ``max(|final_loss|, 1)``, the loss being in nats). Measured on moons (500 rows,
      (5, 5) tanh units; relative decrease between the last two windows, z):
      default 10,000-step ADVI, 10 seeds: -0.6% to +0.4%, |z| <= 2.7, none flagged
      (BNN losses level off in plateaus with occasional small drops); 5,000 steps,
      4 seeds: -0.9% to +1.4%, 1 flagged; 2,000 steps: 1.4-3.3%, 1 of 3 flagged;
      1,000 steps: 3.2-3.9%, z 4.6-6.7, all flagged; 300 steps: 13-42%, z >= 30.
      With the 0.1% one might first pick, the z test alone would decide (one
      standard error is 0.2-0.3% of the loss there), and the wander puts default fits
      within reach of 3 standard errors; 1% lies above every default full-batch fit
      and below every 1,000-step fit. Defaults flagged in 6 seeds: minibatch (batch
      50) 1 (3.5%, z 3.4), full-rank 1 (1.6%, z 5.6); both were indeed still falling
      over their last 4,000-8,000 steps.

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
    >>> post = fit(build_model(X, y, hidden_layer_sizes=(3,)), n_iter=5000, random_seed=0)
    >>> d = diagnose(post)
    >>> d == dict(post.diagnostics), d["n_steps"], d["window"], d["converged"]
    (True, 5000, 500, True)
    """
    if not isinstance(posterior, Posterior):
        raise TypeError(f"posterior must be a Posterior (from pymc_bnn.fit); got "
                        f"{type(posterior).__name__}.")
    if posterior.method in _VI_LABELS:
        return _diagnose_vi(posterior.method, posterior.loss)
    if posterior.idata is None:
        raise ValueError("this NUTS posterior holds no draws to diagnose.")
    return _diagnose_nuts(posterior, X, groups)


def _diagnose_vi(method: str, loss) -> dict:
    loss = np.asarray(loss, dtype=np.float64)
    n = int(loss.size)
    out = {
        "method": method, "converged": False, "message": "", "n_steps": n, "window": 0,
        "final_loss": None, "previous_loss": None, "decrease": None,
        "relative_decrease": None, "noise_se": None, "z": None,
        "z_threshold": ELBO_NOISE_Z, "relative_threshold": ELBO_RELATIVE_TOL,
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
    last, previous = loss[n - w:], loss[n - 2 * w : n - w]
    final = float(trim_mean(last, ELBO_TRIM))
    prev = float(trim_mean(previous, ELBO_TRIM))
    decrease = prev - final
    relative = decrease / max(abs(final), 1.0)
    steps = np.diff(loss[n - 2 * w:])
    noise_sd = 1.4826 * float(np.median(np.abs(steps - np.median(steps)))) / np.sqrt(2.0)
    se = noise_sd * np.sqrt(2.0 / w)  # of the difference of two means of w steps
    z = decrease / se if se > 0 else None
    significant = decrease > ELBO_NOISE_Z * se
    converged = not (significant and relative > ELBO_RELATIVE_TOL)
    out.update(
        converged=bool(converged), window=int(w), final_loss=final, previous_loss=prev,
        decrease=float(decrease), relative_decrease=float(relative), noise_se=float(se),
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
    from pymc_bnn.predictive import from_idata

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
        "method": posterior.method, "converged": False, "message": "",
        "n_chains": n_chains, "n_draws": n_draws, "n_divergences": n_div,
        "quantity": None, "n_points": 0, "n_quantities": 0,
        "max_rhat": None, "min_ess_bulk": None, "min_ess_tail": None,
        "rhat_threshold": RHAT_THRESHOLD, "ess_threshold": ESS_PER_CHAIN * n_chains,
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
                raise ValueError(f"groups must have shape ({X.shape[0]},), one code per row "
                                 f"of X; got {groups.shape}.")
            groups = groups[rows]
        values, quantity = _network_outputs(posterior, np.ascontiguousarray(X[rows]), groups)
        # constant quantities (or a single chain) give NaN, with numpy warnings
        with np.errstate(divide="ignore", invalid="ignore"):
            rhat = np.asarray(az.rhat(values, method="rank", chain_axis=0, draw_axis=1))
            bulk = np.asarray(az.ess(values, method="bulk", chain_axis=0, draw_axis=1))
            tail = np.asarray(az.ess(values, method="tail", prob=_TAIL_PROB,
                                     chain_axis=0, draw_axis=1))
        out.update(quantity=quantity, n_points=int(rows.size), n_quantities=int(values.shape[2]),
                   max_rhat=_reduce(np.nanmax, rhat), min_ess_bulk=_reduce(np.nanmin, bulk),
                   min_ess_tail=_reduce(np.nanmin, tail))
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
        advice.append("divergences: raise target_accept (pymc_bnn.fit(..., target_accept=0.95)), "
                      "lengthen tune, start from ADVI (nuts_init='advi'), or use a smaller "
                      "prior_sigma")
    mixing = []
    if d["max_rhat"] is not None and d["max_rhat"] > d["rhat_threshold"]:
        mixing.append(f"R-hat up to {d['max_rhat']:.3f} (> {d['rhat_threshold']:g})")
    low = [f"{kind} ESS as low as {d[key]:.0f}" for kind, key in
           (("bulk", "min_ess_bulk"), ("tail", "min_ess_tail"))
           if d[key] is not None and d[key] < d["ess_threshold"]]
    if low:
        mixing.append(f"{' and '.join(low)} (< {d['ess_threshold']}, i.e. 100 per chain)")
    if mixing:
        names = {"logit": "logits", "centred_logit": "centred logits", "mean": "means"}
        problems.append(", ".join(mixing) + f" for the network's {names[d['quantity']]} at "
                        f"{d['n_points']} training points")
        advice.append("R-hat/ESS: lengthen tune and draws"
                      + (" (or continue the chains with sample_more)" if resumable else "")
                      + ", or run more chains")
    if not problems:
        return ""
    return ("NUTS draws may not represent the posterior: " + "; ".join(problems) + ". To do: "
            + "; ".join(advice) + ".")


def _warn_diagnostics(diagnostics, *, stacklevel: int) -> None:
    """Warn with ``diagnostics["message"]`` when a check failed."""
    if diagnostics.get("converged", True) or not diagnostics.get("message"):
        return
    category = SamplingWarning if diagnostics["method"] == "nuts" else ConvergenceWarning
    warnings.warn(diagnostics["message"], category, stacklevel=stacklevel + 1)
