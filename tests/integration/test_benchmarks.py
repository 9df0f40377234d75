"""Smoke tests of the benchmark scripts: each runs with ``--quick`` in a subprocess.

They check that every script finishes, writes JSON of the documented schema, and
prints its markdown table; and the correctness facts a benchmark relies on (the
same-draws strategies agree with the NumPy loop; the toolkit really used the
draws it was given). No timing is asserted: the machine is shared and noisy.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# One xdist group per script (see _group): a script's quick run is cached per session
# and worker, so its tests share a worker, while different scripts spread over workers.
# ``benchmark``: not in ``make test`` (ten scripts, ~10 minutes of test time on two
# cores), in ``make test-benchmarks``, which CI runs after ``make test``.
pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.benchmark]


def _group(name: str):
    return pytest.mark.xdist_group(f"bench-{name}")


ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
SCRIPTS = (
    "ppc_strategies",
    "inference_throughput",
    "scaling",
    "calibration",
    "repeated_fits",
    "tabular_cli",
    "dask_scaling",
    "wide_network",
    "default_frontier",
    "fit_scaling",
    "uci_regression",
    "noise_choice",
)
TOP_KEYS = {"benchmark", "machine", "config", "rows", "table", "notes", "elapsed_s"}
MACHINE_KEYS = {"cpu_model", "cores", "cores_usable", "python", "versions", "timestamp_utc"}


# Session scope: under pytest-xdist other modules' tests may run between these on the
# same worker, and a module-scoped cache would be torn down and every script run again.
@pytest.fixture(scope="session")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bench")


#: Arguments a script's smoke run adds to ``--quick``. ppc_strategies runs its cells in
#: this process: one subprocess per cell (its default) costs ~4 s of interpreter and
#: imports per cell, ten times; the per-cell subprocess is tested on its own below.
#: dask_scaling's processes and workers, tabular_cli's commands and repeated_fits'
#: cold-start processes use the run's compilation caches (see conftest) instead of each
#: run starting from empty ones (``fresh``, their default, which measures a first call as
#: on a new machine): a smoke run exercises, it does not measure.
QUICK_EXTRA = {
    "ppc_strategies": ("--isolation", "none"),
    "dask_scaling": ("--compile-cache", "user"),
    "tabular_cli": ("--compile-cache", "user"),
    "repeated_fits": ("--compile-cache", "user"),
}


@pytest.fixture(scope="session")
def quick_run(out_dir):
    """Run a script once with --quick (cached per session): (completed process, JSON)."""
    cache = {}

    def run(name, *extra, tag=None):
        """``extra`` replaces the script's QUICK_EXTRA; ``tag`` names such a run."""
        key = tag or name
        extra = extra or QUICK_EXTRA.get(name, ())
        if key not in cache:
            out = out_dir / f"{key}.json"
            proc = subprocess.run(
                [sys.executable, str(BENCH / f"{name}.py"), "--quick", "--out", str(out), *extra],
                capture_output=True,
                text=True,
                timeout=600,
                cwd=ROOT,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            cache[key] = (proc, json.loads(out.read_text()))
        return cache[key]

    return run


def _header_line(table: str) -> str:
    return table.splitlines()[0]


#: The UCI regression splits (``../shared/data/uci``, beside the repository as in CI).
UCI_DATA = ROOT.parent / "shared" / "data" / "uci"


def _marks(name: str):
    marks = [_group(name)]
    if name == "uci_regression":
        marks.append(pytest.mark.skipif(not UCI_DATA.is_dir(), reason=f"no UCI data at {UCI_DATA}"))
    return marks


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in SCRIPTS])
def test_quick_run_writes_json_and_prints_table(quick_run, name):
    proc, data = quick_run(name)
    assert TOP_KEYS <= set(data), TOP_KEYS - set(data)
    assert data["benchmark"] == name
    assert data["config"]["quick"] is True
    machine = data["machine"]
    assert MACHINE_KEYS <= set(machine), MACHINE_KEYS - set(machine)
    for lib in ("pymc", "pytensor", "numpy", "jax"):
        assert lib in machine["versions"]
    assert machine["versions"]["pymc"]
    rows = data["rows"]
    assert isinstance(rows, list) and rows
    assert all(isinstance(r, dict) and "status" in r for r in rows)
    assert any(r["status"] == "ok" for r in rows)
    # the markdown table is in the JSON and was printed
    table = data["table"]
    assert table.startswith("| ") and "\n|---" in table
    assert _header_line(table) in proc.stdout
    assert len(table.splitlines()) >= 3


@_group("ppc_strategies")
def test_ppc_strategies_schema_and_agreement(quick_run):
    _, data = quick_run("ppc_strategies")
    rows = {(r["strategy"], r["size"]): r for r in data["rows"]}
    assert {s for s, _ in rows} >= {
        "numpy_loop",
        "toolkit_mean_proba",
        "toolkit_sample_proba",
        "pymc_sample_node",
        "pymc_spp_deterministic",
    }
    for r in data["rows"]:
        if r["status"] != "ok":
            assert r["reason"], r
            continue
        for key in (
            "n_points",
            "setup_s",
            "first_call_s",
            "median_s",
            "repeats",
            "peak_extra_mb",
            "max_abs_diff",
            "draws_kind",
        ):
            assert key in r, (r["strategy"], key)
        assert r["median_s"] > 0 and r["repeats"] >= 1
        if r["draws_kind"] == "same draws":
            # the same weight draws must give the same probabilities: to float64
            # rounding, or float32 rounding for the float32 paths (the toolkit's JAX
            # predictive, the float32 JAX peer)
            f32 = r["strategy"].startswith("toolkit") or r["strategy"].endswith("_f32")
            assert r["max_abs_diff"] < (2e-6 if f32 else 1e-9), r
        else:
            assert r["max_abs_diff"] < 0.5, r  # Monte-Carlo error only
        if r.get("same_draws") is not None:
            assert r["same_draws"] is True, r
    assert data["fit"]["test_accuracy"] > 0.8
    assert {r["isolation"] for r in data["rows"] if r["status"] == "ok"} == {"none"}


@_group("ppc_strategies")
def test_ppc_strategies_cells_in_their_own_processes(quick_run):
    """The full benchmark's default: each cell in a fresh subprocess (``--worker``),
    which reads the fitted posterior and the draws back from the work folder."""
    _, data = quick_run(
        "ppc_strategies",
        "--isolation",
        "process",
        "--strategies",
        "toolkit_mean_proba",
        tag="ppc_strategies-process",
    )
    assert data["config"]["isolation"] == "process"
    rows = {r["strategy"]: r for r in data["rows"]}
    assert set(rows) == {"numpy_loop", "toolkit_mean_proba"}
    for r in rows.values():
        assert r["status"] == "ok" and r["isolation"] == "process", r
        assert r["peak_extra_mb"] is not None
    assert rows["toolkit_mean_proba"]["max_abs_diff"] < 2e-6
    # the same seeds give the same cells as in one process (the smoke run above)
    _, in_process = quick_run("ppc_strategies")
    same = {r["strategy"]: r for r in in_process["rows"] if r["strategy"] in rows}
    assert data["fit"].keys() == in_process["fit"].keys()
    for key in data["fit"].keys() - {"fit_s"}:  # all but the clock
        assert data["fit"][key] == in_process["fit"][key], key
    for name, r in rows.items():
        assert r["max_abs_diff"] == same[name]["max_abs_diff"], name


@_group("inference_throughput")
def test_inference_throughput_schema(quick_run):
    _, data = quick_run("inference_throughput")
    vi = [r for r in data["rows"] if r["section"] == "vi" and r["status"] == "ok"]
    nuts = [r for r in data["rows"] if r["section"] == "nuts"]
    impls = {r["implementation"] for r in vi}
    assert "pm.fit (ADVI)" in impls
    assert any(i.startswith("pymc_bnn.fit (ADVI") for i in impls)
    assert {r["batch"] for r in vi} >= {"full", 50}
    for r in vi:
        for key in ("it_per_s", "it_per_s_clock", "compile_s", "reached", "last_accuracy"):
            assert key in r, (r["implementation"], key)
        assert r["it_per_s_clock"] is not None and r["it_per_s_clock"] > 0
    ok = [r for r in nuts if r["status"] == "ok"]
    assert ok, "no NUTS run succeeded"
    for r in ok:
        for key in ("wall_s", "ess_p_min", "ess_p_median", "rhat_p_max", "divergences"):
            assert key in r
        assert math.isfinite(r["ess_p_min"]) and r["ess_p_min"] > 0
    assert len(data["ess_points"]) == 5


@_group("scaling")
def test_scaling_schema(quick_run):
    _, data = quick_run("scaling")
    rows = data["rows"]
    for engine in {r["engine"] for r in rows}:  # one series of N per VI engine
        ns = [r["n_rows"] for r in rows if r["engine"] == engine]
        assert ns == sorted(ns) and len(ns) >= 2
    for r in rows:
        assert r["status"] == "ok", r
        for key in (
            "ms_per_it",
            "ms_per_it_clock",
            "compile_s",
            "peak_rss_mb",
            "data_mb",
            "t_ratio_vs_smallest",
            "peak_rss_growth_mb",
        ):
            assert key in r, key
        assert r["ms_per_it_clock"] > 0 and r["peak_rss_mb"] > 0
        assert r["batch_size"] == 50 and r["n_features"] == 20


CALIBRATION_CLS_MODELS = (
    "BNN default (32,)",
    "BNN default (5, 5)",
    "MLP (32,)",
    "MLP (5, 5)",
    "5-MLP ensemble (32,)",
    "LogisticRegression",
)
CALIBRATION_REG_MODELS = ("BNN default (16,)", "MLP (16,)", "RidgeCV", "GPR")


@_group("calibration")
def test_calibration_schema(quick_run, out_dir):
    _, data = quick_run("calibration")
    config = data["config"]
    # the BNNs measured are the package defaults (plus only the --quick overrides)
    defaults = config["package_defaults"]["BayesianMLPClassifier"]
    quick = config["quick_bnn_overrides"]
    for name, params in config["classification_estimators"].items():
        if name.startswith("BNN default"):
            assert {
                k: v
                for k, v in params.items()
                if k not in ("hidden_layer_sizes", "random_state", *quick)
            } == {
                k: v
                for k, v in defaults.items()
                if k not in ("hidden_layer_sizes", "random_state", *quick)
            }
    rows = [r for r in data["rows"] if r["section"] == "classification"]
    assert config["classification_datasets"]
    for ds in config["classification_datasets"]:
        by_model = {r["model"]: r for r in rows if r["dataset"] == ds}
        for model in CALIBRATION_CLS_MODELS:
            r = by_model[model]
            assert r["status"] == "ok", r
            for key in ("accuracy", "nll", "brier", "ece", "ece_floor", "confidence", "fit_s"):
                assert math.isfinite(r[key]), (ds, model, key)
            assert 0 <= r["accuracy"] <= 1 and 0 <= r["ece"] <= 1 and r["nll"] >= 0
            assert 0 < r["ece_floor"] < 1
        gpc = by_model["GPC"]
        assert gpc["status"] == "ok" or (gpc["status"] == "skipped" and gpc["reason"])
    reg = [r for r in data["rows"] if r["section"] == "regression"]
    for ds in config["regression_datasets"]:
        by_model = {r["model"]: r for r in reg if r["dataset"] == ds}
        for model in CALIBRATION_REG_MODELS:
            r = by_model[model]
            assert r["status"] == "ok", r
            for key in ("rmse", "nll", "coverage90", "crps", "fit_s"):
                assert math.isfinite(r[key]), (ds, model, key)
    hier = {r["model"]: r for r in data["rows"] if r["section"] == "hierarchical"}
    assert len(hier) == 2 and all(r["status"] == "ok" for r in hier.values())
    # the wins table has one entry per default architecture and a summary line each
    assert {(w["variant"], w["hidden"]) for w in data["wins"]} == {
        ("default", "(32,)"),
        ("default", "(5, 5)"),
    }
    assert any(line.startswith("default (32,): meets the criteria on") for line in data["summary"])
    # seed by seed: counts and medians recomputed from the rows' per-seed results
    assert {p["model"] for p in data["paired"]} == {"BNN default (32,)", "BNN default (5, 5)"}
    for p in data["paired"]:
        assert set(p["datasets"]) == set(config["classification_datasets"])
        for ds, v in p["datasets"].items():
            seeds = {
                r["model"]: {s["seed"]: s for s in r["per_seed"]}
                for r in rows
                if r["dataset"] == ds
            }
            bnn, mlp = seeds[p["model"]], seeds[f"MLP {p['hidden']}"]
            assert v["n_seeds"] == len(bnn) == len(mlp) == len(config["seeds"])
            assert v["nll_wins"] == sum(bnn[s]["nll"] <= mlp[s]["nll"] for s in bnn)
            assert v["ece_wins"] == sum(bnn[s]["ece"] <= mlp[s]["ece"] for s in bnn)
            excess = {
                s: (bnn[s]["ece"] - bnn[s]["ece_floor"]) - (mlp[s]["ece"] - mlp[s]["ece_floor"])
                for s in bnn
            }
            assert v["excess_wins"] == sum(d <= 0 for d in excess.values())
            assert v["median_excess_diff"] == pytest.approx(np.median(list(excess.values())))
            ens = seeds["5-MLP ensemble (32,)"]
            assert v["n_ensemble_seeds"] == len(bnn)
            assert v["ensemble_nll_wins"] == sum(bnn[s]["nll"] <= ens[s]["nll"] for s in bnn)
            ratios = sorted(bnn[s]["nll"] / mlp[s]["nll"] for s in bnn)
            assert v["median_nll_ratio"] == pytest.approx(
                (ratios[(len(ratios) - 1) // 2] + ratios[len(ratios) // 2]) / 2
            )
        assert p["n_ensemble_nll_majority"] == sum(
            2 * v["ensemble_nll_wins"] > v["n_seeds"] for v in p["datasets"].values()
        )
    assert "Seed by seed" in (out_dir / "calibration.md").read_text()
    # markdown next to the JSON, reliability figure in --quick next to it as well
    assert (out_dir / "calibration.md").read_text().startswith("# Calibration")
    assert (out_dir / "calibration_reliability.png").stat().st_size > 0


def test_calibration_replaces_the_readme_figure_only_from_a_default_full_run(monkeypatch, tmp_path):
    """A run with --out elsewhere (or --quick) draws its reliability diagram next to its
    JSON, not over docs/figures' committed one."""
    import importlib

    monkeypatch.syspath_prepend(str(BENCH))
    calibration = importlib.import_module("calibration")
    default_out = BENCH / "results" / "calibration.json"
    elsewhere = tmp_path / "ten.json"
    assert (
        calibration.figure_path(None, default_out, quick=False)
        == ROOT / "docs" / "figures" / "calibration_reliability.png"
    )
    assert calibration.figure_path(None, elsewhere, quick=False) == tmp_path / "ten_reliability.png"
    assert (
        calibration.figure_path(None, default_out, quick=True)
        == BENCH / "results" / "calibration_reliability.png"
    )
    assert calibration.figure_path("none", default_out, quick=False) is None
    assert calibration.figure_path("x.png", elsewhere, quick=False) == Path("x.png")


@_group("repeated_fits")
def test_repeated_fits_schema(quick_run):
    _, data = quick_run("repeated_fits")
    config, rows = data["config"], data["rows"]
    assert config["compile_cache"] == "user"  # QUICK_EXTRA
    by_workload = {}
    for r in rows:
        assert r["status"] == "ok" or (r["status"] == "skipped" and r["reason"]), r
        by_workload.setdefault(r["workload"].split()[0], []).append(r)
    assert set(by_workload) == {
        "cross_val",
        "GridSearchCV",
        "ensemble",
        "cold",
        "regressor",
        "memory",
    }
    assert {(r["engine"], r["variant"]) for r in by_workload["cross_val"]} == {
        ("pymc_bnn", "T=1.0"),
        ("pymc_bnn", "T=auto"),
        ("sklearn", None),
        ("numpyro", "SVI.run"),
    }
    assert {r["engine"] for r in by_workload["GridSearchCV"]} == {"pymc_bnn", "sklearn"}
    assert {r["engine"] for r in by_workload["ensemble"]} == {"pymc_bnn", "sklearn", "numpyro"}
    assert {r["engine"] for r in by_workload["regressor"]} == {"pymc_bnn", "sklearn"}
    for r in rows:
        if r["status"] != "ok":
            continue
        for key in ("n_fits", "total_s", "per_fit_s", "runs", "convergence_warnings"):
            assert key in r, (r["workload"], key)
        assert r["total_s"] > 0 and r["n_fits"] >= 1
        single = r["workload"].startswith(("cold", "memory"))
        assert len(r["runs"]) == (1 if single else config["repeats"])
        if r["accuracy"] is not None:  # mean R^2 for the regressor (diabetes: ~0.45)
            assert (0.2 if r["workload"].startswith("regressor") else 0.5) < r["accuracy"] <= 1, r
        if r["engine"] == "pymc_bnn" and not single:
            assert "ratio_vs_sklearn" in r
    for r in by_workload["cross_val"] + by_workload["ensemble"] + by_workload["regressor"]:
        if r["status"] == "ok":
            assert all(len(run["fit_times"]) == r["n_fits"] for run in r["runs"])
            assert r["first_fit_s"] > 0 and r["later_fit_s"] > 0
    assert all(r["n_fits"] == config["members"] for r in by_workload["ensemble"])
    cold = by_workload["cold"]
    assert [r["workload"] for r in cold] == ["cold start (1st process)", "cold start (2nd process)"]
    for r in cold:
        assert {"import_s", "fit_s", "accuracy"} <= set(r["runs"][0])
    (mem,) = by_workload["memory"]
    assert mem["n_fits"] == config["memory_fits"]
    run = mem["runs"][0]
    assert [n for n, _ in run["rss_trace_mb"]][-1] == config["memory_fits"]
    assert math.isfinite(mem["rss_growth_mb"]) and run["rss_before_mb"] > 0


TABULAR_CLI_ANCHORS = {
    "classification": {"LogisticRegression", "MLP (5, 5)", "MLP (32,)", "5-MLP ensemble (32,)"},
    "multiclass": {"LogisticRegression", "MLP (5, 5)", "MLP (32,)", "5-MLP ensemble (32,)"},
    "regression": {"RidgeCV", "MLP (32,)"},
}


@_group("tabular_cli")
def test_tabular_cli_schema(quick_run):
    proc, data = quick_run("tabular_cli")
    config, rows = data["config"], data["rows"]
    assert config["seeds"] == [0] and config["n_rows"] == 300
    assert config["tasks"] == ["classification", "regression"]  # --quick
    assert config["compile_cache"] == "user"  # QUICK_EXTRA
    assert config["compile_cache_dir"] == os.environ.get("PYMC_BNN_COMPILE_CACHE")
    # ours ran with the command line's own defaults
    assert config["cli_estimator_params"]["hidden_layer_sizes"] == [5, 5]
    scores = [r for r in rows if r["section"] == "scores"]
    for task in config["tasks"]:
        by_method = {r["method"]: r for r in scores if r["task"] == task}
        assert set(by_method) == {"pymc-bnn (defaults)"} | TABULAR_CLI_ANCHORS[task]
        keys = (
            ("rmse", "nll", "crps", "coverage")
            if task == "regression"
            else ("accuracy", "nll", "brier", "ece")
        )
        for method, r in by_method.items():
            assert r["status"] == "ok", r
            for key in (*keys, "fit_s"):
                assert math.isfinite(r[key]), (task, method, key)
            assert len(r["runs"]) == len(r["fit_s_per_seed"]) == len(config["seeds"])
            if task == "regression":
                assert 0 <= r["coverage"] <= 1 and r["rmse"] > 0
            else:
                assert 0 <= r["accuracy"] <= 1 and 0 <= r["ece"] <= 1 and r["nll"] >= 0
        ours = by_method["pymc-bnn (defaults)"]
        assert 0 < ours["model_fit_s"] < ours["fit_s"]  # the process costs more than the fit
        assert ours["predict_vs_evaluate_max_abs_diff"] < 1e-9
        if task != "regression":
            assert ours["accuracy"] > 0.4  # far above chance is not asserted on 300 rows
        # every command ran once per seed and was timed
        cmds = {r["command"]: r for r in rows if r["section"] == "commands" and r["task"] == task}
        assert set(cmds) == {"example", "fit", "info", "evaluate", "predict", "report"}
        for r in cmds.values():
            assert r["status"] == "ok", r
            assert r["wall_s"] > 0 and len(r["wall_s_per_seed"]) == len(config["seeds"])
    assert data["checks"]["example_matches_make_customers"] is True
    assert data["checks"]["predict_vs_evaluate_max_abs_diff"] < 1e-9
    # one table per task and one of the commands, all printed
    assert set(data["tables"]) == {*config["tasks"], "commands"}
    for table in data["tables"].values():
        assert _header_line(table) in proc.stdout
        assert table in data["table"]


DASK_PREDICT_PATHS = {"numpy", "dask threads", "dask 1 worker", "dask 2 workers"}


@_group("dask_scaling")
def test_dask_scaling_schema(quick_run):
    pytest.importorskip("distributed")
    proc, data = quick_run("dask_scaling")
    config, rows = data["config"], data["rows"]
    assert config["sizes"] == [40_000] and config["repeats"] == 1
    assert config["compile_cache"] == "user"  # QUICK_EXTRA
    assert config["client_compile_cache"] == os.environ.get("PYMC_BNN_COMPILE_CACHE", "user")
    assert config["parts"] == ["fit", "predict", "cv"]
    # (a) out-of-core fit: streamed from zarr vs in memory, each in a fresh process
    assert config["fit_sizes"] == [200_000]
    fits = {r["method"]: r for r in rows if r["section"] == "fit"}
    assert set(fits) == {"streamed", "in-memory"}
    for r in fits.values():
        assert r["status"] == "ok", r
        for key in (
            "rss_after_imports_mb",
            "rss_before_fit_mb",
            "peak_fit_mb",
            "fit_growth_mb",
            "first_fit_s",
            "fit_s",
            "advi_s_per_1000",
            "fixed_s",
            "loss_last1000",
            "test_accuracy",
        ):
            assert r.get(key) is not None, (r["method"], key)
        assert r["memory_method"] == "VmHWM reset"
        assert r["peak_fit_mb"] >= r["rss_before_fit_mb"] > r["rss_after_imports_mb"] > 0
        assert r["first_fit_s"] > 0 and r["fit_s"] > 0
        # time per step from inside the fit: one interval per 1,000-step call but the first
        assert r["chunk_clock"] is True and r["advi_s_per_1000"] > 0
        assert [len(run) for run in r["advi_s_per_1000_runs"]] == [
            config["fit_n_iter"] // 1000 - 1
        ] * config["repeats"]
        assert r["n_steps"] == config["fit_n_iter"]
        # both fits see every row: total_size = N, the posterior at T = 1, the JAX engine
        assert r["n_rows_model"] == 200_000 and r["posterior_temperature"] == 1.0
        assert r["engine"] == "jax"
        assert r["test_accuracy"] > 0.8 and r["loss_last1000"] > 0
    assert fits["streamed"]["pid"] != fits["in-memory"]["pid"]
    (target,) = [r for r in rows if r["section"] == "fit_targets"]
    assert target["status"] == "ok", target
    # the same objective in the same units: the -ELBO of both fits agree
    assert 0.95 < target["loss_ratio"] < 1.05, target
    assert abs(target["streamed_accuracy"] - target["in_memory_accuracy"]) < 0.03
    for key in ("peak_target_met", "time_target_met"):
        assert isinstance(target[key], bool)
    assert target["streamed_baseline_mb"] == fits["streamed"]["rss_before_fit_mb"]
    assert data["fit_data"]["200000"]["n_rows"] == 200_000
    # (b) every path at every size, each with its first call, warm time and memory
    # (--quick: clusters only as distributed starts them, not "(trim unset)")
    predict = [r for r in rows if r["section"] == "predict"]
    assert config["malloc_trim"] == "default"
    assert {r["path"] for r in predict} == DASK_PREDICT_PATHS
    assert data["moons_fit"]["test_accuracy"] > 0.9
    for r in predict:
        assert r["status"] == "ok", r
        for key in (
            "first_call_s",
            "warm_s",
            "rows_per_s",
            "data_only_s",
            "client_peak_mb",
            "cores_busy",
            "mean_proba_1",
            "abs_diff_vs_ref",
            "calls",
        ):
            assert r.get(key) is not None, (r["path"], key)
        assert r["warm_s"] > 0 and r["client_peak_mb"] > 0
        assert len(r["calls"]) == config["repeats"]
        assert 0 < r["mean_proba_1"] < 1
        # the same rows and the same posterior draws: the same mean up to summation order
        assert r["abs_diff_vs_ref"] < 1e-9, r
        if r["path"] == "numpy":
            assert r["materialise_s"] > 0
        if r.get("workers"):  # a LocalCluster: workers' memory, blocks, first call per worker
            assert r["worker_peak_mb"] > 0 and r["cluster_start_s"] > 0
            assert r["speedup_vs_1_worker"] > 0
            assert len(r["first_call"]["per_worker_s"]) == r["workers"]
            assert (
                sum(r["calls"][-1]["blocks_per_worker"].values()) == r["n_rows"] // r["chunk_rows"]
            )
            assert r["blocks_compute_s"] > 0
            trimmed = "None" if r["path"].endswith("(trim unset)") else "65536"
            assert r["malloc_trim_threshold"] == [trimmed], r["workers_env"]
        else:
            assert r.get("worker_peak_mb") is None
    # (c) cross-validation: serial BNN and MLP, the BNN on a 2-worker cluster
    cv = {(r["model"], r["backend"]): r for r in rows if r["section"] == "cv"}
    assert set(cv) == {
        ("pymc_bnn", "serial"),
        ("sklearn", "serial"),
        ("pymc_bnn", "dask 2 workers"),
    }
    for r in cv.values():
        assert r["status"] == "ok", r
        assert r["first_s"] > 0 and len(r["scores"]) == config["cv_folds"]
        assert len(r["runs"]) == config["repeats"]
        assert 0.8 < r["mean_score"] <= 1
    on_cluster = cv[("pymc_bnn", "dask 2 workers")]
    assert on_cluster["warm_s"] > 0 and on_cluster["worker_peak_mb"] > 0
    assert on_cluster["scores_equal_serial"] is True  # same seeds, same folds, same scores
    # one table per part, all printed
    assert set(data["tables"]) == {"fit", "fit_targets", "predict", "cv"}
    for table in data["tables"].values():
        assert _header_line(table) in proc.stdout
        assert table in data["table"]


def test_run_all_reports_every_table(tmp_path):
    """run_all's report of every script's JSON (minimal results written here: each
    script's own table is checked against its output by the tests above)."""
    out_dir = tmp_path
    machine = {
        "cpu_model": "cpu",
        "cores_usable": 2,
        "load_avg_1_5_15": [0, 0, 0],
        "python": "3.12",
        "timestamp_utc": "now",
        "versions": {k: "1" for k in ("pymc", "pytensor", "jax", "numpyro")},
    }
    tables = {}
    for name in SCRIPTS:
        tables[name] = f"| {name} column | value |\n| --- | --- |\n| a | 1 |"
        (out_dir / f"{name}.json").write_text(
            json.dumps(
                {
                    "machine": machine,
                    "config": {"quick": True},
                    "elapsed_s": 1.0,
                    "table": tables[name],
                }
            )
        )
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--report-only", "--out-dir", str(out_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    for name, table in tables.items():
        assert f"### {name} (quick" in proc.stdout
        assert _header_line(table) in proc.stdout
    assert (out_dir / "summary.md").read_text().startswith("# Benchmark results")


@_group("wide_network")
def test_wide_network_schema_and_agreement(quick_run):
    """Every section ran: the predictive of both networks agrees with the jitted JAX
    forward over the same draws, the ADVI rows carry their peer ratio, and the MNIST
    section scored each model on the held-out digits."""
    _, data = quick_run("wide_network")
    rows = data["rows"]
    pred = [r for r in rows if r["section"] == "predictive"]
    assert {r["network"] for r in pred} == {"784-100-10", "moons 2-5-5-1"}
    assert all(r["max_abs_diff"] < 1e-5 and r["pymc_bnn_rows_per_s"] > 0 for r in pred)
    assert max(r["max_abs_err_vs_float64"] for r in pred if "784" in r["network"]) < 1e-5
    advi = [r for r in rows if r["section"] == "advi"]
    assert [r["implementation"].split()[0] for r in advi] == ["pymc_bnn.fit", "numpyro"]
    assert advi[0]["ratio_to_numpyro"] > 0
    quality = [r for r in rows if r["section"] == "mnist"]
    assert len(quality) == 4
    assert all(0 <= r["accuracy"] <= 1 and r["nll"] > 0 and 0 <= r["ece"] <= 1 for r in quality)


@_group("default_frontier")
def test_default_frontier_schema(quick_run):
    """Every section ran, the default beside its anchors on the same data: three MNIST
    models scored on the held-out, rotated and noisy digits, both CV tables with the
    ensemble, the predictive beside the jitted forward, and the regressor's default
    (the ensemble above the NUTS limit) beside five MLPs on both tables."""
    _, data = quick_run("default_frontier")
    rows = data["rows"]
    mnist = [r for r in rows if r["section"] == "mnist"]
    assert [r["model"] for r in mnist] == [
        "pymc_bnn default",
        "MLPClassifier((100,))",
        "5-MLP ensemble",
    ]
    assert mnist[0]["inference"] == "laplace_ensemble"
    assert all(
        0 <= r["accuracy"] <= 1 and r["nll"] > 0 and 0 <= r["auroc_rotated"] <= 1 for r in mnist
    )
    cv = [r for r in rows if r["section"] == "cv"]
    assert {(r["data"], r["model"]) for r in cv} == {
        (d, m) for d in ("breast_cancer", "wine") for m in ("pymc_bnn default", "5-MLP ensemble")
    }
    assert all(r["log_loss"] > 0 and r["wall_s"] > 0 for r in cv)
    pred = [r for r in rows if r["section"] == "predictive"]
    assert [r["model"] for r in pred] == ["default", "default at temperature 1"]
    assert pred[1]["draws_default"] == 500 and all(r["speedup"] > 0 for r in pred)
    reg = [r for r in rows if r["section"] == "regression"]
    assert {(r["data"], r["model"]) for r in reg} == {
        (d, m)
        for d in ("wine-red", "friedman 10,000 x 8")
        for m in ("pymc_bnn default", "5-MLP ensemble")
    }
    assert all(
        r["inference"] == "laplace_ensemble" for r in reg if r["model"] == "pymc_bnn default"
    )
    assert all(np.isfinite(r["ll"]) and r["rmse"] > 0 for r in reg)


@_group("fit_scaling")
def test_fit_scaling_schema(quick_run, out_dir):
    """Each model has a row per size; the default's stages are timed and add up to no
    more than its fit; the minibatch size follows batch_size="auto"; the figure and
    the Markdown table are written."""
    _, data = quick_run("fit_scaling")
    rows = data["rows"]
    models = [r["model"] for r in rows]
    assert models == ["pymc_bnn default", "sklearn MLPClassifier((5, 5))", "numpyro SVI (one fit)"]
    bnn = rows[0]
    stages = bnn["evidence_s"] + bnn["fits_s"] + bnn["draws_s"]
    assert 0 < stages <= bnn["fit_s"]
    assert bnn["batch"] == 1024 and rows[2]["batch"] == 1024  # 1,500 rows: minibatches
    assert all(r["nll"] > 0 and 0 <= r["accuracy"] <= 1 for r in rows)
    assert (out_dir / "fit_scaling.png").stat().st_size > 0
    assert (out_dir / "fit_scaling.md").read_text().startswith("| rows |")


@pytest.mark.skipif(not UCI_DATA.is_dir(), reason=f"no UCI data at {UCI_DATA}")
@_group("uci_regression")
def test_uci_regression_schema(quick_run, out_dir):
    """Every model on every split run; summaries over the splits, the published rows
    beside ours, the criteria per data set; the Markdown table written."""
    _, data = quick_run("uci_regression")
    rows = data["rows"]
    assert {r["dataset"] for r in rows} == {"bostonHousing", "yacht"}
    assert {r["split"] for r in rows} == {0, 1}
    models = {
        "pymc_bnn default",
        "RidgeCV (Normal, residual sd)",
        "MLPRegressor (50,) L-BFGS (Normal, out-of-fold sd)",
        "5 MLPs (50,) L-BFGS (mixture, held-out sd each)",
        "MLPRegressor (50,) (Normal, out-of-fold sd)",  # Adam
        "5 MLPs (50,) (mixture, held-out sd each)",
    }
    assert {r["model"] for r in rows} == models
    assert all(r["status"] == "ok" for r in rows), [r["status"] for r in rows]
    for r in rows:
        assert 0 <= r["coverage90"] <= 1 and r["rmse"] > 0 and r["crps"] > 0
        assert r["n_train"] + r["n_test"] in (506, 308)
    assert {(s["dataset"], s["n_splits"]) for s in data["summary"]} == {
        ("bostonHousing", 2),
        ("yacht", 2),
    }
    assert [c["dataset"] for c in data["criteria"]] == ["bostonHousing", "yacht"]
    assert "*MC dropout (published)*" in data["table"]
    assert (out_dir / "uci_regression.md").read_text().startswith("| data set |")


def test_uci_rows_from_summarises_stored_runs_without_fitting(tmp_path):
    """--rows-from: rows of several runs merged (a later file's row of the same data
    set, split and model replaces an earlier one), summarised, criteria for the BNN."""
    sys.path.insert(0, str(BENCH))
    import uci_regression

    def row(model, split, ll):
        return {
            "dataset": "yacht",
            "split": split,
            "model": model,
            "status": "ok",
            "ll": ll,
            "rmse": 1.0,
            "crps": None,
            "coverage90": 0.9,
            "fit_s": 1.0,
        }

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(
        json.dumps(
            {
                "rows": [
                    row("pymc_bnn default", 0, 0.1),
                    row("pymc_bnn default", 1, 0.3),
                    row("anchor", 0, -9.0),
                ]
            }
        )
    )
    second.write_text(json.dumps({"rows": [row("anchor", 0, -1.0), row("anchor", 1, -2.0)]}))
    out = tmp_path / "merged.json"
    assert uci_regression.main(["--rows-from", str(first), str(second), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    means = {s["model"]: (s["n_splits"], s["ll"]) for s in data["summary"]}
    assert means["anchor"] == (2, pytest.approx(-1.5))  # split 0 from the later file
    assert means["pymc_bnn default"] == (2, pytest.approx(0.2))
    assert [c["model"] for c in data["criteria"]] == ["pymc_bnn default"]
    assert out.with_suffix(".md").read_text().startswith("| data set |")


def test_uci_scores_of_a_one_member_mixture_equal_the_normal_scores():
    """The ensemble's mixture scores (log-sum-exp LL, bisected quantiles, sampled CRPS)
    reduce to the closed-form Normal scores for a single member."""
    sys.path.insert(0, str(BENCH))
    import uci_regression as U

    rng = np.random.default_rng(0)
    y, mean = rng.normal(size=40), rng.normal(size=40)
    sd = rng.uniform(0.5, 2.0, size=40)
    closed = U.normal_scores(y, mean, sd, 0.0)
    mixed = U.mixture_scores(y, mean[None], sd[None], 0.0)
    for key in ("ll", "rmse", "coverage90"):
        assert mixed[key] == pytest.approx(closed[key], rel=1e-9), key
    assert mixed["crps"] == pytest.approx(closed["crps"], rel=0.03)  # 1,000 draws


def test_smoke_and_report_runs_never_write_over_the_committed_results(monkeypatch, capsys):
    """--quick writes to a temporary folder unless --out is given; run_all --report-only
    of the committed results only prints (their summary.md is a record; the folder holds
    no JSON files to report, so writing it would blank the README's speed table)."""
    monkeypatch.syspath_prepend(str(BENCH))
    import _common
    import run_all

    parser = _common.base_parser("x", "calibration")
    assert parser.parse_args([]).out == _common.RESULTS_DIR / "calibration.json"
    quick = parser.parse_args(["--quick"]).out
    assert quick.parent == _common.QUICK_DIR and _common.RESULTS_DIR not in quick.parents
    assert parser.parse_args(["--quick", "--out", "x.json"]).out == Path("x.json")
    summary = _common.RESULTS_DIR / "summary.md"
    before = summary.read_bytes()
    assert run_all.main(["--report-only"]) == 0
    assert summary.read_bytes() == before
    assert "# Benchmark results" in capsys.readouterr().out
