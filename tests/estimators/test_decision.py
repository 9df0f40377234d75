"""Cost-aware decisions for two classes (pymc_bnn.estimators._decision): the threshold against its
definition, the curves against scikit-learn's, and the command line on an imbalanced
table shaped like the road-accident one (a 5 % positive class)."""

import numpy as np
import pytest
from sklearn.metrics import precision_score, recall_score

from pymc_bnn.estimators._decision import (
    cost_threshold,
    expected_cost,
    one_class_message,
    threshold_curves,
)


def test_the_cost_threshold_minimises_the_expected_cost_of_calibrated_probabilities():
    rng = np.random.default_rng(0)
    p = rng.beta(0.5, 6.0, 200_000)  # calibrated: y ~ Bernoulli(p), few positives
    y = rng.random(p.size) < p
    for ratio in (1.0, 4.0, 19.0):
        t = cost_threshold(ratio)
        grid = np.linspace(0.01, 0.99, 99)
        costs = [expected_cost(y, p, g, ratio) for g in grid]
        assert expected_cost(y, p, t, ratio) <= min(costs) + 2e-3
    with pytest.raises(ValueError, match="positive number"):
        cost_threshold(0.0)


def test_expected_cost_and_curves_are_their_definitions():
    rng = np.random.default_rng(1)
    p = rng.random(300)
    y = rng.random(300) < p
    pred = p >= 0.3
    fn, fp = np.sum(y & ~pred), np.sum(~y & pred)
    assert expected_cost(y, p, 0.3, 5.0) == pytest.approx((5 * fn + fp) / 300)
    curves = threshold_curves(y, p, [0.2, 0.5, 0.8])
    for k, t in enumerate((0.2, 0.5, 0.8)):
        assert curves["precision"][k] == pytest.approx(precision_score(y, p >= t))
        assert curves["recall"][k] == pytest.approx(recall_score(y, p >= t))
    assert np.isnan(threshold_curves(y, p, [1.5])["precision"][0])


def test_one_class_predictions_get_a_note_only_when_the_other_class_had_a_chance():
    classes = ["no", "yes"]
    p = np.array([0.02, 0.3, 0.1])
    message = one_class_message(np.array(["no"] * 3), classes, p)
    assert "every row predicted 'no'" in message and "30%" in message
    assert len("note: " + message) <= 100
    assert one_class_message(np.array(["no"] * 3), classes, np.full(3, 0.01)) is None
    assert one_class_message(np.array(["no", "yes", "no"]), classes, p) is None
