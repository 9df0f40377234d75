"""Experiment: ``BayesianMLPRegressor((50,), inference="laplace")`` on the first UCI
splits with constants of :mod:`pymc_bnn.inference.laplace` patched, to compare a variant's test
LL / RMSE / fit time with the module as it is. The estimator runs behind a
``StandardScaler`` with ``random_state=split``, as ``benchmarks/uci_regression.py``
runs it. Usage::

    python research/experiments/laplace_variants.py '{"PATIENCE": 0}' bostonHousing,yacht [N_SPLITS] [ESTIMATOR_PARAMS_JSON]
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from uci_regression import DATA_DIR, load_split

import pymc_bnn.inference.laplace as lap
from pymc_bnn import BayesianMLPRegressor

patch = json.loads(sys.argv[1])
sets = sys.argv[2].split(",")
splits = range(int(sys.argv[3]) if len(sys.argv) > 3 else 5)
for k, v in patch.items():
    setattr(lap, k, v)
params = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
X, y, _, _ = load_split(DATA_DIR, sets[0], 0)
make_pipeline(
    StandardScaler(), BayesianMLPRegressor((50,), inference="laplace", random_state=0)
).fit(X[:100], y[:100])
for name in sets:
    res = []
    for split in splits:
        X, y, Xt, yt = load_split(DATA_DIR, name, split)
        t = time.perf_counter()
        p = make_pipeline(
            StandardScaler(),
            BayesianMLPRegressor((50,), inference="laplace", random_state=split, **params),
        ).fit(X, y)
        fit = time.perf_counter() - t
        m = p[-1]
        Z = p[:-1].transform(Xt)
        ll = m.log_predictive_density(Z, yt).mean()
        rmse = np.sqrt(np.mean((m.predict(Z) - yt) ** 2))
        res.append((ll, rmse, fit))
        print(f"  {name} {split} ll {ll:.3f} rmse {rmse:.3f} fit {fit:.1f}", flush=True)
    r = np.array(res)
    print(
        f"{name} {json.dumps(patch)} {json.dumps(params)} mean ll {r[:, 0].mean():.3f} rmse {r[:, 1].mean():.3f} fit median {np.median(r[:, 2]):.1f}",
        flush=True,
    )
