"""Fingerprint default fits on the calibration benchmark's splits, to show that a
restructuring of the package changes no result (bit for bit).

    PYTHONPATH=<tree> python tools/fit_fingerprint.py OUT.json [--benchmarks DIR]

Fits the default classifier ((32,) and (5, 5)) and regressor on a few of
``benchmarks/calibration.py``'s data sets and seeds, and records a SHA-256 of each fit's
test-set predictions (probabilities / mean and sd) and of its saved-and-loaded
predictions. Two trees give the same JSON exactly when every fit is identical.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CLASSIFICATION = [("moons", 0), ("breast_cancer", 0), ("iris", 1), ("noisy_label", 2)]
REGRESSION = [("diabetes", 0), ("heteroscedastic", 1)]


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
        h.update(str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--benchmarks", default=str(Path(__file__).resolve().parents[1] / "benchmarks"))
    args = ap.parse_args(argv)
    sys.path.insert(0, args.benchmarks)
    import calibration as cal

    import pymc_bnn
    from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor

    rows = {"package": str(Path(pymc_bnn.__file__).parent)}
    with tempfile.TemporaryDirectory() as tmp:
        for name, seed in CLASSIFICATION:
            d = cal.classification_data(name, seed)
            for h in ((32,), (5, 5)):
                t = time.perf_counter()
                clf = BayesianMLPClassifier(hidden_layer_sizes=h, random_state=seed)
                clf.fit(d["X_train"], d["y_train"])
                p = clf.predict_proba(d["X_test"])
                path = Path(tmp) / f"c-{name}-{seed}-{len(h)}.h5"
                clf.save(path)
                q = BayesianMLPClassifier.load(path).predict_proba(d["X_test"])
                rows[f"clf {name} seed{seed} {h}"] = {
                    "proba": digest(p),
                    "loaded": digest(q),
                    "nll": float(
                        -np.mean(
                            np.log(p[np.arange(len(p)), np.searchsorted(clf.classes_, d["y_test"])])
                        )
                    ),
                    "seconds": round(time.perf_counter() - t, 1),
                }
                print(f"clf {name} seed{seed} {h}", rows[f"clf {name} seed{seed} {h}"], flush=True)
        for name, seed in REGRESSION:
            d = cal.regression_data(name, seed)
            t = time.perf_counter()
            reg = BayesianMLPRegressor(random_state=seed).fit(d["X_train"], d["y_train"])
            mean, sd = reg.predict(d["X_test"], return_std=True)
            path = Path(tmp) / f"r-{name}-{seed}.h5"
            reg.save(path)
            m2, s2 = BayesianMLPRegressor.load(path).predict(d["X_test"], return_std=True)
            rows[f"reg {name} seed{seed}"] = {
                "pred": digest(mean, sd),
                "loaded": digest(m2, s2),
                "rmse": float(np.sqrt(np.mean((mean - d["y_test"]) ** 2))),
                "seconds": round(time.perf_counter() - t, 1),
            }
            print(f"reg {name} seed{seed}", rows[f"reg {name} seed{seed}"], flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
