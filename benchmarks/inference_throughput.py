"""Inference throughput on the two-moons BNN: ADVI and SVI steps per second, time to
95% test accuracy, and NUTS wall time with the ESS of predictive quantities.

Model: ``pymc_bnn.build_model`` on the reference moons split (2-5-5-1, tanh, N(0, 1)
priors), full batch or minibatch (``batch_size=50``). Peers:

- ``pm.fit`` (PyMC's own ADVI, Adam 0.01) on the same PyMC model, and the toolkit's
  ``pymc_bnn.fit`` (ADVI, Adam 0.01, plus its init spread and full-data loss units);
- NumPyro ``SVI`` on the identical model (same priors and data; ``AutoNormal``
  mean-field guide, whose default ``init_scale=0.1`` matches the toolkit's
  ``init_sigma``; Adam 0.01; ``Trace_ELBO``), both as ``svi.run`` and as a
  compiled-once chunk of steps (``jax.jit`` of ``lax.scan`` over ``svi.update``);
- NUTS with 2 chains through the toolkit's ``fit(method="nuts")`` for every installed
  backend (numpyro, nutpie, pymc), and NumPyro's own ``MCMC`` on the NumPyro model.

Steps per second cancel compilation: each configuration is timed for N and N/10 steps
(after a 10-step warm-up call on cold caches, reported as ``cold_s``), and
``rate = 0.9 N / (t_N - t_{N/10})``; ``compile_s = t_{N/10} - (N/10) / rate``. As the
compile time itself jitters by tenths of a second, a second estimate is given: for
PyMC a callback timestamps steps N/10 and N of the long run ("step clock"); for
NumPyro the steady state of a compiled chunk of K steps, called repeatedly.

Time to 95% test accuracy: one run of up to ``--max-steps`` steps; every ``--every``
steps a callback draws 100 weights from the current approximation and computes the
test accuracy of the posterior-mean probability; the clock includes compilation and
the steps, and excludes the accuracy checks themselves. (An engine that runs its
callbacks once per chunk of steps is checked at the chunk ends: ``check_steps``.)

When ``pymc_bnn.fit`` has an ``engine`` option, each engine is measured.

NUTS: wall time of the whole call (compilation, tuning, sampling); ESS (bulk) and
R-hat of the predicted class-1 probability at 5 fixed inputs — per-weight ESS is
meaningless for a network whose hidden units can swap labels between chains.

``--quick`` exercises every code path of the script once, at the smallest settings at
which its checks still mean something; it measures nothing: N = 2,000 steps (the jax
engine calls back once per 1,000 steps: its step clock needs two chunk ends), up to
2,000 steps to the target, NumPyro chunks of 100 steps (the check interval: one
compiled chunk serves both), no ``svi.run`` rows, the minibatch rows of the jax engine
only (the others repeat the full-batch code), and NUTS 100 tune + 100 draws with the
numpyro backend only (ArviZ's ESS and R-hat want at least 100 draws per chain).

Run: ``python benchmarks/inference_throughput.py [--quick] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import _peers  # noqa: E402

NAME = "inference_throughput"
#: Fixed inputs (scaled-moons coordinates) at which NUTS ESS is measured: the centre,
#: two points near the decision boundary, and two inside the classes.
ESS_POINTS = np.array([[0.0, 0.0], [0.5, 0.25], [-0.5, 0.5], [1.0, -0.5], [-1.0, 1.0]])
HAVE_NUMPYRO = all(importlib.util.find_spec(m) is not None for m in ("jax", "numpyro"))
HAVE_JAX = importlib.util.find_spec("jax") is not None


# --------------------------------------------------------------------- accuracy watch
class AccuracyWatch:
    """Record test accuracy every ``every`` steps, excluding its own cost from the clock.

    ``draw(n)`` must return a dict of weight draws ``{"w0": (n, fan_in, fan_out), ...}``
    from the current approximation.
    """

    def __init__(self, X_test, y_test, n_layers, *, every, target, n_eval_draws=100):
        self.X_test, self.y_test, self.n_layers = X_test, y_test, n_layers
        self.every, self.target, self.n_eval_draws = every, target, n_eval_draws
        self.t0 = time.perf_counter()
        self.excluded = 0.0
        self.history: list[tuple[int, float, float]] = []
        self.reached: tuple[int, float] | None = None

    def start(self):
        self.t0 = time.perf_counter()
        self.excluded = 0.0

    def check(self, step: int, draw) -> bool:
        """Evaluate at ``step``; True once the target is reached."""
        t_in = time.perf_counter()
        draws = draw(self.n_eval_draws)
        p = _peers.numpy_mean_proba(self.X_test, draws, self.n_layers)
        acc = float(((p > 0.5) == self.y_test).mean())
        elapsed = t_in - self.t0 - self.excluded
        self.excluded += time.perf_counter() - t_in
        self.history.append((step, elapsed, acc))
        if acc >= self.target and self.reached is None:
            self.reached = (step, elapsed)
        return self.reached is not None

    def pymc_callback(self, names):
        """A PyMC VI callback ``f(approx, losses, i)`` that stops at the target."""

        def draw_from(approx):
            def draw(n):
                trace = approx.sample(n, random_seed=12345, return_inferencedata=False)
                return {k: np.asarray(trace.get_values(k)) for k in names}

            return draw

        def callback(approx, losses, i):
            if i % self.every == 0 and self.check(i, draw_from(approx)):
                raise StopIteration(f"test accuracy >= {self.target} at step {i}")

        return callback

    def summary(self) -> dict:
        steps, t = self.reached if self.reached else (None, None)
        return {
            "reached": self.reached is not None,
            "steps_to_target": steps,
            "time_to_target_s": t,
            "last_accuracy": self.history[-1][2] if self.history else None,
            "checks": len(self.history),
        }


# --------------------------------------------------------------------- PyMC ADVI
def _pm_fit(model, n, *, seed, lr, callbacks=()):
    import pymc as pm

    return pm.fit(
        n,
        method="advi",
        model=model,
        random_seed=seed,
        progressbar=False,
        obj_optimizer=pm.adam(learning_rate=lr),
        callbacks=list(callbacks),
    )


def _toolkit_fit(model, n, *, seed, lr, callbacks=(), **kw):
    import pymc_bnn

    return pymc_bnn.fit(
        model,
        method="advi",
        n_iter=n,
        learning_rate=lr,
        random_seed=seed,
        callbacks=callbacks,
        **kw,
    ).approx


def toolkit_variants() -> list[tuple[str, object]]:
    """The toolkit's ADVI, once per VI engine if ``fit`` has an ``engine`` option."""
    import inspect

    import pymc_bnn

    if "engine" not in inspect.signature(pymc_bnn.fit).parameters:
        return [("pymc_bnn.fit (ADVI)", _toolkit_fit)]
    engines = ["pymc"] + (["jax"] if HAVE_JAX else [])
    return [
        (f"pymc_bnn.fit (ADVI, engine={e})", functools.partial(_toolkit_fit, engine=e))
        for e in engines
    ]


def rate_by_difference(run, n_steps: int, *, step_clock: bool = False) -> dict:
    """Time ``run(n)`` for a warm-up, N/10 and N steps; steps/s with compile cancelled.

    With ``step_clock``, ``run(n, callbacks=[...])`` also timestamps steps N/10 and N of
    the long run (a PyMC callback), a second, less noisy, estimate of the step time.
    """
    small = max(1, n_steps // 10)
    cold, _ = _common.time_call(run, 10)
    t_small, _ = _common.time_call(run, small)
    if step_clock:
        clock = _common.StepClock(small, n_steps)
        t_big, _ = _common.time_call(run, n_steps, callbacks=[clock])
    else:
        t_big, _ = _common.time_call(run, n_steps)
    dt = t_big - t_small
    rate = (n_steps - small) / dt if dt > 0 else float("nan")
    out = {
        "n_steps": n_steps,
        "cold_s": cold,
        "t_small_s": t_small,
        "t_big_s": t_big,
        "it_per_s": rate,
        "ms_per_it": 1e3 / rate,
        "compile_s": t_small - small / rate,
    }
    if step_clock and clock.ms_per_it:
        out["ms_per_it_clock"] = clock.ms_per_it
        out["it_per_s_clock"] = 1e3 / clock.ms_per_it
    return out


def bench_pymc_vi(args, data, rows):
    import pymc_bnn

    X_train, X_test, y_train, y_test = data
    for batch in (None, 50):
        model = pymc_bnn.build_model(
            X_train, y_train, hidden_layer_sizes=(5, 5), batch_size=batch, random_state=args.seed
        )
        names = [v for pair in pymc_bnn.network_spec(model).weight_names for v in pair]
        n_layers = len(names) // 2
        for impl, fitter in [("pm.fit (ADVI)", _pm_fit), *toolkit_variants()]:
            run = functools.partial(fitter, model, seed=args.seed, lr=0.01)
            row = {"section": "vi", "implementation": impl, "batch": batch or "full"}
            if args.quick and batch and not impl.endswith("engine=jax)"):
                # the same PyTensor step function with a minibatch slice: ~13 s of
                # compiling that the full-batch rows already exercise
                rows.append(
                    {
                        **row,
                        "status": "skipped",
                        "reason": "--quick (the full-batch row runs the same code)",
                    }
                )
                continue
            row.update(rate_by_difference(run, args.n_steps, step_clock=True))
            watch = AccuracyWatch(
                X_test, y_test, n_layers, every=args.every, target=args.target_accuracy
            )
            watch.start()
            run(args.max_steps, callbacks=[watch.pymc_callback(names)])
            row.update(watch.summary())
            row["check_steps"] = [h[0] for h in watch.history][:3]
            rows.append(row)
            _print_vi(row)


# --------------------------------------------------------------------- NumPyro SVI
def bench_numpyro_svi(args, data, rows):
    import jax
    import jax.numpy as jnp
    from jax import lax
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    X_train, X_test, y_train, y_test = data
    Xj, yj = jnp.asarray(X_train), jnp.asarray(y_train)
    shapes = [(2, 5), (5, 5), (5, 1)]
    n_layers = len(shapes)
    # --quick: full batch only (the same code with a subsample plate; ~4 s of compiling)
    for batch in (None,) if args.quick else (None, 50):
        model = functools.partial(
            _peers.numpyro_bnn, layer_shapes=shapes, sigma=1.0, subsample_size=batch, with_p=False
        )

        def make_svi(model=model):
            guide = AutoNormal(model)
            return SVI(model, guide, Adam(0.01), Trace_ELBO()), guide

        key = jax.random.PRNGKey(args.seed)

        # (a) svi.run: one lax.scan over all steps per call
        def run(n):
            svi, _ = make_svi()
            res = svi.run(key, n, Xj, yj, progress_bar=False)
            return jax.block_until_ready(res.losses)

        row = {"section": "vi", "implementation": "numpyro SVI.run", "batch": batch or "full"}
        if args.svi_run:
            row.update(rate_by_difference(run, args.n_steps))
            _print_vi(row)
        else:
            row.update(status="skipped", reason="--quick (three more compilations)")
        rows.append(row)

        # (b) compiled-once chunk of K steps (jit of lax.scan over svi.update)
        svi, guide = make_svi()

        def chunk_fn(K, svi=svi):
            @jax.jit
            def chunk(state, X, y):
                def body(s, _):
                    return svi.update(s, X, y)

                return lax.scan(body, state, None, length=K)

            return chunk

        K = args.chunk
        chunk = chunk_fn(K)
        t0 = time.perf_counter()
        state = svi.init(key, Xj, yj)
        state, losses = chunk(state, Xj, yj)
        jax.block_until_ready(losses)
        t_first = time.perf_counter() - t0
        n_calls = max(1, args.n_steps // K - 1)
        t0 = time.perf_counter()
        for _ in range(n_calls):
            state, losses = chunk(state, Xj, yj)
        jax.block_until_ready(losses)
        dt = time.perf_counter() - t0
        rate = n_calls * K / dt
        row = {
            "section": "vi",
            "implementation": f"numpyro jit(scan {K} x svi.update)",
            "batch": batch or "full",
            "n_steps": (n_calls + 1) * K,
            "cold_s": None,
            "it_per_s": rate,
            "ms_per_it": 1e3 / rate,
            "it_per_s_clock": rate,
            "ms_per_it_clock": 1e3 / rate,
            "compile_s": t_first - K / rate,
        }
        # time to target accuracy, chunks of `every` steps
        # (the same compiled chunk when K equals the check interval, as in --quick)
        every_chunk = chunk if args.every == K else chunk_fn(args.every)
        svi2, guide2 = svi, guide
        watch = AccuracyWatch(
            X_test, y_test, n_layers, every=args.every, target=args.target_accuracy
        )
        eval_key = jax.random.PRNGKey(12345)

        def draw(n, state_box):
            params = svi2.get_params(state_box[0])
            s = guide2.sample_posterior(eval_key, params, sample_shape=(n,))
            return {k: np.asarray(v) for k, v in s.items() if k[0] in "wb"}

        watch.start()
        box = [svi2.init(key, Xj, yj)]
        step = 0
        while step < args.max_steps:
            box[0], losses = every_chunk(box[0], Xj, yj)
            jax.block_until_ready(losses)
            step += args.every
            if watch.check(step, lambda n: draw(n, box)):
                break
        row.update(watch.summary())
        rows.append(row)
        _print_vi(row)


# --------------------------------------------------------------------- NUTS
def _ess_of_p(draws_by_chain: dict, n_layers: int) -> dict:
    """ESS / R-hat of the class-1 probability at ESS_POINTS; draws (chain, draw, ...)."""
    import arviz as az

    n_chain, n_draw = draws_by_chain["w0"].shape[:2]
    flat = {k: v.reshape(n_chain * n_draw, *v.shape[2:]) for k, v in draws_by_chain.items()}
    p = _peers.numpy_proba_draws(ESS_POINTS, flat, n_layers).reshape(n_chain, n_draw, -1)
    ess = np.asarray(az.ess(p, method="bulk"))
    rhat = np.asarray(az.rhat(p))
    return {
        "ess_p_min": float(ess.min()),
        "ess_p_median": float(np.median(ess)),
        "rhat_p_max": float(rhat.max()),
        "n_draws_total": n_chain * n_draw,
    }


#: NUTS runs: the toolkit's fit per backend, PyMC's own NUTS with one process per chain
#: (PyMC's default ``cores`` is cpu_count // 2, i.e. 1 on a 2-core machine; and
#: ``nuts_sampler=None`` means nutpie in PyMC 6 when installed), and NumPyro's own MCMC
#: on the NumPyro model.
NUTS_RUNS = (
    "toolkit-numpyro",
    "toolkit-nutpie",
    "toolkit-pymc",
    "pm.sample-cores2",
    "numpyro-native",
)
NUTS_QUICK = ("toolkit-numpyro",)


def bench_nuts(args, data, rows):
    import pymc as pm

    import pymc_bnn

    X_train, X_test, y_train, y_test = data
    model = pymc_bnn.build_model(
        X_train, y_train, hidden_layer_sizes=(5, 5), random_state=args.seed
    )
    names = [v for pair in pymc_bnn.network_spec(model).weight_names for v in pair]
    n_layers = len(names) // 2
    kw = dict(draws=args.nuts_draws, tune=args.nuts_tune, chains=2, random_seed=args.seed)
    for run in NUTS_RUNS:
        base = {
            "section": "nuts",
            "run": run,
            "draws": args.nuts_draws,
            "tune": args.nuts_tune,
            "chains": 2,
        }
        if run.startswith("toolkit-"):
            backend = run.split("-", 1)[1]
            base["implementation"] = f"pymc_bnn.fit(nuts, {backend})"
        elif run == "pm.sample-cores2":
            base["implementation"] = "pm.sample(nuts_sampler='pymc', cores=2)"
        else:
            base["implementation"] = "numpyro MCMC(NUTS)"
        if run not in args.nuts_runs:
            rows.append({**base, "status": "skipped", "reason": "not selected (--nuts-runs)"})
            continue
        try:
            if run.startswith("toolkit-"):
                t, post = _common.time_call(
                    pymc_bnn.fit, model, method="nuts", nuts_sampler=run.split("-", 1)[1], **kw
                )
                idata = post.idata
            elif run == "pm.sample-cores2":
                with model:
                    # nuts_sampler="pymc" explicitly: PyMC 6 defaults to nutpie if installed
                    t, idata = _common.time_call(
                        pm.sample,
                        cores=2,
                        nuts_sampler="pymc",
                        progressbar=False,
                        compute_convergence_checks=False,
                        **kw,
                    )
            else:
                if not HAVE_NUMPYRO:
                    raise ImportError("numpyro not installed")
                t, (idata, base["implementation"]) = _common.time_call(
                    _numpyro_native_nuts, args, X_train, y_train
                )
        except ImportError as exc:
            rows.append({**base, "status": "skipped", "reason": str(exc).split(".")[0]})
            print(f"{base['implementation']}: skipped ({exc})", flush=True)
            continue
        draws = {k: np.asarray(idata.posterior[k].values) for k in names}
        row = {**base, "status": "ok", "wall_s": t, **_ess_of_p(draws, n_layers)}
        row["divergences"] = int(np.asarray(idata.sample_stats["diverging"].values).sum())
        row["test_accuracy"] = _accuracy(X_test, y_test, draws, n_layers)
        row["ess_per_s"] = row["ess_p_min"] / t
        rows.append(row)
        _print_nuts(row)


def _numpyro_native_nuts(args, X_train, y_train):
    """NumPyro's MCMC on the NumPyro model; returns an ArviZ-like object and a label."""
    import types

    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    nmodel = functools.partial(
        _peers.numpyro_bnn, layer_shapes=[(2, 5), (5, 5), (5, 1)], sigma=1.0, with_p=False
    )
    method = "parallel" if jax.local_device_count() >= 2 else "sequential"
    mcmc = MCMC(
        NUTS(nmodel),
        num_warmup=args.nuts_tune,
        num_samples=args.nuts_draws,
        num_chains=2,
        chain_method=method,
        progress_bar=False,
    )
    mcmc.run(
        jax.random.PRNGKey(args.seed),
        jnp.asarray(X_train),
        jnp.asarray(y_train),
        extra_fields=("diverging",),
    )
    samples = {
        k: types.SimpleNamespace(values=np.asarray(v))
        for k, v in mcmc.get_samples(group_by_chain=True).items()
    }
    div = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])
    idata = types.SimpleNamespace(
        posterior=samples, sample_stats={"diverging": types.SimpleNamespace(values=div)}
    )
    return idata, f"numpyro MCMC(NUTS, chain_method={method})"


def _accuracy(X, y, draws_by_chain, n_layers) -> float:
    flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in draws_by_chain.items()}
    return float(((_peers.numpy_mean_proba(X, flat, n_layers) > 0.5) == y).mean())


# --------------------------------------------------------------------- output
def _print_vi(row):
    if row.get("status") == "skipped":
        return
    reach = (
        f"{row['steps_to_target']} steps / {row['time_to_target_s']:.1f} s"
        if row.get("reached")
        else "not reached"
        if "reached" in row
        else "—"
    )
    print(
        f"{row['implementation']:34s} batch {row['batch']!s:4s} {row['it_per_s']:8.0f} it/s  "
        f"compile {row['compile_s']:5.2f} s  to target: {reach}",
        flush=True,
    )


def _print_nuts(row):
    if row.get("status") != "ok":
        return
    print(
        f"{row['implementation']:34s} {row['wall_s']:7.1f} s  ESS(p) min "
        f"{row['ess_p_min']:7.0f}  R-hat max {row['rhat_p_max']:.3f}  "
        f"div {row['divergences']}",
        flush=True,
    )


def build_tables(rows) -> str:
    vi = [r for r in rows if r["section"] == "vi"]
    nuts = [r for r in rows if r["section"] == "nuts"]
    t1 = _common.markdown_table(
        vi,
        [
            ("implementation", "implementation"),
            ("batch", "batch"),
            ("it_per_s", "it/s (difference)"),
            ("it_per_s_clock", "it/s (step clock)"),
            ("ms_per_it_clock", "ms/it (step clock)"),
            ("compile_s", "compile s"),
            ("cold_s", "first call (10 it) s"),
            ("steps_to_target", "steps to target"),
            ("time_to_target_s", "time to target s"),
            ("last_accuracy", "accuracy at stop"),
            ("status", "status"),
        ],
    )
    t2 = _common.markdown_table(
        nuts,
        [
            ("implementation", "implementation"),
            ("tune", "tune"),
            ("draws", "draws/chain"),
            ("wall_s", "wall s"),
            ("ess_p_min", "min ESS(p)"),
            ("ess_p_median", "median ESS(p)"),
            ("ess_per_s", "min ESS(p)/s"),
            ("rhat_p_max", "max R-hat(p)"),
            ("divergences", "divergences"),
            ("test_accuracy", "test acc"),
            ("status", "status"),
        ],
    )
    return t1 + "\n\n" + t2


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--n-steps",
        type=int,
        default=None,
        help="N for the it/s measurement (default 10000; --quick 2000)",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="step limit of the time-to-accuracy runs (default 10000; --quick 2000)",
    )
    parser.add_argument("--every", type=int, default=100, help="steps between accuracy checks")
    parser.add_argument("--target-accuracy", type=float, default=0.95)
    parser.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="steps per compiled NumPyro chunk (default 1000; --quick 100)",
    )
    parser.add_argument("--nuts-draws", type=int, default=None, help="default 1000; --quick 100")
    parser.add_argument("--nuts-tune", type=int, default=None, help="default 1000; --quick 100")
    parser.add_argument(
        "--nuts-runs",
        nargs="+",
        choices=NUTS_RUNS,
        default=None,
        help=f"NUTS runs (default all; --quick {' '.join(NUTS_QUICK)})",
    )
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=["pymc_vi", "numpyro_svi", "nuts"],
        default=["pymc_vi", "numpyro_svi", "nuts"],
    )
    parser.add_argument(
        "--svi-run",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time numpyro's svi.run by difference (default: yes; --quick no)",
    )
    parser.add_argument(
        "--jax-float32", action="store_true", help="run JAX in float32 (default float64, as PyMC)"
    )
    args = parser.parse_args(argv)
    q = args.quick
    args.n_steps = args.n_steps or (2000 if q else 10_000)
    args.max_steps = args.max_steps or (2000 if q else 10_000)
    args.chunk = args.chunk or (100 if q else 1000)
    args.nuts_draws = args.nuts_draws or (100 if q else 1000)
    args.nuts_tune = args.nuts_tune or (100 if q else 1000)
    args.nuts_runs = args.nuts_runs or list(NUTS_QUICK if q else NUTS_RUNS)
    if args.svi_run is None:
        args.svi_run = not q
    import pymc  # noqa: F401  (PyMC sets its logger to INFO on import; quieten it after)

    from pymc_bnn._runtime.compile_cache import keep_generated_source

    logging.getLogger("pymc").setLevel(logging.WARNING)
    # PyMC's own engines (the pm.fit and pm.sample rows) compile before any pymc_bnn fit
    # here: their generated source goes where pymc_bnn's does, not to ~120 new /tmp files
    keep_generated_source()

    if HAVE_NUMPYRO:  # before JAX initialises: one CPU device per chain
        import numpyro

        numpyro.set_host_device_count(2)
        import jax

        jax.config.update("jax_enable_x64", not args.jax_float32)
    from pymc_bnn.datasets import moons_split

    info = _common.machine_info()
    _common.print_header("Inference throughput (moons 2-5-5-1 tanh)", info)
    data = moons_split(random_state=args.seed)
    rows: list[dict] = []
    t_start = time.perf_counter()
    if "pymc_vi" in args.sections:
        bench_pymc_vi(args, data, rows)
    if "numpyro_svi" in args.sections and HAVE_NUMPYRO:
        bench_numpyro_svi(args, data, rows)
    if "nuts" in args.sections:
        bench_nuts(args, data, rows)
    for r in rows:
        r.setdefault("status", "ok")
    table = build_tables(rows)
    print("\n" + table + "\n")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "config": vars(args),
        "ess_points": ESS_POINTS.tolist(),
        "rows": rows,
        "table": table,
        "elapsed_s": time.perf_counter() - t_start,
        "notes": [
            "it/s = 0.9 N / (t(N) - t(N/10)), each a separate call that recompiles; "
            "compile_s = t(N/10) - (N/10)/rate; cold_s: a first 10-step call (cold caches).",
            "time_to_target_s includes compilation and excludes the accuracy checks "
            "(100 draws from the current approximation, posterior-mean probability > 0.5).",
            "NUTS wall_s includes compilation and tuning; ESS/R-hat of the class-1 "
            "probability at ess_points (per-weight ESS is meaningless under label switching).",
            f"JAX in {'float32' if args.jax_float32 else 'float64'}; PyMC in float64.",
        ],
    }
    path = _common.write_json(args.out, payload)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
