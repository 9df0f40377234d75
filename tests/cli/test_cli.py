import subprocess
import sys

import numpy as np
import pytest

from pymc_bnn.cli._main import demo, main

#: the package run as a user runs it (make test-fast leaves these out)
pytestmark = pytest.mark.integration


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
    out = subprocess.run(
        [sys.executable, "-m", "pymc_bnn", "demo", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--inference" in out and "--out" in out


def test_main_rejects_unknown_command(capsys):
    assert main(["train"]) == 2
    assert "No such command 'train'" in capsys.readouterr().err


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch, capsys):
    import sys

    from pymc_bnn.cli._main import main as cli_main

    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert (
        cli_main(["fit", str(tmp_path / "t.parquet"), "-t", "y", "-o", str(tmp_path / "m.nc")]) == 2
    )
    err = capsys.readouterr().err
    assert "pip install 'pymc_bnn[parquet]'" in err and not (tmp_path / "m.nc").exists()


def test_version_prints_the_package_version(capsys):
    import pymc_bnn

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"pymc-bnn {pymc_bnn.__version__}"


def test_version_and_help_start_without_pandas_scikit_learn_or_pymc():
    """What is imported lazily stays so: ``--version`` and ``--help`` (and every bad
    option) answer without the data stack."""
    code = (
        "import sys; from pymc_bnn.cli._main import main; status = main(['--version']); "
        "print(status, sorted(m for m in ('pandas', 'sklearn', 'pymc', 'pytensor') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[-1] == "0 []"


def test_moons_split_lives_in_datasets_and_is_still_importable_from_cli():
    from pymc_bnn import cli, datasets

    assert cli.moons_split is datasets.moons_split
    X_train, X_test, y_train, y_test = datasets.moons_split(n_samples=40)
    assert X_train.shape == (20, 2) and y_test.shape == (20,)


def test_evaluate_help_says_what_brier_is(capsys):
    assert main(["evaluate", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "brier is scikit-learn's brier_score_loss" in out


@pytest.mark.parametrize(
    "value, shown",
    [
        (18470.26, "18,470"),
        (1234567.0, "1,235,000"),
        (999.96, "1,000"),
        (184.66, "184.7"),
        (12.3456, "12.35"),
        (0.947368, "0.9474"),
        (0.0333449, "0.03334"),
        (-0.5, "-0.5000"),
        (0.0, "0"),
        (1.5e-7, "1.500e-07"),
        (float("nan"), "nan"),
        (120, "120"),
        (12000, "12,000"),
    ],
)
def test_scores_are_printed_in_plain_notation(value, shown):
    """Four significant digits, no e-notation for a score like an RMSE of 18,470."""
    from pymc_bnn.cli._tables import format_number, format_scores

    assert format_number(value) == shown
    assert format_number(50.0, trim=True) == "50" and format_number(1.5, trim=True) == "1.5"
    table = format_scores(
        {"n": 120, "rmse": 18470.26, "coverage": 0.9474},
        {"coverage": "coverage of the 90% interval"},
    )
    assert table.splitlines() == [
        "  n                             120",
        "  rmse                          18,470",
        "  coverage of the 90% interval  0.9474",
    ]


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_the_separator_of_a_text_table_is_sniffed(tmp_path, sep):
    from pymc_bnn.cli._tables import read_table, sniff_separator
    from pymc_bnn.datasets import make_customers

    frame = make_customers(30, random_state=0)
    for name in ("t.csv", "t.tsv", "t.csv.gz"):
        frame.to_csv(tmp_path / name, sep=sep, index=False)
        assert sniff_separator(tmp_path / name, ",") == sep
        assert read_table(tmp_path / name).shape == frame.shape
    # a European export: semicolons between fields, commas in numbers
    frame.to_csv(tmp_path / "eu.csv", sep=";", decimal=",", index=False)
    assert sniff_separator(tmp_path / "eu.csv", ",") == ";"
    (tmp_path / "one.csv").write_text("x\n1\n2\n")
    assert sniff_separator(tmp_path / "one.csv", ",") == ","
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 8)
    assert sniff_separator(tmp_path / "binary.csv", ",") == ","


# ------------------------------------------------------- labels, column options
def test_text_labels_are_no_true_false_classes():
    """A true/false model scored on a file of yes/no labels: every non-empty string is
    ``True`` to ``bool``; only true/false values (bools, their text) are its labels."""
    from pymc_bnn.cli._tables import match_labels

    labels, known = match_labels(
        np.array(["yes", "True", "false", True, "maybe", 1], dtype=object), np.array([False, True])
    )
    assert known.tolist() == [False, True, True, True, False, False]
    assert labels[known].tolist() == [True, False, True]


def test_a_fraction_is_no_whole_class_and_text_no_number():
    from pymc_bnn.cli._tables import match_labels

    values = np.array(["1", 2.0, 1.5, "x", 3, True, np.int64(2)], dtype=object)
    labels, known = match_labels(values, np.array([1, 2, 3]))
    assert known.tolist() == [True, True, False, False, True, False, True]
    assert labels.dtype == np.int64 and labels[known].tolist() == [1, 2, 3, 2]
    labels, known = match_labels(
        np.array(["a", "b ", "c"], dtype=object), np.array(["a", "c"], dtype=object)
    )
    assert known.tolist() == [True, False, True] and labels[known].tolist() == ["a", "c"]


def test_column_options_name_columns_with_commas_and_spaces():
    from pymc_bnn.cli._tables import split_columns

    columns = ["id, internal", " x1 ", "x2", "a"]
    assert split_columns("id, internal,x2", columns) == ["id, internal", "x2"]
    assert split_columns("x1", columns) == [" x1 "] == split_columns(" x1 ", columns)
    assert split_columns("x2, a", columns) == ["x2", "a"]
    assert split_columns("a,,b", columns) == ["a", "b"]  # b: named absent later
    assert split_columns(None, columns) == []


def test_a_long_warning_is_its_headline_in_fit_unless_verbose(capsys):
    """``fit`` notes a long warning by its headline; ``--verbose`` (and the commands
    without the flag) give all of it."""
    import click
    from sklearn.exceptions import ConvergenceWarning

    from pymc_bnn.cli._main import _warning_as_note, fit_command, predict_command

    message = (
        "ADVI stopped before the ELBO levelled off: the loss was still falling, "
        "1.6% below that of the steps before. Increase n_iter (e.g. to 3,000)."
    )
    for command, verbose in ((fit_command, False), (fit_command, True), (predict_command, None)):
        with click.Context(command) as context:
            if verbose is not None:
                context.params["verbose"] = verbose
            _warning_as_note(message, ConvergenceWarning, "", 0)
    brief, *full = capsys.readouterr().err.splitlines()
    assert brief == (
        "note: not converged: ADVI stopped before the ELBO levelled off (details: --verbose)"
    )
    assert full == [f"note: not converged: {message}"] * 2


def test_sampling_advice_names_the_command_lines_options(capsys):
    """The command line cannot continue chains (sample_more) or set tune: its note says
    what it can do."""
    from pymc_bnn.cli._main import _warning_as_note
    from pymc_bnn.exceptions import SamplingWarning
    from pymc_bnn.inference.diagnostics import _nuts_message

    message = _nuts_message(
        {
            "quantity": "logit",
            "n_points": 100,
            "max_rhat": 1.2,
            "rhat_threshold": 1.01,
            "min_ess_bulk": 50,
            "min_ess_tail": 60,
            "ess_threshold": 200,
            "n_divergences": 3,
            "n_chains": 2,
            "n_draws": 100,
        },
        resumable=True,
    )
    assert "sample_more" in message and "nuts_init" in message
    _warning_as_note(message, SamplingWarning, "", 0)
    err = capsys.readouterr().err
    assert "raise --draws" in err and "--prior-sigma" in err and "sample_more" not in err
    assert "pymc_bnn.fit(" not in err and "lengthen tune" not in err


def test_poor_nuts_draws_get_one_plain_line_and_info_says_what_was_kept():
    """The user's short run (R-hat 1.55, bulk ESS 4, 8 divergences in 2 x 100 draws):
    one line with the figures and what to do; nothing where the checks pass. ``info``
    says 200 draws were kept where the settings say ``n_draws=500``."""
    from pymc_bnn.inference import diagnostics
    from pymc_bnn.policy._nuts_words import (
        ESS_PER_CHAIN,
        RHAT_THRESHOLD,
        draws_kept_text,
        poor_draws_note,
    )

    assert (RHAT_THRESHOLD, ESS_PER_CHAIN) == (
        diagnostics.RHAT_THRESHOLD,
        diagnostics.ESS_PER_CHAIN,
    )
    line = poor_draws_note(
        {"max_rhat": 1.55, "min_ess_bulk": 4.2, "n_divergences": 8, "n_chains": 2, "n_draws": 100}
    )
    assert "R-hat 1.55, ESS 4, 8 divergent" in line and "--inference nuts" in line
    assert len("note: " + line) <= 100
    assert (
        poor_draws_note({"max_rhat": 1.005, "min_ess_bulk": 900, "n_divergences": 0, "n_chains": 4})
        is None
    )
    run = {"chains": 2, "draws": 100, "tune": 100, "chosen": "auto"}
    assert draws_kept_text(run, 200).startswith("200 (2 chains x 100 draws")
    assert draws_kept_text(None, 5) == "5"


def test_warnings_are_notes_in_plain_words(capsys):
    """No ``UserWarning:`` in a note; the package's sampling and convergence warnings
    say what they are in a word; other classes keep their name."""
    from pymc_bnn.cli._main import _warning_as_note
    from pymc_bnn.exceptions import SamplingWarning

    _warning_as_note("a column was left out", UserWarning, "", 0)
    _warning_as_note("R-hat 1.2", SamplingWarning, "", 0)
    _warning_as_note("overflow", RuntimeWarning, "", 0)
    assert capsys.readouterr().err.splitlines() == [
        "note: a column was left out",
        "note: sampling: R-hat 1.2",
        "note: RuntimeWarning: overflow",
    ]
