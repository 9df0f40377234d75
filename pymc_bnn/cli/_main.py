"""The ``pymc-bnn`` command line (also ``python -m pymc_bnn``).

Commands:

- ``demo``: fit the two-moons classifier, print its accuracy, write uncertainty maps;
- ``example``: write a generated customer table (CSV or Parquet) to try the others on;
- ``fit``: fit a Bayesian MLP on a user's table (CSV, TSV or Parquet) and save it;
- ``predict``: per-row predictions with uncertainty, flagging rows the training data
  did not cover;
- ``evaluate``: accuracy / NLL / Brier (scikit-learn's ``brier_score_loss``) / ECE (or
  RMSE / NLL / coverage) on labelled rows;
- ``report``: figures and one self-contained ``index.html``;
- ``info``: what a model file holds.

Bad input (a missing file or column, a constant target, a damaged model file, an
output path that cannot be written, swapped MODEL and DATA, ...) ends with a one-line
error naming the file, column, row or path at fault, exit status 2, and nothing
written; ``--debug`` shows the traceback. Preprocessing lives in
:mod:`pymc_bnn.tabular`, reading and writing tables and model files in
:mod:`pymc_bnn.cli._tables`; this module holds the commands.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import warnings
from pathlib import Path

import click

from pymc_bnn import __version__
from pymc_bnn.cli._scores import (
    cost_threshold_for,
    decide,
    evaluate_rows,
    score_labels,
)
from pymc_bnn.cli._tables import (
    BadInput,
    atomic,
    check_model_and_data,
    check_model_columns,
    check_output,
    check_present,
    choose_task,
    file_rows,
    format_number,
    format_scores,
    is_table_name,
    load_model,
    match_labels,
    model_info,
    note,
    parse_separator,
    predict_rows,
    prediction_frame,
    read_model_metadata,
    read_table,
    row_name,
    shown,
    split_columns,
    table_format,
    versions,
    write_table,
)
from pymc_bnn.policy._noise import NOISE_MODELS, noise_line

__all__ = ["BadInput", "demo", "main"]

SEP_OPTION = click.option(
    "--sep",
    default=None,
    metavar="CHAR",
    help="Separator of a CSV / TSV DATA file, e.g. ';' or tab (default: the one its first "
    "lines use).",
)
INFERENCE = ("auto", "advi", "minibatch", "fullrank_advi", "nuts")
MINIBATCH_SIZE = 128

COST_OPTION = click.option(
    "--cost-fn-fp",
    "cost_fn_fp",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Two classes: what a missed positive (the second class) costs, in false alarms; "
    "predicts it where its probability is at least 1 / (1 + this).",
)


# --------------------------------------------------------------------------- demo
def demo(
    out_dir: str | Path = "figures",
    *,
    inference: str = "advi",
    batch_size=None,
    random_state: int = 0,
    resolution: int = 100,
) -> dict:
    """Fit the moons classifier, print its test accuracy, write the figures.

    Returns
    -------
    dict with ``accuracy``, ``fit_seconds`` and the written ``figures`` paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_bnn import BayesianMLPClassifier
    from pymc_bnn.datasets import moons_split
    from pymc_bnn.plotting import loss_curve, uncertainty_map

    X_train, X_test, y_train, y_test = moons_split(random_state=random_state)
    clf = BayesianMLPClassifier(
        inference=inference, batch_size=batch_size, random_state=random_state
    )
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
        uncertainty_map(
            clf,
            kind=kind,
            X=X_test,
            y=y_test,
            resolution=resolution,
            ax=ax,
            title=f"Two moons, {inference}: posterior predictive {kind}",
        )
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


# -------------------------------------------------------------------- commands
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="pymc-bnn", message="%(prog)s %(version)s"
)
@click.option("--debug", is_flag=True, help="On an error, show the full traceback.")
def cli(debug):
    """Bayesian neural networks with uncertainty, on your own tables (pymc_bnn)."""


@cli.command("demo")
@click.option("--out", default="figures", show_default=True, help="Output folder.")
@click.option(
    "--inference",
    default="advi",
    type=click.Choice(["advi", "fullrank_advi", "nuts"]),
    show_default=True,
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    help="Minibatch ADVI with this batch size.",
)
@click.option("--seed", type=int, default=0, show_default=True)
def demo_command(out, inference, batch_size, seed):
    """Fit two moons, print test accuracy, write uncertainty maps."""
    demo(out, inference=inference, batch_size=batch_size, random_state=seed)


@cli.command("example")
@click.argument("out", type=click.Path(path_type=Path))
@click.option(
    "--task",
    type=click.Choice(["classification", "multiclass", "regression"]),
    default="classification",
    show_default=True,
)
@click.option("--rows", type=click.IntRange(min=10), default=800, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def example_command(out, task, rows, seed):
    """Write a generated customer table (mixed types, missing values) to OUT.

    The target column is 'churned' (classification), 'plan_next_year' (multiclass)
    or 'monthly_spend' (regression); 'customer_id' is an identifier.
    """
    from pymc_bnn.datasets import CUSTOMER_TARGETS, make_customers

    check_output(out, "table")
    frame = make_customers(rows, task=task, random_state=seed)
    write_table(frame, out)
    click.echo(f"wrote {out}: {rows} rows, target column {CUSTOMER_TARGETS[task]!r}")


def _parse_hidden(value: str) -> tuple[int, ...]:
    """``--hidden 32,16``: every entry a whole number >= 1 (none empty: ``5,,5`` is a
    typo, not ``5,5``)."""
    sizes = []
    for entry in (v.strip() for v in value.split(",")):
        why = (
            "an empty entry"
            if not entry
            else None
            if entry.isdigit() and int(entry) >= 1
            else f"{entry!r} is not a positive whole number"
        )
        if why:
            raise BadInput(
                f"--hidden must be positive layer sizes separated by commas, e.g. "
                f"32 or 32,16; got {value!r} ({why})."
            )
        sizes.append(int(entry))
    return tuple(sizes)


def _in_worker(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a worker thread while the main thread waits in short
    joins. Python runs a Ctrl-C handler only in the main thread, between bytecodes: a
    fit holds that thread for as long as XLA compiles its sampler (tens of seconds on a
    new machine) or runs a compiled loop, so Ctrl-C waited for them; now ``main`` gets
    it at once and ends the process, the worker with it (nothing was written). The
    command's click context goes along (warnings read ``--verbose`` from it)."""
    import threading

    context, outcome = click.get_current_context(silent=True), {}

    def work():
        try:
            with context.scope(cleanup=False) if context else contextlib.nullcontext():
                outcome["value"] = fn(*args, **kwargs)
        except BaseException as err:  # re-raised in the main thread
            outcome["error"] = err

    worker = threading.Thread(target=work, name="pymc-bnn-fit", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.2)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _choose_noise(est, X, y, groups, noise: str, seed: int):
    """Set ``est``'s noise model: ``noise`` as given, or (``"auto"``) the best of
    :func:`~pymc_bnn.policy.choose_noise` on held-out rows."""
    from pymc_bnn.policy._noise import NoiseChoice, choose_noise

    if noise != "auto":
        choice = NoiseChoice(noise, reason="as set by --noise")
    else:
        choice = choose_noise(est, X, y, groups=groups, random_state=seed)
    est.set_params(**choice.params)
    return choice


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


@cli.command("fit")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--target", "-t", required=True, help="Column to predict.")
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="Model file to write (netCDF, e.g. model.nc).",
)
@click.option(
    "--task",
    type=click.Choice(["auto", "classification", "regression"]),
    default="auto",
    show_default=True,
    help="auto: text, true/false or <= 10 distinct integers is classification.",
)
@click.option(
    "--hidden", default="5,5", show_default=True, help="Hidden layer sizes, comma-separated."
)
@click.option(
    "--inference",
    type=click.Choice(INFERENCE),
    default="auto",
    show_default=True,
    help="auto: the estimators' default. Classification: a mixture of Laplace "
    "approximations (five MAP networks) up to 100,000 rows, ADVI beyond; "
    "with --groups NUTS (unless --batch-size, --n-iter, --n-init or a "
    "--temperature is given). Regression: a short NUTS run on small tables "
    "(rows x weights <= 500,000), a mixture of Laplace approximations "
    "beyond; with --groups or varying noise ADVI. "
    "`pymc-bnn info` says which ran.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    help=f"Minibatch size (implies minibatch ADVI; default {MINIBATCH_SIZE} "
    "with --inference minibatch, else full batches up to 1,024 rows and "
    "minibatches of 1,024 beyond).",
)
@click.option(
    "--n-iter",
    type=click.IntRange(min=1),
    default=None,
    help="ADVI steps (default: the estimator's).",
)
@click.option(
    "--draws",
    type=click.IntRange(min=1),
    default=500,
    show_default=True,
    help="Posterior draws kept for prediction (ADVI, Laplace); per chain with "
    "--inference nuts. The regression default's short NUTS run keeps its "
    "own 100 per chain.",
)
@click.option(
    "--n-init",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Starting weights per ADVI fit; the one with the best ELBO is kept "
    "(costs n-init times the fits).",
)
@click.option(
    "--temperature",
    default="auto",
    show_default=True,
    help="Posterior temperature: 'auto' (chosen by cross-fitting) or a number.",
)
@click.option(
    "--prior-sigma",
    default="auto",
    show_default=True,
    help="Prior sd of the weights (classification): 'evidence' (one per "
    "layer, chosen by the Laplace evidence; without --groups), 'auto' (the "
    "evidence where available, else 1) or a number. Regression infers "
    "each layer's scale.",
)
@click.option(
    "--noise",
    type=click.Choice(["auto", *NOISE_MODELS]),
    default="auto",
    show_default=True,
    help="Regression: 'constant' (one noise sd), 'varying' (the noise sd learned "
    "as a function of the features), 'log' (y modelled on the log scale: "
    "noise a fraction of the value; y > 0). auto: the best on held-out "
    "rows (a fifth; log tried for a positive, right-skewed target).",
)
@click.option("--groups", default=None, help="Column of group labels: a hierarchical model.")
@click.option("--features", default=None, help="Comma-separated columns to use (default: all).")
@click.option("--drop", default=None, help="Comma-separated columns to leave out.")
@click.option(
    "--keep",
    default=None,
    help="Comma-separated columns that are features although they look like "
    "identifiers (whole numbers, each once, in row order, tightly packed, or "
    "named like an id: user_id, account_no, ...).",
)
@click.option(
    "--categorical",
    default=None,
    help="Comma-separated columns that are categories although they hold numbers "
    "(e.g. codes 1, 2, 3): one-hot encoded, here and in predict / evaluate.",
)
@click.option(
    "--max-categories",
    type=click.IntRange(min=2),
    default=50,
    show_default=True,
    help="Refuse a categorical column with more distinct values.",
)
@SEP_OPTION
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Say in full what the fit chose and why, and warnings in full.",
)
def fit_command(
    data,
    target,
    output,
    task,
    hidden,
    inference,
    batch_size,
    n_iter,
    draws,
    n_init,
    temperature,
    prior_sigma,
    noise,
    groups,
    features,
    drop,
    keep,
    categorical,
    max_categories,
    sep,
    seed,
    verbose,
):
    """Fit a Bayesian MLP on the table DATA and save it to a model file."""
    hidden_sizes = _parse_hidden(hidden)
    sep = parse_separator(sep)
    temperature = _positive_or(temperature, ("auto",), "--temperature")
    prior_sigma = _positive_or(prior_sigma, ("auto", "evidence"), "--prior-sigma")
    if prior_sigma == "evidence" and groups:
        raise BadInput("--prior-sigma evidence is not available with --groups yet; give a number.")
    output = check_output(output, "model", inputs=[data])
    if is_table_name(output):
        raise BadInput(
            f"cannot write the model to {output}: a model file is netCDF "
            "(e.g. model.nc), and this name is a table's."
        )
    frame = read_table(data, sep=sep)
    features, drop, keep, categorical = (
        split_columns(option, frame.columns) for option in (features, drop, keep, categorical)
    )
    for option, names in (
        ("--features", features),
        ("--drop", drop),
        ("--keep", keep),
        ("--categorical", categorical),
    ):
        repeated = sorted({c for c in names if names.count(c) > 1})
        if repeated:
            raise BadInput(f"{option} names {', '.join(map(repr, repeated))} more than once.")
    check_present(
        frame, [target] + ([groups] if groups else []) + features + drop + keep + categorical, data
    )
    if target in features or target in drop or target == groups:
        raise BadInput(f"the target {target!r} cannot also be a feature, dropped or the groups.")
    rows = frame[target].notna()
    if not rows.any():
        raise BadInput(f"{data}: the target column {target!r} has no values.")
    if not rows.all():
        n_absent = int((~rows).sum())
        note(
            f"{n_absent} row{'s' if n_absent > 1 else ''} without a {target!r} value "
            f"{'are' if n_absent > 1 else 'is'} left out."
        )
        frame = frame.loc[rows]  # the row labels stay the file's (messages name rows)
    task = choose_task(task, frame[target], target, data)
    if prior_sigma not in ("auto", 1.0) and task == "regression":
        # the regressor's Neal prior infers each layer's scale: a scale would be ignored
        raise BadInput(
            "--prior-sigma is available for classification only: the regressor "
            "infers each layer's prior scale (a Gamma precision per layer)."
        )
    if noise != "auto" and task == "classification":
        raise BadInput("--noise applies to regression only: a classifier has no noise sd.")
    used = features or [c for c in frame.columns if c not in {target, groups, *drop}]
    used = [c for c in used if c not in drop]
    if not used:
        raise BadInput(f"{data}: no feature columns are left after --features / --drop.")
    not_used = [c for c in categorical if c not in used]
    if not_used:
        raise BadInput(
            f"--categorical {', '.join(map(repr, not_used))}: not a feature (the "
            "target, the groups, or left out by --features / --drop)."
        )
    if groups and frame[groups].isna().any():
        absent = frame[groups].isna().to_numpy()
        raise BadInput(
            f"{data}: the groups column {groups!r} has missing values, the first "
            f"in {row_name(frame.index[absent.argmax()])}."
        )
    if groups:
        n_groups = int(frame[groups].nunique())
        if n_groups == 1:
            raise BadInput(
                f"{data}: the groups column {groups!r} has the single value "
                f"{shown(frame[groups].iloc[0])}: a hierarchical model needs "
                "several groups; leave out --groups."
            )
        if n_groups == len(frame) and len(frame) >= 20:
            # each row its own group: the group effects memorise the rows, and every new
            # row is an unseen group
            raise BadInput(
                f"{data}: the groups column {groups!r} looks like an identifier "
                f"(a different value in each of its {len(frame)} rows): groups "
                "must repeat to share anything; choose another --groups."
            )

    from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor
    from pymc_bnn.tabular.pipeline import make_tabular_pipeline, save_pipeline

    if inference == "nuts" and temperature not in ("auto", 1.0):
        raise BadInput("--temperature applies to ADVI only; NUTS uses its draws as they are.")
    if inference == "nuts" and n_init != 1:
        raise BadInput(
            "--n-init applies to ADVI only; NUTS runs its chains from starts of their own."
        )
    if inference == "nuts" and (batch_size is not None or n_iter is not None):
        option = "--batch-size" if batch_size is not None else "--n-iter"
        raise BadInput(
            f"{option} applies to ADVI only; NUTS runs on all the rows (its "
            "length: --draws per chain)."
        )

    cls = BayesianMLPClassifier if task == "classification" else BayesianMLPRegressor
    est = cls(
        hidden_layer_sizes=hidden_sizes,
        inference="advi" if inference == "minibatch" else inference,
        n_iter=n_iter,
        n_draws=draws,
        posterior_temperature=temperature,
        random_state=seed,
        prior_sigma=prior_sigma,
        n_init=n_init,
        progressbar=True,
    )
    pipeline = make_tabular_pipeline(
        est,
        max_categories=max_categories,
        keep=[c for c in keep if c in used] or None,
        as_categorical=categorical or None,
    )
    pre = pipeline.named_steps["preprocess"]
    try:
        pre.fit(frame[used])
    except ValueError as err:
        message = (
            file_rows(str(err))
            .replace(": drop it", ": --drop it")
            .replace("(or keep it", "(or --keep it")
        )
        raise BadInput(f"{data}: {message}") from None
    from pymc_bnn.tabular._transform import leaking_columns

    leaks = leaking_columns(frame[pre.feature_names_in_.tolist()], frame[target])
    if leaks:
        # brief: the figures are in the Python warning (columns.leak_message)
        names = ", ".join(repr(c) for c, _ in leaks)
        note(
            f"a single column predicts the target almost perfectly: {names}; if it leaks "
            "the target, --drop it"
        )
    n_imputed = sum(pre.n_missing_.values())
    if n_imputed:
        cols = sum(1 for v in pre.n_missing_.values() if v)
        note(
            f"filled {n_imputed} missing value{'s' if n_imputed > 1 else ''} in {cols} "
            f"column{'s' if cols > 1 else ''} (numbers: the median; categories: the most "
            "frequent)."
        )
    if inference == "minibatch" and batch_size is None:
        batch_size = MINIBATCH_SIZE
    # no --batch-size: the estimator's "auto" (full batches on small tables)
    est.set_params(
        batch_size=None if inference == "nuts" else "auto" if batch_size is None else batch_size
    )
    y = frame[target].to_numpy()
    if task == "regression":
        import pandas as pd

        y = pd.to_numeric(frame[target]).to_numpy(dtype=float)
    group_values = None if not groups else frame[groups].to_numpy()
    X = pre.transform(frame)
    t0 = time.perf_counter()
    try:
        choice = (
            _in_worker(_choose_noise, est, X, y, group_values, noise, seed)
            if task == "regression"
            else None
        )
        _in_worker(est.fit, X, y, groups=group_values)
    except ValueError as err:
        raise BadInput(f"{data}: {err}") from None
    fit_seconds = time.perf_counter() - t0
    pred = est.predict(X, groups=group_values)
    if task == "classification":
        train = {"training_accuracy": float((pred == match_labels(y, est.classes_)[0]).mean())}
    else:
        import numpy as np

        train = {"training_rmse": float(np.sqrt(np.mean((pred - y) ** 2)))}
    info = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "data": str(data),
        "target": target,
        "task": task,
        "groups": groups,
        "rows": int(frame.shape[0]),
        "columns": [str(c) for c in used],
        "categorical": [str(c) for c in categorical],
        "features_after_encoding": int(X.shape[1]),
        "inference": "minibatch" if inference == "minibatch" else est.inference_,
        "draws_kept": int(est.idata_.posterior.sizes["chain"] * est.idata_.posterior.sizes["draw"]),
        "fit_seconds": round(fit_seconds, 2),
        **train,
        "versions": versions(),
    }
    if choice is not None:
        info["noise"] = choice.as_dict()
    with atomic(output) as tmp:
        save_pipeline(pipeline, tmp, info=info)
    what = (
        f"{len(est.classes_)} classes ({', '.join(map(str, est.classes_[:8]))}"
        f"{', ...' if len(est.classes_) > 8 else ''})"
        if task == "classification"
        else "regression"
    )
    click.echo(
        f"fit {frame.shape[0]} rows x {X.shape[1]} features (from {len(used)} columns), {what}"
    )
    click.echo(
        f"inference {info['inference']}, hidden {','.join(map(str, hidden_sizes))}, "
        f"{fit_seconds:.1f} s"
    )
    from pymc_bnn.policy._describe import describe

    if choice is not None:
        click.echo(noise_line(choice))
    for line in describe(est, brief=not verbose):  # the numbers themselves: pymc-bnn info
        click.echo(line)
    key, value = next(iter(train.items()))
    click.echo(f"{key.replace('_', ' ')}: {format_number(value)}")
    if (getattr(est, "nuts_run_", None) or {}).get("chosen") == "auto":
        # the short run keeps its diagnostics without a warning: said here, in one line
        from pymc_bnn.policy._nuts_words import poor_draws_note

        poor = poor_draws_note(est.diagnostics_ or {})
        if poor:
            note(poor)
    click.echo(f"wrote {output}")


@cli.command("predict")
@click.argument("model", type=click.Path(path_type=Path))
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="Predictions file (.csv, .tsv or .parquet).",
)
@click.option(
    "--id",
    "id_column",
    default=None,
    help="Keep only this input column beside the predictions (default: all).",
)
@click.option(
    "--interval",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.9,
    show_default=True,
    help="Regression: central interval coverage.",
)
@SEP_OPTION
@COST_OPTION
def predict_command(model, data, output, id_column, interval, sep, cost_fn_fp):
    """Predict each row of DATA with the model file MODEL, with uncertainty, and write
    OUTPUT.

    Classification adds: prediction, proba_<class> per class, entropy (total
    uncertainty) and mutual_info (the part due to the model's uncertainty).
    Regression adds: mean, std, lower_<q> and upper_<q> (q = 100 x --interval).
    """
    check_model_and_data(model, data)
    output = check_output(output, "predictions", inputs=[data, model])
    table_format(output, "output file")
    # the table and the columns the model needs are checked before the model is built
    # (which imports PyMC and JAX, and compiles: seconds)
    frame = read_table(data, sep=parse_separator(sep))
    if id_column:
        check_present(frame, [id_column], data)
    meta = read_model_metadata(model)
    check_model_columns(frame, meta, data)
    pipeline, meta = load_model(model, meta)
    est = pipeline.named_steps["model"]
    threshold = cost_threshold_for(cost_fn_fp, est)
    pred = predict_rows(pipeline, frame, meta, path=data, interval=interval)
    pred = decide(pred, est, threshold)
    if threshold is not None:
        note(
            f"predicted {est.classes_[1]!r} where its probability is at least "
            f"{threshold:.3g} (--cost-fn-fp {cost_fn_fp:g})"
        )
    out = prediction_frame(frame, pred, est, id_column=id_column, interval=interval)
    write_table(out, output)
    click.echo(f"wrote {output}: {len(out)} rows")


@cli.command("evaluate")
@click.argument("model", type=click.Path(path_type=Path))
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--target", "-t", default=None, help="Target column (default: the model's).")
@click.option(
    "--interval",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.9,
    show_default=True,
    help="Regression: the central interval whose coverage and width to score.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON.")
@SEP_OPTION
@COST_OPTION
def evaluate_command(model, data, target, interval, as_json, sep, cost_fn_fp):
    """Score the model file MODEL on the labelled rows of DATA.

    Classification: accuracy, NLL, Brier score, ECE and more (those of
    pymc_bnn.metrics.classification_summary). brier is scikit-learn's
    brier_score_loss: for two classes, the mean squared difference between the
    predicted probability of the second (positive) class and the 0/1 outcome, 0 to 1
    (0 is perfect); for more, summed over the classes, 0 to 2. multiclass_brier is
    the sum over the classes whatever their number (for two classes, twice brier).

    Regression: RMSE, NLL, CRPS and more, and the coverage (and width) of the central
    --interval (default: the 90% interval).
    """
    _, _, _, _, scores = evaluate_rows(model, data, target, interval, sep, cost_fn_fp)
    if as_json:
        click.echo(json.dumps(scores, indent=2))
    else:
        click.echo(f"{model} on {data}:")
        click.echo(format_scores(scores, score_labels(interval)))


@cli.command("report")
@click.argument("model", type=click.Path(path_type=Path))
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="Folder for the figures and index.html.",
)
@click.option("--target", "-t", default=None, help="Target column (default: the model's).")
@click.option(
    "--interval",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.9,
    show_default=True,
)
@SEP_OPTION
@COST_OPTION
def report_command(model, data, output, target, interval, sep, cost_fn_fp):
    """Write a calibration and uncertainty report (PNGs and index.html) for MODEL on DATA."""
    from pymc_bnn.plotting.report import write_report

    output = check_output(output, "report", folder=True, inputs=[data, model])
    pipeline, meta, y, pred, scores = evaluate_rows(model, data, target, interval, sep, cost_fn_fp)
    est = pipeline.named_steps["model"]
    info = model_info(meta)
    about = {"model file": str(model), "evaluated on": str(data), "rows": len(y)}
    about.update(
        {
            k: info[k]
            for k in (
                "data",
                "target",
                "task",
                "inference",
                "rows",
                "features_after_encoding",
                "fit_seconds",
                "created",
            )
            if k in info
        }
    )
    about.update({f"version {k}": v for k, v in (info.get("versions") or {}).items()})
    about = {
        str(k): (", ".join(map(str, v)) if isinstance(v, list) else v) for k, v in about.items()
    }
    title = f"pymc_bnn report: {info.get('target', 'model')} ({Path(str(data)).name})"
    if "proba" in pred:
        index = write_report(
            output,
            task="classification",
            y_true=y,
            proba=pred["proba"],
            classes=est.classes_,
            entropy=pred["entropy"],
            mutual_info=pred["mutual_info"],
            info=about,
            title=title,
            cost_fn_fp=cost_fn_fp,
        )
    else:
        index = write_report(
            output,
            task="regression",
            y_true=y,
            mean=pred["mean"],
            std=pred["std"],
            lower=pred["lower"],
            upper=pred["upper"],
            interval=interval,
            info=about,
            title=title,
        )
    click.echo(format_scores(scores, score_labels(interval)))
    click.echo(f"wrote {index}")


@cli.command("info")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print everything as JSON.")
def info_command(model, as_json):
    """Show what MODEL was fit on, with which settings and package versions."""
    path = Path(model)
    meta = read_model_metadata(path)
    if as_json:
        click.echo(json.dumps(meta, indent=2))
        return
    from pymc_bnn.cli._info import info_lines

    click.echo("\n".join(info_lines(path, meta)))


# ------------------------------------------------------------------------ main
#: Advice of Python's warnings the command line words as its own options.
CLI_ADVICE = {
    " (or continue the chains with sample_more)": "",
    "lengthen tune and draws, or run more chains": "raise --draws",
    "raise target_accept (pymc_bnn.fit(..., target_accept=0.95)), lengthen tune, start from "
    "ADVI (nuts_init='advi'), or use a smaller prior_sigma": (
        "a smaller --prior-sigma (classification), or from Python a higher target_accept, "
        "a longer tune or nuts_init='advi'"
    ),
}


#: How a warning's class is named in its note: plain words for the package's own and
#: Python's generic ones (a user of the command line need not know the classes).
WARNING_WORDS = {
    "UserWarning": "",
    "InputScaleWarning": "",
    "TargetLeakageWarning": "",
    "ConvergenceWarning": "not converged: ",
    "SamplingWarning": "sampling: ",
}


def _warning_as_note(message, category, filename, lineno, file=None, line=None) -> None:
    text = str(message)
    for python, option in CLI_ADVICE.items():
        text = text.replace(python, option)
    context = click.get_current_context(silent=True)
    if len(text) > 90 and context is not None and context.params.get("verbose") is False:
        # the headline; the figures and advice with --verbose (fit) or in the docs
        text = text.split(": ")[0].split(". ")[0].rstrip(".") + " (details: --verbose)"
    note(WARNING_WORDS.get(category.__name__, f"{category.__name__}: ") + text)


def _exit_now_if_threads_run(status: int) -> None:
    """End the process at once where sampler or fit threads still run (Ctrl-C): Python
    would otherwise wait for them at exit (a NUTS chain is one compiled call of tens of
    seconds). Nothing partial is lost: outputs are written only when complete. Only for
    the ``pymc-bnn`` script (``main()`` without arguments), never for a caller's
    process."""
    import os
    import threading

    if threading.active_count() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


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
        click.echo("pymc-bnn: interrupted; nothing written", err=True)
        if argv is None:
            _exit_now_if_threads_run(130)
        return 130
    except click.ClickException as err:
        if debug:
            raise
        err.show()
        return err.exit_code
    except Exception as err:
        if debug:
            raise
        click.echo(
            f"pymc-bnn: internal error: {type(err).__name__}: {err} (run with --debug "
            "for the traceback, and please report it)",
            err=True,
        )
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
