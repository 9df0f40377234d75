"""End to end: the ``pymc-bnn`` command line on generated CSV / Parquet tables.

The commands run through ``cli.main``, what the console script calls, in this process
(``run``): a subprocess per command cost ~3-4 s of interpreter and imports, about 20
times. The console script itself is run here on the usage, ``--debug`` and two
bad-input cases (``run_script``), and on every command of both tasks by the smoke run of
``benchmarks/tabular_cli.py`` (tests/integration/test_benchmarks.py). The fits are small (a few
thousand ADVI steps, ``--temperature 1``) and shared by the tests of this module (one
xdist group, so each is fit once per session).
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest

from pymc_bnn.datasets import make_customers

pytestmark = [pytest.mark.xdist_group("cli_tabular"), pytest.mark.integration]

SMALL = [
    "--hidden",
    "5",
    "--n-iter",
    "3000",
    "--draws",
    "200",
    "--temperature",
    "1",
    "--drop",
    "customer_id",
]


def _script() -> str:
    script = Path(sys.executable).with_name("pymc-bnn")
    found = str(script) if script.exists() else shutil.which("pymc-bnn")
    if found is None:  # pragma: no cover - the package is installed in every set-up
        pytest.fail("the pymc-bnn console script is not installed (pip install -e .)")
    return found


def run_script(*args, cwd, expect=0):
    """The console script in a subprocess: its completed process."""
    proc = subprocess.run(
        [_script(), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "100"},
        timeout=900,
    )
    assert proc.returncode == expect, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def run(*args, cwd, expect=0):
    """``cli.main(args)`` in this process, in ``cwd``, with what a fresh process has:
    warnings shown rather than the test run's errors (the command line prints them as
    notes), and ``COLUMNS=100``. A completed process of its status and output."""
    from pymc_bnn.cli import _main as cli

    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(cwd),
        mock.patch.dict(os.environ, {"COLUMNS": "100"}),
        warnings.catch_warnings(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        warnings.simplefilter("default")
        status = cli.main([str(a) for a in args])
    proc = subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())
    assert status == expect, (status, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Training and new tables, as CSV and Parquet, with missing values."""
    d = tmp_path_factory.mktemp("cli")
    make_customers(300, task="classification", random_state=1).to_csv(d / "churn.csv", index=False)
    new = make_customers(120, task="classification", random_state=2)
    new.loc[new.index[:4], "region"] = "atlantis"  # unseen category
    new.loc[new.index[5], "income"] = 50 * new["income"].max()  # far outside training
    new.to_csv(d / "churn_new.csv", index=False)
    make_customers(300, task="multiclass", random_state=1).to_parquet(d / "plans.parquet")
    make_customers(120, task="multiclass", random_state=2).to_parquet(d / "plans_new.parquet")
    make_customers(300, task="regression", random_state=1).to_csv(d / "spend.csv", index=False)
    make_customers(120, task="regression", random_state=2).to_csv(d / "spend_new.csv", index=False)
    return d


@pytest.fixture(scope="module")
def churn_model(work):
    proc = run("fit", "churn.csv", "--target", "churned", "-o", "churn.nc", *SMALL, cwd=work)
    return work / "churn.nc", proc


@pytest.fixture(scope="module")
def plans_model(work):
    # the 3-class model also exercises the evidence-chosen prior scales
    proc = run(
        "fit",
        "plans.parquet",
        "-t",
        "plan_next_year",
        "-o",
        "plans.nc",
        *SMALL,
        "--prior-sigma",
        "evidence",
        "--verbose",
        cwd=work,
    )
    return work / "plans.nc", proc


@pytest.fixture(scope="module")
def spend_model(work):
    proc = run("fit", "spend.csv", "-t", "monthly_spend", "-o", "spend.nc", *SMALL, cwd=work)
    return work / "spend.nc", proc


# ------------------------------------------------------------------ happy paths
def test_fit_binary_prints_summary_and_notes(churn_model):
    path, proc = churn_model
    assert path.is_file()
    assert "task: classification" in proc.stderr  # --task auto says what it chose
    assert "filled" in proc.stderr and "missing values" in proc.stderr
    out = proc.stdout
    assert "fit 300 rows x 13 features (from 7 columns), 2 classes (no, yes)" in out
    accuracy = float(out.split("training accuracy: ")[1].split()[0])
    assert 0.6 < accuracy <= 1.0
    # without --verbose, the choices in brief: the prior scales as figures
    (said,) = [line for line in out.splitlines() if line.startswith("weights: ")]
    assert said.startswith("weights: prior sd per layer, from the evidence: ")
    assert all(len(line) <= 100 for line in out.splitlines()), out


def test_predict_binary_csv_matches_the_python_pipeline(churn_model, work):
    from pymc_bnn import tabular

    run("predict", "churn.nc", "churn_new.csv", "--id", "customer_id", "-o", "pred.csv", cwd=work)
    pred = pd.read_csv(work / "pred.csv")
    assert list(pred.columns) == [
        "customer_id",
        "prediction",
        "proba_no",
        "proba_yes",
        "entropy",
        "mutual_info",
        "unseen_categories",
        "outside_training_range",
    ]
    new = pd.read_csv(work / "churn_new.csv")
    assert pred["customer_id"].tolist() == new["customer_id"].tolist()
    pipe = tabular.load_pipeline(churn_model[0])
    proba = pipe.predict_proba(new)
    np.testing.assert_allclose(pred[["proba_no", "proba_yes"]].to_numpy(), proba, rtol=1e-12)
    assert pred["prediction"].tolist() == pipe.predict(new).tolist()
    assert (pred["entropy"] >= pred["mutual_info"]).all() and (pred["mutual_info"] >= 0).all()


def test_predict_notes_unseen_categories_and_keeps_all_columns(churn_model, work):
    proc = run("predict", "churn.nc", "churn_new.csv", "-o", "all.csv", cwd=work)
    assert "'region' has categories not seen in training ('atlantis')" in proc.stderr
    assert "1 row outside the training range" in proc.stderr
    assert all(len(line) <= 100 for line in proc.stderr.splitlines()), proc.stderr
    out = pd.read_csv(work / "all.csv", keep_default_na=False)
    new = pd.read_csv(work / "churn_new.csv")
    assert list(out.columns[: new.shape[1]]) == list(new.columns)
    assert np.isfinite(out[["proba_no", "proba_yes"]].to_numpy()).all()
    # each such row is flagged, and no other
    assert out["unseen_categories"].tolist() == ["region"] * 4 + [""] * (len(new) - 4)
    assert out["outside_training_range"].tolist() == [""] * 5 + ["income"] + [""] * (len(new) - 6)


def test_evaluate_json_and_table(churn_model, work):
    scores = json.loads(run("evaluate", "churn.nc", "churn_new.csv", "--json", cwd=work).stdout)
    assert list(scores) == ["n", "accuracy", "nll", "brier", "multiclass_brier", "ece", "aurc"]
    assert scores["n"] == 120 and 0.55 < scores["accuracy"] <= 1
    table = run("evaluate", "churn.nc", "churn_new.csv", cwd=work).stdout
    assert "accuracy" in table and f"{scores['nll']:.4g}" in table


def test_report_writes_pngs_and_a_self_contained_page(churn_model, work):
    run("report", "churn.nc", "churn_new.csv", "-o", "report", cwd=work)
    report = work / "report"
    for name in ("reliability.png", "risk_coverage.png", "uncertainty.png"):
        assert (report / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (report / "index.html").read_text()
    assert page.count("data:image/png;base64,") >= 3 and "http" not in page.split("<body")[1]
    assert "churned" in page


def test_info_names_columns_settings_and_versions(churn_model, work):
    out = run("info", "churn.nc", cwd=work).stdout
    for text in (
        "BayesianMLPClassifier",
        "target: churned",
        "categorical region: east, north",
        "numeric income",
        "hidden_layer_sizes=[5]",
        "n_init=1",
        "pymc ",
    ):
        assert text in out
    meta = json.loads(run("info", "churn.nc", "--json", cwd=work).stdout)
    assert meta["extra"]["info"]["columns"][0] == "age"


def test_three_classes_from_parquet_to_parquet(plans_model, work):
    # --prior-sigma evidence: two scales (one hidden layer + output), said in words by
    # fit --verbose, and kept as numbers for info
    out = plans_model[1].stdout
    (said,) = [line for line in out.splitlines() if line.startswith("weights: ")]
    assert "(input layer)" in said and "(output)" in said
    assert "uncertainty: the fitted posterior's spread as it is (temperature 1, as set)" in out
    info = run("info", "plans.nc", cwd=work).stdout
    (numbers,) = [line for line in info.splitlines() if "prior sd per layer (evidence): " in line]
    assert len(numbers.split(": ")[1].split(", ")) == 2 and "prior_sigma=evidence" in info
    run("predict", "plans.nc", "plans_new.parquet", "-o", "plans_pred.parquet", cwd=work)
    pred = pd.read_parquet(work / "plans_pred.parquet")
    proba = pred[["proba_basic", "proba_premium", "proba_standard"]].to_numpy()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    assert set(pred["prediction"]) <= {"basic", "premium", "standard"}
    scores = json.loads(run("evaluate", "plans.nc", "plans_new.parquet", "--json", cwd=work).stdout)
    assert scores["accuracy"] > 1 / 3  # above chance


def test_regression_intervals_and_scores(spend_model, work):
    path, proc = spend_model
    assert "task: regression" in proc.stderr and "training rmse" in proc.stdout
    run(
        "predict",
        "spend.nc",
        "spend_new.csv",
        "--interval",
        "0.8",
        "--id",
        "customer_id",
        "-o",
        "spend_pred.csv",
        cwd=work,
    )
    pred = pd.read_csv(work / "spend_pred.csv")
    assert list(pred.columns) == [
        "customer_id",
        "mean",
        "std",
        "lower_80",
        "upper_80",
        "unseen_categories",
        "outside_training_range",
    ]
    assert (pred["lower_80"] < pred["mean"]).all() and (pred["mean"] < pred["upper_80"]).all()
    scores = json.loads(
        run("evaluate", "spend.nc", "spend_new.csv", "--interval", "0.8", "--json", cwd=work).stdout
    )
    assert 0.6 < scores["coverage"] < 0.95  # nominal 0.8, 120 rows
    # nll: the model's own predictive density (not a Normal of its mean and sd)
    from pymc_bnn import tabular

    new = pd.read_csv(work / "spend_new.csv")
    density = tabular.load_pipeline(path).log_predictive_density(new, new["monthly_spend"])
    assert scores["nll"] == pytest.approx(-np.mean(density), rel=1e-9)
    run("report", "spend.nc", "spend_new.csv", "-o", "spend_report", cwd=work)
    assert (work / "spend_report" / "predicted_vs_actual.png").is_file()


def test_example_writes_a_reproducible_table(tmp_path):
    run("example", "a.csv", "--rows", "50", cwd=tmp_path)
    run("example", "b.parquet", "--rows", "50", cwd=tmp_path)
    run("example", "c.tsv.gz", "--rows", "50", cwd=tmp_path)
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_parquet(tmp_path / "b.parquet")
    c = pd.read_csv(tmp_path / "c.tsv.gz", sep="\t")
    assert a.shape == b.shape == c.shape == (50, 9)
    np.testing.assert_array_equal(a["income"].to_numpy(), b["income"].to_numpy())
    np.testing.assert_array_equal(a["income"].to_numpy(), c["income"].to_numpy())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.parquet", "c.tsv.gz"]


def test_keep_an_identifier_and_the_leak_is_noted(work):
    """--keep uses a column that looks like an identifier; the leakage check then
    names it, as here where the table is sorted by the target."""
    table = make_customers(200, task="regression", random_state=5).drop(columns=["customer_id"])
    table = table.sort_values("income").reset_index(drop=True)
    table["rownames"] = np.arange(len(table)) * 2 + 1
    table.to_csv(work / "sorted.csv", index=False)
    proc = run(
        "fit",
        "sorted.csv",
        "-t",
        "income",
        "-o",
        "sorted.nc",
        *SMALL[:-2],
        "--keep",
        "rownames",
        cwd=work,
    )
    assert "note: a single column predicts the target almost perfectly: 'rownames'" in proc.stderr
    assert "--drop it" in proc.stderr


def test_semicolon_table_is_read_by_its_separator(churn_model, work):
    """A semicolon-separated .csv (a spreadsheet's export in many locales) is sniffed,
    with a note, and predicted as the comma-separated one; --sep says so, no note."""
    pd.read_csv(work / "churn_new.csv").to_csv(work / "semi_new.csv", sep=";", index=False)
    proc = run(
        "predict",
        "churn.nc",
        "semi_new.csv",
        "--id",
        "customer_id",
        "-o",
        "semi_pred.csv",
        cwd=work,
    )
    assert "semi_new.csv is semicolon-separated" in proc.stderr
    run(
        "predict",
        "churn.nc",
        "churn_new.csv",
        "--id",
        "customer_id",
        "-o",
        "comma_pred.csv",
        cwd=work,
    )
    pd.testing.assert_frame_equal(
        pd.read_csv(work / "semi_pred.csv"), pd.read_csv(work / "comma_pred.csv")
    )
    proc = run("evaluate", "churn.nc", "semi_new.csv", "--sep", ";", cwd=work)
    assert "semicolon" not in proc.stderr and "accuracy" in proc.stdout


def test_decimal_comma_table_is_read_as_numbers(churn_model, work):
    """A decimal-comma export (``;`` between fields, ``16,5`` in cells) is read as
    numbers, with one short note, and predicted as the comma-separated file is."""
    new = pd.read_csv(work / "churn_new.csv")
    assert new.select_dtypes("float").shape[1] > 0
    new.to_csv(work / "dec_new.csv", sep=";", decimal=",", index=False)
    proc = run(
        "predict", "churn.nc", "dec_new.csv", "--id", "customer_id", "-o", "dec_pred.csv", cwd=work
    )
    notes = [line for line in proc.stderr.splitlines() if "decimal comma" in line]
    assert len(notes) == 1 and len(notes[0]) <= 110, notes
    run(
        "predict",
        "churn.nc",
        "churn_new.csv",
        "--id",
        "customer_id",
        "-o",
        "comma_pred2.csv",
        cwd=work,
    )
    pd.testing.assert_frame_equal(
        pd.read_csv(work / "dec_pred.csv"), pd.read_csv(work / "comma_pred2.csv")
    )


def test_an_imbalanced_table_gets_a_note_and_a_cost_threshold(spend_model, work):
    """A 5 % positive class (the road-accident table's shape): predict says when every
    row is predicted negative at 0.5; --cost-fn-fp predicts the positive class where its
    probability is at least 1 / (1 + r), evaluate scores that threshold and report draws
    it; a model of a number is refused the option."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 3))
    positive = rng.random(500) < 1 / (1 + np.exp(3.4 - 0.9 * X[:, 0]))
    frame = pd.DataFrame(X, columns=["speed", "rain", "hour"])
    frame["crash"] = np.where(positive, "yes", "no")
    frame.to_csv(work / "roads.csv", index=False)
    run("fit", "roads.csv", "-t", "crash", "-o", "roads.nc", *SMALL[:-2], cwd=work)
    proc = run("predict", "roads.nc", "roads.csv", "-o", "roads_pred.csv", cwd=work)
    if (pd.read_csv(work / "roads_pred.csv")["prediction"] == "no").all():
        assert "every row predicted 'no' at 0.5" in proc.stderr
    proc = run(
        "predict", "roads.nc", "roads.csv", "-o", "roads_cost.csv", "--cost-fn-fp", "19", cwd=work
    )
    assert "where its probability is at least 0.05" in proc.stderr
    pred = pd.read_csv(work / "roads_cost.csv")
    np.testing.assert_array_equal(pred["prediction"] == "yes", pred["proba_yes"] >= 0.05)
    assert (pred["prediction"] == "yes").any()
    scores = json.loads(
        run("evaluate", "roads.nc", "roads.csv", "--cost-fn-fp", "19", "--json", cwd=work).stdout
    )
    assert scores["cost_threshold"] == 0.05
    assert scores["expected_cost_at_threshold"] <= scores["expected_cost_at_0.5"]
    run("report", "roads.nc", "roads.csv", "-o", "roads_report", "--cost-fn-fp", "19", cwd=work)
    assert (work / "roads_report" / "threshold.png").is_file()
    proc = run(
        "predict",
        "spend.nc",
        "spend_new.csv",
        "-o",
        "x.csv",
        "--cost-fn-fp",
        "3",
        cwd=work,
        expect=2,
    )
    assert "--cost-fn-fp applies to a model of two classes" in proc.stderr


def test_a_regression_above_the_nuts_limit_fits_the_ensemble_and_info_says_so(work):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(1100, 6)), columns=list("abcdef"))
    frame["y"] = 5 * np.exp(0.3 * frame["a"]) + frame["b"] + rng.normal(0, 1, 1100)
    frame.to_csv(work / "mid.csv", index=False)  # 1,100 x 529 weights: above 500,000
    out = run(
        "fit",
        "mid.csv",
        "-t",
        "y",
        "-o",
        "mid.nc",
        "--hidden",
        "60",
        "--noise",
        "constant",
        cwd=work,
    ).stdout
    assert "inference laplace_ensemble" in out and "noise sd" in out
    info = run("info", "mid.nc", cwd=work).stdout
    assert "ensemble: 5 networks at their MAP weights, trained" in info
    low, high = info.split("noise sd ")[1].split()[0].split("-")
    assert 0.7 < float(low) <= float(high) < 1.4  # the noise sd is 1


def test_a_skewed_target_gets_intervals_that_follow_it(work):
    """A wage-like table (noise a fraction of the value): the default compares noise
    models on held-out rows, keeps a non-constant one, says so, and its 90% intervals
    cover every fifth of the predicted wages."""
    from pymc_bnn.datasets import make_wages

    make_wages(700, random_state=3).to_csv(work / "wages.csv", index=False)
    make_wages(500, random_state=4).to_csv(work / "wages_new.csv", index=False)
    fit = run("fit", "wages.csv", "-t", "wage", "-o", "wages.nc", *SMALL[:-2], cwd=work)
    assert (
        "fit: comparing noise models (constant, log, varying) on 140 held-out rows" in fit.stderr
        and "3 of 3 fits done" in fit.stderr
    )
    line = next(x for x in fit.stdout.splitlines() if x.startswith("noise: "))
    assert "held-out log-likelihood +" in line and len(line) <= 100, line
    info = json.loads(run("info", "wages.nc", "--json", cwd=work).stdout)["extra"]["info"]
    assert info["noise"]["chosen"] in ("log", "varying")
    assert info["noise"]["n_held_out"] == 140
    text = run("info", "wages.nc", cwd=work).stdout
    assert "noise models on held-out rows (quick fits): constant " in text
    assert "varying" in text and "; kept " in text
    out = run("evaluate", "wages.nc", "wages_new.csv", cwd=work).stdout
    fifths = [float(x.split()[-1]) for x in out.splitlines() if "coverage, predicted " in x]
    assert len(fifths) == 5 and min(fifths) >= 0.8, out  # nominal 0.9, 100 rows each


def test_ctrl_c_stops_a_nuts_fit_at_once_and_writes_nothing(work, tmp_path):
    """Ctrl-C during an explicit NUTS run, sent as its stage starts, while XLA compiles
    the sampler (an empty compile cache, as on a new machine; the fit's thread is in
    compiled code then): the command stops at once, status 130, no model file."""
    import signal
    import threading
    import time

    lines, started = [], threading.Event()
    env = {**os.environ, "PYMC_BNN_COMPILE_CACHE": str(tmp_path / "cache")}
    with subprocess.Popen(
        [
            _script(),
            "fit",
            "spend.csv",
            "-t",
            "monthly_spend",
            "-o",
            "long.nc",
            "--hidden",
            "5",
            "--inference",
            "nuts",
            "--draws",
            "20000",
            "--noise",
            "constant",
            "--drop",
            "customer_id",
        ],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:

        def read():
            for line in proc.stderr:
                lines.append(line[-300:])  # numpyro's bar: one long line of updates
                if "NUTS sampling" in line:
                    started.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        status, waited = None, None
        try:
            assert started.wait(300), "".join(lines)
            time.sleep(0.5)
            sent = time.perf_counter()
            proc.send_signal(signal.SIGINT)
            status = proc.wait(timeout=60)  # 20,000 draws a chain would take minutes
            waited = time.perf_counter() - sent
        finally:
            proc.kill()
            reader.join(5)
    assert status == 130, "".join(lines)
    assert "pymc-bnn: interrupted; nothing written" in "".join(lines)
    assert not (work / "long.nc").exists()
    assert waited < 30, waited  # not the rest of the run (minutes)


def test_evaluate_names_the_interval_of_its_coverage(spend_model, work):
    out = run("evaluate", "spend.nc", "spend_new.csv", "--interval", "0.8", cwd=work).stdout
    assert "coverage of the 80% interval" in out
    assert out.count("coverage, predicted ") == 5  # by fifths of the predicted value
    assert "e+" not in out and "e-" not in out  # plain notation


def test_categorical_codes_are_categories_in_fit_the_file_and_predict(work):
    """--categorical: integer codes 1..4 are one-hot encoded in fit, kept in the model
    file, and read the same in predict, where the column holds integers (in training,
    with missing values, floats)."""
    from pymc_bnn import tabular

    codes = {"north": 1, "south": 2, "east": 3, "west": 4}
    train = make_customers(150, random_state=7).drop(columns=["customer_id"])
    train["region"] = train["region"].map(codes)
    train.to_csv(work / "codes.csv", index=False)
    proc = run(
        "fit",
        "codes.csv",
        "-t",
        "churned",
        "-o",
        "codes.nc",
        *SMALL[:-2],
        "--prior-sigma",
        "1",
        "--categorical",
        "region",
        cwd=work,
    )
    assert "fit 150 rows x 13 features (from 7 columns)" in proc.stdout
    info = run("info", "codes.nc", cwd=work).stdout
    assert "categorical region (--categorical): 1, 2, 3, 4" in info
    new = make_customers(40, random_state=8).drop(columns=["customer_id"])
    new["region"] = new["region"].map(codes).fillna(2).astype(int)
    new.to_csv(work / "codes_new.csv", index=False)
    proc = run("predict", "codes.nc", "codes_new.csv", "-o", "codes_pred.csv", cwd=work)
    assert "not seen in training" not in proc.stderr
    pipe = tabular.load_pipeline(work / "codes.nc")
    assert "region" in pipe.named_steps["preprocess"].categorical_columns_
    pred = pd.read_csv(work / "codes_pred.csv")
    np.testing.assert_allclose(
        pred[["proba_no", "proba_yes"]].to_numpy(), pipe.predict_proba(new), rtol=1e-12
    )


# -------------------------------------------------------------------- bad input
def _bad_files(d: Path) -> None:
    (d / "empty.csv").write_text("")
    (d / "header.csv").write_text("a,b,y\n")
    (d / "binary.csv").write_bytes(bytes(range(256)) * 8)
    (d / "garbage.nc").write_bytes(b"not a model" * 100)
    base = make_customers(60, random_state=3).drop(columns=["customer_id"])
    base.assign(churned="yes").to_csv(d / "constant.csv", index=False)
    base.assign(signup=pd.date_range("2024-01-01", periods=60).astype(str)).to_csv(
        d / "dates.csv", index=False
    )
    base.drop(columns=["plan", "income"]).to_csv(d / "missing_cols.csv", index=False)
    base.assign(age=["old"] + base["age"].tolist()[1:]).to_csv(d / "text_age.csv", index=False)
    base.assign(churned="maybe").to_csv(d / "new_label.csv", index=False)
    # the third row's age is text; the first row has no target (left out of the scores)
    base.assign(
        age=base["age"].tolist()[:2] + ["old"] + base["age"].tolist()[3:],
        churned=[None] + base["churned"].tolist()[1:],
    ).to_csv(d / "text_age_row3.csv", index=False)
    base.to_csv(d / "semi.csv", sep=";", index=False)
    base.to_csv(d / "ok.csv", index=False)
    base.to_csv(d / "ok.json", index=False)
    base.to_csv(
        d / "dup_header.csv",
        index=False,
        header=[c if c != "income" else "age" for c in base.columns],
    )
    base.assign(income=base["income"].astype(object).where(base.index != 4, "?")).to_csv(
        d / "stray_target.csv", index=False
    )
    base.assign(churned=base["churned"].where(base.index != 3, "maybe")).to_csv(
        d / "one_new_label.csv", index=False
    )
    base.assign(store=np.arange(60), one="x").to_csv(d / "group_ids.csv", index=False)
    # rows without a target are left out: a cell is still named by its row in the file
    base.assign(
        age=base["age"].astype(object).where(base.index != 4, "old"),
        churned=base["churned"].where(base.index != 1, None),
    ).to_csv(d / "stray_age_gap.csv", index=False)
    pd.DataFrame({"a": [1.0, 2.0] * 15, "y": ["p", "q"] * 15, "l": [[1, 2], [3]] * 15}).to_parquet(
        d / "lists.parquet"
    )
    # a shuffled sample of row ids 1..80: not consecutive, not in row order
    base.assign(rownames=np.random.default_rng(0).permutation(80)[:60] + 1).to_csv(
        d / "ids.csv", index=False
    )


BAD = {
    "missing file": (["fit", "nope.csv", "-t", "y", "-o", "m.nc"], "no such file: nope.csv"),
    "empty file": (["fit", "empty.csv", "-t", "y", "-o", "m.nc"], "empty.csv is empty"),
    "no rows": (["fit", "header.csv", "-t", "y", "-o", "m.nc"], "header but no rows"),
    "not a table": (["fit", "binary.csv", "-t", "y", "-o", "m.nc"], "cannot read binary.csv"),
    "unknown format": (["fit", "ok.json", "-t", "churned", "-o", "m.nc"], "unknown table format"),
    "target absent": (
        ["fit", "ok.csv", "-t", "price", "-o", "m.nc"],
        "ok.csv has no column 'price'",
    ),
    "target constant": (
        ["fit", "constant.csv", "-t", "churned", "-o", "m.nc"],
        "single value 'yes'",
    ),
    "all features dropped": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--features", "age", "--drop", "age"],
        "no feature columns",
    ),
    "date column": (
        ["fit", "dates.csv", "-t", "churned", "-o", "m.nc"],
        "column 'signup' holds dates.*--drop it",
    ),
    "identifier column": (
        ["fit", "ids.csv", "-t", "churned", "-o", "m.nc"],
        "column 'rownames' looks like a row number or identifier.*--drop it \\(or --keep it",
    ),
    "keep an absent column": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--keep", "nope"],
        "ok.csv has no column 'nope'",
    ),
    "regression on text": (
        ["fit", "ok.csv", "-t", "plan", "-o", "m.nc", "--task", "regression"],
        "target 'plan' is not numeric",
    ),
    "noise for classification": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--noise", "varying"],
        "--noise applies to regression only",
    ),
    "log noise of a target with zeros": (
        [
            "fit",
            "ok.csv",
            "-t",
            "support_calls",
            "-o",
            "m.nc",
            "--task",
            "regression",
            "--noise",
            "log",
        ],
        "needs a positive target, but \\d+ values are zero or negative",
    ),
    "bad hidden": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--hidden", "5,x"],
        "--hidden must be",
    ),
    "bad prior sigma": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--prior-sigma", "-1"],
        "--prior-sigma must be 'auto', 'evidence' or a positive number",
    ),
    "evidence for regression": (
        ["fit", "ok.csv", "-t", "income", "-o", "m.nc", "--prior-sigma", "evidence"],
        "--prior-sigma is available for classification only",
    ),
    "a prior sd for regression": (
        ["fit", "ok.csv", "-t", "income", "-o", "m.nc", "--prior-sigma", "0.5"],
        "the regressor infers each layer's prior scale",
    ),
    "evidence with groups": (
        [
            "fit",
            "ok.csv",
            "-t",
            "churned",
            "-o",
            "m.nc",
            "--prior-sigma",
            "evidence",
            "--groups",
            "region",
        ],
        "not available with --groups",
    ),
    "n-init with nuts": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--inference", "nuts", "--n-init", "2"],
        "--n-init applies to ADVI only",
    ),
    "output folder missing": (
        ["fit", "ok.csv", "-t", "churned", "-o", "no/dir/m.nc"],
        "folder no/dir does not exist",
    ),
    "output is a folder": (["fit", "ok.csv", "-t", "churned", "-o", "."], "it is a folder"),
    "predict missing columns": (
        ["predict", "MODEL", "missing_cols.csv", "-o", "p.csv"],
        "lacks the columns 'income', 'plan' that the model needs",
    ),
    "predict wrong type": (
        ["predict", "MODEL", "text_age.csv", "-o", "p.csv"],
        "column 'age' should hold numbers.*'old'",
    ),
    "predict unknown output": (
        ["predict", "MODEL", "ok.csv", "-o", "p.xlsx"],
        "unknown table format",
    ),
    "corrupt model": (
        ["predict", "garbage.nc", "ok.csv", "-o", "p.csv"],
        "garbage.nc is not a readable pymc_bnn model file",
    ),
    "table as model": (["info", "ok.csv"], "ok.csv is not a readable pymc_bnn model file"),
    "missing model": (["evaluate", "none.nc", "ok.csv"], "no such model file: none.nc"),
    "unknown label": (
        ["evaluate", "MODEL", "new_label.csv"],
        "labels the model was not fit on: maybe",
    ),
    # the papercuts users reported
    "semicolon file read with commas": (
        ["fit", "semi.csv", "-t", "churned", "-o", "m.nc", "--sep", ","],
        "semi.csv has no column 'churned' \\(its columns: age;income;.*\\); the file looks "
        "semicolon-separated: pass --sep ';'",
    ),
    "two-character --sep": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--sep", ";;"],
        "--sep must be one character",
    ),
    "swapped model and data": (
        ["predict", "ok.csv", "MODEL", "-o", "p.csv"],
        "ok.csv is a table and .*model.nc a model file: did you swap MODEL and DATA\\?",
    ),
    "swapped model and data to evaluate": (
        ["evaluate", "ok.csv", "MODEL"],
        "did you swap MODEL and DATA\\?",
    ),
    "a table as the model to predict": (
        ["predict", "ok.csv", "ok.csv", "-o", "p.csv"],
        "ok.csv is a table, not a model file",
    ),
    "empty --hidden entry": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--hidden", "5,,5"],
        "--hidden must be .*'5,,5' \\(an empty entry\\)",
    ),
    "zero --hidden entry": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--hidden", "5,0"],
        "'0' is not a positive whole number",
    ),
    "classes of a continuous target": (
        ["fit", "ok.csv", "-t", "income", "-o", "m.nc", "--task", "classification"],
        "classification target 'income' holds numbers that are not whole.*row \\d+ "
        "\\(counting from 1 after the header\\) holds .*--task regression",
    ),
    "more classes than the rows can teach": (
        ["fit", "ok.csv", "-t", "tenure_months", "-o", "m.nc", "--task", "classification"],
        "'tenure_months' has \\d+ distinct values in 60 rows, too many classes to learn.*"
        "--task regression",
    ),
    "--categorical target": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--categorical", "churned"],
        "--categorical 'churned': not a feature",
    ),
    "--categorical absent": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--categorical", "nope"],
        "ok.csv has no column 'nope'",
    ),
    # outputs that would overwrite an input
    "model over its data": (
        ["fit", "ok.csv", "-t", "churned", "-o", "ok.csv"],
        "cannot write the model to ok.csv: it is the input ok.csv",
    ),
    "model named as a table": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.csv"],
        "a model file is netCDF",
    ),
    "predictions over the data": (
        ["predict", "MODEL", "ok.csv", "-o", "./ok.csv"],
        "cannot write the predictions to ok.csv: it is the input",
    ),
    "report into the model": (
        ["report", "MODEL", "ok.csv", "-o", "MODEL"],
        "cannot write the report to .*model.nc",
    ),
    # columns and labels
    "a column named twice": (
        ["fit", "dup_header.csv", "-t", "churned", "-o", "m.nc"],
        "the header names a column more than once \\('age' in columns 1, 2\\)",
    ),
    "an option names a column twice": (
        ["fit", "ok.csv", "-t", "churned", "-o", "m.nc", "--features", "age,age,plan"],
        "--features names 'age' more than once",
    ),
    "one stray cell in a numeric target": (
        ["fit", "stray_target.csv", "-t", "income", "-o", "m.nc"],
        "target 'income' holds numbers except in a few cells: row 5 \\(counting from 1 after "
        "the header\\) holds '\\?'. Fix them, or blank them",
    ),
    "one unknown label among known ones": (
        ["evaluate", "MODEL", "one_new_label.csv"],
        "labels the model was not fit on: maybe \\(the model knows no, yes\\); the first is "
        "in row 4 ",
    ),
    "a stray word in numbers, rows left out above it": (
        ["fit", "stray_age_gap.csv", "-t", "churned", "-o", "m.nc"],
        "column 'age' holds numbers except in row 5 \\(counting from 1 after the header\\): "
        "'old'.*--categorical age",
    ),
    "an identifier as groups": (
        ["fit", "group_ids.csv", "-t", "churned", "-o", "m.nc", "--groups", "store"],
        "groups column 'store' looks like an identifier",
    ),
    "a single group": (
        ["fit", "group_ids.csv", "-t", "churned", "-o", "m.nc", "--groups", "one"],
        "groups column 'one' has the single value 'x'",
    ),
    "batch size with nuts": (
        [
            "fit",
            "ok.csv",
            "-t",
            "churned",
            "-o",
            "m.nc",
            "--inference",
            "nuts",
            "--batch-size",
            "16",
        ],
        "--batch-size applies to ADVI",
    ),
    "a column of lists": (
        ["fit", "lists.parquet", "-t", "y", "-o", "m.nc"],
        "column 'l' holds ndarray values .*flatten it",
    ),
    "rows counted from 1": (
        ["evaluate", "MODEL", "text_age_row3.csv"],
        "column 'age' should hold numbers, but row 3 \\(counting from 1 "
        "after the header\\) holds 'old'",
    ),
}


@pytest.fixture(scope="module")
def bad_dir(work, churn_model):
    d = work / "bad"
    d.mkdir()
    _bad_files(d)
    shutil.copy(churn_model[0], d / "model.nc")
    return d


def _bad_args(case, bad_dir):
    args, message = BAD[case]
    return [str(bad_dir / "model.nc") if a == "MODEL" else a for a in args], message


def _check_one_line_error(status, stderr, message):
    import re

    assert status == 2, (status, stderr)
    errors = [line for line in stderr.splitlines() if not line.startswith("note:")]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("pymc-bnn: error: ")
    assert re.search(message, errors[0]), errors[0]
    assert "Traceback" not in stderr


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, bad_dir):
    """In this process, through ``cli.main`` (``run``): a process per case would cost
    ~1 s of interpreter and imports each, 38 times. The console script itself is run on
    two of the cases below."""
    args, message = _bad_args(case, bad_dir)
    before = sorted(p.name for p in bad_dir.rglob("*"))
    proc = run(*args, cwd=bad_dir, expect=2)
    _check_one_line_error(proc.returncode, proc.stderr, message)
    assert sorted(p.name for p in bad_dir.rglob("*")) == before


@pytest.mark.parametrize("case", ["not a table", "table as model"])
def test_bad_input_through_the_console_script(case, bad_dir):
    args, message = _bad_args(case, bad_dir)
    before = sorted(p.name for p in bad_dir.rglob("*"))
    proc = run_script(*args, cwd=bad_dir, expect=2)
    _check_one_line_error(proc.returncode, proc.stderr, message)
    assert sorted(p.name for p in bad_dir.rglob("*")) == before


def test_unwritable_output_folder(bad_dir):
    if os.geteuid() == 0:
        pytest.skip("root can write into read-only folders")
    ro = bad_dir / "readonly"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        proc = run("fit", "ok.csv", "-t", "churned", "-o", "readonly/m.nc", cwd=bad_dir, expect=2)
        assert "is not writable" in proc.stderr
    finally:
        ro.chmod(0o700)


def test_debug_shows_the_traceback(bad_dir):
    proc = run_script("--debug", "fit", "nope.csv", "-t", "y", "-o", "m.nc", cwd=bad_dir, expect=1)
    assert "Traceback" in proc.stderr and "no such file: nope.csv" in proc.stderr


def test_usage_errors_exit_2(bad_dir):
    proc = run_script("fit", "ok.csv", "-o", "m.nc", cwd=bad_dir, expect=2)
    assert "Missing option '--target'" in proc.stderr


def test_predict_does_not_import_pymc(churn_model, work):
    """A prediction needs PyTensor, not PyMC (about a second of a new process's start):
    only fitting builds a PyMC model."""
    code = (
        "import sys; from pymc_bnn.cli._main import main; "
        "status = main(['predict', 'churn.nc', 'churn_new.csv', '-o', 'np.csv']); "
        "print(status, 'pymc' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=work, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[-2:] == ["0", "False"]


def test_unseen_groups_are_noted_flagged_and_predicted_by_the_population(tmp_path):
    """A group label training never saw, 2.5 included (no group 2 though it converts to
    2), is predicted with the population's weights, flagged and counted in a note."""
    rng = np.random.default_rng(0)
    table = make_customers(90, random_state=4).drop(columns=["customer_id"])
    table["store"] = rng.integers(1, 4, len(table))
    table.to_csv(tmp_path / "stores.csv", index=False)
    run(
        "fit",
        "stores.csv",
        "-t",
        "churned",
        "-o",
        "stores.nc",
        "--groups",
        "store",
        "--inference",
        "advi",
        "--n-iter",
        "1000",
        "--draws",
        "50",
        "--temperature",
        "1",
        "--hidden",
        "3",
        cwd=tmp_path,
    )
    new = table.iloc[[0, 0, 0, 1]].assign(store=[2, 2.5, 7, 3])
    new.to_csv(tmp_path / "stores_new.csv", index=False)
    proc = run("predict", "stores.nc", "stores_new.csv", "-o", "p.csv", cwd=tmp_path)
    assert "2 rows of groups not seen in training (2.5, 7.0)" in proc.stderr
    out = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert out["unseen_group"].tolist() == ["", "store", "store", ""]
    assert out.loc[1, "proba_yes"] == out.loc[2, "proba_yes"] != out.loc[0, "proba_yes"]


def test_constant_columns_are_left_out_and_info_says_so(tmp_path):
    table = make_customers(80, random_state=5).assign(country="EU", version=7)
    table.to_csv(tmp_path / "const.csv", index=False)
    proc = run("fit", "const.csv", "-t", "churned", "-o", "const.nc", *SMALL, cwd=tmp_path)
    assert "'country'" in proc.stderr and "'version'" in proc.stderr
    info = run("info", "const.nc", cwd=tmp_path).stdout
    assert "constant country: EU (left out: one value in training)" in info
    assert "constant version: 7 (left out" in info
    assert "numeric version" not in info
