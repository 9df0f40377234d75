"""Experiment: the classifier's ADVI + Laplace mixture with the Laplace share stacked on
the folds, as the regressor's default does (``tempering.MIXTURE_WEIGHTS``), in place of
its equal mixture. Runs the calibration benchmark (``benchmarks/calibration.py``, its
arguments as given) with ``BayesianMLPClassifier._MIXTURE_WEIGHTS`` set to the
regressor's grid; compare its BNN rows split by split with a run of the package
default on the same seeds (``compare``). ``run-modes`` instead keeps the equal mixture
and makes its Laplace half the regressor's three Laplace modes
(``fit_settings.LAPLACE_STARTS``); ``compare``'s "stacked" columns are then that
variant's. Usage::

    python research/experiments/classifier_stacked_share.py run CALIBRATION_ARGS...
    python research/experiments/classifier_stacked_share.py run-modes CALIBRATION_ARGS...
    python research/experiments/classifier_stacked_share.py compare DEFAULT.json VARIANT.json [OUT]
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def run(argv):
    import calibration

    from pymc_bnn.estimators._classifier import BayesianMLPClassifier
    from pymc_bnn.policy._tempering import MIXTURE_WEIGHTS

    BayesianMLPClassifier._MIXTURE_WEIGHTS = MIXTURE_WEIGHTS
    return calibration.main(argv)


def run_modes(argv):
    import calibration

    from pymc_bnn.estimators._classifier import BayesianMLPClassifier
    from pymc_bnn.policy.thresholds import LAPLACE_STARTS

    BayesianMLPClassifier._LAPLACE_STARTS = LAPLACE_STARTS
    return calibration.main(argv)


def per_seed(path):
    """{(dataset, model, seed): per-seed record} of a calibration JSON's classification
    rows."""
    rows = json.load(open(path))["rows"]
    return {
        (r["dataset"], r["model"], s["seed"]): s
        for r in rows
        if r.get("section") == "classification"
        for s in r.get("per_seed", [])
        if s.get("status") == "ok"
    }


def compare(default_path, stacked_path):
    """Per data set and architecture: mean NLL and ECE of each, the paired NLL
    difference, on how many seeds the stacked share is better, and how many seeds
    each has its NLL at most the 5-MLP ensemble's (32,)."""
    a, b = per_seed(default_path), per_seed(stacked_path)
    out = []
    for dataset, model, seed in sorted(set(a) & set(b)):
        if not model.startswith("BNN default"):
            continue
        ens = b.get((dataset, "5-MLP ensemble (32,)", seed))
        out.append(
            {
                "dataset": dataset,
                "model": model,
                "seed": seed,
                "nll_default": a[dataset, model, seed]["nll"],
                "nll_stacked": b[dataset, model, seed]["nll"],
                "ece_default": a[dataset, model, seed]["ece"],
                "ece_stacked": b[dataset, model, seed]["ece"],
                "nll_ensemble": None if ens is None else ens["nll"],
                "weight": (b[dataset, model, seed].get("inference_selection") or {}).get(
                    "laplace_weight"
                ),
            }
        )
    summary = []
    for key in dict.fromkeys((r["dataset"], r["model"]) for r in out):
        rs = [r for r in out if (r["dataset"], r["model"]) == key]
        d = np.array([r["nll_default"] - r["nll_stacked"] for r in rs])
        summary.append(
            {
                "dataset": key[0],
                "model": key[1],
                "seeds": len(rs),
                "nll_default": float(np.mean([r["nll_default"] for r in rs])),
                "nll_stacked": float(np.mean([r["nll_stacked"] for r in rs])),
                "gain": float(d.mean()),
                "gain_se": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else None,
                "stacked_better": int((d > 0).sum()),
                "ece_default": float(np.mean([r["ece_default"] for r in rs])),
                "ece_stacked": float(np.mean([r["ece_stacked"] for r in rs])),
                "at_most_ensemble_default": sum(
                    r["nll_ensemble"] is not None and r["nll_default"] <= r["nll_ensemble"]
                    for r in rs
                ),
                "at_most_ensemble_stacked": sum(
                    r["nll_ensemble"] is not None and r["nll_stacked"] <= r["nll_ensemble"]
                    for r in rs
                ),
                "weights": [r["weight"] for r in rs],
            }
        )
        print(json.dumps(summary[-1]))
    return {"rows": out, "summary": summary}


if __name__ == "__main__":
    if sys.argv[1] == "run":
        sys.exit(run(sys.argv[2:]))
    if sys.argv[1] == "run-modes":
        sys.exit(run_modes(sys.argv[2:]))
    result = compare(sys.argv[2], sys.argv[3])
    if len(sys.argv) > 4:
        json.dump(
            {"experiment": __doc__, "argv": sys.argv[1:], **result},
            open(sys.argv[4], "w"),
            indent=1,
        )
