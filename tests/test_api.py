import pytest
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


def test_no_import_circles_among_the_modules():
    """Imports point one way (``shared/DESIGN.md``'s pipeline): no module imports, at
    the top or inside a function, a module that imports it back, directly or through
    others. (Imports of the package itself are left out: its ``__init__`` imports
    lazily.)"""
    import ast
    import graphlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "pymc_bnn"
    modules = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for name in modules:
        deps = set()
        for node in ast.walk(ast.parse((root / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[0] != "pymc_bnn":
                    continue
                if len(parts) > 1:
                    deps.add(parts[1])
                else:  # from pymc_bnn import persistence
                    deps |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.Import):
                deps |= {a.name.split(".")[1] for a in node.names
                         if a.name.startswith("pymc_bnn.")}
        graph[name] = deps & modules - {name}
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import circle: {' -> '.join(exc.args[1])}")


def test_public_warnings_live_in_exceptions():
    """One module holds the warnings; the old import paths still give the same class."""
    from sklearn.exceptions import ConvergenceWarning

    from pymc_bnn import estimator, exceptions, inference

    assert exceptions.SamplingWarning is inference.SamplingWarning
    assert exceptions.InputScaleWarning is estimator.InputScaleWarning
    assert issubclass(exceptions.SamplingWarning, ConvergenceWarning)
    assert exceptions.ConvergenceWarning is ConvergenceWarning
    assert pymc_bnn.exceptions is exceptions
