"""The former default's linear part (:mod:`pymc_bnn.predictive._linear`): a Bayesian logistic
regression stacked with the network, its share chosen on held-out rows; the stacked
predictive (still what a model saved with one loads into) is the draws of both."""

import numpy as np
import pytest

import pymc_bnn.predictive._linear as LP
from pymc_bnn.network.spec import NetworkSpec
from pymc_bnn.predictive._predictive import PosteriorPredictive, summarize_proba


def test_the_weight_is_the_brute_force_stacking_optimum():
    """Every share by hand: the mixture density ``(1 - w) e^-a + w e^-b`` of each row,
    the folds weighted by their scale."""
    rng = np.random.default_rng(0)
    a = [rng.exponential(0.5, 40), rng.exponential(0.5, 30)]
    b = [rng.exponential(0.5, 40), rng.exponential(0.5, 30)]
    scales = [1.0, 2.0]
    weight, scores = LP.choose_linear_weight(a, b, scales)
    by_hand = []
    for w in LP.LINEAR_WEIGHTS:
        total = sum(
            s * -np.log((1 - w) * np.exp(-x) + w * np.exp(-y)).sum()
            for x, y, s in zip(a, b, scales)
        )
        by_hand.append(total / (40 + 2 * 30))
    np.testing.assert_allclose(scores, by_hand, rtol=1e-12)
    assert weight == LP.LINEAR_WEIGHTS[int(np.argmin(by_hand))]
    # the ends are the network alone and the linear model alone
    np.testing.assert_allclose(scores[0], (a[0].sum() + 2 * a[1].sum()) / 100, rtol=1e-12)
    np.testing.assert_allclose(scores[-1], (b[0].sum() + 2 * b[1].sum()) / 100, rtol=1e-12)
    # a linear model that is far worse everywhere gets no share
    assert LP.choose_linear_weight(a, [x + 5 for x in a], scales)[0] == 0.0
    with pytest.raises(ValueError, match="different rows"):
        LP.choose_linear_weight(a, [b[0], b[1][:5]], scales)


def _predictives(n_classes=3):
    rng = np.random.default_rng(1)
    spec = NetworkSpec(
        n_features=2,
        hidden_layer_sizes=(4,),
        n_classes=n_classes,
        activation="tanh",
        prior_sigma=1.0,
        n_rows=10,
        batch_size=None,
    )
    out = 1 if n_classes == 2 else n_classes
    network = tuple(
        (rng.normal(size=(6, i, o)), rng.normal(size=(6, o))) for i, o in spec.layer_shapes
    )
    linear = ((rng.normal(size=(3, 2, out)), rng.normal(size=(3, out))),)
    return (
        spec,
        PosteriorPredictive(spec, network),
        PosteriorPredictive(LP.linear_spec(spec), linear),
    )


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_stacked_predictive_is_the_draws_of_both(n_classes, monkeypatch):
    spec, network, linear = _predictives(n_classes)
    stacked = LP.StackedPredictive(spec, network.weights, linear=linear)
    calls = []
    original = PosteriorPredictive._chunks

    def counting(self, *args, **kwargs):
        calls.append(self.spec.hidden_layer_sizes)
        yield from original(self, *args, **kwargs)

    monkeypatch.setattr(PosteriorPredictive, "_chunks", counting)
    X = np.random.default_rng(2).normal(size=(7, 2))
    draws = stacked.sample_proba(X)
    assert () in calls  # the linear part's draws were computed by its own predictive
    expected = np.concatenate([network.sample_proba(X), linear.sample_proba(X)])
    assert stacked.n_draws == 9 and draws.shape == (9, 7, n_classes)
    np.testing.assert_allclose(draws, expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(stacked.mean_proba(X), expected.mean(axis=0), rtol=1e-6)
    for key, value in summarize_proba(expected).items():
        np.testing.assert_allclose(stacked.summary(X)[key], value, rtol=1e-6, atol=1e-9)
    y = np.arange(7) % n_classes
    np.testing.assert_allclose(
        stacked.log_density(X, y), np.log(expected[:, np.arange(7), y].mean(axis=0)), rtol=1e-6
    )
    with pytest.raises(ValueError, match="no groups"):
        stacked.sample_proba(X, groups=np.zeros(7, dtype=int))
