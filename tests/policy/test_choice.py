"""``inference="auto"``'s choice as plain functions of the parameters and the data's
size (pymc_bnn.policy._choice): what each setting leads to, and that the words
describe() uses agree with the choice the fit makes."""

import pytest

from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor
from pymc_bnn.policy._choice import (
    LAPLACE_ENSEMBLE,
    auto_inference,
    auto_nuts_chains,
    default_obstacle,
    vi_settings_given,
)
from pymc_bnn.policy.thresholds import AUTO_ENSEMBLE_MAX_ROWS, AUTO_NUTS_MAX_WORK


def _choose(est, task, n_rows=500, n_params=40, grouped=False, sampler="numpyro"):
    return auto_inference(
        est.get_params(),
        task,
        resolved="nuts" if grouped and task == "classification" else "advi",
        grouped=grouped,
        n_rows=n_rows,
        n_params=n_params,
        nuts_sampler=sampler,
    )


CLASSIFIERS = [
    ({}, 500, None),
    ({}, AUTO_ENSEMBLE_MAX_ROWS + 1, f"more than {AUTO_ENSEMBLE_MAX_ROWS:,} rows"),
    ({"prior": "gamma_precision"}, 500, "Neal's prior"),
    ({"prior_sigma": 1.0}, 500, "a fixed prior_sigma"),
    ({"n_iter": 100}, 500, "settings only ADVI uses were given"),
    ({"batch_size": 64}, 500, "settings only ADVI uses were given"),
    ({"posterior_temperature": 0.5}, 500, "settings only ADVI uses were given"),
    ({"n_init": 2}, 500, "settings only ADVI uses were given"),
]


@pytest.mark.parametrize(("params", "rows", "why"), CLASSIFIERS)
def test_the_classifier_takes_the_mixture_exactly_where_nothing_keeps_it(params, rows, why):
    est = BayesianMLPClassifier(**params)
    method, run = _choose(est, "classification", n_rows=rows)
    assert run is None
    assert default_obstacle(est.get_params(), "classification", grouped=False, n_rows=rows) == why
    assert (method == LAPLACE_ENSEMBLE) == (why is None)
    assert method in (LAPLACE_ENSEMBLE, "advi")


def test_groups_keep_what_was_resolved_and_say_so():
    est = BayesianMLPClassifier()
    assert _choose(est, "classification", grouped=True) == ("nuts", None)
    assert (
        default_obstacle(est.get_params(), "classification", grouped=True, n_rows=10)
        == "a hierarchical network (groups=)"
    )


def test_an_explicit_method_is_kept():
    for method in ("advi", "nuts", "laplace"):
        est = BayesianMLPClassifier(inference=method)
        assert auto_inference(
            est.get_params(),
            "classification",
            resolved=method,
            grouped=False,
            n_rows=50,
            n_params=10,
            nuts_sampler="numpyro",
        ) == (method, None)


def test_the_regressor_samples_small_tables_and_mixes_above_them():
    est = BayesianMLPRegressor()
    n_params = 40
    rows = AUTO_NUTS_MAX_WORK // n_params
    method, run = _choose(est, "regression", n_rows=rows, n_params=n_params)
    assert method == "nuts" and run["chosen"] == "auto"
    assert run["rows_x_parameters"] == rows * n_params and run["limit"] == AUTO_NUTS_MAX_WORK
    assert run["chains"] == auto_nuts_chains(rows * n_params)
    # one row more: the mixture; the short run is numpyro's only
    assert _choose(est, "regression", n_rows=rows + 1, n_params=n_params) == (
        LAPLACE_ENSEMBLE,
        None,
    )
    assert _choose(est, "regression", n_rows=rows, sampler="nutpie") == (LAPLACE_ENSEMBLE, None)


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"heteroscedastic": True}, "heteroscedastic"),
        ({"kl_weight": 0.25}, "settings only ADVI uses were given"),
        ({"prior": "normal"}, "prior='normal'"),
        ({"learning_rate": 0.01}, "settings only ADVI uses were given"),
    ],
)
def test_what_keeps_the_regressor_from_its_defaults(params, why):
    est = BayesianMLPRegressor(**params)
    assert default_obstacle(est.get_params(), "regression", grouped=False, n_rows=100) == why
    assert _choose(est, "regression", n_rows=100) == ("advi", None)


def test_vi_settings_given_reads_the_parameters():
    assert not vi_settings_given(BayesianMLPClassifier().get_params())
    assert not vi_settings_given(BayesianMLPClassifier(posterior_temperature=1.0).get_params())
    assert vi_settings_given(BayesianMLPClassifier(learning_rate=0.01).get_params())
