"""Experiment: the rule that sets the classifier's linear-part share (``research/notes/
calibration-log.md``, "A linear part stacked with the network").

``argmin`` is the package's rule (:func:`pymc_bnn.predictive._linear.choose_linear_weight`: the
share of the lowest held-out NLL). ``one_se`` patches in the smallest share whose
held-out NLL is within one standard error of the best share's (the paired row
differences, weighted by the folds' scale), which leans to the network. Each default
classifier is fit on:

- digits, (32,) units, the calibration benchmark's splits of the given seeds
  (``calibration.classification_data``); and
- the command line's 800-row example tables (churn and the 3-class plan), with the
  command line's preprocessing and (5, 5) units, tested on an independent draw, with
  ``LogisticRegression`` beside it.

Prints one JSON line per fit: the test NLL, ECE, accuracy and the chosen share.

Run: ``python research/experiments/linear_share_rule.py {argmin,one_se} [SEEDS]``
(default seeds 0,1,2).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import pymc_bnn.policy._settings as fit_settings  # noqa: E402
from pymc_bnn.predictive._linear import LINEAR_WEIGHTS, choose_linear_weight  # noqa: E402

TARGETS = {"classification": "churned", "multiclass": "plan_next_year"}


def one_se(network_rows, linear_rows, scales, weights=LINEAR_WEIGHTS):
    """The smallest share within one standard error of the best (paired rows)."""
    best_w, scores = choose_linear_weight(network_rows, linear_rows, scales, weights)
    a, b = np.concatenate(network_rows), np.concatenate(linear_rows)
    s = np.concatenate([np.full(len(x), sc) for x, sc in zip(network_rows, scales)])

    def rows(w):
        with np.errstate(divide="ignore"):
            return -np.logaddexp(np.log1p(-w) - a, np.log(w) - b)

    best = rows(best_w)
    for w in weights:
        if w > best_w:
            break
        d = rows(w) - best
        mean = np.average(d, weights=s)
        sd = np.sqrt(np.average((d - mean) ** 2, weights=s))
        if mean <= sd / np.sqrt(len(d)):
            return float(w), scores
    return best_w, scores


def _scores(y, proba, classes):
    from pymc_bnn.metrics import classification_summary

    summary = classification_summary(y, proba, classes=classes)
    return {k: round(float(summary[k]), 4) for k in ("nll", "ece", "accuracy")}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("argmin", "one_se"):
        print(__doc__)
        return 2
    rule = argv[0]
    seeds = [int(s) for s in (argv[1] if len(argv) > 1 else "0,1,2").split(",")]
    if rule == "one_se":
        fit_settings.choose_linear_weight = one_se
    warnings.simplefilter("ignore")
    from calibration import classification_data
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPClassifier
    from pymc_bnn.datasets import make_customers
    from pymc_bnn.tabular._transform import TabularPreprocessor

    def share(clf):
        return 0.0 if clf.linear_part_ is None else clf.linear_part_["weight"]

    for seed in seeds:
        d = classification_data("digits", seed)
        pipe = make_pipeline(StandardScaler(), BayesianMLPClassifier((32,), random_state=seed))
        pipe.fit(d["X_train"], d["y_train"])
        print(
            json.dumps(
                {
                    "rule": rule,
                    "table": "digits (32,)",
                    "seed": seed,
                    **_scores(d["y_test"], pipe.predict_proba(d["X_test"]), pipe[-1].classes_),
                    "share": share(pipe[-1]),
                }
            ),
            flush=True,
        )
    for task, target in TARGETS.items():
        for seed in seeds:
            train = make_customers(800, task=task, random_state=seed)
            test = make_customers(800, task=task, random_state=seed + 1000)
            pre = TabularPreprocessor().fit(train.drop(columns=["customer_id", target]))
            X, Xt = (pre.transform(t.drop(columns=["customer_id", target])) for t in (train, test))
            y, yt = train[target].to_numpy(), test[target].to_numpy()
            clf = BayesianMLPClassifier((5, 5), random_state=seed, progressbar=False).fit(X, y)
            lr = LogisticRegression(max_iter=2000).fit(X, y)
            print(
                json.dumps(
                    {
                        "rule": rule,
                        "table": f"cli {task}",
                        "seed": seed,
                        **_scores(yt, clf.predict_proba(Xt), clf.classes_),
                        "share": share(clf),
                        "logreg": _scores(yt, lr.predict_proba(Xt), lr.classes_),
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
