"""The regressor's ``inference="auto"`` samples small tables with a short NUTS run
(:data:`pymc_bnn.policy.thresholds.AUTO_NUTS_MAX_WORK`): when it is taken, that it is
``inference="nuts"`` with the short run's settings draw for draw, and when it is not."""

import warnings

import numpy as np
import pytest

from pymc_bnn import BayesianMLPRegressor
from pymc_bnn.policy import _choice
from pymc_bnn.policy import thresholds as R

pytest.importorskip("numpyro")


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)
    return X, y


@pytest.fixture(scope="module")
def auto_fit(small):
    X, y = small
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = BayesianMLPRegressor((3,), random_state=0).fit(X, y)
    return reg, caught


def _decision(reg, shape):
    """What ``inference="auto"`` resolves to for data of ``shape`` (no fit)."""
    reg.inference_ = reg._resolve_inference(grouped=False)
    return reg._inference_for_data(shape, {}, grouped=False)


def test_auto_samples_a_small_table_with_the_short_run(auto_fit, small):
    reg, caught = auto_fit
    assert reg.inference_ == "nuts" and reg.posterior_.method == "nuts"
    run = reg.nuts_run_
    assert run["chosen"] == "auto" and run["limit"] == R.AUTO_NUTS_MAX_WORK
    # a small problem: its budget buys the most chains
    assert (run["chains"], run["tune"], run["draws"]) == (
        R.AUTO_NUTS_MAX_CHAINS,
        R.AUTO_NUTS_TUNE,
        R.AUTO_NUTS_DRAWS,
    )
    assert run["rows_x_parameters"] == 40 * (1 * 3 + 3 + 3 + 1)
    post = reg.posterior_.idata.posterior
    assert (post.sizes["chain"], post.sizes["draw"]) == (4, R.AUTO_NUTS_DRAWS)
    # each chain's own draws: not one chain's copied
    means = post["sigma"].mean("draw").values
    assert len(np.unique(np.round(means, 12))) == 4
    assert reg.posterior_temperature_ == 1.0 and reg.mixture_ is None
    # a short run's R-hat and ESS are not a converged posterior's: kept, not warned
    assert reg.diagnostics_ is not None
    from pymc_bnn.exceptions import SamplingWarning

    assert not [w for w in caught if issubclass(w.category, SamplingWarning)]
    from pymc_bnn.policy._describe import describe

    assert any("NUTS" in line and "inference='auto'" in line for line in describe(reg))
    assert not any("not the default mixture" in line for line in describe(reg))
    X, y = small
    assert np.all(np.isfinite(reg.predict(X))) and reg.score(X, y) > 0.5


def test_auto_run_equals_inference_nuts_with_its_settings(auto_fit, small):
    """The slow, obvious path: inference="nuts" asked for with the short run's
    settings gives the same draws and predictions."""
    X, y = small
    reg, _ = auto_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        given = BayesianMLPRegressor(
            (3,),
            inference="nuts",
            tune=R.AUTO_NUTS_TUNE,
            n_draws=R.AUTO_NUTS_DRAWS,
            chains=R.AUTO_NUTS_MAX_CHAINS,
            random_state=0,
        ).fit(X, y)
    assert given.nuts_run_["chosen"] == "given"
    a, b = reg.posterior_.idata.posterior, given.posterior_.idata.posterior
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values)
    np.testing.assert_array_equal(reg.predict(X), given.predict(X))
    np.testing.assert_array_equal(
        reg.log_predictive_density(X, y), given.log_predictive_density(X, y)
    )


def test_same_random_state_same_predictions(auto_fit, small):
    X, y = small
    reg, _ = auto_fit
    again = BayesianMLPRegressor((3,), random_state=0).fit(X, y)
    np.testing.assert_array_equal(reg.predict(X), again.predict(X))


@pytest.mark.parametrize(
    "params",
    [
        {"n_iter": 500},  # a setting only ADVI uses
        {"heteroscedastic": True},  # not measured
        {"prior": "normal"},  # not measured
        {"kl_weight": "auto"},  # a choice among ADVI fits
        {"nuts_sampler": "nutpie"},  # the limit is numpyro's cost
        {"posterior_temperature": 0.5},
    ],
)
def test_auto_keeps_its_other_fits_where_the_short_run_does_not_apply(params):
    reg = BayesianMLPRegressor((3,), **params)
    assert _decision(reg, (40, 1)) != "nuts" and reg.nuts_run_ is None


def test_more_chains_only_where_they_fit_the_budget_of_two_at_the_limit():
    """Four chains where rows x parameters x 4 is within 2 x the limit, two above it
    and up to the limit: the largest run costs the same either way."""
    reg = BayesianMLPRegressor((50,))
    n_params = 8 * 50 + 50 + 50 + 1
    half = R.AUTO_NUTS_CHAINS * R.AUTO_NUTS_MAX_WORK // R.AUTO_NUTS_MAX_CHAINS // n_params
    for rows, chains in [(half, 4), (half + 1, 2), (R.AUTO_NUTS_MAX_WORK // n_params, 2)]:
        reg.inference_ = _decision(reg, (rows, 8))  # as the fit sets it
        assert reg.inference_ == "nuts"
        assert reg.nuts_run_["chains"] == chains == _choice.auto_nuts_chains(rows * n_params)
        assert reg._run_settings(False)["chains"] == chains  # what the sampler is given


def test_auto_fits_the_ensemble_above_the_limit():
    reg = BayesianMLPRegressor((50,))
    n_params = 8 * 50 + 50 + 50 + 1
    rows = R.AUTO_NUTS_MAX_WORK // n_params
    assert _decision(reg, (rows, 8)) == "nuts"
    assert reg.nuts_run_["rows_x_parameters"] == rows * n_params
    assert _decision(reg, (rows + 1, 8)) == "laplace_ensemble" and reg.nuts_run_ is None


def test_auto_takes_the_ensemble_without_numpyro(monkeypatch):
    import pymc_bnn.inference as I

    monkeypatch.setattr(I, "default_nuts_sampler", lambda hierarchical=False: "nutpie")
    assert _decision(BayesianMLPRegressor((3,)), (40, 1)) == "laplace_ensemble"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_refit_by_advi_forgets_the_short_run(small, monkeypatch):
    X, y = small
    reg = BayesianMLPRegressor((3,), random_state=0, n_iter=200, n_draws=20)
    reg.nuts_run_ = {"chosen": "auto"}  # as left by an earlier fit
    reg.fit(X, y)
    assert reg.inference_ != "nuts" and reg.nuts_run_ is None


def test_the_short_run_keeps_its_chains_in_threads_with_a_progress_bar(auto_fit):
    """numpyro shows no bar for chains in threads; the short run keeps the threads (the
    fit's stages say what runs), inference="nuts" keeps numpyro's bar."""
    reg, _ = auto_fit
    reg.set_params(progressbar=True)
    try:
        assert reg._run_settings(True)["progressbar"] is False
        assert "100 warm-up + 100 draws" in reg._fits_stage_name(1, None)
        given = BayesianMLPRegressor((3,), inference="nuts", progressbar=True)
        given.inference_, given.nuts_run_ = "nuts", {"chosen": "given"}
        assert given._run_settings(True)["progressbar"] is True
    finally:
        reg.set_params(progressbar=False)


def test_a_saved_model_keeps_the_run_and_info_says_it(auto_fit, small, tmp_path, capsys):
    """The run is part of the model file: a loaded regressor describes it as the fitted
    one does, and ``pymc-bnn info`` names it and shows its diagnostics as figures of a
    short run, not as a failed convergence check with advice to sample longer."""
    from pymc_bnn.cli import _main as cli
    from pymc_bnn.policy._describe import describe

    reg, _ = auto_fit
    path = tmp_path / "reg.nc"
    reg.save(path)
    loaded = BayesianMLPRegressor.load(path)
    assert loaded.nuts_run_ == reg.nuts_run_
    assert describe(loaded) == describe(reg)
    X, _ = small
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    assert cli.main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sampling: NUTS on the whole model, 4 chains x (100 warm-up + 100 draws)" in out
    assert "diagnostics: not checked for convergence (a short run" in out
    assert f"R-hat up to {reg.diagnostics_['max_rhat']:.3g}" in out
    assert "converged:" not in out and "To do" not in out


def test_info_of_a_run_asked_for_keeps_the_convergence_check(small, tmp_path, capsys):
    from pymc_bnn.cli import _main as cli

    X, y = small
    reg = BayesianMLPRegressor(
        (2,), inference="nuts", tune=20, n_draws=20, chains=1, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 20 draws do not converge: the point here
        reg.fit(X, y)
    assert reg.nuts_run_["chosen"] == "given"
    reg.save(tmp_path / "given.nc")
    assert cli.main(["info", str(tmp_path / "given.nc")]) == 0
    out = capsys.readouterr().out
    assert "sampling: NUTS on the whole model, 1 chain x (20 warm-up + 20 draws), as asked" in out
    assert "converged: False" in out and "not checked for convergence" not in out
