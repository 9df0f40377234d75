"""Every notebook runs, top to bottom, in quick mode; its committed .ipynb matches its .py.

The jupytext ``.py`` (percent format) is the source of truth: it is converted to a
notebook and executed with nbclient in a kernel running *this* interpreter (a kernel
spec is installed into a temporary prefix, so a fresh virtualenv without a named
``python3`` kernel works), with ``PYMC_BNN_QUICK=1`` and the notebooks folder as the
working directory. Each notebook has an overall time budget (``NOTEBOOK_BUDGET_S``),
enforced cell by cell through nbclient's ``timeout_func``.

Executing all four takes ~1.5 min with warm PyTensor/Numba caches but ~4 min from a
fresh clone (2 cores), so the execution test is in the slow tier; the check that each
committed .ipynb is executed and in sync with its .py is fast.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="install the 'notebooks' extra")
nbclient = pytest.importorskip("nbclient", reason="install the 'notebooks' extra")
nbformat = pytest.importorskip("nbformat", reason="install the 'notebooks' extra")
pytest.importorskip("ipykernel", reason="install the 'notebooks' extra")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402

#: the package run as a user runs it (make test-fast leaves these out)
pytestmark = pytest.mark.integration

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
KERNEL_NAME = "pymc-bnn-test"
#: Wall-time budget of one notebook in quick mode (2 shared cores; typical is < 90 s).
NOTEBOOK_BUDGET_S = 600


def test_notebooks_exist():
    assert len(NOTEBOOKS) >= 4, f"expected the numbered notebooks in {NOTEBOOK_DIR}"


@pytest.fixture(scope="module")
def jupyter_path(tmp_path_factory):
    """A data dir holding a kernel spec that launches ``sys.executable``."""
    prefix = tmp_path_factory.mktemp("jupyter")
    # ipykernel stages the spec in a mkdtemp() folder and removes only its content: the
    # empty folder would be left in the system's temporary directory on every run
    staging = tmp_path_factory.mktemp("ipykernel-staging")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            str(prefix),
            "--name",
            KERNEL_NAME,
            "--display-name",
            "pymc_bnn tests",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(staging)},
    )
    data_dir = prefix / "share" / "jupyter"
    spec = KernelSpecManager(kernel_dirs=[str(data_dir / "kernels")]).get_kernel_spec(KERNEL_NAME)
    assert spec.argv[0] == sys.executable
    return data_dir


def _code_sources(nb) -> list[str]:
    return [c.source.strip() for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_paired_ipynb_is_committed_in_sync_and_executed(path):
    ipynb = path.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: jupytext --to ipynb {path.name}, then execute"
    from_py = jupytext.read(path)
    committed = nbformat.read(ipynb, as_version=4)
    assert _code_sources(committed) == _code_sources(from_py), (
        f"{ipynb.name} is out of sync with {path.name}: re-generate and re-execute it"
    )
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{ipynb.name} is not executed"
    errors = [o for c in code for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"{ipynb.name} was committed with errors"


#: Notebooks whose quick run is in ``make test``; the others' runs are marked
#: ``notebook`` and run in ``make test-notebooks`` (CI runs it after ``make test``): the
#: nine together took ~350 s of the suite's test time, past its 10-minute budget.
#: Notebook 09, the 784-100-10 network on real digits, is the example at the size the
#: package exists for.
IN_MAKE_TEST = ("09_mnist_784_100_10",)


def _run_marks(path: Path):
    return [] if path.stem in IN_MAKE_TEST else [pytest.mark.notebook]


@pytest.mark.slow
@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=_run_marks(p), id=p.stem) for p in NOTEBOOKS]
)
def test_notebook_executes_in_quick_mode(path, jupyter_path, monkeypatch):
    monkeypatch.setenv("PYMC_BNN_QUICK", "1")  # inherited by the kernel process
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_path))  # finds KERNEL_NAME first
    nb = jupytext.read(path)
    deadline = time.monotonic() + NOTEBOOK_BUDGET_S

    def remaining(cell) -> int:
        # the cell may take what is left of the budget (nbclient raises CellTimeoutError)
        return max(1, int(deadline - time.monotonic()))

    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout_func=remaining,
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    quick = [o for o in outputs if "quick mode: True" in o.get("text", "")]
    assert quick, f"{path.name} must print 'quick mode: True' under PYMC_BNN_QUICK=1"
