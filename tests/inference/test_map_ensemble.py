"""The mixture of last-layer Laplace approximations (pymc_bnn.inference._map_ensemble),
the classifier's default: its vectorised MAP fits against one network at a time, its
Gaussians and evidence against their definitions, and the estimator's path."""

import math

import numpy as np
import pytest
import scipy.linalg as sla
from sklearn.datasets import make_blobs, make_moons

from pymc_bnn import BayesianMLPClassifier
from pymc_bnn.inference._map_ensemble import (
    _evidence_precision,
    fit_map_ensemble,
    holdout_masks,
    initial_theta,
    last_layer_laplace,
    member_logit_draws,
    member_seeds,
)
from pymc_bnn.network._flat import unflatten
from pymc_bnn.policy._describe import describe
from pymc_bnn.policy._ensemble import one_standard_error_choice

SHAPES = ((2, 6), (6, 3))


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(150, n_features=2, centers=3, cluster_std=1.5, random_state=1)
    return (X - X.mean(0)) / X.std(0), y


def _numpy_objective(theta, X, y, shapes, sigma=1.0):
    (W0, b0), (W1, b1) = unflatten(theta, shapes)
    z = np.tanh(X @ W0 + b0) @ W1 + b1
    z = z - z.max(1, keepdims=True)
    nll = -(z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(len(y)), y].mean()
    return nll + 0.5 * (theta @ theta) / sigma**2 / len(y)


def test_the_vectorised_members_are_the_networks_fit_one_at_a_time(blobs):
    """Three members trained in one program (the same rows each step, the first layer
    one product) end where each ends trained alone from its own start, held-out rows
    and stopping included (a member that stops is frozen while the others go on)."""
    X, y = blobs
    holdout = holdout_masks(y, 3, seed=4, fraction=0.2)
    starts = np.stack([initial_theta(SHAPES, s) for s in member_seeds(4, 3)])
    kw = dict(layer_shapes=SHAPES, seed=4, dtype="float64", learning_rate=0.02)
    together = fit_map_ensemble(X, y, n_members=3, holdout=holdout, **kw)
    np.testing.assert_array_equal(
        together.thetas,
        fit_map_ensemble(X, y, n_members=3, holdout=holdout, starts=starts, **kw).thetas,
    )
    for k in range(3):
        alone = fit_map_ensemble(
            X, y, n_members=1, holdout=holdout[k : k + 1], starts=starts[k : k + 1], **kw
        )
        np.testing.assert_allclose(together.thetas[k], alone.thetas[0], rtol=1e-7, atol=1e-9)
        assert together.n_epochs[k] == alone.n_epochs[0]
    assert together.converged.all()
    assert len(set(together.n_epochs)) > 1  # members stopped apart: the frozen path ran


def test_the_map_fits_minimise_the_objective_they_report(blobs):
    """The recorded loss is the objective (mean NLL plus the prior's penalty over the
    rows), and the fits end near a minimum of it: the gradient of the NumPy objective
    is small at the weights reached."""
    X, y = blobs
    fit = fit_map_ensemble(
        X, y, layer_shapes=SHAPES, n_members=2, seed=0, dtype="float64", learning_rate=0.01
    )
    assert fit.converged.all()
    for k, theta in enumerate(fit.thetas):
        f0 = _numpy_objective(theta, X, y, SHAPES)
        last = fit.loss_curve[np.isfinite(fit.loss_curve[:, k]), k][-1]
        assert abs(f0 - last) < 0.02  # the epoch's average, the weights moving under it
        eps = 1e-6
        grad = np.array(
            [
                (_numpy_objective(theta + eps * e, X, y, SHAPES) - f0) / eps
                for e in np.eye(theta.size)
            ]
        )
        assert np.linalg.norm(grad) < 0.05


def test_holdout_masks_are_disjoint_stratified_blocks():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    masks = holdout_masks(y, 5, seed=0)
    assert masks.shape == (5, 100)
    assert masks.sum(0).max() == 1  # disjoint
    assert (masks.sum(1) == 10).all()
    for m in masks:  # each block has each class in proportion (dealt in turn)
        np.testing.assert_allclose(np.bincount(y[m], minlength=3), [5, 3, 2], atol=1)
    assert not holdout_masks(y[:30], 5, seed=0).any()  # too few rows: none held out


def test_the_output_layer_s_gaussian_is_the_laplace_approximation(blobs):
    """The member's logit draws are its MAP logits plus Normal noise with covariance
    phi A^-1 phi^T (A the GGN plus the evidence's precision), and the evidence's
    precision maximises the Laplace evidence over the output layer's prior precision."""
    X, y = blobs
    fit = fit_map_ensemble(
        X, y, layer_shapes=SHAPES, n_members=1, seed=1, dtype="float64", learning_rate=0.01
    )
    g = last_layer_laplace(X, y, fit.thetas[0], layer_shapes=SHAPES)
    mean, noise = member_logit_draws(
        g, X[:4], layer_shapes=SHAPES, activation="tanh", n_draws=40_000, random_seed=0
    )
    (W0, b0), (W1, b1) = unflatten(fit.thetas[0], SHAPES)
    h = np.tanh(X[:4] @ W0 + b0)
    np.testing.assert_allclose(mean, h @ W1 + b1, rtol=1e-10)
    phi = np.column_stack([h, np.ones(4)])
    cov = sla.cho_solve((g.chol, True), np.eye(g.chol.shape[0]))
    # row 0's three logits: phi_0 (x) I_3 picks its block of the (H+1)k covariance
    J = np.kron(phi[0], np.eye(3))
    np.testing.assert_allclose(np.cov(noise[:, 0, :].T), J @ cov @ J.T, rtol=0.05, atol=1e-3)
    # the evidence at the chosen precision beats its neighbours
    A = g.chol @ g.chol.T
    delta = 1.0 / g.prior_sigmas[-1] ** 2
    G = A - delta * np.eye(len(A))
    eig = np.clip(np.linalg.eigvalsh(G), 0, None)
    tail = fit.thetas[0][g.first_random :]

    def log_ev(d):  # the terms that depend on the precision
        return (
            -0.5 * d * tail @ tail + 0.5 * tail.size * math.log(d) - 0.5 * np.sum(np.log(eig + d))
        )

    assert math.isclose(delta, _evidence_precision(eig, tail @ tail, tail.size), rel_tol=1e-6)
    assert log_ev(delta) >= max(log_ev(delta * 1.3), log_ev(delta / 1.3))


def test_the_one_standard_error_rule_takes_the_smallest_value_within_noise():
    rng = np.random.default_rng(0)
    base = rng.exponential(size=400)
    noisy = np.stack([base + rng.normal(0, 0.5, 400) * 0.1 for _ in range(3)])
    assert one_standard_error_choice(noisy, [0.0, 0.1, 1.0]) == 0  # all within noise
    clear = np.stack([base + 0.5, base + 0.2, base])  # each row better by a fixed margin
    assert one_standard_error_choice(clear, [0.0, 0.1, 1.0]) == 2
    assert one_standard_error_choice(clear[::-1], [0.0, 0.1, 1.0]) == 0


@pytest.fixture(scope="module")
def default_clf():
    X, y = make_moons(300, noise=0.25, random_state=0)
    return X, y, BayesianMLPClassifier(random_state=3).fit(X, y)


def test_the_default_is_the_laplace_ensemble_and_is_reproducible(default_clf):
    X, y, clf = default_clf
    assert clf.inference_ == "laplace_ensemble"
    assert clf.posterior_.method == "laplace_ensemble"
    rec = clf.ensemble_
    assert rec["members"] == 5 and len(rec["epochs"]) == 5 and all(rec["converged"])
    assert rec["heldout_rows"] == [30] * 5
    n_draws = clf.idata_.posterior.sizes["draw"]
    assert n_draws == (5 if clf.posterior_temperature_ == 0 else clf.n_draws)
    assert np.mean(clf.predict(X) == y) > 0.9
    again = BayesianMLPClassifier(random_state=3).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    assert describe(clf)[0].startswith("predictions: 5 networks at their most probable")


def test_the_default_s_predictions_are_the_mean_over_its_members_draws(default_clf):
    """The compiled predictive equals a NumPy loop over the stored draws."""
    X, _, clf = default_clf
    post = clf.idata_.posterior
    p = []
    for d in range(post.sizes["draw"]):
        h = X
        for i in range(3):
            h = h @ post[f"w{i}"].values[0, d] + post[f"b{i}"].values[0, d]
            if i < 2:
                h = np.tanh(h)
        p.append(1 / (1 + np.exp(-h[:, 0])))
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], np.mean(p, 0), rtol=1e-5, atol=1e-6)


def test_a_fixed_temperature_fits_on_all_rows_and_draws_the_gaussians(default_clf):
    X, y, _ = default_clf
    clf = BayesianMLPClassifier(
        random_state=0, inference="laplace_ensemble", posterior_temperature=0.5, n_draws=50
    ).fit(X, y)
    assert clf.posterior_temperature_ == 0.5 and clf.temperature_selection_ is None
    assert clf.ensemble_["heldout_rows"] == [0] * 5
    assert clf.idata_.posterior.sizes["draw"] == 50
    w = clf.idata_.posterior["w0"].values[0]
    assert np.unique(w[:10], axis=0).shape[0] == 1  # a member's hidden layer: its MAP
    assert np.unique(clf.idata_.posterior["w2"].values[0, :10], axis=0).shape[0] == 10


def test_the_default_saves_and_loads(default_clf, tmp_path):
    X, _, clf = default_clf
    clf.save(tmp_path / "m.nc")
    back = BayesianMLPClassifier.load(tmp_path / "m.nc")
    assert back.inference_ == "laplace_ensemble"
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize(
    "kwargs", [{"n_iter": 100}, {"learning_rate": 0.1}, {"n_init": 2}, {"prior": "gamma_precision"}]
)
def test_the_explicit_method_refuses_settings_it_does_not_use(kwargs):
    X, y = make_moons(60, random_state=0)
    with pytest.raises(ValueError, match="does not apply to inference='laplace_ensemble'"):
        BayesianMLPClassifier(inference="laplace_ensemble", **kwargs).fit(X, y)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"n_iter": 200}, "advi"),
        ({"prior_sigma": 0.5}, "advi"),
        ({"prior": "gamma_precision"}, "advi"),
    ],
)
def test_auto_takes_the_ensemble_only_where_it_applies(kwargs, expected, monkeypatch):
    """A setting only variational inference uses, a fixed prior scale or Neal's prior
    keep ADVI (checked before any fit: the fit itself is cut short)."""
    import pymc_bnn.estimators._base as B

    class Stop(Exception):
        pass

    def stop(self, *args, **kw):
        raise Stop(self.inference_)

    monkeypatch.setattr(B.BayesianMLPBase, "_choose_prior_scales", stop)
    X, y = make_moons(60, random_state=0)
    with pytest.raises(Stop, match=expected):
        BayesianMLPClassifier(**kwargs).fit(X, y)


def _runs_predictive(distinct: bool):
    """A wide network's predictive (a fan-in above the unrolled path's) whose 12 draws
    share 3 first layers in runs of 4 (a mixture of last-layer Laplace
    approximations), or whose draws all differ."""
    from pymc_bnn.network.spec import NetworkSpec
    from pymc_bnn.predictive._predictive import PosteriorPredictive

    rng = np.random.default_rng(0)
    spec = NetworkSpec(
        n_features=20,
        hidden_layer_sizes=(7,),
        n_classes=3,
        activation="tanh",
        prior_sigma=1.0,
        n_rows=100,
        batch_size=None,
    )
    n, K = 12, 3
    W0 = np.repeat(rng.normal(0, 0.4, (K, 20, 7)), n // K, axis=0)
    b0 = np.repeat(rng.normal(0, 0.1, (K, 7)), n // K, axis=0)
    if distinct:
        W0 = W0 + rng.normal(0, 1e-3, W0.shape)
    weights = ((W0, b0), (rng.normal(0, 1, (n, 7, 3)), rng.normal(0, 0.1, (n, 3))))
    return PosteriorPredictive(spec=spec, weights=weights), weights


@pytest.mark.parametrize("distinct", [False, True])
def test_the_wide_predictive_computes_shared_first_layers_once(distinct):
    """Draws that share their first layer (runs of equal draws) go through the wide
    predictive with each distinct first layer computed once (the fast path is taken),
    and give what a NumPy loop over every draw gives; distinct draws take the plain
    path."""
    pytest.importorskip("jax")
    pred, ((W0, b0), (W1, b1)) = _runs_predictive(distinct)
    assert pred._wide
    X = np.random.default_rng(1).normal(size=(33, 20))
    shared, inputs = pred._device_inputs("float32")
    assert shared is not distinct
    if shared:
        assert np.asarray(inputs[0]).shape == (20, 3 * 7)  # three layers, not twelve
        np.testing.assert_array_equal(np.asarray(inputs[2]), np.repeat([0, 1, 2], 4))
    z = (
        np.einsum("dnh,dhk->dnk", np.tanh(np.einsum("nf,dfh->dnh", X, W0) + b0[:, None]), W1)
        + b1[:, None]
    )
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(pred.sample_proba(X), p, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(pred.mean_proba(X), p.mean(0), rtol=2e-5, atol=1e-6)


def test_describe_after_loading_says_what_the_ensemble_is(default_clf, tmp_path):
    _, _, clf = default_clf
    clf.save(tmp_path / "d.nc")
    back = BayesianMLPClassifier.load(tmp_path / "d.nc")
    assert back.ensemble_ == clf.ensemble_
    assert describe(back) == describe(clf)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"prior_sigma": 0.5, "n_iter": 300}, "a fixed prior_sigma"),
        ({"n_iter": 300}, "settings only ADVI uses"),
    ],
)
@pytest.mark.filterwarnings("ignore:ADVI stopped before")  # short fits serve here
def test_describe_says_why_auto_did_not_fit_the_ensemble(kwargs, expected):
    X, y = make_moons(80, noise=0.2, random_state=0)
    clf = BayesianMLPClassifier((3,), n_draws=20, random_state=0, **kwargs).fit(X, y)
    assert clf.inference_ == "advi"
    line = describe(clf)[0]
    assert line.startswith("fit: mean-field ADVI, not the default mixture") and expected in line
    explicit = BayesianMLPClassifier(
        (3,), inference="advi", n_iter=300, n_draws=20, random_state=0
    ).fit(X, y)
    assert not describe(explicit)[0].startswith("fit: mean-field ADVI, not")
