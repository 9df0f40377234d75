"""pymc_bnn.plotting.report: the files written, a self-contained and escaped index.html, metrics
equal to the summaries of pymc_bnn.metrics, input checks, and no figure left open.

Synthetic predictions only (no model is fit): the whole module runs in seconds.
"""

import base64
import html
import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy.special import ndtri
from sklearn.metrics import brier_score_loss

from pymc_bnn import metrics, plotting
from pymc_bnn.plotting import report
from pymc_bnn.plotting.report import write_report

PNG = b"\x89PNG\r\n\x1a\n"
NASTY = '<b>&"'  # a class label a user's CSV might hold
CLASSIFICATION_FILES = [
    "index.html",
    "metrics.json",
    "overview.png",
    "reliability.png",
    "risk_coverage.png",
    "uncertainty.png",
]
BINARY_FILES = sorted([*CLASSIFICATION_FILES, "threshold.png"])
REGRESSION_FILES = [
    "calibration.png",
    "index.html",
    "metrics.json",
    "overview.png",
    "predicted_vs_actual.png",
    "uncertainty.png",
]


@pytest.fixture(autouse=True)
def _no_figure_left_open():
    assert plt.get_fignums() == []
    yield
    assert plt.get_fignums() == [], "write_report left a pyplot figure open"


@pytest.fixture
def binary():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=80)
    p1 = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, size=80), 0.01, 0.99)  # P(y = 1)
    return y, p1


@pytest.fixture
def three_class():
    rng = np.random.default_rng(1)
    classes = np.array(["ant", NASTY, "cat"])
    proba = rng.dirichlet(np.ones(3) * 0.7, size=90)
    y = np.array([rng.choice(classes, p=row) for row in proba])
    return y, proba, classes


@pytest.fixture
def regression():
    rng = np.random.default_rng(2)
    y = rng.normal(size=70)
    mean = y + rng.normal(0, 0.4, size=70)
    std = np.full(70, 0.4) * rng.uniform(0.7, 1.3, size=70)
    return y, mean, std, mean - 1.645 * std, mean + 1.645 * std


def _images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]


def _check_common(path, files):
    assert path.name == "index.html" and path.is_file()
    assert sorted(p.name for p in path.parent.iterdir()) == files
    for name in files:
        if name.endswith(".png"):
            assert (path.parent / name).read_bytes().startswith(PNG), name
    page = path.read_text(encoding="utf-8")
    n_figures = len([f for f in files if f.endswith(".png")]) - 1  # not the overview
    assert page.count("data:image/png;base64,") == n_figures
    images = _images(page)
    assert len(images) == n_figures and all(img.startswith(PNG) for img in images)
    # self-contained: no external resources, no script
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    return page, images


def test_binary_classification_report(tmp_path, binary):
    y, p1 = binary
    out = tmp_path / "deep" / "er"  # parents are created
    path = write_report(
        out,
        task="classification",
        y_true=y,
        proba=p1,
        info={"model": "BayesianMLPClassifier", "n_iter": 3000, "lr": 1e-3},
    )
    assert path == out / "index.html"
    page, images = _check_common(path, BINARY_FILES)
    # the embedded images are the written files, in order
    assert images == [
        (out / f).read_bytes()
        for f in ("reliability.png", "risk_coverage.png", "uncertainty.png", "threshold.png")
    ]
    saved = json.loads((out / "metrics.json").read_text())
    assert saved == metrics.classification_summary(y, p1)
    assert list(saved) == ["n", "accuracy", "nll", "brier", "multiclass_brier", "ece", "aurc"]
    # the Brier score as scikit-learn's brier_score_loss computes it, and said so
    assert saved["brier"] == pytest.approx(brier_score_loss(y, p1))
    assert "brier_score_loss" in page
    # the table shows every metric to 4 significant digits, and the info table
    for value in saved.values():
        shown = str(value) if isinstance(value, int) else f"{value:.4g}"
        assert f'<td class="num">{shown}</td>' in page
    assert "About this model" in page and "<td>BayesianMLPClassifier</td>" in page
    assert "<td>0.001</td>" in page
    assert "<title>pymc_bnn report</title>" in page


def test_multiclass_report_escapes_user_strings(tmp_path, three_class):
    y, proba, classes = three_class
    title = "Iris <script>alert(1)</script>"
    path = write_report(
        tmp_path,
        task="classification",
        y_true=y,
        proba=proba,
        classes=classes,
        title=title,
        info={"columns": ["x<1>", "y&z"], "<i>key": 'say "hi"'},
    )
    page, _ = _check_common(path, CLASSIFICATION_FILES)
    assert html.escape(NASTY) in page and NASTY not in page and "<b>" not in page
    assert "<script" not in page and html.escape(title) in page
    assert "<td>x&lt;1&gt;, y&amp;z</td>" in page
    assert "<td>&lt;i&gt;key</td><td>say &quot;hi&quot;</td>" in page
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved == metrics.classification_summary(y, proba, classes=classes)
    counts = [int(np.sum(y == c)) for c in classes]
    assert (
        f"3 classes. Points per class: ant ({counts[0]}), {html.escape(NASTY)} "
        f"({counts[1]}), cat ({counts[2]})."
    ) in page


def test_classification_report_lists_a_class_absent_from_y_true(tmp_path):
    y = np.array(["a", "b", "b", "a"])
    proba = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4], [0.5, 0.4, 0.1]])
    path = write_report(
        tmp_path, task="classification", y_true=y, proba=proba, classes=["a", "b", "c"]
    )
    assert "Points per class: a (2), b (2), c (0)." in path.read_text()


def test_classification_report_uses_the_given_uncertainties(tmp_path, three_class, monkeypatch):
    y, proba, classes = three_class
    rng = np.random.default_rng(3)
    entropy, mutual_info = rng.random(len(y)), rng.random(len(y))
    calls = {"risk": [], "hist": []}

    def spy(name, fn):
        def wrapper(*args, **kwargs):
            calls[name].append((args, kwargs))
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(plotting, "risk_coverage_plot", spy("risk", plotting.risk_coverage_plot))
    monkeypatch.setattr(
        plotting, "uncertainty_histogram", spy("hist", plotting.uncertainty_histogram)
    )
    write_report(
        tmp_path,
        task="classification",
        y_true=y,
        proba=proba,
        classes=classes,
        entropy=entropy,
        mutual_info=mutual_info,
    )
    # each panel is drawn twice: its own figure and overview.png
    assert len(calls["risk"]) == 4 and len(calls["hist"]) == 2
    assert calls["risk"][0][1].get("uncertainty") is None  # ranked by confidence
    assert calls["risk"][1][1]["uncertainty"] is mutual_info
    (shown,), kwargs = calls["hist"][0]
    np.testing.assert_array_equal(shown, entropy)
    np.testing.assert_array_equal(kwargs["correct"], classes[proba.argmax(1)] == y)

    # without entropy, the predictive entropy of proba is shown
    calls["hist"].clear()
    write_report(tmp_path, task="classification", y_true=y, proba=proba, classes=classes)
    (shown,), _ = calls["hist"][0]
    np.testing.assert_allclose(shown, metrics.predictive_entropy(proba))


def test_regression_report(tmp_path, regression):
    y, mean, std, lower, upper = regression
    path = write_report(
        tmp_path,
        task="regression",
        y_true=y,
        mean=mean,
        std=std,
        lower=lower,
        upper=upper,
        interval=0.9,
        title="house prices",
    )
    page, _ = _check_common(path, REGRESSION_FILES)
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved == metrics.regression_summary(y, mean, std, lower=lower, upper=upper)
    assert "coverage" in saved and "nominal level, 90%" in page
    assert "90% predictive intervals" in page and "About this model" not in page


def test_regression_report_without_intervals(tmp_path, regression):
    y, mean, std, _, _ = regression
    path = write_report(tmp_path, task="regression", y_true=y, mean=mean, std=std)
    _check_common(path, REGRESSION_FILES)
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert list(saved) == ["n", "rmse", "mae", "nll", "crps"]


def test_regression_calibration_is_on_the_diagonal_for_gaussian_targets():
    # y at the Normal(0, 1) quantiles (i + 0.5) / n: each central interval of nominal
    # coverage q holds a share of the points within 1 / n of q
    n = 1000
    y = ndtri((np.arange(n) + 0.5) / n)
    ax = Figure().subplots()
    report._coverage_calibration(ax, y, np.zeros(n), np.ones(n))
    diagonal, observed = ax.lines
    np.testing.assert_allclose(observed.get_xdata(), np.arange(1, 10) / 10)
    np.testing.assert_allclose(observed.get_ydata(), observed.get_xdata(), atol=1 / n)
    # too narrow a std: every interval covers less than nominal
    report._coverage_calibration(ax, y, np.zeros(n), np.full(n, 0.5))
    assert np.all(ax.lines[-1].get_ydata() < observed.get_xdata())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(task="clf"), r"task must be one of \['classification', 'regression'\]"),
        (dict(task="classification"), "proba is required for task='classification'"),
        (dict(task="regression", mean=np.zeros(4)), "std is required for task='regression'"),
        (
            dict(task="classification", proba=np.full(3, 0.5)),
            r"proba must have shape .*len\(y_true\) = 4; got shape \(3,\)",
        ),
        (
            dict(task="classification", proba=np.full(4, 0.5), entropy=np.ones(5)),
            r"entropy must have shape \(n_samples,\).*got shape \(5,\)",
        ),
        (
            dict(task="classification", proba=np.full(4, 0.5), mutual_info=[0, 1, np.nan, 0]),
            "mutual_info must hold finite numbers",
        ),
        (
            dict(task="classification", proba=np.full(4, 0.5), mean=np.zeros(4)),
            "mean is for task='regression', not task='classification'",
        ),
        (
            dict(task="regression", mean=np.zeros(4), std=np.ones(4), classes=[0, 1]),
            "classes is for task='classification'",
        ),
        (
            dict(task="regression", mean=np.zeros(3), std=np.ones(4)),
            r"mean must have shape \(n_samples,\)",
        ),
        (
            dict(task="regression", mean=np.zeros(4), std=np.ones((4, 1))),
            r"std must have shape .*\(4, 1\)",
        ),
        (
            dict(task="regression", mean=np.zeros(4), std=np.ones(4), lower=np.zeros(4)),
            "lower and upper must be given together",
        ),
        (
            dict(task="regression", mean=np.zeros(4), std=np.ones(4), interval=0.9),
            "interval is the nominal coverage.*pass lower and upper",
        ),
        (
            dict(
                task="regression",
                mean=np.zeros(4),
                std=np.ones(4),
                lower=-np.ones(4),
                upper=np.ones(4),
                interval=90,
            ),
            r"interval must be a number in \(0, 1\)",
        ),
        (dict(task="regression", mean=np.zeros(4), std=np.zeros(4)), "std must be > 0"),
        (dict(task="classification", proba=np.full(4, 0.5), info=["a"]), "info must be a dict"),
        (
            dict(task="classification", proba=np.full(4, 0.5), info={"a": {"b": 1}}),
            r"info must be flat.*info\['a'\]",
        ),
        (
            dict(task="classification", proba=np.full(4, 0.5), y_true=np.zeros((4, 1))),
            "y_true must be a non-empty 1-D array",
        ),
        (
            dict(task="classification", proba=np.full(4, 0.5), classes=[0, 1, 2]),
            "proba has 2 columns but there are 3 classes",
        ),
    ],
)
def test_bad_input_raises_a_value_error_and_writes_nothing(tmp_path, kwargs, match):
    out = tmp_path / "report"
    args = dict(y_true=np.array([0, 1, 1, 0])) | kwargs
    with pytest.raises(ValueError, match=match):
        write_report(out, **args)
    assert not out.exists()


def test_module_surface():
    assert report.__all__ == ["write_report"]
    assert report.__doc__ and "Returns" in write_report.__doc__
    assert "Examples" in write_report.__doc__


def test_the_threshold_figure_marks_the_cost_threshold_and_refuses_many_classes(
    tmp_path, binary, three_class
):
    y, p1 = binary
    path = write_report(tmp_path / "b", task="classification", y_true=y, proba=p1, cost_fn_fp=4.0)
    page = path.read_text(encoding="utf-8")
    assert "1 / (1 + r)" in page and "threshold.png" in {p.name for p in path.parent.iterdir()}
    y3, proba, classes = three_class
    with pytest.raises(ValueError, match="two classes"):
        write_report(
            tmp_path / "m",
            task="classification",
            y_true=y3,
            proba=proba,
            classes=classes,
            cost_fn_fp=4.0,
        )
