import pymc_bnn


def test_public_api_is_pinned():
    assert sorted(pymc_bnn.__all__) == [
        "BayesianMLPClassifier",
        "BayesianMLPRegressor",
        "NetworkSpec",
        "Posterior",
        "PosteriorPredictive",
        "build_model",
        "fit",
        "forward",
        "network_spec",
        "posterior_predictive",
        "sample_more",
        "summarize_proba",
    ]
    for name in pymc_bnn.__all__:
        assert getattr(pymc_bnn, name).__doc__, f"{name} has no docstring"
