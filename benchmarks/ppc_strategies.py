"""Posterior-predictive strategies on the two-moons BNN: wall time, memory, agreement.

The moons 2-5-5-1 tanh network is fit once by ADVI (``pymc_bnn.fit``); 500 weight
draws are taken from the approximation with a fixed seed, and every strategy computes
the posterior-mean probability of class 1 at n points (the 500 test points, a 100x100
grid, a 1000x1000 grid):

==========================  ======================================================
numpy_loop                  reference: NumPy loop over the draws (same draws)
toolkit_mean_proba          ``pymc_bnn.posterior_predictive(...).mean_proba(X)`` (same draws)
toolkit_sample_proba        ``pymc_bnn.posterior_predictive(...).sample_proba(X)``, then mean
pymc_sample_node            ``approx.sample_node(p, size=n, more_replacements={X: Xs})``
                            compiled once with ``pytensor.function`` (fresh draws)
pymc_spp_deterministic      ``pm.set_data`` + ``pm.sample_posterior_predictive`` of a
                            ``pm.Deterministic`` p in an equivalent classic PyMC
                            model, on an InferenceData of the same draws
pymc_spp_y_obs              the same on the toolkit model's ``y_obs``: Bernoulli
                            draws, whose mean only estimates p
jax_jit_vmap                ``jax.jit`` of a forward pass ``vmap``-ed over draws
numpyro_predictive          ``numpyro.infer.Predictive`` (default: lax.map over draws)
numpyro_predictive_parallel the same with ``parallel=True`` (vmap over draws)
==========================  ======================================================

Each (strategy, n) cell runs in a fresh subprocess (``--isolation process``, the
default) so that memory and compile caches do not leak between cells. Reported:
setup time (drawing weights, building models, ``pytensor.function``), the first call
(includes lazy JIT compilation), the median of repeated calls, and the peak extra
resident memory of one steady-state call (the kernel's ``VmHWM`` high-water mark,
reset just before the call, minus the RSS before it). Strategies that would
materialise more than ``--max-materialize-gb`` (all draws x all points) are skipped
with the reason recorded. Agreement: the max abs difference of each strategy's mean
probabilities from the NumPy loop's; for fresh-draw strategies compare with the
Monte-Carlo reference (toolkit with an independent set of draws).

``--quick`` exercises every code path of the script once, at the smallest settings at
which its checks still mean something; it measures nothing: a fit of 1,000 ADVI steps
(test accuracy above 0.8), 100 draws, the 100x100 grid only, one timed call after the
first (each timed call starts with a garbage collection, ~0.2 s), a 5 s budget.

Run: ``python benchmarks/ppc_strategies.py [--quick] [--out PATH]``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import _peers  # noqa: E402

NAME = "ppc_strategies"

#: name -> (description, what its draws are relative to the reference)
STRATEGIES = {
    "numpy_loop": ("NumPy loop over draws (reference)", "same draws"),
    "toolkit_mean_proba": ("pymc_bnn posterior_predictive().mean_proba", "same draws"),
    "toolkit_sample_proba": ("pymc_bnn posterior_predictive().sample_proba, mean", "same draws"),
    "pymc_sample_node": ("PyMC approx.sample_node, compiled once", "fresh draws"),
    "pymc_spp_deterministic": ("pm.sample_posterior_predictive, Deterministic p", "same draws"),
    "pymc_spp_y_obs": ("pm.sample_posterior_predictive, y_obs draws", "Bernoulli draws"),
    "jax_jit_vmap": ("jax.jit + vmap over draws (chunked X), float64", "same draws"),
    "jax_jit_vmap_f32": (
        "jax.jit + vmap over draws (chunked X), float32 as numpyro's default",
        "same draws",
    ),
    "numpyro_predictive": ("numpyro Predictive (lax.map over draws)", "same draws"),
    "numpyro_predictive_parallel": ("numpyro Predictive(parallel=True)", "same draws"),
}
JAX_STRATEGIES = {
    "jax_jit_vmap",
    "jax_jit_vmap_f32",
    "numpyro_predictive",
    "numpyro_predictive_parallel",
}
SIZES = {"test500": 500, "grid10k": 10_000, "grid1M": 1_000_000}


def _not_run(name: str, size: str, status: str, reason: str) -> dict:
    """The result row of a cell that was skipped or failed, with the reason."""
    return {
        "strategy": name,
        "description": STRATEGIES[name][0],
        "draws_kind": STRATEGIES[name][1],
        "size": size,
        "n_points": SIZES[size],
        "status": status,
        "reason": reason,
    }


def points(size: str, seed: int) -> np.ndarray:
    """The evaluation points: the moons test set, or a square grid over [-3, 3]^2."""
    if size == "test500":
        from pymc_bnn.datasets import moons_split

        return np.ascontiguousarray(moons_split(random_state=seed)[1])
    side = math.isqrt(SIZES[size])
    g = np.linspace(-3.0, 3.0, side)
    xx, yy = np.meshgrid(g, g)
    return np.column_stack([xx.ravel(), yy.ravel()])


def materialized_bytes(strategy: str, n_draws: int, n_points: int, n_classes: int = 2) -> int:
    """Bytes of the largest (draws x points) array a strategy must hold at once."""
    per = n_draws * n_points * 8
    return {
        "numpy_loop": 0,
        "toolkit_mean_proba": 0,
        "jax_jit_vmap": 0,
        "jax_jit_vmap_f32": 0,
        "toolkit_sample_proba": per * n_classes,
        "pymc_sample_node": per,
        "pymc_spp_deterministic": per,
        "pymc_spp_y_obs": per,
        "numpyro_predictive": per,
        "numpyro_predictive_parallel": per * 5,  # vmap: (draws, points, hidden width)
    }[strategy]


# ------------------------------------------------------------------------- one cell
class Context:
    """Everything a cell needs, loaded lazily from the work folder (or given in memory)."""

    def __init__(self, workdir: Path, *, posterior=None, draws=None):
        self.workdir = Path(workdir)
        self.meta = json.loads((self.workdir / "meta.json").read_text())
        self._posterior = posterior
        self._draws = draws

    @property
    def posterior(self):
        if self._posterior is None:
            import cloudpickle

            self._posterior = cloudpickle.loads((self.workdir / "posterior.pkl").read_bytes())
        return self._posterior

    @property
    def draws(self) -> dict:
        if self._draws is None:
            with np.load(self.workdir / "draws.npz") as f:
                self._draws = {k: f[k] for k in f.files}
        return self._draws

    @property
    def n_draws(self) -> int:
        return self.meta["n_draws"]

    @property
    def draw_seed(self) -> int:
        return self.meta["draw_seed"]

    @property
    def n_layers(self) -> int:
        return len(self.meta["layer_shapes"])


def _same_draws(weights: dict, ctx: Context) -> bool:
    """Whether ``weights`` are the reference draws (PyMC's ``approx.sample``): equal to
    rounding, since pymc_bnn's sampler evaluates the same graph with NumPy's ufuncs and
    ``approx.sample`` with Numba's loops (``exp`` / ``log1p`` may differ in the last
    place; measured <= 2.5e-14 relative)."""
    return all(
        np.asarray(weights[k]).shape == v.shape
        and np.allclose(np.asarray(weights[k]), v, rtol=1e-12, atol=1e-14)
        for k, v in ctx.draws.items()
    )


def setup_strategy(name: str, ctx: Context, X: np.ndarray):
    """Prepare a strategy; return ``(call, info)``: ``call()`` -> mean p(class 1), (n,)."""
    info: dict = {}
    if name == "numpy_loop":
        draws = ctx.draws
        return (lambda: _peers.numpy_mean_proba(X, draws, ctx.n_layers)), info

    if name in ("toolkit_mean_proba", "toolkit_sample_proba"):
        import pymc_bnn

        pp = pymc_bnn.posterior_predictive(
            ctx.posterior, n_draws=ctx.n_draws, random_seed=ctx.draw_seed
        )
        names = _peers.weight_names(ctx.n_layers)
        info["same_draws"] = _same_draws(
            {k: a for (w, b), (W, B) in zip(names, pp.weights) for k, a in ((w, W), (b, B))}, ctx
        )
        if name == "toolkit_mean_proba":
            return (lambda: pp.mean_proba(X)[:, 1]), info
        return (lambda: pp.sample_proba(X)[:, :, 1].mean(axis=0)), info

    if name == "pymc_sample_node":
        import pytensor
        import pytensor.tensor as pt

        import pymc_bnn

        post = ctx.posterior
        approx = post.approx
        model = approx.model
        X_new = pt.matrix("X_new", dtype="float64")
        n = pt.iscalar("n")
        weights = [(model[w], model[b]) for w, b in post.spec.weight_names]
        logit = pymc_bnn.forward(model["X"], weights, activation=post.spec.activation)[:, 0]
        p = pt.sigmoid(logit)
        p_draws = approx.sample_node(p, size=n, more_replacements={model["X"]: X_new})
        fn = pytensor.function([X_new, n], p_draws)
        n_draws = ctx.n_draws
        return (lambda: fn(X, n_draws).mean(axis=0)), info

    if name in ("pymc_spp_deterministic", "pymc_spp_y_obs"):
        import pymc as pm

        post = ctx.posterior
        idata = post.approx.sample(ctx.n_draws, random_seed=ctx.draw_seed)
        info["same_draws"] = _same_draws({k: idata.posterior[k].values[0] for k in ctx.draws}, ctx)
        y0 = np.zeros(X.shape[0], dtype=np.int64)
        if name == "pymc_spp_deterministic":
            model = _peers.pymc_classic_model(
                np.zeros((1, X.shape[1])),
                np.zeros(1, dtype=np.int64),
                ctx.meta["layer_shapes"],
                sigma=ctx.meta["prior_sigma"],
            )
            var = "p"
        else:
            model = post.approx.model  # the toolkit's own (full-batch) model
            var = "y_obs"

        def call():
            with model:
                pm.set_data({"X": X, "y": y0})
                pp = pm.sample_posterior_predictive(
                    idata, var_names=[var], progressbar=False, random_seed=ctx.draw_seed
                )
            return np.asarray(pp.posterior_predictive[var].values, dtype=np.float64).mean(
                axis=(0, 1)
            )

        return call, info

    if name in ("jax_jit_vmap", "jax_jit_vmap_f32"):
        import jax.numpy as jnp

        # PyTensor's JAX backend turns on jax_enable_x64 for the whole process, so the
        # peer would silently run in float64; the _f32 row casts to numpyro's default.
        dtype = jnp.float32 if name.endswith("_f32") else jnp.float64
        ws = {k: jnp.asarray(v, dtype=dtype) for k, v in ctx.draws.items()}
        f = _peers.jax_mean_proba(ctx.n_layers)
        Xd = X.astype(np.float32) if name.endswith("_f32") else X
        return (lambda: f(Xd, ws)), info

    if name in ("numpyro_predictive", "numpyro_predictive_parallel"):
        import functools

        import jax
        import jax.numpy as jnp
        from numpyro.infer import Predictive

        ws = {k: jnp.asarray(v) for k, v in ctx.draws.items()}
        model = functools.partial(
            _peers.numpyro_bnn, layer_shapes=ctx.meta["layer_shapes"], sigma=ctx.meta["prior_sigma"]
        )
        pred = Predictive(
            model, posterior_samples=ws, return_sites=["p"], parallel=name.endswith("parallel")
        )
        key = jax.random.PRNGKey(ctx.draw_seed)
        Xj = jnp.asarray(X)
        return (lambda: np.asarray(pred(key, Xj)["p"]).mean(axis=0)), info

    raise ValueError(f"unknown strategy {name!r}; choose from {list(STRATEGIES)}")


def run_cell(name: str, size: str, ctx: Context, *, repeats: int, budget_s: float):
    """Time one (strategy, size) cell in this process; return (record, mean_p1)."""
    X = points(size, ctx.meta["seed"])
    t_setup, (call, info) = _common.time_call(setup_strategy, name, ctx, X)
    with _common.PeakRSS() as mem_first:
        t_first, mean = _common.time_call(call)
    n_rep = max(1, min(repeats, int(budget_s // max(t_first, 1e-9))))
    times, peaks = [], []
    for _ in range(n_rep):
        with _common.PeakRSS() as mem:
            t, mean = _common.time_call(call)
        times.append(t)
        peaks.append(mem.extra_mb)
    record = {
        "strategy": name,
        "description": STRATEGIES[name][0],
        "draws_kind": STRATEGIES[name][1],
        "size": size,
        "n_points": int(X.shape[0]),
        "status": "ok",
        "reason": None,
        "setup_s": t_setup,
        "first_call_s": t_first,
        "median_s": _common.median(times),
        "min_s": min(times),
        "repeats": n_rep,
        "peak_extra_mb": max(p for p in peaks if p is not None)
        if any(p is not None for p in peaks)
        else None,
        "first_call_peak_extra_mb": mem_first.extra_mb,
        "memory_method": mem.method,
        "same_draws": info.get("same_draws"),
    }
    return record, np.asarray(mean, dtype=np.float64)


def _worker(args) -> int:
    """Entry point of a cell subprocess (``--worker``)."""
    # import the heavy modules before any clock starts: every cell pays the same
    import pymc_bnn  # noqa: F401  (imports pymc and pytensor)

    if args.worker in JAX_STRATEGIES:
        import jax
        import numpyro  # noqa: F401

        jax.config.update("jax_enable_x64", True)
    ctx = Context(args.workdir)
    ctx.posterior, ctx.draws  # noqa: B018  (unpickle before the clock starts)
    record, mean = run_cell(args.worker, args.size, ctx, repeats=args.repeats, budget_s=args.budget)
    stem = f"{args.worker}__{args.size}"
    np.save(ctx.workdir / f"mean__{stem}.npy", mean)
    (ctx.workdir / f"record__{stem}.json").write_text(json.dumps(record))
    return 0


# ------------------------------------------------------------------------- driver
def _prepare(args, workdir: Path):
    """Fit the network, draw the weights, save what the cells need; return (post, draws, fit)."""
    import cloudpickle

    import pymc_bnn
    from pymc_bnn.datasets import moons_split

    X_train, X_test, y_train, y_test = moons_split(random_state=args.seed)
    model = pymc_bnn.build_model(
        X_train, y_train, hidden_layer_sizes=(5, 5), activation="tanh", random_state=args.seed
    )
    t_fit, post = _common.time_call(
        pymc_bnn.fit, model, method="advi", n_iter=args.n_iter, random_seed=args.seed
    )
    draw_seed = args.seed + 1
    idata = post.approx.sample(args.n_draws, random_seed=draw_seed)
    draws = {
        w: np.ascontiguousarray(idata.posterior[w].values[0])
        for pair in post.spec.weight_names
        for w in pair
    }
    pp = pymc_bnn.posterior_predictive(post, n_draws=args.n_draws, random_seed=draw_seed)
    accuracy = float(((pp.mean_proba(X_test)[:, 1] > 0.5) == y_test).mean())
    np.savez(workdir / "draws.npz", **draws)
    (workdir / "posterior.pkl").write_bytes(cloudpickle.dumps(post))
    meta = {
        "seed": args.seed,
        "draw_seed": draw_seed,
        "n_draws": args.n_draws,
        "layer_shapes": [list(s) for s in post.spec.layer_shapes],
        "prior_sigma": post.spec.prior_sigma,
    }
    (workdir / "meta.json").write_text(json.dumps(meta))
    fit_info = {
        "method": "advi",
        "n_iter": args.n_iter,
        "fit_s": t_fit,
        "final_loss": float(np.mean(post.loss[-100:])),
        "test_accuracy": accuracy,
    }
    return post, draws, fit_info


def _run_isolated(args, name: str, size: str, workdir: Path):
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        name,
        "--size",
        size,
        "--workdir",
        str(workdir),
        "--repeats",
        str(args.repeats),
        "--budget",
        str(args.budget),
    ]
    stem = f"{name}__{size}"
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.cell_timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {args.cell_timeout:.0f} s"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, None, "failed: " + " / ".join(tail)
    record = json.loads((workdir / f"record__{stem}.json").read_text())
    mean = np.load(workdir / f"mean__{stem}.npy")
    return record, mean, None


def _available(name: str) -> str | None:
    import importlib.util

    if name in JAX_STRATEGIES:
        for mod in ("jax", "numpyro"):
            if importlib.util.find_spec(mod) is None:
                return f"skipped ({mod} not installed)"
    return None


def build_table(rows: list[dict]) -> str:
    cols = [
        ("strategy", "strategy"),
        ("n_points", "points"),
        ("setup_s", "setup s"),
        ("first_call_s", "first call s"),
        ("median_s", "median s"),
        ("vs_toolkit", "÷ toolkit mean_proba"),
        ("peak_extra_mb", "peak extra MB"),
        ("max_abs_diff", "max abs Δp vs NumPy loop"),
        ("draws_kind", "draws"),
        ("status", "status"),
    ]
    return _common.markdown_table(rows, cols)


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--sizes",
        nargs="+",
        choices=list(SIZES),
        default=None,
        help="point sets (default all; --quick: grid10k)",
    )
    parser.add_argument("--strategies", nargs="+", choices=list(STRATEGIES), default=None)
    parser.add_argument(
        "--n-draws", type=int, default=None, help="posterior draws (default 500; --quick 100)"
    )
    parser.add_argument(
        "--n-iter",
        type=int,
        default=None,
        help="ADVI steps of the fit (default 10000; --quick 1000)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed calls after the first (default 5; --quick 1)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds of repeats per cell before cutting repeats (min 1)",
    )
    parser.add_argument(
        "--max-materialize-gb",
        type=float,
        default=1.0,
        help="skip strategies that must hold more than this (draws x points)",
    )
    parser.add_argument(
        "--isolation",
        choices=["process", "none"],
        default="process",
        help="one subprocess per cell (default) or all cells in this process",
    )
    parser.add_argument("--cell-timeout", type=float, default=1800.0)
    # internal: one cell in a subprocess
    parser.add_argument("--worker", choices=list(STRATEGIES), help=argparse_suppress())
    parser.add_argument("--size", choices=list(SIZES), help=argparse_suppress())
    parser.add_argument("--workdir", type=Path, help=argparse_suppress())
    args = parser.parse_args(argv)
    if args.n_iter is None:
        args.n_iter = 1000 if args.quick else 10_000
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    if args.n_draws is None:
        args.n_draws = 100 if args.quick else 500
    if args.budget is None:
        args.budget = 5.0 if args.quick else 60.0
    if args.worker:
        return _worker(args)
    sizes = args.sizes or (["grid10k"] if args.quick else list(SIZES))
    strategies = args.strategies or list(STRATEGIES)
    if "numpy_loop" not in strategies:
        strategies = ["numpy_loop", *strategies]

    info = _common.machine_info()
    _common.print_header("Posterior-predictive strategies (moons 2-5-5-1 tanh, ADVI)", info)
    t_start = time.perf_counter()
    rows: list[dict] = []
    means: dict = {}
    with tempfile.TemporaryDirectory(prefix="ppc_bench_") as tmp:
        workdir = Path(tmp)
        post, draws, fit_info = _prepare(args, workdir)
        print(
            f"ADVI fit: {fit_info['n_iter']} steps in {fit_info['fit_s']:.1f} s, "
            f"test accuracy {fit_info['test_accuracy']:.3f}\n",
            flush=True,
        )
        ctx = Context(workdir, posterior=post, draws=draws)
        if args.isolation == "none" and any(s in JAX_STRATEGIES for s in strategies):
            import jax

            jax.config.update("jax_enable_x64", True)
        for size in sizes:
            n_points = SIZES[size]
            for name in strategies:
                skip = _available(name)
                need = materialized_bytes(name, args.n_draws, n_points)
                if skip is None and need > args.max_materialize_gb * 2**30:
                    skip = (
                        f"skipped (would hold {need / 2**30:.1f} GB of draws x points > "
                        f"--max-materialize-gb {args.max_materialize_gb:g})"
                    )
                if skip is not None:
                    rows.append(_not_run(name, size, "skipped", skip))
                    print(f"{size:8s} {name:28s} {skip}", flush=True)
                    continue
                if args.isolation == "process":
                    record, mean, err = _run_isolated(args, name, size, workdir)
                else:
                    try:
                        record, mean = run_cell(
                            name, size, ctx, repeats=args.repeats, budget_s=args.budget
                        )
                        err = None
                    except Exception as exc:  # record and go on: one peer failing
                        record, mean, err = None, None, f"failed: {exc!r}"[:300]
                if err is not None:
                    rows.append(_not_run(name, size, "failed", err))
                    print(f"{size:8s} {name:28s} {err}", flush=True)
                    continue
                record["isolation"] = args.isolation
                means[(name, size)] = mean
                rows.append(record)
                print(
                    f"{size:8s} {name:28s} setup {record['setup_s']:7.3f} s  first "
                    f"{record['first_call_s']:7.3f} s  median {record['median_s']:7.3f} s  "
                    f"peak +{record['peak_extra_mb'] or 0:7.1f} MB",
                    flush=True,
                )
            # Monte-Carlo reference: the toolkit with an independent set of draws
            if n_points <= 10_000 and ("numpy_loop", size) in means:
                import pymc_bnn

                other = pymc_bnn.posterior_predictive(
                    post, n_draws=args.n_draws, random_seed=ctx.draw_seed + 1000
                )
                means[("mc_reference", size)] = other.mean_proba(points(size, args.seed))[:, 1]
    # agreement and ratios
    mc_ref = {}
    for size in sizes:
        ref = means.get(("numpy_loop", size))
        if ("mc_reference", size) in means and ref is not None:
            mc_ref[size] = float(np.max(np.abs(means[("mc_reference", size)] - ref)))
        tk = next(
            (
                r["median_s"]
                for r in rows
                if r["size"] == size
                and r["strategy"] == "toolkit_mean_proba"
                and r["status"] == "ok"
            ),
            None,
        )
        for r in rows:
            if r["size"] != size or r["status"] != "ok":
                continue
            mean = means[(r["strategy"], size)]
            r["max_abs_diff"] = None if ref is None else float(np.max(np.abs(mean - ref)))
            r["vs_toolkit"] = None if not tk else r["median_s"] / tk
    table = build_table(rows)
    print("\n" + table + "\n")
    print(
        "Monte-Carlo reference (toolkit with independent draws vs NumPy loop), "
        "max |Δp|: " + ", ".join(f"{k}: {v:.3g}" for k, v in mc_ref.items())
    )
    payload = {
        "benchmark": NAME,
        "machine": info,
        "config": {k: v for k, v in vars(args).items() if k not in ("worker", "size", "workdir")},
        "fit": fit_info,
        "sizes": {s: SIZES[s] for s in sizes},
        "mc_reference_max_abs_diff": mc_ref,
        "rows": rows,
        "table": table,
        "elapsed_s": time.perf_counter() - t_start,
        "notes": [
            "median_s: median wall time of the repeated calls after the first; first_call_s "
            "includes lazy JIT compilation; setup_s: drawing weights, building models, "
            "pytensor.function.",
            "peak_extra_mb: kernel VmHWM high-water mark, reset right before one call, minus "
            "RSS before it; max over repeats; one fresh process per cell when isolation is "
            "'process'.",
            "max_abs_diff vs the NumPy loop over the same 500 draws; 'fresh draws' and "
            "'Bernoulli draws' strategies differ by Monte-Carlo error, compare with "
            "mc_reference_max_abs_diff.",
            "float64 (jax_enable_x64) but pymc_bnn's predictive (float32, as a user gets it) and "
            "the _f32 peer; 2 shared cores: compare ratios within a run.",
        ],
    }
    path = _common.write_json(args.out, payload)
    print(f"\nwrote {path}")
    return 0


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
