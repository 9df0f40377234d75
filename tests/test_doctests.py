"""Every module's docstring examples run and print what they show (``evidence`` and
``tabular`` have their own, in their test modules).

The examples are what a user copies first; they fit small networks, so they also
exercise the public functions end to end.
"""

import doctest
import importlib
import os
import tempfile

import matplotlib.pyplot as plt
import pytest

MODULES = (
    "tabular._columns",
    "_runtime.compile_cache",
    "datasets",
    "estimators._decision",
    "metrics",
    "network.model",
    "plotting",
    "predictive._predictive",
    "plotting.report",
    "policy._tempering",
    "policy._choice",
    "uncertainty._conformal",
    # the modules of the inference package that hold examples
    "inference._concurrency",
    "inference.diagnostics",
    "inference._fitting",
    "inference._nuts",
    # the estimators (pymc_bnn.estimators re-exports them; doctest finds an
    # example only in the module that defines it)
    "estimators._classifier",
    "estimators._regressor",
    # the parts of metrics and plotting (their functions' examples run there)
    "metrics._calibration",
    "metrics._classification",
    "metrics._inputs",
    "metrics._regression",
    "plotting._common",
    "plotting._fits",
    "plotting._maps",
    "plotting._predictions",
)


# Every example runs under the suite's filterwarnings = error: an example that warns
# (a fit too short for ADVI's ELBO to level off, say) fails here.
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch, tmp_path):
    module = importlib.import_module(f"pymc_bnn.{name}")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the examples' mkdtemp()
    # examples may set and delete environment variables (compile_cache's does, with
    # PYMC_BNN_COMPILE_CACHE): the processes this worker starts later must see the run's;
    # this worker's later tests must not inherit their state either
    environ = dict(os.environ)
    try:
        failures, attempted = doctest.testmod(module, report=True)
    finally:
        os.environ.clear()
        os.environ.update(environ)
        # plotting's examples draw pyplot figures, as in a notebook; later tests on this
        # worker (test_report) check that no figure is left open
        plt.close("all")
    assert attempted > 0 and failures == 0
