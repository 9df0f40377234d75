"""Repeated fits: what a user pays when one estimator is fit many times (issue #13).

A scikit-learn workflow rarely fits once: cross-validation, a grid search, an ensemble
or a loop over seeds fit the same network on data of the same shape again and again.
When each fit compiles its own ADVI step function, compilation (seconds) dwarfs the
optimisation itself (a fraction of a second for a small network): this benchmark
measures that cost as a user meets it, with the public estimator only, beside
scikit-learn's ``MLPClassifier`` and NumPyro SVI doing the same fits.

Workloads (each timed ``--repeats`` times in this process, medians reported, every
run's timings kept in the JSON; the first run of a workload may pay compilations
that later runs reuse, which is the point):

1. ``cross_validate`` (what ``cross_val_score`` calls, plus the per-fold fit times)
   of ``make_pipeline(StandardScaler(), BayesianMLPClassifier((16,),
   random_state=0))`` on breast_cancer, ``cv=5``, ``n_jobs=1``: "T=1.0" rows with
   ``posterior_temperature=1.0, prior_sigma=1.0`` (one plain ADVI fit per fold, the
   same work as an SVI fit) and "T=auto" rows with the defaults (the evidence step
   choosing the prior scales, then 3 extra cross-fitted ADVI fits per fold, run two at
   a time in threads; "T=auto, 1 thread" rows, not in ``--quick``: the same, one
   after the other, ``PYMC_BNN_NUM_THREADS=1``); beside ``MLPClassifier((16,),
   max_iter=2000)`` in the same pipeline and NumPyro SVI on the same folds
   (``_peers.numpyro_bnn``, ``AutoNormal`` guide, ``Adam(0.01)``, ``Trace_ELBO``, as
   many steps as the BNN's default ``n_iter``; ``SVI.run`` per fit, which
   ``jax.jit``-compiles its scan of steps; 500 guide draws predict the fold).
2. ``GridSearchCV`` over 3 x 3 candidates (``hidden_layer_sizes`` x ``prior_sigma``;
   for the MLP ``alpha``), ``cv=3``, ``n_jobs=1``, default refit: 28 fits.
3. An ensemble of 10 default estimators on ``make_moons(500, noise=0.2)``
   (``random_state`` 0..9) beside 10 ``MLPClassifier((5, 5))`` and 10 SVI fits of the
   same network: first fit, median of the later fits, total; accuracy of the averaged
   probabilities on a second moons sample.
4. Cold start: a fresh ``python -c`` that imports ``pymc_bnn``, fits the default moons
   estimator and prints its accuracy, run twice (wall clock of the whole process;
   the second run sees whatever on-disk cache the first one left; ``--quick``: one
   plain fit, ``posterior_temperature=1.0, prior_sigma=1.0``, per process). Both
   on-disk caches start empty, as on a new machine: JAX's (``PYMC_BNN_COMPILE_CACHE``,
   also holding pymc_bnn's compiled runners) and PyTensor's compile directory
   (``PYTENSOR_FLAGS=base_compiledir=...``: its C modules and Numba's cached code), so
   the 1st process compiles everything; the ``no cache`` processes get the JAX cache
   off and a new empty PyTensor directory each. ``--compile-cache user``: both
   processes use this process's caches instead (a smoke run of the workload, not a
   measurement of a new machine).
5. ``cross_validate`` of ``make_pipeline(StandardScaler(), BayesianMLPRegressor((16,),
   random_state=0))`` on diabetes (the defaults: Neal's precision prior and the
   cross-fitted temperature), ``cv=5``, beside ``MLPRegressor((16,), max_iter=2000)``
   on a standardised target (``TransformedTargetRegressor``; the BNN scales it itself);
   the "accuracy" column holds the mean R^2 of the folds.
6. Memory: resident set size (``VmRSS``) before and after N repeated moons fits
   (``posterior_temperature=1.0``, ``prior_sigma=1.0``, ``n_iter=2000``), sampled every
   few fits: a per-fit compile cache must not grow without bound.

7. Not run by default (``--workloads hierarchical``; NUTS, about a minute per fit):
   3 default fits with ``groups=`` (seeds 0, 1, 2; ``--quick`` 2) on the 18 rotated
   moons tasks, one after the other in this process: the first fit compiles nutpie's
   model, later ones reuse it (``pymc_bnn.inference._compiled_nuts``); mean test accuracy.

sklearn ``ConvergenceWarning``s (short MLP fits, and the BNN's own ELBO check) are
silenced and counted per row.

``--quick`` exercises every code path of the script once, at the smallest settings at
which its checks still mean something; it measures nothing: one run per workload,
``n_iter`` and SVI steps 1,000, 2 folds (a first and a later fit), a 2 x 1 grid
(``hidden_layer_sizes`` (8,) and (16,), one ``prior_sigma`` / ``alpha``) with
``cv=2``, 2 members (no NumPyro ensemble: the CV rows run the same SVI code), no
"1 thread" rows, one plain fit per cold-start process and 6 memory fits, sampled
every 3.

Run: ``python benchmarks/repeated_fits.py [--quick] [--out PATH]``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

#: The "T=1.0" rows: one plain ADVI fit (no evidence step, no cross-fitted temperature).
ONE_FIT = {"posterior_temperature": 1.0, "prior_sigma": 1.0}
#: The "T=auto, 1 thread" rows: the default fit with its four ADVI fits one after the
#: other (``PYMC_BNN_NUM_THREADS=1``) instead of two at a time: the same-run reference
#: of what the concurrent fits save.
SERIAL = "T=auto, 1 thread"
import _peers  # noqa: E402

NAME = "repeated_fits"
ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("cv", "grid", "ensemble", "cold_start", "cv_regressor", "memory", "hierarchical")
#: Run unless --workloads says otherwise: all but the hierarchical seeds (NUTS, ~1 min
#: per fit: a run of its own).
DEFAULT_WORKLOADS = WORKLOADS[:-1]
HAVE_NUMPYRO = all(importlib.util.find_spec(m) is not None for m in ("jax", "numpyro"))

#: The child process of the cold-start workload: import, fit the default, print.
COLD_START = """
import json, sys, time
t0 = time.perf_counter()
from sklearn.datasets import make_moons
from pymc_bnn import BayesianMLPClassifier
t1 = time.perf_counter()
kw = json.loads(sys.argv[1])
X, y = make_moons(n_samples=500, noise=0.2, random_state=0)
Xt, yt = make_moons(n_samples=500, noise=0.2, random_state=1)
clf = BayesianMLPClassifier(random_state=0, **kw).fit(X, y)
t2 = time.perf_counter()
print("RESULT " + json.dumps({"import_s": t1 - t0, "fit_s": t2 - t1,
                              "accuracy": float(clf.score(Xt, yt))}))
"""


# ------------------------------------------------------------------------- engines
def bnn(**params):
    from pymc_bnn import BayesianMLPClassifier

    return BayesianMLPClassifier(**params)


def mlp(hidden, **params):
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(hidden, max_iter=2000, **params)


def svi_proba(X_train, y_train, X_test, hidden, *, steps, seed, n_draws=500):
    """NumPyro SVI on the BNN's model (as ``SVI.run`` compiles it); mean P(y=1 | X_test)."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    sizes = [X_train.shape[1], *hidden, 1]
    shapes = list(itertools.pairwise(sizes))
    model = functools.partial(_peers.numpyro_bnn, layer_shapes=shapes, sigma=1.0, with_p=False)
    guide = AutoNormal(model)
    svi = SVI(model, guide, Adam(0.01), Trace_ELBO())
    res = svi.run(
        jax.random.PRNGKey(seed),
        steps,
        jnp.asarray(X_train),
        jnp.asarray(y_train),
        progress_bar=False,
    )
    draws = guide.sample_posterior(
        jax.random.PRNGKey(seed + 1), res.params, sample_shape=(n_draws,)
    )
    draws = {k: np.asarray(v, dtype=np.float64) for k, v in draws.items()}
    return _peers.numpy_mean_proba(X_test, draws, len(shapes))


# ------------------------------------------------------------------------- workloads
def breast_cancer():
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


def diabetes():
    from sklearn.datasets import load_diabetes

    return load_diabetes(return_X_y=True)


def moons():
    from sklearn.datasets import make_moons

    return (
        *make_moons(n_samples=500, noise=0.2, random_state=0),
        *make_moons(n_samples=500, noise=0.2, random_state=1),
    )


def cv_run(estimator, folds, data=breast_cancer):
    """One ``cross_validate`` run: fit time per fold and mean score (accuracy; R^2 for
    a regressor)."""
    from sklearn.model_selection import cross_validate
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = data()
    res = cross_validate(make_pipeline(StandardScaler(), estimator), X, y, cv=folds, n_jobs=1)
    return {"fit_times": list(res["fit_time"]), "accuracy": float(np.mean(res["test_score"]))}


def cv_svi_run(folds, steps, seed):
    """The same folds (``check_cv``: StratifiedKFold) fit by NumPyro SVI."""
    from sklearn.model_selection import check_cv
    from sklearn.preprocessing import StandardScaler

    X, y = breast_cancer()
    fit_times, accs = [], []
    for train, test in check_cv(folds, y, classifier=True).split(X, y):
        t0 = time.perf_counter()
        scaler = StandardScaler().fit(X[train])
        p = svi_proba(
            scaler.transform(X[train]),
            y[train],
            scaler.transform(X[test]),
            (16,),
            steps=steps,
            seed=seed,
        )
        fit_times.append(time.perf_counter() - t0)
        accs.append(float(((p > 0.5) == y[test]).mean()))
    return {"fit_times": fit_times, "accuracy": float(np.mean(accs))}


def grid_run(estimator, grid, folds):
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = breast_cancer()
    pipe = make_pipeline(StandardScaler(), estimator)
    step = pipe.steps[-1][0]
    search = GridSearchCV(
        pipe, {f"{step}__{k}": v for k, v in grid.items()}, cv=folds, n_jobs=1
    ).fit(X, y)
    return {
        "accuracy": float(search.best_score_),
        "refit_s": float(search.refit_time_),
        "mean_fit_times": list(search.cv_results_["mean_fit_time"]),
        "best_params": {k.split("__", 1)[1]: v for k, v in search.best_params_.items()},
    }


def hierarchical_run(n_fits):
    """``n_fits`` default fits with ``groups=`` (NUTS, nutpie where installed; seeds
    0, 1, ...) on the 18 rotated moons tasks of the calibration benchmark; mean test
    accuracy of the fits."""
    from pymc_bnn import BayesianMLPClassifier
    from pymc_bnn.datasets import make_rotated_moons

    d = make_rotated_moons(n_tasks=18, n_samples=100, noise=0.3, random_state=0)
    fit_times, accs = [], []
    for seed in range(n_fits):
        clf = BayesianMLPClassifier(random_state=seed)
        t, _ = _common.time_call(clf.fit, d["X_train"], d["y_train"], groups=d["groups_train"])
        fit_times.append(t)
        accs.append(clf.score(d["X_test"], d["y_test"], groups=d["groups_test"]))
    return {"fit_times": fit_times, "accuracy": float(np.mean(accs))}


def ensemble_run(make_proba, members):
    """``members`` fits of ``make_proba(seed) -> P(y=1 | X_test)``; averaged accuracy."""
    *_, y_test = moons()
    fit_times, probas = [], []
    for seed in range(members):
        t, p = _common.time_call(make_proba, seed)
        fit_times.append(t)
        probas.append(p)
    acc = float(((np.mean(probas, axis=0) > 0.5) == y_test).mean())
    return {"fit_times": fit_times, "accuracy": acc}


@contextlib.contextmanager
def fit_threads(n: int | None):
    """``PYMC_BNN_NUM_THREADS=n`` while the block runs (None: as it was)."""
    old = os.environ.get("PYMC_BNN_NUM_THREADS")
    if n is not None:
        os.environ["PYMC_BNN_NUM_THREADS"] = str(n)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYMC_BNN_NUM_THREADS", None)
        else:
            os.environ["PYMC_BNN_NUM_THREADS"] = old


#: ``cold_start_run``'s ``cache_dir`` and ``pytensor_dir`` for this process's own caches.
USER_CACHES = "user"


def cold_start_run(
    bnn_kw: dict, cache_dir: str | None, pytensor_dir: str | None, threads: int | None = None
) -> dict:
    """One fresh ``python -c COLD_START``: its own import and fit times, accuracy.

    ``cache_dir``: JAX's persistent compilation cache of the child
    (``PYMC_BNN_COMPILE_CACHE``; None: switched off). ``pytensor_dir``: PyTensor's
    ``base_compiledir`` of the child (None: a new empty one, removed afterwards).
    Either may be :data:`USER_CACHES`: the child's is this process's.
    ``threads``: the child's ``PYMC_BNN_NUM_THREADS`` (None: as in this process).
    """
    with contextlib.ExitStack() as stack:
        if pytensor_dir is None:
            pytensor_dir = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="pymc_bnn-pytensor-")
            )
        env = dict(os.environ)
        if cache_dir != USER_CACHES:
            env["PYMC_BNN_COMPILE_CACHE"] = cache_dir or "off"
        if pytensor_dir != USER_CACHES:
            env["PYTENSOR_FLAGS"] = ",".join(
                filter(None, [os.environ.get("PYTENSOR_FLAGS"), f"base_compiledir={pytensor_dir}"])
            )
        if threads is not None:
            env["PYMC_BNN_NUM_THREADS"] = str(threads)
        proc = subprocess.run(
            [sys.executable, "-c", COLD_START, json.dumps(bnn_kw)],
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=ROOT,
            env=env,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"cold-start child failed: {proc.stderr[-2000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def memory_run(n_fits: int, every: int, n_iter: int) -> dict:
    X, y, *_ = moons()
    gc.collect()
    trace = [(0, _common.rss_mb())]
    fit_times = []
    for i in range(n_fits):
        t, _ = _common.time_call(bnn(random_state=i, n_iter=n_iter, **ONE_FIT).fit, X, y)
        fit_times.append(t)
        if i == 0 or (i + 1) % every == 0 or i + 1 == n_fits:
            gc.collect()
            trace.append((i + 1, _common.rss_mb()))
    rss = dict(trace)
    # total_s: the fits alone, without the gc.collect() of the RSS samples
    return {
        "total_s": sum(fit_times),
        "fit_times": fit_times,
        "rss_trace_mb": trace,
        "rss_before_mb": rss[0],
        "rss_after_first_mb": rss[1],
        "rss_after_mb": rss[n_fits],
        "rss_growth_mb": rss[n_fits] - rss[0],
        "rss_growth_after_first_mb": rss[n_fits] - rss[1],
    }


# ------------------------------------------------------------------------- rows
def measure(rows, workload, engine, variant, n_fits, run, repeats=1):
    """Time ``run() -> dict`` ``repeats`` times into one row of medians.

    A ``total_s`` in the returned dict replaces the wall clock of the call.
    """
    row = {"workload": workload, "engine": engine, "variant": variant, "n_fits": n_fits}
    try:
        if engine == "numpyro" and not HAVE_NUMPYRO:
            raise ImportError("numpyro / jax not installed")
        runs = []
        for _ in range(repeats):
            counted: list[int] = []
            with _common.counting_convergence_warnings(counted):
                t, out = _common.time_call(run)
            runs.append({"total_s": t, **out, "convergence_warnings": counted[0]})
    except ImportError as exc:
        row.update(status="skipped", reason=str(exc))
    except Exception as exc:  # keep the other measurements
        traceback.print_exc()
        row.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
    else:
        med = _common.median
        row.update(
            status="ok",
            runs=runs,
            total_s=med(r["total_s"] for r in runs),
            per_fit_s=med(r["total_s"] / n_fits for r in runs),
            accuracy=med(r.get("accuracy") for r in runs),
            convergence_warnings=sum(r.get("convergence_warnings", 0) for r in runs),
        )
        if all(r.get("fit_times") for r in runs):
            row["first_fit_s"] = med(r["fit_times"][0] for r in runs)
            row["later_fit_s"] = med(med(r["fit_times"][1:]) for r in runs)
        if "rss_growth_mb" in runs[0]:
            row["rss_growth_mb"] = runs[0]["rss_growth_mb"]
            row["rss_growth_after_first_mb"] = runs[0]["rss_growth_after_first_mb"]
    rows.append(row)
    shown = [
        f"{k} {row[k]:.3g}"
        for k in ("total_s", "per_fit_s", "first_fit_s", "accuracy")
        if row.get(k) is not None
    ]
    print(
        f"{workload:32s} {engine:9s} {variant or '':8s} {row['status']:7s} " + "  ".join(shown),
        flush=True,
    )
    return row


def add_ratios(rows) -> None:
    for row in rows:
        for peer in ("sklearn", "numpyro"):
            ref = next(
                (
                    r
                    for r in rows
                    if r["workload"] == row["workload"]
                    and r["engine"] == peer
                    and r["status"] == "ok"
                ),
                None,
            )
            if row["status"] == "ok" and ref and row is not ref:
                row[f"ratio_vs_{peer}"] = row["total_s"] / ref["total_s"]


# ------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed runs per workload (default 3; --quick 1)"
    )
    parser.add_argument(
        "--compile-cache",
        choices=("fresh", "user"),
        default="fresh",
        help="on-disk caches of the cold-start processes: new empty ones "
        "(default) or this process's (PYMC_BNN_COMPILE_CACHE and "
        "PYTENSOR_FLAGS as set)",
    )
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=WORKLOADS,
        default=list(DEFAULT_WORKLOADS),
        help="default: all but 'hierarchical' (%(default)s)",
    )
    args = parser.parse_args(argv)

    from pymc_bnn.inference import VI_DEFAULTS

    q = args.quick
    args.repeats = args.repeats or (1 if q else 3)
    n_iter = VI_DEFAULTS["advi"][0]
    settings = {
        # --quick: short fits (BNN n_iter and SVI steps), fewer folds, candidates, members
        # (2 folds and members: a first and a later fit; 2 network sizes in the grid:
        # a search over structures)
        "bnn_overrides": {"n_iter": 1000} if q else {},
        "svi_steps": 1000 if q else n_iter,
        "cv_folds": 2 if q else 5,
        "grid": {
            "hidden_layer_sizes": [(8,), (16,)] if q else [(8,), (16,), (32,)],
            "prior_sigma": [1.0] if q else [0.5, 1.0, 2.0],
        },
        "mlp_alpha": [1e-4] if q else [1e-4, 1e-2, 1.0],
        "grid_folds": 2 if q else 3,
        "members": 2 if q else 10,
        # --quick: the first fit, then growth over 5 more (sampled twice)
        "memory_fits": 6 if q else 200,
        "memory_every": 3 if q else 20,
        "memory_n_iter": 2000,
    }
    try:
        import jax

        settings["jax_enable_x64"] = bool(jax.config.jax_enable_x64)
        settings["jax_compilation_cache_dir"] = jax.config.jax_compilation_cache_dir
    except ImportError:
        pass
    s = settings
    kw = s["bnn_overrides"]
    info = _common.machine_info()
    _common.print_header("Repeated fits (issue #13: compile once)", info)
    t_start = time.perf_counter()
    rows: list[dict] = []
    rep = functools.partial(measure, rows, repeats=args.repeats)

    if "cv" in args.workloads:
        k = s["cv_folds"]
        w = f"cross_val {k}-fold breast_cancer"
        rep(
            w,
            "pymc_bnn",
            "T=1.0",
            k,
            lambda: cv_run(bnn(hidden_layer_sizes=(16,), random_state=0, **ONE_FIT, **kw), k),
        )
        rep(
            w,
            "pymc_bnn",
            "T=auto",
            k,
            lambda: cv_run(bnn(hidden_layer_sizes=(16,), random_state=0, **kw), k),
        )
        if not args.quick:
            with fit_threads(1):
                rep(
                    w,
                    "pymc_bnn",
                    SERIAL,
                    k,
                    lambda: cv_run(bnn(hidden_layer_sizes=(16,), random_state=0, **kw), k),
                )
        rep(w, "sklearn", None, k, lambda: cv_run(mlp((16,), random_state=0), k))
        rep(w, "numpyro", "SVI.run", k, lambda: cv_svi_run(k, s["svi_steps"], args.seed))

    if "grid" in args.workloads:
        g, k = s["grid"], s["grid_folds"]
        n_fits = len(g["hidden_layer_sizes"]) * len(g["prior_sigma"]) * k + 1
        w = f"GridSearchCV {len(g['hidden_layer_sizes'])}x{len(g['prior_sigma'])} cv={k}"
        rep(w, "pymc_bnn", "T=auto", n_fits, lambda: grid_run(bnn(random_state=0, **kw), g, k))
        mlp_grid = {"hidden_layer_sizes": g["hidden_layer_sizes"], "alpha": s["mlp_alpha"]}
        rep(w, "sklearn", None, n_fits, lambda: grid_run(mlp((16,), random_state=0), mlp_grid, k))

    if "ensemble" in args.workloads:
        m = s["members"]
        X, y, X_test, _ = moons()
        w = f"ensemble of {m} on moons"
        rep(
            w,
            "pymc_bnn",
            "T=auto",
            m,
            lambda: ensemble_run(
                lambda i: bnn(random_state=i, **kw).fit(X, y).predict_proba(X_test)[:, 1], m
            ),
        )
        if not args.quick:
            with fit_threads(1):
                rep(
                    w,
                    "pymc_bnn",
                    SERIAL,
                    m,
                    lambda: ensemble_run(
                        lambda i: bnn(random_state=i, **kw).fit(X, y).predict_proba(X_test)[:, 1], m
                    ),
                )
        rep(
            w,
            "sklearn",
            None,
            m,
            lambda: ensemble_run(
                lambda i: mlp((5, 5), random_state=i).fit(X, y).predict_proba(X_test)[:, 1], m
            ),
        )
        if args.quick:  # the same SVI code ran in the CV workload; its compile is ~7 s
            rows.append(
                {
                    "workload": w,
                    "engine": "numpyro",
                    "variant": "SVI.run",
                    "n_fits": m,
                    "status": "skipped",
                    "reason": "--quick (the CV workload runs the same SVI code)",
                }
            )
        else:
            rep(
                w,
                "numpyro",
                "SVI.run",
                m,
                lambda: ensemble_run(
                    lambda i: svi_proba(X, y, X_test, (5, 5), steps=s["svi_steps"], seed=i), m
                ),
            )

    if "cold_start" in args.workloads:
        # a new, empty compilation cache: the 1st process compiles everything and
        # fills it, the 2nd reads it back (what a user's second run on a machine sees)
        with (
            tempfile.TemporaryDirectory(prefix="pymc_bnn-jax-cache-") as cache,
            tempfile.TemporaryDirectory(prefix="pymc_bnn-pytensor-") as compiledir,
        ):
            if args.compile_cache == "user":
                cache, compiledir = USER_CACHES, USER_CACHES
            runs = [("1st", cache, compiledir), ("2nd", cache, compiledir)]
            if args.quick:  # one plain fit per process: it exercises the same path
                variants = [("T=1.0", ONE_FIT, None)]
            else:
                runs.insert(0, ("no cache", None, None))
                variants = [("T=auto", {}, None), (SERIAL, {}, 1), ("T=1.0", ONE_FIT, None)]
            for name, where, pytensor_dir in runs:
                for variant, extra, threads in variants:
                    measure(
                        rows,
                        f"cold start ({name} process)",
                        "pymc_bnn",
                        variant,
                        1,
                        lambda: cold_start_run({**kw, **extra}, where, pytensor_dir, threads),
                    )

    if "cv_regressor" in args.workloads:
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.neural_network import MLPRegressor
        from sklearn.preprocessing import StandardScaler

        from pymc_bnn import BayesianMLPRegressor

        k = s["cv_folds"]
        w = f"regressor cross_val {k}-fold diabetes (R^2)"
        rep(
            w,
            "pymc_bnn",
            "T=auto",
            k,
            lambda: cv_run(BayesianMLPRegressor((16,), random_state=0, **kw), k, diabetes),
        )
        rep(
            w,
            "sklearn",
            None,
            k,
            lambda: cv_run(
                TransformedTargetRegressor(
                    MLPRegressor(hidden_layer_sizes=(16,), max_iter=2000, random_state=0),
                    transformer=StandardScaler(),
                ),
                k,
                diabetes,
            ),
        )

    if "memory" in args.workloads:
        n = s["memory_fits"]
        measure(
            rows,
            f"memory ({n} moons fits)",
            "pymc_bnn",
            "T=1.0",
            n,
            lambda: memory_run(n, s["memory_every"], s["memory_n_iter"]),
        )  # run once

    if "hierarchical" in args.workloads:
        n = 2 if q else 3
        measure(
            rows,
            f"hierarchical default, {n} seeds, 18 rotated moons",
            "pymc_bnn",
            "NUTS",
            n,
            lambda: hierarchical_run(n),
            repeats=1,
        )

    add_ratios(rows)
    table = _common.markdown_table(
        rows,
        [
            ("workload", "workload"),
            ("engine", "engine"),
            ("variant", "variant"),
            ("n_fits", "fits"),
            ("total_s", "total s"),
            ("per_fit_s", "s / fit"),
            ("first_fit_s", "first fit s"),
            ("later_fit_s", "later fits s (median)"),
            ("ratio_vs_sklearn", "× sklearn"),
            ("ratio_vs_numpyro", "× numpyro"),
            ("accuracy", "accuracy"),
            ("rss_growth_mb", "RSS growth MB"),
            ("status", "status"),
        ],
    )
    print("\n" + table + "\n")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "config": {**vars(args), **settings},
        "rows": rows,
        "table": table,
        "elapsed_s": time.perf_counter() - t_start,
        "notes": [
            f"medians over {args.repeats} run(s) per workload, all in one process and in "
            "the order of the table; each row's 'runs' holds every run's timings.",
            "total s: wall clock of the whole workload (fits, predictions, scoring); "
            "s / fit = total / fits; first fit / later fits: per-fit times where the "
            "workload exposes them (cross_validate fit_time; one clock per member).",
            "× sklearn / × numpyro: total time over the peer's on the same workload.",
            "accuracy: cross-validation mean; GridSearchCV best_score_; ensemble: "
            "averaged probabilities on make_moons(500, noise=0.2, random_state=1); "
            "cold start: the default fit on the same test sample.",
            "cold start: a fresh python process (interpreter, imports, fit); total s is "
            "the process's wall clock, fit_s in 'runs' the fit alone; 'no cache': JAX's "
            "persistent compilation cache off; '1st' / '2nd': one new empty cache "
            "directory, filled by the 1st process, read by the 2nd"
            + (
                " (here --compile-cache user: both used this process's caches)."
                if args.compile_cache == "user"
                else "."
            ),
            "memory: VmRSS after gc.collect(); growth = after N fits - before the first; "
            "total s = sum of the fit times (the RSS samples' gc.collect() excluded); "
            "rss_growth_after_first_mb excludes the first fit; rss_trace_mb in 'runs'.",
            "ConvergenceWarnings (MLP max_iter, BNN ELBO check) silenced, counted per row.",
        ],
    }
    path = _common.write_json(args.out, payload)
    print(f"wrote {path}")
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
