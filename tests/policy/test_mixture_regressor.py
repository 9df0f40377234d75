"""The regressor's ADVI + Laplace mixture (``inference="advi+laplace"``, selectable by
name): the predictive draws are ADVI's and the linearised Laplace fit's, each with its
own noise sd, the Laplace share and the halves' temperatures cross-fitted together (the
classifier's mixture is equal: ``tests/policy/test_mixture_classifier.py``; measured on the UCI
splits in ``research/notes/uci_regression.md``)."""

import pickle

import numpy as np
import pytest

import pymc_bnn.predictive._predictive as P
from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor
from pymc_bnn.policy import _settings as fit_settings
from pymc_bnn.policy._settings import LAPLACE_STARTS_MIN_WEIGHT, MIXTURE, mode_seeds
from pymc_bnn.policy._tempering import MIXTURE_WEIGHTS
from pymc_bnn.policy.thresholds import LAPLACE_STARTS
from pymc_bnn.predictive._composed import laplace_share, start_shares
from pymc_bnn.predictive._predictive import posterior_predictive


def xsin(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)


def fitted(X, y, **kw):
    return BayesianMLPRegressor(
        (4,), **{"n_draws": 40, "random_state": 3, "inference": MIXTURE, **kw}
    ).fit(X, y)


def draws_density(reg, predictive, X, y):
    """The density of ``y`` under ``predictive``'s equal mixture of its draws (y units,
    ``reg``'s target scaling): the obvious NumPy loop over draws."""
    mean, sd = predictive.sample_normal(X)
    z = (y - reg.y_mean_) / reg.y_scale_
    per_draw = [
        np.exp(-0.5 * ((z - m) / s) ** 2) / (np.sqrt(2 * np.pi) * s) for m, s in zip(mean, sd)
    ]
    return np.mean(per_draw, axis=0) / reg.y_scale_


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
    weighted mean. The Laplace half (share over a half: several fits) is its first
    fit's draws, then each further fit's own, each through its own single-point
    predictive."""
    X, y = data
    assert mixture.inference_ == MIXTURE
    assert mixture.mixture_["methods"] == ["advi", "laplace"]
    weight = mixture.mixture_["laplace_weight"]
    n_advi, n_laplace = mixture.mixture_["n_draws"]
    assert weight in MIXTURE_WEIGHTS and n_laplace == laplace_share(weight, 40)
    assert n_advi + n_laplace == 40
    assert weight >= LAPLACE_STARTS_MIN_WEIGHT  # here: the half is several fits
    counts = start_shares(n_laplace, LAPLACE_STARTS)
    assert mixture.mixture_["laplace_starts"] == LAPLACE_STARTS == len(counts)
    t_laplace = mixture.mixture_["laplace_temperature"]
    advi = fitted(
        X, y, inference="advi", n_draws=n_advi, posterior_temperature=mixture.posterior_temperature_
    )
    laplace = fitted(X, y, inference="laplace", n_draws=counts[0], posterior_temperature=t_laplace)
    starts = mixture._draw_parts["laplace"]["starts"]
    seed = mixture._seeds()["predict"]
    others = [
        posterior_predictive(fit, n_draws=n, random_seed=[seed, k], temperature=t_laplace)
        for k, (fit, n) in enumerate(zip(starts, counts))
        if k
    ]
    mean, sd = mixture.predictive_.sample_normal(X)
    bounds = np.cumsum([0, n_advi, *counts])
    parts = [advi.predictive_, laplace.predictive_, *others]
    for a, b, part in zip(bounds, bounds[1:], parts):
        part_mean, part_sd = part.sample_normal(X)
        np.testing.assert_allclose(mean[a:b], part_mean, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(sd[a:b], part_sd, rtol=1e-6, atol=1e-12)
    # the noise sds are each fit's own: ADVI's draws vary, each Laplace evidence fixes one
    for a, b in zip(bounds[1:], bounds[2:]):
        assert np.unique(sd[a:b, 0]).size == 1
    assert np.unique(sd[:n_advi, 0]).size == n_advi  # (here the folds gave ADVI 1 draw)
    share = n_laplace / 40
    density = np.exp(mixture.log_predictive_density(X, y))
    laplace_density = (
        sum(n * draws_density(mixture, part, X, y) for n, part in zip(counts, parts[1:]))
        / n_laplace
    )
    np.testing.assert_allclose(
        density,
        (1 - share) * np.exp(advi.log_predictive_density(X, y)) + share * laplace_density,
        rtol=1e-6,
    )
    laplace_mean = (
        mixture.y_mean_
        + mixture.y_scale_
        * sum(n * part.sample_normal(X)[0].mean(axis=0) for n, part in zip(counts, parts[1:]))
        / n_laplace
    )
    np.testing.assert_allclose(
        mixture.predict(X), (1 - share) * advi.predict(X) + share * laplace_mean, rtol=1e-6
    )


def test_the_laplace_fits_start_from_weights_of_their_own_and_reach_other_modes(
    data, mixture, monkeypatch
):
    """Each further Laplace fit starts from its own seed (:func:`mode_seeds`: the
    first is the plain fit's), and reaches a mode of its own; ``laplace_log_evidence``
    records each fit's."""
    X, y = data
    seen = []
    real = BayesianMLPRegressor._fit_laplace

    def spy(self, X_, y_, target_kwargs, init_seed, **kwargs):
        if X_.shape[0] == X.shape[0] and not kwargs.get("linear"):  # the kept fits
            seen.append(init_seed)
        return real(self, X_, y_, target_kwargs, init_seed, **kwargs)

    monkeypatch.setattr(BayesianMLPRegressor, "_fit_laplace", spy)
    again = fitted(X, y)
    init = again._seeds()["init"]
    assert sorted(seen) == sorted(mode_seeds(init, LAPLACE_STARTS))
    assert seen[0] == init  # the first is the plain fit's start, fitted beside the folds
    thetas = [fit.laplace.theta for fit in mixture._draw_parts["laplace"]["starts"]]
    assert all(not np.allclose(thetas[0], t) for t in thetas[1:])
    assert mixture.mixture_["laplace_log_evidence"] == pytest.approx(
        [float(fit.laplace.log_evidence) for fit in mixture._draw_parts["laplace"]["starts"]]
    )
    assert len(set(mixture.mixture_["laplace_log_evidence"])) == LAPLACE_STARTS


def test_one_laplace_fit_where_its_share_is_under_a_half():
    """Below :data:`LAPLACE_STARTS_MIN_WEIGHT` the Laplace half is one fit (and the
    classifier's always is)."""
    reg, clf = BayesianMLPRegressor(), BayesianMLPClassifier()
    for weight in MIXTURE_WEIGHTS:
        expected = LAPLACE_STARTS if weight >= LAPLACE_STARTS_MIN_WEIGHT else 1
        assert reg._laplace_starts(weight) == expected
        assert clf._laplace_starts(weight) == 1
    assert 1 < LAPLACE_STARTS and 0 < LAPLACE_STARTS_MIN_WEIGHT < 1


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
    reg = fitted(X, y, inference=MIXTURE)
    assert len(seen) == 1 and seen[0][1]["weights"] == MIXTURE_WEIGHTS
    first, second, weight = seen[0][2]
    assert reg.inference_ == MIXTURE and reg.inference_selection_ is None
    assert reg.mixture_["laplace_weight"] == weight
    assert (reg.posterior_temperature_, reg.mixture_["laplace_temperature"]) == (
        first.temperature,
        second.temperature,
    )
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
    # a pickle keeps each draw at its own mode too
    unpickled = pickle.loads(pickle.dumps(mixture))
    assert unpickled.predictive_.linearized_splits == mixture.predictive_.linearized_splits
    for a, b in zip(unpickled.predict(X, return_std=True), mixture.predict(X, return_std=True)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_draws": 1}, "n_draws >= 2"),
        ({"heteroscedastic": True}, "heteroscedastic=True"),
    ],
)
def test_the_explicit_mixture_refuses_what_it_cannot_fit(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fitted(*data, **kwargs)


def test_a_predictive_of_several_modes_is_each_mode_s_linearised_draws(data, mixture, monkeypatch):
    """The fast path (one predictive of every draw, each linearised at its own fit's
    mode) against the obvious one (a predictive per part); it is the path taken
    (``_linearized_chunks`` runs once per mode, at that mode), with or without network
    draws before the linearised ones; thinning keeps each draw at its mode."""
    X, _ = data
    p = mixture.predictive_
    points = np.atleast_2d(p.linearized_at)
    assert points.shape[0] == LAPLACE_STARTS and len(p.linearized_splits) == LAPLACE_STARTS - 1
    bounds = [0, p.linearized_from, *p.linearized_splits, p.n_draws]

    def part(a, b, point=None):
        return P.PosteriorPredictive(
            p.spec, tuple((W[a:b], c[a:b]) for W, c in p.weights), p.noise[a:b], linearized_at=point
        )

    expected = np.concatenate(
        [part(0, bounds[1]).sample_normal(X)[0]]
        + [
            part(a, b, point).sample_normal(X)[0]
            for a, b, point in zip(bounds[1:], bounds[2:], points)
        ]
    )
    seen = []
    real = P.PosteriorPredictive._linearized_chunks

    def spy(self, *args, **kwargs):
        seen.append(self.linearized_at)
        yield from real(self, *args, **kwargs)

    monkeypatch.setattr(P.PosteriorPredictive, "_linearized_chunks", spy)
    np.testing.assert_allclose(p.sample_normal(X)[0], expected, rtol=1e-9, atol=1e-12)
    assert len(seen) == LAPLACE_STARTS
    for point, used in zip(points, seen):
        np.testing.assert_array_equal(point, used)
    # the linearised draws alone (no network draws first): the same draws
    rest = slice(p.linearized_from, None)
    alone = P.PosteriorPredictive(
        p.spec,
        tuple((W[rest], c[rest]) for W, c in p.weights),
        p.noise[rest],
        linearized_at=points,
        linearized_splits=tuple(s - p.linearized_from for s in p.linearized_splits),
    )
    np.testing.assert_allclose(
        alone.sample_normal(X)[0], expected[p.linearized_from :], rtol=1e-9, atol=1e-12
    )
    # thinned: every kept draw at its own mode (a mode left without draws is dropped)
    full = p.sample_normal(X)[0]
    for n in (30, 10, 3):
        thin = P.from_idata(p.spec, mixture.idata_, n_draws=n)
        kept = np.unique(np.linspace(0, p.n_draws - 1, n).round().astype(int))
        np.testing.assert_allclose(thin.sample_normal(X)[0], full[kept], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "splits, match",
    [
        ((5,), "must give where"),
        ((30, 20), "increasing"),
        ((1, 5), "increasing"),
        ((5, 40), "increasing"),
    ],
)
def test_a_predictive_of_several_modes_refuses_splits_that_do_not_fit(mixture, splits, match):
    p = mixture.predictive_
    with pytest.raises(ValueError, match=match):
        P.PosteriorPredictive(
            p.spec,
            p.weights,
            p.noise,
            linearized_at=p.linearized_at,
            linearized_from=p.linearized_from,
            linearized_splits=splits,
        )
