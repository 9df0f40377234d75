"""The regressor's noise model chosen on held-out rows, against constant noise.

What ``pymc-bnn fit`` does by default on a regression table (``--noise auto``): fit the
candidate noise models (constant, varying, and log-scale for a positive right-skewed
target) on four fifths of the training rows with ADVI, keep the best on the fifth held
out unless constant noise is within two standard errors, and fit that one on all rows
(``pymc_bnn.policy.choose_noise``). Beside it, in the same run: the same network
with constant noise (the former default), and scikit-learn's
``HistGradientBoostingRegressor`` with the quantile loss at 5 % and 95 % (intervals
that follow the data, with no likelihood).

Tables: the generated wage table (``pymc_bnn.datasets.make_wages``: positive, skewed,
noise a fraction of the value; 3,000 and 600 rows, 70/30 splits), a generated table of
symmetric noise whose sd grows with one feature, a homoscedastic one (Friedman #1),
and standard splits of the UCI regression sets in ``../shared/data/uci``. Each row:
test log-likelihood per row (in the units of y), 90 % interval coverage overall and in
the worst fifth of the predicted values, mean interval width, fit seconds (the choice
included).

Run: ``python benchmarks/noise_choice.py [--quick] [--tables wages uci] [--seeds 0 1 2]``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

ROOT = Path(__file__).resolve().parents[1]
UCI_DIR = ROOT.parent / "shared" / "data" / "uci"
UCI_SETS = ("bostonHousing", "concrete", "energy", "wine-quality-red", "yacht")


def wages(n_rows: int, seed: int):
    from pymc_bnn.datasets import make_wages
    from pymc_bnn.tabular._transform import TabularPreprocessor

    frame = make_wages(n_rows, random_state=seed)
    order = np.random.default_rng(seed).permutation(n_rows)
    train, test = order[: int(0.7 * n_rows)], order[int(0.7 * n_rows) :]
    pre = TabularPreprocessor().fit(frame.iloc[train].drop(columns="wage"))
    y = frame["wage"].to_numpy()
    return pre.transform(frame.iloc[train]), y[train], pre.transform(frame.iloc[test]), y[test]


def generated(kind: str, n_rows: int, seed: int):
    from sklearn.datasets import make_friedman1

    X, f = make_friedman1(n_rows, n_features=6, noise=0.0, random_state=seed)
    rng = np.random.default_rng(seed)
    sd = 0.3 + 3 * X[:, 1] if kind == "varying" else 1.0
    y = f + sd * rng.normal(size=n_rows)
    cut = int(0.7 * n_rows)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def uci(name: str, split: int):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from uci_regression import load_split

    return load_split(UCI_DIR, name, split)


def _intervals(y, mean, lower, upper) -> dict:
    from pymc_bnn.metrics import binned_coverage

    inside = (lower <= y) & (y <= upper)
    bins = binned_coverage(y, mean, lower, upper)
    return {
        "coverage90": float(inside.mean()),
        "worst_fifth": min(bins["coverage"]),
        "width90": float(np.mean(upper - lower)),
    }


def run_bnn(X, y, Xt, yt, *, auto: bool, seed: int) -> dict:
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPRegressor
    from pymc_bnn.policy._noise import choose_noise

    scaler = StandardScaler().fit(X)  # as the command line's preprocessing does
    X, Xt = scaler.transform(X), scaler.transform(Xt)
    est = BayesianMLPRegressor((5, 5), random_state=seed)
    t0 = time.perf_counter()
    chosen = "constant"
    if auto:
        choice = choose_noise(est, X, y, random_state=seed)
        est.set_params(**choice.params)
        chosen = choice.chosen
    est.fit(X, y)
    fit_s = time.perf_counter() - t0
    lower, upper = est.predict_interval(Xt, coverage=0.9)
    return {
        "method": "auto" if auto else "constant",
        "chosen": chosen,
        "inference": est.inference_,
        "fit_s": fit_s,
        "ll": float(np.mean(est.log_predictive_density(Xt, yt))),
        "rmse": float(np.sqrt(np.mean((est.predict(Xt) - yt) ** 2))),
        **_intervals(yt, est.predict(Xt), lower, upper),
    }


def run_quantile_gbm(X, y, Xt, yt, *, seed: int) -> dict:
    from sklearn.ensemble import HistGradientBoostingRegressor

    t0 = time.perf_counter()
    models = [
        HistGradientBoostingRegressor(loss=loss, quantile=q, random_state=seed).fit(X, y)
        for loss, q in (("quantile", 0.05), ("quantile", 0.95), ("squared_error", None))
    ]
    fit_s = time.perf_counter() - t0
    lower, upper, mean = (m.predict(Xt) for m in models)
    return {
        "method": "hgb quantile",
        "chosen": None,
        "inference": None,
        "fit_s": fit_s,
        "ll": None,
        "rmse": float(np.sqrt(np.mean((mean - yt) ** 2))),
        **_intervals(yt, mean, np.minimum(lower, upper), np.maximum(lower, upper)),
    }


def tables(args):
    """(table name, seed or split, loader) of the run."""
    if args.quick:  # every path once, at tiny sizes
        yield "wages 300", 0, lambda: wages(300, 0)
        yield "constant sd", 0, lambda: generated("constant", 200, 0)
        return
    for seed in args.seeds:
        if "wages" in args.tables:
            yield "wages 3,000", seed, lambda s=seed: wages(3000, s)
            yield "wages 600", seed, lambda s=seed: wages(600, s)
        if "generated" in args.tables:
            yield "varying sd", seed, lambda s=seed: generated("varying", 2000, s)
            yield "constant sd", seed, lambda s=seed: generated("constant", 2000, s)
        if "uci" in args.tables and UCI_DIR.is_dir():
            for name in UCI_SETS:
                yield name, seed, lambda n=name, s=seed: uci(n, s)


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], "noise_choice")
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=["wages", "generated", "uci"],
        default=["wages", "generated", "uci"],
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2],
        help="seeds of the generated tables and the UCI splits",
    )
    args = parser.parse_args(argv)
    info = _common.machine_info()
    _common.print_header("noise model chosen on held-out rows", info)
    rows: list[dict] = []
    t0 = time.perf_counter()
    for table, seed, load in tables(args):
        X, y, Xt, yt = load()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the short NUTS run's diagnostics
            for row in (
                run_bnn(X, y, Xt, yt, auto=False, seed=seed),
                run_bnn(X, y, Xt, yt, auto=True, seed=seed),
                run_quantile_gbm(X, y, Xt, yt, seed=seed),
            ):
                rows.append({"table": table, "seed": seed, "rows": len(y), **row, "status": "ok"})
                print(_common.markdown_table([rows[-1]], COLUMNS).splitlines()[-1], flush=True)
    table = _common.markdown_table(summary(rows), COLUMNS)
    print("\n" + table)
    _common.write_json(
        args.out,
        {
            "benchmark": "noise_choice",
            "machine": info,
            "config": vars(args) | {"out": str(args.out)},
            "rows": rows,
            "table": table,
            "elapsed_s": time.perf_counter() - t0,
            "notes": [],
        },
    )
    return 0


COLUMNS = [
    ("table", "table"),
    ("seed", "seed"),
    ("method", "method"),
    ("chosen", "noise"),
    ("ll", "test LL"),
    ("coverage90", "90% coverage"),
    ("worst_fifth", "worst fifth"),
    ("width90", "mean width"),
    ("rmse", "RMSE"),
    ("fit_s", "fit s"),
]


def summary(rows: list[dict]) -> list[dict]:
    """Medians over seeds per table and method (the chosen noise models listed)."""
    out = []
    for table in dict.fromkeys(r["table"] for r in rows):
        for method in dict.fromkeys(r["method"] for r in rows):
            some = [r for r in rows if r["table"] == table and r["method"] == method]
            if not some:
                continue
            chosen = ", ".join(sorted({r["chosen"] for r in some if r["chosen"]})) or None
            out.append(
                {
                    "table": table,
                    "seed": f"median of {len(some)}",
                    "method": method,
                    "chosen": chosen,
                    **{
                        k: _common.median([r[k] for r in some])
                        for k in ("ll", "coverage90", "worst_fifth", "width90", "rmse", "fit_s")
                    },
                }
            )
    return out


if __name__ == "__main__":
    sys.exit(main())
