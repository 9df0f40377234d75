"""Experiment: what the classifier's default (``inference="auto"``: the ADVI + Laplace
mixture where :func:`pymc_bnn.estimators._classifier.mixture_affordable` allows) costs beside
mean-field ADVI alone, on standardised ``make_classification`` tables of growing size,
for both architectures the calibration benchmark runs.

    python research/experiments/classifier_mixture_cost.py OUT.json [ROWS ...] \
        [--features 20] [--classes 2] [--hidden 5,5 32]

Per table: fit seconds of each (the second of two fits each, alternating, in this
process, so compilation is not counted), which method ``"auto"`` took and what its
Laplace half covered (``structure``: the whole network, or its output layer), the
Gauss-Newton step's work that decided it, and the held-out NLL of each.
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


def parse(argv):
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("rows", nargs="*", type=int)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--hidden", nargs="+", default=["5,5", "32"])
    return parser.parse_args(argv)


def step_flops(shape, hidden, n_classes):
    from pymc_bnn.network._flat import n_params

    outputs = 1 if n_classes == 2 else n_classes
    widths = (shape[1], *hidden, outputs)
    P = n_params(tuple(zip(widths[:-1], widths[1:])))
    return P, float(shape[0]) * outputs * P**2 + P**3 / 3


def main():
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    from pymc_bnn import BayesianMLPClassifier

    args = parse(sys.argv[1:])
    out = Path(args.out)
    rows_list = args.rows or [250, 500, 1000, 2000, 4096]
    features, classes = args.features, args.classes
    hiddens = [tuple(int(u) for u in h.split(",")) for h in args.hidden]
    records = []

    def fit(X, y, hidden, **kw):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = BayesianMLPClassifier(hidden, random_state=0, **kw).fit(X, y)
        return clf, time.perf_counter() - t0

    def table(n, seed):
        return make_classification(
            n,
            n_features=features,
            n_informative=min(features, 5),
            n_classes=classes,
            n_clusters_per_class=1 if classes > 2 else 2,
            flip_y=0.05,
            random_state=seed,
        )

    for hidden in hiddens:
        Xw, yw = table(200, 1)
        fit(Xw, yw, hidden)  # warm-up: compile both halves' graphs for this shape
        for n in rows_list:
            X, y = table(2 * n, n)
            X = StandardScaler().fit_transform(X)
            Xtr, Xte, ytr, yte = X[:n], X[n:], y[:n], y[n:]
            rec = {"rows": n, "features": features, "classes": classes, "hidden": list(hidden)}
            rec["weights"], rec["step_flops"] = step_flops(Xtr.shape, hidden, classes)
            # each fitted twice, alternating: the first fit of a new table size compiles
            # what depends on it, whichever comes first; the second of each is timed
            for name, kw in (("advi", {"inference": "advi"}), ("auto", {})) * 2:
                clf, seconds = fit(Xtr, ytr, hidden, **kw)
                p = clf.predict_proba(Xte)[np.arange(n), yte]
                rec[f"{name}_s"] = seconds
                rec[f"{name}_nll"] = float(-np.mean(np.log(np.clip(p, 1e-300, None))))
                rec[f"{name}_inference"] = clf.inference_
                rec[f"{name}_selection"] = getattr(clf, "inference_selection_", None)
                rec[f"{name}_structure"] = (
                    (clf.mixture_ or {}).get("laplace_diagnostics", {}).get("structure")
                )
            records.append(rec)
            print(
                f"{str(hidden):8s} rows {n:5d}  weights {rec['weights']:4d}  step "
                f"{rec['step_flops']:.2e}  advi {rec['advi_s']:6.1f} s  auto "
                f"({rec['auto_inference']} {rec['auto_structure']}) {rec['auto_s']:6.1f} s  NLL advi "
                f"{rec['advi_nll']:.4f} auto {rec['auto_nll']:.4f}",
                flush=True,
            )
            out.write_text(
                json.dumps(
                    {"machine": _common.machine_info(), "argv": sys.argv[1:], "records": records},
                    indent=1,
                )
            )


if __name__ == "__main__":
    main()
