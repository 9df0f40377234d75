"""The regressor's ADVI + Laplace mixture (``inference="advi+laplace"``, opt-in): half
the predictive draws are ADVI's, half the linearised Laplace fit's, each with its own
noise sd, the halves' temperatures cross-fitted together (as the classifier's:
``tests/test_mixture_classifier.py``). Measured on the UCI splits, not a default:
``docs/experiments/uci_regression.md``."""

import numpy as np
import pytest

from pymc_bnn import BayesianMLPRegressor
from pymc_bnn.fit_settings import MIXTURE


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
    same seeds, half the draws each, at the temperatures the mixture chose: the
    mixture's per-draw means and noise sds are theirs, its density the mean of theirs."""
    X, y = data
    assert mixture.inference_ == MIXTURE
    assert mixture.mixture_["methods"] == ["advi", "laplace"]
    assert mixture.mixture_["n_draws"] == [20, 20]
    advi = fitted(X, y, inference="advi", n_draws=20,
                  posterior_temperature=mixture.posterior_temperature_)
    laplace = fitted(X, y, inference="laplace", n_draws=20,
                     posterior_temperature=mixture.mixture_["laplace_temperature"])
    mean, sd = mixture.predictive_.sample_normal(X)
    for part, half in ((slice(None, 20), advi), (slice(20, None), laplace)):
        half_mean, half_sd = half.predictive_.sample_normal(X)
        np.testing.assert_allclose(mean[part], half_mean, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(sd[part], half_sd, rtol=1e-6, atol=1e-12)
    # the noise sds are each half's own: ADVI's draws vary, Laplace's evidence fixes one
    assert np.unique(sd[20:, 0]).size == 1 and np.unique(sd[:20, 0]).size > 1
    density = np.exp(mixture.log_predictive_density(X, y))
    np.testing.assert_allclose(
        density, 0.5 * (np.exp(advi.log_predictive_density(X, y))
                        + np.exp(laplace.log_predictive_density(X, y))), rtol=1e-6)
    np.testing.assert_allclose(mixture.predict(X),
                               0.5 * (advi.predict(X) + laplace.predict(X)), rtol=1e-6)


def test_the_mixture_is_seeded_saved_and_loaded(data, mixture, tmp_path):
    X, y = data
    again = fitted(X, y)
    np.testing.assert_array_equal(again.predict(X), mixture.predict(X))
    back = BayesianMLPRegressor.load(mixture.save(tmp_path / "mix.nc"))
    assert back.inference_ == MIXTURE and back.mixture_ == mixture.mixture_
    for a, b in zip(back.predict(X, return_std=True), mixture.predict(X, return_std=True)):
        np.testing.assert_array_equal(a, b)


def test_auto_is_unchanged_by_the_option(data):
    """``"auto"`` still chooses between ADVI and Laplace (the mixture is opt-in)."""
    reg = BayesianMLPRegressor((4,), n_draws=20, random_state=3).fit(*data)
    assert reg.inference_ in ("advi", "laplace") and reg.mixture_ is None


@pytest.mark.parametrize("kwargs, match", [
    ({"n_draws": 1}, "n_draws >= 2"),
    ({"heteroscedastic": True}, "heteroscedastic=True"),
])
def test_the_explicit_mixture_refuses_what_it_cannot_fit(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fitted(*data, **kwargs)
