"""Experiment: the regressor's short NUTS run (2 chains x (100 warm-up + 100 draws),
numpyro, untempered) for ``BayesianMLPClassifier`` on the calibration benchmark's
small classification splits, seed by seed beside the stored default, the 5-MLP
ensemble and logistic regression of a full ``benchmarks/calibration.py`` run (same
splits, same seeds).

    python research/experiments/nuts_classifier.py SETS SEEDS HIDDEN PRIOR OUT.json [REFERENCE.json]

SETS: comma-separated names of ``calibration.CLS_DATASETS``; SEEDS: comma-separated
ints; HIDDEN: e.g. ``32`` or ``5,5``; PRIOR: ``gamma_precision`` (Neal's per-layer
precisions, sampled: the regressor's short run) or ``normal`` (the classifier's
N(0, 1) under NUTS). The reference defaults to
``benchmarks/results/reference/calibration_seeds10_linear.json`` (the classifier's
current default). A set whose training rows x network parameters exceed the
regressor's limit (``regressor.AUTO_NUTS_MAX_WORK``) is skipped, as the regressor would
not sample it either.
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
from pymc_bnn.estimators._regressor import (
    AUTO_NUTS_CHAINS,
    AUTO_NUTS_DRAWS,  # noqa: E402
    AUTO_NUTS_MAX_WORK,
    AUTO_NUTS_TUNE,
)


def reference(path, dataset, model):
    for row in json.loads(Path(path).read_text())["rows"]:
        if row.get("dataset") == dataset and row.get("model") == model:
            return {r["seed"]: r for r in row["per_seed"]}
    return {}


def n_params(n_in, hidden, n_out):
    sizes = [n_in, *hidden, n_out]
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def main():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    sets, seeds = sys.argv[1].split(","), [int(s) for s in sys.argv[2].split(",")]
    hidden = tuple(int(h) for h in sys.argv[3].split(","))
    prior, out = sys.argv[4], Path(sys.argv[5])
    ref = (
        sys.argv[6]
        if len(sys.argv) > 6
        else str(HERE.parents[1] / "benchmarks/results/reference/calibration_seeds10_linear.json")
    )
    h_name = f"({hidden[0]},)" if len(hidden) == 1 else str(hidden)
    records = []
    for dataset in sets:
        anchors = {
            "default": reference(ref, dataset, f"BNN default {h_name}"),
            "ensemble": reference(ref, dataset, "5-MLP ensemble (32,)"),
            "logistic": reference(ref, dataset, "LogisticRegression"),
        }
        for seed in seeds:
            d = C.classification_data(dataset, seed)
            n_classes = len(np.unique(d["y_train"]))
            work = len(d["y_train"]) * n_params(
                d["X_train"].shape[1], hidden, 1 if n_classes == 2 else n_classes
            )
            if work > AUTO_NUTS_MAX_WORK:
                print(f"{dataset}: rows x parameters {work:,} > {AUTO_NUTS_MAX_WORK:,}, skipped")
                break
            pipe = make_pipeline(
                StandardScaler(),
                BayesianMLPClassifier(
                    hidden,
                    inference="nuts",
                    prior=prior,
                    nuts_sampler="numpyro",
                    tune=AUTO_NUTS_TUNE,
                    n_draws=AUTO_NUTS_DRAWS,
                    chains=AUTO_NUTS_CHAINS,
                    random_state=seed,
                ),
            )
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a short run's R-hat: not the question
                pipe.fit(d["X_train"], d["y_train"])
            fit_s = time.perf_counter() - t0
            proba = pipe.predict_proba(d["X_test"])
            rec = {
                "dataset": dataset,
                "seed": seed,
                "hidden": list(hidden),
                "prior": prior,
                "work": work,
                "fit_s": fit_s,
                **C.class_metrics(M, d["y_test"], proba, pipe.classes_),
                "max_rhat": pipe[-1].diagnostics_.get("max_rhat"),
            }
            for name, per_seed in anchors.items():
                row = per_seed.get(seed) or {}
                rec[f"{name}_nll"], rec[f"{name}_accuracy"] = row.get("nll"), row.get("accuracy")
                rec[f"{name}_fit_s"] = row.get("fit_s")
            records.append(rec)
            print(
                f"{dataset:13s} seed {seed}  fit {fit_s:5.1f} s  NLL {rec['nll']:.4f} "
                f"(default {rec['default_nll']}, ensemble {rec['ensemble_nll']}, logistic "
                f"{rec['logistic_nll']})  acc {rec['accuracy']:.3f} (default "
                f"{rec['default_accuracy']})",
                flush=True,
            )
            out.write_text(
                json.dumps({"argv": sys.argv[1:], "reference": ref, "rows": records}, indent=1)
            )
    print(
        "\n| data set | NLL short run | default | 5-MLP ensemble | logistic | seeds <= default "
        "| seeds <= ensemble | accuracy short run / default | fit s short run / default |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for dataset in sets:
        rs = [r for r in records if r["dataset"] == dataset]
        if not rs:
            continue
        med = lambda k: np.median([r[k] for r in rs if r[k] is not None])  # noqa: E731
        le = lambda k: sum(r["nll"] <= r[k] for r in rs if r[k] is not None)  # noqa: E731
        print(
            f"| {dataset} | {med('nll'):.4f} | {med('default_nll'):.4f} | "
            f"{med('ensemble_nll'):.4f} | {med('logistic_nll'):.4f} | "
            f"{le('default_nll')} / {len(rs)} | {le('ensemble_nll')} / {len(rs)} | "
            f"{med('accuracy'):.3f} / {med('default_accuracy'):.3f} | "
            f"{med('fit_s'):.1f} / {med('default_fit_s'):.1f} |"
        )


if __name__ == "__main__":
    main()
