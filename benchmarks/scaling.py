"""Minibatch ADVI scaling: time per step and memory as the number of rows grows.

Synthetic data, 20 standard-normal features, labels from a fixed random linear rule
plus noise (seeded); ``pymc_bnn.build_model(..., hidden_layer_sizes=(5, 5),
batch_size=50)`` and ``pymc_bnn.fit(method="advi")``. With true minibatching the time
per step must not grow with N (each step touches 50 rows); only memory should. When
``pymc_bnn.fit`` has an ``engine`` option, each available engine is measured.

Each N runs in a fresh subprocess. Time per step cancels compilation: the fit is timed
for S and S/10 steps (after a 10-step warm-up) and ``ms/it = (t_S - t_{S/10}) / 0.9 S``;
as a check with less noise, a callback also timestamps steps S/10 and S of the long run
("step clock", compilation excluded by construction).
Memory: resident set size after imports (``baseline``), after generating the data,
and the process high-water mark (``VmHWM``) after model building and all fits;
``extra`` is the high-water mark minus the RSS with the data in memory.

``--quick`` exercises every code path of the script once, at the smallest settings at
which its checks still mean something; it measures nothing: N = 10^3 and 10^4 (a
series of two per engine), S = 1,000 steps for the pymc engine and 10,000 for jax (it
runs and calls back in chunks of 1,000 steps: S/10 is one chunk, as in a full run), and
the long run only once, with the step clock's callback (the difference then includes
the callback's cost; the callback-free long run would repeat the short run's code).

Run: ``python benchmarks/scaling.py [--quick] [--out PATH]``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

NAME = "scaling"
N_FEATURES = 20
BATCH = 50


def synthetic(n_rows: int, seed: int):
    """(X, y): N(0, 1) features; y = 1[X w + 0.5 e > 0] with a fixed w (seed)."""
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(seed + 1).normal(size=N_FEATURES)
    X = rng.normal(size=(n_rows, N_FEATURES))
    y = (X @ w + 0.5 * rng.normal(size=n_rows) > 0).astype(np.int64)
    return X, y


def _worker(args) -> int:
    import pymc_bnn

    logging.getLogger("pymc").setLevel(logging.WARNING)

    rss_base = _common.rss_mb()
    n_rows = args.rows[0]
    X, y = synthetic(n_rows, args.seed)
    rss_data = _common.rss_mb()
    with _common.PeakRSS() as mem:
        t0 = time.perf_counter()
        model = pymc_bnn.build_model(
            X, y, hidden_layer_sizes=(5, 5), batch_size=BATCH, random_state=args.seed
        )
        t_build = time.perf_counter() - t0

        kw = {} if args.engine == "default" else {"engine": args.engine}

        def run(n, callbacks=()):
            return pymc_bnn.fit(
                model, method="advi", n_iter=n, random_seed=args.seed, callbacks=callbacks, **kw
            )

        small = max(1, args.steps // 10)
        clock = _common.StepClock(small, args.steps)
        t_cold, _ = _common.time_call(run, 10)
        t_small, _ = _common.time_call(run, small)
        # the difference method uses callback-free runs; the clock run below includes
        # its callback's cost (with engine="jax", once per chunk of 1,000 steps)
        if args.quick:  # one long run: the clock's (see the module docstring)
            t_big, post = _common.time_call(run, args.steps, callbacks=[clock])
        else:
            t_big, post = _common.time_call(run, args.steps)
            _common.time_call(run, args.steps, callbacks=[clock])
    ms = 1e3 * (t_big - t_small) / (args.steps - small)
    record = {
        "engine": args.engine if args.engine != "default" else getattr(post, "engine", None),
        "n_rows": n_rows,
        "n_features": N_FEATURES,
        "batch_size": BATCH,
        "data_mb": (X.nbytes + y.nbytes) / 2**20,
        "build_s": t_build,
        "cold_s": t_cold,
        "t_small_s": t_small,
        "t_big_s": t_big,
        "steps": args.steps,
        "ms_per_it": ms,
        "ms_per_it_clock": clock.ms_per_it,
        "compile_s": t_small - small * ms / 1e3,
        "rss_baseline_mb": rss_base,
        "rss_with_data_mb": rss_data,
        "peak_rss_mb": (rss_data or 0) + (mem.extra_mb or 0),
        "peak_extra_over_data_mb": mem.extra_mb,
        "memory_method": mem.method,
        "final_loss": float(np.mean(post.loss[-50:])),
    }
    print("RESULT " + json.dumps(record))
    return 0


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--rows",
        nargs="+",
        type=int,
        default=None,
        help="values of N (default 1e3 1e4 1e5 1e6; --quick 1e3 1e4)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="S, ADVI steps of the long run (default per engine: pymc 10000, "
        "jax 300000; --quick 1000 / 10000)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="per N, seconds")
    parser.add_argument(
        "--engines",
        nargs="+",
        default=None,
        help="VI engines of pymc_bnn.fit to compare, if it has an 'engine' "
        "option (default: every one of pymc, jax that is available)",
    )
    parser.add_argument("--worker", action="store_true", help=_suppress())
    parser.add_argument("--engine", default="default", help=_suppress())
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    # The difference t_S - t_{S/10} must dwarf the noise of the two compiles (~0.5 s):
    # the jax engine runs 10,000 steps in ~0.13 s, so it gets 30x more steps.
    default_steps = (
        {"pymc": 1000, "jax": 10_000} if args.quick else {"pymc": 10_000, "jax": 300_000}
    )
    rows_list = args.rows or ([10**3, 10**4] if args.quick else [10**3, 10**4, 10**5, 10**6])
    engines = args.engines or available_engines()
    info = _common.machine_info()
    _common.print_header(f"Minibatch ADVI scaling (batch {BATCH}, {N_FEATURES} features)", info)
    t_start = time.perf_counter()
    rows = []
    for engine in engines:
        for n in rows_list:
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                "--rows",
                str(n),
                "--steps",
                str(args.steps or default_steps.get(engine, 10_000)),
                "--seed",
                str(args.seed),
                "--engine",
                engine,
                *(["--quick"] if args.quick else []),
            ]
            base = {"engine": engine, "n_rows": n}
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                rows.append({**base, "status": f"timed out after {args.timeout:.0f} s"})
                continue
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                tail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
                rows.append({**base, "status": f"failed: {tail}"[:300]})
                print(f"{engine} N={n:>9,}: {rows[-1]['status']}", flush=True)
                continue
            rec = json.loads(lines[-1][len("RESULT ") :])
            rec["engine"] = rec.get("engine") or engine
            rec["status"] = "ok"
            rows.append(rec)
            print(
                f"{engine} N={n:>9,}: {rec['ms_per_it']:.3f} ms/it (difference), "
                f"{rec['ms_per_it_clock'] or float('nan'):.3f} ms/it (clock), compile "
                f"{rec['compile_s']:.2f} s, peak RSS {rec['peak_rss_mb']:.0f} MB",
                flush=True,
            )
    for r in rows:
        ref = next(
            (
                q
                for q in rows
                if q.get("status") == "ok"
                and q["engine"] == r["engine"]
                and q["n_rows"] == min(rows_list)
            ),
            None,
        )
        if r.get("status") == "ok" and ref:
            r["t_ratio_vs_smallest"] = r["ms_per_it"] / ref["ms_per_it"]
            if r.get("ms_per_it_clock") and ref.get("ms_per_it_clock"):
                r["t_ratio_clock_vs_smallest"] = r["ms_per_it_clock"] / ref["ms_per_it_clock"]
            r["peak_rss_growth_mb"] = r["peak_rss_mb"] - ref["peak_rss_mb"]
    n0 = f"{min(rows_list):.0e}".replace("+0", "")
    table = _common.markdown_table(
        rows,
        [
            ("engine", "engine"),
            ("n_rows", "N rows"),
            ("data_mb", "data MB"),
            ("ms_per_it", "ms/it (difference)"),
            ("t_ratio_vs_smallest", f"t(N)/t({n0})"),
            ("ms_per_it_clock", "ms/it (step clock)"),
            ("t_ratio_clock_vs_smallest", f"t(N)/t({n0}) clock"),
            ("compile_s", "compile s"),
            ("build_s", "build_model s"),
            ("rss_with_data_mb", "RSS with data MB"),
            ("peak_rss_mb", "peak RSS MB"),
            ("peak_rss_growth_mb", f"peak RSS − peak RSS({n0}) MB"),
            ("status", "status"),
        ],
    )
    print("\n" + table + "\n")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "config": vars(args),
        "rows": rows,
        "table": table,
        "elapsed_s": time.perf_counter() - t_start,
        "notes": [
            "ms/it = (t(S) - t(S/10)) / (0.9 S), each fit a separate call that recompiles.",
            "peak_rss_mb = RSS with data + peak extra (VmHWM reset before build_model and the "
            "fits); one fresh process per N.",
        ],
    }
    path = _common.write_json(args.out, payload)
    print(f"wrote {path}")
    return 0


def available_engines() -> list[str]:
    """The ``engine`` values of ``pymc_bnn.fit`` worth comparing (["default"] if none)."""
    import importlib.util
    import inspect

    import pymc_bnn

    if "engine" not in inspect.signature(pymc_bnn.fit).parameters:
        return ["default"]
    return ["pymc"] + (["jax"] if importlib.util.find_spec("jax") else [])


def _suppress():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
