"""Hierarchical (multi-task) networks, Neal's precision prior, NUTS warm start and resume."""

import arviz as az
import numpy as np
import pandas as pd
import pytest
from reference import numpy_forward_proba

import pymc_bnn.inference as I
import pymc_bnn.predictive._forward as FG
import pymc_bnn.predictive._predictive as P
from pymc_bnn import (
    BayesianMLPClassifier,
    BayesianMLPRegressor,
    NetworkSpec,
    build_model,
    fit,
    network_spec,
)
from pymc_bnn.datasets import make_rotated_moons
from pymc_bnn.inference import _fitting as fitting
from pymc_bnn.inference import _nuts as nuts

ATOL = 2e-6 if FG.backend()[1] == "float32" else 1e-12


@pytest.fixture(scope="module")
def tasks():
    """Four rotated-moons tasks, 60 points each (30 train / 30 test)."""
    return make_rotated_moons(n_tasks=4, n_samples=60, random_state=0)


@pytest.fixture(scope="module")
def hier_clf(tasks):
    """Hierarchical ADVI with string group labels."""
    labels = np.array(["north", "east", "south", "west"])
    return BayesianMLPClassifier(n_iter=4000, random_state=0).fit(
        tasks["X_train"], tasks["y_train"], groups=labels[tasks["groups_train"]]
    ), labels


# ------------------------------------------------------------------ model building
def test_hierarchical_model_structure(tasks):
    model = build_model(
        tasks["X_train"],
        tasks["y_train"],
        groups=tasks["groups_train"],
        hidden_layer_sizes=(3,),
        random_state=0,
    )
    spec = network_spec(model)
    assert spec.n_groups == 4 and spec.hierarchical
    names = {rv.name for rv in model.free_RVs}
    assert {"w0_mu", "w0_sd", "w0_eps", "b1_mu", "b1_sd", "b1_eps"} <= names
    point = model.initial_point()
    assert point["w0_eps"].shape == (4, 2, 3)
    # the per-group weights are mu + sd * eps (non-centred)
    w0 = model["w0"].eval(
        {
            model["w0_mu"]: np.ones((2, 3)),
            model["w0_sd"]: 2.0,
            model["w0_eps"]: np.arange(24.0).reshape(4, 2, 3),
        }
    )
    np.testing.assert_allclose(w0, 1 + 2 * np.arange(24.0).reshape(4, 2, 3))


@pytest.mark.parametrize(
    "groups, match",
    [
        (np.zeros(5, dtype=int), "one entry per row"),
        ("float", "integer group codes"),
        ("negative", "0 .. n_groups - 1"),
    ],
)
def test_build_model_rejects_bad_groups(tiny, groups, match):
    X, y = tiny
    if isinstance(groups, str):
        groups = np.linspace(0, 1, len(y)) if groups == "float" else -np.ones(len(y), int)
    with pytest.raises(ValueError, match=match):
        build_model(X, y, groups=groups)


def test_grouped_forward_equals_numpy_loop_per_point():
    """The compiled predictive gathers each point's group weights (no loop over groups):
    it equals a NumPy loop over draws and points with that point's group's weights."""
    spec = NetworkSpec(
        n_features=2,
        hidden_layer_sizes=(4,),
        n_classes=3,
        activation="tanh",
        prior_sigma=1.0,
        n_rows=10,
        batch_size=None,
        n_groups=3,
    )
    rng = np.random.default_rng(0)
    post = {}
    for (w, b), (fi, fo) in zip(spec.weight_names, spec.layer_shapes):
        post[w] = rng.normal(size=(1, 7, 3, fi, fo))
        post[b] = rng.normal(size=(1, 7, 3, fo))
        post[f"{w}_mu"] = rng.normal(size=(1, 7, fi, fo))
        post[f"{b}_mu"] = rng.normal(size=(1, 7, fo))
    pred = P.from_idata(spec, az.from_dict({"posterior": post}))
    X = rng.normal(size=(11, 2))
    groups = np.array([0, 1, 2, -1, 2, 1, 0, 0, -1, 2, 1])
    proba = pred.sample_proba(X, groups)
    assert proba.shape == (7, 11, 3)
    for i, g in enumerate(groups):
        if g >= 0:
            weights = [(post[w][0, :, g], post[b][0, :, g]) for w, b in spec.weight_names]
        else:  # unseen group: population-level weights
            weights = [(post[f"{w}_mu"][0], post[f"{b}_mu"][0]) for w, b in spec.weight_names]
        expected = numpy_forward_proba(X[i : i + 1], weights)
        np.testing.assert_allclose(proba[:, i : i + 1], expected, rtol=0, atol=ATOL)
    # no groups at all: every point through the population weights
    np.testing.assert_allclose(pred.sample_proba(X), pred.sample_proba(X, -np.ones(11, int)))
    with pytest.raises(ValueError, match="-1 .. 2"):
        pred.sample_proba(X, np.full(11, 3))


# ----------------------------------------------------------------------- estimator
def test_hierarchical_estimator_fit_predict(hier_clf, tasks):
    clf, labels = hier_clf
    assert list(clf.groups_) == sorted(labels)
    # prior_sigma="auto" is 1.0 for hierarchical networks (no evidence step for them yet)
    assert clf.prior_sigma_ == 1.0 and clf.evidence_ is None
    g_test = labels[tasks["groups_test"]]
    proba = clf.predict_proba(tasks["X_test"], groups=g_test)
    assert proba.shape == (len(g_test), 2)
    acc = np.mean(clf.predict(tasks["X_test"], groups=g_test) == tasks["y_test"])
    assert acc >= 0.8, acc
    assert clf.score(tasks["X_test"], tasks["y_test"], groups=g_test) == acc
    unc = clf.predict_uncertainty(tasks["X_test"], groups=g_test)
    assert unc["entropy"].shape == (len(g_test),)
    assert clf.sample_proba(tasks["X_test"], groups=g_test).shape == (500, len(g_test), 2)


def test_multiclass_hierarchical_fits_through_pm_fit():
    """Three classes with per-group weights: the JAX scan cannot compile the Categorical
    likelihood's row count there (a runtime-checked broadcast reaches an ARange), so ADVI
    runs through pm.fit instead (the Posterior says so) and the model still learns."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 2))
    groups = np.repeat([0, 1], 120)
    # group 1 swaps classes 0 and 2: only per-group weights fit both
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    y = np.where(groups == 1, 2 - y, y)
    clf = BayesianMLPClassifier(
        (5,), inference="advi", posterior_temperature=1.0, random_state=0
    ).fit(X, y, groups=groups)
    assert clf.posterior_.engine == "pymc"
    assert clf.predict_proba(X, groups=groups).shape == (240, 3)
    assert clf.score(X, y, groups=groups) > 0.8


@pytest.mark.parametrize(
    "params, grouped, expected",
    [
        ({}, True, "nuts"),
        ({}, False, "advi"),
        ({"posterior_temperature": 1.0}, True, "nuts"),
        # a setting only variational inference uses asks for it
        ({"n_iter": 100}, True, "advi"),
        ({"learning_rate": 0.1}, True, "advi"),
        ({"batch_size": 8}, True, "advi"),
        ({"posterior_temperature": 0.5}, True, "advi"),
        # batch_size "auto" (the default) or None (full batches) ask for nothing
        ({"batch_size": "auto"}, True, "nuts"),
        ({"batch_size": None}, True, "nuts"),
        ({"n_init": 2}, True, "advi"),
        ({"n_init": 1}, True, "nuts"),
        # an explicit method is kept
        ({"inference": "advi"}, True, "advi"),
        ({"inference": "nuts"}, False, "nuts"),
        ({"inference": "fullrank_advi"}, True, "fullrank_advi"),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else str(v),
)
def test_auto_inference_rule(params, grouped, expected):
    assert BayesianMLPClassifier(**params)._resolve_inference(grouped=grouped) == expected
    # the regressor's "auto" is ADVI with groups too (not measured for regression)
    regressor = BayesianMLPRegressor(**params)._resolve_inference(grouped=grouped)
    assert regressor == (expected if params.get("inference", "auto") != "auto" else "advi")


def test_default_fit_without_groups_is_variational(hier_clf):
    # without groups "auto" is ADVI, or the ADVI + Laplace mixture where affordable
    # (tests/policy/test_mixture_classifier.py); with n_iter given: ADVI alone
    assert hier_clf[0].inference_ == "advi"


# 30 draws per chain: ESS below 100 per chain is expected; the test is about which
# path the default takes, not about mixing
@pytest.mark.filterwarnings("ignore::pymc_bnn.exceptions.SamplingWarning")
def test_default_fit_with_groups_samples_with_nuts(tasks, tmp_path):
    """inference="auto" samples a hierarchical network with NUTS, on the backend
    preferred for hierarchical models (nutpie where installed), reproducibly."""
    X, y, g = tasks["X_train"], tasks["y_train"], tasks["groups_train"]
    copies = X.copy(), y.copy(), g.copy()

    def make():
        return BayesianMLPClassifier((3,), tune=100, n_draws=30, random_state=0)

    clf = make().fit(X, y, groups=g)
    for original, copy in zip((X, y, g), copies):
        np.testing.assert_array_equal(original, copy)
    assert clf.inference_ == "nuts" and clf.posterior_.method == "nuts"
    assert clf.posterior_.nuts_sampler == I.default_nuts_sampler(hierarchical=True)
    assert clf.approx_ is None and clf.loss_curve_.size == 0
    assert clf.posterior_temperature_ == 1.0 and clf.temperature_selection_ is None
    assert clf.prior_sigma_ == 1.0 and clf.evidence_ is None
    post = clf.idata_.posterior
    assert (post.sizes["chain"], post.sizes["draw"]) == (2, 30)
    assert clf.diagnostics_["method"] == "nuts" and clf.diagnostics_["n_points"] > 0
    proba = clf.predict_proba(tasks["X_test"], groups=tasks["groups_test"])
    np.testing.assert_array_equal(
        make().fit(X, y, groups=g).predict_proba(tasks["X_test"], groups=tasks["groups_test"]),
        proba,
    )
    loaded = BayesianMLPClassifier.load(clf.save(tmp_path / "auto.nc"))
    assert loaded.inference_ == "nuts"
    np.testing.assert_array_equal(
        loaded.predict_proba(tasks["X_test"], groups=tasks["groups_test"]), proba
    )


def test_unseen_group_uses_population_weights(hier_clf, tasks):
    clf, labels = hier_clf
    X = tasks["X_test"][:10]
    unseen = clf.predict_proba(X, groups=np.array(["atlantis"] * 10))
    no_groups = clf.predict_proba(X)
    np.testing.assert_array_equal(unseen, no_groups)
    # ... which are the population-level (mu) weights, by a NumPy loop
    post = clf.idata_.posterior
    mu = [
        (post[f"{w}_mu"].values[0], post[f"{b}_mu"].values[0])
        for w, b in clf.posterior_.spec.weight_names
    ]
    expected = numpy_forward_proba(X, mu).mean(0)
    np.testing.assert_allclose(unseen, expected, rtol=0, atol=ATOL)
    # a seen group differs from the population
    seen = clf.predict_proba(X, groups=np.array(["north"] * 10))
    assert np.max(np.abs(seen - unseen)) > 1e-3
    # mixed labels: each row as its own group would give
    mixed = np.array(["north", "atlantis"] * 5)
    np.testing.assert_allclose(clf.predict_proba(X, groups=mixed)[::2], seen[::2])


def test_groups_are_validated(hier_clf, tasks, advi_clf, moons):
    clf, labels = hier_clf
    X = tasks["X_test"][:6]
    with pytest.raises(ValueError, match="one group label per row"):
        clf.predict(X, groups=labels[:3])
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(X, groups=np.full(6, np.nan))
    with pytest.raises(ValueError, match="fit without groups"):
        advi_clf.predict(moons[1][:6], groups=np.zeros(6))
    with pytest.raises(ValueError, match="one group label per row"):
        BayesianMLPClassifier(n_iter=10).fit(tasks["X_train"], tasks["y_train"], groups=[0, 1])
    # labels of another type would all be unseen groups, silently (searchsorted compares
    # 1 with "north" without an error)
    with pytest.raises(
        ValueError,
        match="groups holds number labels, but the estimator was "
        "fit with text groups .'east', 'north', 'south', ....",
    ):
        clf.predict(X, groups=np.arange(6))
    # a text column with gaps: named, not np.unique's float-vs-str TypeError
    gappy = pd.Series(["north"] * 5 + [pd.NA], dtype="string")
    with pytest.raises(ValueError, match="missing label .<NA>. at position 5"):
        clf.predict(X, groups=gappy)
    n = len(tasks["y_train"])
    with pytest.raises(ValueError, match="missing label .nan. at position 1"):
        BayesianMLPClassifier(n_iter=10).fit(
            tasks["X_train"], tasks["y_train"], groups=np.array(["a", np.nan] * (n // 2), object)
        )
    with pytest.raises(ValueError, match="groups mixes number and text labels"):
        BayesianMLPClassifier(n_iter=10).fit(
            tasks["X_train"], tasks["y_train"], groups=np.array(["a", 1] * (n // 2), object)
        )


def test_groups_input_not_mutated_and_refit_without_groups_forgets_them(tasks):
    g = tasks["groups_train"].copy()
    # one fit each (no cross-fitted temperature): the test is about the groups input
    clf = BayesianMLPClassifier(
        hidden_layer_sizes=(2,), n_iter=3000, random_state=0, posterior_temperature=1.0
    )
    clf.fit(tasks["X_train"], tasks["y_train"], groups=g)
    np.testing.assert_array_equal(g, tasks["groups_train"])
    assert hasattr(clf, "groups_")
    clf.fit(tasks["X_train"], tasks["y_train"])
    assert not hasattr(clf, "groups_") and not clf.posterior_.spec.hierarchical


def test_hierarchical_save_load_roundtrip(hier_clf, tasks, tmp_path):
    clf, labels = hier_clf
    with pytest.raises(FileNotFoundError, match="No such folder: .*absent"):
        clf.save(tmp_path / "absent" / "model.nc")
    path = clf.save(tmp_path / "hier.nc")
    loaded = BayesianMLPClassifier.load(path)
    g = np.array(["south", "atlantis"] * 5)
    np.testing.assert_array_equal(loaded.groups_, clf.groups_)
    np.testing.assert_array_equal(
        loaded.predict_proba(tasks["X_test"][:10], groups=g),
        clf.predict_proba(tasks["X_test"][:10], groups=g),
    )


# ------------------------------------------------------------------------ Neal prior
def _linear_data(weight_scale, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 10))
    w = rng.normal(0.0, weight_scale, size=10)
    y = (rng.random(400) < 1 / (1 + np.exp(-X @ w))).astype(int)
    return X, y


def test_gamma_precision_prior_structure(tiny):
    X, y = tiny
    model = build_model(
        X,
        y,
        hidden_layer_sizes=(3,),
        prior="gamma_precision",
        precision_shape=2.0,
        precision_rate=0.5,
    )
    names = {rv.name for rv in model.free_RVs}
    assert {"w0_precision", "b0_precision", "w1_precision", "b1_precision", "w0_raw"} <= names
    # w = raw / sqrt(precision)
    w0 = model["w0"].eval({model["w0_raw"]: np.ones((2, 3)), model["w0_precision"]: 4.0})
    np.testing.assert_allclose(w0, 0.5)
    with pytest.raises(ValueError, match="prior must be one of"):
        build_model(X, y, prior="laplace")
    with pytest.raises(ValueError, match="precision_rate"):
        build_model(X, y, prior="gamma_precision", precision_rate=0.0)


def test_gamma_precision_prior_learns_larger_precision_for_small_weights():
    """Synthetic check with a known answer (Bayesian logistic regression, no hidden
    layer): labels from true weights of scale 0.1 vs 3. Neal's prior must infer a
    much larger weight precision (~1/0.1^2 vs ~1/3^2) for the first; we ask for a
    factor of 5, far below the ~900 of the truth but well above ADVI noise."""
    precisions = {}
    for scale in (0.1, 3.0):
        X, y = _linear_data(scale)
        model = build_model(X, y, hidden_layer_sizes=(), prior="gamma_precision", random_state=0)
        post = fit(model, n_iter=4000, random_seed=0)
        draws = post.approx.sample(500, random_seed=1).posterior
        precisions[scale] = float(draws["w0_precision"].mean())
    assert precisions[0.1] > 5 * precisions[3.0], precisions


def test_estimator_with_gamma_precision_prior(moons):
    X_train, X_test, y_train, y_test = moons
    # one fit (no cross-fitted temperature): the test is about the prior
    clf = BayesianMLPClassifier(
        prior="gamma_precision", n_iter=10_000, random_state=0, posterior_temperature=1.0
    )
    clf.fit(X_train, y_train)
    assert clf.score(X_test, y_test) >= 0.93
    assert "w0_precision" in clf.idata_.posterior
    assert clf.evidence_ is None  # prior_sigma="auto": no scales to choose for this prior


# ------------------------------------------------------- NUTS warm start and resume
@pytest.mark.slow
# 100 draws per chain: ESS below 100 per chain and R-hat ~1.03 are expected; the test
# is about where the chains start
@pytest.mark.filterwarnings("ignore::pymc_bnn.exceptions.SamplingWarning")
def test_nuts_warm_start_from_advi_draws(tiny, monkeypatch):
    X, y = tiny
    seen = {}
    real = fitting.sample_nuts

    def spy(model, sampler, **kwargs):
        seen.update(kwargs)
        return real(model, sampler, **kwargs)

    monkeypatch.setattr(fitting, "sample_nuts", spy)  # the name fit() calls
    model = build_model(X, y, hidden_layer_sizes=(2,), random_state=0)
    post = fit(
        model,
        method="nuts",
        draws=100,
        tune=200,
        chains=2,
        nuts_init="advi",
        init_n_iter=500,
        random_seed=0,
    )
    starts = seen["initvals"]
    assert len(starts) == 2 and set(starts[0]) == {"w0", "b0", "w1", "b1"}
    assert not np.allclose(starts[0]["w0"], starts[1]["w0"])  # one draw per chain
    # the chains start in the bulk of the posterior: higher log-density than the prior
    logp = model.compile_logp()
    jittered = model.initial_point()
    assert all(logp(s) > logp(jittered) for s in starts)
    assert post.idata.posterior.sizes["chain"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["numpyro", "pymc"])
# 100 (then 160) draws per chain: ESS below 100 per chain is expected; the test is about
# how the chains continue
@pytest.mark.filterwarnings("ignore::pymc_bnn.exceptions.SamplingWarning")
def test_sample_more_continues_the_chains(tiny, sampler):
    pytest.importorskip("numpyro") if sampler == "numpyro" else None
    X, y = tiny
    model = build_model(X, y, hidden_layer_sizes=(2,), random_state=0)
    post = fit(
        model, method="nuts", draws=100, tune=300, chains=2, nuts_sampler=sampler, random_seed=0
    )
    plan = nuts._resume_plan(post)
    old = post.idata
    more = I.sample_more(post, 60, random_seed=1)
    new = more.idata
    assert new.posterior.sizes["draw"] == 160 and new.posterior.sizes["chain"] == 2
    for name in ("w0", "b1"):  # the old draws are kept as they were
        np.testing.assert_array_equal(
            new.posterior[name].values[:, :100], old.posterior[name].values
        )
    for c in range(2):
        # each chain restarts from its own last draw ...
        np.testing.assert_array_equal(plan[c]["start"]["w0"], old.posterior["w0"].values[c, -1])
        # ... with its adapted step size, not re-tuned during the new draws
        np.testing.assert_allclose(
            new.sample_stats["step_size"].values[c, 100:],
            old.sample_stats["step_size"].values[c, -1],
            rtol=1e-6,
        )
    assert np.all(np.isfinite(new.posterior["w0"].values))
    # the original posterior is untouched (results are immutable)
    assert post.idata.posterior.sizes["draw"] == 100
    with pytest.raises(ValueError, match="draws must be an integer"):
        I.sample_more(post, 0)


@pytest.mark.slow
# 50 (then 75) draws per chain: ESS below 100 per chain is expected; the test is about
# the estimator's bookkeeping
@pytest.mark.filterwarnings("ignore::pymc_bnn.exceptions.SamplingWarning")
def test_estimator_sample_more_and_errors(tiny, advi_clf, tmp_path):
    X, y = tiny
    clf = BayesianMLPClassifier(
        hidden_layer_sizes=(2,), inference="nuts", n_draws=50, tune=200, random_state=0
    ).fit(X, y)
    assert clf.predictive_.n_draws == 100
    before = clf.idata_.posterior["w0"].values.copy()
    clf.sample_more(25)
    assert clf.predictive_.n_draws == 150
    np.testing.assert_array_equal(clf.idata_.posterior["w0"].values[:, :50], before)
    with pytest.raises(ValueError, match="continues NUTS chains"):
        advi_clf.sample_more(10)
    loaded = BayesianMLPClassifier.load(clf.save(tmp_path / "nuts.nc"))
    with pytest.raises(ValueError, match="no model attached"):
        loaded.sample_more(10)
