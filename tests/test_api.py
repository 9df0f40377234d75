from pathlib import Path

import pytest

import pymc_bnn


def test_public_api_is_pinned():
    assert sorted(pymc_bnn.__all__) == [
        "BayesianMLPClassifier",
        "BayesianMLPRegressor",
        "BayesianPipeline",
        "NetworkSpec",
        "Posterior",
        "PosteriorPredictive",
        "build_model",
        "default_initial_values",
        "fit",
        "forward",
        "make_tabular_pipeline",
        "network_spec",
        "posterior_predictive",
        "sample_more",
        "summarize_proba",
    ]
    for name in pymc_bnn.__all__:
        assert getattr(pymc_bnn, name).__doc__, f"{name} has no docstring"


def test_lazy_names_resolve_to_their_modules():
    from pymc_bnn import estimators, inference, metrics, tabular
    from pymc_bnn.tabular import pipeline

    assert pymc_bnn.BayesianMLPClassifier is estimators.BayesianMLPClassifier
    assert pymc_bnn.BayesianPipeline is pipeline.BayesianPipeline
    assert tabular.make_tabular_pipeline is pipeline.make_tabular_pipeline
    assert pymc_bnn.fit is inference.fit
    assert pymc_bnn.metrics is metrics and pymc_bnn.tabular is tabular
    # the names submodules had before the stages became subpackages
    assert pymc_bnn.persistence is estimators.persistence
    assert pymc_bnn.pipeline is pipeline
    assert set(pymc_bnn.__all__) <= set(dir(pymc_bnn))
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pymc_bnn.nope


def test_import_does_not_import_pymc():
    import subprocess
    import sys

    code = (
        "import sys, pymc_bnn, pymc_bnn.cli, pymc_bnn.tabular; "
        "print('pymc' in sys.modules, 'pytensor' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]


def _package_modules() -> dict[str, Path]:
    """The package's modules by dotted name (``inference`` for a subpackage's
    ``__init__``, ``inference.vi``), the package's own ``__init__`` left out."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "pymc_bnn"
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            found[".".join(parts)] = path
    return found


def _imports(name: str, path, modules) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) of every import of a package
    module: import statements at the top or inside a function (relative ones resolved),
    and lazy ones, a string naming a package module (``importlib.import_module(
    "pymc_bnn.x")``, a lazy-export table's ``"pymc_bnn.x"``)."""
    import ast

    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.split(".")[0] == "pymc_bnn":
                source = node.module[len("pymc_bnn.") :] if "." in node.module else ""
            else:
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}" if source else alias.name
                if sub in modules:
                    out.append((sub, None))
                elif source:
                    out.append((source, alias.name))
        elif isinstance(node, ast.Import):
            out += [
                (a.name[len("pymc_bnn.") :], None)
                for a in node.names
                if a.name.startswith("pymc_bnn.")
            ]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("pymc_bnn.")
            and node.value[len("pymc_bnn.") :] in modules
        ):
            out.append((node.value[len("pymc_bnn.") :], None))
    return out


def test_no_import_circles_among_the_modules():
    """Imports point one way (``docs/design.md``'s pipeline): no module imports, at
    the top, inside a function or lazily, a module that imports it back, directly or
    through others. A subpackage's ``__init__`` counts as a module: one of its modules
    importing from its own package's ``__init__`` is a circle. (Imports of the package
    itself are left out: its ``__init__`` imports lazily.)"""
    import graphlib

    modules = _package_modules()
    graph = {
        name: {m for m, _ in _imports(name, path, modules)} & set(modules) - {name}
        for name, path in modules.items()
    }
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import circle: {' -> '.join(exc.args[1])}")


def test_the_circle_check_sees_lazy_imports(tmp_path):
    """The import test above sees a function's import and a lazy one (by name)."""
    (tmp_path / "a.py").write_text("def f():\n    from pymc_bnn.b import g\n")
    (tmp_path / "b.py").write_text("import importlib\nM = importlib.import_module('pymc_bnn.a')\n")
    modules = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    assert _imports("a", modules["a"], modules) == [("b", "g")]
    assert _imports("b", modules["b"], modules) == [("a", None)]


def test_the_package_is_a_few_stages():
    """One folder per stage: at most 16 entries at the top of the package."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "pymc_bnn"
    entries = [
        p.name
        for p in root.iterdir()
        if p.name != "__pycache__" and (p.suffix == ".py" or (p / "__init__.py").exists())
    ]
    assert len(entries) <= 16, sorted(entries)
    stray = [
        p.name
        for p in root.iterdir()
        if p.is_dir() and p.name != "__pycache__" and not (p / "__init__.py").exists()
    ]
    assert not stray, stray


def test_no_module_imports_another_modules_private_names():
    """What a module shares is public: no ``from pymc_bnn.x import _name`` (at the top
    or in a function) between the package's modules."""
    modules = _package_modules()
    found = [
        f"{name} imports {source}.{taken}"
        for name, path in modules.items()
        for source, taken in _imports(name, path, modules)
        if taken and taken.startswith("_") and not taken.startswith("__") and source != name
    ]
    assert not found, found


def _code_lines(path: Path) -> int:
    """Lines of a module that hold code: not blank, not a comment, not a docstring."""
    import ast

    text = path.read_text(encoding="utf-8")
    docs = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(
        1
        for i, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and i not in docs
    )


def test_code_lines_count_code_only(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        '"""Doc.\n\nMore."""\n\n# note\nx = 1\n\n\ndef f():\n    """F."""\n    return x\n'
    )
    assert _code_lines(path) == 3


def test_no_module_is_over_800_lines_of_code():
    """A module a maintainer can read: none of the package's modules over 800 lines of
    code (docstrings, comments and blank lines left out: the formatter's layout is not
    the amount a reader has to hold)."""
    long = {name: n for name, path in _package_modules().items() if (n := _code_lines(path)) > 800}
    assert not long, long


def test_public_warnings_live_in_exceptions():
    """One module holds the warnings; the old import paths still give the same class."""
    from sklearn.exceptions import ConvergenceWarning

    from pymc_bnn import estimators as estimator
    from pymc_bnn import exceptions, inference

    assert exceptions.SamplingWarning is inference.SamplingWarning
    assert exceptions.InputScaleWarning is estimator.InputScaleWarning
    assert issubclass(exceptions.SamplingWarning, ConvergenceWarning)
    assert exceptions.ConvergenceWarning is ConvergenceWarning
    assert pymc_bnn.exceptions is exceptions


def test_the_tests_mirror_the_package():
    """A folder of tests per stage of the package (``runtime`` for ``_runtime``), and
    the package run as a user runs it in ``integration``."""
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    root = tests.parent / "pymc_bnn"
    stages = {p.name.lstrip("_") for p in root.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - stages == {"integration"}, folders - stages
    assert not [p.name for p in tests.glob("test_*.py") if p.stem[len("test_") :] in stages], (
        "a stage's tests belong in its folder"
    )
