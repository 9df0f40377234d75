"""The ``pymc-bnn`` command line (also ``python -m pymc_bnn``).

Commands:

- ``demo``: fit the two-moons classifier, print its accuracy, write uncertainty maps;
- ``example``: write a generated customer table (CSV or Parquet) to try the others on;
- ``fit``: fit a Bayesian MLP on a user's table (CSV, TSV or Parquet) and save it;
- ``predict``: per-row predictions with uncertainty;
- ``evaluate``: accuracy / NLL / Brier / ECE (or RMSE / NLL / coverage) on labelled rows;
- ``report``: figures and one self-contained ``index.html``;
- ``info``: what a model file holds.

Bad input (a missing file or column, a constant target, a damaged model file, an
output path that cannot be written, ...) ends with a one-line error naming the file,
column or path at fault, exit status 2, and nothing written; ``--debug`` shows the
traceback. Preprocessing lives in :mod:`pymc_bnn.tabular`; this module only reads and
writes files and prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

import click

__all__ = ["BadInput", "demo", "main", "moons_split"]

TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "tsv",
                  ".parquet": "parquet", ".pq": "parquet"}
INFERENCE = ("auto", "advi", "minibatch", "fullrank_advi", "nuts")
MINIBATCH_SIZE = 128
PARQUET_EXTRA = "pip install 'pymc_bnn[parquet]'"


class BadInput(click.ClickException):
    """A problem with what the user passed: one line on stderr, exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"pymc-bnn: error: {self.format_message()}", file=file or sys.stderr)


# --------------------------------------------------------------------------- demo
def moons_split(*, n_samples: int = 1000, noise: float = 0.2, random_state: int = 0):
    """The classic example's data: scaled two moons, split 50/50.

    Returns
    -------
    X_train, X_test, y_train, y_test
    """
    from sklearn.datasets import make_moons
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import scale

    X, y = make_moons(noise=noise, random_state=random_state, n_samples=n_samples)
    X = scale(X)
    return train_test_split(X, y, test_size=0.5, random_state=random_state)


def demo(out_dir: str | Path = "figures", *, inference: str = "advi", batch_size=None,
         random_state: int = 0, resolution: int = 100) -> dict:
    """Fit the moons classifier, print its test accuracy, write the figures.

    Returns
    -------
    dict with ``accuracy``, ``fit_seconds`` and the written ``figures`` paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_bnn import BayesianMLPClassifier
    from pymc_bnn.plotting import loss_curve, uncertainty_map

    X_train, X_test, y_train, y_test = moons_split(random_state=random_state)
    clf = BayesianMLPClassifier(inference=inference, batch_size=batch_size,
                                random_state=random_state)
    t0 = time.perf_counter()
    clf.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - t0
    accuracy = clf.score(X_test, y_test)
    print(f"{inference} fit in {fit_seconds:.1f} s; test accuracy: {accuracy:.1%}")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = {}
    for kind in ("mean", "std"):
        fig, ax = plt.subplots(figsize=(6.4, 5))
        uncertainty_map(clf, kind=kind, X=X_test, y=y_test, resolution=resolution, ax=ax,
                        title=f"Two moons, {inference}: posterior predictive {kind}")
        path = out / f"moons_{kind}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        figures[kind] = path
    if clf.loss_curve_.size:
        fig, ax = plt.subplots(figsize=(6.4, 4))
        loss_curve(clf.loss_curve_, ax=ax, label=inference)
        ax.set_title("Two moons: ELBO convergence")
        path = out / "moons_elbo.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        figures["elbo"] = path
    for name, path in figures.items():
        print(f"wrote {path}")
    return {"accuracy": accuracy, "fit_seconds": fit_seconds, "figures": figures}


# ---------------------------------------------------------------------- file I/O
def _table_format(path: Path, what: str) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zst", ".zip"):
        suffixes = suffixes[:-1]
    fmt = TABLE_SUFFIXES.get(suffixes[-1] if suffixes else "")
    if fmt is None:
        raise BadInput(f"{what} {path}: unknown table format; use a file ending in "
                       f"{', '.join(TABLE_SUFFIXES)} (optionally compressed, e.g. .csv.gz).")
    return fmt


def _require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise BadInput(f"reading and writing Parquet needs pyarrow: {PARQUET_EXTRA}") from None


def read_table(path) -> "pandas.DataFrame":  # noqa: F821
    """Read a CSV / TSV / Parquet file into a DataFrame; BadInput on any problem."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise BadInput(f"no such file: {path}")
    if path.is_dir():
        raise BadInput(f"{path} is a folder, not a data file.")
    fmt = _table_format(path, "data file")
    try:
        if fmt == "parquet":
            _require_pyarrow()
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, sep="," if fmt == "csv" else "\t")
    except BadInput:
        raise
    except pd.errors.EmptyDataError:
        raise BadInput(f"{path} is empty.") from None
    except Exception as err:  # parser, decoding, Arrow errors: all mean "not a table"
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise BadInput(f"cannot read {path} as {fmt.upper()}: {first}") from None
    if frame.shape[0] == 0:
        raise BadInput(f"{path} has a header but no rows.")
    return frame


def _check_output(path, what: str, *, folder: bool = False) -> Path:
    """Fail before any work if ``path`` cannot be written."""
    path = Path(path)
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
def _atomic(path: Path):
    """Yield a temporary path beside ``path``; rename it to ``path`` on success only."""
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")  # same extension
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(frame, path: Path) -> None:
    """Write ``frame`` as CSV / TSV / Parquet by ``path``'s extension, atomically."""
    fmt = _table_format(path, "output file")
    if fmt == "parquet":
        _require_pyarrow()
    with _atomic(path) as tmp:
        if fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        else:  # compression inferred from the extension (.csv.gz, ...)
            frame.to_csv(tmp, index=False, sep="," if fmt == "csv" else "\t")


def _columns(option: str | None) -> list[str]:
    return [c.strip() for c in option.split(",") if c.strip()] if option else []


def _check_present(frame, columns, path, what: str = "column") -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        names = ", ".join(repr(c) for c in missing)
        have = ", ".join(map(str, list(frame.columns)[:12]))
        more = ", ..." if frame.shape[1] > 12 else ""
        raise BadInput(f"{path} has no {what}{'s' if len(missing) > 1 else ''} {names} "
                       f"(its columns: {have}{more}).")


def _note(message: str) -> None:
    click.echo(f"note: {message}", err=True)


# ------------------------------------------------------------------ model files
def _load(path):
    """(pipeline, metadata) from a model file; BadInput on any problem."""
    from pymc_bnn import persistence, tabular

    path = Path(path)
    if not path.exists():
        raise BadInput(f"no such model file: {path}")
    if path.is_dir():
        raise BadInput(f"{path} is a folder, not a model file.")
    try:
        meta = persistence.read_metadata(path)
        pipeline = tabular.load_pipeline(path)
    except (ValueError, OSError) as err:
        raise BadInput(str(err)) from None
    return pipeline, meta


def _model_info(meta: dict) -> dict:
    return dict((meta.get("extra") or {}).get("info") or {})


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("pymc_bnn", "pymc", "pytensor", "numpy", "scikit-learn", "pandas", "jax"):
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


# ------------------------------------------------------------------- predictions
def _interval_name(interval: float) -> str:
    return f"{100 * interval:g}"


def _predict(pipeline, frame, meta, *, path, interval: float | None = None) -> dict:
    """Arrays of predictions for the rows of ``frame`` (checked, with notes)."""
    import numpy as np

    pre, est = pipeline.named_steps["preprocess"], pipeline.named_steps["model"]
    info = _model_info(meta)
    groups_column = info.get("groups")
    needed = list(pre.feature_names_in_) + ([groups_column] if groups_column else [])
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise BadInput(f"{path} lacks the column{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(map(repr, missing))} that the model needs.")
    try:
        X = pre.transform(frame)
        unseen = pre.unseen_categories(frame)
    except ValueError as err:
        raise BadInput(f"{path}: {err}") from None
    for column, values in unseen.items():
        shown = ", ".join(map(repr, values[:5])) + (", ..." if len(values) > 5 else "")
        _note(f"column {column!r} has categories not seen in training ({shown}); "
              "those rows use none of the known categories.")
    n_missing = sum(pre.count_missing(frame).values())
    if n_missing:
        _note(f"imputed {n_missing} missing values with the training medians / most "
              "frequent values.")
    groups = None if not groups_column else frame[groups_column].to_numpy()
    if groups is not None and np.any(frame[groups_column].isna()):
        raise BadInput(f"{path}: the groups column {groups_column!r} has missing values.")
    if groups is not None:
        groups = _like(groups, est.groups_)
    out = {}
    u = est.predict_uncertainty(X, groups=groups)
    if hasattr(est, "classes_"):
        out["proba"] = u["mean"]
        out["prediction"] = est.classes_[np.argmax(u["mean"], axis=1)]
        out["entropy"], out["mutual_info"] = u["entropy"], u["mutual_info"]
    else:
        out["mean"], out["std"] = u["mean"], u["std"]
        if interval is not None:
            out["lower"], out["upper"] = est.predict_interval(X, coverage=interval,
                                                              groups=groups)
    return out


def _like(values, reference):
    """``values`` converted to the dtype of the fitted labels ``reference`` if it can be."""
    import numpy as np

    if reference.dtype.kind in "biuf":
        try:
            return np.asarray(values).astype(reference.dtype)
        except (TypeError, ValueError):
            return np.asarray(values)
    return np.asarray([str(v) for v in values], dtype=object)


def _prediction_frame(frame, pred: dict, est, *, id_column, interval):
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
            name = _interval_name(interval)
            cols[f"lower_{name}"], cols[f"upper_{name}"] = pred["lower"], pred["upper"]
    clash = [c for c in cols if c in base.columns]
    if clash:
        raise BadInput(f"the input already has column{'s' if len(clash) > 1 else ''} "
                       f"{', '.join(map(repr, clash))}; pass --id COLUMN to keep only an id.")
    return pd.concat([base.reset_index(drop=True),
                      pd.DataFrame(cols, index=range(len(base)))], axis=1)


def _labelled(frame, target: str, est, path):
    """The rows of ``frame`` with a target, and the target in the model's label type."""
    import numpy as np

    rows = frame[target].notna().to_numpy()
    if not rows.any():
        raise BadInput(f"{path}: the target column {target!r} has no values.")
    if not rows.all():
        _note(f"{int((~rows).sum())} rows without a {target!r} value are left out.")
    frame = frame.loc[rows]
    y = frame[target].to_numpy()
    if hasattr(est, "classes_"):
        y = _like(y, est.classes_)
        unknown = sorted({str(v) for v in y if v not in set(est.classes_.tolist())})
        if unknown:
            raise BadInput(f"{path}: column {target!r} has labels the model was not fit on: "
                           f"{', '.join(unknown[:5])} (the model knows "
                           f"{', '.join(map(str, est.classes_))}).")
    else:
        import pandas as pd

        values = pd.to_numeric(frame[target], errors="coerce")
        if values.isna().any():
            raise BadInput(f"{path}: the regression target {target!r} has non-numeric values.")
        y = values.to_numpy(dtype=np.float64)
    return frame, y


def _scores(pred: dict, y, est) -> dict:
    from pymc_bnn import metrics

    if "proba" in pred:
        return metrics.classification_summary(y, pred["proba"], classes=est.classes_)
    return metrics.regression_summary(y, pred["mean"], pred["std"], lower=pred.get("lower"),
                                      upper=pred.get("upper"))


def _format_scores(scores: dict) -> str:
    width = max(map(len, scores))
    lines = []
    for name, value in scores.items():
        shown = f"{value:d}" if isinstance(value, int) else f"{value:.4g}"
        lines.append(f"  {name:<{width}}  {shown}")
    return "\n".join(lines)


# -------------------------------------------------------------------- commands
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="On an error, show the full traceback.")
def cli(debug):
    """Bayesian neural networks with uncertainty, on your own tables (pymc_bnn)."""


@cli.command("demo")
@click.option("--out", default="figures", show_default=True, help="Output folder.")
@click.option("--inference", default="advi", type=click.Choice(["advi", "fullrank_advi", "nuts"]),
              show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Minibatch ADVI with this batch size.")
@click.option("--seed", type=int, default=0, show_default=True)
def demo_command(out, inference, batch_size, seed):
    """Fit two moons, print test accuracy, write uncertainty maps."""
    demo(out, inference=inference, batch_size=batch_size, random_state=seed)


@cli.command("example")
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--task", type=click.Choice(["classification", "multiclass", "regression"]),
              default="classification", show_default=True)
@click.option("--rows", type=click.IntRange(min=10), default=800, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def example_command(out, task, rows, seed):
    """Write a generated customer table (mixed types, missing values) to OUT.

    The target column is 'churned' (classification), 'plan_next_year' (multiclass)
    or 'monthly_spend' (regression); 'customer_id' is an identifier.
    """
    from pymc_bnn.datasets import CUSTOMER_TARGETS, make_customers

    _check_output(out, "table")
    frame = make_customers(rows, task=task, random_state=seed)
    write_table(frame, out)
    click.echo(f"wrote {out}: {rows} rows, target column {CUSTOMER_TARGETS[task]!r}")


def _parse_hidden(value: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise BadInput(f"--hidden must be positive layer sizes separated by commas, e.g. 32 or "
                       f"32,16; got {value!r}.")
    return sizes


def _positive_or(value: str, words: tuple[str, ...], option: str):
    """One of ``words`` itself, or ``value`` as a finite number > 0 (BadInput otherwise)."""
    if value in words:
        return value
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 < number < float("inf"):
        choices = ", ".join(f"'{w}'" for w in words)
        raise BadInput(f"{option} must be {choices} or a positive number; got {value!r}.")
    return number


def _choose_task(task: str, y, target: str, path) -> str:
    import numpy as np
    import pandas as pd

    from pymc_bnn.tabular import infer_task

    if task == "auto":
        task = infer_task(y)
        n = y.nunique()
        why = ("it holds text or true/false values" if not pd.api.types.is_numeric_dtype(y.dtype)
               else f"it has {n} distinct integer values" if task == "classification"
               else "it holds numbers")
        other = "regression" if task == "classification" else "classification"
        _note(f"task: {task} (target {target!r}: {why}; --task {other} to override)")
    if y.nunique() < 2:
        raise BadInput(f"{path}: the target {target!r} has the single value {y.iloc[0]!r} in "
                       f"all {len(y)} rows: there is nothing to learn.")
    if task == "regression":
        values = pd.to_numeric(y, errors="coerce")
        if values.isna().any():
            raise BadInput(f"{path}: the target {target!r} is not numeric (e.g. "
                           f"{y[values.isna()].iloc[0]!r}); use --task classification.")
        if not np.isfinite(values.to_numpy(dtype=float)).all():
            raise BadInput(f"{path}: the target {target!r} has infinite values.")
    return task


@cli.command("fit")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--target", "-t", required=True, help="Column to predict.")
@click.option("--output", "-o", required=True, type=click.Path(path_type=Path),
              help="Model file to write (netCDF, e.g. model.nc).")
@click.option("--task", type=click.Choice(["auto", "classification", "regression"]),
              default="auto", show_default=True,
              help="auto: text, true/false or <= 10 distinct integers is classification.")
@click.option("--hidden", default="5,5", show_default=True,
              help="Hidden layer sizes, comma-separated.")
@click.option("--inference", type=click.Choice(INFERENCE), default="auto", show_default=True,
              help="auto: NUTS with --groups (unless --batch-size, --n-iter, --n-init or "
                   "a --temperature is given), ADVI otherwise.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help=f"Minibatch size (implies minibatch ADVI; default {MINIBATCH_SIZE} "
                   "with --inference minibatch, else full batches up to 1,024 rows and "
                   "minibatches of 1,024 beyond).")
@click.option("--n-iter", type=click.IntRange(min=1), default=None,
              help="ADVI steps (default: the estimator's).")
@click.option("--draws", type=click.IntRange(min=1), default=500, show_default=True,
              help="Posterior draws kept for prediction.")
@click.option("--n-init", type=click.IntRange(min=1), default=1, show_default=True,
              help="Starting weights per ADVI fit; the one with the best ELBO is kept "
                   "(costs n-init times the fits).")
@click.option("--temperature", default="auto", show_default=True,
              help="Posterior temperature: 'auto' (chosen by cross-fitting) or a number.")
@click.option("--prior-sigma", default="auto", show_default=True,
              help="Prior sd of the weights: 'evidence' (one per layer, chosen by the "
                   "Laplace evidence; classification without --groups), 'auto' (the "
                   "evidence where available, else 1) or a number.")
@click.option("--groups", default=None, help="Column of group labels: a hierarchical model.")
@click.option("--features", default=None, help="Comma-separated columns to use (default: all).")
@click.option("--drop", default=None, help="Comma-separated columns to leave out.")
@click.option("--keep", default=None,
              help="Comma-separated columns that are features although they look like "
                   "identifiers (whole numbers, each once, in row order or tightly packed).")
@click.option("--max-categories", type=click.IntRange(min=2), default=50, show_default=True,
              help="Refuse a categorical column with more distinct values.")
@click.option("--seed", type=int, default=0, show_default=True)
def fit_command(data, target, output, task, hidden, inference, batch_size, n_iter, draws,
                n_init, temperature, prior_sigma, groups, features, drop, keep, max_categories,
                seed):
    """Fit a Bayesian MLP on the table DATA and save it to a model file."""
    hidden_sizes = _parse_hidden(hidden)
    temperature = _positive_or(temperature, ("auto",), "--temperature")
    prior_sigma = _positive_or(prior_sigma, ("auto", "evidence"), "--prior-sigma")
    if prior_sigma == "evidence" and groups:
        raise BadInput("--prior-sigma evidence is not available with --groups yet; give a "
                       "number.")
    output = _check_output(output, "model")
    frame = read_table(data)
    features, drop, keep = _columns(features), _columns(drop), _columns(keep)
    _check_present(frame, [target] + ([groups] if groups else []) + features + drop + keep,
                   data)
    if target in features or target in drop or target == groups:
        raise BadInput(f"the target {target!r} cannot also be a feature, dropped or the groups.")
    rows = frame[target].notna()
    if not rows.any():
        raise BadInput(f"{data}: the target column {target!r} has no values.")
    if not rows.all():
        _note(f"{int((~rows).sum())} rows without a {target!r} value are left out.")
        frame = frame.loc[rows].reset_index(drop=True)
    task = _choose_task(task, frame[target], target, data)
    if prior_sigma == "evidence" and task == "regression":
        raise BadInput("--prior-sigma evidence is available for classification only; give a "
                       "number.")
    used = features or [c for c in frame.columns if c not in {target, groups, *drop}]
    used = [c for c in used if c not in drop]
    if not used:
        raise BadInput(f"{data}: no feature columns are left after --features / --drop.")
    if groups and frame[groups].isna().any():
        raise BadInput(f"{data}: the groups column {groups!r} has missing values.")

    from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor
    from pymc_bnn.tabular import make_tabular_pipeline, save_pipeline

    if inference == "nuts" and temperature not in ("auto", 1.0):
        raise BadInput("--temperature applies to ADVI only; NUTS uses its draws as they are.")
    if inference == "nuts" and n_init != 1:
        raise BadInput("--n-init applies to ADVI only; NUTS runs its chains from starts of "
                       "their own.")

    cls = BayesianMLPClassifier if task == "classification" else BayesianMLPRegressor
    est = cls(
        hidden_layer_sizes=hidden_sizes,
        inference="advi" if inference == "minibatch" else inference,
        n_iter=n_iter, n_draws=draws, posterior_temperature=temperature, random_state=seed,
        prior_sigma=prior_sigma, n_init=n_init, progressbar=sys.stderr.isatty())
    pipeline = make_tabular_pipeline(est, max_categories=max_categories,
                                     keep=[c for c in keep if c in used] or None)
    pre = pipeline.named_steps["preprocess"]
    try:
        pre.fit(frame[used])
    except ValueError as err:
        message = (str(err).replace(": drop it", ": --drop it")
                   .replace("(or keep it", "(or --keep it"))
        raise BadInput(f"{data}: {message}") from None
    from pymc_bnn.tabular import leak_message, leaking_columns

    leaks = leaking_columns(frame[pre.feature_names_in_.tolist()], frame[target])
    if leaks:
        _note(leak_message(leaks).replace("drop it", "--drop it"))
    n_imputed = sum(pre.n_missing_.values())
    if n_imputed:
        cols = sum(1 for v in pre.n_missing_.values() if v)
        _note(f"imputed {n_imputed} missing values in {cols} column{'s' if cols > 1 else ''} "
              "(numeric: median, categorical: most frequent).")
    if inference == "minibatch" and batch_size is None:
        batch_size = MINIBATCH_SIZE
    # no --batch-size: the estimator's "auto" (full batches on small tables)
    est.set_params(batch_size=None if inference == "nuts"
                   else "auto" if batch_size is None else batch_size)
    y = frame[target].to_numpy()
    if task == "regression":
        import pandas as pd

        y = pd.to_numeric(frame[target]).to_numpy(dtype=float)
    group_values = None if not groups else frame[groups].to_numpy()
    X = pre.transform(frame)
    t0 = time.perf_counter()
    try:
        est.fit(X, y, groups=group_values)
    except ValueError as err:
        raise BadInput(f"{data}: {err}") from None
    fit_seconds = time.perf_counter() - t0
    pred = est.predict(X, groups=group_values)
    if task == "classification":
        train = {"training_accuracy": float((pred == _like(y, est.classes_)).mean())}
    else:
        import numpy as np

        train = {"training_rmse": float(np.sqrt(np.mean((pred - y) ** 2)))}
    info = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "data": str(data), "target": target, "task": task, "groups": groups,
        "rows": int(frame.shape[0]), "columns": [str(c) for c in used],
        "features_after_encoding": int(X.shape[1]),
        "inference": "minibatch" if inference == "minibatch" else est.inference_,
        "fit_seconds": round(fit_seconds, 2), **train, "versions": _versions(),
    }
    with _atomic(output) as tmp:
        save_pipeline(pipeline, tmp, info=info)
    what = (f"{len(est.classes_)} classes ({', '.join(map(str, est.classes_[:8]))}"
            f"{', ...' if len(est.classes_) > 8 else ''})" if task == "classification"
            else "regression")
    click.echo(f"fit {frame.shape[0]} rows x {X.shape[1]} features (from {len(used)} columns), "
               f"{what}")
    click.echo(f"inference {info['inference']}, hidden {','.join(map(str, hidden_sizes))}, "
               f"temperature {est.posterior_temperature_:g}, {fit_seconds:.1f} s")
    if est.evidence_ is not None:
        click.echo("prior sd per layer (evidence): "
                   + ", ".join(f"{v:.3g}" for v in est.prior_sigma_))
    key, value = next(iter(train.items()))
    click.echo(f"{key.replace('_', ' ')}: {value:.4g}")
    click.echo(f"wrote {output}")


@cli.command("predict")
@click.argument("model", type=click.Path(path_type=Path))
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--output", "-o", required=True, type=click.Path(path_type=Path),
              help="Predictions file (.csv, .tsv or .parquet).")
@click.option("--id", "id_column", default=None,
              help="Keep only this input column beside the predictions (default: all).")
@click.option("--interval", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.9, show_default=True, help="Regression: central interval coverage.")
def predict_command(model, data, output, id_column, interval):
    """Predict each row of DATA with uncertainty and write OUTPUT.

    Classification adds: prediction, proba_<class> per class, entropy (total
    uncertainty) and mutual_info (the part due to the model's uncertainty).
    Regression adds: mean, std, lower_<q> and upper_<q> (q = 100 x --interval).
    """
    output = _check_output(output, "predictions")
    _table_format(output, "output file")
    pipeline, meta = _load(model)
    frame = read_table(data)
    if id_column:
        _check_present(frame, [id_column], data)
    pred = _predict(pipeline, frame, meta, path=data, interval=interval)
    est = pipeline.named_steps["model"]
    out = _prediction_frame(frame, pred, est, id_column=id_column, interval=interval)
    write_table(out, output)
    click.echo(f"wrote {output}: {len(out)} rows")


def _evaluate(model, data, target, interval):
    pipeline, meta = _load(model)
    target = target or _model_info(meta).get("target")
    if not target:
        raise BadInput(f"{model} does not record its target column; pass --target.")
    frame = read_table(data)
    _check_present(frame, [target], data)
    est = pipeline.named_steps["model"]
    frame, y = _labelled(frame, target, est, data)
    pred = _predict(pipeline, frame, meta, path=data, interval=interval)
    return pipeline, meta, y, pred, _scores(pred, y, est)


@cli.command("evaluate")
@click.argument("model", type=click.Path(path_type=Path))
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--target", "-t", default=None, help="Target column (default: the model's).")
@click.option("--interval", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.9, show_default=True, help="Regression: interval whose coverage to check.")
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON.")
def evaluate_command(model, data, target, interval, as_json):
    """Score MODEL on labelled rows of DATA: accuracy, NLL, Brier, ECE (or RMSE, NLL,
    interval coverage)."""
    _, _, _, _, scores = _evaluate(model, data, target, interval)
    if as_json:
        click.echo(json.dumps(scores, indent=2))
    else:
        click.echo(f"{model} on {data}:")
        click.echo(_format_scores(scores))


@cli.command("report")
@click.argument("model", type=click.Path(path_type=Path))
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--output", "-o", required=True, type=click.Path(path_type=Path),
              help="Folder for the figures and index.html.")
@click.option("--target", "-t", default=None, help="Target column (default: the model's).")
@click.option("--interval", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.9, show_default=True)
def report_command(model, data, output, target, interval):
    """Write a calibration and uncertainty report (PNGs and index.html) for MODEL on DATA."""
    from pymc_bnn.report import write_report

    output = _check_output(output, "report", folder=True)
    pipeline, meta, y, pred, scores = _evaluate(model, data, target, interval)
    est = pipeline.named_steps["model"]
    info = _model_info(meta)
    about = {"model file": str(model), "evaluated on": str(data), "rows": len(y)}
    about.update({k: info[k] for k in ("data", "target", "task", "inference", "rows",
                                       "features_after_encoding", "fit_seconds", "created")
                  if k in info})
    about.update({f"version {k}": v for k, v in (info.get("versions") or {}).items()})
    about = {str(k): (", ".join(map(str, v)) if isinstance(v, list) else v)
             for k, v in about.items()}
    title = f"pymc_bnn report: {info.get('target', 'model')} ({Path(str(data)).name})"
    if "proba" in pred:
        index = write_report(output, task="classification", y_true=y, proba=pred["proba"],
                             classes=est.classes_, entropy=pred["entropy"],
                             mutual_info=pred["mutual_info"], info=about, title=title)
    else:
        index = write_report(output, task="regression", y_true=y, mean=pred["mean"],
                             std=pred["std"], lower=pred["lower"], upper=pred["upper"],
                             interval=interval, info=about, title=title)
    click.echo(_format_scores(scores))
    click.echo(f"wrote {index}")


@cli.command("info")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print everything as JSON.")
def info_command(model, as_json):
    """Show what MODEL was fit on, with which settings and package versions."""
    from pymc_bnn import persistence

    path = Path(model)
    if not path.is_file():
        raise BadInput(f"no such model file: {path}")
    try:
        meta = persistence.read_metadata(path)
    except ValueError as err:
        raise BadInput(str(err)) from None
    if as_json:
        click.echo(json.dumps(meta, indent=2))
        return
    info = _model_info(meta)
    params = meta.get("params", {})
    pre = (meta.get("extra") or {}).get("preprocessing") or {}
    lines = [f"{path}: {meta['format'].split('.')[-1]} (format {meta.get('format_version')})"]
    for key in ("created", "data", "target", "task", "groups", "rows",
                "features_after_encoding", "inference", "fit_seconds", "training_accuracy",
                "training_rmse"):
        if info.get(key) is not None:
            lines.append(f"  {key.replace('_', ' ')}: {info[key]}")
    target = meta.get("target", {})
    if "classes" in target:
        lines.append(f"  classes: {', '.join(map(str, target['classes']))}")
    for c in pre.get("numeric", []):
        lines.append(f"  numeric {c['name']}: median {c['median']:.4g}, mean {c['mean']:.4g}, "
                     f"sd {c['scale']:.4g}")
    for c in pre.get("categorical", []):
        lines.append(f"  categorical {c['name']}: {', '.join(c['categories'])}")
    shown = ("hidden_layer_sizes", "activation", "prior", "prior_sigma", "inference", "n_iter",
             "batch_size", "n_draws", "posterior_temperature", "n_init", "random_state")
    lines.append("  settings: " + ", ".join(f"{k}={params[k]}" for k in shown if k in params))
    lines.append(f"  posterior temperature used: {meta.get('posterior_temperature', 1.0):g}")
    if meta.get("evidence"):
        lines.append("  prior sd per layer (evidence): "
                     + ", ".join(f"{v:.3g}" for v in meta["evidence"]["sigmas"]))
    diagnostics = meta.get("diagnostics") or {}
    if "converged" in diagnostics:
        steps = diagnostics.get("n_steps")
        lines.append(f"  converged: {diagnostics['converged']}"
                     + (f" ({steps} steps)" if steps is not None else "")
                     + (f"; {diagnostics['message']}" if diagnostics.get("message") else ""))
    versions = info.get("versions") or {}
    if versions:
        lines.append("  fit with: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    click.echo("\n".join(lines))


# ------------------------------------------------------------------------ main
def _warning_as_note(message, category, filename, lineno, file=None, line=None) -> None:
    _note(f"{category.__name__}: {message}")


def main(argv=None) -> int:
    """Run the command line; returns the exit status (2 for bad input)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args  # accepted anywhere on the line, not only before the command
    args = [a for a in args if a != "--debug"]
    try:
        with warnings.catch_warnings():
            # library warnings (e.g. an ADVI run that has not levelled off) are notes
            # here, without a source line
            warnings.showwarning = _warning_as_note
            cli.main(args=args, prog_name="pymc-bnn", standalone_mode=False)
    except click.exceptions.Exit as stop:
        return stop.exit_code
    except click.Abort:
        click.echo("pymc-bnn: aborted", err=True)
        return 130
    except click.ClickException as err:
        if debug:
            raise
        err.show()
        return err.exit_code
    except Exception as err:
        if debug:
            raise
        click.echo(f"pymc-bnn: internal error: {type(err).__name__}: {err} (run with --debug "
                   "for the traceback, and please report it)", err=True)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
