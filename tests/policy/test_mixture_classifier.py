"""The classifier's ADVI + Laplace mixture (``inference="advi+laplace"``, and what
``inference="auto"`` fits where it is affordable): half the predictive draws are
ADVI's (through the network), half Laplace's (through the network linearised at the
MAP), the halves' temperatures cross-fitted together; ``tests/policy/test_mixture_check.py``
has that choice and the held-out check against ADVI alone."""

import numpy as np
import pytest
from sklearn.datasets import make_moons

import pymc_bnn.predictive._predictive as P
from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.estimators._classifier import AUTO_MIXTURE_MAX_ROWS, mixture_affordable
from pymc_bnn.inference.laplace import FIRST_LINEARIZED, LINEARIZATION_GROUP
from pymc_bnn.policy._settings import MIXTURE


@pytest.fixture(scope="module")
def data():
    X, y = make_moons(90, noise=0.25, random_state=3)
    return X, np.where(y == 1, "b", "a")  # string labels: decoded as any classifier's


def fitted(X, y, **kw):
    return BayesianMLPClassifier((3,), **{"n_draws": 40, "random_state": 5, **kw}).fit(X, y)


@pytest.fixture(scope="module")
def mixture(data):
    # explicit: "auto" may stack a linear part too (tests/predictive/test_linear_part.py)
    return fitted(*data, inference=MIXTURE)


def test_the_mixture_s_probabilities_are_the_mean_of_its_halves(data, mixture):
    """The slow, obvious path: the ADVI and the Laplace estimators fitted on their own
    with the same seeds and half the draws each; the mixture's probabilities are the
    mean of theirs (the same fits and draws, at the temperatures the mixture chose for
    its halves together: ``tests/policy/test_mixture_check.py``)."""
    X, y = data
    assert mixture.inference_ == MIXTURE
    assert mixture.mixture_["methods"] == ["advi", "laplace"]
    assert mixture.mixture_["n_draws"] == [20, 20]
    advi = fitted(
        X, y, inference="advi", n_draws=20, posterior_temperature=mixture.posterior_temperature_
    )
    laplace = fitted(
        X,
        y,
        inference="laplace",
        n_draws=20,
        posterior_temperature=mixture.mixture_["laplace_temperature"],
    )
    assert mixture.prior_sigma_ == advi.prior_sigma_
    np.testing.assert_allclose(
        mixture.predict_proba(X),
        0.5 * (advi.predict_proba(X) + laplace.predict_proba(X)),
        rtol=1e-6,
        atol=1e-9,
    )
    draws = mixture.predictive_.sample_proba(X)
    np.testing.assert_allclose(draws[:20], advi.predictive_.sample_proba(X), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(
        draws[20:], laplace.predictive_.sample_proba(X), rtol=1e-6, atol=1e-9
    )


def test_the_mixture_path_is_taken_and_its_summaries_are_the_draws(data, mixture, monkeypatch):
    X, _ = data
    calls = []
    original = P.PosteriorPredictive._mixture_chunks

    def counting(self, *args, **kwargs):
        calls.append(1)
        yield from original(self, *args, **kwargs)

    monkeypatch.setattr(P.PosteriorPredictive, "_mixture_chunks", counting)
    predictive = mixture.predictive_
    assert predictive.linearized_from == 20 and predictive.n_draws == 40
    draws = predictive.sample_proba(X)
    summary = predictive.summary(X)
    assert calls
    expected = P.summarize_proba(draws)
    for key, value in expected.items():
        np.testing.assert_allclose(summary[key], value, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(predictive.mean_proba(X), draws.mean(axis=0), rtol=1e-9)
    # the halves differ: the linearised draws are not the network's at those weights
    network_of_all = P.PosteriorPredictive(predictive.spec, predictive.weights)
    assert not np.allclose(network_of_all.sample_proba(X)[20:], draws[20:])


def test_the_mixture_is_seeded_saved_and_loaded(data, mixture, tmp_path):
    X, y = data
    X_before, y_before = X.copy(), y.copy()
    again = fitted(X, y, inference=MIXTURE)
    np.testing.assert_array_equal(again.predict_proba(X), mixture.predict_proba(X))
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)
    path = mixture.save(tmp_path / "mixture.nc")
    loaded = BayesianMLPClassifier.load(path)
    assert loaded.inference_ == MIXTURE and loaded.mixture_ == mixture.mixture_
    assert loaded.predictive_.linearized_from == 20
    np.testing.assert_array_equal(loaded.predict_proba(X), mixture.predict_proba(X))
    np.testing.assert_array_equal(
        loaded.predict_uncertainty(X)["mutual_info"], mixture.predict_uncertainty(X)["mutual_info"]
    )


def test_thinning_a_mixture_keeps_draws_of_both_halves(mixture):
    idata = mixture.idata_
    assert idata[LINEARIZATION_GROUP].attrs[FIRST_LINEARIZED] == 20
    thin = P.from_idata(mixture.posterior_.spec, idata, n_draws=10)
    assert thin.n_draws == 10 and thin.linearized_from == 5
    X = np.zeros((2, 2))
    full = mixture.predictive_.sample_proba(X)
    kept = np.unique(np.linspace(0, 39, 10).round().astype(int))
    np.testing.assert_allclose(thin.sample_proba(X), full[kept], rtol=1e-9)
    # draws of the network's half alone: a plain predictive (nothing linearised)
    network_only = P.from_idata(mixture.posterior_.spec, idata.isel(draw=slice(0, 20)))
    assert network_only.linearized_at is None and network_only.n_draws == 20
    np.testing.assert_allclose(network_only.sample_proba(X), full[:20], rtol=1e-6)


def test_the_mixture_is_affordable_where_its_laplace_half_is():
    """The explicit mixture's Laplace half: the whole network, the output layer, or (too
    large) none (``inference="auto"`` no longer takes the mixture)."""
    assert mixture_affordable((1000, 20), (32,), 2)  # a calibration-benchmark table
    assert not mixture_affordable((AUTO_MIXTURE_MAX_ROWS + 1, 2), (5, 5), 2)
    # digits: 2,410 weights x 10 classes: the Laplace half over the output layer only
    assert mixture_affordable((1500, 64), (32,), 10)
    assert not mixture_affordable((100, 200), (32,), 2)  # 6,465 weights: too many


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"n_draws": 1}, "n_draws >= 2"),
    ],
)
def test_the_explicit_mixture_refuses_what_it_cannot_fit(data, bad, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        BayesianMLPClassifier((3,), inference=MIXTURE, **bad).fit(X, y)
    with pytest.raises(ValueError, match="groups"):
        BayesianMLPClassifier((3,), inference=MIXTURE).fit(X, y, groups=np.arange(90) % 3)


def test_the_default_reaches_95_percent_on_moons(moons):
    X_train, X_test, y_train, y_test = moons
    clf = BayesianMLPClassifier(random_state=0).fit(X_train, y_train)
    assert clf.inference_ == "laplace_ensemble"
    assert clf.score(X_test, y_test) >= 0.95


def test_a_laplace_fit_from_a_start_keeps_its_precisions_and_finds_the_fold_s_mode():
    """``fit_laplace(start=)``, a warm start: the start's prior scales are kept,
    the weights move to a mode of the fold's own objective (gradient ~0), and on the
    start's own rows the start is already that mode."""
    from pymc_bnn.inference.laplace import fit_laplace

    X, y = make_moons(120, noise=0.3, random_state=0)
    shapes = ((2, 4), (4, 1))
    full, _ = fit_laplace(X, y, layer_shapes=shapes, random_state=0, likelihood="categorical")
    fold, info = fit_laplace(
        X[:80], y[:80], layer_shapes=shapes, likelihood="categorical", start=full
    )
    assert fold.prior_sigmas == full.prior_sigmas
    assert info["map_iterations"] == 0 and info["rounds"] == 1
    assert info["gradient_norm"] < 1e-6
    assert not np.allclose(fold.theta, full.theta)
    again, _ = fit_laplace(X, y, layer_shapes=shapes, likelihood="categorical", start=full)
    np.testing.assert_allclose(again.theta, full.theta, atol=1e-4)
    with pytest.raises(ValueError, match="weights"):
        fit_laplace(X, y, layer_shapes=((2, 3), (3, 1)), likelihood="categorical", start=full)


def test_the_classifier_s_laplace_folds_start_on_their_own(data, monkeypatch):
    """The Laplace fits on the temperature's folds do not start from the kept fit: that
    fit saw the held-out rows, and folds started from it scored them too well
    (``research/notes/calibration-log.md``)."""
    import pymc_bnn.inference.laplace as L

    starts = []
    original = L.fit_laplace

    def recording(*args, **kwargs):
        gaussian, info = original(*args, **kwargs)
        starts.append((kwargs.get("start"), len(args[1])))
        return gaussian, info

    monkeypatch.setattr(L, "fit_laplace", recording)
    X, y = data
    fitted(X, y, inference="laplace")
    assert [s is None for s, _ in starts] == [True] * 4
    assert sorted(n for _, n in starts) == [60, 60, 60, 90]  # three folds, then all rows
