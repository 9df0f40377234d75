"""The UCI regression benchmark: the standard splits, the published results, anchors.

The field's standard benchmark for Bayesian regression networks (Hernández-Lobato &
Adams 2015): five UCI data sets, 20 fixed random 90/10 train/test splits each, one
hidden layer of 50 units, inputs standardised with the training split's statistics,
metrics in the target's units. The data and splits are read from
``../shared/data/uci/`` (``--data-dir``; its README gives the sources); this script
downloads nothing.

Models, each in the same process on the same splits:

- ``BayesianMLPRegressor((50,), random_state=split)`` behind a ``StandardScaler``: every
  other setting its default (``--bnn NAME=JSON`` adds variants, e.g.
  ``--bnn 'nuts={"inference": "nuts"}'``); its test LL is the mean of
  :meth:`~pymc_bnn.BayesianMLPRegressor.log_predictive_density` (the log of the
  mean over posterior draws of each draw's density), its CRPS that of 1,000 draws of
  :meth:`~pymc_bnn.BayesianMLPRegressor.sample_y`, its interval ``predict_interval``;
- ``RidgeCV``: a Normal predictive with the training residuals' sd (``n - p - 1``
  degrees of freedom);
- ``MLPRegressor((50,))`` (targets standardised, up to 2,000 iterations), trained by
  L-BFGS (``mlp``; scikit-learn's advice for small data) and by Adam with its default
  stopping rule (``mlp-adam``): a Normal predictive whose sd is the root mean square of
  5-fold out-of-fold residuals;
- a 5-member MLP ensemble, each way (``ensemble``, ``ensemble-adam``): member ``k`` is
  trained on folds other than ``k`` of a 5-fold
  split of the training rows, its noise sd is the RMS of its residuals on fold ``k``,
  and the predictive is the equal mixture of the members' Normals (sklearn has no
  Gaussian-NLL head; held-out residuals give each member an honest noise level).

Published rows (PBP, MC dropout, deep ensembles, NGBoost) are copied from the data's
README. Summaries: mean ± standard error over the splits of test LL, RMSE, CRPS, 90 %
interval coverage and fit time; the issue's criteria are checked in a second table.

Run: ``python benchmarks/uci_regression.py [--quick] [--sets yacht boston]
[--splits 20] [--models bnn ridge mlp ensemble]``. ``--quick``: two sets, two splits,
short fits (numbers not meaningful).
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

NAME = "uci_regression"
ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT.parent / "shared" / "data" / "uci"
SETS = ("bostonHousing", "concrete", "energy", "yacht", "wine-quality-red")
#: From ``../shared/data/uci/README.md``: (LL, LL se, RMSE, RMSE se) per method.
PUBLISHED = {
    "bostonHousing": {
        "PBP": (-2.57, 0.09, 3.01, 0.18),
        "MC dropout": (-2.40, 0.04, 2.90, 0.18),
        "deep ensembles": (-2.41, 0.25, 3.28, 1.00),
        "NGBoost": (-2.43, 0.15, 2.94, 0.53),
    },
    "concrete": {
        "PBP": (-3.16, 0.02, 5.67, 0.09),
        "MC dropout": (-2.93, 0.02, 4.82, 0.16),
        "deep ensembles": (-3.06, 0.18, 6.03, 0.58),
        "NGBoost": (-3.04, 0.17, 5.06, 0.61),
    },
    "energy": {
        "PBP": (-2.04, 0.02, 1.80, 0.05),
        "MC dropout": (-1.21, 0.01, 0.54, 0.06),
        "deep ensembles": (-1.38, 0.22, 2.09, 0.29),
        "NGBoost": (-0.60, 0.45, 0.46, 0.06),
    },
    "yacht": {
        "PBP": (-1.63, 0.02, 1.02, 0.05),
        "MC dropout": (-1.25, 0.01, 0.67, 0.05),
        "deep ensembles": (-1.18, 0.21, 1.58, 0.48),
        "NGBoost": (-0.20, 0.26, 0.50, 0.20),
    },
    "wine-quality-red": {
        "PBP": (-0.97, 0.01, 0.64, 0.01),
        "MC dropout": (-0.93, 0.01, 0.62, 0.01),
        "deep ensembles": (-0.94, 0.12, 0.64, 0.04),
        "NGBoost": (-0.91, 0.06, 0.63, 0.04),
    },
}
METRICS = ("ll", "rmse", "crps", "coverage90", "fit_s")
CRPS_SAMPLES = 1000


# ---------------------------------------------------------------------------- data
def load_split(data_dir: Path, name: str, split: int):
    """Train / test arrays of one standard split (indices as published, 0-based)."""
    folder = data_dir / name
    data = np.loadtxt(folder / "data.txt")
    features = np.loadtxt(folder / "index_features.txt", dtype=int, ndmin=1)
    target = int(np.loadtxt(folder / "index_target.txt"))
    train = np.loadtxt(folder / f"index_train_{split}.txt", dtype=int)
    test = np.loadtxt(folder / f"index_test_{split}.txt", dtype=int)
    X, y = data[:, features], data[:, target]
    return X[train], y[train], X[test], y[test]


def n_splits(data_dir: Path, name: str) -> int:
    return int(np.loadtxt(data_dir / name / "n_splits.txt"))


# -------------------------------------------------------------------------- models
def normal_scores(y, mean, sd, fit_s) -> dict:
    from scipy.stats import norm

    from pymc_bnn.metrics import crps_gaussian, interval_coverage

    lo, hi = norm.ppf([0.05, 0.95])
    return {
        "ll": float(np.mean(norm.logpdf(y, mean, sd))),
        "rmse": float(np.sqrt(np.mean((y - mean) ** 2))),
        "crps": crps_gaussian(y, mean, sd),
        "coverage90": interval_coverage(y, mean + lo * sd, mean + hi * sd),
        "fit_s": fit_s,
    }


def mixture_scores(y, means, sds, fit_s) -> dict:
    """Scores of the equal mixture of Normals ``(means[k], sds[k])`` (k members)."""
    from scipy.optimize import brentq
    from scipy.special import logsumexp
    from scipy.stats import norm

    from pymc_bnn.metrics import crps_ensemble, interval_coverage

    means, sds = np.asarray(means), np.asarray(sds)
    k = means.shape[0]
    ll = logsumexp(norm.logpdf(y, means, sds), axis=0) - np.log(k)
    rng = np.random.default_rng(0)
    pick = rng.integers(k, size=(y.shape[0], CRPS_SAMPLES))
    cols = np.arange(y.shape[0])[:, None]
    samples = means[pick, cols] + sds[pick, cols] * rng.standard_normal(pick.shape)
    bounds = []
    for level in (0.05, 0.95):
        bounds.append(
            [
                brentq(
                    lambda t, i=i: norm.cdf(t, means[:, i], sds[:, i]).mean() - level,
                    (means[:, i] - 20 * sds[:, i]).min(),
                    (means[:, i] + 20 * sds[:, i]).max(),
                )
                for i in range(y.shape[0])
            ]
        )
    return {
        "ll": float(ll.mean()),
        "rmse": float(np.sqrt(np.mean((y - means.mean(0)) ** 2))),
        "crps": crps_ensemble(y, samples),
        "coverage90": interval_coverage(y, np.array(bounds[0]), np.array(bounds[1])),
        "fit_s": fit_s,
    }


def run_bnn(params: dict, X, y, Xt, yt, seed: int, quick: bool) -> dict:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPRegressor
    from pymc_bnn.metrics import crps_ensemble, interval_coverage

    kwargs = {"hidden_layer_sizes": (50,), "random_state": seed, **params}
    if quick:
        kwargs.setdefault("n_iter", 300)
        kwargs.setdefault("n_draws", 50)
    reg = BayesianMLPRegressor(**kwargs)
    pipe = make_pipeline(StandardScaler(), reg)
    t0 = time.perf_counter()
    pipe.fit(X, y)
    fit_s = time.perf_counter() - t0
    Zt = pipe[:-1].transform(Xt)
    mean = reg.predict(Zt)
    lower, upper = reg.predict_interval(Zt, coverage=0.9)
    samples = reg.sample_y(Zt, n_samples=CRPS_SAMPLES, random_state=seed)
    return {
        "ll": float(reg.log_predictive_density(Zt, yt).mean()),
        "rmse": float(np.sqrt(np.mean((yt - mean) ** 2))),
        "crps": crps_ensemble(yt, samples),
        "coverage90": interval_coverage(yt, lower, upper),
        "fit_s": fit_s,
        "inference": reg.inference_,
        "temperature": getattr(reg, "posterior_temperature_", None),
        "kl_weight": getattr(reg, "kl_weight_", None),
        "kl_weight_selection": getattr(reg, "kl_weight_selection_", None),
        "inference_selection": getattr(reg, "inference_selection_", None),
    }


def _mlp(seed: int, quick: bool, solver: str = "lbfgs"):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # Two anchors, neither tuned on the test rows: L-BFGS, as scikit-learn's documentation
    # advises for small data sets (these have 308-1,599 rows), and Adam with its default
    # stopping rule (training loss flat for 10 epochs), which ends it after 180-360 epochs
    # (yacht's RMSE 2.9 against L-BFGS's 0.6) but over-fits noisy boston less (3.0
    # against 5.2): results/uci_regression.md
    mlp = MLPRegressor(
        hidden_layer_sizes=(50,), solver=solver, max_iter=200 if quick else 2000, random_state=seed
    )
    return make_pipeline(
        StandardScaler(), TransformedTargetRegressor(mlp, transformer=StandardScaler())
    )


def run_ridge(X, y, Xt, yt, seed: int, quick: bool) -> dict:
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    t0 = time.perf_counter()
    pipe = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13))).fit(X, y)
    resid = y - pipe.predict(X)
    sd = math.sqrt(resid @ resid / max(len(y) - X.shape[1] - 1, 1))
    fit_s = time.perf_counter() - t0
    return normal_scores(yt, pipe.predict(Xt), np.full(len(yt), sd), fit_s)


def run_mlp(X, y, Xt, yt, seed: int, quick: bool, solver: str = "lbfgs") -> dict:
    from sklearn.model_selection import KFold, cross_val_predict

    t0 = time.perf_counter()
    oof = cross_val_predict(
        _mlp(seed, quick, solver), X, y, cv=KFold(5, shuffle=True, random_state=seed)
    )
    sd = float(np.sqrt(np.mean((y - oof) ** 2)))
    pipe = _mlp(seed, quick, solver).fit(X, y)
    fit_s = time.perf_counter() - t0
    return normal_scores(yt, pipe.predict(Xt), np.full(len(yt), sd), fit_s)


def run_ensemble(X, y, Xt, yt, seed: int, quick: bool, solver: str = "lbfgs") -> dict:
    from sklearn.model_selection import KFold

    t0 = time.perf_counter()
    means, sds = [], []
    for k, (tr, va) in enumerate(KFold(5, shuffle=True, random_state=seed).split(X)):
        member = _mlp(seed * 5 + k, quick, solver).fit(X[tr], y[tr])
        sd = float(np.sqrt(np.mean((y[va] - member.predict(X[va])) ** 2)))
        means.append(member.predict(Xt))
        sds.append(np.full(len(yt), sd))
    fit_s = time.perf_counter() - t0
    return mixture_scores(yt, means, sds, fit_s)


ANCHORS = {
    "ridge": ("RidgeCV (Normal, residual sd)", run_ridge),
    "mlp": ("MLPRegressor (50,) L-BFGS (Normal, out-of-fold sd)", run_mlp),
    "ensemble": ("5 MLPs (50,) L-BFGS (mixture, held-out sd each)", run_ensemble),
    # the labels of the Adam anchors' earlier runs, so that stored rows merge
    "mlp-adam": (
        "MLPRegressor (50,) (Normal, out-of-fold sd)",
        functools.partial(run_mlp, solver="adam"),
    ),
    "ensemble-adam": (
        "5 MLPs (50,) (mixture, held-out sd each)",
        functools.partial(run_ensemble, solver="adam"),
    ),
}


# ------------------------------------------------------------------------ summaries
def mean_se(values) -> tuple[float | None, float | None]:
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    a = np.asarray(values, dtype=float)
    se = float(a.std(ddof=1) / math.sqrt(len(a))) if len(a) > 1 else None
    return float(a.mean()), se


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        for model in dict.fromkeys(r["model"] for r in rows if r["dataset"] == dataset):
            mine = [
                r
                for r in rows
                if r["dataset"] == dataset and r["model"] == model and r["status"] == "ok"
            ]
            rec = {"dataset": dataset, "model": model, "n_splits": len(mine)}
            for m in METRICS:
                rec[m], rec[m + "_se"] = mean_se([r.get(m) for r in mine])
            rec["fit_s_max"] = max((r["fit_s"] for r in mine), default=None)
            out.append(rec)
    return out


def _pm(mean, se, digits=2) -> str:
    if mean is None:
        return "—"
    return f"{mean:.{digits}f}" + ("" if se is None else f" ± {se:.{digits}f}")


def results_table(summary: list[dict]) -> str:
    lines = [
        "| data set | model | splits | test LL | RMSE | CRPS | 90 % coverage | fit s (max) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for dataset in dict.fromkeys(s["dataset"] for s in summary):
        for s in (s for s in summary if s["dataset"] == dataset):
            lines.append(
                f"| {dataset} | {s['model']} | {s['n_splits']} | {_pm(s['ll'], s['ll_se'])} | "
                f"{_pm(s['rmse'], s['rmse_se'])} | {_pm(s['crps'], s['crps_se'], 3)} | "
                f"{_pm(s['coverage90'], s['coverage90_se'])} | "
                f"{_pm(s['fit_s'], None, 1)} ({_pm(s['fit_s_max'], None, 1)}) |"
            )
        for method, (ll, ll_se, rmse, rmse_se) in PUBLISHED.get(dataset, {}).items():
            lines.append(
                f"| {dataset} | *{method} (published)* | 20 | {_pm(ll, ll_se)} | "
                f"{_pm(rmse, rmse_se)} | — | — | — |"
            )
    return "\n".join(lines)


def criteria(summary: list[dict], model: str) -> list[dict]:
    """The issue's criteria for one model, per data set."""
    out = []
    for s in (s for s in summary if s["model"] == model and s["dataset"] in PUBLISHED):
        pub = PUBLISHED[s["dataset"]]
        out.append(
            {
                "dataset": s["dataset"],
                "model": model,
                "ll_vs_mc_dropout": s["ll"] - pub["MC dropout"][0],
                "ll_vs_deep_ensembles": s["ll"] - pub["deep ensembles"][0],
                "rmse_vs_pbp": s["rmse"] - pub["PBP"][2],
                "coverage90": s["coverage90"],
                "ll_ge_mc_dropout": s["ll"] >= pub["MC dropout"][0],
                "ll_ge_deep_ensembles": s["ll"] >= pub["deep ensembles"][0],
                "rmse_le_pbp": s["rmse"] <= pub["PBP"][2],
                "coverage_ok": 0.85 <= s["coverage90"] <= 0.95,
                "fit_le_60s": s["fit_s_max"] <= 60,
            }
        )
    return out


def criteria_table(crit: list[dict]) -> str:
    def yes(v):
        return "✓" if v else "✗"

    lines = [
        "| data set | model | LL − MC dropout | LL − deep ens. | RMSE − PBP | "
        "90 % coverage in [0.85, 0.95] | every fit ≤ 60 s |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in crit:
        lines.append(
            f"| {c['dataset']} | {c['model']} | {c['ll_vs_mc_dropout']:+.2f} "
            f"{yes(c['ll_ge_mc_dropout'])} | {c['ll_vs_deep_ensembles']:+.2f} "
            f"{yes(c['ll_ge_deep_ensembles'])} | {c['rmse_vs_pbp']:+.2f} "
            f"{yes(c['rmse_le_pbp'])} | {c['coverage90']:.2f} {yes(c['coverage_ok'])} | "
            f"{yes(c['fit_le_60s'])} |"
        )
    return "\n".join(lines)


def _bnn_arg(text: str) -> tuple[str, dict]:
    name, sep, params = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--bnn takes NAME=JSON; got {text!r}")
    value = json.loads(params)
    if not isinstance(value, dict):
        raise ValueError(f"--bnn {name}: the JSON must be an object; got {params!r}")
    return name, value


def _report(summary: list[dict], crit: list[dict]) -> str:
    md = results_table(summary)
    if crit:
        md += "\n\nCriteria (our mean over the splits run against the published means):\n\n"
        md += criteria_table(crit)
    print("\n" + md)
    return md


def _summarise_runs(args) -> int:
    """``--rows-from``: the table and criteria of stored rows, nothing fitted."""
    merged: dict[tuple, dict] = {}
    for path in args.rows_from:
        for row in json.loads(Path(path).read_text())["rows"]:
            merged[row["dataset"], row["split"], row["model"]] = row
    rows = list(merged.values())
    anchors = {label for label, _ in ANCHORS.values()}
    bnns = [
        m
        for m in dict.fromkeys(r["model"] for r in rows)
        if m.startswith("pymc_bnn") and m not in anchors
    ]
    summary = summarise(rows)
    crit = [c for name in bnns for c in criteria(summary, name)]
    md = _report(summary, crit)
    out = _common.write_json(
        args.out,
        {
            "benchmark": NAME,
            "machine": None,
            "config": {"rows_from": [str(p) for p in args.rows_from], "out": str(args.out)},
            "rows": rows,
            "summary": summary,
            "criteria": crit,
            "table": md,
            "notes": [
                "rows gathered from the runs in config.rows_from (each row keeps the "
                "fields of its run); machine: see those files"
            ],
        },
    )
    out.with_suffix(".md").write_text(md + "\n")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DATA_DIR,
        help="folder of the UCI splits (default ../shared/data/uci)",
    )
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument(
        "--splits",
        type=int,
        default=None,
        help="first N standard splits of each set (default all 20)",
    )
    parser.add_argument("--models", nargs="+", default=["bnn", *ANCHORS], choices=["bnn", *ANCHORS])
    parser.add_argument(
        "--bnn",
        action="append",
        type=_bnn_arg,
        default=None,
        metavar="NAME=JSON",
        help="a BayesianMLPRegressor variant (repeatable; default: 'pymc_bnn default={}')",
    )
    parser.add_argument(
        "--rows-from",
        nargs="+",
        type=Path,
        default=None,
        metavar="JSON",
        help="fit nothing: summarise the rows of earlier runs' JSON files "
        "(a later file's row replaces an earlier one of the same data "
        "set, split and model), e.g. new anchors beside stored BNN rows",
    )
    args = parser.parse_args(argv)
    if args.rows_from:
        return _summarise_runs(args)
    if not args.data_dir.is_dir():
        parser.error(
            f"no UCI data at {args.data_dir}: pass --data-dir (the folder holding "
            f"{', '.join(SETS)})"
        )
    if args.quick:
        args.sets = [s for s in args.sets if s in ("yacht", "bostonHousing")] or args.sets[:1]
        args.splits = min(args.splits or 2, 2)
    variants = dict(args.bnn or [("pymc_bnn default", {})])
    import logging

    logging.getLogger("pymc").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="pymc")
    info = _common.machine_info()
    _common.print_header("UCI regression benchmark (standard splits)", info)
    rows: list[dict] = []
    t_all = time.perf_counter()
    for dataset in args.sets:
        for split in range(min(args.splits or 99, n_splits(args.data_dir, dataset))):
            X, y, Xt, yt = load_split(args.data_dir, dataset, split)
            jobs = []
            if "bnn" in args.models:
                jobs += [(name, lambda *a, p=p: run_bnn(p, *a)) for name, p in variants.items()]
            jobs += [(ANCHORS[m][0], ANCHORS[m][1]) for m in args.models if m in ANCHORS]
            for name, run in jobs:
                row = {
                    "dataset": dataset,
                    "split": split,
                    "model": name,
                    "n_train": len(y),
                    "n_test": len(yt),
                }
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        row |= run(X, y, Xt, yt, split, args.quick)
                    row["status"] = "ok"
                except Exception as exc:  # a failed fit is a result, not a crash
                    row["status"] = f"error: {type(exc).__name__}: {exc}"[:300]
                rows.append(row)
                if row["status"] == "ok":
                    print(
                        f"{dataset:<17} split {split:>2}  {name:<44} LL {row['ll']:7.3f}  "
                        f"RMSE {row['rmse']:6.3f}  cov90 {row['coverage90']:.2f}  "
                        f"fit {row['fit_s']:6.1f} s",
                        flush=True,
                    )
                else:
                    print(f"{dataset:<17} split {split:>2}  {name}: {row['status']}", flush=True)
    summary = summarise(rows)
    crit = [c for name in variants for c in criteria(summary, name)] if "bnn" in args.models else []
    md = _report(summary, crit)
    out = _common.write_json(
        args.out,
        {
            "benchmark": NAME,
            "machine": info,
            "config": vars(args)
            | {"out": str(args.out), "data_dir": str(args.data_dir), "bnn": variants},
            "rows": rows,
            "summary": summary,
            "criteria": crit,
            "table": md,
            "elapsed_s": time.perf_counter() - t_all,
            "notes": [
                "published rows: 20 splits each, from the data's README (deep ensembles' "
                "and NGBoost's ± may be standard deviations; NGBoost used its own splits)",
                "LL: mean over test points of the log predictive density (nats, units of y)",
            ],
        },
    )
    out.with_suffix(".md").write_text(md + "\n")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
