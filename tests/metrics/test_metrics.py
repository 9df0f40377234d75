"""pymc_bnn.metrics: every metric against numbers written out by hand, against an
independent implementation (scikit-learn, SciPy, an O(m^2) formula) or against a
statistical expectation with a stated tolerance; plus input checks and no mutation.

No model is fit here: the whole module runs in a few seconds.
"""

import ast
import inspect
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats
from sklearn.metrics import brier_score_loss, log_loss

import pymc_bnn
from pymc_bnn import metrics, plotting, summarize_proba
from pymc_bnn.metrics import (
    brier_score,
    classification_summary,
    crps_ensemble,
    crps_gaussian,
    expected_calibration_error,
    gaussian_nll,
    interval_coverage,
    multiclass_brier,
    mutual_information,
    negative_log_likelihood,
    ood_auroc,
    predictive_entropy,
    regression_summary,
    reliability_curve,
    risk_coverage_curve,
)

#: 4 points, 3 classes; with 2 bins [0, .5) and [.5, 1] (confidences in the comments).
Y4 = np.array([0, 2, 1, 1])
P4 = np.array(
    [
        [0.40, 0.30, 0.30],  # top 0 (0.40, bin 0), right
        [0.20, 0.45, 0.35],  # top 1 (0.45, bin 0), wrong (y = 2)
        [0.10, 0.80, 0.10],  # top 1 (0.80, bin 1), right
        [0.60, 0.20, 0.20],  # top 0 (0.60, bin 1), wrong (y = 1)
    ]
)


# ------------------------------------------------------------------ module surface
def test_metrics_is_a_public_submodule_not_in_the_top_level_all():
    assert pymc_bnn.metrics is metrics
    assert sorted(metrics.__all__) == [
        "binned_coverage",
        "brier_score",
        "classification_summary",
        "crps_ensemble",
        "crps_gaussian",
        "ece_consistency",
        "expected_calibration_error",
        "gaussian_nll",
        "interval_coverage",
        "multiclass_brier",
        "mutual_information",
        "negative_log_likelihood",
        "ood_auroc",
        "predictive_entropy",
        "regression_summary",
        "reliability_curve",
        "risk_coverage_curve",
    ]
    assert not set(metrics.__all__) & set(pymc_bnn.__all__)
    for name in metrics.__all__:
        doc = getattr(metrics, name).__doc__
        assert doc and "Examples" in doc and "Returns" in doc, name


def test_metrics_module_imports_no_pymc_or_pytensor_at_top_level():
    tree = ast.parse(inspect.getsource(metrics))
    imported = set()
    for node in tree.body:  # module level only
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert not imported & {"pymc", "pytensor", "arviz", "matplotlib", "seaborn"}


# ---------------------------------------------------------------------------- ECE
def test_top_label_ece_by_hand():
    # bin 0: confidences .40 .45, accuracy 1/2; bin 1: .80 .60, accuracy 1/2
    expected = 2 / 4 * abs(0.5 - 0.425) + 2 / 4 * abs(0.5 - 0.70)  # 0.1375
    assert expected_calibration_error(Y4, P4, n_bins=2) == pytest.approx(expected)
    assert expected == pytest.approx(0.1375)


def test_classwise_ece_by_hand():
    # class 0: p = .4 .2 .1 | .6, hit = 1 0 0 | 0
    ece0 = 3 / 4 * abs(1 / 3 - 0.7 / 3) + 1 / 4 * abs(0 - 0.6)  # 0.225
    # class 1: p = .3 .45 .2 | .8, hit = 0 0 1 | 1
    ece1 = 3 / 4 * abs(1 / 3 - 0.95 / 3) + 1 / 4 * abs(1 - 0.8)  # 0.0625
    # class 2: p = .3 .35 .1 .2 (all bin 0), hit = 0 1 0 0
    ece2 = 4 / 4 * abs(1 / 4 - 0.95 / 4)  # 0.0125
    got = expected_calibration_error(Y4, P4, n_bins=2, method="classwise")
    assert got == pytest.approx((ece0 + ece1 + ece2) / 3)
    assert got == pytest.approx(0.1)


def test_ece_classes_give_the_column_order():
    # the same problem with string labels in a non-sorted column order
    labels = np.array(["c", "a", "b"])
    y = labels[Y4]
    assert expected_calibration_error(y, P4, n_bins=2, classes=labels) == pytest.approx(0.1375)
    with pytest.raises(ValueError, match="not in classes"):
        expected_calibration_error(y, P4, classes=["c", "a", "z"])


def test_ece_is_the_ece_of_the_reliability_curve():
    """One binning: top-label ECE is the curve's ``ece`` with ``confidence="top"``, and
    for binary problems the class-wise ECE is the ``positive`` curve's ``ece`` (class 0's
    bins mirror class 1's, so its ECE is the same: no point lies on a bin edge here)."""
    rng = np.random.default_rng(0)
    p1 = rng.uniform(0.001, 0.999, size=300)
    y = (rng.random(300) < p1**1.5).astype(int)
    for n_bins in (1, 4, 15):
        top = reliability_curve(y, p1, n_bins=n_bins, confidence="top")
        pos = reliability_curve(y, p1, n_bins=n_bins, confidence="positive")
        assert expected_calibration_error(y, p1, n_bins=n_bins) == pytest.approx(top["ece"])
        assert expected_calibration_error(y, p1, n_bins=n_bins, method="classwise") == (
            pytest.approx(pos["ece"])
        )


def test_binary_top_label_and_classwise_agree_when_the_top_class_is_always_the_second():
    # every p1 >= .5: the top class is class 1 with confidence p1, so top-label bins
    # exactly what class 1's term bins, and class 0's term mirrors it.
    y = np.array([1, 0, 1, 1, 0, 1])
    p1 = np.array([0.55, 0.62, 0.71, 0.83, 0.91, 0.97])
    for n_bins in (2, 5, 10):
        top = expected_calibration_error(y, p1, n_bins=n_bins)
        classwise = expected_calibration_error(y, p1, n_bins=n_bins, method="classwise")
        assert top == pytest.approx(classwise)
    # otherwise they differ: y = (1, 1), p1 = (.2, .8), 2 bins.
    # top-label: confidences .8 .8 in bin 1, one right: |1/2 - .8| = .3
    assert expected_calibration_error([1, 1], [0.2, 0.8], n_bins=2, classes=[0, 1]) == (
        pytest.approx(0.3)
    )
    # class 1: (|1 - .2| + |1 - .8|) / 2 = .5; class 0: (|0 - .8| + |0 - .2|) / 2 = .5
    assert expected_calibration_error(
        [1, 1], [0.2, 0.8], n_bins=2, classes=[0, 1], method="classwise"
    ) == pytest.approx(0.5)


def test_ece_bins_are_half_open_with_the_last_closed():
    # 0.5 falls in [.5, 1] (with 2 bins) and 1.0 in the last bin, not past it
    t = reliability_curve([0, 1, 1], [0.0, 0.5, 1.0], n_bins=2)
    np.testing.assert_array_equal(t["count"], [1, 2])
    np.testing.assert_array_equal(t["edges"], [0.0, 0.5, 1.0])


@pytest.mark.parametrize("n_bins", [10, 15, 20, 49])
def test_a_probability_equal_to_an_edge_i_over_n_falls_in_bin_i(n_bins):
    """Bin i is [i/n, (i+1)/n) with i/n the correctly rounded float: np.linspace's edges
    can round up past it (linspace(0, 1, 11)[7] == 0.7000000000000001), which put a
    probability of exactly 0.7 into bin 6."""
    k = np.arange(n_bins + 1)
    p = k / n_bins  # every edge, 0 and 1 included
    t = reliability_curve(
        np.ones(p.size, dtype=int), p, n_bins=n_bins, classes=[0, 1], confidence="positive"
    )
    np.testing.assert_array_equal(t["edges"], p)
    np.testing.assert_array_equal(t["count"], [1] * (n_bins - 1) + [2])  # 1.0: last bin
    # decimal literals that are edges of this binning land in the bin they start
    for literal in ("0.3", "0.6", "0.7", "0.15", "0.85", "0.95"):
        i = Fraction(literal) * n_bins
        if i.denominator != 1:
            continue
        d = float(literal)
        assert d == int(i) / n_bins  # the literal is the float i / n
        t = reliability_curve([1], [d], n_bins=n_bins, classes=[0, 1])
        assert np.flatnonzero(t["count"]).tolist() == [int(i)], (literal, n_bins)


def test_ece_on_edges_agrees_across_every_caller_of_the_binning():
    # 10 at .7 (all right) and 3 at .65 (all wrong): bins 7 and 6, as documented
    y, p = [1] * 10 + [0] * 3, [0.7] * 10 + [0.65] * 3
    ece = (10 * 0.3 + 3 * 0.65) / 13
    t = reliability_curve(y, p, n_bins=10, confidence="top")
    assert t["count"][6:8].tolist() == [3, 10] and t["ece"] == pytest.approx(ece)
    assert expected_calibration_error(y, p, n_bins=10) == pytest.approx(ece)
    assert classification_summary(y, p, n_bins=10)["ece"] == pytest.approx(ece)
    assert metrics.ece_consistency(y, p, n_bins=10, n_resamples=5, random_state=0)[
        "ece"
    ] == pytest.approx(ece)
    # the diagram's table: P(y = 1) against the frequency of y = 1 (the same here)
    assert plotting.calibration_table(y, p)["ece"] == pytest.approx(ece)


def test_ece_of_calibrated_data_is_near_zero_and_of_overconfident_data_is_not():
    """Calibrated by construction: y ~ Bernoulli(p) (binary) or Categorical(p) (3 classes).

    The expected ECE is then only sampling noise: a bin with n_b points has
    |frequency - mean p| of order sd = sqrt(p (1 - p) / n_b) <= 0.5 / sqrt(n_b); with
    200,000 points in 15 bins (n_b ~ 13,000; ~10,000 for the 3-class top label)
    that is <~ 0.004-0.005 per bin, hence in the weighted sum. Over 20 seeds the largest
    value seen was 0.005; the tolerance 0.01 is twice that. Sharpening the same
    probabilities (over-confidence) gives an ECE many times the tolerance.
    """
    rng = np.random.default_rng(1)
    n = 200_000
    p1 = rng.random(n)
    y = (rng.random(n) < p1).astype(int)
    for method in ("top_label", "classwise"):
        assert expected_calibration_error(y, p1, method=method) < 0.01
    assert reliability_curve(y, p1)["ece"] < 0.01

    proba = rng.dirichlet(np.ones(3), size=n // 2)
    y3 = np.minimum((rng.random(n // 2)[:, None] > np.cumsum(proba, axis=1)).sum(axis=1), 2)
    for method in ("top_label", "classwise"):
        assert expected_calibration_error(y3, proba, method=method) < 0.01

    sharp = proba**3 / (proba**3).sum(axis=1, keepdims=True)
    assert expected_calibration_error(y3, sharp) > 0.05


# ------------------------------------------------------------- reliability curve
def test_reliability_curve_by_hand_and_defaults():
    t = reliability_curve(Y4, P4, n_bins=2)  # 3 classes: top-label
    assert t["confidence"] == "top" and t["positive_class"] is None
    np.testing.assert_array_equal(t["count"], [2, 2])
    np.testing.assert_allclose(t["mean_confidence"], [0.425, 0.70])
    np.testing.assert_allclose(t["frequency"], [0.5, 0.5])
    assert t["ece"] == pytest.approx(0.1375)

    t15 = reliability_curve([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3])
    assert t15["edges"].shape == (16,) and t15["count"].shape == (15,)
    assert t15["confidence"] == "positive" and t15["positive_class"] == 1
    # bins .1 -> 1, .3 -> 4, .6 -> 9, .8 -> 12 (of 15); the others are empty: NaN
    np.testing.assert_array_equal(np.flatnonzero(t15["count"]), [1, 4, 9, 12])
    assert np.isnan(t15["frequency"]).sum() == 11
    assert np.isnan(t15["mean_confidence"]).sum() == 11


def test_plotting_calibration_table_is_reliability_curve_with_10_bins():
    rng = np.random.default_rng(2)
    proba = rng.dirichlet(np.ones(3), size=50)
    y = rng.integers(0, 3, size=50)
    for kwargs in ({}, {"n_bins": 7}, {"confidence": "top"}):
        table = plotting.calibration_table(y, proba, **kwargs)
        curve = reliability_curve(y, proba, **{"n_bins": 10, **kwargs})
        assert table.keys() == curve.keys()
        for key in table:
            np.testing.assert_array_equal(table[key], curve[key])
    assert inspect.signature(plotting.calibration_table).parameters["n_bins"].default == 10


# ----------------------------------------------------------------- proper scores
def test_brier_scores_by_hand():
    proba = np.array([[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]])
    # row 0 (y = 0): .3^2 + .2^2 + .1^2 = .14; row 1 (y = 2): .2^2 + .3^2 + .5^2 = .38
    for score in (brier_score, multiclass_brier):  # 3 classes: the same sum
        assert score([0, 2], proba, classes=[0, 1, 2]) == pytest.approx((0.14 + 0.38) / 2)
        assert score([0, 1], [[1.0, 0.0], [0.0, 1.0]]) == 0.0
    # binary: mean((p - y)^2) of the second class, in [0, 1]; summed over classes, [0, 2]
    assert brier_score([0, 1], [[0.0, 1.0], [1.0, 0.0]]) == 1.0
    assert multiclass_brier([0, 1], [[0.0, 1.0], [1.0, 0.0]]) == 2.0
    assert brier_score([0, 1], [0.2, 0.6]) == pytest.approx((0.2**2 + 0.4**2) / 2)


def test_binary_brier_score_is_sklearns_brier_score_loss_and_multiclass_brier_twice_it():
    """The user-reported issue: on binary predictions ``brier_score`` gave twice
    ``sklearn.metrics.brier_score_loss`` (0.3075 where scikit-learn says 0.1537)."""
    rng = np.random.default_rng(3)
    p1 = rng.random(40)
    y01 = (rng.random(40) < 0.5).astype(int)
    y_str = np.where(y01 == 1, "yes", "no")
    expected = brier_score_loss(y01, p1)
    assert expected == pytest.approx(np.mean((p1 - y01) ** 2))
    for y in (y01, y_str, list(y_str)):  # 1-D proba: P(second class) = P(1) = P("yes")
        assert brier_score(y, p1) == pytest.approx(expected, rel=1e-12)
        assert brier_score(y, np.column_stack([1 - p1, p1])) == pytest.approx(expected)
        assert multiclass_brier(y, p1) == pytest.approx(2 * expected, rel=1e-12)
    assert brier_score_loss(y_str, p1, pos_label="yes") == pytest.approx(expected)
    # classes in another order: the columns follow it, the positive class is classes[1]
    assert brier_score(y_str, 1 - p1, classes=["yes", "no"]) == pytest.approx(expected)
    assert brier_score(y_str, p1, classes=["no", "yes"]) == pytest.approx(
        brier_score_loss(y_str, np.column_stack([1 - p1, p1]), labels=["no", "yes"])
    )


def test_multiclass_brier_scores_follow_sklearn():
    """scikit-learn >= 1.7 scores multi-class input: ``scale_by_half="auto"`` (its
    default) halves only binary scores, ``scale_by_half=False`` never does."""
    rng = np.random.default_rng(4)
    labels = np.array(["a", "b", "c", "d"])
    proba = rng.dirichlet(np.ones(4), size=30)
    y = labels[rng.integers(0, 4, size=30)]
    assert brier_score(y, proba, classes=labels) == pytest.approx(
        brier_score_loss(y, proba, labels=labels), rel=1e-12
    )
    assert multiclass_brier(y, proba, classes=labels) == pytest.approx(
        brier_score_loss(y, proba, labels=labels, scale_by_half=False), rel=1e-12
    )
    # binary 2-column input, against sklearn's two conventions
    y2 = labels[rng.integers(0, 2, size=30)]
    p2 = rng.dirichlet(np.ones(2), size=30)
    assert brier_score(y2, p2, classes=labels[:2]) == pytest.approx(
        brier_score_loss(y2, p2, labels=labels[:2]), rel=1e-12
    )
    assert multiclass_brier(y2, p2, classes=labels[:2]) == pytest.approx(
        brier_score_loss(y2, p2, labels=labels[:2], scale_by_half=False), rel=1e-12
    )


def test_negative_log_likelihood_by_hand_and_against_sklearn():
    # -(log .7 + log .5) / 2, natural log
    proba = np.array([[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]])
    got = negative_log_likelihood([0, 2], proba, classes=[0, 1, 2])
    assert got == pytest.approx(-(np.log(0.7) + np.log(0.5)) / 2)
    # 1-D binary: -(log(1 - .2) + log .6) / 2
    assert negative_log_likelihood([0, 1], [0.2, 0.6]) == pytest.approx(
        -(np.log(0.8) + np.log(0.6)) / 2
    )
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(4), size=30)
    y = rng.integers(0, 4, size=30)
    assert negative_log_likelihood(y, p, classes=np.arange(4)) == pytest.approx(
        log_loss(y, p, labels=np.arange(4))
    )
    # a zero probability for the true class is clipped (as in sklearn), not infinite
    assert np.isfinite(negative_log_likelihood([0, 1], [[1.0, 0.0], [1.0, 0.0]]))


# --------------------------------------------------------------- risk-coverage
def test_risk_coverage_curve_by_hand():
    y = np.array([1, 0, 1, 0, 1])
    p1 = np.array([0.9, 0.4, 0.3, 0.8, 0.55])
    # predictions 1 0 0 1 1 -> errors at points 2 and 3; uncertainty 1 - max:
    # .1 .4 .3 .2 .45 -> ranked 0, 3, 2, 1, 4 -> errors in that order 0 1 1 0 0
    rc = risk_coverage_curve(y, p1)
    np.testing.assert_allclose(rc["coverage"], [0.2, 0.4, 0.6, 0.8, 1.0])
    np.testing.assert_allclose(rc["risk"], [0, 1 / 2, 2 / 3, 2 / 4, 2 / 5])
    np.testing.assert_allclose(rc["threshold"], [0.1, 0.2, 0.3, 0.4, 0.45])
    assert rc["aurc"] == pytest.approx((0 + 1 / 2 + 2 / 3 + 2 / 4 + 2 / 5) / 5)  # 0.41333
    assert rc["risk"][-1] == pytest.approx(2 / 5)  # full coverage: the error rate


def test_risk_coverage_curve_with_a_given_uncertainty_breaks_ties_by_input_order():
    y = np.array([1, 0, 1, 0, 1])
    p1 = np.array([0.9, 0.4, 0.3, 0.8, 0.55])  # errors at points 2 and 3
    u = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    # stable order: 1, 4 (u = 0), then 0, 2, 3 (u = 1) -> errors 0 0 0 1 1
    rc = risk_coverage_curve(y, p1, uncertainty=u)
    np.testing.assert_allclose(rc["risk"], [0, 0, 0, 1 / 4, 2 / 5])
    np.testing.assert_array_equal(rc["threshold"], [0, 0, 1, 1, 1])
    assert rc["aurc"] == pytest.approx((1 / 4 + 2 / 5) / 5)  # 0.13
    # entropy as the score ranks like 1 - max for binary problems
    by_entropy = risk_coverage_curve(y, p1, uncertainty=predictive_entropy(p1))
    np.testing.assert_allclose(by_entropy["risk"], risk_coverage_curve(y, p1)["risk"])


# ---------------------------------------------------------------------- OOD AUROC
def test_ood_auroc():
    assert ood_auroc([0.1, 0.2, 0.3], [0.5, 0.9]) == 1.0  # separated
    assert ood_auroc([0.5, 0.9], [0.1, 0.2, 0.3]) == 0.0  # reversed
    assert ood_auroc([0.4, 0.4, 0.7], [0.4, 0.4, 0.7]) == 0.5  # identical
    # in .1 .2 .3, out .25 .9: out > in in 2 + 3 = 5 of 6 pairs
    assert ood_auroc([0.1, 0.2, 0.3], [0.25, 0.9]) == pytest.approx(5 / 6)
    # a tie counts one half: out .2 vs in .1 .2 -> (1 + 0.5) / 2
    assert ood_auroc([0.1, 0.2], [0.2]) == pytest.approx(0.75)


# ---------------------------------------------------------------- entropy and MI
def test_predictive_entropy_by_hand():
    h = predictive_entropy([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(h, [np.log(2), 0.0, np.log(3)])
    # a certain row has entropy +0.0, not the -0.0 of -(1 log 1 + 0 log 0)
    assert not np.signbit(predictive_entropy([[1.0, 0.0], [0.0, 1.0]])).any()
    # 1-D binary: p = .2 -> -(.2 log .2 + .8 log .8)
    assert predictive_entropy([0.2])[0] == pytest.approx(-(0.2 * np.log(0.2) + 0.8 * np.log(0.8)))


def test_mutual_information_by_hand_and_same_as_summarize_proba():
    draws = np.array([[[0.9, 0.1]], [[0.1, 0.9]]])  # (2 draws, 1 sample, 2 classes)
    h_draw = -(0.9 * np.log(0.9) + 0.1 * np.log(0.1))
    np.testing.assert_allclose(mutual_information(draws), [np.log(2) - h_draw])
    # draws that agree carry no epistemic uncertainty
    np.testing.assert_allclose(
        mutual_information(np.repeat(draws[:1], 5, axis=0)), [0.0], atol=1e-15
    )
    rng = np.random.default_rng(5)
    many = rng.dirichlet(np.ones(3), size=(20, 7))
    summary = summarize_proba(many)
    np.testing.assert_array_equal(mutual_information(many), summary["mutual_info"])
    np.testing.assert_array_equal(predictive_entropy(summary["mean"]), summary["entropy"])


# ---------------------------------------------------------------------- regression
def test_interval_coverage_by_hand():
    y = np.array([0.0, 1.0, 5.0, 2.0])
    # 0 in [-1, 1], 1 in [0, 2], 5 not in [0, 3], 2 in [2, 2] (closed)
    assert interval_coverage(y, [-1, 0, 0, 2], [1, 2, 3, 2]) == 0.75
    assert interval_coverage(y, -10.0, 10.0) == 1.0  # scalar bounds
    with pytest.raises(ValueError, match=r"lower must be <= upper.*1 of 4.*index 2"):
        interval_coverage(y, [0, 0, 4, 0], [1, 1, 3, 3])


def test_gaussian_nll_against_scipy():
    rng = np.random.default_rng(6)
    y, mu, sd = rng.normal(size=25), rng.normal(size=25), rng.uniform(0.1, 3, size=25)
    assert gaussian_nll(y, mu, sd) == pytest.approx(-stats.norm.logpdf(y, mu, sd).mean())
    assert gaussian_nll(y, 0.0, 2.0) == pytest.approx(-stats.norm.logpdf(y, 0, 2).mean())
    # by hand: y = mean, std = 1 -> 0.5 log(2 pi)
    assert gaussian_nll([3.0], [3.0], [1.0]) == pytest.approx(0.5 * np.log(2 * np.pi))


def test_crps_gaussian_by_hand_and_against_the_crps_integral():
    # y = mean: std * (2 phi(0) - 1 / sqrt(pi)) = std (sqrt 2 - 1) / sqrt(pi)
    assert crps_gaussian([1.0], [1.0], [2.0]) == pytest.approx(
        2 * (np.sqrt(2) - 1) / np.sqrt(np.pi)
    )
    # definition: integral of (F(x) - 1[x >= y])^2 dx
    for y, mu, sd in [(0.3, -0.2, 0.7), (4.0, 1.0, 1.5)]:
        below = integrate.quad(
            lambda x, m, s: stats.norm.cdf(x, m, s) ** 2, -np.inf, y, args=(mu, sd)
        )[0]
        above = integrate.quad(
            lambda x, m, s: stats.norm.sf(x, m, s) ** 2, y, np.inf, args=(mu, sd)
        )[0]
        assert crps_gaussian([y], [mu], [sd]) == pytest.approx(below + above, rel=1e-7)


def test_crps_ensemble_against_the_quadratic_formula():
    rng = np.random.default_rng(7)
    y = rng.normal(size=6)
    x = rng.normal(size=(6, 9))
    brute = np.mean(
        np.abs(x - y[:, None]).mean(axis=1)
        - 0.5 * np.abs(x[:, :, None] - x[:, None, :]).mean(axis=(1, 2))
    )
    assert crps_ensemble(y, x) == pytest.approx(brute, rel=1e-12)
    # by hand: draws -1, 1 at y = 0: E|X - y| = 1, E|X - X'| = (0 + 2 + 2 + 0) / 4 = 1
    assert crps_ensemble([0.0], [[-1.0, 1.0]]) == pytest.approx(0.5)
    # one draw: a point forecast, whose CRPS is the absolute error
    assert crps_ensemble([1.0, 2.0], [[4.0], [1.5]]) == pytest.approx((3 + 0.5) / 2)


def test_crps_ensemble_of_normal_draws_approaches_crps_gaussian():
    """4000 Normal draws per point, 200 points: the empirical-CDF CRPS exceeds the
    Normal's by E|X - X'| / (2 m) = std / (sqrt(pi) m) ~ 1e-4 (std <= 2) plus Monte Carlo
    noise, whose sd over 20 seeds was 7e-4 (largest |difference| 1.5e-3). Tolerance
    4e-3, about 6 sd."""
    rng = np.random.default_rng(8)
    n, m = 200, 4000
    mu, sd = rng.normal(size=n), rng.uniform(0.5, 2.0, size=n)
    y = mu + sd * rng.normal(size=n)
    draws = mu[:, None] + sd[:, None] * rng.normal(size=(n, m))
    assert crps_ensemble(y, draws) == pytest.approx(crps_gaussian(y, mu, sd), abs=4e-3)


# ----------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: expected_calibration_error(Y4, P4, n_bins=0), r"n_bins must be.*got 0"),
        (lambda: expected_calibration_error(Y4, P4, n_bins=2.5), r"n_bins must be.*2\.5"),
        (
            lambda: expected_calibration_error(Y4, P4, method="mce"),
            r"method must be one of.*'classwise'.*'mce'",
        ),
        (lambda: reliability_curve(Y4, P4, confidence="max"), "confidence must be one of"),
        (
            lambda: reliability_curve(Y4, P4, confidence="positive"),
            "confidence='positive' needs 2 classes",
        ),
        (
            lambda: expected_calibration_error(Y4[:3], P4),
            r"proba must have shape.*\(4, 3\) and \(3,\)",
        ),
        (lambda: expected_calibration_error(Y4, P4[None]), r"proba must have shape.*\(1, 4, 3\)"),
        (lambda: expected_calibration_error([], []), "empty"),
        (lambda: expected_calibration_error(Y4, P4 * 2), r"proba must hold.*\[0, 1\].*1\.6"),
        (
            lambda: expected_calibration_error(Y4, np.where(P4 == 0.1, np.nan, P4)),
            r"proba must hold finite",
        ),
        (
            lambda: expected_calibration_error(Y4, P4 + [0.01, 0, 0]),
            r"rows? .*proba.*sum to 1.*row \(0,\)",
        ),
        (
            lambda: expected_calibration_error(Y4, np.full((4, 2), 0.5)),
            r"proba has 2 columns but there are 3 classes \[0, 1, 2\]",
        ),
        (lambda: expected_calibration_error(Y4, P4[:, :1]), r"at least 2.*\(4, 1\)"),
        (lambda: expected_calibration_error(Y4, P4, classes=[0, 1, 1]), "distinct labels"),
        (lambda: brier_score(Y4, P4, classes=[0, 1, 7]), r"labels not in classes \[0, 1, 7\]"),
        (
            lambda: multiclass_brier(Y4, np.full((4, 2), 0.5)),
            r"proba has 2 columns but there are 3",
        ),
        (lambda: negative_log_likelihood([0, 1], [0.5, 1.5]), r"\[0, 1\]"),
        (
            lambda: risk_coverage_curve(Y4, P4, uncertainty=[0.1, 0.2]),
            r"uncertainty must have shape \(4,\).*\(2,\)",
        ),
        (
            lambda: risk_coverage_curve(Y4, P4, uncertainty=[0.1, np.inf, 0, 0]),
            "uncertainty contains NaN or infinity",
        ),
        (lambda: ood_auroc([], [0.3]), r"uncertainty_in must have shape.*\(0,\)"),
        (lambda: ood_auroc([0.1], [[0.3]]), r"uncertainty_out must have shape.*\(1, 1\)"),
        (lambda: predictive_entropy([[0.5, 0.6]]), "sum to 1"),
        (lambda: mutual_information(P4), r"proba_draws must have shape.*\(4, 3\)"),
        (lambda: mutual_information(-P4[None]), r"proba_draws must hold.*\[0, 1\]"),
        (
            lambda: interval_coverage([1.0, 2.0], [0.0], [3.0, 3.0]),
            r"lower must have shape \(2,\).*\(1,\)",
        ),
        (lambda: interval_coverage([[1.0, 2.0]], 0.0, 3.0), r"y_true must be.*\(1, 2\)"),
        (lambda: interval_coverage([1.0, np.nan], 0.0, 3.0), "y_true contains NaN"),
        (
            lambda: gaussian_nll([1.0, 2.0], [0.0, 0.0], [1.0, 0.0]),
            r"std must be > 0.*1 value.*0\.0",
        ),
        (lambda: crps_gaussian([1.0, 2.0], [0.0, 0.0], -1.0), r"std must be > 0"),
        (lambda: crps_gaussian([1.0, 2.0], ["a", "b"], 1.0), "mean must be an array of numbers"),
        (
            lambda: crps_ensemble([1.0, 2.0], np.zeros((3, 5))),
            r"samples must have shape .*\(2, m\).*\(3, 5\)",
        ),
        (lambda: crps_ensemble([1.0, 2.0], np.zeros(2)), r"samples must have shape.*\(2,\)"),
        (lambda: crps_ensemble([1.0], [[np.nan, 1.0]]), "samples contains NaN"),
    ],
)
def test_bad_input_raises_a_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_nan_probability_is_named_with_its_row_not_hidden_in_a_range():
    with pytest.raises(ValueError, match=r"got nan at row 0, column 0 \(1 NaN"):
        expected_calibration_error([0, 1], [[np.nan, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"got inf at index 1"):
        brier_score([0, 1], [0.5, np.inf])
    with pytest.raises(ValueError, match=r"proba_draws .*got nan at position \(0, 1, 0\)"):
        mutual_information([[[0.5, 0.5], [np.nan, 0.5]]])


@pytest.mark.parametrize(
    "y",
    [
        pytest.param(["a", None, "b"], id="None-among-strings"),
        pytest.param(np.array([1, None, 0], dtype=object), id="None-among-ints"),
        pytest.param([1.0, np.nan, 0.0], id="NaN"),
    ],
)
@pytest.mark.parametrize("with_classes", [False, True])
@pytest.mark.parametrize(
    "metric",
    [
        negative_log_likelihood,
        brier_score,
        expected_calibration_error,
        reliability_curve,
        risk_coverage_curve,
        classification_summary,
    ],
)
def test_missing_labels_are_refused_naming_y_true_and_their_position(y, with_classes, metric):
    import pandas as pd

    classes = None
    if with_classes:
        classes = ["a", "b"] if isinstance(y[0], str) else [0, 1]
    for labels in (y, pd.Series(y)):
        with pytest.raises(ValueError, match=r"y_true holds 1 missing label.*position\(s\) 1"):
            metric(labels, [[0.5, 0.5]] * 3, classes=classes)


def test_labels_that_cannot_be_compared_are_refused_clearly():
    with pytest.raises(ValueError, match="classes holds 1 missing label"):
        negative_log_likelihood([0, 1], [0.5, 0.5], classes=[0, None])
    with pytest.raises(ValueError, match="y_true must hold labels of one kind"):
        negative_log_likelihood(np.array([0, "a"], dtype=object), [0.5, 0.5])
    with pytest.raises(ValueError, match="cannot be compared with classes"):
        negative_log_likelihood(np.array([0, 1], dtype=object), [0.5, 0.5], classes=["a", "b"])


def test_rows_summing_to_one_within_1e_6_are_accepted():
    off = P4 + np.array([5e-7, 0.0, 0.0])
    assert expected_calibration_error(Y4, off, n_bins=2) == pytest.approx(0.1375, abs=1e-6)
    assert np.isfinite(negative_log_likelihood(Y4, off, classes=[0, 1, 2]))


def test_inputs_are_not_modified():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 3, size=20)
    proba = rng.dirichlet(np.ones(3), size=20)
    draws = rng.dirichlet(np.ones(3), size=(4, 20))
    u = rng.random(20)
    yr, mu, sd, samples = (
        rng.normal(size=20),
        rng.normal(size=20),
        rng.random(20) + 0.1,
        rng.normal(size=(20, 6)),
    )
    lo, hi = mu - sd, mu + sd
    arrays = [y, proba, draws, u, yr, mu, sd, samples, lo, hi]
    copies = [a.copy() for a in arrays]
    for a in arrays:  # any write would raise
        a.flags.writeable = False
    expected_calibration_error(y, proba)
    expected_calibration_error(y, proba, method="classwise")
    reliability_curve(y, proba)
    plotting.calibration_table(y, proba)
    negative_log_likelihood(y, proba)
    brier_score(y, proba)
    multiclass_brier(y, proba)
    risk_coverage_curve(y, proba)
    risk_coverage_curve(y, proba, uncertainty=u)
    ood_auroc(u, sd)
    predictive_entropy(proba)
    mutual_information(draws)
    interval_coverage(yr, lo, hi)
    gaussian_nll(yr, mu, sd)
    crps_gaussian(yr, mu, sd)
    crps_ensemble(yr, samples)
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(a, c)


# -------------------------------------------------------------------- summaries
def test_classification_summary_by_hand_multiclass():
    s = classification_summary(Y4, P4, n_bins=2)
    assert list(s) == ["n", "accuracy", "nll", "brier", "multiclass_brier", "ece", "aurc"]
    assert s["n"] == 4 and type(s["n"]) is int
    assert all(type(v) is float for k, v in s.items() if k != "n")
    assert s["accuracy"] == 0.5  # rows 0 and 2 right (see P4)
    assert s["nll"] == pytest.approx(-np.log([0.40, 0.35, 0.80, 0.20]).mean())
    # sum_k (p_k - onehot_k)^2 per row: .54, .665, .06, 1.04
    assert s["brier"] == pytest.approx((0.54 + 0.665 + 0.06 + 1.04) / 4)
    assert s["multiclass_brier"] == s["brier"]  # 3 classes: scikit-learn sums too
    # bin 0: conf .425, acc .5; bin 1: conf .7, acc .5
    assert s["ece"] == pytest.approx(0.5 * 0.075 + 0.5 * 0.2)
    # ranked by 1 - max p (.2, .4, .55, .6): right, wrong, wrong, right
    assert s["aurc"] == pytest.approx((0 + 1 / 2 + 2 / 3 + 2 / 4) / 4)


def test_classification_summary_by_hand_binary_with_string_classes():
    y = np.array(["no", "yes", "yes", "no"])
    p1 = [0.1, 0.8, 0.4, 0.3]  # P("yes"): the 0.4 is wrong
    s = classification_summary(y, p1, classes=["no", "yes"], n_bins=2)
    assert s["n"] == 4 and s["accuracy"] == 0.75
    assert s["nll"] == pytest.approx(-np.log([0.9, 0.8, 0.4, 0.7]).mean())
    assert s["brier"] == pytest.approx(np.mean([0.01, 0.04, 0.36, 0.09]))  # sklearn's
    assert s["brier"] == pytest.approx(brier_score_loss(y, p1, pos_label="yes"))
    assert s["multiclass_brier"] == pytest.approx(2 * s["brier"])
    assert s["ece"] == pytest.approx(0.0)  # one bin: confidence .75, accuracy .75
    assert s["aurc"] == pytest.approx(0.25 / 4)  # the error is the least certain point
    # the default 15 bins are those of expected_calibration_error
    assert classification_summary(Y4, P4)["ece"] == expected_calibration_error(Y4, P4)


def test_regression_summary_by_hand():
    y, mu, sd = [0.0, 1.0, 2.0, 4.0], [0.0, 2.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]
    s = regression_summary(y, mu, sd)
    assert list(s) == ["n", "rmse", "mae", "nll", "crps"]
    assert s["n"] == 4 and type(s["n"]) is int
    assert s["rmse"] == pytest.approx(np.sqrt((0 + 1 + 0 + 4) / 4))
    assert s["mae"] == pytest.approx((0 + 1 + 0 + 2) / 4)
    assert s["nll"] == pytest.approx(-stats.norm.logpdf(y, mu, sd).mean())
    assert s["crps"] == crps_gaussian(y, mu, sd)

    lower, upper = [-1.0, 0.0, 1.0, 3.0], [1.0, 1.5, 3.0, 3.5]  # the last misses y = 4
    s = regression_summary(y, mu, sd, lower=lower, upper=upper)
    assert list(s) == ["n", "rmse", "mae", "nll", "crps", "coverage", "mean_interval_width"]
    assert s["coverage"] == 0.75
    assert s["mean_interval_width"] == pytest.approx((2 + 1.5 + 2 + 0.5) / 4)
    assert all(type(v) is float for k, v in s.items() if k != "n")


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: classification_summary(Y4, P4, n_bins=0), r"n_bins must be.*got 0"),
        (lambda: classification_summary(Y4[:3], P4), r"proba must have shape"),
        (lambda: classification_summary(Y4, P4, classes=[0, 1, 7]), "labels not in classes"),
        (
            lambda: regression_summary([1.0, 2.0], [1.0, 2.0], 1.0, lower=[0.0, 0.0]),
            "lower and upper must be given together; got lower without upper",
        ),
        (
            lambda: regression_summary([1.0, 2.0], [1.0, 2.0], 1.0, upper=[3.0, 3.0]),
            "got upper without lower",
        ),
        (lambda: regression_summary([1.0, 2.0], [1.0], 1.0), r"mean must have shape \(2,\)"),
        (lambda: regression_summary([1.0, 2.0], [1.0, 2.0], 0.0), "std must be > 0"),
        (
            lambda: regression_summary([1.0, 2.0], [1.0, 2.0], 1.0, lower=3.0, upper=0.0),
            "lower must be <= upper",
        ),
    ],
)
def test_summaries_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_summaries_do_not_modify_their_inputs():
    arrays = [
        Y4.copy(),
        P4.copy(),
        np.array([0.0, 1.0]),
        np.array([0.5, 0.5]),
        np.array([1.0, 1.0]),
        np.array([-1.0, 0.0]),
        np.array([1.0, 2.0]),
    ]
    copies = [a.copy() for a in arrays]
    for a in arrays:
        a.flags.writeable = False
    classification_summary(arrays[0], arrays[1])
    regression_summary(*arrays[2:5], lower=arrays[5], upper=arrays[6])
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(a, c)


# ------------------------------------------------------------- ECE consistency
def _binomial_ece_floor(n: int, p: float) -> float:
    """E|k/n - p| for k ~ Binomial(n, p): a calibrated model's ECE when every point
    has confidence p (one bin)."""
    k = np.arange(n + 1)
    return float(np.sum(stats.binom.pmf(k, n, p) * np.abs(k / n - p)))


@pytest.mark.parametrize("n, p", [(4, 0.75), (30, 0.9), (7, 0.55)])
def test_ece_consistency_floor_is_the_binomial_expectation(n, p):
    """Every point at confidence p: the draws' mean ECE is E|k/n - p| (within 5
    standard errors of 20,000 draws)."""
    y = np.r_[np.ones(n - 1, int), 0]
    r = metrics.ece_consistency(y, np.full(n, p), n_bins=15, n_resamples=20_000, random_state=1)
    exact = _binomial_ece_floor(n, p)
    se = np.sqrt(
        np.sum(
            stats.binom.pmf(np.arange(n + 1), n, p)
            * (np.abs(np.arange(n + 1) / n - p) - exact) ** 2
        )
        / 20_000
    )
    assert abs(r["expected_if_calibrated"] - exact) < 5 * se
    assert r["ece"] == expected_calibration_error(y, np.full(n, p), n_bins=15)
    assert r["excess"] == pytest.approx(r["ece"] - r["expected_if_calibrated"])


def test_ece_consistency_draws_each_label_from_its_row():
    """Three classes at [0.5, 0.3, 0.2]: the top class (0) is drawn with probability 0.5,
    so two points' floor is E|k/2 - 0.5| = 0.25 (0.34 if class 0 came with 0.2)."""
    proba = np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]])
    r = metrics.ece_consistency(
        [0, 1], proba, classes=[0, 1, 2], n_resamples=20_000, random_state=0
    )
    assert r["expected_if_calibrated"] == pytest.approx(0.25, abs=0.01)
    # classwise: the same draws scored per class
    c = metrics.ece_consistency(
        [0, 1], proba, classes=[0, 1, 2], method="classwise", n_resamples=2000, random_state=0
    )
    assert c["ece"] == expected_calibration_error(
        [0, 1], proba, classes=[0, 1, 2], method="classwise"
    )


def test_ece_consistency_tells_calibrated_from_miscalibrated():
    """Labels drawn from the predictions: a p-value far from 0. Confidence 0.95 where
    only half are right: the smallest p-value 1 / (1 + n_resamples)."""
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, 400)
    y = (rng.random(400) < p).astype(int)
    calibrated = metrics.ece_consistency(y, p, n_resamples=500, random_state=4)
    assert calibrated["p_value"] > 0.01
    wrong = metrics.ece_consistency(y, np.full(400, 0.95), n_resamples=500, random_state=4)
    assert wrong["p_value"] == 1 / 501 and wrong["excess"] > 0.3
    # seeded: the same draws; the inputs untouched
    again = metrics.ece_consistency(y, p, n_resamples=500, random_state=4)
    assert again == calibrated
    assert np.array_equal(p, np.random.default_rng(3).uniform(0.05, 0.95, 400))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_resamples": 0}, "n_resamples"),
        ({"method": "adaptive"}, "method"),
        ({"n_bins": -1}, "n_bins"),
    ],
)
def test_ece_consistency_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        metrics.ece_consistency([0, 1], [0.2, 0.7], **kwargs)


def test_labels_that_are_arrays_are_refused_not_called_missing():
    """An element whose != has no truth value had been counted as a missing label."""
    y = np.empty(2, dtype=object)
    y[0], y[1] = np.array([1, 2]), np.array([0, 1])
    with pytest.raises(ValueError, match="one label per sample; position 0"):
        negative_log_likelihood(y, [[0.5, 0.5], [0.5, 0.5]])


def test_binned_coverage_finds_intervals_that_ignore_a_growing_spread():
    """Noise that grows with the predicted value, intervals of one width: overall
    coverage near 90 %, but far above it in the lowest fifth and below it in the top
    one; intervals that follow the spread cover about 90 % in every fifth."""
    rng = np.random.default_rng(0)
    mean = rng.uniform(0, 10, 20_000)
    sd = 0.1 + 0.3 * mean
    y = mean + sd * rng.standard_normal(mean.size)
    width = 1.645 * np.sqrt(np.mean(sd**2))
    flat = metrics.binned_coverage(y, mean, mean - width, mean + width)
    assert flat["count"] == [4000] * 5 and flat["low"] == sorted(flat["low"])
    assert flat["coverage"][0] > 0.99 and flat["coverage"][-1] < 0.75
    follows = metrics.binned_coverage(y, mean, mean - 1.645 * sd, mean + 1.645 * sd)
    np.testing.assert_allclose(follows["coverage"], 0.9, atol=0.015)
    with pytest.raises(ValueError, match="n_bins"):
        metrics.binned_coverage(y, mean, mean - 1, mean + 1, n_bins=0)
