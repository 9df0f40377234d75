"""The default classifier's fit time against the number of rows, beside its peers.

``BayesianMLPClassifier(random_state=seed)`` exactly as a user calls it (every setting
its default: (5, 5) units, the evidence's prior scales, ADVI, the cross-fitted
temperature), on ``make_classification`` tables (10 informative features, labels 1 %
flipped, the default) of 1,000 to 1,000,000 rows with 20 and with 100 features,
standardised on the training rows, scored on 10,000 held-out rows. Beside it, in the
same process on the same rows:

- ``MLPClassifier((5, 5))``, scikit-learn's defaults (Adam, 200 epochs at most, stops
  when the training loss stalls);
- NumPyro SVI of the same network and priors (``AutoNormal``, Adam, the same steps,
  step sizes and minibatch as the BNN's one kept fit: full batches up to 1,024 rows,
  ``plate(subsample_size=1024)`` beyond): one fit, with none of the default's evidence
  step, temperature cross-fitting or predictive draws. Up to ``--numpyro-max-rows``
  (10,000): NumPyro's plate draws each step's rows by a permutation of all of them, so
  its time per step grows with the table (10,000 steps: 10 s on 1,000 rows, 92 s on
  10,000 on the 2-core reference machine).

Where the default's time goes: the evidence step (``_choose_prior_scales``), the fits
(the kept fit and the temperature's fold fits with their scoring, run two at a time),
and the predictive draws (``_set_posterior``), timed by wrapping those methods.
Quality: test NLL, accuracy and ECE of each model (the BNN's predictive mean, NumPyro's
mean over 200 draws).

Every feature count starts with untimed fits on 1,000 and 2,000 rows (full batches and
minibatches: the compile caches on disk and in memory are then warm, as for any fit
after a process's first of its kind). NumPyro's ``SVI.run`` compiles its loop again at
every call (every table), so its fit time includes compilation; its ``compile s`` column
is the time of a one-step run on the same table (compilation and one step). Outputs: JSON,
a Markdown table next to it, and a log-log figure of fit time against rows.

Run: ``python benchmarks/fit_scaling.py [--quick] [--rows 1000 10000] [--features 20]``.
``--quick`` exercises every path at tiny sizes (numbers not meaningful).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _peers import numpyro_bnn  # noqa: E402

NAME = "fit_scaling"
TEST_ROWS = 10_000
SVI_BATCH = 1024  # pymc_bnn.estimators.AUTO_BATCH_SIZE, written out: an independent peer


def table(n_rows: int, n_features: int, seed: int):
    """Standardised train / test rows of one make_classification table."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_rows + TEST_ROWS, n_features, n_informative=10, random_state=seed)
    X_train, y_train, X_test, y_test = X[:n_rows], y[:n_rows], X[n_rows:], y[n_rows:]
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), y_train, scaler.transform(X_test), y_test


def _scores(y, proba) -> dict:
    from pymc_bnn.metrics import expected_calibration_error, negative_log_likelihood

    return {
        "nll": negative_log_likelihood(y, proba, classes=np.arange(2)),
        "accuracy": float(np.mean(proba.argmax(1) == y)),
        "ece": expected_calibration_error(y, proba),
    }


@contextlib.contextmanager
def stage_clock(stages: dict):
    """Time the default fit's stages (seconds added to ``stages``) by wrapping the
    estimator's methods for the duration."""
    from pymc_bnn.estimators import _base as base
    from pymc_bnn.policy import _settings as fit_settings

    cls = base.BayesianMLPBase
    wrapped = {
        "evidence": (fit_settings.FitSettingsMixin, "_choose_prior_scales"),
        "fits": (base, "fit_concurrently"),
        "draws": (cls, "_set_posterior"),
    }
    saved = {}
    for stage, (owner, attr) in wrapped.items():
        original = saved[stage] = getattr(owner, attr)

        def timed(*args, _original=original, _stage=stage, **kwargs):
            t0 = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                stages[_stage] = stages.get(_stage, 0.0) + time.perf_counter() - t0

        setattr(owner, attr, timed)
    try:
        yield stages
    finally:
        for stage, (owner, attr) in wrapped.items():
            setattr(owner, attr, saved[stage])


def fit_bnn(X, y, X_test, y_test, args) -> dict:
    from pymc_bnn import BayesianMLPClassifier

    extra = {"n_iter": args.n_iter} if args.n_iter else {}
    stages: dict = {}
    with stage_clock(stages):
        t0 = time.perf_counter()
        clf = BayesianMLPClassifier(random_state=args.seed, **extra).fit(X, y)
        fit_s = time.perf_counter() - t0
    proba = clf.predict_proba(X_test)
    return {
        "model": "pymc_bnn default",
        "fit_s": fit_s,
        **{f"{k}_s": v for k, v in stages.items()},
        "batch": clf._batch_rows(X.shape[0]) or X.shape[0],
        "temperature": clf.posterior_temperature_,
        "prior_sigma": [round(s, 3) for s in clf.prior_sigma_],
        **_scores(y_test, proba),
    }


def fit_mlp(X, y, X_test, y_test, args) -> dict:
    from sklearn.neural_network import MLPClassifier

    mlp = MLPClassifier((5, 5), random_state=args.seed, **({"max_iter": 20} if args.quick else {}))
    warned: list = []
    t0 = time.perf_counter()
    with _common.counting_convergence_warnings(warned):
        mlp.fit(X, y)
    return {
        "model": "sklearn MLPClassifier((5, 5))",
        "fit_s": time.perf_counter() - t0,
        "epochs": mlp.n_iter_,
        **_scores(y_test, mlp.predict_proba(X_test)),
    }


def fit_numpyro(X, y, X_test, y_test, args) -> dict:
    import jax
    import jax.numpy as jnp
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    # float64, as the BNN's fits (PyTensor's JAX backend turns x64 on once the BNN has
    # run, so without this NumPyro's precision would depend on which model ran first)
    jax.config.update("jax_enable_x64", True)
    shapes = ((X.shape[1], 5), (5, 5), (5, 1))
    batch = SVI_BATCH if X.shape[0] > SVI_BATCH else None
    steps = args.n_iter or 10_000
    model = functools.partial(numpyro_bnn, layer_shapes=shapes, subsample_size=batch, with_p=False)
    guide = AutoNormal(model)
    svi = SVI(model, guide, Adam(0.03 if batch else 0.01), Trace_ELBO())

    def run(n_steps):
        t0 = time.perf_counter()
        res = svi.run(
            jax.random.PRNGKey(args.seed),
            n_steps,
            jnp.asarray(X),
            jnp.asarray(y),
            progress_bar=False,
        )
        jax.block_until_ready(res.losses)
        return res, time.perf_counter() - t0

    # SVI.run traces and compiles its loop at every call, so the timed fit includes
    # compilation, which the BNN's reused runners do not pay again for another table
    # size; a one-step run (compilation and one step) shows how much that is
    _, compile_s = run(1)
    res, fit_s = run(steps)
    draws = guide.sample_posterior(
        jax.random.PRNGKey(args.seed + 1), res.params, sample_shape=(200,)
    )
    h = jnp.asarray(X_test)[None]
    for i in range(3):
        h = h @ draws[f"w{i}"] + draws[f"b{i}"][:, None, :]
        if i < 2:
            h = jnp.tanh(h)
    p1 = np.asarray(jax.nn.sigmoid(h[..., 0]).mean(axis=0), dtype=np.float64)
    return {
        "model": "numpyro SVI (one fit)",
        "fit_s": fit_s,
        "compile_s": compile_s,
        "batch": batch or X.shape[0],
        **_scores(y_test, np.column_stack([1 - p1, p1])),
    }


def build_table(rows) -> str:
    return _common.markdown_table(
        rows,
        [
            ("n_rows", "rows"),
            ("n_features", "features"),
            ("model", "model"),
            ("fit_s", "fit s"),
            ("compile_s", "compile s"),
            ("evidence_s", "evidence s"),
            ("fits_s", "fits s"),
            ("draws_s", "draws s"),
            ("nll", "test NLL"),
            ("accuracy", "accuracy"),
            ("ece", "ECE"),
            ("status", "status"),
        ],
    )


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    features = sorted({r["n_features"] for r in rows})
    fig, axes = plt.subplots(1, len(features), figsize=(5 * len(features), 4), squeeze=False)
    for ax, p in zip(axes[0], features):
        for model in dict.fromkeys(r["model"] for r in rows):
            pts = sorted(
                (r["n_rows"], r["fit_s"])
                for r in rows
                if r["n_features"] == p and r["model"] == model and r["status"] == "ok"
            )
            if pts:
                ax.plot(*zip(*pts), marker="o", label=model)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel("fit time (s)")
        ax.set_title(f"{p} features")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--features", type=int, nargs="+", default=[20, 100])
    parser.add_argument(
        "--models", nargs="+", default=["bnn", "mlp", "numpyro"], choices=["bnn", "mlp", "numpyro"]
    )
    parser.add_argument(
        "--mlp-max-rows",
        type=int,
        default=1_000_000,
        help="largest table MLPClassifier is fit on (default 1,000,000)",
    )
    parser.add_argument(
        "--numpyro-max-rows",
        type=int,
        default=10_000,
        help="largest table NumPyro SVI is fit on (default 10,000: its "
        "plate subsampling permutes all rows at every step)",
    )
    parser.add_argument(
        "--n-iter", type=int, default=None, help="ADVI / SVI steps (default: the estimator's own)"
    )
    parser.add_argument(
        "--figure",
        type=Path,
        default=None,
        help="log-log figure (default: next to the JSON, .png; 'none' to "
        "skip, as calibration.py's)",
    )
    args = parser.parse_args(argv)
    if args.quick:  # one size past AUTO_BATCH_SIZE (the minibatch path), no warm-up
        args.rows, args.features, args.n_iter = [1_500], [20], args.n_iter or 300
        global TEST_ROWS
        TEST_ROWS = 500
    import logging
    import warnings

    logging.getLogger("pymc").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="pymc")
    info = _common.machine_info()
    _common.print_header("Default fit time against rows", info)
    fitters = {"bnn": fit_bnn, "mlp": fit_mlp, "numpyro": fit_numpyro}
    missing = (
        []
        if "numpyro" not in args.models
        else [m for m in ("jax", "numpyro") if importlib.util.find_spec(m) is None]
    )
    if missing:  # a peer not installed is a skipped row, not a crash
        args.models = [m for m in args.models if m != "numpyro"]
        print(
            f"numpyro SVI skipped: {' and '.join(missing)} not installed (pip install -e '.[jax]')",
            flush=True,
        )
    rows: list[dict] = []
    t_all = time.perf_counter()
    for p in args.features:
        t0 = time.perf_counter()
        # warm-up, untimed: full batches and minibatches (more than 1,024 rows)
        for n in () if args.quick else (1_000, 2_000):
            X, y, Xt, yt = table(n, p, args.seed)
            for name in args.models:
                fitters[name](X, y, Xt, yt, args)
        print(f"{p} features: warm-up {time.perf_counter() - t0:.1f} s", flush=True)
        for n in sorted(args.rows):
            X, y, Xt, yt = table(n, p, args.seed)
            limits = {"mlp": args.mlp_max_rows, "numpyro": args.numpyro_max_rows}
            for name in args.models:
                if n > limits.get(name, n):
                    continue
                row = {
                    "n_rows": n,
                    "n_features": p,
                    **fitters[name](X, y, Xt, yt, args),
                    "status": "ok",
                }
                rows.append(row)
                print(
                    f"{n:>9,} x {p:<3} {row['model']:<32} fit {row['fit_s']:8.1f} s  "
                    f"NLL {row['nll']:.4f}  accuracy {row['accuracy']:.4f}",
                    flush=True,
                )
            if missing and n <= args.numpyro_max_rows:
                rows.append(
                    {
                        "n_rows": n,
                        "n_features": p,
                        "model": "numpyro SVI (one fit)",
                        "status": "skipped",
                        "reason": f"{' and '.join(missing)} not installed",
                    }
                )
    md = build_table(rows)
    print("\n" + md)
    out = _common.write_json(
        args.out,
        {
            "benchmark": NAME,
            "machine": info,
            "config": vars(args) | {"out": str(args.out)},
            "rows": rows,
            "table": md,
            "elapsed_s": time.perf_counter() - t_all,
            "notes": [
                "MLPClassifier and NumPyro run one fit each; the default runs the "
                "evidence step, its fits (ADVI, and on up to 4,096 rows the Laplace "
                "approximation and a linear model too, each also on three folds) and "
                "the predictive draws"
            ],
        },
    )
    out.with_suffix(".md").write_text(md + "\n")
    figure = args.figure or out.with_suffix(".png")
    if str(figure).lower() == "none":
        print(f"wrote {out} and {out.with_suffix('.md')}")
        return 0
    plot(rows, figure)
    print(f"wrote {out}, {out.with_suffix('.md')} and {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
