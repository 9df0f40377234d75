import subprocess
import sys

from pymc_bnn.cli import demo, main


def test_demo_fits_prints_accuracy_and_writes_figures(tmp_path, capsys):
    result = demo(tmp_path, resolution=30)
    out = capsys.readouterr().out
    assert "test accuracy" in out
    assert result["accuracy"] >= 0.95
    for name in ("mean", "std", "elbo"):
        path = result["figures"][name]
        assert path.exists() and path.stat().st_size > 10_000
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_module_entry_point_help():
    out = subprocess.run([sys.executable, "-m", "pymc_bnn", "demo", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--inference" in out and "--out" in out


def test_main_rejects_unknown_command(capsys):
    assert main(["train"]) == 2
    assert "No such command 'train'" in capsys.readouterr().err


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch, capsys):
    import sys

    from pymc_bnn.cli import main as cli_main

    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert cli_main(["fit", str(tmp_path / "t.parquet"), "-t", "y", "-o",
                     str(tmp_path / "m.nc")]) == 2
    err = capsys.readouterr().err
    assert "pip install 'pymc_bnn[parquet]'" in err and not (tmp_path / "m.nc").exists()
