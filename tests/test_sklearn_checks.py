"""scikit-learn's own estimator checks, with a fast configuration of the estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from pymc_bnn import BayesianMLPClassifier

#: Checks that cannot pass, with the reason. The goal is none.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _fast():
    return BayesianMLPClassifier(hidden_layer_sizes=(6,), n_iter=600, n_draws=40,
                                 random_state=0)


@parametrize_with_checks([_fast()], expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
