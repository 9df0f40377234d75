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


def test_lazy_names_resolve_to_their_modules():
    from pymc_bnn import estimator, inference, metrics, tabular

    assert pymc_bnn.BayesianMLPClassifier is estimator.BayesianMLPClassifier
    assert pymc_bnn.fit is inference.fit
    assert pymc_bnn.metrics is metrics and pymc_bnn.tabular is tabular
    assert set(pymc_bnn.__all__) <= set(dir(pymc_bnn))
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pymc_bnn.nope


def test_import_does_not_import_pymc():
    import subprocess
    import sys

    code = ("import sys, pymc_bnn, pymc_bnn.cli, pymc_bnn.tabular; "
            "print('pymc' in sys.modules, 'pytensor' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
