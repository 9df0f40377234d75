"""Run every benchmark (full or ``--quick``), then print their markdown tables.

Each script runs in its own subprocess and writes ``<out-dir>/<name>.json`` (default
``benchmarks/results``; with ``--quick``, a folder in the system's temporary directory,
so that a smoke run never replaces the committed results); this
script then collects the tables (with the machine description) into
``<out-dir>/summary.md`` and prints them. ``--report-only`` skips the runs and reports
the JSON files already in ``--out-dir``.

Run: ``python benchmarks/run_all.py [--quick] [--out-dir DIR] [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

HERE = Path(__file__).resolve().parent
#: Benchmarks in the order they run (cheapest first).
BENCHMARKS = (
    "scaling",
    "inference_throughput",
    "ppc_strategies",
    "wide_network",
    "default_frontier",
    "fit_scaling",
    "repeated_fits",
    "tabular_cli",
    "dask_scaling",
    "uci_regression",
    "noise_choice",
    "calibration",
)


def report(out_dir: Path, names) -> str:
    """Markdown of the tables in ``out_dir/<name>.json``, with machine info."""
    parts = []
    for name in names:
        path = out_dir / f"{name}.json"
        if not path.exists():
            parts.append(f"### {name}\n\n(no results: {path} is missing)\n")
            continue
        data = json.loads(path.read_text())
        m = data["machine"]
        v = m["versions"]
        mode = "quick" if data["config"].get("quick") else "full"
        parts.append(
            f"### {name} ({mode}, {data.get('elapsed_s', 0):.0f} s)\n\n"
            f"{m['cpu_model']}, {m['cores_usable']} cores, load {m['load_avg_1_5_15']}, "
            f"Python {m['python']}, pymc {v['pymc']}, pytensor {v['pytensor']}, "
            f"jax {v['jax']}, numpyro {v['numpyro']}, {m['timestamp_utc']}\n\n"
            f"{data['table']}\n"
        )
    return "\n".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every script")
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help="folder of the JSON results and summary.md (default "
        f"benchmarks/results; with --quick, {_common.QUICK_DIR})",
    )
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="do not run; print the tables of the JSON files already in "
        "--out-dir (summary.md is written only where --out-dir is given)",
    )
    args = parser.parse_args(argv)
    # a report of the committed results only prints: their summary.md is a record, and
    # the folder holds it, not the JSON files a report is made of
    write_summary = not args.report_only or args.out_dir is not None
    if args.out_dir is None:
        args.out_dir = _common.default_out_dir(args.quick)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    failed = []
    if not args.report_only:
        for name in args.only:
            cmd = [
                sys.executable,
                str(HERE / f"{name}.py"),
                "--out",
                str(args.out_dir / f"{name}.json"),
                "--seed",
                str(args.seed),
            ]
            if args.quick:
                cmd.append("--quick")
            print(f"\n$ {' '.join(cmd)}", flush=True)
            t0 = time.perf_counter()
            rc = subprocess.call(cmd)
            print(f"[{name}: exit {rc}, {time.perf_counter() - t0:.0f} s]", flush=True)
            if rc != 0:
                failed.append(name)
    text = report(args.out_dir, args.only)
    if write_summary:
        (args.out_dir / "summary.md").write_text("# Benchmark results\n\n" + text)
    print("\n# Benchmark results\n\n" + text)
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
