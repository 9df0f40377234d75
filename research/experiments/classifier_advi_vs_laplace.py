"""Experiment: the default classifier (ADVI), ``inference="laplace"``, their equal
mixture and the choice by the temperature folds' held-out score, on the calibration
benchmark's classification splits, seed by seed beside the 5-MLP ensemble.

    python research/experiments/classifier_advi_vs_laplace.py SETS SEEDS OUT.json [HIDDEN]

Both estimators get the same ``random_state``, hence the same three stratified folds
for the temperature; ``choice`` takes the one whose best held-out score (summed
negative log predictive density over the folds, at its chosen temperature) is lower,
which is what an ``inference="auto"`` choosing between the two on those folds would do.
"""

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
import calibration as C  # noqa: E402

from pymc_bnn import BayesianMLPClassifier  # noqa: E402


def nll(y, proba, classes):
    idx = np.searchsorted(classes, y)
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), idx], 1e-300, None))))


def main():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    sets, seeds, out = sys.argv[1].split(","), [int(s) for s in sys.argv[2].split(",")], sys.argv[3]
    hidden = tuple(json.loads(sys.argv[4])) if len(sys.argv) > 4 else (32,)
    records = []
    for dataset in sets:
        for seed in seeds:
            d = C.classification_data(dataset, seed)
            rec = {"dataset": dataset, "seed": seed}
            probas, scores = {}, {}
            # "advi" was the default when this was run; the default is now the mixture
            for name, kw in (
                ("advi", {"inference": "advi"}),
                ("laplace", {"inference": "laplace"}),
            ):
                pipe = make_pipeline(
                    StandardScaler(), BayesianMLPClassifier(hidden, random_state=seed, **kw)
                )
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    pipe.fit(d["X_train"], d["y_train"])
                rec[f"{name}_fit_s"] = time.perf_counter() - t0
                probas[name] = pipe.predict_proba(d["X_test"])
                sel = pipe[-1].temperature_selection_
                scores[name] = None if sel is None else float(np.min(sel.scores))
                rec[f"{name}_T"] = pipe[-1].posterior_temperature_
                classes = pipe.classes_
            t0 = time.perf_counter()
            ens = C.MLPEnsembleClassifier(random_state=seed).fit(
                StandardScaler().fit_transform(d["X_train"]), d["y_train"]
            )
            sc = StandardScaler().fit(d["X_train"])
            probas["ensemble"] = ens.predict_proba(sc.transform(d["X_test"]))
            rec["ensemble_fit_s"] = time.perf_counter() - t0
            probas["mixture"] = 0.5 * (probas["advi"] + probas["laplace"])
            pick = (
                "laplace"
                if None not in scores.values() and scores["laplace"] < scores["advi"]
                else "advi"
            )
            probas["choice"] = probas[pick]
            rec.update({f"{k}_nll": nll(d["y_test"], p, classes) for k, p in probas.items()})
            rec.update(
                {
                    f"{k}_acc": float(np.mean(classes[p.argmax(1)] == d["y_test"]))
                    for k, p in probas.items()
                }
            )
            rec.update(fold_scores=scores, picked=pick)
            records.append(rec)
            print(
                f"{dataset:13s} seed {seed}  "
                + "  ".join(f"{k} {rec[k + '_nll']:.4f}" for k in probas)
                + f"  picked {pick}"
                f"  fit s advi {rec['advi_fit_s']:.1f} laplace {rec['laplace_fit_s']:.1f}",
                flush=True,
            )
            Path(out).write_text(json.dumps(records, indent=1))
    keys = ["advi", "laplace", "mixture", "choice"]
    print(
        "\n| data set | seeds | "
        + " | ".join(f"{k}: seeds NLL <= ens." for k in keys)
        + " | "
        + " | ".join(f"median NLL {k}" for k in [*keys, "ensemble"])
        + " |"
    )
    print("|---" * (2 + 2 * len(keys) + 1) + "|")
    for dataset in sets:
        rs = [r for r in records if r["dataset"] == dataset]
        wins = [sum(r[f"{k}_nll"] <= r["ensemble_nll"] for r in rs) for k in keys]
        meds = [np.median([r[f"{k}_nll"] for r in rs]) for k in [*keys, "ensemble"]]
        print(
            f"| {dataset} | {len(rs)} | "
            + " | ".join(str(w) for w in wins)
            + " | "
            + " | ".join(f"{m:.4f}" for m in meds)
            + " |"
        )


if __name__ == "__main__":
    main()
