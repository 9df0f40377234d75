"""Plotting: every function returns its Axes/Figure with labelled axes and colour bars,
validates ``kind`` and the number of features, and draws the numbers it should.

The estimators here are small and short-trained (hidden_layer_sizes=(5,), 1500 ADVI
steps): these tests check figures, not fits. Maps use a coarse grid.
"""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgb
from matplotlib.contour import ContourSet
from matplotlib.figure import Figure
from sklearn.linear_model import LogisticRegression

from pymc_bnn import BayesianMLPClassifier, plotting
from pymc_bnn.datasets import make_rotated_moons
from pymc_bnn.metrics import expected_calibration_error, risk_coverage_curve
from pymc_bnn.plotting import (
    KINDS,
    calibration_table,
    compare_maps,
    grid_2d,
    loss_curve,
    posterior_intervals,
    predicted_vs_actual,
    reliability_diagram,
    risk_coverage_plot,
    task_maps,
    uncertainty_histogram,
    uncertainty_map,
)
from pymc_bnn.plotting._common import closing_new_figures

RES = 25  # grid points per axis: enough to draw, fast to evaluate


@pytest.fixture(scope="module")
def small_clf(moons):
    X_train, _, y_train, _ = moons
    return BayesianMLPClassifier(
        hidden_layer_sizes=(5,), n_iter=5000, n_draws=100, posterior_temperature=1.0, random_state=0
    ).fit(X_train, y_train)


@pytest.fixture(scope="module")
def small_clf3(blobs3):
    X_train, _, y_train, _ = blobs3
    return BayesianMLPClassifier(
        hidden_layer_sizes=(5,), n_iter=5000, n_draws=100, posterior_temperature=1.0, random_state=0
    ).fit(X_train, y_train)


@pytest.fixture(scope="module")
def point_clf(moons):
    """A non-Bayesian classifier: predict_proba only."""
    X_train, _, y_train, _ = moons
    return LogisticRegression().fit(X_train, y_train)


@pytest.fixture(scope="module")
def tasks3():
    """Three rotated-moons tasks, 20 train / 20 test points each."""
    return make_rotated_moons(n_tasks=3, n_samples=40, random_state=0)


@pytest.fixture(scope="module")
def hier_clf(tasks3):
    """A small hierarchical (multi-task) network, fit with string group labels."""
    groups = np.array(["a", "b", "c"])[tasks3["groups_train"]]
    return BayesianMLPClassifier(
        hidden_layer_sizes=(3,), n_iter=3000, n_draws=30, posterior_temperature=1.0, random_state=0
    ).fit(tasks3["X_train"], tasks3["y_train"], groups=groups)


@pytest.fixture(autouse=True)
def _no_show_and_close(monkeypatch):
    def show(*args, **kwargs):
        raise AssertionError("plotting functions must not call plt.show()")

    monkeypatch.setattr(plt, "show", show)
    yield
    plt.close("all")


def _contour(ax) -> ContourSet:
    (cs,) = [c for c in ax.collections if isinstance(c, ContourSet)]
    return cs


def test_all_is_explicit_and_documented():
    assert sorted(plotting.__all__) == sorted(
        [
            "KINDS",
            "calibration_table",
            "compare_maps",
            "grid_2d",
            "loss_curve",
            "posterior_intervals",
            "predicted_vs_actual",
            "reliability_diagram",
            "risk_coverage_plot",
            "task_maps",
            "uncertainty_histogram",
            "uncertainty_map",
        ]
    )
    for name in plotting.__all__:
        if callable(getattr(plotting, name)):
            assert "Returns" in getattr(plotting, name).__doc__, name


def test_grid_2d_shapes_and_order():
    xx, yy, points = grid_2d((-1.0, 2.0), 4)
    assert xx.shape == yy.shape == (4, 4) and points.shape == (16, 2)
    np.testing.assert_array_equal(points[:, 0].reshape(4, 4), xx)
    assert points.min() == -1.0 and points.max() == 2.0
    for bad in (0, 1, 2.5, True):
        with pytest.raises(
            ValueError,
            match="resolution must be a whole number of grid points per axis, at least 2",
        ):
            grid_2d((-1.0, 2.0), bad)


def test_uncertainty_map_of_a_regressor_says_it_needs_a_classifier():
    """It had failed with an IndexError deep in the map's code."""
    from sklearn.linear_model import LinearRegression

    from pymc_bnn import BayesianMLPRegressor

    reg = BayesianMLPRegressor()  # the check needs no fit: a regressor is refused at once
    with pytest.raises(ValueError, match="BayesianMLPRegressor is a regressor"):
        uncertainty_map(reg, resolution=5)
    with pytest.raises(ValueError, match="neither"):  # a plain regressor: no probabilities
        uncertainty_map(LinearRegression().fit([[0, 0], [1, 1]], [0, 1]), resolution=5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_uncertainty_map_every_kind(small_clf, moons, kind):
    _, X_test, _, y_test = moons
    ax = uncertainty_map(small_clf, kind=kind, X=X_test[:50], y=y_test[:50], resolution=RES)
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    cs = _contour(ax)
    assert cs.colorbar is not None and cs.colorbar.ax.get_ylabel() == ax.get_title()
    assert cs.levels[0] == 0.0
    if kind == "mean":  # binary mean: the full probability scale, and the class named
        assert cs.levels[-1] == 1.0
        assert "P(y = 1)" in ax.get_title() and "np.int64" not in ax.get_title()
    assert len(ax.collections) == 2  # the map and the overlaid points


def test_uncertainty_map_draws_on_given_ax_and_honours_options(small_clf):
    fig, (a, b) = plt.subplots(1, 2)
    out = uncertainty_map(
        small_clf,
        kind="std",
        ax=b,
        resolution=RES,
        colorbar=False,
        title="custom",
        vmax=0.5,
        lims=(-2.0, 2.0),
    )
    assert out is b and len(fig.axes) == 2  # no new figure, no colour bar
    assert b.get_title() == "custom" and b.get_xlim() == (-2.0, 2.0)
    assert _contour(b).levels[-1] == 0.5


def test_uncertainty_map_multiclass(small_clf3):
    for kind in ("mean", "entropy", "mutual_info"):
        ax = uncertainty_map(small_clf3, kind=kind, resolution=RES)
        assert _contour(ax).colorbar is not None
    assert "max-class" in uncertainty_map(small_clf3, kind="std", resolution=RES).get_title()
    with pytest.raises(ValueError, match="class_index"):
        uncertainty_map(small_clf3, kind="mean", class_index=3, resolution=RES)


def test_uncertainty_map_of_a_point_estimate_classifier(point_clf):
    ax = uncertainty_map(point_clf, kind="entropy", resolution=RES)
    assert "softmax entropy" in ax.get_title()
    # the entropy of a logistic regression is at most log 2
    assert _contour(ax).levels[-1] <= np.log(2) + 1e-9


@pytest.mark.parametrize("bad", ["variance", "Mean", None, 3])
def test_bad_kind_is_rejected_naming_the_options(small_clf, bad):
    with pytest.raises(ValueError, match=r"kind must be one of .*'mutual_info'"):
        uncertainty_map(small_clf, kind=bad, resolution=RES)
    with pytest.raises(ValueError, match=r"kind must be one of"):
        compare_maps({"a": small_clf}, kind=bad, resolution=RES)


def test_non_2_feature_classifier_is_rejected(moons):
    X_train, _, y_train, _ = moons
    X3 = np.column_stack([X_train, X_train[:, 0] * X_train[:, 1]])
    clf3 = LogisticRegression().fit(X3, y_train)
    with pytest.raises(ValueError, match="2 features.*n_features_in_=3"):
        uncertainty_map(clf3, kind="mean")
    with pytest.raises(ValueError, match="2 features.*n_features_in_=3"):
        compare_maps({"three": clf3}, kind="mean")


def test_bayesian_kinds_need_predict_uncertainty(point_clf):
    for kind in ("std", "mutual_info"):
        with pytest.raises(ValueError, match="predict_uncertainty"):
            uncertainty_map(point_clf, kind=kind, resolution=RES)


def test_compare_maps_shares_one_colour_scale(small_clf, point_clf, moons):
    _, X_test, _, y_test = moons
    fig = compare_maps(
        {"BNN": small_clf, "logistic": point_clf},
        kind="entropy",
        X=X_test[:50],
        y=y_test[:50],
        resolution=RES,
        suptitle="entropy",
    )
    assert isinstance(fig, Figure)
    maps = [a for a in fig.axes if any(isinstance(c, ContourSet) for c in a.collections)]
    assert [a.get_title() for a in maps] == ["BNN", "logistic"]
    assert all(a.get_xlabel() for a in maps) and maps[0].get_ylabel()
    levels = [_contour(a).levels for a in maps]
    np.testing.assert_array_equal(levels[0], levels[1])
    assert len(fig.axes) == 3  # two maps + one shared colour bar
    colorbars = [_contour(a).colorbar for a in maps if _contour(a).colorbar is not None]
    assert len(colorbars) == 1 and colorbars[0].ax.get_ylabel()
    assert fig.get_suptitle() == "entropy"


def test_compare_maps_separate_scales_and_given_axes(small_clf, small_clf3):
    fig, axes = plt.subplots(1, 2)
    out = compare_maps(
        {"two": small_clf, "three": small_clf3},
        kind="std",
        ax=axes,
        share_scale=False,
        resolution=RES,
    )
    assert out is fig
    assert all(_contour(a).colorbar is not None for a in axes)
    assert len(fig.axes) == 4
    with pytest.raises(ValueError, match="one Axes per classifier"):
        compare_maps({"two": small_clf}, ax=axes, resolution=RES)
    with pytest.raises(ValueError, match="non-empty dict"):
        compare_maps({}, resolution=RES)


def test_loss_curve(small_clf):
    ax = loss_curve(small_clf.loss_curve_, window=100, label="ADVI")
    assert isinstance(ax, Axes) and ax.get_xlabel() and "ELBO" in ax.get_ylabel()
    assert len(ax.lines) == 2 and ax.get_legend() is not None
    ax2 = loss_curve(small_clf.loss_curve_[:50], window=100)  # no labels: no legend
    assert ax2.get_legend() is None and len(ax2.lines) == 1
    # overlaying a second run keeps both in range
    loss_curve(small_clf.loss_curve_ * 2, window=100, label="x2", ax=ax)
    assert ax.get_ylim()[1] >= np.percentile(small_clf.loss_curve_ * 2, 99)


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((np.ones((3, 3)),), {}, r"loss must be a 1-D array.*\(3, 3\)"),
        ((["a", "b"],), {}, "loss must be a 1-D array of numbers"),
        ((np.arange(10.0),), {"window": 2.5}, r"window must be an integer >= 0; got 2\.5"),
        ((np.arange(10.0),), {"window": -3}, "window must be an integer >= 0"),
    ],
)
def test_loss_curve_rejects_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        loss_curve(*args, **kwargs)
    # windows of 0 and 1 (no running mean) are accepted, as before
    assert len(loss_curve(np.arange(10.0), window=0).lines) == 1


def test_calibration_table_matches_hand_computation_binary():
    y = np.array([0, 0, 1, 1, 1, 0, 1, 0])
    p1 = np.array([0.05, 0.15, 0.45, 0.55, 0.62, 0.68, 0.91, 0.97])
    t = calibration_table(y, np.column_stack([1 - p1, p1]), n_bins=4)
    # bins [0, .25) [.25, .5) [.5, .75) [.75, 1]
    np.testing.assert_array_equal(t["edges"], [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_array_equal(t["count"], [2, 1, 3, 2])
    np.testing.assert_allclose(t["frequency"], [0 / 2, 1 / 1, 2 / 3, 1 / 2])
    np.testing.assert_allclose(t["mean_confidence"], [0.10, 0.45, (0.55 + 0.62 + 0.68) / 3, 0.94])
    ece = (2 * 0.10 + 1 * 0.55 + 3 * abs(2 / 3 - 1.85 / 3) + 2 * 0.44) / 8
    assert t["ece"] == pytest.approx(ece)
    assert t["confidence"] == "positive" and t["positive_class"] == 1
    # a 1-D proba is the probability of the second class: the same table
    t1 = calibration_table(y, p1, n_bins=4)
    np.testing.assert_array_equal(t1["count"], t["count"])


def test_calibration_table_matches_hand_computation_multiclass_top_class():
    labels = np.array(["a", "b", "c"])
    y = np.array(["a", "b", "c", "c", "a"])
    proba = np.array(
        [
            [0.90, 0.05, 0.05],  # top a (0.90), right
            [0.41, 0.34, 0.25],  # top a (0.41), wrong
            [0.19, 0.19, 0.62],  # top c (0.62), right
            [0.10, 0.70, 0.20],  # top b (0.70), wrong
            [0.45, 0.30, 0.25],  # top a (0.45), right
        ]
    )
    t = calibration_table(y, proba, n_bins=5, classes=labels)
    # bins [0,.2) [.2,.4) [.4,.6) [.6,.8) [.8,1]: 0.41, 0.45 | 0.62, 0.70 | 0.90
    np.testing.assert_array_equal(t["count"], [0, 0, 2, 2, 1])
    np.testing.assert_allclose(t["frequency"][2:], [1 / 2, 1 / 2, 1])
    np.testing.assert_allclose(t["mean_confidence"][2:], [0.43, 0.66, 0.90])
    assert np.isnan(t["frequency"][:2]).all()
    assert t["confidence"] == "top"


def test_reliability_diagram_plots_the_table(moons, small_clf):
    _, X_test, _, y_test = moons
    proba = small_clf.predict_proba(X_test)
    ax = reliability_diagram(y_test, proba, n_bins=8, label="BNN")
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() == "predicted P(y = 1)" and "frequency" in ax.get_ylabel()
    t = calibration_table(y_test, proba, n_bins=8)
    diagonal, curve = ax.lines
    np.testing.assert_array_equal(diagonal.get_xdata(), [0, 1])
    filled = t["count"] > 0
    np.testing.assert_allclose(curve.get_xdata(), t["mean_confidence"][filled])
    np.testing.assert_allclose(curve.get_ydata(), t["frequency"][filled])
    assert f"ECE {t['ece']:.3f}" in curve.get_label()
    # the bin counts: bars on a twin axis with its own label
    twin = [a for a in ax.figure.axes if a is not ax]
    assert len(twin) == 1 and "per bin" in twin[0].get_ylabel()
    assert [p.get_height() for p in twin[0].patches] == t["count"].tolist()


def test_reliability_diagram_multiclass_and_overlay(blobs3, small_clf3):
    _, X_test, _, y_test = blobs3
    fig, ax = plt.subplots()
    out = reliability_diagram(
        y_test,
        small_clf3.predict_proba(X_test),
        ax=ax,
        classes=small_clf3.classes_,
        show_counts=False,
    )
    assert out is ax and len(fig.axes) == 1
    assert "confidence" in ax.get_xlabel() and "accuracy" in ax.get_ylabel()
    reliability_diagram(
        y_test, np.full((len(y_test), 3), 1 / 3), ax=ax, show_counts=False, label="uniform"
    )
    assert len(ax.lines) == 3  # one diagonal, two curves


def test_reliability_diagram_overlays_share_one_count_axis():
    """A second model on the same ax reuses the first call's count axis (one set of
    right-hand ticks), rescaled to the larger counts, its bars in its curve's colour."""
    rng = np.random.default_rng(3)
    y_a, p_a = rng.integers(0, 2, 40), rng.uniform(size=40)
    y_b, p_b = rng.integers(0, 2, 200), rng.uniform(0.4, 0.6, size=200)  # crowded bins
    fig, ax = plt.subplots()
    reliability_diagram(y_a, p_a, ax=ax, label="A")
    reliability_diagram(y_b, p_b, ax=ax, label="B")
    assert len(fig.axes) == 2
    (counts,) = [a for a in fig.axes if a is not ax]
    t_a, t_b = calibration_table(y_a, p_a), calibration_table(y_b, p_b)
    assert counts.get_ylim()[1] >= max(t_a["count"].max(), t_b["count"].max())
    heights = [p.get_height() for p in counts.patches]
    assert heights == t_a["count"].tolist() + t_b["count"].tolist()
    curve_a, curve_b = [line for line in ax.lines if line.get_gid() != "pymc_bnn-diagonal"]
    for curve, bars in ((curve_a, counts.patches[:10]), (curve_b, counts.patches[10:])):
        assert {to_rgb(b.get_facecolor()) for b in bars} == {to_rgb(curve.get_color())}
    assert to_rgb(curve_a.get_color()) != to_rgb(curve_b.get_color())
    # a third call still finds it
    reliability_diagram(y_a, p_a, ax=ax, label="C")
    assert len(fig.axes) == 2


def test_reliability_diagram_panels_sharing_x_keep_their_own_count_axes():
    """Panels of plt.subplots(sharex=True) share their x axis: each panel's bars stay on
    its own count axis (the second panel's had gone onto the first's)."""
    rng = np.random.default_rng(5)
    y, p = rng.integers(0, 2, 60), rng.uniform(size=60)
    fig, (left, right) = plt.subplots(1, 2, sharex=True)
    reliability_diagram(y, p, ax=left)
    reliability_diagram(y, p, ax=right)
    counts = [a for a in fig.axes if a not in (left, right)]
    assert len(counts) == 2 and all(len(a.patches) == 10 for a in counts)
    for panel in (left, right):
        (own,) = [
            a for a in counts if np.allclose(a.get_position().bounds, panel.get_position().bounds)
        ]
        assert own.patches


def test_reliability_diagram_legend_says_which_ece_it_is(proba3):
    y, proba, _ = proba3
    rng = np.random.default_rng(4)
    y2, p1 = rng.integers(0, 2, 50), rng.uniform(size=50)
    ax = reliability_diagram(y2, p1, label="BNN")
    ece = calibration_table(y2, p1)["ece"]
    text = ax.get_legend().get_texts()[1].get_text()
    assert text == f"BNN (ECE {ece:.3f}: 10 bins of P(y = 1))"
    # with the defaults it is not the headline number, which the legend must not imply
    assert f"{expected_calibration_error(y2, p1):.3f}" != f"{ece:.3f}"
    ax = reliability_diagram(y, proba, n_bins=15, label="BNN")  # 3 classes: top label
    text = ax.get_legend().get_texts()[1].get_text()
    assert text == (
        f"BNN (ECE {expected_calibration_error(y, proba):.3f}: 15 bins of top-label confidence)"
    )


def test_reliability_diagram_rejects_bad_input():
    y = np.array([0, 1, 2, 1])
    with pytest.raises(ValueError, match="columns.*classes"):
        reliability_diagram(y, np.full((4, 2), 0.5))
    with pytest.raises(ValueError, match="shape"):
        reliability_diagram(y, np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        reliability_diagram(y, np.full((4, 3), 2.0))
    with pytest.raises(ValueError, match="not in classes"):
        calibration_table(y, np.full((4, 3), 1 / 3), classes=[0, 1, 5])
    with pytest.raises(ValueError, match="confidence='positive' needs 2 classes"):
        calibration_table(y, np.full((4, 3), 1 / 3), confidence="positive")
    with pytest.raises(ValueError, match="n_bins"):
        calibration_table(y, np.full((4, 3), 1 / 3), n_bins=0)


def _unfitted():
    return LogisticRegression()


def _lr3():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(60, centers=3, random_state=0)
    return LogisticRegression().fit((X - X.mean(0)) / X.std(0), y)


# each call fails; the figure it would have drawn on must not stay open
FAILING_CALLS = {
    "class_index out of range": lambda: uncertainty_map(_lr3(), class_index=3, resolution=RES),
    "unfitted, compare_maps": lambda: compare_maps({"a": _unfitted()}, kind="mean", resolution=RES),
    "unfitted, task_maps": lambda: task_maps({0: _unfitted()}, resolution=RES),
    "unfitted, uncertainty_map": lambda: uncertainty_map(_unfitted(), resolution=RES),
    "missing variable": lambda: posterior_intervals({"a": {"x": [1.0]}}, ["zz"]),
    "log of negative draws": lambda: posterior_intervals(
        {"a": {"x": [-1.0, 1.0]}}, ["x"], log=True
    ),
    "2-D loss": lambda: loss_curve(np.ones((3, 3))),
    "lower > upper": lambda: predicted_vs_actual(
        [1.0, 2.0], [1.0, 2.0], lower=[3, 3], upper=[0, 0]
    ),
    "missing label": lambda: reliability_diagram([0, None, 1], [0.2, 0.5, 0.7]),
}


@pytest.mark.parametrize("call", FAILING_CALLS.values(), ids=FAILING_CALLS.keys())
def test_a_failed_call_leaves_no_figure_open(call):
    plt.figure()  # a user's figure: must stay
    before = plt.get_fignums()
    with pytest.raises(ValueError):  # sklearn's NotFittedError is a ValueError
        call()
    assert plt.get_fignums() == before


def test_closing_new_figures_closes_only_what_the_block_opened():
    mine = plt.figure()
    with pytest.raises(RuntimeError, match="late"):
        with closing_new_figures():
            plt.subplots(1, 2)
            raise RuntimeError("late failure")
    assert plt.get_fignums() == [mine.number]
    with closing_new_figures():  # no error: the new figure stays
        plt.figure()
    assert len(plt.get_fignums()) == 2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"class_index": 1.5}, r"class_index must be None or a whole number >= 0.*1\.5"),
        ({"class_index": -1}, r"class_index must be None or a whole number >= 0.*-1"),
        ({"class_index": True}, "class_index must be"),
        ({"class_index": 3}, r"class_index must be in \[0, 2\].*got 3"),
        ({"X": np.zeros((6, 2)), "y": np.zeros(5)}, r"y must have shape \(6,\).*\(5,\)"),
        ({"X": np.zeros((6, 3))}, r"X to overlay must have shape \(n_points, 2\)"),
        ({"y": np.zeros(5)}, "needs X"),
    ],
)
def test_uncertainty_map_rejects_bad_class_index_and_overlay(kwargs, match):
    with pytest.raises(ValueError, match=match):
        uncertainty_map(_lr3(), resolution=RES, **kwargs)
    # the rule and its message agree: every column in [0, 2] is drawn
    for k in range(3):
        assert f"P(y = {k})" in uncertainty_map(_lr3(), class_index=k, resolution=RES).get_title()


def test_map_overlays_of_the_wrong_length_name_the_argument(point_clf):
    X = np.zeros((6, 2))
    with pytest.raises(ValueError, match=r"y must have shape \(6,\)"):
        compare_maps({"a": point_clf}, kind="mean", X=X, y=np.zeros(4), resolution=RES)
    with pytest.raises(ValueError, match=r"groups must have shape \(6,\)"):
        task_maps({0: point_clf}, X=X, groups=[0] * 5, resolution=RES)
    with pytest.raises(ValueError, match="class_index must be"):
        task_maps({0: point_clf}, class_index=0.5, resolution=RES)


# ------------------------------------------------------------------ task maps
def _maps(fig):
    return [a for a in fig.axes if any(isinstance(c, ContourSet) for c in a.collections)]


def test_task_maps_of_a_hierarchical_network_predict_with_each_group(hier_clf, tasks3, monkeypatch):
    seen = []
    original = hier_clf.predict_uncertainty

    def spy(X, groups=None):
        seen.append(set(np.asarray(groups).tolist()))
        return original(X, groups=groups)

    monkeypatch.setattr(hier_clf, "predict_uncertainty", spy)
    groups = np.array(["a", "b", "c"])[tasks3["groups_train"]]
    fig = task_maps(
        hier_clf,
        X=tasks3["X_train"],
        y=tasks3["y_train"],
        groups=groups,
        resolution=RES,
        suptitle="tasks",
    )
    assert isinstance(fig, Figure) and fig.get_suptitle() == "tasks"
    assert seen == [{"a"}, {"b"}, {"c"}]  # one panel per group, with its own weights
    maps = _maps(fig)
    assert [a.get_title() for a in maps] == ["task 'a'", "task 'b'", "task 'c'"]
    # one shared colour bar on the binary mean's full scale
    assert len(fig.axes) == 4
    for a in maps:
        np.testing.assert_array_equal(_contour(a).levels, np.linspace(0, 1, 21))
    assert fig.axes[-1].get_ylabel() == "posterior predictive mean P(y = 1)"
    # each panel overlays its own task's points only
    for a, g in zip(maps, "abc"):
        (points,) = [c for c in a.collections if not isinstance(c, ContourSet)]
        assert len(points.get_offsets()) == np.sum(groups == g)
    # the panels differ: each group has its own decision surface
    z = [
        np.asarray(original(grid_2d(resolution=RES)[2], groups=np.full(RES**2, g))["mean"])
        for g in "ab"
    ]
    assert not np.allclose(z[0], z[1])


def test_task_maps_of_separate_networks_subset_titles_and_given_axes(tasks3):
    X, y, g = tasks3["X_train"], tasks3["y_train"], tasks3["groups_train"]
    separate = {t: LogisticRegression().fit(X[g == t], y[g == t]) for t in range(3)}
    fig, axes = plt.subplots(2, 2)
    out = task_maps(
        separate,
        kind="entropy",
        tasks=[2, 0],
        titles={2: "two"},
        ax=axes,
        X=X,
        y=y,
        groups=g,
        resolution=RES,
        vmax=0.8,
    )
    assert out is fig
    maps = _maps(fig)
    assert [a.get_title() for a in maps] == ["two", "task 0"]
    assert [a.get_visible() for a in axes.ravel()] == [True, True, False, False]
    assert all(_contour(a).levels[-1] == 0.8 for a in maps)
    # outer panels keep the axis labels: left column y, bottom-most panels x
    assert maps[0].get_ylabel() and not maps[1].get_ylabel()
    assert maps[0].get_xlabel() and maps[1].get_xlabel()  # nothing below them


def test_task_maps_colour_each_class_the_same_on_every_panel(tasks3, point_clf):
    X, g = tasks3["X_train"], tasks3["groups_train"]
    y = np.where(g == 1, 1, tasks3["y_train"])  # task 1: only class 1
    fig = task_maps(
        {t: point_clf for t in range(3)}, X=X, y=y, groups=g, resolution=RES, colorbar=False
    )
    assert len(fig.axes) == 3  # no colour bar
    class1 = np.array([*sns.color_palette("colorblind", n_colors=2)[1], 1.0])
    for a, t in zip(_maps(fig), range(3)):
        (points,) = [c for c in a.collections if not isinstance(c, ContourSet)]
        faces = points.get_facecolors()
        expected = y[g == t] == 1
        np.testing.assert_allclose(faces[expected], np.tile(class1, (expected.sum(), 1)))


def test_task_maps_reject_bad_input(hier_clf, small_clf, tasks3):
    with pytest.raises(ValueError, match="fit with groups"):
        task_maps(small_clf, resolution=RES)
    with pytest.raises(ValueError, match="unknown: \\['z'\\]"):
        task_maps(hier_clf, tasks=["a", "z"], resolution=RES)
    with pytest.raises(ValueError, match="needs groups="):
        task_maps(hier_clf, X=tasks3["X_train"], resolution=RES)
    with pytest.raises(ValueError, match="at least one Axes per task"):
        task_maps(hier_clf, ax=plt.subplots(1, 2)[1], resolution=RES)
    with pytest.raises(ValueError, match="non-empty dict"):
        task_maps({}, resolution=RES)
    with pytest.raises(ValueError, match="kind must be one of"):
        task_maps(hier_clf, kind="variance", resolution=RES)


# ------------------------------------------------------------ posterior intervals
def test_posterior_intervals_draw_mean_and_central_interval():
    rng = np.random.default_rng(0)
    draws = {"a_sd": rng.gamma(2.0, 0.5, 400), "b_sd": rng.gamma(5.0, 0.1, 400)}
    other = {"a_sd": draws["a_sd"] * 2, "b_sd": draws["b_sd"] * 3}
    ax = posterior_intervals(
        {"one": draws, "two": other}, ["a_sd", "b_sd"], prob=0.9, title="spreads"
    )
    assert isinstance(ax, Axes) and ax.get_title() == "spreads"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a_sd", "b_sd"]
    assert "90% interval" in ax.get_xlabel()
    lines = ax.lines  # per fit, per variable: an interval line then a mean marker
    assert len(lines) == 8
    for k, (source, var) in enumerate(
        [(draws, "a_sd"), (draws, "b_sd"), (other, "a_sd"), (other, "b_sd")]
    ):
        interval, mean = lines[2 * k], lines[2 * k + 1]
        np.testing.assert_allclose(interval.get_xdata(), np.quantile(source[var], [0.05, 0.95]))
        assert mean.get_xdata()[0] == pytest.approx(source[var].mean())
    # the first variable on top; within a variable, the first fit above the second
    y_one_a, y_two_a = lines[1].get_ydata()[0], lines[5].get_ydata()[0]
    assert y_one_a > y_two_a > lines[3].get_ydata()[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["one", "two"]


def test_posterior_intervals_of_a_fitted_network(hier_clf):
    names = ["w0_sd", "w1_sd", "b0_sd"]
    fig, ax = plt.subplots()
    out = posterior_intervals({"ADVI": hier_clf.idata_}, names, log=True, ax=ax)
    assert out is ax and ax.get_xscale() == "log"
    post = hier_clf.idata_.posterior
    for i, var in enumerate(names):
        assert ax.lines[2 * i + 1].get_xdata()[0] == pytest.approx(float(post[var].mean()))


def test_posterior_intervals_reject_bad_input(hier_clf):
    with pytest.raises(ValueError, match="no variable 'nope'.*w0_sd"):
        posterior_intervals({"x": hier_clf.idata_}, ["nope"])
    with pytest.raises(ValueError, match="scalar variables"):
        posterior_intervals({"x": hier_clf.idata_}, ["w0_mu"])
    with pytest.raises(ValueError, match="1-D array"):
        posterior_intervals({"x": {"a": np.ones((3, 2))}}, ["a"])
    with pytest.raises(ValueError, match="positive draws"):
        posterior_intervals({"x": {"a": [-1.0, 1.0]}}, ["a"], log=True)
    with pytest.raises(ValueError, match="prob"):
        posterior_intervals({"x": {"a": [1.0]}}, ["a"], prob=1.0)
    with pytest.raises(ValueError, match="non-empty dict"):
        posterior_intervals({}, ["a"])
    with pytest.raises(ValueError, match="at least one"):
        posterior_intervals({"x": {"a": [1.0]}}, [])
    with pytest.raises(ValueError, match="DataTree"):
        posterior_intervals({"x": [1.0, 2.0]}, ["a"])
    with pytest.raises(ValueError, match="'a' of 'x' has no draws"):
        posterior_intervals({"x": {"a": []}}, ["a"])
    # a NaN draw makes the interval NaN, which matplotlib would silently not draw
    with pytest.raises(
        ValueError,
        match=r"'a' of 'y' has 1 NaN or infinite draws of 3 "
        r"\(first at draw 1\)",
    ):
        posterior_intervals({"x": {"a": [1.0, 2.0]}, "y": {"a": [1.0, np.nan, 2.0]}}, ["a"])
    with pytest.raises(ValueError, match="'a' of 'x' must be an array of numbers"):
        posterior_intervals({"x": {"a": ["p", "q"]}}, ["a"])


# ------------------------------------------- risk-coverage, uncertainty, regression
@pytest.fixture
def proba3():
    """60 points, 3 classes, probabilities drawn at random (fixed seed)."""
    rng = np.random.default_rng(1)
    proba = rng.dirichlet(np.ones(3), size=60)
    y = np.array([rng.choice(3, p=row) for row in proba])
    return y, proba, rng.random(60)


def test_risk_coverage_plot_draws_the_curve_with_the_aurc_in_the_legend(proba3):
    y, proba, u = proba3
    ax = risk_coverage_plot(y, proba, label="BNN")
    assert isinstance(ax, Axes)
    rc = risk_coverage_curve(y, proba)
    curve, error_rate = ax.lines
    np.testing.assert_allclose(curve.get_xdata(), rc["coverage"])
    np.testing.assert_allclose(curve.get_ydata(), rc["risk"])
    np.testing.assert_allclose(error_rate.get_ydata(), [rc["risk"][-1]] * 2)
    assert error_rate.get_linestyle() == ":" and error_rate.get_color() == curve.get_color()
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == [f"BNN (AURC {rc['aurc']:.3f})"]
    assert "coverage" in ax.get_xlabel() and "risk" in ax.get_ylabel()
    assert ax.get_xlim() == (0, 1) and ax.get_ylim()[0] == 0

    # overlay: a second uncertainty on the same axes
    fig, ax2 = plt.subplots()
    assert risk_coverage_plot(y, proba, ax=ax2) is ax2
    risk_coverage_plot(y, proba, uncertainty=u, ax=ax2, label="random")
    rc_u = risk_coverage_curve(y, proba, uncertainty=u)
    assert len(ax2.lines) == 4 and len(fig.axes) == 1
    texts = [t.get_text() for t in ax2.get_legend().get_texts()]
    assert texts == [f"(AURC {rc['aurc']:.3f})", f"random (AURC {rc_u['aurc']:.3f})"]
    assert ax2.get_ylim()[1] >= max(rc["risk"].max(), rc_u["risk"].max())


def test_risk_coverage_plot_rejects_bad_input(proba3):
    y, proba, u = proba3
    with pytest.raises(ValueError, match=r"uncertainty must have shape \(60,\)"):
        risk_coverage_plot(y, proba, uncertainty=u[:5])
    with pytest.raises(ValueError, match="columns.*classes"):
        risk_coverage_plot(y, proba[:, :2] / proba[:, :2].sum(1, keepdims=True))
    with pytest.raises(ValueError, match="not in classes"):
        risk_coverage_plot(y, proba, classes=[0, 1, 5])


def test_uncertainty_histogram_plain_and_split_by_correctness():
    u = np.array([0.05, 0.1, 0.15, 0.2, 0.6, 0.7, 0.9])
    correct = np.array([True, True, True, True, False, True, False])
    ax = uncertainty_histogram(u, bins=4)
    assert isinstance(ax, Axes) and len(ax.containers) == 1
    assert sum(p.get_height() for p in ax.patches) == len(u)
    assert ax.get_xlabel() == "predictive entropy (nats)" and ax.get_ylabel() == "points"
    assert ax.get_legend() is None

    fig, ax2 = plt.subplots()
    out = uncertainty_histogram(u, correct=correct, bins=4, ax=ax2, xlabel="std")
    assert out is ax2 and ax2.get_xlabel() == "std" and ax2.get_ylabel() == "density"
    right, wrong = ax2.containers
    edges = np.linspace(0.05, 0.9, 5)  # the same bins for both groups
    for bars in (right, wrong):
        np.testing.assert_allclose([b.get_x() for b in bars], edges[:-1])
        assert sum(b.get_height() * b.get_width() for b in bars) == pytest.approx(1.0)
    assert [b.get_height() > 0 for b in wrong] == [False, False, True, True]
    texts = [t.get_text() for t in ax2.get_legend().get_texts()]
    assert texts == ["correct (n=5, median 0.15)", "wrong (n=2, median 0.75)"]

    # 0/1 integers, custom labels, and a group that is empty is not drawn
    ax3 = uncertainty_histogram(u, correct=np.ones(7, dtype=int), labels=("in", "out"))
    assert len(ax3.containers) == 1
    assert ax3.get_legend().get_texts()[0].get_text().startswith("in (n=7")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(uncertainty=[]), r"uncertainty must have shape"),
        (dict(uncertainty=[[0.1, 0.2]]), r"uncertainty must have shape.*\(1, 2\)"),
        (dict(uncertainty=[0.1, np.nan]), "uncertainty contains NaN"),
        (dict(uncertainty=[0.1, 0.2], correct=[True]), r"correct must have shape \(2,\)"),
        (dict(uncertainty=[0.1, 0.2], correct=[0, 2]), "correct must be a boolean"),
        (dict(uncertainty=[0.1, 0.2], correct=["a", "b"]), "correct must be a boolean"),
        (dict(uncertainty=[0.1, 0.2], bins=0), "bins must be an integer"),
    ],
)
def test_uncertainty_histogram_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        uncertainty_histogram(**kwargs)


def test_predicted_vs_actual_without_intervals():
    y, mean = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.0, 1.5])
    ax = predicted_vs_actual(y, mean)
    assert isinstance(ax, Axes) and ax.get_title() == "Predicted vs actual"
    (points,) = ax.collections
    assert isinstance(points, PathCollection)
    np.testing.assert_allclose(points.get_offsets(), np.column_stack([y, mean]))
    (diagonal,) = ax.lines
    np.testing.assert_allclose(diagonal.get_xdata(), diagonal.get_ydata())
    assert ax.get_xlim() == ax.get_ylim()
    assert ax.get_xlabel() == "actual value" and ax.get_ylabel() == "predicted mean"


def test_predicted_vs_actual_colours_the_intervals_that_miss():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    mean = np.array([0.2, 0.9, 2.5, 2.8])
    lower, upper = np.array([-1, 0, 2.2, 2]), np.array([1, 2, 2.8, 4])  # the third misses
    fig, ax = plt.subplots()
    assert predicted_vs_actual(y, mean, lower=lower, upper=upper, ax=ax, coverage=0.9) is ax
    assert ax.get_title() == "Predicted vs actual: 90% intervals cover 75.0%"
    bars_in, points_in, bars_out, points_out = ax.collections
    assert isinstance(bars_in, LineCollection) and isinstance(points_in, PathCollection)
    assert len(bars_in.get_segments()) == 3 and len(bars_out.get_segments()) == 1
    np.testing.assert_allclose(bars_out.get_segments()[0], [[2.0, 2.2], [2.0, 2.8]])
    np.testing.assert_allclose(points_out.get_offsets(), [[2.0, 2.5]])
    assert not np.allclose(points_in.get_facecolor(), points_out.get_facecolor())
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == [
        "90% interval covers the truth (3)",
        "90% interval misses (1)",
        "y = x (perfect prediction)",
    ]
    lo, hi = ax.get_xlim()
    assert lo < -1 and hi > 4  # the intervals are in view

    ax2 = predicted_vs_actual(y, mean, lower=lower - 5, upper=upper + 5, coverage=0.975)
    assert len(ax2.collections) == 2  # all covered: no second group
    assert ax2.get_title() == "Predicted vs actual: 97.5% intervals cover 100.0%"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mean=[1.0, 2.0]), r"mean must have shape \(3,\)"),
        (dict(lower=[0.0, 0.0, 0.0]), "lower and upper must be given together"),
        (dict(lower=[0.0, 5.0, 0.0], upper=[1.0, 1.0, 1.0]), "lower must be <= upper"),
        (dict(lower=[0.0, 0.0], upper=[1.0, 1.0]), r"lower must have shape \(3,\)"),
        (dict(coverage=0.9), "coverage .*needs lower and upper"),
        (dict(lower=[0.0] * 3, upper=[1.0] * 3, coverage=90), r"coverage must be in \(0, 1\)"),
        (dict(y_true=[0.0, np.inf, 1.0]), "y_true contains NaN or infinity"),
    ],
)
def test_predicted_vs_actual_rejects_bad_input(kwargs, match):
    args = dict(y_true=[0.0, 1.0, 2.0], mean=[0.0, 1.0, 2.0]) | kwargs
    with pytest.raises(ValueError, match=match):
        predicted_vs_actual(**args)
