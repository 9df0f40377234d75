"""Experiment: NUTS on the whole network and Neal's prior (the regressor's model, its
precisions and noise sampled with the weights), a short run, on the first UCI splits,
against the default's rows of the same splits in a saved benchmark file.

NUTS reached test LL -2.16 on boston's split 0 in ~600 s (2 chains x 1,000
iterations); the question is what a run short enough for the default's budget gives
(every iteration takes about 1,023 leapfrog steps, so its cost is about
chains x (tune + draws) x 1,023 gradients). Usage::

    python research/experiments/nuts_small_tables.py SETS SPLITS TUNE DRAWS OUT.json [REFERENCE.json]

``SETS`` comma-separated (bostonHousing, concrete, energy, yacht, wine-quality-red),
``SPLITS`` e.g. ``0-4`` or ``0,3``; the reference (default
``benchmarks/results/reference/uci_regression_modes.json``) gives the default's row of
each split. Two chains, in threads where the package may use two.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy as np  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from uci_regression import DATA_DIR, load_split  # noqa: E402

from pymc_bnn import BayesianMLPRegressor  # noqa: E402
from pymc_bnn.metrics import interval_coverage  # noqa: E402

REFERENCE = (
    Path(__file__).resolve().parents[2] / "benchmarks/results/reference/uci_regression_modes.json"
)


def splits_arg(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def default_rows(path: Path) -> dict:
    rows = json.loads(path.read_text())["rows"]
    return {
        (r["dataset"], r["split"]): r
        for r in rows
        if r["model"] == "pymc_bnn default" and r.get("status", "ok") == "ok"
    }


def main():
    sets, splits = sys.argv[1].split(","), splits_arg(sys.argv[2])
    tune, draws, out = int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
    ref = default_rows(Path(sys.argv[6]) if len(sys.argv) > 6 else REFERENCE)
    rows = []
    for name in sets:
        for split in splits:
            X, y, Xt, yt = load_split(DATA_DIR, name, split)
            scaler = StandardScaler().fit(X)
            Z, Zt = scaler.transform(X), scaler.transform(Xt)
            reg = BayesianMLPRegressor(
                (50,),
                inference="nuts",
                nuts_sampler="numpyro",
                tune=tune,
                n_draws=draws,
                chains=2,
                random_state=split,
            )
            t0 = time.perf_counter()
            reg.fit(Z, y)
            fit_s = time.perf_counter() - t0
            lower, upper = reg.predict_interval(Zt, coverage=0.9)
            stats = reg.posterior_.idata.sample_stats
            row = {
                "dataset": name,
                "split": split,
                "n_train": len(y),
                "tune": tune,
                "draws": draws,
                "chains": 2,
                "ll": float(reg.log_predictive_density(Zt, yt).mean()),
                "rmse": float(np.sqrt(np.mean((reg.predict(Zt) - yt) ** 2))),
                "coverage90": interval_coverage(yt, lower, upper),
                "fit_s": fit_s,
                "mean_steps": float(stats["n_steps"].mean()),
                "divergences": int(stats["diverging"].sum()),
            }
            d = ref.get((name, split))
            if d is not None:
                row.update(
                    default_ll=d["ll"],
                    default_rmse=d["rmse"],
                    default_coverage90=d["coverage90"],
                    default_fit_s=d["fit_s"],
                )
            rows.append(row)
            print(json.dumps(row), flush=True)
            out.write_text(
                json.dumps(
                    {"experiment": "nuts_small_tables", "argv": sys.argv[1:], "rows": rows},
                    indent=1,
                )
            )
    for name in sets:
        r = [x for x in rows if x["dataset"] == name]
        ll = np.mean([x["ll"] for x in r])
        dl = [x["ll"] - x["default_ll"] for x in r if "default_ll" in x]
        print(
            f"{name}: NUTS LL {ll:.3f}, RMSE {np.mean([x['rmse'] for x in r]):.2f}, "
            f"cov {np.mean([x['coverage90'] for x in r]):.3f}, fit s "
            f"{np.median([x['fit_s'] for x in r]):.1f} (max {max(x['fit_s'] for x in r):.1f})"
            + (
                f"; minus default {np.mean(dl):+.3f} (better on {sum(d > 0 for d in dl)} of "
                f"{len(dl)})"
                if dl
                else ""
            )
        )


if __name__ == "__main__":
    main()
