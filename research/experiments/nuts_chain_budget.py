"""Experiment: the regressor's short NUTS run (``inference="auto"``) with other chains,
warm-up and draws, through the default estimator itself (its module constants
``AUTO_NUTS_CHAINS`` and ``AUTO_NUTS_MAX_CHAINS`` / ``AUTO_NUTS_TUNE`` /
``AUTO_NUTS_DRAWS`` set for the run), on
the first UCI splits.

The question: the short run's chains sit in different modes and each chain alone
predicts worse than the chains together (``reference/nuts_per_chain_ll.json``), so at
a fixed count of gradients (chains x (tune + draws)), are more, shorter chains better
than fewer, longer ones? Fitted as ``benchmarks/uci_regression.py`` fits the default
(``StandardScaler`` in front, ``random_state=split``). Usage::

    python research/experiments/nuts_chain_budget.py SETS SPLITS CHAINS TUNE DRAWS HIDDEN OUT.json

``SETS`` comma-separated (bostonHousing, concrete, energy, yacht), ``SPLITS`` e.g.
``0-4``, ``HIDDEN`` e.g. ``5,5`` or ``50``.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy as np  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from uci_regression import DATA_DIR, load_split  # noqa: E402

from pymc_bnn import BayesianMLPRegressor
from pymc_bnn.estimators import _regressor as regressor  # noqa: E402
from pymc_bnn.metrics import interval_coverage  # noqa: E402


def splits_arg(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main():
    sets, splits = sys.argv[1].split(","), splits_arg(sys.argv[2])
    chains, tune, draws = (int(a) for a in sys.argv[3:6])
    hidden = tuple(int(h) for h in sys.argv[6].split(","))
    out = Path(sys.argv[7])
    # every problem gets CHAINS chains, whatever its size
    regressor.AUTO_NUTS_CHAINS = regressor.AUTO_NUTS_MAX_CHAINS = chains
    regressor.AUTO_NUTS_TUNE = tune
    regressor.AUTO_NUTS_DRAWS = draws
    rows = []
    for name in sets:
        for split in splits:
            X, y, Xt, yt = load_split(DATA_DIR, name, split)
            reg = BayesianMLPRegressor(hidden, random_state=split)
            pipe = make_pipeline(StandardScaler(), reg)
            t0 = time.perf_counter()
            pipe.fit(X, y)
            fit_s = time.perf_counter() - t0
            if reg.nuts_run_ is None or reg.nuts_run_["chains"] != chains:
                raise SystemExit(
                    f"{name} split {split}: the default did not take the "
                    f"short run asked for ({reg.nuts_run_})"
                )
            Zt = pipe[:-1].transform(Xt)
            lower, upper = reg.predict_interval(Zt, coverage=0.9)
            stats = reg.posterior_.idata.sample_stats
            row = {
                "set": name,
                "split": split,
                "hidden": list(hidden),
                "chains": chains,
                "tune": tune,
                "draws": draws,
                "n_train": len(y),
                "ll": float(reg.log_predictive_density(Zt, yt).mean()),
                "rmse": float(np.sqrt(np.mean((reg.predict(Zt) - yt) ** 2))),
                "cov90": interval_coverage(yt, lower, upper),
                "fit_s": fit_s,
                "mean_steps": float(stats["n_steps"].mean()),
                "divergences": int(stats["diverging"].sum()),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
            out.write_text(
                json.dumps(
                    {"experiment": "nuts_chain_budget", "argv": sys.argv[1:], "rows": rows},
                    indent=1,
                )
            )
    for name in sets:
        r = [x for x in rows if x["set"] == name]
        print(
            f"{name}: LL {np.mean([x['ll'] for x in r]):.3f}, RMSE "
            f"{np.mean([x['rmse'] for x in r]):.2f}, cov {np.mean([x['cov90'] for x in r]):.3f}, "
            f"fit s {np.median([x['fit_s'] for x in r]):.1f} "
            f"(max {max(x['fit_s'] for x in r):.1f})"
        )


if __name__ == "__main__":
    main()
