"""Dask scaling: out-of-core fits, block-wise predictions and cross-validation on a cluster.

What ``pymc_bnn.dask`` buys a user whose data are larger than one process likes, or
whose cross-validation could use more than one process. Only the public API is used:
the estimators' ``fit`` on dask Arrays (minibatch ADVI streaming row blocks) and
``predict_proba`` on a dask Array (a lazy, row-chunked dask array computed block-wise,
the fitted estimator one graph key shipped once per worker), and
``joblib.parallel_backend("dask")`` around scikit-learn's ``cross_val_score``.

Parts (the issue's letters; ``--parts a,b,c`` runs a subset, default all):

(a) Out-of-core fit. Data: X, N x 20 standard-normal float64, and y = 1[x0 + 0.5 x1^2
    - x2 x3 + N(0, 0.5^2) > 0.5] (int64), written once to zarr stores (zarr's default
    codecs) in a temporary folder or ``--data-dir``, block by block with one seed per
    block (the whole array is never in memory), chunks of 250,000 rows; N = 10^6 and
    10^7 (1.6 GB of X); ``--quick``: 2 x 10^5 rows in chunks of 50,000. Test sample:
    100,000 independent rows of the same rule (``--quick``: 20,000). Two fits of
    ``BayesianMLPClassifier((16,), batch_size=256, n_iter=10_000, prior_sigma=1.0,
    random_state=seed)`` (a fixed prior for both paths: the default ``"auto"`` would
    run the evidence step on 20,000 rows first, the same on both, and this part
    measures the steps),
    each (N, method) in a FRESH process (``--fit-worker``) with its own empty JAX
    compilation cache, one process at a time:

    - ``streamed``: ``fit(da.from_zarr(X), da.from_zarr(y))``: minibatch ADVI drawing
      its rows from a pool of row blocks (``pymc_bnn.dask.BlockSampler``); the default
      ``posterior_temperature="auto"`` is T = 1 there;
    - ``in-memory``: the same with ``posterior_temperature=1.0`` on the arrays loaded
      whole into NumPy (the anchor).

    In each process: imports (RSS after imports), the data (in memory: loaded), a first
    fit of 1,000 steps (it compiles: ``1st fit s``), then the RSS high-water mark
    (VmHWM) is reset through ``/proc/self/clear_refs`` and the measured fit runs: RSS
    before it (the baseline: imports + compiled functions + data), peak RSS during it,
    growth = peak - baseline, its loss curve (-ELBO, mean of the last 1,000 steps; full-
    data units on both paths) and test accuracy; the estimator is then dropped (a fitted
    estimator holds its training data) and ``--repeats`` - 1 (2) more fits of the same
    length run for their times. ADVI time per 1,000 steps: the fixed costs of a fit
    (model build; target encoding, which on dask reads all of y; the first pool blocks;
    posterior draws; in memory, copies of X) are 1-7 s against 0.02-0.1 s per 1,000
    steps and vary by seconds, so the time is taken inside the fits: the engine runs
    the steps in calls of 1,000, and :class:`ChunkClock` timestamps the return of
    each call (a wrapper around the ``pymc_bnn.inference._compiled_vi.ScanADVI.run``,
    observation only); the median over all fits of the intervals between consecutive
    calls of a fit (the first call of each fit excluded) is ``ADVI s / 1000 steps``,
    with everything a streamed call waits for (block loads) included. ``fixed s per
    fit`` = median fit time - 9 x that (the first call counts as fixed).
    Per N, a second table compares streamed with in-memory against the issue's targets
    for the 10^7 x 20 array: streamed peak RSS <= 500 MB (500e6 bytes) and time per
    step <= 1.5x the in-memory fit's; the baseline is reported beside them.
    ``--quick``: fits of 2,000 steps (two 1,000-step calls: one interval), one repeat,
    and the two processes of an N run at the same time (a smoke test: numbers not
    meaningful).

(b) Prediction at scale. ``BayesianMLPClassifier((5, 5), posterior_temperature=1.0,
    random_state=0)`` is fit once, in this (the client) process, on
    ``make_moons(1000, noise=0.2, random_state=seed)`` standardised. Test inputs: N x 2
    standard-normal rows from ``dask.array.random.default_rng(seed)``, chunks of
    250,000 rows (N = 10^6 and 10^7; ``--quick``: 40,000 rows in chunks of 10,000). The
    quantity computed is ``predict_proba(X)[:, 1].mean()``, so only a scalar comes
    back to the client. Paths:

    - ``numpy``: the same rows materialised in this process (``X.compute()``, timed
      apart), then ``predict_proba`` on the NumPy array; skipped when the estimated
      memory (X, the probabilities, one column) exceeds ``--max-numpy-gb`` (4) or half
      of the available memory;
    - ``dask threads``: the dask threaded scheduler in this process (default: one
      thread per core);
    - ``dask 1 worker`` / ``dask 2 workers``: ``distributed.LocalCluster(n_workers=k,
      threads_per_worker=1)`` (processes), one cluster per k, started after the
      in-process paths (start-up timed apart). distributed's nanny starts every
      worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (its ``pre-spawn-environ``
      default); with it, glibc returns every freed buffer to the kernel and the
      predictive's per-chunk buffers page-fault afresh on every call (measured on
      25,000 rows in a plain process: 0.18 s without it, 0.62-0.78 s with it, 10x
      the minor page faults). So each cluster runs twice (``--malloc-trim both``):
      as distributed starts it, and ``(trim unset)``, the variable removed through
      ``distributed.nanny.pre-spawn-environ`` (glibc defaults); ``--quick`` runs only
      the former.

    Per path, ``first call`` is a warm-up on a small array (2,000 rows; on a cluster
    one small array per worker, submitted together and pinned to that worker), which
    pays the one-off costs: compiling the predictive; on a worker also receiving the
    estimator and importing pymc_bnn / PyTensor / JAX when unpickling it. Then each
    N is timed ``--repeats`` times (``warm``; median reported), and ``rows/s`` = N /
    warm. ``data only`` times the same graph's input alone (``X[:, 1].mean()``: the
    cost of generating the random rows, which the dask paths pay inside the warm
    time and the NumPy path does not). Per call: peak resident memory of the client
    and of each worker (kernel high-water mark ``VmHWM``, reset just before the call
    through ``/proc/self/clear_refs``; fallback ``ru_maxrss``), and CPU seconds of
    client + workers over the wall time (cores kept busy). Agreement: the mean
    probability of every path against the NumPy path's (or the threaded path's).

(c) Cross-validation on a cluster: 5-fold ``cross_val_score`` of
    ``make_pipeline(StandardScaler(), BayesianMLPClassifier((16,), random_state=0))``
    (default settings) on breast_cancer, serial (in this process) vs
    ``joblib.parallel_backend("dask")`` (``n_jobs=-1``) on a
    ``LocalCluster(n_workers=2, threads_per_worker=1)``; scikit-learn's
    ``MLPClassifier((16,), max_iter=2000)`` in the same pipeline, serial, as the
    anchor. Each of ``--repeats`` rounds: a serial run, and a FRESH cluster on which the
    dask run is done twice (``first``: the workers import and compile; ``warm``: a
    second run on the same cluster). Serial ``first`` is the first run in this
    process, ``warm`` the median of the later ones. Fold scores are compared with the
    serial ones (equal or not, max abs difference). ``--quick``: 1 round, 2 folds,
    ``n_iter=500`` for the BNN.

Compile cache: by default (``--compile-cache fresh``) this process and every cluster's
workers get their own new, empty JAX persistent compilation cache folder
(``PYMC_BNN_COMPILE_CACHE``), so a worker's first call compiles as on a remote
machine instead of reading what this process compiled; ``user`` leaves the user's
cache on, ``off`` switches it off.

``--quick`` exercises every code path of the script once, at the smallest settings at
which its checks still mean something; it measures nothing (its settings are listed
with each part above).

Run: ``python benchmarks/dask_scaling.py [--quick] [--parts a,b,c] [--repeats R]
[--out PATH]``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

NAME = "dask_scaling"
#: the parts by their names; ``--parts`` also takes the issue's letters a, b, c
PARTS = ("fit", "predict", "cv")
PART_ALIASES = {"a": "fit", "b": "predict", "c": "cv", **{p: p for p in PARTS}}
PATHS = ("numpy", "dask threads", "dask 1 worker", "dask 2 workers")
#: distributed's nanny sets this glibc variable in every worker (distributed.yaml,
#: ``distributed.nanny.pre-spawn-environ``); the "trim unset" clusters remove it.
TRIM_VAR = "MALLOC_TRIM_THRESHOLD_"
TRIM_SUFFIX = " (trim unset)"
WARMUP_ROWS = 2_000


class Skip(Exception):
    """A measurement not taken, with the reason."""


# ----------------------------------------------------------------- memory and CPU
# Self-contained (stdlib / psutil only): client.run ships them to the workers.
def _status_kb(key: str):
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak() -> str:
    """Reset this process's RSS high-water mark (Linux); returns the method in use."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return "VmHWM reset"
    except OSError:
        return "ru_maxrss (process lifetime peak)"


def mem_cpu() -> dict:
    """This process: RSS and peak RSS (MB), CPU seconds (user + system, all threads)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss_kb = _status_kb("VmRSS")
    if rss_kb is None:
        try:
            import psutil

            rss_kb = psutil.Process().memory_info().rss // 1024
        except ImportError:
            rss_kb = None
    hwm_kb = _status_kb("VmHWM")
    if hwm_kb is None:
        hwm_kb = usage.ru_maxrss  # KB on Linux
    return {
        "rss_mb": None if rss_kb is None else rss_kb / 1024,
        "peak_mb": hwm_kb / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "pid": os.getpid(),
    }


def measured(fn, client=None) -> dict:
    """Call ``fn()`` once: wall time, result, client and worker memory and CPU."""
    import gc

    gc.collect()
    w0 = client.run(mem_cpu) if client is not None else {}
    if client is not None:
        client.run(reset_peak)
    method = reset_peak()
    c0 = mem_cpu()
    t0 = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - t0
    c1 = mem_cpu()
    w1 = client.run(mem_cpu) if client is not None else {}
    cpu = (c1["cpu_s"] - c0["cpu_s"]) + sum(w1[w]["cpu_s"] - w0[w]["cpu_s"] for w in w1 if w in w0)
    return {
        "seconds": seconds,
        "value": value,
        "memory_method": method,
        "client_peak_mb": c1["peak_mb"],
        "client_rss_before_mb": c0["rss_mb"],
        "client_peak_extra_mb": None
        if c0["rss_mb"] is None
        else max(c1["peak_mb"] - c0["rss_mb"], 0.0),
        "workers_peak_mb": {w: v["peak_mb"] for w, v in w1.items()},
        "workers_rss_before_mb": {w: v["rss_mb"] for w, v in w0.items()},
        "cpu_s": cpu,
        "cores_busy": cpu / seconds if seconds > 0 else None,
    }


# ----------------------------------------------------------------- clusters
@contextlib.contextmanager
def _restore_env(name: str, value: str | None):
    try:
        yield
    finally:
        if value is not None:
            os.environ[name] = value


def worker_env() -> dict:
    return {k: os.environ.get(k) for k in (TRIM_VAR, "OMP_NUM_THREADS", "PYMC_BNN_COMPILE_CACHE")}


@contextlib.contextmanager
def local_cluster(n_workers: int, cache_mode: str, tmp: Path, *, trim_unset: bool = False):
    """A fresh ``LocalCluster(n_workers, threads_per_worker=1)`` and its Client.

    Yields ``(client, start_s, cache_dir)``; the workers' JAX compilation cache is a new
    empty folder (``fresh``), the user's (``user``) or off. ``trim_unset``: the workers
    start without distributed's ``MALLOC_TRIM_THRESHOLD_=65536``.
    """
    import dask
    import distributed

    env = {}
    cache = None
    if cache_mode == "fresh":
        cache = Path(tempfile.mkdtemp(prefix=f"workers{n_workers}-", dir=tmp))
        env["PYMC_BNN_COMPILE_CACHE"] = str(cache)
    elif cache_mode == "off":
        env["PYMC_BNN_COMPILE_CACHE"] = "off"
    unset = {f"distributed.nanny.pre-spawn-environ.{TRIM_VAR}": None} if trim_unset else {}
    # A nanny copies its pre-spawn variables into THIS process's os.environ and leaves
    # them there, so an earlier cluster's MALLOC_TRIM_THRESHOLD_ would reach the
    # workers through inheritance: remove it for a "trim unset" cluster.
    saved = os.environ.pop(TRIM_VAR, None) if trim_unset else None
    t0 = time.perf_counter()
    with (
        _restore_env(TRIM_VAR, saved),
        dask.config.set(unset),
        distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
            env=env,
        ) as cluster,
    ):
        with distributed.Client(cluster) as client:
            client.wait_for_workers(n_workers)
            yield client, time.perf_counter() - t0, cache


# ----------------------------------------------------------------- part (a)
FIT_FEATURES = 20
FIT_METHODS = ("streamed", "in-memory")
FIT_TEST_ROWS = 100_000
#: standard deviation of the label noise of the synthetic rule (see ``label_rule``)
FIT_NOISE_SD = 0.5
#: the issue's targets for the 10^7 x 20 float64 array
TARGET_PEAK_BYTES = 500e6
TARGET_TIME_RATIO = 1.5
FIT_RESULT = "FIT_RESULT "


def label_rule(X: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """The synthetic labels: a fixed nonlinear rule of the first four columns, plus noise."""
    return (X[:, 0] + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] + noise > 0.5).astype(np.int64)


def synthetic_block(seed: int, stream: int, index: int, n: int):
    """Rows of block ``index`` of a stream (1: training stores, 2: test sample):
    ``X`` (n, 20) standard normal and ``y`` (n,) from :func:`label_rule`; each block
    has its own seed, so a store is written one block at a time."""
    rng = np.random.default_rng([seed, stream, index])
    X = rng.standard_normal((n, FIT_FEATURES))
    return X, label_rule(X, FIT_NOISE_SD * rng.standard_normal(n))


def _store_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def zarr_data(folder: Path, n: int, chunk: int, seed: int) -> dict:
    """``X`` (n, 20) float64 and ``y`` (n,) int64 zarr stores in ``folder``, chunks of
    ``chunk`` rows, written block by block (one block in memory at a time); stores of
    the same description already there are reused."""
    import zarr

    meta = {
        "n_rows": n,
        "chunk_rows": chunk,
        "seed": seed,
        "features": FIT_FEATURES,
        "noise_sd": FIT_NOISE_SD,
        "rule": "x0 + 0.5 x1^2 - x2 x3 + N(0, noise_sd^2) > 0.5",
    }
    paths = {"X": folder / f"X_{n}_{chunk}_{seed}.zarr", "y": folder / f"y_{n}_{chunk}_{seed}.zarr"}
    info = {"x_path": str(paths["X"]), "y_path": str(paths["y"]), **meta}
    try:
        if all(dict(zarr.open_array(str(p), mode="r").attrs) == meta for p in paths.values()):
            return {
                **info,
                "reused": True,
                "write_s": None,
                "x_store_mib": _store_mib(paths["X"]),
                "y_store_mib": _store_mib(paths["y"]),
            }
    except Exception:  # missing or unreadable: (re)write
        pass
    t0 = time.perf_counter()
    zx = zarr.create_array(
        store=str(paths["X"]),
        shape=(n, FIT_FEATURES),
        chunks=(chunk, FIT_FEATURES),
        dtype="float64",
        overwrite=True,
    )
    zy = zarr.create_array(
        store=str(paths["y"]), shape=(n,), chunks=(chunk,), dtype="int64", overwrite=True
    )
    positives = 0
    for i, start in enumerate(range(0, n, chunk)):
        m = min(chunk, n - start)
        X, y = synthetic_block(seed, 1, i, m)
        zx[start : start + m] = X
        zy[start : start + m] = y
        positives += int(y.sum())
    zx.attrs.update(meta)
    zy.attrs.update(meta)
    return {
        **info,
        "reused": False,
        "write_s": time.perf_counter() - t0,
        "class_1_share": positives / n,
        "compressors": str(zx.compressors),
        "x_store_mib": _store_mib(paths["X"]),
        "y_store_mib": _store_mib(paths["y"]),
    }


class ChunkClock:
    """Timestamps the compiled ADVI engine's calls (observation only).

    The engine runs the steps of a fit in calls of 1,000 (``pymc_bnn.inference.
    SCAN_CHUNK``), each ``ScanADVI.run(n_steps, rng)`` returning when its steps are
    done; the streamed fit's block refreshes and row draws happen inside or between
    them. Wrapping that method (it is private: no public hook exposes the steps of an
    estimator's fit) gives the wall time of every call after the first of a fit
    (``intervals``: seconds per 1,000 steps between consecutive call returns, the
    whole pipeline included), without touching what a call does. If the method is
    not there, ``installed`` is False and nothing is timed.
    """

    def __init__(self):
        self.stamps: list[tuple[int, float]] = []
        self.installed = False
        try:
            from pymc_bnn.inference._compiled_vi import ScanADVI
        except ImportError:
            try:  # an older pymc_bnn
                from pymc_bnn._compiled_vi import ScanADVI
            except ImportError:
                return
        original = getattr(ScanADVI, "run", None)
        if original is None:
            return
        clock = self

        def run(runner, n_steps, rng, *a, **kw):
            out = original(runner, n_steps, rng, *a, **kw)
            clock.stamps.append((int(n_steps), time.perf_counter()))
            return out

        ScanADVI.run = run
        self.installed = True

    def intervals(self) -> list[float]:
        """Seconds per 1,000 steps of each call after the first since the last reset."""
        s = self.stamps
        return [1000 * (t1 - t0) / k for (_, t0), (k, t1) in zip(s[:-1], s[1:])]

    def reset(self) -> None:
        self.stamps = []


def fit_worker(spec: dict) -> dict:
    """One (N, method) measurement, run in a fresh process (``--fit-worker``).

    Imports; (in memory: loads the arrays;) a first fit of ``spec["warm_iter"]`` steps
    (it compiles); resets the RSS high-water mark and runs the measured fit
    (``spec["n_iter"]`` steps: peak RSS, loss curve, test accuracy, the time of each
    1,000-step call from :class:`ChunkClock`); then ``spec["repeats"] - 1`` more fits
    of the same length, for the times only.
    """
    import gc

    t_start = time.perf_counter()
    rss_start = _common.rss_mb()
    import dask.array as da
    import zarr
    from sklearn.exceptions import ConvergenceWarning

    from pymc_bnn import BayesianMLPClassifier

    clock = ChunkClock()
    out = {
        "pid": os.getpid(),
        "rss_start_mb": rss_start,
        "imports_s": time.perf_counter() - t_start,
        "rss_after_imports_mb": _common.rss_mb(),
        "chunk_clock": clock.installed,
    }
    X_test, y_test = synthetic_block(spec["seed"], 2, 0, spec["test_rows"])
    streamed = spec["method"] == "streamed"
    t0 = time.perf_counter()
    if streamed:
        X, y = da.from_zarr(spec["x_path"]), da.from_zarr(spec["y_path"])
    else:
        X = zarr.open_array(spec["x_path"], mode="r")[...]
        y = zarr.open_array(spec["y_path"], mode="r")[...]
    out["load_s"] = time.perf_counter() - t0
    out["rss_after_data_mb"] = _common.rss_mb()
    # prior_sigma=1.0: one fixed prior for both paths ("auto" would add the evidence
    # step, on 20,000 rows either way, to both fits; this part measures the steps)
    kw = {
        "hidden_layer_sizes": (16,),
        "batch_size": spec["batch_size"],
        "prior_sigma": 1.0,
        "random_state": spec["seed"],
    }
    if not streamed:  # the streamed fit's "auto" is T = 1 (no held-out folds)
        kw["posterior_temperature"] = 1.0

    fit_s, per_1000 = [], []

    def timed_fit(n_iter):
        clock.reset()
        t, est = _common.time_call(BayesianMLPClassifier(n_iter=n_iter, **kw).fit, X, y)
        return t, est, clock.intervals()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        out["first_fit_s"] = timed_fit(spec["warm_iter"])[0]  # estimator dropped
        gc.collect()
        out["rss_after_first_fit_mb"] = _common.rss_mb()
        out["peak_before_fit_mb"] = _common._status_kb("VmHWM") / 1024  # first fit's
        out["memory_method"] = reset_peak()
        out["rss_before_fit_mb"] = _common.rss_mb()
        t, clf, steps = timed_fit(spec["n_iter"])
        out["peak_fit_mb"] = _common._status_kb("VmHWM") / 1024
        out["rss_after_fit_mb"] = _common.rss_mb()
        fit_s.append(t)
        per_1000.append(steps)
        loss = np.asarray(clf.loss_curve_, dtype=np.float64)
        out.update(
            n_steps=int(loss.size),
            loss_last1000=float(loss[-1000:].mean()),
            loss_last1000_sem=float(loss[-1000:].std() / np.sqrt(min(1000, loss.size))),
            loss_first1000=float(loss[:1000].mean()),
            posterior_temperature=float(clf.posterior_temperature_),
            n_rows_model=int(clf.posterior_.spec.n_rows),
            engine=clf.posterior_.engine,
        )
        out["score_s"], acc = _common.time_call(clf.score, X_test, y_test)
        out["test_accuracy"] = float(acc)
        # a fitted estimator holds its training data (model containers, and the
        # InferenceData's constant_data): let it go before the timing fits
        del clf
        gc.collect()
        out["rss_after_release_mb"] = _common.rss_mb()
        for _ in range(spec["repeats"] - 1):
            t, _est, steps = timed_fit(spec["n_iter"])
            del _est
            gc.collect()
            fit_s.append(t)
            per_1000.append(steps)
        out["peak_after_repeats_mb"] = _common._status_kb("VmHWM") / 1024
    out["convergence_warnings"] = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    out["other_warnings"] = sorted(
        {
            f"{w.category.__name__}: {w.message}"
            for w in caught
            if not issubclass(w.category, ConvergenceWarning)
        }
    )[:5]
    out["fit_s_runs"], out["fit_s"] = fit_s, _common.median(fit_s)
    out["advi_s_per_1000_runs"] = per_1000
    every = [v for run in per_1000 for v in run]
    out["advi_s_per_1000"] = _common.median(every)
    if every:
        q = np.percentile(every, [10, 90])
        out["advi_s_per_1000_p10_p90"] = [float(q[0]), float(q[1])]
        # the rest of a fit: model build, target encoding (on dask: reads all of y),
        # the first pool blocks, the first call, posterior draws and predictive
        out["fixed_s"] = out["fit_s"] - (spec["n_iter"] / 1000 - 1) * out["advi_s_per_1000"]
        out["compile_s"] = (
            out["first_fit_s"]
            - out["fixed_s"]
            - (spec["warm_iter"] / 1000 - 1) * out["advi_s_per_1000"]
        )
    out["fit_growth_mb"] = out["peak_fit_mb"] - out["rss_before_fit_mb"]
    out["cpu_s"] = sum(os.times()[:2])
    out["process_s"] = time.perf_counter() - t_start
    return out


def start_fit_worker(spec: dict, env: dict):
    """Start ``fit_worker(spec)`` in a fresh Python process (a ``subprocess.Popen``)."""
    import json
    import subprocess

    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--fit-worker", json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def finish_fit_worker(proc, timeout: float) -> dict:
    """Wait for a :func:`start_fit_worker` process: its result, or raises."""
    import json
    import subprocess

    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    lines = [ln for ln in stdout.splitlines() if ln.startswith(FIT_RESULT)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"fit process exited with {proc.returncode}: {stderr.strip()[-1500:]}")
    return json.loads(lines[-1][len(FIT_RESULT) :])


def fit_section(rows, args, s, tmp: Path) -> dict:
    """Part (a): write the stores, then one fresh process per (N, method)."""
    folder = Path(args.data_dir) if args.data_dir else tmp / "data"
    folder.mkdir(parents=True, exist_ok=True)
    data_info = {}
    for n in args.fit_sizes:
        base = {
            "section": "fit",
            "n_rows": n,
            "chunk_rows": s["fit_chunk_rows"],
            "x_mib": n * FIT_FEATURES * 8 / 2**20,
            "y_mib": n * 8 / 2**20,
        }
        try:
            info = zarr_data(folder, n, s["fit_chunk_rows"], args.seed)
        except Exception as exc:
            traceback.print_exc()
            rows.extend(
                {
                    **base,
                    "method": m,
                    "status": "failed",
                    "reason": f"data: {type(exc).__name__}: {exc}",
                }
                for m in FIT_METHODS
            )
            continue
        data_info[str(n)] = info
        print(
            f"fit data N={n:,}: {'reused' if info['reused'] else 'written'} "
            f"({info['x_store_mib']:.0f} MiB X on disk)",
            file=sys.stderr,
            flush=True,
        )
        started = {}
        for method in FIT_METHODS:
            spec = {
                "method": method,
                "n_rows": n,
                "x_path": info["x_path"],
                "y_path": info["y_path"],
                "seed": args.seed,
                "batch_size": s["fit_batch_size"],
                "n_iter": s["fit_n_iter"],
                "warm_iter": s["fit_warm_iter"],
                "repeats": args.repeats,
                "test_rows": s["fit_test_rows"],
            }
            env = {}
            if args.compile_cache == "fresh":  # each process compiles from scratch
                env["PYMC_BNN_COMPILE_CACHE"] = tempfile.mkdtemp(
                    prefix=f"fit-{method}-{n}-", dir=tmp
                )
            row = {
                **base,
                "method": method,
                "load_avg_before": list(os.getloadavg()),
                "concurrent": s["fit_concurrent"],
            }
            started[method] = row, start_fit_worker(spec, env)
            if not s["fit_concurrent"]:  # one process at a time: measured alone
                collect_fit(rows, *started.pop(method), args.fit_timeout)
        for row, proc in started.values():
            collect_fit(rows, row, proc, args.fit_timeout)
        fit_targets(rows, n)
    return data_info


def collect_fit(rows, row: dict, proc, timeout: float) -> None:
    """Wait for one part (a) process and append its row."""
    try:
        got = finish_fit_worker(proc, timeout)
    except Exception as exc:
        traceback.print_exc()
        row.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[-2000:])
    else:
        row.update(status="ok", **got)
        row["peak_over_x"] = row["peak_fit_mb"] / row["x_mib"]
    row["load_avg_after"] = list(os.getloadavg())
    rows.append(row)
    shown = [
        f"{k} {row[k]:.4g}"
        for k in (
            "first_fit_s",
            "fit_s",
            "advi_s_per_1000",
            "rss_before_fit_mb",
            "peak_fit_mb",
            "test_accuracy",
            "loss_last1000",
        )
        if row.get(k) is not None
    ]
    print(
        f"fit {row['method']:9s} N={row['n_rows']:>10,} {row['status']:7s} " + "  ".join(shown),
        file=sys.stderr,
        flush=True,
    )


def fit_targets(rows, n: int) -> None:
    """The per-N comparison row: streamed vs in memory, and the issue's targets."""
    got = {r["method"]: r for r in rows if r.get("section") == "fit" and r["n_rows"] == n}
    st, mem = got.get("streamed"), got.get("in-memory")
    row = {"section": "fit_targets", "n_rows": n}
    if not (st and mem and st["status"] == mem["status"] == "ok"):
        row.update(status="failed", reason="a fit failed: see its row")
        rows.append(row)
        return
    ratio = st["advi_s_per_1000"] / mem["advi_s_per_1000"]
    peak_bytes = st["peak_fit_mb"] * 2**20
    row.update(
        status="ok",
        x_mib=st["x_mib"],
        streamed_baseline_mb=st["rss_before_fit_mb"],
        streamed_after_imports_mb=st["rss_after_imports_mb"],
        streamed_peak_mb=st["peak_fit_mb"],
        streamed_growth_mb=st["fit_growth_mb"],
        in_memory_peak_mb=mem["peak_fit_mb"],
        in_memory_growth_mb=mem["fit_growth_mb"],
        streamed_s_per_1000=st["advi_s_per_1000"],
        in_memory_s_per_1000=mem["advi_s_per_1000"],
        time_ratio=ratio,
        fit_time_ratio=st["fit_s"] / mem["fit_s"],
        streamed_accuracy=st["test_accuracy"],
        in_memory_accuracy=mem["test_accuracy"],
        streamed_loss=st["loss_last1000"],
        in_memory_loss=mem["loss_last1000"],
        loss_ratio=st["loss_last1000"] / mem["loss_last1000"],
        peak_target_met=bool(peak_bytes <= TARGET_PEAK_BYTES),
        growth_within_target=bool(st["fit_growth_mb"] * 2**20 <= TARGET_PEAK_BYTES),
        time_target_met=bool(ratio <= TARGET_TIME_RATIO),
    )
    row["peak_target"] = (
        "yes" if row["peak_target_met"] else "no"
    ) + f" ({peak_bytes / 1e6:,.0f} MB)"
    row["time_target"] = ("yes" if row["time_target_met"] else "no") + f" ({ratio:.2f}x)"
    rows.append(row)


# ----------------------------------------------------------------- part (b)
def fit_moons(seed: int):
    from sklearn.datasets import make_moons
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPClassifier

    X, y = make_moons(n_samples=1000, noise=0.2, random_state=seed)
    Xt, yt = make_moons(n_samples=1000, noise=0.2, random_state=seed + 1)
    scaler = StandardScaler().fit(X)
    clf = BayesianMLPClassifier((5, 5), posterior_temperature=1.0, random_state=0)
    t, _ = _common.time_call(clf.fit, scaler.transform(X), y)
    return clf, {
        "fit_s": t,
        "train_accuracy": float(clf.score(scaler.transform(X), y)),
        "test_accuracy": float(clf.score(scaler.transform(Xt), yt)),
        "n_draws": clf.n_draws,
    }


def rows_array(n: int, chunk: int, seed: int):
    """N x 2 standard-normal rows, a fixed seed, row chunks of ``chunk``."""
    import dask.array as da

    return da.random.default_rng(seed).standard_normal(size=(n, 2), chunks=(chunk, 2))


def mean_proba_1(clf, X):
    """The lazy (or NumPy) mean of P(class 1) over the rows of X."""
    return clf.predict_proba(X)[:, 1].mean()


def numpy_gb(n: int, n_classes: int) -> float:
    """Memory the NumPy path holds at once: X, the probabilities, one column."""
    return n * (2 + n_classes + 1) * 8 / 1e9


def mem_available_gb() -> float | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _is_block(task) -> bool:
    """A prediction block task (``pymc_bnn.dask._block``: dask names it ``block-...``)."""
    from dask.utils import key_split

    # blockwise fusion may append the fused tasks' names: "block-getitem"
    return key_split(task.get("key")).split("-")[0] in ("block", "_block")


def block_workers(task_stream) -> dict:
    """Prediction blocks run per worker, from a ``get_task_stream`` record."""
    counts: dict = {}
    for t in task_stream:
        if _is_block(t):
            counts[t["worker"]] = counts.get(t["worker"], 0) + 1
    return counts


def block_compute_s(task_stream) -> float:
    """Seconds the workers spent computing prediction blocks (summed over blocks)."""
    return sum(
        ss["stop"] - ss["start"]
        for t in task_stream
        if _is_block(t)
        for ss in t.get("startstops", ())
        if ss.get("action") == "compute"
    )


def summarise_calls(calls: list[dict]) -> dict:
    med = _common.median
    peaks = [max(c["workers_peak_mb"].values()) for c in calls if c["workers_peak_mb"]]
    return {
        "warm_s": med(c["seconds"] for c in calls),
        "client_peak_mb": max(c["client_peak_mb"] for c in calls),
        "client_peak_extra_mb": max((c["client_peak_extra_mb"] or 0) for c in calls),
        "worker_peak_mb": max(peaks) if peaks else None,
        "cores_busy": med(c["cores_busy"] for c in calls),
        "blocks_compute_s": med(c.get("blocks_compute_s") for c in calls),
    }


def predict_path(rows, path, clf, sizes, args, chunk, client=None, extra=None):
    """Measure one path: a warm-up (first call), then every N ``args.repeats`` times."""
    import dask

    extra = extra or {}
    first: dict = {}
    try:
        # --- first call: a small array (on a cluster: one per worker, pinned to it)
        if path == "numpy":
            x = rows_array(WARMUP_ROWS, WARMUP_ROWS, args.seed + 1).compute(scheduler="sync")
            first = measured(lambda: float(mean_proba_1(clf, x)))
        elif client is None:
            x = rows_array(WARMUP_ROWS, WARMUP_ROWS // 4, args.seed + 1)
            first = measured(
                lambda: float(dask.compute(mean_proba_1(clf, x), scheduler="threads")[0])
            )
        else:
            import distributed

            workers = sorted(client.scheduler_info()["workers"])
            done: dict = {}

            def warm_all():
                t0 = time.perf_counter()
                futs = {
                    client.compute(
                        mean_proba_1(clf, rows_array(WARMUP_ROWS, WARMUP_ROWS, args.seed + 1 + i)),
                        workers=[w],
                    ): w
                    for i, w in enumerate(workers)
                }
                for fut in distributed.as_completed(futs):
                    fut.result()
                    done[futs[fut]] = time.perf_counter() - t0
                return None

            with distributed.get_task_stream(client) as ts:
                first = measured(warm_all, client)
            first["per_worker_s"] = done
            first["blocks_per_worker"] = block_workers(ts.data)
            first["blocks_compute_s"] = block_compute_s(ts.data)
    except Exception as exc:
        traceback.print_exc()
        for n in sizes:
            rows.append(
                {
                    "section": "predict",
                    "path": path,
                    "n_rows": n,
                    "status": "failed",
                    "reason": f"first call: {type(exc).__name__}: {exc}",
                    **extra,
                }
            )
        return

    for n in sizes:
        row = {
            "section": "predict",
            "path": path,
            "n_rows": n,
            "chunk_rows": chunk,
            "first_call_s": first["seconds"],
            "first_call": _strip(first),
            **extra,
        }
        try:
            X = rows_array(n, chunk, args.seed)
            if path == "numpy":
                gb, avail = numpy_gb(n, len(clf.classes_)), mem_available_gb()
                row["numpy_estimated_gb"] = gb
                if gb > args.max_numpy_gb or (avail is not None and gb > avail / 2):
                    raise Skip(
                        f"the NumPy path would hold ~{gb:.1f} GB "
                        f"(limit {args.max_numpy_gb} GB, available "
                        f"{avail:.1f} GB)"
                    )
                t_mat, x = _common.time_call(X.compute, scheduler="threads")
                row["materialise_s"] = t_mat
                data = measured(lambda: float(x[:, 1].mean()))
                calls = [measured(lambda: float(mean_proba_1(clf, x))) for _ in range(args.repeats)]
                del x
            elif client is None:
                data = measured(lambda: float(X[:, 1].mean().compute(scheduler="threads")))
                calls = [
                    measured(lambda: float(mean_proba_1(clf, X).compute(scheduler="threads")))
                    for _ in range(args.repeats)
                ]
            else:
                import distributed

                data = measured(lambda: float(client.compute(X[:, 1].mean()).result()), client)
                calls = []
                for _ in range(args.repeats):
                    with distributed.get_task_stream(client) as ts:
                        c = measured(
                            lambda: float(client.compute(mean_proba_1(clf, X)).result()), client
                        )
                    c["blocks_per_worker"] = block_workers(ts.data)
                    c["blocks_compute_s"] = block_compute_s(ts.data)
                    calls.append(c)
        except Skip as exc:
            row.update(status="skipped", reason=str(exc))
        except Exception as exc:
            traceback.print_exc()
            row.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
        else:
            values = [c["value"] for c in calls]
            row.update(
                status="ok",
                data_only_s=data["seconds"],
                mean_proba_1=values[0],
                values_spread=max(values) - min(values),
                calls=[_strip(c) for c in calls],
                **summarise_calls(calls),
            )
            row["rows_per_s"] = n / row["warm_s"]
            if calls[-1].get("blocks_per_worker") is not None:
                counts = sorted(calls[-1]["blocks_per_worker"].values(), reverse=True)
                row["blocks_split"] = "+".join(map(str, counts))
        rows.append(row)
        shown = [
            f"{k} {row[k]:.3g}"
            for k in ("first_call_s", "warm_s", "rows_per_s", "client_peak_mb", "worker_peak_mb")
            if row.get(k) is not None
        ]
        print(
            f"predict {path:15s} N={n:>10,} {row['status']:8s} " + "  ".join(shown),
            file=sys.stderr,
            flush=True,
        )


def _strip(call: dict) -> dict:
    return {k: v for k, v in call.items() if k != "value"}


def predict_ratios(rows) -> None:
    ok = [r for r in rows if r["section"] == "predict" and r["status"] == "ok"]
    for r in ok:
        same_n = {o["path"]: o for o in ok if o["n_rows"] == r["n_rows"]}
        variant = TRIM_SUFFIX if r["path"].endswith(TRIM_SUFFIX) else ""
        one = same_n.get("dask 1 worker" + variant) if r.get("workers") else None
        if one is not None:
            r["speedup_vs_1_worker"] = r["rows_per_s"] / one["rows_per_s"]
        ref = same_n.get("numpy") or same_n.get("dask threads")
        if ref is not None:
            r["agreement_ref"] = ref["path"]
            r["abs_diff_vs_ref"] = abs(r["mean_proba_1"] - ref["mean_proba_1"])


# ----------------------------------------------------------------- part (c)
def breast_cancer():
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


def cv_scores(model: str, folds: int, bnn_kw: dict, dask_backend: bool):
    import joblib
    from sklearn.model_selection import cross_val_score
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPClassifier

    est = (
        BayesianMLPClassifier((16,), random_state=0, **bnn_kw)
        if model == "pymc_bnn"
        else MLPClassifier((16,), max_iter=2000, random_state=0)
    )
    X, y = breast_cancer()
    pipe = make_pipeline(StandardScaler(), est)
    if dask_backend:
        with joblib.parallel_backend("dask"):
            return cross_val_score(pipe, X, y, cv=folds, n_jobs=-1)
    return cross_val_score(pipe, X, y, cv=folds)


def cv_call(model, folds, bnn_kw, dask_backend, client=None) -> dict:
    counted: list[int] = []
    with _common.counting_convergence_warnings(counted):
        call = measured(lambda: cv_scores(model, folds, bnn_kw, dask_backend), client)
    scores = call.pop("value")
    return {**call, "scores": [float(s) for s in scores], "convergence_warnings": counted[0]}


def cv_section(rows, args, s, tmp: Path) -> None:
    folds, kw = s["cv_folds"], s["cv_bnn_overrides"]
    runs = {
        ("pymc_bnn", "serial"): [],
        ("sklearn", "serial"): [],
        ("pymc_bnn", "dask 2 workers"): [],
    }
    errors: dict = {}
    for r in range(args.repeats):
        for model in ("pymc_bnn", "sklearn"):
            try:
                runs[(model, "serial")].append({"run": cv_call(model, folds, kw, False)})
            except Exception as exc:
                traceback.print_exc()
                errors[(model, "serial")] = f"{type(exc).__name__}: {exc}"
        try:
            with local_cluster(2, args.compile_cache, tmp) as (client, start_s, _):
                first = cv_call("pymc_bnn", folds, kw, True, client)
                warm = cv_call("pymc_bnn", folds, kw, True, client)
            runs[("pymc_bnn", "dask 2 workers")].append(
                {"cluster_start_s": start_s, "first": first, "warm": warm}
            )
        except Exception as exc:
            traceback.print_exc()
            errors[("pymc_bnn", "dask 2 workers")] = f"{type(exc).__name__}: {exc}"
        print(f"cv round {r + 1}/{args.repeats} done", file=sys.stderr, flush=True)

    med = _common.median
    serial_scores = {}
    for (model, backend), got in runs.items():
        row = {"section": "cv", "model": model, "backend": backend, "folds": folds}
        if (model, backend) in errors or not got:
            row.update(status="failed", reason=errors.get((model, backend), "no run"))
            rows.append(row)
            continue
        if backend == "serial":
            seq = [g["run"] for g in got]
            firsts, warms = seq[:1], seq[1:]
            row["runs"] = seq
            serial_scores[model] = seq[0]["scores"]
        else:
            firsts, warms = [g["first"] for g in got], [g["warm"] for g in got]
            row["runs"] = got
            row["cluster_start_s"] = med(g["cluster_start_s"] for g in got)
        every = firsts + warms
        row.update(
            status="ok",
            first_s=med(c["seconds"] for c in firsts),
            warm_s=med(c["seconds"] for c in warms) if warms else None,
            mean_score=float(np.mean(every[0]["scores"])),
            scores=every[0]["scores"],
            scores_identical_across_runs=all(c["scores"] == every[0]["scores"] for c in every),
            client_peak_mb=max(c["client_peak_mb"] for c in every),
            worker_peak_mb=max(
                (max(c["workers_peak_mb"].values()) for c in every if c["workers_peak_mb"]),
                default=None,
            ),
            cores_busy=med(c["cores_busy"] for c in every),
            convergence_warnings=sum(c["convergence_warnings"] for c in every),
        )
        rows.append(row)
    for row in rows:
        if row.get("section") != "cv" or row["status"] != "ok":
            continue
        ref = serial_scores.get(row["model"])
        if ref is not None and row["backend"] != "serial":
            diffs = [
                max(abs(a - b) for a, b in zip(run[k]["scores"], ref))
                for run in row["runs"]
                for k in ("first", "warm")
            ]
            row["scores_equal_serial"] = all(d == 0 for d in diffs)
            row["max_abs_diff_vs_serial"] = max(diffs)
        bnn_serial = next(
            (
                o
                for o in rows
                if o.get("section") == "cv"
                and o["status"] == "ok"
                and o["model"] == "pymc_bnn"
                and o["backend"] == "serial"
            ),
            None,
        )
        if bnn_serial is not None and row["model"] == "pymc_bnn":
            for k in ("first_s", "warm_s"):
                if row.get(k) and bnn_serial.get(k):
                    row[f"{k[:-2]}_speedup_vs_serial"] = bnn_serial[k] / row[k]
        sk = next(
            (
                o
                for o in rows
                if o.get("section") == "cv" and o["status"] == "ok" and o["model"] == "sklearn"
            ),
            None,
        )
        if sk is not None and row["model"] == "pymc_bnn":
            ref_s = sk.get("warm_s") or sk["first_s"]
            row["warm_vs_sklearn"] = (row.get("warm_s") or row["first_s"]) / ref_s
    for row in rows:
        if row.get("section") == "cv":
            shown = [
                f"{k} {row[k]:.3g}"
                for k in ("first_s", "warm_s", "mean_score")
                if row.get(k) is not None
            ]
            print(
                f"cv {row['model']:9s} {row['backend']:15s} {row['status']:7s} " + "  ".join(shown),
                file=sys.stderr,
                flush=True,
            )


# ----------------------------------------------------------------- main
FIT_COLUMNS = [
    ("method", "fit (a)"),
    ("n_rows", "rows"),
    ("x_mib", "X MB"),
    ("rss_after_imports_mb", "RSS after imports MB"),
    ("rss_before_fit_mb", "RSS before fit MB"),
    ("peak_fit_mb", "peak RSS in fit MB"),
    ("fit_growth_mb", "fit growth MB"),
    ("first_fit_s", "1st fit s (compiles)"),
    ("fit_s", "fit s"),
    ("advi_s_per_1000", "ADVI s / 1000 steps"),
    ("fixed_s", "fixed s per fit"),
    ("test_accuracy", "test accuracy"),
    ("loss_last1000", "-ELBO (last 1000)"),
    ("status", "status"),
]
FIT_TARGET_COLUMNS = [
    ("n_rows", "rows"),
    ("x_mib", "X MB"),
    ("streamed_baseline_mb", "streamed RSS before fit MB"),
    ("streamed_peak_mb", "streamed peak MB"),
    ("in_memory_peak_mb", "in-memory peak MB"),
    ("peak_target", "peak <= 500 MB"),
    ("time_ratio", "time / 1000 steps streamed ÷ in-memory"),
    ("time_target", "<= 1.5x"),
    ("fit_time_ratio", "whole fit s streamed ÷ in-memory"),
    ("streamed_accuracy", "accuracy streamed"),
    ("in_memory_accuracy", "accuracy in-memory"),
    ("streamed_loss", "-ELBO streamed"),
    ("in_memory_loss", "-ELBO in-memory"),
    ("loss_ratio", "-ELBO ratio"),
    ("status", "status"),
]
PREDICT_COLUMNS = [
    ("path", "predict_proba path"),
    ("n_rows", "rows"),
    ("first_call_s", "first call s"),
    ("warm_s", "warm s (median)"),
    ("data_only_s", "data only s"),
    ("rows_per_s", "rows/s"),
    ("speedup_vs_1_worker", "× 1 worker"),
    ("client_peak_mb", "client peak RSS MB"),
    ("worker_peak_mb", "worker peak RSS MB"),
    ("cores_busy", "cores busy"),
    ("blocks_split", "blocks per worker"),
    ("blocks_compute_s", "worker block s"),
    ("abs_diff_vs_ref", "|Δ mean p| vs numpy"),
    ("status", "status"),
]
CV_COLUMNS = [
    ("model", "cross_val_score model"),
    ("backend", "backend"),
    ("folds", "folds"),
    ("cluster_start_s", "cluster start s"),
    ("first_s", "first run s"),
    ("warm_s", "warm run s"),
    ("warm_speedup_vs_serial", "× serial (warm)"),
    ("warm_vs_sklearn", "÷ sklearn (warm)"),
    ("mean_score", "mean accuracy"),
    ("scores_equal_serial", "scores = serial"),
    ("client_peak_mb", "client peak RSS MB"),
    ("worker_peak_mb", "worker peak RSS MB"),
    ("status", "status"),
]


def git_state() -> dict:
    """The commit measured and the package files changed since (the tree may be dirty)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]

    def git(*cmd):
        try:
            return subprocess.run(
                ["git", *cmd], capture_output=True, text=True, cwd=root, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    changed = git("status", "--porcelain", "--", "pymc_bnn")
    return {
        "git_head": git("rev-parse", "HEAD"),
        "pymc_bnn_uncommitted": changed.splitlines() if changed else [],
    }


def parse_parts(values) -> list[str]:
    """``--parts a,b,c`` (letters or names, comma- or space-separated) -> part names."""
    import argparse

    names = [v.strip().lower() for value in values for v in value.split(",") if v.strip()]
    bad = [v for v in names if v not in PART_ALIASES]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown part(s) {bad}; choose from a (fit), b (predict), c (cv)"
        )
    return [p for p in PARTS if p in {PART_ALIASES[v] for v in names}]


def main(argv=None) -> int:
    import json

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--fit-worker"]:  # one part (a) measurement, in a fresh process
        result = fit_worker(json.loads(argv[1]))
        print(FIT_RESULT + json.dumps(_common._clean(result)), flush=True)
        return 0
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="part (a): fits per process of the measured length; (b): "
        "timed calls per (path, N); (c): cross-validation rounds "
        "(default 3; --quick 1)",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["a,b,c"],
        help="parts to run: a (fit), b (predict), c (cv), comma- or "
        "space-separated, letters or names (default: a,b,c)",
    )
    parser.add_argument(
        "--fit-sizes",
        type=int,
        nargs="+",
        default=None,
        help="rows N of part (a) (default 10^6 10^7; --quick 2x10^5)",
    )
    parser.add_argument(
        "--fit-chunk-rows",
        type=int,
        default=None,
        help="zarr row chunks of part (a) (default 250,000; --quick 50,000)",
    )
    parser.add_argument(
        "--fit-iter",
        type=int,
        default=None,
        help="ADVI steps of part (a)'s measured fit (default 10,000; --quick 2,000)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder of part (a)'s zarr stores, kept and reused (default: "
        "a temporary folder, removed at the end)",
    )
    parser.add_argument(
        "--fit-timeout",
        type=float,
        default=3600,
        help="seconds allowed per part (a) process (default 3600)",
    )
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=None,
        help="rows N of part (b) (default 10^6 10^7; --quick 40,000)",
    )
    parser.add_argument(
        "--chunk-rows",
        type=int,
        default=None,
        help="dask row chunks (default 250,000; --quick 10,000)",
    )
    parser.add_argument(
        "--max-numpy-gb",
        type=float,
        default=4.0,
        help="skip the NumPy path when it would hold more (default 4)",
    )
    parser.add_argument(
        "--malloc-trim",
        choices=("default", "unset", "both"),
        default=None,
        help="prediction clusters with distributed's default "
        "MALLOC_TRIM_THRESHOLD_=65536 in the workers, without it, or "
        "both (default; --quick: default only)",
    )
    parser.add_argument(
        "--compile-cache",
        choices=("fresh", "user", "off"),
        default="fresh",
        help="JAX compilation cache of this process and of each cluster's "
        "workers: a new empty folder each (default), the user's, or off",
    )
    args = parser.parse_args(argv)
    try:
        args.parts = parse_parts(args.parts)
    except Exception as exc:
        parser.error(str(exc))
    q = args.quick
    args.repeats = args.repeats or (1 if q else 3)
    args.malloc_trim = args.malloc_trim or ("default" if q else "both")
    args.sizes = args.sizes or ([40_000] if q else [1_000_000, 10_000_000])
    args.chunk_rows = args.chunk_rows or (10_000 if q else 250_000)
    args.fit_sizes = args.fit_sizes or ([200_000] if q else [1_000_000, 10_000_000])
    settings = {
        "fit_chunk_rows": args.fit_chunk_rows or (50_000 if q else 250_000),
        "fit_batch_size": 256,
        # --quick: two 1,000-step calls, the fewest that give a time per step
        "fit_n_iter": args.fit_iter or (2_000 if q else 10_000),
        "fit_warm_iter": 1_000,
        # --quick: fewer test rows (scoring 10^5 rows took ~2.4 s of each fit process)
        "fit_test_rows": 20_000 if q else FIT_TEST_ROWS,
        # --quick: the streamed and in-memory processes run at the same time (2 cores)
        "fit_concurrent": q,
        "cv_folds": 2 if q else 5,
        # --quick: short BNN fits in the cross-validation; otherwise the defaults
        "cv_bnn_overrides": {"n_iter": 500} if q else {},
        "warmup_rows": WARMUP_ROWS,
        "psutil": _common._version("psutil"),
        "dask": _common._version("dask"),
        "distributed": _common._version("distributed"),
        "joblib": _common._version("joblib"),
        **git_state(),
    }
    tmp = Path(tempfile.mkdtemp(prefix="dask_scaling-"))
    if args.compile_cache == "fresh":
        os.environ["PYMC_BNN_COMPILE_CACHE"] = str(tmp / "client")
    elif args.compile_cache == "off":
        os.environ["PYMC_BNN_COMPILE_CACHE"] = "off"
    settings["client_compile_cache"] = os.environ.get("PYMC_BNN_COMPILE_CACHE", "user")

    info = _common.machine_info()
    _common.print_header(
        "Dask scaling: out-of-core fits, block-wise predictions, cross-validation on a cluster",
        info,
    )
    t_start = time.perf_counter()
    rows: list[dict] = []
    extra_payload: dict = {}

    if "fit" in args.parts:
        extra_payload["fit_data"] = fit_section(rows, args, settings, tmp)

    if "predict" in args.parts:
        try:
            clf, fit_info = fit_moons(args.seed)
        except Exception as exc:
            traceback.print_exc()
            rows.append(
                {
                    "section": "predict",
                    "path": "fit",
                    "status": "failed",
                    "reason": f"{type(exc).__name__}: {exc}",
                }
            )
        else:
            extra_payload["moons_fit"] = fit_info
            print(
                f"moons fit {fit_info['fit_s']:.1f} s, test accuracy "
                f"{fit_info['test_accuracy']:.3f}",
                file=sys.stderr,
                flush=True,
            )
            for path in PATHS[:2]:
                predict_path(rows, path, clf, args.sizes, args, args.chunk_rows)
            clusters = [
                (k, trim)
                for trim in {"default": [False], "unset": [True], "both": [False, True]}[
                    args.malloc_trim
                ]
                for k in (1, 2)
            ]
            for k, trim in clusters:
                path = PATHS[1 + k] + (TRIM_SUFFIX if trim else "")
                try:
                    with local_cluster(k, args.compile_cache, tmp, trim_unset=trim) as (
                        client,
                        start_s,
                        cache,
                    ):
                        env = client.run(worker_env)
                        predict_path(
                            rows,
                            path,
                            clf,
                            args.sizes,
                            args,
                            args.chunk_rows,
                            client,
                            extra={
                                "workers": k,
                                "cluster_start_s": start_s,
                                "workers_compile_cache": str(cache),
                                "malloc_trim_threshold": sorted(
                                    {str(e[TRIM_VAR]) for e in env.values()}
                                ),
                                "workers_env": env,
                            },
                        )
                except Exception as exc:
                    traceback.print_exc()
                    rows.append(
                        {
                            "section": "predict",
                            "path": path,
                            "status": "failed",
                            "reason": f"cluster: {type(exc).__name__}: {exc}",
                        }
                    )
            predict_ratios(rows)

    if "cv" in args.parts:
        cv_section(rows, args, settings, tmp)

    tables = {}
    if "fit" in args.parts:
        tables["fit"] = _common.markdown_table(
            [r for r in rows if r["section"] == "fit"], FIT_COLUMNS
        )
        tables["fit_targets"] = _common.markdown_table(
            [r for r in rows if r["section"] == "fit_targets"], FIT_TARGET_COLUMNS
        )
    if "predict" in args.parts:
        tables["predict"] = _common.markdown_table(
            [r for r in rows if r["section"] == "predict"], PREDICT_COLUMNS
        )
    if "cv" in args.parts:
        tables["cv"] = _common.markdown_table([r for r in rows if r["section"] == "cv"], CV_COLUMNS)
    table = "\n\n".join(tables.values())
    print("\n" + table + "\n")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "config": {**vars(args), **settings},
        "rows": rows,
        "table": table,
        "tables": tables,
        **extra_payload,
        "load_avg_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "git_state_end": git_state(),
        "elapsed_s": time.perf_counter() - t_start,
        "notes": [
            "(a) data: X (N x 20) standard normal float64 and y = 1[x0 + 0.5 x1^2 - x2 x3 "
            f"+ N(0, {FIT_NOISE_SD}^2) > 0.5] int64, zarr stores (zarr's default codecs) "
            f"written block by block, chunks of {settings['fit_chunk_rows']:,} rows; test "
            f"sample: {settings['fit_test_rows']:,} independent rows of the same rule.",
            "(a) fits: BayesianMLPClassifier((16,), batch_size="
            f"{settings['fit_batch_size']}, n_iter={settings['fit_n_iter']:,}, "
            f"random_state={args.seed}); streamed = fit(da.from_zarr(X), da.from_zarr(y)) "
            "(posterior_temperature='auto', which is T = 1 there); in-memory = the same with "
            "posterior_temperature=1.0 on the zarr arrays loaded whole into NumPy. One fresh "
            "process per (N, method), with its own empty JAX compilation cache "
            "(--compile-cache fresh).",
            "(a) per process: imports, (in-memory: the arrays loaded,) a first fit with "
            f"n_iter={settings['fit_warm_iter']:,} (1st fit s: it compiles), then the RSS "
            "high-water mark is reset (VmHWM via /proc/self/clear_refs) and the measured "
            "fit runs. RSS before fit = the baseline after imports, data and the first "
            "fit; peak RSS in fit = VmHWM during the measured fit (the process's peak "
            "then, baseline included); fit growth = peak - baseline. MB here = 2^20 bytes "
            "(/proc's kB / 1024), except the 500 MB target, checked as 500e6 bytes.",
            "(a) ADVI s / 1000 steps: median over the measured fit and --repeats - 1 more "
            "fits of the same length of the wall time between consecutive returns of the "
            "compiled engine's 1,000-step calls (ScanADVI.run, timestamped by a wrapper; "
            "the first call of each fit excluded; every call's times in "
            "advi_s_per_1000_runs). fixed s per fit = median fit s - (n_iter/1000 - 1) x "
            "that: model build, target encoding (dask: reads all of y), first pool "
            "blocks, the first call, posterior draws, predictive; in memory also copies "
            "of X. -ELBO (last 1000) = mean of the last 1,000 values of loss_curve_ "
            "(full-data units in both paths: total_size = N).",
            "(a) --quick: the two processes of each N run at the same time (numbers not "
            "meaningful); otherwise one process at a time.",
            "(a) targets (the issue's, for the 10^7 x 20 array): streamed peak RSS <= "
            f"500 MB and streamed ADVI time per step <= {TARGET_TIME_RATIO}x the in-memory "
            "fit's; evaluated at every N; the process baseline (PyMC, PyTensor, JAX "
            "imported and compiled) is in the same row (streamed RSS before fit).",
            "(b) BayesianMLPClassifier((5, 5), posterior_temperature=1.0, random_state=0) "
            "fit once in the client on make_moons(1000, noise=0.2) standardised; inputs "
            f"N x 2 standard normal from dask.array.random.default_rng({args.seed}), row "
            f"chunks of {args.chunk_rows:,}; computed: predict_proba(X)[:, 1].mean().",
            "first call s: warm-up on a small array (2,000 rows; on a cluster one per "
            "worker, pinned to it, submitted together: the slowest worker's time); it pays "
            "compiling the predictive and, on a worker, receiving the estimator and the "
            "imports its unpickling triggers. Per-worker times in first_call.per_worker_s.",
            f"warm s: median of {args.repeats} call(s) after the warm-up; rows/s = N / "
            "warm s; × 1 worker: rows/s over the 1-worker cluster's at the same N.",
            "data only s: the same input graph reduced without predicting "
            "(X[:, 1].mean()); the dask paths generate the random rows inside their warm "
            "time, the NumPy path gets them materialised beforehand (materialise_s).",
            "peak RSS: the kernel's high-water mark (VmHWM, reset just before the call); "
            "client = this process, worker = the largest over the cluster's workers. "
            "cores busy: CPU seconds (user + system) of the client and all workers over "
            "the wall time (XLA may use more than one thread per process).",
            "blocks per worker: how the scheduler spread the prediction blocks over the "
            "workers in the last warm call (counts, largest first).",
            "worker block s: seconds the workers spent inside the prediction blocks "
            "(task stream, summed over blocks and workers); warm s minus it (per worker) "
            "is the scheduling, transfer and data-generation overhead.",
            "(trim unset): the cluster's workers started without distributed's default "
            "MALLOC_TRIM_THRESHOLD_=65536 (glibc defaults, as in this process); rows "
            "without the suffix are clusters as distributed starts them. × 1 worker "
            "compares clusters of the same kind.",
            "|Δ mean p| vs numpy: the path's mean probability against the NumPy path's "
            "on the same rows (the threaded path's where NumPy was skipped); the "
            "predictive runs in float32 under JAX.",
            "(c) serial: in this process, first run = the first in the process (pays "
            "compilation), warm = median of the later runs; dask: each round a fresh "
            "LocalCluster(2 workers, 1 thread each), first and second run on it "
            "(joblib.parallel_backend('dask'), n_jobs=-1). Medians over rounds.",
            f"compile cache: {args.compile_cache} (fresh: a new empty JAX cache folder "
            "for this process and one per cluster, so workers compile as on a remote "
            "machine; PyTensor's own on-disk caches are the user's as they are).",
            "ConvergenceWarnings raised in this process are silenced and counted; "
            "workers' warnings go to their logs.",
            "The 2 cores are shared with other work: machine.load_avg_1_5_15 is the "
            "load at the start, load_avg_end at the end. Compare ratios within one run.",
        ],
    }
    path = _common.write_json(args.out, payload)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {path}")
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
