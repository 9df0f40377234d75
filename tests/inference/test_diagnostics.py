"""Convergence diagnostics (issue #12, item 5): the ELBO check of VI runs, and NUTS
divergences, R-hat and ESS of predictive quantities, as warnings and ``diagnostics_``."""

import json
import pickle
import warnings

import numpy as np
import pytest
import xarray as xr
from sklearn.exceptions import ConvergenceWarning

import pymc_bnn.inference as I
import pymc_bnn.inference.diagnostics as D
from pymc_bnn import BayesianMLPClassifier, NetworkSpec, build_model, fit
from pymc_bnn.exceptions import SamplingWarning
from pymc_bnn.inference import Posterior, diagnose

VI_KEYS = {
    "method",
    "converged",
    "message",
    "n_steps",
    "window",
    "final_loss",
    "previous_loss",
    "decrease",
    "relative_decrease",
    "noise_se",
    "z",
    "z_threshold",
    "relative_threshold",
}
NUTS_KEYS = {
    "method",
    "converged",
    "message",
    "n_chains",
    "n_draws",
    "n_divergences",
    "quantity",
    "n_points",
    "n_quantities",
    "max_rhat",
    "min_ess_bulk",
    "min_ess_tail",
    "rhat_threshold",
    "ess_threshold",
}
SPEC = NetworkSpec(
    n_features=2,
    hidden_layer_sizes=(),
    n_classes=2,
    activation="tanh",
    prior_sigma=1.0,
    n_rows=60,
    batch_size=None,
)


def _vi(loss) -> Posterior:
    return Posterior(method="advi", spec=SPEC, seed=0, loss=np.asarray(loss, dtype=float))


def _assert_plain(diagnostics: dict) -> None:
    """JSON-able scalars only, so save/load and pickling keep them exactly."""
    for key, value in diagnostics.items():
        assert value is None or type(value) in (str, int, float, bool), (key, type(value))
    assert json.loads(json.dumps(diagnostics)) == diagnostics


# ------------------------------------------------------------------------------ VI
def test_short_advi_run_on_moons_is_flagged_with_a_convergence_warning(moons):
    """300 steps: the loss is still falling fast (20-54% over the last half on moons)."""
    X_train, _, y_train, _ = moons
    clf = BayesianMLPClassifier(n_iter=300, posterior_temperature=1.0, random_state=0)
    with pytest.warns(
        ConvergenceWarning,
        match=r"ADVI stopped before the ELBO levelled off.*still falling.*"
        r"Increase n_iter",
    ) as record:
        clf.fit(X_train, y_train)
    assert not any(issubclass(w.category, SamplingWarning) for w in record)
    d = clf.diagnostics_
    assert d["converged"] is False and d["n_steps"] == 300 and d["window"] == 150
    assert d["relative_decrease"] > 0.1 and d["z"] > 10
    assert f"{d['relative_decrease']:.1%}" in d["message"]
    assert d == dict(clf.posterior_.diagnostics) == diagnose(clf.posterior_)


def test_default_advi_fit_on_moons_is_not_flagged(advi_clf):
    """The default 10,000 steps level off (the fixture's fit raised no warning: warnings
    are errors in this suite)."""
    d = advi_clf.diagnostics_
    assert d["converged"] is True and d["message"] == ""
    assert d["method"] == "advi" and d["n_steps"] == 10_000 and d["window"] == 1_000
    assert abs(d["relative_decrease"]) < I.ELBO_RELATIVE_TOL
    assert set(d) == VI_KEYS
    _assert_plain(d)


def test_vi_diagnostics_are_stored_read_only_on_the_posterior(tiny):
    X, y = tiny
    post = fit(
        build_model(X, y, hidden_layer_sizes=(2,), random_state=0), n_iter=3000, random_seed=0
    )
    assert set(post.diagnostics) == VI_KEYS and post.diagnostics["converged"] is True
    assert dict(post.diagnostics) == diagnose(post)
    with pytest.raises(TypeError):
        post.diagnostics["converged"] = False
    again = pickle.loads(pickle.dumps(post.diagnostics))
    assert dict(again) == dict(post.diagnostics)
    _assert_plain(dict(post.diagnostics))


def test_too_short_a_run_cannot_be_judged(tiny):
    X, y = tiny
    with pytest.warns(ConvergenceWarning, match="only 5 steps, too few"):
        post = fit(
            build_model(X, y, hidden_layer_sizes=(2,), random_state=0), n_iter=5, random_seed=0
        )
    d = post.diagnostics
    assert d["converged"] is False and d["z"] is None and d["final_loss"] is None


def test_warn_false_keeps_the_diagnostics_without_warning(tiny):
    X, y = tiny
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = fit(
            build_model(X, y, hidden_layer_sizes=(2,), random_state=0),
            n_iter=100,
            random_seed=0,
            warn=False,
        )
    assert post.diagnostics["converged"] is False


@pytest.mark.parametrize(
    "loss, converged",
    [
        # levelled off: noise around a constant
        (100 + np.random.default_rng(0).normal(0, 5, 4000), True),
        # still falling 10 per 400 steps: 10% of the loss, ~30 standard errors
        (np.linspace(200, 100, 4000) + np.random.default_rng(1).normal(0, 5, 4000), False),
        # a significant but tiny fall (0.1% of the loss): not worth more steps
        (np.linspace(10_020, 10_000, 4000) + np.random.default_rng(2).normal(0, 1, 4000), True),
        # a fall of 2% hidden in minibatch-like noise (within 3 standard errors): noise
        (np.linspace(103, 100, 4000) + np.random.default_rng(3).standard_t(2, 4000) * 40, True),
    ],
    ids=["flat", "falling", "tiny-fall", "noisy"],
)
def test_vi_rule_on_synthetic_losses(loss, converged):
    """Flag only a fall that is both beyond the noise and more than 1% of the loss."""
    d = diagnose(_vi(loss))
    assert d["window"] == 400 and d["converged"] is converged
    assert (d["z"] > I.ELBO_NOISE_Z and d["relative_decrease"] > I.ELBO_RELATIVE_TOL) is (
        not converged
    )


def test_spikes_neither_fake_a_fall_nor_inflate_the_noise():
    """A few huge losses in the earlier window (heavy-tailed minibatch estimates) would
    move a plain mean by ~60 (60% of the loss); the trimmed means and the median-based
    noise level ignore them."""
    rng = np.random.default_rng(0)
    loss = 100 + rng.normal(0, 2, 4000)
    base = diagnose(_vi(loss))
    loss[[3250, 3300, 3350]] += 1e4
    d = diagnose(_vi(loss))
    assert base["converged"] and d["converged"]
    assert d["noise_se"] == pytest.approx(base["noise_se"], rel=0.05)
    assert abs(d["decrease"] - base["decrease"]) < 0.1


# ---------------------------------------------------------------------------- NUTS
@pytest.fixture(scope="module")
def separable():
    """80 points, 2 features, a noisy linear boundary (the posterior is proper)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=80) > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def nuts_clf(separable):
    """Bayesian logistic regression by NUTS, 2 short chains; warnings recorded."""
    X, y = separable
    clf = BayesianMLPClassifier(
        hidden_layer_sizes=(), inference="nuts", n_draws=200, tune=200, chains=2, random_state=0
    )
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", SamplingWarning)
        clf.fit(X, y)
    clf._test_warnings = [w for w in record if issubclass(w.category, SamplingWarning)]
    return clf


def _logits_by_numpy(clf, X):
    """(chain, draw, point) logits from the stored draws, by NumPy: X @ w0 + b0."""
    post = clf.posterior_.idata.posterior
    w0, b0 = post["w0"].values, post["b0"].values  # (c, d, 2, 1), (c, d, 1)
    return np.einsum("pf,cdfo->cdpo", X, w0)[..., 0] + b0[..., None, 0]


def test_nuts_rhat_and_ess_are_of_the_logits_at_training_points(nuts_clf, separable):
    import arviz as az

    X, _ = separable
    d = nuts_clf.diagnostics_
    assert set(d) == NUTS_KEYS and d["method"] == "nuts"
    assert d["n_chains"] == 2 and d["n_draws"] == 200
    assert d["quantity"] == "logit" and d["n_points"] == 50 and d["n_quantities"] == 50
    assert d["rhat_threshold"] == 1.01 and d["ess_threshold"] == 200
    rows = np.unique(np.linspace(0, 79, 50).round().astype(int))
    logits = _logits_by_numpy(nuts_clf, X[rows])
    assert logits.shape == (2, 200, 50)
    rhat = az.rhat(logits, method="rank", chain_axis=0, draw_axis=1)
    bulk = az.ess(logits, method="bulk", chain_axis=0, draw_axis=1)
    tail = az.ess(logits, method="tail", prob=0.05, chain_axis=0, draw_axis=1)
    assert d["max_rhat"] == pytest.approx(np.max(rhat), rel=1e-9)
    assert d["min_ess_bulk"] == pytest.approx(np.min(bulk), rel=1e-9)
    assert d["min_ess_tail"] == pytest.approx(np.min(tail), rel=1e-9)
    stats = nuts_clf.posterior_.idata.sample_stats
    assert d["n_divergences"] == int(stats["diverging"].values.sum())
    _assert_plain(d)


def test_nuts_warns_exactly_when_a_check_fails(nuts_clf):
    d = nuts_clf.diagnostics_
    failed = (
        d["n_divergences"] > 0
        or d["max_rhat"] > d["rhat_threshold"]
        or min(d["min_ess_bulk"], d["min_ess_tail"]) < d["ess_threshold"]
    )
    assert d["converged"] is not failed
    assert len(nuts_clf._test_warnings) == int(failed)
    if failed:
        assert str(nuts_clf._test_warnings[0].message) == d["message"]


def test_diagnostics_survive_save_load_and_pickle(nuts_clf, advi_clf, separable, tmp_path):
    X, _ = separable
    for clf in (nuts_clf, advi_clf):
        loaded = BayesianMLPClassifier.load(clf.save(tmp_path / f"{clf.inference}.nc"))
        assert loaded.diagnostics_ == clf.diagnostics_
        assert dict(loaded.posterior_.diagnostics) == clf.diagnostics_
        unpickled = pickle.loads(pickle.dumps(clf))
        assert unpickled.diagnostics_ == clf.diagnostics_
        assert dict(unpickled.posterior_.diagnostics) == clf.diagnostics_
    # a loaded NUTS posterior has no model (no data) and no sampler statistics, but the
    # same draws: given the training X, diagnose reproduces R-hat and ESS
    loaded = BayesianMLPClassifier.load(nuts_clf.save(tmp_path / "n.nc"))
    bare = diagnose(loaded.posterior_)
    assert bare["n_points"] == 0 and bare["max_rhat"] is None
    again = diagnose(loaded.posterior_, X=X)
    assert (again["n_points"], again["quantity"]) == (50, "logit")
    for key in ("max_rhat", "min_ess_bulk", "min_ess_tail"):
        assert again[key] == pytest.approx(nuts_clf.diagnostics_[key], rel=1e-12)


def test_files_without_diagnostics_load_with_an_empty_dict(advi_clf, tmp_path):
    import h5py

    path = advi_clf.save(tmp_path / "old.nc")
    with h5py.File(path, "r+") as f:
        meta = json.loads(f.attrs["pymc_bnn_metadata"])
        del meta["diagnostics"]
        f.attrs["pymc_bnn_metadata"] = json.dumps(meta)
    loaded = BayesianMLPClassifier.load(path)
    assert loaded.diagnostics_ == {} and dict(loaded.posterior_.diagnostics) == {}


def _synthetic_nuts(offsets, n_divergent: int) -> Posterior:
    """A NUTS posterior of logistic regression whose chains sit at ``offsets`` of the
    bias (offset 0 for all: well mixed), with ``n_divergent`` divergences."""
    rng = np.random.default_rng(0)
    n_chains, n_draws = len(offsets), 500
    w0 = rng.normal(size=(n_chains, n_draws, 2, 1))
    b0 = rng.normal(size=(n_chains, n_draws, 1)) + np.asarray(offsets)[:, None, None]
    diverging = np.zeros((n_chains, n_draws), dtype=bool)
    diverging.flat[:n_divergent] = True
    tree = xr.DataTree.from_dict(
        {
            "/posterior": xr.Dataset(
                {
                    "w0": (("chain", "draw", "w0_dim_0", "w0_dim_1"), w0),
                    "b0": (("chain", "draw", "b0_dim_0"), b0),
                }
            ),
            "/sample_stats": xr.Dataset({"diverging": (("chain", "draw"), diverging)}),
        }
    )
    return Posterior(method="nuts", spec=SPEC, seed=0, idata=tree, nuts_sampler="numpyro")


def test_nuts_warning_logic_on_synthetic_draws():
    X = np.random.default_rng(2).normal(size=(60, 2))
    good = diagnose(_synthetic_nuts([0.0, 0.0], 0), X=X)
    assert good["converged"] is True and good["message"] == ""
    assert good["max_rhat"] < 1.01 and good["min_ess_bulk"] > 200
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D.warn_diagnostics(good, stacklevel=1)  # silent

    bad = diagnose(_synthetic_nuts([0.0, 3.0], 7), X=X)
    assert bad["converged"] is False and bad["n_divergences"] == 7
    assert bad["max_rhat"] > 1.5 and bad["n_points"] == 50
    with pytest.warns(
        SamplingWarning,
        match=r"7 divergent transitions in 1,000 draws.*"
        r"R-hat up to \d\.\d{3} \(> 1\.01\).*target_accept.*sample_more",
    ):
        D.warn_diagnostics(bad, stacklevel=1)
    assert issubclass(SamplingWarning, ConvergenceWarning)

    # without points only the divergences are checked
    only_div = diagnose(_synthetic_nuts([0.0, 3.0], 0))
    assert only_div["converged"] is True and only_div["max_rhat"] is None


@pytest.mark.parametrize("kind", ["3-class", "regression"])
def test_predictive_quantities_of_other_heads(kind):
    """Three classes: logits centred over classes (softmax identifies only those);
    regression: the network's mean. Checked against NumPy on synthetic draws."""
    rng = np.random.default_rng(0)
    k = 3 if kind == "3-class" else 1
    spec = NetworkSpec(
        n_features=2,
        hidden_layer_sizes=(),
        n_classes=3 if k == 3 else 0,
        activation="tanh",
        prior_sigma=1.0,
        n_rows=60,
        batch_size=None,
        likelihood="categorical" if k == 3 else "normal",
    )
    w0, b0 = rng.normal(size=(2, 40, 2, k)), rng.normal(size=(2, 40, k))
    data = {"w0": (("chain", "draw", "i", "o"), w0), "b0": (("chain", "draw", "o"), b0)}
    if k == 1:
        data["sigma"] = (("chain", "draw"), np.abs(rng.normal(size=(2, 40))))
    tree = xr.DataTree.from_dict({"/posterior": xr.Dataset(data)})
    post = Posterior(method="nuts", spec=spec, seed=0, idata=tree)
    X = rng.normal(size=(5, 2))
    values, quantity = D._network_outputs(post, X, None)
    out = np.einsum("pf,cdfo->cdpo", X, w0) + b0[:, :, None, :]
    if k == 3:
        assert quantity == "centred_logit"
        expected = (out - out.mean(-1, keepdims=True)).reshape(2, 40, 15)
    else:
        assert quantity == "mean"
        expected = out[..., 0]
    np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-12)
    d = diagnose(post, X=X)
    assert d["quantity"] == quantity and d["n_quantities"] == 5 * k
    assert d["n_divergences"] is None  # no sampler statistics stored


def test_bad_inputs_are_named():
    post = _synthetic_nuts([0.0, 0.0], 0)
    with pytest.raises(ValueError, match=r"X must have shape \(n_points, 2\)"):
        diagnose(post, X=np.zeros((4, 3)))
    with pytest.raises(TypeError, match="must be a Posterior"):
        diagnose({"method": "advi"})
    with pytest.raises(TypeError, match="diagnostics must be a mapping"):
        Posterior(method="advi", spec=SPEC, seed=0, diagnostics=[1, 2])


def test_one_chain_has_no_rhat_but_ess():
    X = np.random.default_rng(2).normal(size=(10, 2))
    d = diagnose(_synthetic_nuts([0.0], 0), X=X)
    assert d["max_rhat"] is None and d["min_ess_bulk"] > 100 and d["converged"] is True


def test_nuts_without_warm_up_diverges_and_warns(separable):
    """No tuning: NUTS keeps its initial step size, far too large for a hidden layer."""
    X, y = separable
    model = build_model(X, y, hidden_layer_sizes=(3,), random_state=0)
    with pytest.warns(SamplingWarning, match=r"\d+ divergent transitions in 200 draws"):
        post = fit(model, method="nuts", draws=100, tune=0, chains=2, random_seed=0)
    d = post.diagnostics
    assert d["n_divergences"] == int(post.idata.sample_stats["diverging"].values.sum()) > 0
    assert d["converged"] is False


def test_sample_more_recomputes_the_diagnostics(separable):
    X, y = separable
    clf = BayesianMLPClassifier(
        hidden_layer_sizes=(), inference="nuts", n_draws=100, tune=100, chains=2, random_state=1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)  # 100 draws: ESS < 200 likely
        clf.fit(X, y)
        before = clf.diagnostics_
        clf.sample_more(150)
    assert (before["n_draws"], clf.diagnostics_["n_draws"]) == (100, 250)
    assert clf.diagnostics_ == dict(clf.posterior_.diagnostics) == diagnose(clf.posterior_)


def test_minibatch_default_fit_kept_by_the_estimator_levelled_off(minibatch_clf):
    """(One of its temperature-selection fits warns; see conftest.minibatch_clf.)"""
    d = minibatch_clf.diagnostics_
    assert d["converged"] is True and d["n_steps"] == 10_000
