"""Experiment: ``BayesianMLPClassifier((32,), inference="laplace")`` on the calibration
benchmark's classification splits, seed by seed beside the stored default and 5-MLP
ensemble of a full ``benchmarks/calibration.py`` run (same splits, same seeds).

    python research/experiments/laplace_classifier.py SETS SEEDS OUT.json [REFERENCE.json]

SETS: comma-separated names of ``calibration.CLS_DATASETS``; SEEDS: comma-separated ints.
The reference defaults to ``benchmarks/results/reference/calibration_seeds10_after_uci.json``.
Prints one line per fit and, at the end, per data set the seeds on which the Laplace
fit's NLL is <= the ensemble's and the default's.
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
from pymc_bnn import metrics as M  # noqa: E402


def reference_nll(path, dataset, model):
    rows = json.loads(Path(path).read_text())["rows"]
    for row in rows:
        if row.get("dataset") == dataset and row.get("model") == model:
            return {r["seed"]: r.get("nll") for r in row["per_seed"]}
    return {}


def main():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    sets, seeds, out = sys.argv[1].split(","), [int(s) for s in sys.argv[2].split(",")], sys.argv[3]
    ref = (
        sys.argv[4]
        if len(sys.argv) > 4
        else str(
            HERE.parents[1] / "benchmarks/results/reference/calibration_seeds10_after_uci.json"
        )
    )
    records = []
    for dataset in sets:
        ens = reference_nll(ref, dataset, "5-MLP ensemble (32,)")
        default = reference_nll(ref, dataset, "BNN default (32,)")
        for seed in seeds:
            d = C.classification_data(dataset, seed)
            pipe = make_pipeline(
                StandardScaler(),
                BayesianMLPClassifier((32,), inference="laplace", random_state=seed),
            )
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pipe.fit(d["X_train"], d["y_train"])
            fit_s = time.perf_counter() - t0
            proba = pipe.predict_proba(d["X_test"])
            rec = {
                "dataset": dataset,
                "seed": seed,
                "fit_s": fit_s,
                **C.class_metrics(M, d["y_test"], proba, pipe.classes_),
                "temperature": pipe[-1].posterior_temperature_,
                "prior_sigma": list(pipe[-1].posterior_.spec.prior_sigma),
                "rounds": pipe[-1].diagnostics_.get("rounds"),
                "ensemble_nll": ens.get(seed),
                "default_nll": default.get(seed),
            }
            records.append(rec)
            print(
                f"{dataset:13s} seed {seed}  fit {fit_s:6.1f} s  NLL {rec['nll']:.4f}  "
                f"(ens {rec['ensemble_nll']}, default {rec['default_nll']})  "
                f"acc {rec['accuracy']:.3f}  T {rec['temperature']}",
                flush=True,
            )
            Path(out).write_text(json.dumps(records, indent=1))
    print(
        "\n| data set | seeds NLL <= ensemble | seeds NLL <= default | median NLL | "
        "ensemble | default | fit s |\n|---|---|---|---|---|---|---|"
    )
    for dataset in sets:
        rs = [r for r in records if r["dataset"] == dataset]
        le = lambda k: sum(r["nll"] <= r[k] for r in rs if r[k] is not None)  # noqa: E731
        med = lambda k: np.median([r[k] for r in rs if r[k] is not None])  # noqa: E731
        print(
            f"| {dataset} | {le('ensemble_nll')} / {len(rs)} | {le('default_nll')} / {len(rs)} "
            f"| {med('nll'):.4f} | {med('ensemble_nll'):.4f} | {med('default_nll'):.4f} "
            f"| {med('fit_s'):.1f} |"
        )


if __name__ == "__main__":
    main()
