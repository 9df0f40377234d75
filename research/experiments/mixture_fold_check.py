"""Experiment: would a check on held-out folds have told where the classifier's ADVI +
Laplace mixture is worse than ADVI alone?

    python research/experiments/mixture_fold_check.py OUT.json

For each table: three stratified folds of the training rows; on each, the default
``inference="advi+laplace"`` fit on the other two thirds, and its held-out rows scored by
the mixture, by its ADVI half alone and by its Laplace half alone (each half's draws as
the fit tempered them). Beside it, the same on the test rows for the fit on all
training rows: does the folds' verdict (mixture NLL <= ADVI half's) match the test's?
No library change: the halves are the first and second half of ``sample_proba``'s draws.
"""

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
import _common  # noqa: E402
from calibration import classification_data  # noqa: E402


def nlls(clf, X, y):
    draws = clf.predictive_.sample_proba(X)
    half = len(draws) // 2
    rows = np.arange(len(y))
    codes = np.searchsorted(clf.classes_, y)

    def nll(part):
        return float(-np.mean(np.log(np.clip(part.mean(0)[rows, codes], 1e-300, None))))

    return {"mixture": nll(draws), "advi": nll(draws[:half]), "laplace": nll(draws[half:])}


def tables():
    from sklearn.datasets import make_classification

    for name in ("noisy_label", "breast_cancer", "digits_ood", "digits"):
        d = classification_data(name, 0)
        yield name, d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    X, y = make_classification(
        2000,
        n_features=64,
        n_informative=5,
        n_classes=10,
        n_clusters_per_class=1,
        flip_y=0.05,
        random_state=1000,
    )
    yield "hard 64 x 10 classes", X[:1000], y[:1000], X[1000:], y[1000:]


def main():
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPClassifier

    out = Path(sys.argv[1])
    records = []
    for name, X, y, X_test, y_test in tables():
        scaler = StandardScaler().fit(X)
        X, X_test = scaler.transform(X), scaler.transform(X_test)
        t0 = time.perf_counter()
        rec = {"table": name, "rows": len(y), "folds": []}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k, (tr, te) in enumerate(
                StratifiedKFold(3, shuffle=True, random_state=0).split(X, y)
            ):
                clf = BayesianMLPClassifier((32,), inference="advi+laplace", random_state=k).fit(
                    X[tr], y[tr]
                )
                rec["folds"].append(nlls(clf, X[te], y[te]))
            clf = BayesianMLPClassifier((32,), inference="advi+laplace", random_state=0).fit(X, y)
        rec["structure"] = clf.mixture_["laplace_diagnostics"]["structure"]
        rec["test"] = nlls(clf, X_test, y_test)
        rec["folds_mean"] = {
            key: float(np.mean([f[key] for f in rec["folds"]]))
            for key in ("mixture", "advi", "laplace")
        }
        rec["seconds"] = time.perf_counter() - t0
        records.append(rec)
        fm, te = rec["folds_mean"], rec["test"]
        print(
            f"{name:22s} {rec['structure']:10s} folds: mix {fm['mixture']:.4f} advi "
            f"{fm['advi']:.4f} lap {fm['laplace']:.4f} -> keep "
            f"{fm['mixture'] <= fm['advi']} | test: mix {te['mixture']:.4f} advi "
            f"{te['advi']:.4f} lap {te['laplace']:.4f} -> mixture better "
            f"{te['mixture'] <= te['advi']}  ({rec['seconds']:.0f} s)",
            flush=True,
        )
        out.write_text(
            json.dumps({"machine": _common.machine_info(), "records": records}, indent=1)
        )


if __name__ == "__main__":
    main()
