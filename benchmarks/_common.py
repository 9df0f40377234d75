"""Shared plumbing of the benchmark scripts: machine info, timing, memory, JSON, tables.

Measurement plumbing only, no modelling: the scripts use the public ``pymc_bnn`` API
and the peers' own APIs (PyMC, PyTensor, NumPyro/JAX) for everything they measure.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import importlib
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

__all__ = [
    "QUICK_DIR",
    "RESULTS_DIR",
    "StepClock",
    "flush",
    "print_header",
    "PeakRSS",
    "base_parser",
    "machine_info",
    "markdown_table",
    "median",
    "rss_mb",
    "time_call",
    "write_json",
]

#: Default folder of the JSON results: ``benchmarks/results``.
RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: Where ``--quick`` runs write unless told otherwise (never over the committed results).
QUICK_DIR = Path(tempfile.gettempdir()) / "pymc_bnn_benchmarks_quick"

_VERSIONED = (
    "numpy",
    "scipy",
    "pymc",
    "pytensor",
    "arviz",
    "sklearn",
    "jax",
    "jaxlib",
    "numpyro",
    "nutpie",
    "numba",
    "pymc_bnn",
)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(name: str) -> str | None:
    """Version of an installed module without importing heavy ones needlessly."""
    from importlib import metadata

    dist = {"sklearn": "scikit-learn"}.get(name, name)
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        try:
            return getattr(importlib.import_module(name), "__version__", None)
        except ImportError:
            return None


def machine_info() -> dict:
    """CPU, cores, load, OS, Python and library versions, PyTensor's default backend."""
    info = {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "load_avg_1_5_15": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "mem_total_gb": None,
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in _VERSIONED},
        "timestamp_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
        info["mem_total_gb"] = round(kb / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import pytensor

        info["pytensor_linker"] = type(pytensor.compile.mode.get_default_mode().linker).__name__
        info["pytensor_floatX"] = pytensor.config.floatX
    except Exception:  # pragma: no cover - informational only
        pass
    info["threads_env"] = {
        k: os.environ.get(k)
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")
        if os.environ.get(k)
    }
    return info


def default_out_dir(quick: bool) -> Path:
    """Where a run writes by default: ``benchmarks/results`` (the committed results a
    full run refreshes), or :data:`QUICK_DIR` for a ``--quick`` smoke run, whose shrunken
    figures must never replace them."""
    return QUICK_DIR if quick else RESULTS_DIR


class _Parser(argparse.ArgumentParser):
    """Resolves ``--out`` left unset to :func:`default_out_dir` once ``--quick`` is known."""

    def __init__(self, *args, name: str, **kwargs):
        super().__init__(*args, **kwargs)
        self._name = name

    def parse_known_args(self, args=None, namespace=None):
        parsed, rest = super().parse_known_args(args, namespace)
        if getattr(parsed, "out", "") is None:
            parsed.out = (
                default_out_dir(bool(getattr(parsed, "quick", False))) / f"{self._name}.json"
            )
        return parsed, rest


def base_parser(description: str, name: str) -> argparse.ArgumentParser:
    """Arguments every script shares: ``--quick``, ``--out``, ``--seed``."""
    parser = _Parser(
        description=description, name=name, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="shrink everything (smoke test, a minute or two)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON output path (default: benchmarks/results/{name}.json; "
        f"with --quick, {name}.json in {QUICK_DIR})",
    )
    parser.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    return parser


def write_json(path: Path, payload: dict) -> Path:
    """Write ``payload`` as indented JSON (NaN/inf become null), creating folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        json.dump(_clean(payload), fh, indent=2)
        fh.write("\n")
    return path


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and getattr(obj, "ndim", None) == 0:  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        a = abs(value)
        if a == 0:
            return "0"
        if a >= 1000:
            return f"{value:,.0f}"
        if a >= 10:
            return f"{value:.1f}"
        if a >= 0.01:
            return f"{value:.3g}"
        return f"{value:.2e}"
    return str(value)


def markdown_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """A markdown table of ``rows``; ``columns`` are (key, header) pairs."""
    head = "| " + " | ".join(h for _, h in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_fmt(r.get(k)) for k, _ in columns) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# ---------------------------------------------------------------- memory (Linux /proc)
def _status_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_mb() -> float | None:
    """Current resident set size of this process, MB (Linux; None elsewhere)."""
    kb = _status_kb("VmRSS")
    return None if kb is None else kb / 1024


class PeakRSS:
    """Peak extra resident memory of a block of code, in MB.

    On Linux the kernel's high-water mark of this process (``VmHWM``) is reset to the
    current RSS by writing ``5`` to ``/proc/self/clear_refs``; after the block,
    ``VmHWM - RSS_before`` is the peak of *extra* resident memory during the block,
    whoever allocated it (NumPy, PyTensor/Numba, XLA buffers, ...), measured exactly
    by the kernel rather than sampled. Elsewhere (or if the reset is refused) it falls
    back to ``ru_maxrss`` growth, which is only a lower bound and says so
    (``method``).

    Examples
    --------
    >>> with PeakRSS() as mem:
    ...     x = bytearray(50 * 2**20)
    >>> mem.extra_mb > 40
    True
    """

    def __init__(self):
        self.extra_mb: float | None = None
        self.method = "none"

    def __enter__(self):
        gc.collect()
        self._before = _status_kb("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self.method = "VmHWM reset (exact peak)"
        except OSError:
            import resource

            self._ru0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self.method = "ru_maxrss growth (lower bound)"
        return self

    def __exit__(self, *exc):
        if self.method.startswith("VmHWM"):
            hwm = _status_kb("VmHWM")
            if hwm is not None and self._before is not None:
                self.extra_mb = max(hwm - self._before, 0) / 1024
        elif self.method.startswith("ru_maxrss"):
            import resource

            ru1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self.extra_mb = max(ru1 - self._ru0, 0) / 1024
        return False


class StepClock:
    """A PyMC VI callback ``f(approx, losses, i)`` that timestamps two steps of a run.

    The clock starts at the first callback with ``i >= start`` and stops at the first
    with ``i >= stop`` (engines that call callbacks once per chunk of steps are
    handled). ``ms_per_it`` is the wall time per step in between: compilation
    excluded, the (tiny) cost of calling callbacks included.
    """

    def __init__(self, start: int, stop: int):
        self.start, self.stop = start, stop
        self.i_start = self.i_stop = None
        self.t_start = self.t_stop = None

    def __call__(self, approx, losses, i):
        if self.t_start is None and i >= self.start:
            self.t_start, self.i_start = time.perf_counter(), i
        elif self.t_start is not None and self.t_stop is None and i >= self.stop:
            self.t_stop, self.i_stop = time.perf_counter(), i

    @property
    def ms_per_it(self) -> float | None:
        if self.t_stop is None or self.i_stop == self.i_start:
            return None
        return 1e3 * (self.t_stop - self.t_start) / (self.i_stop - self.i_start)


def time_call(fn, *args, **kwargs):
    """``(seconds, result)`` of one call, wall clock (``time.perf_counter``)."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def print_header(title: str, info: dict) -> None:
    v = info["versions"]
    print(f"## {title}\n")
    print(
        f"{info['cpu_model']}, {info['cores_usable']} usable cores, load "
        f"{info['load_avg_1_5_15']}; Python {info['python']}, pymc {v['pymc']}, "
        f"pytensor {v['pytensor']} ({info.get('pytensor_linker')}), jax {v['jax']}, "
        f"numpyro {v['numpyro']}, nutpie {v['nutpie']}\n",
        flush=True,
    )


def flush() -> None:
    sys.stdout.flush()


@contextlib.contextmanager
def counting_convergence_warnings(counter: list):
    """Silence sklearn ConvergenceWarnings, appending their number to ``counter``."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        yield
    counter.append(sum(issubclass(w.category, ConvergenceWarning) for w in caught))
    for w in caught:  # anything else is shown as usual
        if not issubclass(w.category, ConvergenceWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
