"""The classifier's linear part (:mod:`pymc_bnn.linear_part`): a Bayesian logistic
regression stacked with the network, its share of the draws chosen on the held-out
folds; the stacked predictive is the draws of both."""

import pickle

import numpy as np
import pytest

import pymc_bnn.fit_settings as fit_settings
import pymc_bnn.linear_part as LP
from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.composed_draws import linear_share
from pymc_bnn.fit_summary import describe
from pymc_bnn.fit_settings import MIXTURE
from pymc_bnn.predictive import PosteriorPredictive, summarize_proba
from pymc_bnn.spec import NetworkSpec


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
        total = sum(s * -np.log((1 - w) * np.exp(-x) + w * np.exp(-y)).sum()
                    for x, y, s in zip(a, b, scales))
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
    spec = NetworkSpec(n_features=2, hidden_layer_sizes=(4,), n_classes=n_classes,
                       activation="tanh", prior_sigma=1.0, n_rows=10, batch_size=None)
    out = 1 if n_classes == 2 else n_classes
    network = tuple((rng.normal(size=(6, i, o)), rng.normal(size=(6, o)))
                    for i, o in spec.layer_shapes)
    linear = ((rng.normal(size=(3, 2, out)), rng.normal(size=(3, out))),)
    return spec, PosteriorPredictive(spec, network), PosteriorPredictive(
        LP.linear_spec(spec), linear)


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
        stacked.log_density(X, y),
        np.log(expected[:, np.arange(7), y].mean(axis=0)), rtol=1e-6)
    with pytest.raises(ValueError, match="no groups"):
        stacked.sample_proba(X, groups=np.zeros(7, dtype=int))


@pytest.fixture(scope="module")
def linear_table():
    """A logistic-regression table: the linear model is the right one."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 4))
    y = rng.random(240) < 1 / (1 + np.exp(-(X @ np.array([1.5, -1.0, 0.5, 0.0]))))
    return X, np.where(y, "yes", "no")


def fitted(X, y, **kw):
    return BayesianMLPClassifier(**{"hidden_layer_sizes": (3,), "n_draws": 40,
                                    "random_state": 2, **kw}).fit(X, y)


@pytest.fixture(scope="module")
def stacked(linear_table):
    return fitted(*linear_table)


def test_auto_stacks_a_linear_part_and_its_draws_are_a_linear_model_s(linear_table,
                                                                       stacked):
    """The slow, obvious path: the network's draws are an explicit mixture's with the
    same seeds and temperatures, the linear part's those of a Laplace fit of a network
    without hidden layers at the linear part's temperature."""
    X, y = linear_table
    record = stacked.linear_part_
    assert stacked.inference_ == MIXTURE and record is not None
    n_linear = record["n_draws"]
    assert 0 < n_linear <= 38 and record["weight"] == n_linear / 40
    assert record["weights"] == list(LP.LINEAR_WEIGHTS)
    assert min(record["scores"]) < record["scores"][0]  # the folds preferred it
    mixture = fitted(X, y, inference=MIXTURE, n_draws=40 - n_linear)
    assert mixture.posterior_temperature_ == stacked.posterior_temperature_
    linear = fitted(X, y, hidden_layer_sizes=(), inference="laplace", n_draws=n_linear,
                    posterior_temperature=record["temperature"])
    draws = stacked.predictive_.sample_proba(X)
    np.testing.assert_allclose(draws[:40 - n_linear], mixture.predictive_.sample_proba(X),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(draws[40 - n_linear:], linear.predictive_.sample_proba(X),
                               rtol=1e-6, atol=1e-9)
    share = n_linear / 40
    np.testing.assert_allclose(
        stacked.predict_proba(X),
        (1 - share) * mixture.predict_proba(X) + share * linear.predict_proba(X), rtol=1e-6)
    assert any(line.startswith(f"predictions: {share:.0%} of the draws from a linear model")
               for line in describe(stacked))


def test_the_stacked_fit_is_seeded_saved_and_loaded(linear_table, stacked, tmp_path):
    X, y = linear_table
    np.testing.assert_array_equal(fitted(X, y).predict_proba(X), stacked.predict_proba(X))
    back = BayesianMLPClassifier.load(stacked.save(tmp_path / "stacked.nc"))
    assert back.linear_part_ == stacked.linear_part_
    assert isinstance(back.predictive_, LP.StackedPredictive)
    np.testing.assert_array_equal(back.predict_proba(X), stacked.predict_proba(X))
    pickled = pickle.loads(pickle.dumps(stacked))
    np.testing.assert_array_equal(pickled.predict_proba(X), stacked.predict_proba(X))
    # the command line's info says it
    from click.testing import CliRunner

    from pymc_bnn.cli import cli

    out = CliRunner().invoke(cli, ["info", str(tmp_path / "stacked.nc")]).output
    share = stacked.linear_part_["weight"]
    assert f"linear part: {share:.0%} of the draws from a Bayesian logistic regression" in out
    assert "mixture: half the network's draws from ADVI" in out


def test_draws_of_another_number_keep_every_part_in_its_share(linear_table, stacked,
                                                              tmp_path):
    """``sample_proba(n_draws=k)``: fresh draws of every part in the fit's shares (the
    slow path: an explicit mixture and a linear model fitted alone with the same seeds,
    for ``k`` draws in all); a loaded model thins its stored draws, each part in its
    share; a mixture needs two draws."""
    X, y = linear_table
    record = stacked.linear_part_
    np.testing.assert_array_equal(stacked.sample_proba(X, n_draws=40),
                                  stacked.predictive_.sample_proba(X))
    # the chosen share (the effective one, ``weight``, is rounded to the fit's draws)
    share = LP.LINEAR_WEIGHTS[int(np.argmin(record["scores"]))]
    n_linear = linear_share(share, 80)
    draws = stacked.sample_proba(X, n_draws=80)
    assert draws.shape[0] == 80 and n_linear > 0
    mixture = fitted(X, y, inference=MIXTURE, n_draws=80 - n_linear)
    linear = fitted(X, y, hidden_layer_sizes=(), inference="laplace", n_draws=n_linear,
                    posterior_temperature=record["temperature"])
    np.testing.assert_allclose(draws[:80 - n_linear], mixture.predictive_.sample_proba(X),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(draws[80 - n_linear:], linear.predictive_.sample_proba(X),
                               rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="at least 2 draws"):
        stacked.sample_proba(X, n_draws=1)
    back = BayesianMLPClassifier.load(stacked.save(tmp_path / "thin.nc"))
    stored, thinned = back.sample_proba(X), back.sample_proba(X, n_draws=20)
    n_stored = record["n_draws"]
    n_thin = linear_share(n_stored / 40, 20)  # the stored share, two network draws kept
    assert thinned.shape[0] == 20 and n_thin > 0
    for draw, part in ((thinned[:20 - n_thin], stored[:40 - n_stored]),
                       (thinned[20 - n_thin:], stored[40 - n_stored:])):
        for one in draw:  # each thinned draw is one of that part's stored draws
            assert np.any(np.all(np.isclose(part, one, rtol=0, atol=1e-9), axis=(1, 2)))
    with pytest.raises(ValueError, match="exceeds the 40 stored"):
        back.sample_proba(X, n_draws=41)


def test_no_share_is_the_network_alone_bit_for_bit(linear_table, monkeypatch):
    X, y = linear_table
    monkeypatch.setattr(fit_settings, "choose_linear_weight",
                        lambda *a, **kw: (0.0, np.zeros(len(LP.LINEAR_WEIGHTS))))
    alone = fitted(X, y)
    assert alone.linear_part_ is None and not isinstance(alone.predictive_,
                                                         LP.StackedPredictive)
    np.testing.assert_array_equal(alone.predict_proba(X),
                                  fitted(X, y, inference=MIXTURE).predict_proba(X))


@pytest.mark.parametrize("kwargs", [
    {"inference": MIXTURE},  # an explicit mixture is what was asked for
    {"inference": "advi"},
    {"posterior_temperature": 1.0},  # no folds to choose the share on
])
def test_the_linear_part_is_fit_only_by_auto_with_folds(linear_table, kwargs, monkeypatch):
    X, y = linear_table
    calls = []
    monkeypatch.setattr(fit_settings, "choose_linear_weight",
                        lambda *a, **kw: calls.append(1))
    clf = fitted(X[:120], y[:120], **kwargs)
    assert clf.linear_part_ is None and not calls


def test_after_the_check_drops_the_mixture_the_linear_part_stacks_with_advi_alone(
        linear_table, monkeypatch):
    """Where the held-out check keeps ADVI alone, the network's scores for the share are
    ADVI's at its own temperature, and its draws are an ADVI fit's."""
    X, y = linear_table
    monkeypatch.setattr(fit_settings, "mixture_difference", lambda *a, **kw: (0.6, 0.5, 0.01))
    seen = []
    real = fit_settings.choose_linear_weight
    monkeypatch.setattr(fit_settings, "choose_linear_weight",
                        lambda net, lin, scales: seen.append(net) or real(net, lin, scales))
    clf = fitted(X, y)
    assert clf.inference_ == "advi" and clf.mixture_ is None
    n_linear = clf.linear_part_["n_draws"]
    advi = fitted(X, y, inference="advi", n_draws=40 - n_linear)
    assert advi.posterior_temperature_ == clf.posterior_temperature_
    np.testing.assert_allclose(clf.predictive_.sample_proba(X)[:40 - n_linear],
                               advi.predictive_.sample_proba(X), rtol=1e-6, atol=1e-9)
    # the network's held-out rows: ADVI's at its chosen temperature, fold by fold
    k = clf.temperature_selection_.temperatures.index(clf.posterior_temperature_)
    np.testing.assert_allclose(sum(r.sum() for r in seen[0]) / len(y),
                               clf.temperature_selection_.scores[k], rtol=1e-9)
