"""The README's quick start runs as printed, and prints what its comments say.

The code blocks are read from README.md itself, so an edit of the README (or of the
defaults) that breaks the quick start or changes its printed accuracy fails here.
"""

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

#: the package run as a user runs it (make test-fast leaves these out)
pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks(section: str) -> list[str]:
    """The ```python blocks of the README's ``## section`` (up to the next ``## ``)."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], re.S)


def _run(code: str) -> tuple[dict, str]:
    namespace: dict = {"__name__": "readme"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own README
    return namespace, out.getvalue()


def test_quick_start_runs_and_prints_its_accuracy():
    code = _blocks("Quick start")[0]
    assert len(code.splitlines()) <= 14  # a quick start, not a tutorial
    ns, printed = _run(code)
    (claimed,) = re.findall(r"print\(clf\.score\(X_test, y_test\)\)\s+# ([0-9.]+)", code)
    # the same seed gives the same fit on one machine; across processors the last
    # digits of a fit may differ (research/notes/calibration-log.md), so a few test points may flip
    assert abs(float(printed.split()[-1]) - float(claimed)) <= 0.01, (printed, claimed)
    n_test = len(ns["y_test"])
    assert ns["proba"].shape == (n_test, 2)
    np.testing.assert_allclose(ns["proba"].sum(axis=1), 1.0)
    assert {"mean", "std", "entropy", "mutual_info"} <= set(ns["u"])
    assert ns["draws"].shape[1:] == (n_test, 2)  # "mean over the draws"
    np.testing.assert_allclose(ns["draws"].mean(axis=0), ns["proba"], rtol=1e-6)


def test_quick_start_regression_block_runs():
    (code,) = [b for b in _blocks("Quick start") if "BayesianMLPRegressor" in b]
    ns, _ = _run(code)
    mean, std, lower, upper = (ns[k] for k in ("mean", "std", "lower", "upper"))
    assert mean.shape == std.shape == lower.shape == upper.shape == (5,)
    assert np.all(std > 0) and np.all(lower < mean) and np.all(mean < upper)


@pytest.mark.slow  # two short NUTS runs
def test_the_conformal_block_runs_after_the_regression_block():
    """The conformal section's block, on the regression block's data: its intervals
    are the posterior's, widened or narrowed by one calibrated factor."""
    (regression,) = [b for b in _blocks("Quick start") if "BayesianMLPRegressor" in b]
    (code,) = _blocks("Guaranteed coverage: conformal intervals and sets")
    ns, _ = _run(regression + code)
    conf, X = ns["conf"], ns["X"]
    mean, std = ns["reg"].predict(X[:5], return_std=True)
    lower, upper = ns["lower"], ns["upper"]
    np.testing.assert_allclose((lower + upper) / 2, mean)
    np.testing.assert_allclose((upper - lower) / (2 * std), (upper - lower)[0] / (2 * std[0]))
    assert len(conf.scores_) == len(X) - 300


@pytest.mark.slow  # a default fit of 800 rows
def test_the_cli_sections_python_block_runs_on_the_example_tables(tmp_path, monkeypatch):
    """The command-line section's Python equivalent runs on the tables ``pymc-bnn
    example`` writes, and its pipeline gives the Bayesian methods through the
    preprocessing, before and after saving."""
    from pymc_bnn.datasets import make_customers

    (code,) = _blocks("The command line on your own table")
    make_customers(800, random_state=0).to_csv(tmp_path / "customers.csv", index=False)
    make_customers(800, random_state=1).to_csv(tmp_path / "new_customers.csv", index=False)
    monkeypatch.chdir(tmp_path)
    ns, _ = _run(code)
    u, same, pipe = ns["u"], ns["same"], ns["pipe"]
    assert {"mean", "std", "entropy", "mutual_info"} <= set(u)
    assert u["mean"].shape == (800, 2)
    new = ns["pd"].read_csv("new_customers.csv")
    np.testing.assert_array_equal(same.predict_uncertainty(new)["mean"], u["mean"])
    assert same.sample_proba(new.iloc[:5]).shape[1:] == (5, 2)
    assert pipe.log_predictive_density(new, new["churned"]).shape == (800,)


@pytest.mark.slow  # a NUTS run
def test_the_pymc_model_block_runs(moons):
    """The functional layer's block (build_model, fit, posterior_predictive, and PyMC's
    log-likelihood for ArviZ's LOO inside default_initial_values) runs as printed, with
    the quick start's kind of data in its names."""
    (code,) = [b for b in _blocks("Quick start") if "default_initial_values" in b]
    X_train, X_test, y_train, _ = moons
    namespace = {"__name__": "readme", "X_train": X_train, "y_train": y_train, "X_test": X_test}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["u"]["mean"].shape == (len(X_test), 2)
    assert namespace["post"].method == "nuts"
    loo = namespace["loo"]
    assert np.isfinite(loo.elpd) and loo.n_data_points == len(y_train)


def test_readme_is_a_users_guide_of_at_most_300_lines_without_dates():
    """History goes to CHANGELOG.md, research/notes/ and benchmarks/results/."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert not re.search(r"20\d\d-\d\d-\d\d", text)
