"""The regressor's ADVI + Laplace mixture (``inference="advi+laplace"``; the default
``"auto"`` keeps it unless one half alone is clearly better on the folds): the
predictive draws are ADVI's and the linearised Laplace fit's, each with its own noise
sd, the Laplace share and the halves' temperatures cross-fitted together (the
classifier's mixture is equal: ``tests/test_mixture_classifier.py``; measured on the UCI splits in
``tests/test_mixture_classifier.py``; measured on the UCI splits in
``docs/experiments/uci_regression.md``)."""

import numpy as np
import pytest

from pymc_bnn import BayesianMLPRegressor
from pymc_bnn import fit_settings
from pymc_bnn.composed_draws import laplace_share
from pymc_bnn.fit_settings import MIXTURE
from pymc_bnn.tempering import MIXTURE_WEIGHTS
from pymc_bnn.fit_summary import describe


def xsin(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)


def fitted(X, y, **kw):
    return BayesianMLPRegressor((4,), **{"n_draws": 40, "random_state": 3,
                                         "inference": MIXTURE, **kw}).fit(X, y)


@pytest.fixture(scope="module")
def data():
    return xsin(60, seed=2)


@pytest.fixture(scope="module")
def mixture(data):
    return fitted(*data)


def test_the_mixture_is_the_draws_of_its_two_halves_each_with_its_noise(data, mixture):
    """The slow, obvious path: ADVI and Laplace regressors fitted on their own with the
    same seeds, each with its share of the draws, at the temperatures the mixture
    chose: the mixture's per-draw means and noise sds are theirs, its density their
    weighted mean."""
    X, y = data
    assert mixture.inference_ == MIXTURE
    assert mixture.mixture_["methods"] == ["advi", "laplace"]
    weight = mixture.mixture_["laplace_weight"]
    n_advi, n_laplace = mixture.mixture_["n_draws"]
    assert weight in MIXTURE_WEIGHTS and n_laplace == laplace_share(weight, 40)
    assert n_advi + n_laplace == 40
    advi = fitted(X, y, inference="advi", n_draws=n_advi,
                  posterior_temperature=mixture.posterior_temperature_)
    laplace = fitted(X, y, inference="laplace", n_draws=n_laplace,
                     posterior_temperature=mixture.mixture_["laplace_temperature"])
    mean, sd = mixture.predictive_.sample_normal(X)
    for part, half in ((slice(None, n_advi), advi), (slice(n_advi, None), laplace)):
        half_mean, half_sd = half.predictive_.sample_normal(X)
        np.testing.assert_allclose(mean[part], half_mean, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(sd[part], half_sd, rtol=1e-6, atol=1e-12)
    # the noise sds are each half's own: ADVI's draws vary, Laplace's evidence fixes one
    assert np.unique(sd[n_advi:, 0]).size == 1
    assert np.unique(sd[:n_advi, 0]).size == n_advi  # (here the folds gave ADVI 1 draw)
    share = n_laplace / 40
    density = np.exp(mixture.log_predictive_density(X, y))
    np.testing.assert_allclose(
        density, (1 - share) * np.exp(advi.log_predictive_density(X, y))
        + share * np.exp(laplace.log_predictive_density(X, y)), rtol=1e-6)
    np.testing.assert_allclose(mixture.predict(X), (1 - share) * advi.predict(X)
                               + share * laplace.predict(X), rtol=1e-6)


def test_the_laplace_share_is_the_folds_stacked_choice(data, monkeypatch):
    """The share taken is the stacking of :func:`choose_mixture_temperatures` over
    :data:`MIXTURE_WEIGHTS` on the fit's own fold scores (a spy records them), and
    the pair of temperatures is chosen with it."""
    X, y = data
    seen = []
    real = fit_settings.choose_mixture_temperatures

    def spy(*args, **kwargs):
        seen.append((args, kwargs, real(*args, **kwargs)))
        return seen[-1][2]

    monkeypatch.setattr(fit_settings, "choose_mixture_temperatures", spy)
    reg = fitted(X, y, inference="auto")
    assert len(seen) == 1 and seen[0][1]["weights"] == MIXTURE_WEIGHTS
    first, second, weight = seen[0][2]
    assert reg.inference_ == MIXTURE
    assert reg.mixture_["laplace_weight"] == weight == reg.inference_selection_["laplace_weight"]
    assert (reg.posterior_temperature_, reg.mixture_["laplace_temperature"]) == (
        first.temperature, second.temperature)
    # the stacked choice is the best of every share at its best pair (no share fixed)
    (a, b, n_rows), _ = seen[0][0], None
    best = [real(a, b, n_rows, weights=(w,))[0].scores.min() for w in MIXTURE_WEIGHTS]
    assert weight == MIXTURE_WEIGHTS[int(np.argmin(best))]
    assert min(best) < best[MIXTURE_WEIGHTS.index(0.5)] - 1e-9  # here: not the equal one


def test_the_mixture_is_seeded_saved_and_loaded(data, mixture, tmp_path):
    X, y = data
    again = fitted(X, y)
    np.testing.assert_array_equal(again.predict(X), mixture.predict(X))
    back = BayesianMLPRegressor.load(mixture.save(tmp_path / "mix.nc"))
    assert back.inference_ == MIXTURE and back.mixture_ == mixture.mixture_
    for a, b in zip(back.predict(X, return_std=True), mixture.predict(X, return_std=True)):
        np.testing.assert_array_equal(a, b)


def test_auto_keeps_the_mixture_it_weighed_and_it_is_the_options_bit_for_bit(data, mixture,
                                                                             tmp_path):
    """``"auto"`` weighs the mixture against each half alone on the folds; on 60 rows
    (too few to trust the standard error) it keeps the mixture: the same draws as
    ``inference="advi+laplace"`` with the same seed, bit for bit (the same fits on the
    same folds, scored on the same rows)."""
    X, y = data
    reg = fitted(X, y, inference="auto")
    sel = reg.inference_selection_
    assert sel["methods"] == [MIXTURE, "advi", "laplace"]
    assert len(sel["scores"]) == 3 and len(sel["standard_errors"]) == 2
    assert reg.inference_ == MIXTURE and reg.mixture_ == mixture.mixture_
    assert sel["temperatures"][0] == [reg.posterior_temperature_,
                                      reg.mixture_["laplace_temperature"]]
    # the mixture's score is its temperature pair's (the joint choice's best)
    np.testing.assert_allclose(sel["scores"][0], reg.temperature_selection_.scores.min(),
                               rtol=1e-12)
    for a, b in zip(reg.predict(X, return_std=True), mixture.predict(X, return_std=True)):
        np.testing.assert_array_equal(a, b)
    assert "compared on the held-out rows with each alone" in describe(reg)[-1]
    back = BayesianMLPRegressor.load(reg.save(tmp_path / "auto.nc"))
    assert back.inference_selection_ == sel and back.mixture_ == reg.mixture_
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))


@pytest.mark.parametrize("method", ["advi", "laplace"])
def test_auto_takes_a_half_alone_where_the_folds_clearly_prefer_it(method, monkeypatch):
    """Over 100 rows, a half alone better than the mixture by over 4 nats in all and by
    over two standard errors is kept alone: the same predictions as asking for it."""
    X, y = xsin(150, seed=5)
    calls = []

    def scores(*args, **kwargs):  # checked in the order ADVI, Laplace
        calls.append(kwargs)
        better = ("advi", "laplace")[len(calls) - 1] == method
        return (0.6, 0.5 if better else 0.7, 0.01)

    monkeypatch.setattr(fit_settings, "mixture_difference", scores)
    reg = fitted(X, y, inference="auto")
    assert len(calls) == 2  # the check is taken, once per half
    assert reg.inference_ == method and reg.mixture_ is None
    assert reg.inference_selection_["scores"] == [0.6] + [
        0.5 if m == method else 0.7 for m in ("advi", "laplace")]
    alone = fitted(X, y, inference=method)
    for a, b in zip(reg.predict(X, return_std=True), alone.predict(X, return_std=True)):
        np.testing.assert_array_equal(a, b)
    name = {"advi": "ADVI's", "laplace": "the Laplace approximation's"}[method]
    assert describe(reg)[-1].startswith(f"predictions: {name} draws alone")


@pytest.mark.parametrize("kwargs, match", [
    ({"n_draws": 1}, "n_draws >= 2"),
    ({"heteroscedastic": True}, "heteroscedastic=True"),
])
def test_the_explicit_mixture_refuses_what_it_cannot_fit(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fitted(*data, **kwargs)
