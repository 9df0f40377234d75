"""The command line on its own example tables: defaults beside anchors, and what each command costs.

``pymc-bnn`` is run as a user runs it: the installed console script, one subprocess
per command, with its DEFAULT settings except ``--drop customer_id`` and ``--seed``.
For each task (classification, multiclass, regression) and seed, the training table
is ``make_customers(n_rows, task=task, random_state=seed)`` and the test table an
independent draw of the same generator, ``random_state=seed + 1000``, both written as
CSV to a temporary folder. Per (task, seed), in this order:

1. ``pymc-bnn example train_copy.csv --task T --rows N --seed S``: timed, and checked
   to write the same file as ``make_customers`` (the CLI's own data command);
2. ``pymc-bnn fit train.csv -t TARGET -o model.nc --drop customer_id --seed S``;
3. ``pymc-bnn info model.nc --json`` (the chosen posterior temperature, the in-process
   fit time, the defaults actually used);
4. ``pymc-bnn evaluate model.nc test.csv --json``: the scores of "ours" (regression:
   the model's own 90 % interval, ``--interval`` default 0.9);
5. ``pymc-bnn predict model.nc test.csv -o pred.csv``: timed, and its output re-scored
   with the same ``pymc_bnn.metrics`` summary (must agree with ``evaluate``);
6. ``pymc-bnn report model.nc test.csv -o report/``: timed.

Every command is timed wall-clock around the subprocess (interpreter start, imports,
reading and writing files included). The commands run with a new, empty JAX
persistent compilation cache (``PYMC_BNN_COMPILE_CACHE`` = a folder made for this run;
``--compile-cache`` changes that): seeds run in the outer loop, so the first seed of
each task is a first-time user who pays the compilation of that network structure,
and later seeds are a user's later runs, which read the cache back. The fit time of
every seed is reported, and their median.

Anchors, in this process, on the same CSV files with the same preprocessing
(``pymc_bnn.tabular.TabularPreprocessor().fit`` on the training features, i.e. every
column but ``customer_id`` and the target):

- classification (binary and 3 classes): ``LogisticRegression(max_iter=2000)``,
  ``MLPClassifier((5, 5))`` and ``MLPClassifier((32,))`` (``max_iter=3000``,
  ``early_stopping=False``, ``random_state=seed``), and a deep ensemble of 5
  ``MLPClassifier((32,))`` (``random_state=seed * 10 + i``, ``predict_proba`` averaged);
  scored by ``pymc_bnn.metrics.classification_summary`` (what ``evaluate`` uses);
- regression: ``RidgeCV()`` and ``MLPRegressor((32,))`` (same settings), each with a
  homoscedastic Gaussian predictive whose sd is the RMSE of its 5-fold out-of-fold
  residuals on the training rows (their fit time includes those five fits), and the
  central 90 % interval ``mean ± 1.645 sd``; scored by
  ``pymc_bnn.metrics.regression_summary``.

Medians over seeds (``--seeds``, default 3: ``--seed``, ``--seed + 1``, ...) per task
and method; every seed's numbers are in the JSON (``runs``). ``--quick``: 1 seed, the
classification and regression tasks, 300-row tables and the anchors' MLPs capped at
``max_iter=200`` (the CLI keeps its defaults). Progress lines go to stderr, tables to
stdout.

Run: ``python benchmarks/tabular_cli.py [--quick] [--seeds N] [--out PATH]``.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

NAME = "tabular_cli"
TASKS = ("classification", "multiclass", "regression")
QUICK_TASKS = ("classification", "regression")
#: The console script installed beside this interpreter (what a user types).
CLI = Path(sys.executable).with_name("pymc-bnn")
COMMANDS = ("example", "fit", "info", "evaluate", "predict", "report")
CLS_METRICS = ("accuracy", "nll", "brier", "ece", "aurc")
REG_METRICS = ("rmse", "mae", "nll", "crps", "coverage", "mean_interval_width")
OURS = "pymc-bnn (defaults)"
CLS_ANCHORS = ("LogisticRegression", "MLP (5, 5)", "MLP (32,)", "5-MLP ensemble (32,)")
REG_ANCHORS = ("RidgeCV", "MLP (32,)")
Z90 = 1.6448536269514722  # standard-normal 0.95 quantile: central 90 % interval
MLP_MAX_ITER = 3000
MLP_MAX_ITER_QUICK = 200  # --quick exercises the anchors, it does not measure them
TIMEOUT_S = 1800


def _each(times) -> str:
    """Per-seed seconds as ``"12.3 / 4.56 / —"``."""
    return " / ".join("—" if t is None else f"{t:.3g}" for t in times)


def git_state() -> dict:
    """The checkout measured: commit and uncommitted changes to the package (if a git tree)."""
    root = Path(__file__).resolve().parents[1]

    def git(*a):
        try:
            out = subprocess.run(["git", *a], capture_output=True, text=True, cwd=root, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    changed = git("status", "--porcelain", "--", "pymc_bnn")
    return {
        "commit": git("rev-parse", "HEAD"),
        "package_changes": None if changed is None else changed.splitlines(),
    }


def log(msg: str) -> None:
    """Progress line on stderr (stdout carries the tables)."""
    print(msg, file=sys.stderr, flush=True)


def _tail(text: str, n: int = 1500) -> str:
    return text[-n:].strip()


# ------------------------------------------------------------------ command line
def run_cli(args: list[str], *, env: dict, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    """``(wall seconds, completed process)`` of one ``pymc-bnn`` command."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(CLI), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=TIMEOUT_S,
    )
    return time.perf_counter() - t0, proc


class CommandFailed(RuntimeError):
    pass


def checked(name: str, seconds: float, proc, record: dict) -> subprocess.CompletedProcess:
    """Store the command's time (and output on failure) in ``record``; raise if it failed."""
    record[name] = {"wall_s": seconds, "returncode": proc.returncode}
    if proc.returncode != 0:
        record[name].update(stdout=_tail(proc.stdout), stderr=_tail(proc.stderr))
        raise CommandFailed(
            f"pymc-bnn {name} exited {proc.returncode}: "
            f"{_tail(proc.stderr, 400) or _tail(proc.stdout, 400)}"
        )
    return proc


def rescore_predictions(pred_csv: Path, test, target: str, task: str) -> dict:
    """``predict``'s output file scored with the summary ``evaluate`` uses."""
    import pandas as pd

    from pymc_bnn import metrics

    pred = pd.read_csv(pred_csv)
    if task == "regression":
        return metrics.regression_summary(
            test[target].to_numpy(float),
            pred["mean"].to_numpy(),
            pred["std"].to_numpy(),
            lower=pred["lower_90"].to_numpy(),
            upper=pred["upper_90"].to_numpy(),
        )
    cols = [c for c in pred.columns if c.startswith("proba_")]
    classes = np.array([c[len("proba_") :] for c in cols], dtype=object)
    y = np.array([str(v) for v in test[target]], dtype=object)
    return metrics.classification_summary(y, pred[cols].to_numpy(), classes=classes)


def run_ours(folder: Path, task: str, target: str, n_rows: int, seed: int, env: dict, test) -> dict:
    """The six commands on one (task, seed); a dict of timings, scores and checks."""
    rec: dict = {"seed": seed, "commands": {}}
    cmd = rec["commands"]
    model, pred, report = folder / "model.nc", folder / "pred.csv", folder / "report"
    try:
        t, p = run_cli(
            ["example", folder / "example.csv", "--task", task, "--rows", n_rows, "--seed", seed],
            env=env,
            cwd=folder,
        )
        checked("example", t, p, cmd)
        rec["example_matches_make_customers"] = filecmp.cmp(
            folder / "example.csv", folder / "train.csv", shallow=False
        )
        t, p = run_cli(
            [
                "fit",
                folder / "train.csv",
                "--target",
                target,
                "--output",
                model,
                "--drop",
                "customer_id",
                "--seed",
                seed,
            ],
            env=env,
            cwd=folder,
        )
        checked("fit", t, p, cmd)
        rec["fit_s"] = t
        rec["fit_stdout"] = p.stdout.strip().splitlines()
        rec["fit_notes"] = [ln for ln in p.stderr.strip().splitlines() if ln]

        t, p = run_cli(["info", model, "--json"], env=env, cwd=folder)
        checked("info", t, p, cmd)
        meta = json.loads(p.stdout)
        info = (meta.get("extra") or {}).get("info") or {}
        diag = meta.get("diagnostics") or {}
        rec.update(
            model_fit_s=info.get("fit_seconds"),
            task_inferred=info.get("task"),
            features_after_encoding=info.get("features_after_encoding"),
            posterior_temperature=meta.get("posterior_temperature"),
            converged=diag.get("converged"),
            n_steps=diag.get("n_steps"),
            params=meta.get("params"),
        )

        t, p = run_cli(["evaluate", model, folder / "test.csv", "--json"], env=env, cwd=folder)
        checked("evaluate", t, p, cmd)
        rec["scores"] = json.loads(p.stdout)

        t, p = run_cli(
            ["predict", model, folder / "test.csv", "--output", pred], env=env, cwd=folder
        )
        checked("predict", t, p, cmd)
        again = rescore_predictions(pred, test, target, task)
        # a regression's nll in evaluate is the model's own predictive density, which
        # predict's mean and sd do not determine: the other scores must agree
        skip = {"n", "nll"} if task == "regression" else {"n"}
        rec["predict_vs_evaluate_max_abs_diff"] = max(
            abs(again[k] - rec["scores"][k]) for k in again if k not in skip
        )

        t, p = run_cli(
            ["report", model, folder / "test.csv", "--output", report], env=env, cwd=folder
        )
        checked("report", t, p, cmd)
        rec["report_files"] = sorted(f.name for f in report.iterdir())
        rec["status"] = "ok"
    except CommandFailed as exc:
        rec.update(status="failed", reason=str(exc))
    except Exception as exc:  # keep the other measurements
        traceback.print_exc()
        rec.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
    return rec


# ---------------------------------------------------------------------- anchors
def _counting(fn, *args, **kwargs):
    """``(result, number of ConvergenceWarnings)``; other warnings are shown."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        out = fn(*args, **kwargs)
    n = 0
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            n += 1
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return out, n


class MLPEnsemble:
    """Deep ensemble: ``members`` MLPClassifiers, ``predict_proba`` averaged."""

    def __init__(self, members: list):
        self.members = members

    def fit(self, X, y):
        for m in self.members:
            m.fit(X, y)
        self.classes_ = self.members[0].classes_
        return self

    def predict_proba(self, X):
        return np.mean([m.predict_proba(X) for m in self.members], axis=0)


def anchor_models(task: str, seed: int, mlp_max_iter: int = MLP_MAX_ITER) -> dict:
    from sklearn.linear_model import LogisticRegression, RidgeCV
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    # keywords only: MLPRegressor's first positional parameter is ``loss`` in recent sklearn
    mlp = {"max_iter": mlp_max_iter, "early_stopping": False}
    if task == "regression":
        return {
            "RidgeCV": RidgeCV(),
            "MLP (32,)": MLPRegressor(hidden_layer_sizes=(32,), random_state=seed, **mlp),
        }
    return {
        "LogisticRegression": LogisticRegression(max_iter=2000),
        "MLP (5, 5)": MLPClassifier(hidden_layer_sizes=(5, 5), random_state=seed, **mlp),
        "MLP (32,)": MLPClassifier(hidden_layer_sizes=(32,), random_state=seed, **mlp),
        "5-MLP ensemble (32,)": MLPEnsemble(
            [
                MLPClassifier(hidden_layer_sizes=(32,), random_state=seed * 10 + i, **mlp)
                for i in range(5)
            ]
        ),
    }


def run_anchors(
    train, test, task: str, target: str, seed: int, mlp_max_iter: int = MLP_MAX_ITER
) -> dict:
    """Each anchor's scores on the test table: ``{name: record}``."""
    from sklearn.base import clone
    from sklearn.model_selection import KFold, cross_val_predict

    from pymc_bnn import metrics
    from pymc_bnn.tabular._transform import TabularPreprocessor

    features = [c for c in train.columns if c not in ("customer_id", target)]
    t0 = time.perf_counter()
    pre = TabularPreprocessor().fit(train[features])
    X_train, X_test = pre.transform(train[features]), pre.transform(test[features])
    preprocess_s = time.perf_counter() - t0
    out = {}
    for name, model in anchor_models(task, seed, mlp_max_iter).items():
        rec = {"seed": seed, "preprocess_s": preprocess_s, "n_features": X_train.shape[1]}
        try:
            if task == "regression":
                y_train = train[target].to_numpy(float)
                y_test = test[target].to_numpy(float)
                t0 = time.perf_counter()
                # the noise sd from 5-fold out-of-fold residuals, as benchmarks/
                # uci_regression.py's anchors: the training rows' own residuals understate
                # it (an MLP's most), which made the anchors' intervals too narrow
                oof, warned = _counting(
                    cross_val_predict,
                    clone(model),
                    X_train,
                    y_train,
                    cv=KFold(5, shuffle=True, random_state=seed),
                )
                _, rec["convergence_warnings"] = _counting(model.fit, X_train, y_train)
                rec["convergence_warnings"] += warned
                rec["fit_s"] = time.perf_counter() - t0
                sigma = float(np.sqrt(np.mean((y_train - oof) ** 2)))
                mean = model.predict(X_test)
                rec["sigma"] = sigma
                rec["scores"] = metrics.regression_summary(
                    y_test, mean, sigma, lower=mean - Z90 * sigma, upper=mean + Z90 * sigma
                )
            else:
                y_train = train[target].astype(str).to_numpy(object)
                y_test = test[target].astype(str).to_numpy(object)
                t0 = time.perf_counter()
                _, rec["convergence_warnings"] = _counting(model.fit, X_train, y_train)
                rec["fit_s"] = time.perf_counter() - t0
                rec["scores"] = metrics.classification_summary(
                    y_test, model.predict_proba(X_test), classes=model.classes_
                )
            rec["status"] = "ok"
        except Exception as exc:  # keep the other measurements
            traceback.print_exc()
            rec.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
        out[name] = rec
    return out


# ------------------------------------------------------------------------- rows
def score_row(task: str, method: str, runs: list[dict]) -> dict:
    """One row of medians over seeds for (task, method)."""
    ok = [r for r in runs if r["status"] == "ok"]
    keys = REG_METRICS if task == "regression" else CLS_METRICS
    row = {
        "section": "scores",
        "task": task,
        "method": method,
        "seeds": [r["seed"] for r in runs],
        "n_ok": len(ok),
        "status": "ok" if len(ok) == len(runs) else "failed",
    }
    if len(ok) < len(runs):
        row["reason"] = "; ".join(
            sorted({f"seed {r['seed']}: {r['reason']}" for r in runs if r["status"] != "ok"})
        )
    med = _common.median
    for k in keys:
        row[k] = med(r["scores"].get(k) for r in ok)
    row["fit_s"] = med(r["fit_s"] for r in ok)
    row["fit_s_per_seed"] = [r.get("fit_s") for r in runs]
    row["fit_s_each"] = _each(row["fit_s_per_seed"])
    if method == OURS:
        row["model_fit_s"] = med(r.get("model_fit_s") for r in ok)
        row["posterior_temperature"] = [r.get("posterior_temperature") for r in runs]
        row["converged"] = [r.get("converged") for r in runs]
        row["predict_vs_evaluate_max_abs_diff"] = max(
            (r["predict_vs_evaluate_max_abs_diff"] for r in ok), default=None
        )
    else:
        row["convergence_warnings"] = sum(r.get("convergence_warnings", 0) for r in ok)
    row["runs"] = runs
    return row


def command_rows(task: str, runs: list[dict]) -> list[dict]:
    """One row per command of ``task``: wall time of each seed, first, later, median."""
    rows = []
    med = _common.median
    for name in COMMANDS:
        times = [r["commands"].get(name, {}).get("wall_s") for r in runs]
        done = [t for t in times if t is not None]
        ok = all(r["commands"].get(name, {}).get("returncode") == 0 for r in runs)
        row = {
            "section": "commands",
            "task": task,
            "command": name,
            "status": "ok" if ok else "failed",
            "wall_s": med(done),
            "wall_s_per_seed": times,
            "wall_s_each": _each(times),
            "first_s": times[0],
            "later_s": med(times[1:]) if len(times) > 1 else None,
        }
        if name == "fit":
            row["model_fit_s"] = med(r.get("model_fit_s") for r in runs)
        if not ok:
            row["reason"] = "; ".join(
                f"seed {r['seed']}: "
                + (
                    "not run"
                    if name not in r["commands"]
                    else r["commands"][name].get("stderr", "")[-300:]
                )
                for r in runs
                if r["commands"].get(name, {}).get("returncode") != 0
            )
        rows.append(row)
    return rows


CLS_COLUMNS = [
    ("task", "task"),
    ("method", "method"),
    ("accuracy", "accuracy"),
    ("nll", "NLL"),
    ("brier", "Brier (sklearn)"),
    ("ece", "ECE"),
    ("fit_s", "fit s"),
    ("fit_s_each", "fit s per seed"),
    ("status", "status"),
]
REG_COLUMNS = [
    ("task", "task"),
    ("method", "method"),
    ("rmse", "RMSE"),
    ("nll", "NLL"),
    ("crps", "CRPS"),
    ("coverage", "90% coverage"),
    ("mean_interval_width", "90% width"),
    ("fit_s", "fit s"),
    ("fit_s_each", "fit s per seed"),
    ("status", "status"),
]
CMD_COLUMNS = [
    ("task", "task"),
    ("command", "pymc-bnn command"),
    ("wall_s", "wall s (median)"),
    ("wall_s_each", "wall s per seed"),
    ("first_s", "first seed s"),
    ("later_s", "later seeds s"),
    ("model_fit_s", "of which estimator fit s"),
    ("status", "status"),
]


# ------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="number of seeds: --seed, --seed + 1, ... (default 3; --quick 1)",
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=None,
        help="rows of the training and of the test table (default 800; --quick 300)",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=TASKS,
        default=None,
        help="default all; --quick: classification regression (the "
        "three-class path is tested in tests/integration/test_cli_tabular.py)",
    )
    parser.add_argument(
        "--compile-cache",
        choices=("fresh", "user", "off"),
        default="fresh",
        help="JAX compilation cache of the commands: a new empty folder for "
        "this run (default), the user's (PYMC_BNN_COMPILE_CACHE as set, "
        "else ~/.cache/pymc_bnn/jax), or none",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="copy the tables, model files, predictions and reports here",
    )
    args = parser.parse_args(argv)
    args.tasks = args.tasks or (list(QUICK_TASKS) if args.quick else list(TASKS))
    n_seeds = args.seeds if args.seeds is not None else (1 if args.quick else 3)
    seeds = [args.seed + i for i in range(n_seeds)]
    n_rows = args.rows or (300 if args.quick else 800)
    mlp_max_iter = MLP_MAX_ITER_QUICK if args.quick else MLP_MAX_ITER
    if not CLI.exists():
        print(
            f"{CLI} not found: install the package (pip install -e .) in this "
            "interpreter's environment",
            file=sys.stderr,
        )
        return 1

    import pandas as pd

    from pymc_bnn.datasets import CUSTOMER_TARGETS, make_customers

    info = _common.machine_info()
    _common.print_header(
        "The pymc-bnn command line: defaults beside anchors, cost per command (medians over seeds)",
        info,
    )
    t_start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="pymc_bnn-tabular-cli-"))
    env = dict(os.environ)
    if args.compile_cache == "fresh":
        env["PYMC_BNN_COMPILE_CACHE"] = str(work / "jax-cache")
    elif args.compile_cache == "off":
        env["PYMC_BNN_COMPILE_CACHE"] = "off"
    config = {
        "quick": args.quick,
        "seed": args.seed,
        "seeds": seeds,
        "n_rows": n_rows,
        "tasks": args.tasks,
        "targets": {t: CUSTOMER_TARGETS[t] for t in args.tasks},
        "train_table": "make_customers(n_rows, task=task, random_state=seed)",
        "test_table": "make_customers(n_rows, task=task, random_state=seed + 1000)",
        "cli": str(CLI),
        "compile_cache": args.compile_cache,
        "compile_cache_dir": env.get("PYMC_BNN_COMPILE_CACHE"),
        "cli_arguments": {
            "fit": "fit train.csv --target TARGET --output model.nc --drop customer_id --seed SEED",
            "evaluate": "evaluate model.nc test.csv --json",
            "predict": "predict model.nc test.csv --output pred.csv",
            "info": "info model.nc --json",
            "report": "report model.nc test.csv --output report",
            "example": "example example.csv --task TASK --rows N --seed SEED",
        },
        "mlp_max_iter": mlp_max_iter,
        "ensemble_seeds": "seed * 10 + i, i = 0..4",
        "anchor_sigma": "RMSE of the anchor's 5-fold out-of-fold residuals on the "
        "training rows (homoscedastic Gaussian)",
        "out": str(args.out),
        "keep": None if args.keep is None else str(args.keep),
        "git": git_state(),
    }

    # the price of starting the console script at all (click, no PyMC import)
    starts = [run_cli(["--help"], env=env, cwd=work)[0] for _ in range(3)]
    log(f"pymc-bnn --help: {' / '.join(f'{t:.2f}' for t in starts)} s")

    ours: dict[str, list] = {t: [] for t in args.tasks}
    anchors: dict[str, dict[str, list]] = {t: {} for t in args.tasks}
    try:
        for seed in seeds:  # outer: the first seed of each task compiles its structure
            for task in args.tasks:
                target = CUSTOMER_TARGETS[task]
                folder = work / f"{task}-seed{seed}"
                folder.mkdir()
                make_customers(n_rows, task=task, random_state=seed).to_csv(
                    folder / "train.csv", index=False
                )
                make_customers(n_rows, task=task, random_state=seed + 1000).to_csv(
                    folder / "test.csv", index=False
                )
                train = pd.read_csv(folder / "train.csv")
                test = pd.read_csv(folder / "test.csv")
                rec = run_ours(folder, task, target, n_rows, seed, env, test)
                ours[task].append(rec)
                shown = (
                    ""
                    if rec["status"] != "ok"
                    else "  ".join(
                        f"{k} {rec['scores'][k]:.3f}"
                        for k in (
                            ("rmse", "nll", "coverage")
                            if task == "regression"
                            else ("accuracy", "nll", "ece")
                        )
                    )
                )
                log(
                    f"[{task:14s} seed {seed}] {OURS:22s} {rec['status']:6s} "
                    + "  ".join(f"{c} {v['wall_s']:.1f}s" for c, v in rec["commands"].items())
                    + f"  {shown}"
                    + (f"  {rec['reason']}" if rec["status"] != "ok" else "")
                )
                for name, arec in run_anchors(
                    train, test, task, target, seed, mlp_max_iter
                ).items():
                    anchors[task].setdefault(name, []).append(arec)
                    shown = (
                        ""
                        if arec["status"] != "ok"
                        else "  ".join(
                            f"{k} {arec['scores'][k]:.3f}"
                            for k in (
                                ("rmse", "nll", "coverage")
                                if task == "regression"
                                else ("accuracy", "nll", "ece")
                            )
                        )
                    )
                    log(
                        f"[{task:14s} seed {seed}] {name:22s} {arec['status']:6s} fit "
                        f"{arec.get('fit_s', float('nan')):.2f}s  {shown}"
                        + (f"  {arec['reason']}" if arec["status"] != "ok" else "")
                    )
    finally:
        if args.keep is not None:
            shutil.copytree(
                work, args.keep, dirs_exist_ok=True, ignore=shutil.ignore_patterns("jax-cache")
            )
        shutil.rmtree(work, ignore_errors=True)

    rows: list[dict] = []
    tables: dict[str, str] = {}
    for task in args.tasks:
        task_rows = [score_row(task, OURS, ours[task])]
        task_rows += [score_row(task, name, runs) for name, runs in anchors[task].items()]
        rows += task_rows
        tables[task] = _common.markdown_table(
            task_rows, REG_COLUMNS if task == "regression" else CLS_COLUMNS
        )
    cmd_rows = [r for task in args.tasks for r in command_rows(task, ours[task])]
    start_row = {
        "section": "commands",
        "task": "—",
        "command": "--help (process start)",
        "status": "ok",
        "wall_s": _common.median(starts),
        "wall_s_per_seed": starts,
        "wall_s_each": _each(starts),
    }
    cmd_rows.append(start_row)
    rows += cmd_rows
    tables["commands"] = _common.markdown_table(cmd_rows, CMD_COLUMNS)
    for name, table in tables.items():
        print(f"\n### {name}\n\n{table}")
    print()
    table = "\n\n".join(tables.values())

    checks = {
        "example_matches_make_customers": all(
            r.get("example_matches_make_customers")
            for t in args.tasks
            for r in ours[t]
            if r["status"] == "ok"
        ),
        "predict_vs_evaluate_max_abs_diff": max(
            (
                r["predict_vs_evaluate_max_abs_diff"]
                for t in args.tasks
                for r in ours[t]
                if r["status"] == "ok"
            ),
            default=None,
        ),
    }
    ok_params = [r["params"] for t in args.tasks for r in ours[t] if r.get("params")]
    if ok_params:
        config["cli_estimator_params"] = ok_params[0]
    payload = {
        "benchmark": NAME,
        "machine": info,
        "config": config,
        "rows": rows,
        "table": table,
        "tables": tables,
        "checks": checks,
        "load_avg_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "elapsed_s": time.perf_counter() - t_start,
        "notes": [
            f"medians over {len(seeds)} seed(s) {seeds}; every seed's numbers in each row's "
            "'runs' (scores rows) or 'wall_s_per_seed' (commands rows).",
            f"data: make_customers({n_rows}, task, random_state=seed) to fit, an independent "
            f"make_customers({n_rows}, task, random_state=seed + 1000) to score; CSV files; "
            "'customer_id' dropped.",
            "ours: the installed console script in a subprocess per command, default settings "
            "but --drop customer_id and --seed; scores from 'evaluate --json' (regression: "
            "the model's own 90% interval); 'fit s' is the wall clock of the whole 'fit' "
            "process (interpreter start, imports, reading the CSV, preprocessing, fitting "
            "with the default posterior temperature choice, saving the model file); "
            "'of which estimator fit s' is the estimator's fit as the command reports it.",
            f"compile cache: {args.compile_cache} (a new empty JAX cache folder for this run "
            "unless 'user' / 'off'); seeds are the outer loop, so the first seed of each task "
            "pays the compilation of its network structure and later seeds read the cache. "
            "PyTensor's / Numba's own on-disk caches are the user's as they are.",
            "anchors: in this process (no interpreter start or imports in their times), "
            "TabularPreprocessor fit on the training features; 'fit s' is the model's fit "
            "alone (the ensemble: its 5 members).",
            "regression anchors: homoscedastic Gaussian with sd = RMSE of their 5-fold "
            "out-of-fold residuals on the training rows (fit_s includes those fits), 90% "
            "interval mean ± 1.645 sd.",
            "ECE: top-label, 15 bins; Brier (sklearn): scikit-learn's brier_score_loss "
            "(binary: mean squared error of the positive-class probability, in [0, 1]; 3+ "
            "classes: summed over classes, in [0, 2]; results before this note used the "
            "sum on binary tasks too, 2x); NLL in nats; "
            "CRPS of the Gaussian with the predictive mean and sd (the BNN's mixture "
            "predictive approximated by its mean and sd).",
            "checks: 'example' writes the same file as make_customers; 'predict' output "
            "re-scored with the same metrics agrees with 'evaluate' (max abs difference).",
            "machine.load_avg_1_5_15 is the load at the start, load_avg_end at the end; the "
            "2 cores are shared with other work.",
        ],
    }
    path = _common.write_json(args.out, payload)
    print(f"wrote {path}")
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
