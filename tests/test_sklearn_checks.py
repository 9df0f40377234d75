"""scikit-learn's own estimator checks, with a fast configuration of each estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor

#: Checks that cannot pass, with the reason. The goal is none.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _fast_classifier():
    return BayesianMLPClassifier(hidden_layer_sizes=(6,), n_iter=600, n_draws=40,
                                 posterior_temperature=1.0, random_state=0)


def _fast_regressor():
    return BayesianMLPRegressor(hidden_layer_sizes=(6,), n_iter=600, n_draws=40,
                                posterior_temperature=1.0, random_state=0)


@parametrize_with_checks([_fast_classifier(), _fast_regressor()],
                         expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
