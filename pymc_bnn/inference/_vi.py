"""The variational fits of :func:`pymc_bnn.inference.fit`: ADVI and full-rank ADVI with
Adam, run by the compiled scan engine (:mod:`pymc_bnn.inference._compiled_vi`, in calls
of :data:`SCAN_CHUNK` steps) or by ``pm.fit``; the step size and its minibatch schedule.
"""

from __future__ import annotations

import logging

import numpy as np
import pytensor

from pymc_bnn.inference._concurrency import GRAPH_LOCK
from pymc_bnn.network._checks import check_choice

__all__ = [
    "ENGINES",
    "MINIBATCH_ADVI_LEARNING_RATE",
    "MINIBATCH_FINAL_LR_FRACTION",
    "SCAN_CALL_BYTES",
    "SCAN_CHUNK",
    "VI_DEFAULTS",
    "check_engine",
    "fit_vi",
    "minibatch_learning_rate",
]

#: Default (n_iter, learning_rate) per VI method. Full-rank ADVI's gradient on the
#: Cholesky factor is much noisier: at 0.01 it wanders (moons: -ELBO ~250, 85%); at
#: 0.003 for 20k steps it reaches ~130 and 96%.
VI_DEFAULTS = {"advi": (10_000, 0.01), "fullrank_advi": (20_000, 0.003)}


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
#: where the convergence check (:func:`pymc_bnn.inference.diagnose`, the last two
#: tenths) compares like with like. Full-batch fits, whose only noise is ADVI's own
#: Monte Carlo draw, keep the constant step they were measured with. Measured in
#: ``benchmarks/results/fit_scaling.md``.
MINIBATCH_FINAL_LR_FRACTION = 0.1


def minibatch_learning_rate(learning_rate: float, step: int, n_iter: int) -> float:
    """The step size of minibatch ADVI at ``step`` of ``n_iter`` (see
    :data:`MINIBATCH_FINAL_LR_FRACTION`)."""
    start, end = n_iter // 2, (4 * n_iter) // 5
    progress = min(1.0, max(0.0, (step - start) / max(1, end - start)))
    return float(learning_rate) * MINIBATCH_FINAL_LR_FRACTION**progress


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


def check_engine(engine: str) -> str:
    from pymc_bnn.inference._compiled_vi import jax_available

    check_choice("engine", engine, ENGINES)
    if engine == "auto":
        return "jax" if jax_available() else "pymc"
    if engine == "jax" and not jax_available():
        raise ImportError(
            "engine='jax' needs jax, which is not installed. Install it with: "
            "pip install 'pymc_bnn[bench]' (or pip install jax), or use engine='pymc'."
        )
    return engine


def _run_scan(
    inference,
    *,
    n_iter,
    learning_rate,
    seed,
    callbacks,
    progressbar,
    minibatch_source=None,
    decay=False,
):
    """ADVI by :class:`pymc_bnn.inference._compiled_vi.ScanADVI`, compiled once per model
    structure (:data:`pymc_bnn.inference._runner_cache.RUNNERS`); returns the loss history."""
    from pymc_bnn.inference._runner_cache import RUNNERS

    with RUNNERS.runner(
        inference, learning_rate=learning_rate, mode="JAX", host_rows=minibatch_source is not None
    ) as runner:
        runner.row_source = minibatch_source
        try:
            # the compiled steps: other fits of fit_concurrently do graph work meanwhile
            with GRAPH_LOCK.released():
                return _run_chunks(
                    runner,
                    inference,
                    n_iter=n_iter,
                    seed=seed,
                    callbacks=callbacks,
                    progressbar=progressbar,
                    learning_rate=learning_rate if decay else None,
                )
        finally:
            runner.row_source = None


def _run_chunks(runner, inference, *, n_iter, seed, callbacks, progressbar, learning_rate=None):
    """Run the compiled steps in calls; ``learning_rate`` given: the step size of each
    call is :func:`minibatch_learning_rate` at the call's middle step (else the
    runner's own, constant)."""
    from pymc.variational.callbacks import CheckParametersConvergence

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
                            runner.learning_rate.set_value(
                                np.float64(
                                    minibatch_learning_rate(learning_rate, done + k // 2, n_iter)
                                )
                            )
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
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("ADVI"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
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


def fit_vi(
    model,
    spec,
    *,
    method,
    n_iter,
    learning_rate,
    init_sigma,
    tol,
    seed,
    progressbar,
    backend,
    callbacks,
    engine,
    minibatch_source=None,
):
    import pymc as pm
    from pymc.variational.callbacks import CheckParametersConvergence

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
        from pymc_bnn.inference._compiled_vi import ScanUnsupported

        try:
            with model:
                loss = _run_scan(
                    inference,
                    n_iter=n_iter,
                    learning_rate=learning_rate,
                    seed=seed,
                    callbacks=cbs,
                    progressbar=progressbar,
                    minibatch_source=minibatch_source,
                    decay=decay,
                )
            return approx, loss, "jax"
        except ScanUnsupported as err:
            if minibatch_source is not None:
                raise ValueError(
                    f"minibatch_source needs the compiled ADVI engine, which "
                    f"cannot run this model: {err}"
                ) from None
            # a correct but slower path; the Posterior records engine="pymc"
            logging.getLogger("pymc_bnn").info("compiled ADVI unavailable (%s); using pm.fit", err)
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
