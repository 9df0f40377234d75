"""Files for the ``pymc-bnn`` command line: tables in and out, model files, predictions.

Everything here turns a problem with what the user passed into a :class:`BadInput`
(one line on stderr, exit status 2) before anything is written:

- tables: CSV / TSV (the separator sniffed, or ``--sep``) and Parquet, read and
  written atomically; column checks whose messages name the file, the column and,
  where one is at fault, the row (counting from 1 after the header);
- model files: loading, and telling a swapped MODEL and DATA apart from a damaged file;
- predictions: the per-row arrays of a fitted pipeline, the output table, the
  labelled rows and scores of ``evaluate``, and how numbers are printed.

Heavy imports (pandas, NumPy, the estimators) happen inside the functions, so that
importing :mod:`pymc_bnn.cli` stays fast.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import math
import numbers
import os
import sys
from pathlib import Path

import click

__all__ = [
    "BadInput",
    "PARQUET_EXTRA",
    "SEPARATORS",
    "TABLE_SUFFIXES",
    "atomic",
    "check_classes",
    "check_model_and_data",
    "check_model_columns",
    "check_output",
    "check_present",
    "choose_task",
    "file_rows",
    "format_number",
    "format_scores",
    "interval_name",
    "is_table_name",
    "labelled_rows",
    "load_model",
    "match_labels",
    "model_info",
    "note",
    "parse_separator",
    "predict_rows",
    "prediction_frame",
    "read_model_metadata",
    "read_table",
    "row_name",
    "score_predictions",
    "separator_hint",
    "shown",
    "sniff_separator",
    "split_columns",
    "table_format",
    "versions",
    "write_table",
]

TABLE_SUFFIXES = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".txt": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zip")
#: Model files the command line writes (netCDF-4, i.e. HDF5) and what they start with.
MODEL_SUFFIXES = (".nc", ".h5", ".hdf5", ".nc4")
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
PARQUET_EXTRA = "pip install 'pymc_bnn[parquet]'"
#: Separators a CSV / TSV file is sniffed for, with their names in messages.
SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
#: How much of a text table the separator is sniffed from.
SNIFF_BYTES = 64 * 1024
SNIFF_LINES = 50


class BadInput(click.ClickException):
    """A problem with what the user passed: one line on stderr, exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"pymc-bnn: error: {self.format_message()}", file=file or sys.stderr)


def note(message: str) -> None:
    """A ``note: ...`` line on stderr (something the user should know; not an error)."""
    click.echo(f"note: {message}", err=True)


def shown(value) -> str:
    """A cell's value in a message: ``66.8``, ``'basic'`` (not ``np.float64(66.8)``)."""
    return repr(value.item() if hasattr(value, "item") else value)


def _rows(n: int) -> str:
    return f"{n} row{'s' if n != 1 else ''}"


def file_rows(message: str) -> str:
    """A message of :mod:`pymc_bnn.tabular` about the rows of a table read by
    :func:`read_table`, in the command line's words: rows are named as the file's
    (``row 3 (counting from 1 after the header)``), also where rows without a target
    were left out and the rows are named by their labels, which are the file's."""
    import re

    message = message.replace("(counting from 1)", "(counting from 1 after the header)")

    def by_place(match) -> str:
        labels = [int(v) for v in re.findall(r"\d+", match.group(2))]
        return (
            f"row{match.group(1)} {', '.join(str(v + 1) for v in labels)} "
            "(counting from 1 after the header)"
        )

    return re.sub(r"the row(s?) labelled ((?:\d+)(?:, \d+)*)", by_place, message)


def row_name(label) -> str:
    """A data row as the user sees it: the rows of a table read by :func:`read_table`
    are labelled 0, 1, ... in file order, and named 1, 2, ... (the header not counted)."""
    return f"row {int(label) + 1} (counting from 1 after the header)"


# ------------------------------------------------------------------------- tables
def _suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def is_table_name(path) -> bool:
    """Whether ``path``'s extension is a table's (``.csv``, ``.parquet.gz``, ...)."""
    return _suffix(Path(path)) in TABLE_SUFFIXES


def table_format(path: Path, what: str) -> str:
    """``"csv"``, ``"tsv"`` or ``"parquet"`` from ``path``'s extension; BadInput if none."""
    fmt = TABLE_SUFFIXES.get(_suffix(Path(path)))
    if fmt is None:
        raise BadInput(
            f"{what} {path}: unknown table format; use a file ending in "
            f"{', '.join(TABLE_SUFFIXES)} (optionally compressed, e.g. .csv.gz)."
        )
    return fmt


def _require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise BadInput(f"reading and writing Parquet needs pyarrow: {PARQUET_EXTRA}") from None


def _sep_option(sep: str) -> str:
    """How to pass ``sep`` on the command line."""
    return "--sep tab" if sep == "\t" else f"--sep '{sep}'"


def parse_separator(value: str | None) -> str | None:
    """The ``--sep`` option: one character, or ``tab`` / ``\\t``; None if not given."""
    if value is None:
        return None
    if value.lower() in ("tab", "\\t", "\t"):
        return "\t"
    if len(value) != 1 or value in '\r\n"':
        raise BadInput(f"--sep must be one character, e.g. ';' or tab; got {value!r}.")
    return value


def _text_sample(path: Path) -> str | None:
    """The first :data:`SNIFF_BYTES` of a (possibly compressed) text table, or None."""
    import bz2
    import gzip
    import lzma

    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(path.suffix.lower(), open)
    if path.suffix.lower() in (".zst", ".zip"):
        return None
    try:
        with opener(path, "rb") as f:
            raw = f.read(SNIFF_BYTES)
    except (OSError, EOFError, lzma.LZMAError):
        return None
    text = raw.decode("utf-8", errors="replace")
    if len(raw) == SNIFF_BYTES and "\n" in text:  # drop the cut-off last line
        text = text[: text.rindex("\n") + 1]
    return text


def sniff_separator(path: Path, default: str) -> str:
    """The separator of a text table: the one of :data:`SEPARATORS` that splits its
    first lines (the header included) into the same number (> 1) of fields; ``default``
    if it does, or if none does; else the one that gives the most fields."""
    text = _text_sample(path)
    if not text:
        return default
    lines = text.splitlines(keepends=True)[:SNIFF_LINES]
    fields = {}
    for sep in SEPARATORS:
        try:
            counts = {
                len(row) for row in csv.reader(io.StringIO("".join(lines)), delimiter=sep) if row
            }
        except csv.Error:  # e.g. NUL bytes: not a text table, pandas will say so
            continue
        if len(counts) == 1 and min(counts) > 1:
            fields[sep] = min(counts)
    if default in fields or not fields:
        return default
    return max(fields, key=lambda s: fields[s])  # ties: the order of SEPARATORS


def separator_hint(frame) -> str:
    """Advice when a table read as one column holds another separator in its name."""
    if frame.shape[1] != 1:
        return ""
    name = str(frame.columns[0])
    for sep, word in SEPARATORS.items():
        if sep in name:
            return f"; the file looks {word}-separated: pass {_sep_option(sep)}"
    return ""


def read_table(path, *, sep: str | None = None) -> "pandas.DataFrame":  # noqa: F821
    """Read a CSV / TSV / Parquet file into a DataFrame; BadInput on any problem.

    ``sep`` (``--sep``): the separator of a CSV / TSV file; by default the one its
    first lines use (:func:`sniff_separator`, a note if it is not the extension's).
    The rows are labelled 0, 1, ... in file order (see :func:`row_name`).
    """
    path = Path(path)
    if not path.exists():
        raise BadInput(f"no such file: {path}")
    if path.is_dir():
        raise BadInput(f"{path} is a folder, not a data file.")
    fmt = table_format(path, "data file")
    if fmt == "parquet" and sep is not None:
        raise BadInput(f"--sep applies to CSV and TSV files; {path} is a Parquet file.")
    if fmt != "parquet" and sep is None:
        default = "," if fmt == "csv" else "\t"
        sep = sniff_separator(path, default)
        if sep != default:
            note(
                f"{path} is {SEPARATORS[sep]}-separated; read as such ({_sep_option(sep)} "
                "to say so, or to choose another)."
            )
    import pandas as pd  # here: a missing file is said at once

    try:
        if fmt == "parquet":
            _require_pyarrow()
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, sep=sep)
    except BadInput:
        raise
    except pd.errors.EmptyDataError:
        raise BadInput(f"{path} is empty.") from None
    except Exception as err:  # parser, decoding, Arrow errors: all mean "not a table"
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise BadInput(f"cannot read {path} as {fmt.upper()}: {first}") from None
    if frame.shape[0] == 0:
        raise BadInput(f"{path} has a header but no rows.")
    if fmt != "parquet":
        _check_header(path, sep, frame)
        frame = _numbers_from_text(path, sep, frame)
    for column in frame.columns[frame.dtypes == object]:  # noqa: E721 (elementwise)
        # Parquet list / struct columns arrive as arrays and dicts: no feature or label
        values = frame[column].dropna()
        nested = values.map(
            lambda v: isinstance(v, (list, tuple, dict, set)) or getattr(v, "ndim", 0) > 0
        )
        if nested.any():
            raise BadInput(
                f"{path}: column {column!r} holds "
                f"{type(values[nested].iloc[0]).__name__} values (e.g. "
                f"{row_name(values[nested].index[0])}), not single numbers or "
                "strings: drop it from the file, or flatten it into columns."
            )
    return frame.reset_index(drop=True)


def _numbers_from_text(path: Path, sep: str, frame):
    """Text columns of numbers with decimal commas or thousands separators as numbers,
    with a note (:func:`pymc_bnn.tabular._number_text.read_numbers`)."""
    from pymc_bnn.tabular._number_text import read_numbers

    frame, notation, examples = read_numbers(frame, sep)
    if notation is not None:
        names = ", ".join(list(examples)[:3]) + (
            f" and {len(examples) - 3} more" if len(examples) > 3 else ""
        )
        first = next(iter(examples.items()))
        note(f"read {names} as numbers with {notation}s (e.g. {first[1]!r} in {first[0]}).")
    return frame


def _check_header(path: Path, sep: str, frame) -> None:
    """BadInput if the header names a column twice: pandas would rename the second
    ``x.1``, and options and model files would name a column the file does not have."""
    import pandas as pd

    try:
        header = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str).iloc[0]
    except Exception:  # read once already: a header that cannot be re-read is no clash
        return
    names = [str(v) for v in header.tolist()]
    repeated = sorted({n for n in names if names.count(n) > 1 and n != "nan"})
    if repeated and len(names) == frame.shape[1]:
        where = "; ".join(
            f"{n!r} in columns " + ", ".join(str(k + 1) for k, m in enumerate(names) if m == n)
            for n in repeated[:3]
        )
        raise BadInput(
            f"{path}: the header names a column more than once ({where}); "
            "rename them so that each column has its own name."
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path, what: str, *, folder: bool = False, inputs=()) -> Path:
    """Fail before any work if ``path`` cannot be written, or is one of the command's
    ``inputs`` (which writing would overwrite: the data, the model file)."""
    path = Path(path)
    for given in map(Path, inputs):
        if _same_file(path, given) or path.resolve() == given.resolve():
            raise BadInput(
                f"cannot write the {what} to {path}: it is the input {given}, "
                f"which would be overwritten; choose another output."
            )
    if folder:
        if path.exists() and not path.is_dir():
            raise BadInput(f"cannot write the {what} to {path}: it is a file, not a folder.")
        parent = path if path.exists() else path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    else:
        if path.is_dir():
            raise BadInput(f"cannot write the {what} to {path}: it is a folder.")
        parent = path.parent
        if not parent.is_dir():
            raise BadInput(f"cannot write the {what} to {path}: folder {parent} does not exist.")
    if not os.access(parent, os.W_OK):
        raise BadInput(f"cannot write the {what} to {path}: {parent} is not writable.")
    return path


@contextlib.contextmanager
def atomic(path: Path):
    """Yield a temporary path beside ``path``; rename it to ``path`` on success only."""
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")  # same extension
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(frame, path: Path) -> None:
    """Write ``frame`` as CSV / TSV / Parquet by ``path``'s extension, atomically."""
    fmt = table_format(path, "output file")
    if fmt == "parquet":
        _require_pyarrow()
    with atomic(path) as tmp:
        if fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        else:  # compression inferred from the extension (.csv.gz, ...)
            frame.to_csv(tmp, index=False, sep="," if fmt == "csv" else "\t")


def split_columns(option: str | None, columns=()) -> list[str]:
    """Column names from a comma-separated option (``--features a,b``).

    Names are stripped of spaces, except where a table's column (``columns``) is
    named with them or with commas: the longest run of comma-joined pieces that is a
    column's name, as given or stripped, is that column (``--drop "id, internal"``),
    and a name is the one column that is that name padded with spaces (``" x1 "``).
    """
    if not option:
        return []
    names = {str(c) for c in columns}
    pieces = option.split(",")
    out, i = [], 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            joined = ",".join(pieces[i:j])
            if joined in names or (j > i + 1 and joined.strip() in names):
                out.append(joined if joined in names else joined.strip())
                i = j
                break
        else:
            name = pieces[i].strip()
            padded = [c for c in names if c.strip() == name]
            if name:  # " x1 " in the header, x1 in the option: that column, if only one
                out.append(padded[0] if name not in names and len(padded) == 1 else name)
            i += 1
    return out


def check_present(frame, columns, path, what: str = "column") -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        names = ", ".join(repr(c) for c in missing)
        have = ", ".join(map(str, list(frame.columns)[:12]))
        more = ", ..." if frame.shape[1] > 12 else ""
        raise BadInput(
            f"{path} has no {what}{'s' if len(missing) > 1 else ''} {names} "
            f"(its columns: {have}{more}){separator_hint(frame)}."
        )


# ------------------------------------------------------------------------ targets
#: A target whose cells are numbers but for at most this share of them (a "?", a typo)
#: is refused with those cells named, rather than read as text (classes).
STRAY_SHARE = 0.1
#: A classification target may have at most this many classes, and, beyond
#: :data:`FEW_CLASSES`, at most one class per :data:`ROWS_PER_CLASS` rows.
MAX_CLASSES = 50
FEW_CLASSES = 10
ROWS_PER_CLASS = 5


def choose_task(task: str, y, target: str, path) -> str:
    """``--task``: ``"classification"`` or ``"regression"`` for the target ``y`` (a
    column of a table from :func:`read_table`, rows without a target left out); ``auto``
    is decided by :func:`pymc_bnn.tabular.infer_task` (with a note saying why); BadInput
    for a target that cannot be learned as the task says."""
    import numpy as np
    import pandas as pd

    from pymc_bnn.tabular._transform import infer_task

    values = pd.to_numeric(y, errors="coerce")
    stray = values.isna().to_numpy()
    if (
        stray.any()
        and stray.mean() <= STRAY_SHARE
        and task != "classification"
        and infer_task(values[~stray].to_numpy(dtype=float)) == "regression"
    ):
        # numbers but for a few cells (a "?", "n/a" or typo): neither a reason to make
        # every distinct number a class, nor a regression target as it stands
        cells = ", ".join(
            f"{row_name(label)} holds {shown(v)}" for label, v in y[stray].iloc[:3].items()
        )
        more = f" ({int(stray.sum())} cells in all)" if stray.sum() > 3 else ""
        raise BadInput(
            f"{path}: the target {target!r} holds numbers except in a few cells: "
            f"{cells}{more}. Fix them, or blank them (rows without a target are "
            "left out)."
        )
    if task == "auto":
        task = infer_task(y)
        n = y.nunique()
        why = (
            "it holds true/false values"
            if pd.api.types.is_bool_dtype(y.dtype)
            else "it holds text or true/false values"
            if not pd.api.types.is_numeric_dtype(y.dtype)
            else f"it has {n} distinct integer values"
            if task == "classification"
            else "it holds numbers"
        )
        other = "regression" if task == "classification" else "classification"
        note(f"task: {task} (target {target!r}: {why}; --task {other} to override)")
    if y.nunique() < 2:
        raise BadInput(
            f"{path}: the target {target!r} has the single value {shown(y.iloc[0])} in "
            f"all {len(y)} rows: there is nothing to learn."
        )
    values = pd.to_numeric(y, errors="coerce")
    numeric = bool(values.notna().all())
    if task == "regression":
        if not numeric:
            bad = values.isna().to_numpy()
            raise BadInput(
                f"{path}: the target {target!r} is not numeric: "
                f"{row_name(y.index[bad.argmax()])} holds {shown(y[bad].iloc[0])}; use "
                "--task classification."
            )
        if not np.isfinite(values.to_numpy(dtype=float)).all():
            raise BadInput(f"{path}: the target {target!r} has infinite values.")
    else:
        check_classes(y, values if numeric else None, target, path)
    return task


def check_classes(y, numbers, target: str, path) -> None:
    """Refuse a classification target that is not one: numbers with fractions, or more
    classes than the rows can teach (over :data:`MAX_CLASSES`, or beyond
    :data:`FEW_CLASSES` over one per :data:`ROWS_PER_CLASS` rows)."""
    import numpy as np
    import pandas as pd

    if numbers is not None and not pd.api.types.is_bool_dtype(y.dtype):
        values = numbers.to_numpy(dtype=float)
        fraction = ~np.isfinite(values) | (values != np.round(values))
        if fraction.any():
            k = int(fraction.argmax())
            raise BadInput(
                f"{path}: the classification target {target!r} holds numbers that "
                f"are not whole, which are no classes: {row_name(y.index[k])} "
                f"holds {shown(y.iloc[k])}; use --task regression."
            )
    n_classes, n_rows = int(y.nunique()), len(y)
    limit = min(MAX_CLASSES, max(FEW_CLASSES, n_rows // ROWS_PER_CLASS))
    if n_classes > limit:
        advice = (
            "use --task regression"
            if numbers is not None
            else "is it an identifier or free text? Choose another --target"
        )
        raise BadInput(
            f"{path}: the classification target {target!r} has {n_classes} "
            f"distinct values in {n_rows} rows, too many classes to learn (at most "
            f"{limit} here: {MAX_CLASSES} at most, and beyond {FEW_CLASSES} one "
            f"per {ROWS_PER_CLASS} rows); {advice}."
        )


# -------------------------------------------------------------------- model files
def _starts_hdf5(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE
    except OSError:
        return False


def check_model_and_data(model, data) -> None:
    """BadInput if MODEL is a table or DATA a model file: most likely the two were
    swapped, and the message says so (rather than that a table is no HDF5 file)."""
    model, data = Path(model), Path(data)
    model_is_model = model.is_file() and _starts_hdf5(model)
    model_is_table = not model_is_model and _suffix(model) in TABLE_SUFFIXES
    data_is_model = data.is_file() and _starts_hdf5(data)
    data_named_model = not data.exists() and data.suffix.lower() in MODEL_SUFFIXES
    if (model_is_table and (data_is_model or data_named_model)) or (
        data_is_model and model.is_file() and not model_is_model
    ):
        raise BadInput(
            f"{model} is {'a table' if model_is_table else 'not a model file'} and "
            f"{data} a model file: did you swap MODEL and DATA? The model file "
            "comes first."
        )
    if data_is_model:
        raise BadInput(f"{data} is a model file, not a table of rows (DATA).")
    if model_is_table and model.is_file():
        raise BadInput(
            f"{model} is a table, not a model file: MODEL (the file pymc-bnn fit "
            "wrote) comes first, then DATA."
        )


def read_model_metadata(path) -> dict:
    """The JSON metadata of a model file, without building the model (nor importing
    PyMC); BadInput on any problem."""
    from pymc_bnn.estimators import persistence

    path = Path(path)
    if not path.exists():
        raise BadInput(f"no such model file: {path}")
    if path.is_dir():
        raise BadInput(f"{path} is a folder, not a model file.")
    try:
        return persistence.read_metadata(path)
    except (ValueError, OSError) as err:
        raise BadInput(str(err)) from None


def load_model(path, meta: dict | None = None):
    """(pipeline, metadata) from a model file (``meta``: its metadata, if read
    already); BadInput on any problem."""
    from pymc_bnn.tabular.pipeline import load_pipeline

    if meta is None:
        meta = read_model_metadata(path)
    try:
        pipeline = load_pipeline(path)
    except (ValueError, OSError) as err:
        raise BadInput(str(err)) from None
    return pipeline, meta


def model_info(meta: dict) -> dict:
    """What ``pymc-bnn fit`` recorded about a model (its data, target, task, ...)."""
    return dict((meta.get("extra") or {}).get("info") or {})


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("pymc_bnn", "pymc", "pytensor", "numpy", "scikit-learn", "pandas", "jax"):
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


# -------------------------------------------------------------------- predictions
def interval_name(interval: float) -> str:
    return f"{100 * interval:g}"


def _first_row(mask, frame) -> str:
    """:func:`row_name` of the first row of ``frame`` where ``mask`` holds."""
    import numpy as np

    return row_name(frame.index[int(np.flatnonzero(np.asarray(mask))[0])])


def check_model_columns(frame, meta: dict, path) -> None:
    """BadInput if ``frame`` lacks a column the model file (its metadata: known before
    the model is built) needs: the features and the groups column."""
    state = (meta.get("extra") or {}).get("preprocessing") or {}
    needed = [str(c["name"]) for kind in ("numeric", "categorical") for c in state.get(kind) or []]
    groups_column = model_info(meta).get("groups")
    needed += [groups_column] if groups_column else []
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise BadInput(
            f"{path} lacks the column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))} that the model needs"
            f"{separator_hint(frame)}."
        )


def predict_rows(pipeline, frame, meta, *, path, interval: float | None = None) -> dict:
    """Arrays of predictions for the rows of ``frame`` (checked, with notes)."""
    import numpy as np

    pre, est = pipeline.named_steps["preprocess"], pipeline.named_steps["model"]
    check_model_columns(frame, meta, path)
    groups_column = model_info(meta).get("groups")
    try:
        X = pre.transform(frame)
        unseen = pre.unseen_categories(frame)
        flags = pre.row_flags(frame)
    except ValueError as err:  # rows of a table read by read_table: counted after the header
        message = file_rows(str(err))
        raise BadInput(f"{path}: {message}") from None
    for column, values in unseen.items():
        listed = ", ".join(map(repr, values[:5])) + (", ..." if len(values) > 5 else "")
        note(
            f"column {column!r} has categories not seen in training ({listed}): "
            "see column unseen_categories"
        )
    outside = int((flags["outside_training_range"] != "").sum())
    if outside:
        note(
            f"{outside} row{'s' if outside > 1 else ''} outside the training range: "
            "extrapolated (see column outside_training_range)"
        )
    n_missing = sum(pre.count_missing(frame).values())
    if n_missing:
        note(
            f"filled {n_missing} missing value{'s' if n_missing > 1 else ''} as in "
            "training (medians, most frequent categories)"
        )
    groups, seen = None, None
    if groups_column:
        absent = frame[groups_column].isna().to_numpy()
        if absent.any():
            raise BadInput(
                f"{path}: the groups column {groups_column!r} has missing values, "
                f"the first in {_first_row(absent, frame)}."
            )
        groups, seen = match_labels(frame[groups_column].to_numpy(), est.groups_)
        if not seen.all():
            values = frame[groups_column].to_numpy()[~seen]
            listed = ", ".join(map(shown, list(dict.fromkeys(values.tolist()))[:5]))
            more = ", ..." if len(set(values.tolist())) > 5 else ""
            note(
                f"{int((~seen).sum())} row{'s' if (~seen).sum() > 1 else ''} of groups "
                f"not seen in training ({listed}{more}): the population's weights"
            )
        # like unseen_categories: the column whose value training did not cover
        flags["unseen_group"] = np.where(seen, "", str(groups_column))
    out = {"flags": flags}
    u = by_group(est.predict_uncertainty, X, groups, seen)
    if hasattr(est, "classes_"):
        out["proba"] = u["mean"]
        out["prediction"] = est.classes_[np.argmax(u["mean"], axis=1)]
        out["entropy"], out["mutual_info"] = u["entropy"], u["mutual_info"]
    else:
        out["mean"], out["std"] = u["mean"], u["std"]
        if interval is not None:
            out["lower"], out["upper"] = by_group(
                functools.partial(est.predict_interval, coverage=interval), X, groups, seen
            )
    return out


def by_group(method, X, groups, seen):
    """``method(X, groups=groups)``, the rows of groups training did not see (``seen``
    False) predicted without groups: with the population's weights, as the estimator
    predicts an unseen group (no stand-in label, which the fitted labels' type may not
    allow: a true/false groups column has no third value)."""
    import numpy as np

    if groups is None or seen.all():
        return method(X, groups=groups)
    if not seen.any():
        return method(X, groups=None)
    known, unknown = method(X[seen], groups=groups[seen]), method(X[~seen], groups=None)

    def merged(a, b):
        out = np.empty((len(seen), *np.shape(a)[1:]), dtype=np.result_type(a, b))
        out[seen], out[~seen] = a, b
        return out

    if isinstance(known, dict):
        return {k: merged(v, unknown[k]) for k, v in known.items()}
    if isinstance(known, tuple):
        return tuple(merged(a, b) for a, b in zip(known, unknown))
    return merged(known, unknown)


def _label_key(value, kind: str):
    """What a cell stands for as a label of a model whose labels are of NumPy ``kind``:
    a CSV cell may be read as text ("2", "True"), a number (2, 2.0) or a bool, and only
    the same label counts: 2.0 is the class 2, 2.5 and "two" are none, and for a
    true/false model only true/false values are (any non-empty text would be ``True``
    to ``bool``)."""
    import numpy as np

    if isinstance(value, np.generic):
        value = value.item()
    if kind == "b":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        return None
    if kind in "iuf":
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                return None
        if isinstance(value, (int, float)):
            return float(value)
        return None
    return str(value)


def match_labels(values, reference):
    """``(labels, known)``: each of ``values`` as the fitted label of ``reference``
    (``classes_``, ``groups_``) it stands for, in ``reference``'s dtype, and whether it
    stands for one (see :func:`_label_key`; where not, ``labels`` holds an arbitrary
    fitted label: mask it)."""
    import numpy as np

    reference = np.asarray(reference)
    kind = reference.dtype.kind
    lookup = {_label_key(label, kind): label for label in reference.tolist()}
    lookup.pop(None, None)
    values = list(np.asarray(values, dtype=object).ravel())
    keys = [_label_key(v, kind) for v in values]
    known = np.array([k is not None and k in lookup for k in keys], dtype=bool)
    fill = reference[0] if len(reference) else None
    labels = np.array(
        [lookup[k] if ok else fill for k, ok in zip(keys, known)], dtype=reference.dtype
    )
    return labels, known


def prediction_frame(frame, pred: dict, est, *, id_column, interval):
    """The output table of ``predict``: the input (or its id column), then predictions."""
    import pandas as pd

    base = frame[[id_column]].copy() if id_column else frame.copy()
    cols = {}
    if "proba" in pred:
        cols["prediction"] = pred["prediction"]
        for k, c in enumerate(est.classes_):
            cols[f"proba_{c}"] = pred["proba"][:, k]
        cols["entropy"], cols["mutual_info"] = pred["entropy"], pred["mutual_info"]
    else:
        cols["mean"], cols["std"] = pred["mean"], pred["std"]
        if "lower" in pred:
            name = interval_name(interval)
            cols[f"lower_{name}"], cols[f"upper_{name}"] = pred["lower"], pred["upper"]
    if "flags" in pred:  # where the training data did not cover the row
        cols.update({k: v.to_numpy() for k, v in pred["flags"].items()})
    clash = [c for c in cols if c in base.columns]
    if clash:
        raise BadInput(
            f"the input already has column{'s' if len(clash) > 1 else ''} "
            f"{', '.join(map(repr, clash))}; pass --id COLUMN to keep only an id."
        )
    return pd.concat(
        [base.reset_index(drop=True), pd.DataFrame(cols, index=range(len(base)))], axis=1
    )


def labelled_rows(frame, target: str, est, path):
    """Which rows of ``frame`` have a target (a boolean array), and the target of those
    rows in the model's label type; BadInput for labels the model does not know."""
    import numpy as np

    rows = frame[target].notna().to_numpy()
    if not rows.any():
        raise BadInput(f"{path}: the target column {target!r} has no values.")
    if not rows.all():
        note(f"{_rows(int((~rows).sum()))} without a {target!r} value left out.")
    labelled = frame.loc[rows]
    y = labelled[target].to_numpy()
    if hasattr(est, "classes_"):
        raw = y
        y, known = match_labels(raw, est.classes_)
        bad = ~known
        if bad.any():
            unknown = list(dict.fromkeys(str(v) for v in raw[bad]))
            raise BadInput(
                f"{path}: column {target!r} has labels the model was not fit on: "
                f"{', '.join(unknown[:5])} (the model knows "
                f"{', '.join(map(str, est.classes_))}); the first is in "
                f"{_first_row(bad, labelled)}."
            )
    else:
        import pandas as pd

        values = pd.to_numeric(labelled[target], errors="coerce")
        if values.isna().any():
            raise BadInput(
                f"{path}: the regression target {target!r} has non-numeric values: "
                f"{_first_row(values.isna(), labelled)} holds "
                f"{shown(labelled[target][values.isna()].iloc[0])}."
            )
        y = values.to_numpy(dtype=np.float64)
    return rows, y


def score_predictions(pred: dict, y, est) -> dict:
    from pymc_bnn import metrics

    if "proba" in pred:
        return metrics.classification_summary(y, pred["proba"], classes=est.classes_)
    return metrics.regression_summary(
        y, pred["mean"], pred["std"], lower=pred.get("lower"), upper=pred.get("upper")
    )


def format_number(value, *, trim: bool = False) -> str:
    """A score for people: 4 significant digits in plain notation, thousands grouped
    (``18,470``, ``0.9474``, ``12.35``); integers in full; tiny values in e-notation.
    ``trim``: without trailing zeros (``50`` rather than ``50.00``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,d}"
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    rounded = float(f"{value:.4g}")
    if rounded == 0:
        return "0"
    if abs(rounded) >= 1000:
        return f"{rounded:,.0f}"
    if abs(rounded) < 1e-4:
        return f"{rounded:.3e}"
    decimals = max(0, 3 - math.floor(math.log10(abs(rounded))))
    text = f"{rounded:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if trim and "." in text else text


def format_scores(scores: dict, labels: dict | None = None) -> str:
    """One ``  name  value`` line per score; ``labels`` renames some (e.g. which
    interval a coverage is of)."""
    names = {k: (labels or {}).get(k, k) for k in scores}
    width = max(map(len, names.values()))
    return "\n".join(f"  {names[k]:<{width}}  {format_number(v)}" for k, v in scores.items())
