"""Posterior tempering and its cross-fitted choice (``posterior_temperature="auto"``)."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor, build_model, fit
from pymc_bnn.policy._tempering import (
    SCORE_DRAWS,
    TEMPERATURES,
    cross_fit_temperature,
    heldout_nll,
    heldout_scores,
)
from pymc_bnn.predictive._draws import posterior_draws, tempered
from pymc_bnn.predictive._predictive import posterior_predictive


@pytest.fixture(scope="module")
def logistic_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = (X @ np.array([1.5, -1.0]) + rng.logistic(size=120) > 0).astype(int)
    return X, y


@pytest.fixture(scope="module", params=["advi", "fullrank_advi"])
def vi_posterior(request, logistic_data):
    """Bayesian logistic regression (no hidden layer) by mean-field / full-rank ADVI."""
    X, y = logistic_data
    model = build_model(X, y, hidden_layer_sizes=(), random_state=0)
    return fit(model, method=request.param, n_iter=2000, random_seed=0)


def _params(approx):
    return [p.get_value().copy() for p in approx.params]


@pytest.mark.parametrize("temperature", [0.04, 0.5, 2.0])
def test_tempered_scales_the_covariance_by_t_and_keeps_the_mean(vi_posterior, temperature):
    approx = vi_posterior.approx
    cov, mean = approx.cov.eval(), approx.mean.eval()
    with tempered(approx, temperature):
        np.testing.assert_allclose(approx.cov.eval(), temperature * cov, rtol=1e-6, atol=1e-12)
        np.testing.assert_array_equal(approx.mean.eval(), mean)
    np.testing.assert_array_equal(approx.cov.eval(), cov)


def test_tempered_restores_the_parameters_after_an_error(vi_posterior):
    approx = vi_posterior.approx
    before = _params(approx)
    with pytest.raises(RuntimeError, match="boom"):
        with tempered(approx, 0.1):
            raise RuntimeError("boom")
    for a, b in zip(before, _params(approx)):
        np.testing.assert_array_equal(a, b)


def test_tempered_draws_use_common_random_numbers(vi_posterior):
    """Same seed: the tempered draws are mean + sqrt(T) * (untempered draw - mean)
    exactly (the weights are free variables here, with no transform)."""
    w = posterior_draws(vi_posterior, n_draws=50, random_seed=3).posterior["w0"].values
    wt = (
        posterior_draws(vi_posterior, n_draws=50, random_seed=3, temperature=0.25)
        .posterior["w0"]
        .values
    )
    # wt = mu + 0.5 (w - mu)  <=>  wt - 0.5 w = 0.5 mu, the same for every draw
    const = (wt - 0.5 * w)[0]
    np.testing.assert_allclose(wt - 0.5 * w, np.broadcast_to(const, w.shape[1:])[None], atol=1e-6)
    assert w.std(axis=1).min() > 1e-2  # the draws do vary: the check is not vacuous


@pytest.mark.parametrize("bad", [0, -1.0, np.inf, np.nan, "cold", True])
def test_bad_temperature_is_rejected(vi_posterior, bad):
    with pytest.raises(ValueError, match="temperature must be a positive finite number"):
        posterior_draws(vi_posterior, n_draws=5, temperature=bad)


def _recording_fit_rows(X, y, *, n_iter):
    """A ``fit_rows`` callback fitting Bayesian logistic regression, and the dict of
    its fits by seed."""
    fits = {}

    def fit_rows(rows, seed):
        fits[seed] = fit(
            build_model(X[rows], y[rows], hidden_layer_sizes=(), random_state=0),
            n_iter=n_iter,
            random_seed=seed,
        )
        return fits[seed]

    return fits, fit_rows


def test_cross_fit_equals_the_obvious_loop(logistic_data):
    """The selection's scores are the held-out NLLs summed over folds, computed here
    again by hand from the same fold fits and draws; the choice is their argmin."""
    X, y = logistic_data
    fits, fit_rows = _recording_fit_rows(X, y, n_iter=1500)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    sel = cross_fit_temperature(fit_rows, X, y, folds=folds, seed=10)
    assert sel.temperatures == TEMPERATURES and sel.n_splits == 3
    expected = np.zeros(len(TEMPERATURES))
    for k, (_, test) in enumerate(folds):
        for i, t in enumerate(TEMPERATURES):
            pred = posterior_predictive(
                fits[10 + k], n_draws=200, random_seed=10 + k, temperature=t
            )
            p = pred.sample_proba(X[test]).mean(0)[np.arange(len(test)), y[test]]
            expected[i] -= np.log(p).sum()
    np.testing.assert_allclose(sel.scores, expected / len(y), rtol=1e-10)
    assert sel.temperature == TEMPERATURES[int(np.argmin(expected))]


def test_large_folds_are_scored_on_a_seeded_subset_scaled_to_the_fold(logistic_data, monkeypatch):
    """Beyond MAX_SCORE_ROWS held-out rows a fold is scored on a seeded random subset
    of that many rows, its sum scaled by rows / subset; the subset is the same for
    the same seed, and equals the obvious computation on those rows."""
    from pymc_bnn.policy import _tempering as tempering

    X, y = logistic_data
    monkeypatch.setattr(tempering, "MAX_SCORE_ROWS", 15)
    fits, fit_rows = _recording_fit_rows(X, y, n_iter=500)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    scored = []
    real = tempering.heldout_nll_table
    monkeypatch.setattr(
        tempering,
        "heldout_nll_table",
        lambda post, Xs, ys, **kw: scored.append(len(Xs)) or real(post, Xs, ys, **kw),
    )
    sel = cross_fit_temperature(fit_rows, X, y, folds=folds, seed=10)
    assert scored == [15, 15, 15]  # each fold held out 40 rows: a subset was taken
    expected = np.zeros(len(TEMPERATURES))
    for k, (_, test) in enumerate(folds):
        rows = tempering._scored_rows(test, 10 + k)
        assert len(rows) == 15 and set(rows) <= set(test)
        np.testing.assert_array_equal(rows, tempering._scored_rows(test, 10 + k))
        for i, t in enumerate(TEMPERATURES):
            pred = posterior_predictive(
                fits[10 + k], n_draws=200, random_seed=10 + k, temperature=t
            )
            p = pred.sample_proba(X[rows]).mean(0)[np.arange(15), y[rows]]
            expected[i] -= len(test) / 15 * np.log(p).sum()
    np.testing.assert_allclose(sel.scores, expected / len(y), rtol=1e-10)


def test_heldout_nll_regression_is_the_mixture_density():
    from scipy.stats import norm

    X = np.linspace(-1, 1, 40)[:, None]
    y = np.sin(3 * X[:, 0])
    post = fit(
        build_model(X, y, hidden_layer_sizes=(4,), likelihood="normal", random_state=0),
        n_iter=3000,
        random_seed=0,
    )
    pred = posterior_predictive(post, n_draws=30, random_seed=1)
    mean, sd = pred.sample_normal(X)
    expected = -np.log(norm.pdf(y[None], mean, sd).mean(0))
    np.testing.assert_allclose(heldout_nll(pred, X, y), expected, rtol=1e-6)


def _scores_one_temperature_at_a_time(post, X, y, seed):
    """The obvious path: each temperature's own predictive, scored on its own."""
    return np.array(
        [
            heldout_nll(
                posterior_predictive(post, n_draws=SCORE_DRAWS, random_seed=seed, temperature=t),
                X,
                y,
            ).sum()
            for t in TEMPERATURES
        ]
    )


@pytest.mark.filterwarnings("ignore:ADVI stopped before")  # a short fit serves here
@pytest.mark.parametrize("case", ["binary", "three classes", "wide input", "regression"])
def test_heldout_scores_batch_temperatures_and_equal_the_obvious_loop(case, monkeypatch):
    """heldout_scores pushes the draws of many temperatures through the network at once
    where the predictive is a fused loop (small fan-ins): the fast path is taken there
    (every forward call holds all 13 x 200 draws), not for a wide input layer (one
    temperature per call), and the scores equal the per-temperature loop's."""
    from pymc_bnn.predictive._predictive import PosteriorPredictive

    rng = np.random.default_rng(0)
    n_features = 20 if case == "wide input" else 2
    X = rng.normal(size=(150, n_features))
    signal = X[:, 0] - X[:, 1] ** 2
    if case == "regression":
        y = signal + 0.3 * rng.normal(size=150)
        model = build_model(
            X[:100], y[:100], hidden_layer_sizes=(4,), likelihood="normal", random_state=0
        )
    else:
        k = 3 if case == "three classes" else 2
        y = np.digitize(signal, np.quantile(signal, np.linspace(0, 1, k + 1)[1:-1]))
        model = build_model(X[:100], y[:100], hidden_layer_sizes=(4,), random_state=0)
    post = fit(model, n_iter=1000, random_seed=0)
    calls = []
    for name in ("sample_proba", "sample_normal", "log_density"):
        real = getattr(PosteriorPredictive, name)

        def spy(self, *args, real=real, **kwargs):
            calls.append(self.n_draws)
            return real(self, *args, **kwargs)

        monkeypatch.setattr(PosteriorPredictive, name, spy)
    scores = heldout_scores(post, X[100:], y[100:], seed=4)
    batched = case != "wide input"
    assert calls and set(calls) == {len(TEMPERATURES) * SCORE_DRAWS if batched else SCORE_DRAWS}
    assert len(calls) == (1 if batched else len(TEMPERATURES))  # 50 rows: one chunk
    calls.clear()
    expected = _scores_one_temperature_at_a_time(post, X[100:], y[100:], 4)
    assert len(calls) == len(TEMPERATURES)
    # the same draws; the forward pass's float32 rounding may depend on the chunk shape
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    assert np.ptp(expected) > 1e-3 * np.abs(expected).max()  # the grid's scores differ


# ----------------------------------------------------------------- estimator
def test_auto_temperature_is_chosen_and_used(advi_clf, moons):
    """The default estimator chose T on held-out folds, and its stored draws are the
    approximation tempered to that T (same seed, same draws as posterior_draws)."""
    sel = advi_clf.temperature_selection_
    assert advi_clf.posterior_temperature == "auto"
    assert advi_clf.posterior_temperature_ == sel.temperature
    assert sel.temperature in TEMPERATURES and sel.scores.shape == (len(TEMPERATURES),)
    assert sel.scores[TEMPERATURES.index(sel.temperature)] == sel.scores.min()
    again = posterior_draws(
        advi_clf.posterior_,
        n_draws=advi_clf.n_draws,
        random_seed=advi_clf._seeds()["predict"],
        temperature=sel.temperature,
    )
    np.testing.assert_array_equal(
        again.posterior["w0"].values, advi_clf.idata_.posterior["w0"].values
    )


def test_fixed_temperature_skips_the_selection(tiny):
    X, y = tiny
    clf = BayesianMLPClassifier(
        (3,), n_iter=3000, n_draws=40, posterior_temperature=0.3, random_state=0
    ).fit(X, y)
    assert clf.posterior_temperature_ == 0.3 and clf.temperature_selection_ is None
    cold = clf.predictive_.weights[0][0].std(0)
    warm = (
        BayesianMLPClassifier(
            (3,), n_iter=3000, n_draws=40, posterior_temperature=1.0, random_state=0
        )
        .fit(X, y)
        .predictive_.weights[0][0]
        .std(0)
    )
    # same fit and noise: the spread of every weight shrinks by sqrt(0.3)
    np.testing.assert_allclose(cold, np.sqrt(0.3) * warm, rtol=1e-4)


def test_too_few_rows_per_class_means_no_tempering():
    X = np.arange(10, dtype=float)[:, None]
    y = np.array([0] * 9 + [1])
    clf = BayesianMLPClassifier((2,), n_iter=3000, n_draws=10, random_state=0).fit(X, y)
    assert clf.posterior_temperature_ == 1.0 and clf.temperature_selection_ is None


def test_nuts_rejects_a_temperature(tiny, monkeypatch):
    """Refused at the start of fit, before any sampling (nothing is fit)."""
    import pymc_bnn.estimators._base as B

    def no_fit(*args, **kwargs):
        raise AssertionError("a model was fit before the temperature was checked")

    monkeypatch.setattr(B, "fit", no_fit)
    X, y = tiny
    with pytest.raises(ValueError, match="applies to variational inference only"):
        BayesianMLPClassifier((), inference="nuts", posterior_temperature=0.5, random_state=0).fit(
            X, y
        )


def test_regressor_chooses_a_temperature_too():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(60, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    reg = BayesianMLPRegressor((8,), n_iter=3000, n_draws=50, random_state=0).fit(X, y)
    assert reg.posterior_temperature_ in TEMPERATURES
    assert reg.temperature_selection_.n_splits == 3


def test_temperature_survives_save_load_and_pickle(advi_clf, moons, tmp_path):
    import pickle

    _, X_test, _, _ = moons
    loaded = BayesianMLPClassifier.load(advi_clf.save(tmp_path / "m.nc"))
    unpickled = pickle.loads(pickle.dumps(advi_clf))
    for other in (loaded, unpickled):
        assert other.posterior_temperature_ == advi_clf.posterior_temperature_
        sel, ref = other.temperature_selection_, advi_clf.temperature_selection_
        assert sel.temperatures == ref.temperatures and sel.n_splits == ref.n_splits
        np.testing.assert_array_equal(sel.scores, ref.scores)
        np.testing.assert_array_equal(other.predict_proba(X_test), advi_clf.predict_proba(X_test))


def test_cross_fitting_fits_run_concurrently_and_change_nothing(logistic_data, monkeypatch):
    """A default fit's kept network and its three cross-fitting networks are fit at the
    same time in two threads (pymc_bnn.inference.fit_concurrently); the result is
    exactly that of fitting them one after the other."""
    import threading

    import pymc_bnn.estimators._base as B

    X, y = logistic_data
    kw = dict(hidden_layer_sizes=(3,), n_iter=1500, random_state=0)
    threads = []
    real_fit = B.fit

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(B, "fit", spy)
    monkeypatch.setenv("PYMC_BNN_NUM_THREADS", "1")
    serial = BayesianMLPClassifier(**kw).fit(X, y)
    assert len(threads) == 4 and set(threads) == {threading.get_ident()}
    threads.clear()
    monkeypatch.setenv("PYMC_BNN_NUM_THREADS", "2")
    threaded = BayesianMLPClassifier(**kw).fit(X, y)
    assert len(threads) == 4 and len(set(threads)) == 2
    assert threaded.posterior_temperature_ == serial.posterior_temperature_
    np.testing.assert_array_equal(
        threaded.temperature_selection_.scores, serial.temperature_selection_.scores
    )
    np.testing.assert_array_equal(threaded.loss_curve_, serial.loss_curve_)
    np.testing.assert_array_equal(threaded.predict_proba(X), serial.predict_proba(X))
