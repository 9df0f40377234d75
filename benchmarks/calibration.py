"""Calibration of the package's default estimators beside anchors, on the same splits.

One run puts ``BayesianMLPClassifier`` / ``BayesianMLPRegressor`` *as a user would call
them* (``hidden_layer_sizes`` and ``random_state`` only, so the run always measures the
package's current defaults) beside standard anchors, on the same splits, for several
seeds, and reports medians over the seeds (issue #12).

Classification (every model in ``make_pipeline(StandardScaler(), model)``, stratified
50/50 split with ``random_state=seed``):

==================  ===============================================================
breast_cancer       ``load_breast_cancer`` (569 x 30, 2 classes)
wine                ``load_wine`` (178 x 13, 3 classes)
digits              ``load_digits`` (1797 x 64, 10 classes)
iris                ``load_iris`` (150 x 4, 3 classes)
moons               ``make_moons(1000, noise=0.3, random_state=seed)``
noisy_label         ``make_classification(1000, 20 features, 5 informative,
                    flip_y=0.25, random_state=seed)``
imbalanced          ``make_classification(2000, 20 features, 5 informative,
                    weights=[0.95, 0.05], random_state=seed)``
small               the first 100 rows of breast_cancer shuffled with ``seed``
digits_ood          digits 0-4 (train/test); digits 5-9 are out-of-distribution:
                    AUROC of predictive entropy (all models) and of mutual
                    information (BNNs) for telling test digits from digits 5-9
==================  ===============================================================

Models: ``BayesianMLPClassifier(hidden_layer_sizes=h, random_state=seed)`` for h in
(32,) and (5, 5), plus any ``--bnn NAME=JSON`` variants (each for both h);
``MLPClassifier(h, max_iter=3000)``; a deep ensemble of five ``MLPClassifier((32,))``
(``random_state=seed*10+i``, probabilities averaged); ``LogisticRegression``;
``GaussianProcessClassifier(1.0 * RBF(1.0))`` where the training set has at most 600
rows. Metrics: accuracy, NLL, Brier (scikit-learn's ``brier_score_loss``: on two
classes the mean squared error of the positive-class probability, in [0, 1]; on more,
summed over classes, in [0, 2]; result files written before this convention hold the
sum over classes on every data set, twice this on binary ones), ECE (15 bins, top
label), mean top-class probability, wall-clock fit time. The *wins* table checks, per
data set, each BNN against the MLP of the same architecture (NLL <=, ECE <=, accuracy >=
MLP - 0.01; on noisy_label also NLL <= logistic regression) and counts the data sets
where its NLL is <= the 5-MLP ensemble's. The *seed by seed* table compares the same
two on each seed's split (on how many seeds the BNN's NLL and ECE are <= the MLP's,
median NLL ratio and ECE difference), and counts the seeds on which the BNN's NLL is <=
the 5-MLP ensemble's: medians over a few seeds move with the splits, paired seeds do
not.

Regression (70/30 split, ``StandardScaler`` on X in a pipeline): diabetes,
``make_friedman1(500, noise=1.0)``, and a heteroscedastic set (x ~ U(-3, 3) plus 4
noise features, y = sin(x) + N(0, (0.1 + 0.3|x|)^2), 600 rows). Models:
``BayesianMLPRegressor((16,))``, ``MLPRegressor((16,), max_iter=5000)``, ``RidgeCV()``,
``GaussianProcessRegressor(C * RBF + White, normalize_y=True)``. Metrics: RMSE,
Gaussian NLL, 90 % interval coverage, CRPS.

Hierarchical: ``pymc_bnn.datasets.make_rotated_moons(n_tasks=18)``, the default
classifier fit once with ``groups=`` vs 18 separate default fits (one per task).

Outputs: JSON (``--out``), the markdown tables (``--md``, default next to the JSON)
and a reliability-diagram figure (``--figure``; BNN vs MLP vs 5-MLP ensemble).
Metrics come from ``pymc_bnn.metrics``, the diagram from ``pymc_bnn.plotting``.

``--quick`` exercises every code path of the script once, at the smallest settings at
which its checks still mean something; it measures nothing: one seed, iris and small,
diabetes, 4 hierarchical tasks, BNNs with ``QUICK_BNN`` (``n_iter=1500, n_draws=100,
posterior_temperature=1.0``), MLP anchors with ``max_iter=300``, and BLAS on one thread
(:func:`quick_blas_one_thread`).

Run: ``python benchmarks/calibration.py [--quick] [--seeds 3] [--bnn s10='{"prior_sigma": 10}']``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

NAME = "calibration"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FIGURE = ROOT / "docs" / "figures" / "calibration_reliability.png"

CLS_DATASETS = {
    "breast_cancer": "load_breast_cancer (569 x 30, 2 classes)",
    "wine": "load_wine (178 x 13, 3 classes)",
    "digits": "load_digits (1797 x 64, 10 classes)",
    "iris": "load_iris (150 x 4, 3 classes)",
    "moons": "make_moons(1000, noise=0.3, random_state=seed)",
    "noisy_label": "make_classification(1000, n_features=20, n_informative=5, flip_y=0.25, "
    "random_state=seed)",
    "imbalanced": "make_classification(2000, n_features=20, n_informative=5, "
    "weights=[0.95, 0.05], random_state=seed)",
    "small": "first 100 rows of breast_cancer shuffled with seed",
    "digits_ood": "digits 0-4 (split 50/50); digits 5-9 out-of-distribution",
}
REG_DATASETS = {
    "diabetes": "load_diabetes (442 x 10)",
    "friedman1": "make_friedman1(500, noise=1.0, random_state=seed)",
    "heteroscedastic": "x ~ U(-3, 3) + 4 N(0, 1) noise features, "
    "y = sin(x) + N(0, (0.1 + 0.3|x|)^2), 600 rows",
}
SECTIONS = ("classification", "regression", "hierarchical")
HIDDEN = ((32,), (5, 5))
REG_HIDDEN = (16,)
QUICK_CLS = ("iris", "small")
QUICK_REG = ("diabetes",)
#: What --quick passes to every BNN (through the variant mechanism: merged into the
#: parameters of each variant, "default" included). ``posterior_temperature=1.0`` skips
#: the default's cross-fitted temperature choice (3 extra fits per BNN), which would
#: triple the smoke run; the full run measures the defaults as they are.
QUICK_BNN = {"n_iter": 1500, "n_draws": 100, "posterior_temperature": 1.0}
FIGURE_DATASETS = ("breast_cancer", "digits", "noisy_label", "moons")
#: The deep-ensemble anchor (the issue's criterion: NLL <= its on most seeds).
ENSEMBLE = "5-MLP ensemble (32,)"
FIGURE_MODELS = ("BNN default (32,)", "MLP (32,)", ENSEMBLE)
GPC_MAX_TRAIN = 600
ECE_BINS = 15
CLS_METRICS = ("accuracy", "nll", "brier", "ece", "ece_floor", "confidence", "fit_s")
#: Label draws of pymc_bnn.metrics.ece_consistency per fit: the ECE the same predictions
#: would show if calibrated (the binned ECE's floor on a test set of this size).
ECE_RESAMPLES = 500
REG_METRICS = ("rmse", "nll", "coverage90", "crps", "fit_s")
Z90 = 1.6448536269514722  # standard-normal 0.95 quantile


def log(msg: str) -> None:
    """Progress line on stderr (stdout carries the tables)."""
    print(msg, file=sys.stderr, flush=True)


def h_str(h) -> str:
    return str(tuple(h))


# ------------------------------------------------------------------------- anchors
class MLPEnsembleClassifier(ClassifierMixin, BaseEstimator):
    """Deep-ensemble anchor: ``n_members`` MLPClassifiers, probabilities averaged.

    Member ``i`` gets ``random_state = random_state * 10 + i``.
    """

    def __init__(self, hidden_layer_sizes=(32,), n_members=5, max_iter=3000, random_state=0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.n_members = n_members
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y):
        from sklearn.neural_network import MLPClassifier

        self.members_ = [
            MLPClassifier(
                hidden_layer_sizes=self.hidden_layer_sizes,
                max_iter=self.max_iter,
                random_state=self.random_state * 10 + i,
            ).fit(X, y)
            for i in range(self.n_members)
        ]
        self.classes_ = self.members_[0].classes_
        return self

    def predict_proba(self, X):
        return np.mean([m.predict_proba(X) for m in self.members_], axis=0)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


# ------------------------------------------------------------------------- data
def classification_data(name: str, seed: int) -> dict:
    """``X_train, X_test, y_train, y_test`` (and ``X_ood`` for digits_ood) of one seed."""
    from sklearn import datasets as skd
    from sklearn.model_selection import train_test_split

    X_ood = None
    if name == "breast_cancer":
        X, y = skd.load_breast_cancer(return_X_y=True)
    elif name == "wine":
        X, y = skd.load_wine(return_X_y=True)
    elif name == "digits":
        X, y = skd.load_digits(return_X_y=True)
    elif name == "iris":
        X, y = skd.load_iris(return_X_y=True)
    elif name == "moons":
        X, y = skd.make_moons(1000, noise=0.3, random_state=seed)
    elif name == "noisy_label":
        X, y = skd.make_classification(
            n_samples=1000, n_features=20, n_informative=5, flip_y=0.25, random_state=seed
        )
    elif name == "imbalanced":
        X, y = skd.make_classification(
            n_samples=2000, n_features=20, n_informative=5, weights=[0.95, 0.05], random_state=seed
        )
    elif name == "small":
        X, y = skd.load_breast_cancer(return_X_y=True)
        rows = np.random.default_rng(seed).permutation(len(y))[:100]
        X, y = X[rows], y[rows]
    elif name == "digits_ood":
        X, y = skd.load_digits(return_X_y=True)
        X_ood = X[y >= 5]
        X, y = X[y < 5], y[y < 5]
    else:  # pragma: no cover - argparse restricts the names
        raise ValueError(f"unknown classification data set {name!r}")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    return {"X_train": X_tr, "X_test": X_te, "y_train": y_tr, "y_test": y_te, "X_ood": X_ood}


def regression_data(name: str, seed: int) -> dict:
    from sklearn import datasets as skd
    from sklearn.model_selection import train_test_split

    if name == "diabetes":
        X, y = skd.load_diabetes(return_X_y=True)
    elif name == "friedman1":
        X, y = skd.make_friedman1(n_samples=500, noise=1.0, random_state=seed)
    elif name == "heteroscedastic":
        rng = np.random.default_rng(seed)
        x = rng.uniform(-3.0, 3.0, 600)
        X = np.column_stack([x, rng.normal(size=(600, 4))])
        y = np.sin(x) + rng.normal(0.0, 0.1 + 0.3 * np.abs(x))
    else:  # pragma: no cover
        raise ValueError(f"unknown regression data set {name!r}")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed)
    return {"X_train": X_tr, "X_test": X_te, "y_train": y_tr, "y_test": y_te}


# ------------------------------------------------------------------------- models
def bnn_variants(args) -> dict[str, dict]:
    """Variant name -> BNN parameters ("default" is empty: the package's defaults)."""
    variants = {"default": {}}
    for name, params in args.bnn:
        variants[name] = dict(params)
    if args.quick:
        variants = {k: {**QUICK_BNN, **v} for k, v in variants.items()}
    return variants


def classification_models(args, variants) -> list[dict]:
    """Model specs: name, kind, variant, hidden, make(seed) -> estimator (unfitted)."""
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    from pymc_bnn import BayesianMLPClassifier

    specs = []
    for variant, params in variants.items():
        hs = [tuple(params["hidden_layer_sizes"])] if "hidden_layer_sizes" in params else HIDDEN
        for h in hs:
            kw = {k: v for k, v in params.items() if k != "hidden_layer_sizes"}
            specs.append(
                {
                    "name": f"BNN {variant} {h_str(h)}",
                    "kind": "bnn",
                    "variant": variant,
                    "hidden": h_str(h),
                    "make": lambda seed, h=h, kw=kw: BayesianMLPClassifier(
                        hidden_layer_sizes=h, random_state=seed, **kw
                    ),
                }
            )
    for h in HIDDEN:
        specs.append(
            {
                "name": f"MLP {h_str(h)}",
                "kind": "mlp",
                "hidden": h_str(h),
                "make": lambda seed, h=h: MLPClassifier(
                    hidden_layer_sizes=h, max_iter=args.mlp_max_iter, random_state=seed
                ),
            }
        )
    specs.append(
        {
            "name": ENSEMBLE,
            "kind": "ensemble",
            "hidden": "(32,)",
            "make": lambda seed: MLPEnsembleClassifier(
                (32,), n_members=5, max_iter=args.mlp_max_iter, random_state=seed
            ),
        }
    )
    specs.append(
        {
            "name": "LogisticRegression",
            "kind": "logreg",
            "make": lambda seed: LogisticRegression(max_iter=5000),
        }
    )
    specs.append(
        {
            "name": "GPC",
            "kind": "gpc",
            "make": lambda seed: GaussianProcessClassifier(1.0 * RBF(1.0), random_state=seed),
        }
    )
    return specs


def regression_models(args, variants) -> list[dict]:
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    from sklearn.linear_model import RidgeCV
    from sklearn.neural_network import MLPRegressor

    from pymc_bnn import BayesianMLPRegressor

    specs = []
    for variant, params in variants.items():
        h = tuple(params.get("hidden_layer_sizes", REG_HIDDEN))
        kw = {k: v for k, v in params.items() if k != "hidden_layer_sizes"}
        specs.append(
            {
                "name": f"BNN {variant} {h_str(h)}",
                "kind": "bnn",
                "variant": variant,
                "hidden": h_str(h),
                "make": lambda seed, h=h, kw=kw: BayesianMLPRegressor(h, random_state=seed, **kw),
            }
        )
    specs.append(
        {
            "name": "MLP (16,)",
            "kind": "mlp",
            "hidden": "(16,)",
            "make": lambda seed: MLPRegressor(
                hidden_layer_sizes=(16,), max_iter=args.mlp_reg_max_iter, random_state=seed
            ),
        }
    )
    specs.append({"name": "RidgeCV", "kind": "ridge", "make": lambda seed: RidgeCV()})
    specs.append(
        {
            "name": "GPR",
            "kind": "gpr",
            "make": lambda seed: GaussianProcessRegressor(
                ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True, random_state=seed
            ),
        }
    )
    return specs


def _jsonable(value):
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def params_of(estimator) -> dict:
    """``get_params(deep=False)`` as JSON-able data (objects by their repr)."""
    return {k: _jsonable(v) for k, v in estimator.get_params(deep=False).items()}


# ------------------------------------------------------------------------- fitting
class WarningCounter:
    """Counts ConvergenceWarnings (the package's own included) and the package's NUTS
    SamplingWarnings by model, and records where they came from (kept out of the
    tables); re-shows other warnings."""

    def __init__(self):
        self.counts: dict[str, int] = {}
        self.where: dict[str, list[str]] = {}

    def fit(self, model_name: str, fn, *a, where: str = "", **kw):
        from pymc_bnn.exceptions import SamplingWarning

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            warnings.simplefilter("always", SamplingWarning)
            out = fn(*a, **kw)
        for w in caught:
            if issubclass(w.category, ConvergenceWarning | SamplingWarning):
                self.counts[model_name] = self.counts.get(model_name, 0) + 1
                self.where.setdefault(model_name, []).append(where)
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        return out


def class_metrics(M, y, proba, classes) -> dict:
    pred = classes[np.argmax(proba, axis=1)]
    consistency = M.ece_consistency(
        y,
        proba,
        n_bins=ECE_BINS,
        classes=classes,
        method="top_label",
        n_resamples=ECE_RESAMPLES,
        random_state=0,
    )
    return {
        "accuracy": float(np.mean(pred == y)),
        "nll": float(M.negative_log_likelihood(y, proba, classes=classes)),
        "brier": float(M.brier_score(y, proba, classes=classes)),
        "ece": consistency["ece"],
        "ece_floor": consistency["expected_if_calibrated"],
        "confidence": float(np.mean(np.max(proba, axis=1))),
    }


def _error(exc: BaseException) -> str:
    return f"failed: {exc!r}"[:400]


def run_classification(
    args, variants, M, wc: WarningCounter, figure_data: dict, config: dict
) -> list[dict]:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    specs = classification_models(args, variants)
    config["classification_estimators"] = {
        s["name"]: params_of(s["make"](args.seeds_list[0])) for s in specs
    }
    per_seed: dict[tuple, list] = {}
    for dataset in args.cls_datasets:
        for seed in args.seeds_list:
            d = classification_data(dataset, seed)
            n_train = len(d["y_train"])
            for spec in specs:
                key = (dataset, spec["name"])
                rec = {"seed": seed, "n_train": n_train, "n_test": len(d["y_test"])}
                if spec["kind"] == "gpc" and n_train > GPC_MAX_TRAIN:
                    rec.update(
                        status="skipped", reason=f"GPC skipped: n_train {n_train} > {GPC_MAX_TRAIN}"
                    )
                    per_seed.setdefault(key, []).append(rec)
                    continue
                pipe = make_pipeline(StandardScaler(), spec["make"](seed))
                try:
                    fit_s, _ = _common.time_call(
                        wc.fit,
                        spec["name"],
                        pipe.fit,
                        d["X_train"],
                        d["y_train"],
                        where=f"{dataset} seed {seed}",
                    )
                    classes = pipe.classes_
                    proba = pipe.predict_proba(d["X_test"])
                    rec.update(
                        class_metrics(M, d["y_test"], proba, classes),
                        fit_s=fit_s,
                        status="ok",
                        n_classes=len(classes),
                    )
                    if spec["kind"] == "bnn":  # which method the default settled on
                        linear = getattr(pipe[-1], "linear_part_", None)
                        rec.update(
                            inference=pipe[-1].inference_,
                            inference_selection=pipe[-1].inference_selection_,
                            linear_share=0.0 if linear is None else linear["weight"],
                        )
                    if d["X_ood"] is not None:
                        rec.update(ood_metrics(M, pipe, spec["kind"], d))
                    if seed == args.seeds_list[0] and spec["name"] in FIGURE_MODELS:
                        figure_data[key] = (d["y_test"], proba, classes)
                except Exception as exc:  # noqa: BLE001 - record and go on
                    rec.update(status="failed", reason=_error(exc))
                per_seed.setdefault(key, []).append(rec)
                if rec["status"] == "ok":
                    extra = (
                        f"  AUROC(H) {rec['auroc_entropy']:.3f}" if "auroc_entropy" in rec else ""
                    )
                    log(
                        f"[classification] {dataset:13s} seed {seed}  {spec['name']:24s} "
                        f"fit {rec['fit_s']:6.1f} s  acc {rec['accuracy']:.3f}  "
                        f"NLL {rec['nll']:.3f}  ECE {rec['ece']:.3f}{extra}"
                        + (f"  {rec['inference']}" if "inference" in rec else "")
                    )
                else:
                    log(
                        f"[classification] {dataset:13s} seed {seed}  {spec['name']:24s} "
                        f"{rec['reason']}"
                    )
    return _median_rows(
        "classification", specs, per_seed, CLS_METRICS + ("auroc_entropy", "auroc_mi")
    )


def ood_metrics(M, pipe, kind: str, d: dict) -> dict:
    """AUROC of entropy (and, for BNNs, mutual information): test digits vs digits 5-9."""
    if kind == "bnn":
        pre, clf = pipe[:-1], pipe[-1]
        u_in = clf.predict_uncertainty(pre.transform(d["X_test"]))
        u_out = clf.predict_uncertainty(pre.transform(d["X_ood"]))
        return {
            "auroc_entropy": float(M.ood_auroc(u_in["entropy"], u_out["entropy"])),
            "auroc_mi": float(M.ood_auroc(u_in["mutual_info"], u_out["mutual_info"])),
            "n_ood": len(d["X_ood"]),
        }
    h_in = M.predictive_entropy(pipe.predict_proba(d["X_test"]))
    h_out = M.predictive_entropy(pipe.predict_proba(d["X_ood"]))
    return {"auroc_entropy": float(M.ood_auroc(h_in, h_out)), "n_ood": len(d["X_ood"])}


def _median_rows(section: str, specs, per_seed: dict, metrics) -> list[dict]:
    rows = []
    for (dataset, model), recs in per_seed.items():
        spec = next(s for s in specs if s["name"] == model)
        ok = [r for r in recs if r["status"] == "ok"]
        row = {
            "section": section,
            "dataset": dataset,
            "model": model,
            "kind": spec["kind"],
            "variant": spec.get("variant"),
            "hidden": spec.get("hidden"),
            "n_train": recs[0]["n_train"],
            "n_test": recs[0]["n_test"],
            "seeds": [r["seed"] for r in recs],
            "n_ok": len(ok),
        }
        if ok:
            row["status"] = "ok"
            for m in metrics:
                vals = [r[m] for r in ok if r.get(m) is not None]
                if vals:
                    row[m] = _common.median(vals)
            if "n_classes" in ok[0]:
                row["n_classes"] = ok[0]["n_classes"]
        else:
            row["status"] = recs[0]["status"]
        reasons = sorted({r["reason"] for r in recs if r["status"] != "ok"})
        if reasons:
            row["reason"] = "; ".join(reasons)
        row["per_seed"] = recs
        rows.append(row)
    return rows


def run_regression(args, variants, M, wc: WarningCounter, config: dict) -> list[dict]:
    from sklearn.model_selection import KFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    specs = regression_models(args, variants)
    config["regression_estimators"] = {
        s["name"]: params_of(s["make"](args.seeds_list[0])) for s in specs
    }
    per_seed: dict[tuple, list] = {}
    for dataset in args.reg_datasets:
        for seed in args.seeds_list:
            d = regression_data(dataset, seed)
            y_te = d["y_test"]
            for spec in specs:
                key = (dataset, spec["name"])
                rec = {"seed": seed, "n_train": len(d["y_train"]), "n_test": len(y_te)}
                pipe = make_pipeline(StandardScaler(), spec["make"](seed))
                try:
                    fit_s, _ = _common.time_call(
                        wc.fit,
                        spec["name"],
                        pipe.fit,
                        d["X_train"],
                        d["y_train"],
                        where=f"{dataset} seed {seed}",
                    )
                    if spec["kind"] in ("bnn", "gpr"):
                        mean, std = pipe.predict(d["X_test"], return_std=True)
                        rec["sigma_source"] = "predictive std"
                    else:
                        cv = KFold(5, shuffle=True, random_state=seed)
                        cv_pred = wc.fit(
                            spec["name"],
                            cross_val_predict,
                            clone(pipe),
                            d["X_train"],
                            d["y_train"],
                            cv=cv,
                        )
                        sigma = float(np.sqrt(np.mean((d["y_train"] - cv_pred) ** 2)))
                        mean = pipe.predict(d["X_test"])
                        std = np.full_like(mean, sigma)
                        rec["sigma_source"] = "5-fold CV residual RMSE (homoscedastic)"
                        rec["sigma"] = sigma
                    if spec["kind"] == "bnn":
                        lower, upper = pipe[-1].predict_interval(
                            pipe[:-1].transform(d["X_test"]), coverage=0.9
                        )
                        # which method the default settled on (ADVI, Laplace, the mixture)
                        rec.update(
                            inference=pipe[-1].inference_,
                            inference_selection=pipe[-1].inference_selection_,
                        )
                    else:
                        lower, upper = mean - Z90 * std, mean + Z90 * std
                    rec.update(
                        rmse=float(np.sqrt(np.mean((y_te - mean) ** 2))),
                        nll=float(M.gaussian_nll(y_te, mean, std)),
                        coverage90=float(M.interval_coverage(y_te, lower, upper)),
                        crps=float(M.crps_gaussian(y_te, mean, std)),
                        fit_s=fit_s,
                        status="ok",
                    )
                except Exception as exc:  # noqa: BLE001 - record and go on
                    rec.update(status="failed", reason=_error(exc))
                per_seed.setdefault(key, []).append(rec)
                if rec["status"] == "ok":
                    log(
                        f"[regression] {dataset:15s} seed {seed}  {spec['name']:22s} "
                        f"fit {rec['fit_s']:6.1f} s  RMSE {rec['rmse']:.3f}  "
                        f"NLL {rec['nll']:.3f}  cov90 {rec['coverage90']:.3f}"
                        + (f"  {rec['inference']}" if "inference" in rec else "")
                    )
                else:
                    log(
                        f"[regression] {dataset:15s} seed {seed}  {spec['name']:22s} "
                        f"{rec['reason']}"
                    )
    return _median_rows("regression", specs, per_seed, REG_METRICS)


def run_hierarchical(args, variants, M, wc: WarningCounter, config: dict) -> list[dict]:
    from pymc_bnn import BayesianMLPClassifier
    from pymc_bnn.datasets import make_rotated_moons

    config["hierarchical_estimators"] = {
        v: params_of(BayesianMLPClassifier(random_state=args.seeds_list[0], **p))
        for v, p in variants.items()
    }
    per_seed: dict[tuple, list] = {}
    specs = []
    for variant, params in variants.items():
        for kind in ("hierarchical", "separate"):
            label = (
                "hierarchical (groups=)"
                if kind == "hierarchical"
                else f"separate ({args.n_tasks} fits)"
            )
            specs.append(
                {
                    "name": f"BNN {variant}: {label}",
                    "kind": kind,
                    "variant": variant,
                    "hidden": h_str(
                        params.get("hidden_layer_sizes", BayesianMLPClassifier().hidden_layer_sizes)
                    ),
                }
            )
    for seed in args.seeds_list:
        data = make_rotated_moons(n_tasks=args.n_tasks, random_state=seed)
        X_tr, y_tr, g_tr = data["X_train"], data["y_train"], data["groups_train"]
        X_te, y_te, g_te = data["X_test"], data["y_test"], data["groups_test"]
        classes = np.unique(y_tr)
        for spec in specs:
            params = variants[spec["variant"]]
            rec = {"seed": seed, "n_train": len(y_tr), "n_test": len(y_te), "n_tasks": args.n_tasks}
            try:
                if spec["kind"] == "hierarchical":
                    clf = BayesianMLPClassifier(random_state=seed, **params)
                    fit_s, _ = _common.time_call(
                        wc.fit, spec["name"], clf.fit, X_tr, y_tr, groups=g_tr, where=f"seed {seed}"
                    )
                    proba = clf.predict_proba(X_te, groups=g_te)
                    diag = clf.diagnostics_
                    rec.update(
                        inference=clf.inference_,
                        nuts_sampler=getattr(clf.posterior_, "nuts_sampler", None),
                        **{
                            k: diag.get(k)
                            for k in (
                                "converged",
                                "max_rhat",
                                "min_ess_bulk",
                                "min_ess_tail",
                                "n_divergences",
                            )
                        },
                    )
                else:
                    fit_s, proba = 0.0, np.empty((len(y_te), len(classes)))
                    for task in np.unique(g_tr):
                        clf = BayesianMLPClassifier(random_state=seed, **params)
                        t, _ = _common.time_call(
                            wc.fit,
                            spec["name"],
                            clf.fit,
                            X_tr[g_tr == task],
                            y_tr[g_tr == task],
                            where=f"seed {seed} task {task}",
                        )
                        fit_s += t
                        proba[g_te == task] = clf.predict_proba(X_te[g_te == task])
                rec.update(class_metrics(M, y_te, proba, classes), fit_s=fit_s, status="ok")
                log(
                    f"[hierarchical] seed {seed}  {spec['name']:40s} fit {fit_s:6.1f} s  "
                    f"acc {rec['accuracy']:.3f}  NLL {rec['nll']:.3f}"
                    + (f"  {rec['inference']}" if "inference" in rec else "")
                    + (
                        f" ({rec['nuts_sampler']}; R-hat {rec['max_rhat']:.3f}, bulk ESS "
                        f"{rec['min_ess_bulk']:.0f}, divergences {rec['n_divergences']})"
                        if rec.get("max_rhat") is not None
                        else ""
                    )
                )
            except Exception as exc:  # noqa: BLE001 - record and go on
                rec.update(status="failed", reason=_error(exc))
                log(f"[hierarchical] seed {seed}  {spec['name']:40s} {rec['reason']}")
            per_seed.setdefault(("rotated_moons", spec["name"]), []).append(rec)
    return _median_rows("hierarchical", specs, per_seed, CLS_METRICS)


# ------------------------------------------------------------------------- criteria
def _get(rows, dataset, model, metric):
    for r in rows:
        if r["dataset"] == dataset and r["model"] == model and r["status"] == "ok":
            return r.get(metric)
    return None


def _le(a, b, slack=0.0):
    return None if a is None or b is None else bool(a <= b + slack)


def classification_wins(rows: list[dict], variants, datasets) -> list[dict]:
    """Per BNN variant and architecture: which data sets meet the criteria (medians)."""
    out = []
    bnn_models = sorted(
        {(r["variant"], r["hidden"], r["model"]) for r in rows if r["kind"] == "bnn"},
        key=lambda t: (list(variants).index(t[0]), t[1] != "(32,)"),
    )
    for variant, hidden, model in bnn_models:
        mlp = f"MLP {hidden}"
        per = {}
        for ds in datasets:

            def g(m, k, ds=ds):
                return _get(rows, ds, m, k)

            if g(model, "nll") is None:
                continue
            crit = {
                "nll_le_mlp": _le(g(model, "nll"), g(mlp, "nll")),
                "ece_le_mlp": _le(g(model, "ece"), g(mlp, "ece")),
                "acc_ge_mlp_minus_0.01": _le(g(mlp, "accuracy"), g(model, "accuracy"), 0.01),
            }
            if ds == "noisy_label":
                crit["nll_le_logreg"] = _le(g(model, "nll"), g("LogisticRegression", "nll"))
            meets = all(v is True for v in crit.values())
            per[ds] = {
                **crit,
                "meets": meets,
                "nll_le_ensemble": _le(g(model, "nll"), g(ENSEMBLE, "nll")),
            }
        out.append(
            {
                "variant": variant,
                "hidden": hidden,
                "model": model,
                "datasets": per,
                "n_datasets": len(per),
                "n_meets": sum(v["meets"] for v in per.values()),
                "n_nll_le_ensemble": sum(v["nll_le_ensemble"] is True for v in per.values()),
            }
        )
    return out


def _per_seed(rows, dataset, model) -> dict:
    """``{seed: record}`` of one model's successful fits (with NLL and ECE) on one data set."""
    for r in rows:
        if r["dataset"] == dataset and r["model"] == model:
            return {
                p["seed"]: p
                for p in r.get("per_seed", [])
                if p.get("status", "ok") == "ok"
                and p.get("nll") is not None
                and p.get("ece") is not None
            }
    return {}


def paired_comparison(rows: list[dict], datasets) -> list[dict]:
    """Each BNN against the MLP of its architecture, seed by seed (same split).

    The wins table compares the medians of the two models' results over seeds; on a
    few seeds those medians move with the split, the seeds' noise is shared by the two
    models, and comparing seed by seed removes it: per data set, on how many seeds the
    BNN's NLL (ECE) is <= the MLP's, the median of the per-seed ratio of NLLs and the
    median of the per-seed difference of ECEs; and the same for the ECE's excess over
    its floor (``ece - ece_floor``: what each model's ECE shows beyond what a calibrated
    model with its predictions would show on this test set).
    """
    out = []
    for model, hidden in sorted({(r["model"], r["hidden"]) for r in rows if r["kind"] == "bnn"}):
        per = {}
        for ds in datasets:
            bnn, mlp = _per_seed(rows, ds, model), _per_seed(rows, ds, f"MLP {hidden}")
            seeds = sorted(set(bnn) & set(mlp))
            if not seeds:
                continue
            per[ds] = {
                "n_seeds": len(seeds),
                "nll_wins": sum(bnn[s]["nll"] <= mlp[s]["nll"] for s in seeds),
                "ece_wins": sum(bnn[s]["ece"] <= mlp[s]["ece"] for s in seeds),
                "median_nll_ratio": float(
                    np.median([bnn[s]["nll"] / mlp[s]["nll"] for s in seeds])
                ),
                "median_ece_diff": float(np.median([bnn[s]["ece"] - mlp[s]["ece"] for s in seeds])),
            }
            excess = [
                (bnn[s]["ece"] - bnn[s]["ece_floor"]) - (mlp[s]["ece"] - mlp[s]["ece_floor"])
                for s in seeds
            ]
            per[ds]["excess_wins"] = sum(d <= 0 for d in excess)
            per[ds]["median_excess_diff"] = float(np.median(excess))
            # the criterion against the deep ensemble is seed by seed too
            ens = _per_seed(rows, ds, ENSEMBLE)
            both = [s for s in seeds if s in ens]
            per[ds]["n_ensemble_seeds"] = len(both)
            per[ds]["ensemble_nll_wins"] = sum(bnn[s]["nll"] <= ens[s]["nll"] for s in both)
        out.append(
            {
                "model": model,
                "hidden": hidden,
                "datasets": per,
                # data sets where the BNN is at least as good on most seeds
                "n_nll_majority": sum(2 * v["nll_wins"] > v["n_seeds"] for v in per.values()),
                "n_ece_majority": sum(2 * v["ece_wins"] > v["n_seeds"] for v in per.values()),
                "n_ensemble_nll_majority": sum(
                    2 * v["ensemble_nll_wins"] > v["n_ensemble_seeds"] > 0 for v in per.values()
                ),
            }
        )
    return out


def paired_table(paired) -> str:
    rows = [
        {
            "model": p["model"],
            "dataset": ds,
            "nll": f"{v['nll_wins']} / {v['n_seeds']}",
            "ratio": f"{v['median_nll_ratio']:.3f}",
            "ece": f"{v['ece_wins']} / {v['n_seeds']}",
            "diff": f"{v['median_ece_diff']:+.4f}",
            "excess": f"{v['excess_wins']} / {v['n_seeds']}",
            "excess_diff": f"{v['median_excess_diff']:+.4f}",
            "ens": (
                f"{v['ensemble_nll_wins']} / {v['n_ensemble_seeds']}"
                if v["n_ensemble_seeds"]
                else "—"
            ),
        }
        for p in paired
        for ds, v in p["datasets"].items()
    ]
    cols = [
        ("model", "BNN"),
        ("dataset", "data set"),
        ("nll", "seeds NLL ≤ MLP"),
        ("ratio", "median NLL / MLP's"),
        ("ece", "seeds ECE ≤ MLP"),
        ("diff", "median ECE − MLP's"),
        ("excess", "seeds ECE − floor ≤ MLP's"),
        ("excess_diff", "median (ECE − floor) − MLP's"),
        ("ens", "seeds NLL ≤ 5-MLP ens."),
    ]
    return _common.markdown_table(rows, cols)


def regression_criteria(rows: list[dict], datasets) -> list[dict]:
    out = []
    for model in [r["model"] for r in rows if r["kind"] == "bnn" and r["dataset"] == datasets[0]]:

        def g(ds, m, k):
            return _get(rows, ds, m, k)

        c = {"model": model}
        if "diabetes" in datasets:
            rmse = g("diabetes", model, "rmse")
            c["diabetes_rmse"] = rmse
            c["diabetes_rmse_le_mlp"] = _le(rmse, g("diabetes", "MLP (16,)", "rmse"))
            ridge = g("diabetes", "RidgeCV", "rmse")
            c["diabetes_rmse_le_1.05_ridge"] = _le(rmse, None if ridge is None else 1.05 * ridge)
        cov = {ds: g(ds, model, "coverage90") for ds in datasets}
        c["coverage90"] = cov
        c["coverage_in_0.85_0.95"] = all(v is not None and 0.85 <= v <= 0.95 for v in cov.values())
        c["meets"] = all(
            v is True for k, v in c.items() if k.startswith(("diabetes_rmse_", "coverage_in"))
        )
        out.append(c)
    return out


def hierarchical_criteria(rows: list[dict], variants) -> list[dict]:
    out = []
    for variant in variants:
        h = next(
            (
                r
                for r in rows
                if r["variant"] == variant and r["kind"] == "hierarchical" and r["status"] == "ok"
            ),
            None,
        )
        s = next(
            (
                r
                for r in rows
                if r["variant"] == variant and r["kind"] == "separate" and r["status"] == "ok"
            ),
            None,
        )
        if h is None:
            continue
        c = {
            "variant": variant,
            "hierarchical_accuracy": h["accuracy"],
            "separate_accuracy": None if s is None else s["accuracy"],
            "fit_s": h["fit_s"],
            "acc_ge_0.88": h["accuracy"] >= 0.88,
            "acc_ge_separate_plus_0.04": None
            if s is None
            else bool(h["accuracy"] >= s["accuracy"] + 0.04),
            "fit_le_60s": h["fit_s"] <= 60.0,
        }
        c["meets"] = all(
            c[k] is True for k in ("acc_ge_0.88", "acc_ge_separate_plus_0.04", "fit_le_60s")
        )
        out.append(c)
    return out


# ------------------------------------------------------------------------- tables
def _yes(v) -> str:
    return "—" if v is None else ("✓" if v else "✗")


def classification_table(rows) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    cols = [
        ("dataset", "data set"),
        ("model", "model"),
        ("n_train", "n train"),
        ("accuracy", "accuracy"),
        ("nll", "NLL"),
        ("brier", "Brier (sklearn)"),
        ("ece", "ECE"),
        ("ece_floor", "ECE if calibrated"),
        ("confidence", "mean conf."),
        ("fit_s", "fit s"),
        ("n_ok", "seeds"),
    ]
    return _common.markdown_table(ok, cols)


def ood_table(rows) -> str | None:
    ood = [r for r in rows if r["status"] == "ok" and r.get("auroc_entropy") is not None]
    if not ood:
        return None
    cols = [
        ("dataset", "data set"),
        ("model", "model"),
        ("accuracy", "in-dist. accuracy"),
        ("auroc_entropy", "AUROC entropy"),
        ("auroc_mi", "AUROC mutual info"),
        ("n_ok", "seeds"),
    ]
    return _common.markdown_table(ood, cols)


_CRIT_SHORT = {
    "nll_le_mlp": "NLL",
    "ece_le_mlp": "ECE",
    "acc_ge_mlp_minus_0.01": "acc",
    "nll_le_logreg": "NLL>LR",
}


def wins_table(wins, datasets) -> str:
    ds = [d for d in datasets if any(d in w["datasets"] for w in wins)]
    rows = []
    for w in wins:
        row = {
            "bnn": f"{w['variant']} {w['hidden']}",
            "meets": f"{w['n_meets']}/{w['n_datasets']}",
            "ens": f"{w['n_nll_le_ensemble']}/{w['n_datasets']}",
        }
        for d in ds:
            c = w["datasets"].get(d)
            if c is None:
                row[d] = "—"
            elif c["meets"]:
                row[d] = "✓"
            else:
                row[d] = "✗ " + ",".join(
                    _CRIT_SHORT[k] for k in _CRIT_SHORT if c.get(k) is not True and k in c
                )
        rows.append(row)
    cols = [("bnn", "BNN"), *[(d, d) for d in ds], ("meets", "meets"), ("ens", "NLL ≤ 5-MLP ens.")]
    return _common.markdown_table(rows, cols)


def regression_table(rows) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    cols = [
        ("dataset", "data set"),
        ("model", "model"),
        ("n_train", "n train"),
        ("rmse", "RMSE"),
        ("nll", "Gaussian NLL"),
        ("coverage90", "90% coverage"),
        ("crps", "CRPS"),
        ("fit_s", "fit s"),
        ("n_ok", "seeds"),
    ]
    return _common.markdown_table(ok, cols)


def regression_criteria_table(crit, datasets) -> str:
    rows = []
    for c in crit:
        row = {
            "model": c["model"],
            "meets": _yes(c["meets"]),
            "cov": _yes(c["coverage_in_0.85_0.95"]),
        }
        if "diabetes_rmse" in c:
            row["mlp"] = _yes(c["diabetes_rmse_le_mlp"])
            row["ridge"] = _yes(c["diabetes_rmse_le_1.05_ridge"])
        for d in datasets:
            v = c["coverage90"].get(d)
            row[d] = "—" if v is None else f"{v:.3f}"
        rows.append(row)
    cols = [("model", "BNN")]
    if "diabetes" in datasets:
        cols += [("mlp", "diabetes RMSE ≤ MLP"), ("ridge", "diabetes RMSE ≤ 1.05 RidgeCV")]
    cols += [(d, f"cov90 {d}") for d in datasets]
    cols += [("cov", "cov90 in [0.85, 0.95]"), ("meets", "meets")]
    return _common.markdown_table(rows, cols)


def hierarchical_table(rows, crit) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    cols = [
        ("model", "model"),
        ("n_tasks", "tasks"),
        ("accuracy", "test accuracy"),
        ("nll", "NLL"),
        ("ece", "ECE"),
        ("fit_s", "fit s"),
        ("n_ok", "seeds"),
    ]
    for r in ok:
        r["n_tasks"] = r["per_seed"][0]["n_tasks"]
    text = _common.markdown_table(ok, cols)
    if crit:
        crows = [
            {
                "variant": c["variant"],
                "a": _yes(c["acc_ge_0.88"]),
                "b": _yes(c["acc_ge_separate_plus_0.04"]),
                "c": _yes(c["fit_le_60s"]),
                "m": _yes(c["meets"]),
            }
            for c in crit
        ]
        text += "\n\n" + _common.markdown_table(
            crows,
            [
                ("variant", "BNN"),
                ("a", "accuracy ≥ 0.88"),
                ("b", "≥ separate + 0.04"),
                ("c", "fit ≤ 60 s"),
                ("m", "meets"),
            ],
        )
    return text


# ------------------------------------------------------------------------- figure
def make_figure(path: Path, figure_data: dict, datasets, seed: int) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_bnn.plotting import reliability_diagram

    chosen = [d for d in FIGURE_DATASETS if d in datasets]
    chosen += [d for d in datasets if d not in chosen]
    chosen = [d for d in chosen if any((d, m) in figure_data for m in FIGURE_MODELS)][:4]
    if not chosen:
        return []
    fig, axes = plt.subplots(
        1, len(chosen), figsize=(4.6 * len(chosen), 4.8), layout="constrained", squeeze=False
    )
    for ax, ds in zip(axes[0], chosen):
        ax.set_title(ds)
        for model in FIGURE_MODELS:
            if (ds, model) in figure_data:
                y, proba, classes = figure_data[(ds, model)]
                reliability_diagram(
                    y,
                    proba,
                    n_bins=ECE_BINS,
                    ax=ax,
                    classes=classes,
                    confidence="top",
                    label=model,
                    show_counts=False,
                )
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(
        f"Reliability of the top-class probability on the test half (seed {seed}; "
        f"{ECE_BINS} bins; default BNN vs MLP vs 5-MLP ensemble)"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return chosen


# ------------------------------------------------------------------------- main
def figure_path(figure: str | None, out: Path, *, quick: bool) -> Path | None:
    """Where the reliability diagram goes: ``--figure`` (``"none"``: nowhere); by default
    the README's figure for a full run writing the default results, and next to the
    JSON otherwise (a quick run, or results written elsewhere do not replace it)."""
    if figure is not None:
        return None if figure.lower() == "none" else Path(figure)
    default_out = _common.RESULTS_DIR / f"{NAME}.json"
    if quick or out.resolve() != default_out.resolve():
        return out.with_name(out.stem + "_reliability.png")
    return DEFAULT_FIGURE


def _bnn_arg(text: str):
    name, sep, js = text.partition("=")
    if not sep or not name or name == "default":
        raise argparse.ArgumentTypeError(
            f"--bnn takes NAME=JSON with NAME other than 'default'; got {text!r}"
        )
    try:
        params = json.loads(js)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--bnn {name}: invalid JSON ({exc})") from None
    if not isinstance(params, dict):
        raise argparse.ArgumentTypeError(f"--bnn {name}: JSON must be an object")
    return name, params


def _import_metrics():
    try:
        from pymc_bnn import metrics
    except ImportError as exc:  # pragma: no cover - only while the module is missing
        raise SystemExit(f"calibration.py needs pymc_bnn.metrics: {exc}") from None
    return metrics


def quick_blas_one_thread() -> None:
    """--quick: NumPy's and SciPy's OpenBLAS on one thread for the rest of the process.

    OpenBLAS's idle threads wait for work by spinning; on a machine whose cores are
    busy (the test suite's two workers) the GP anchors' small solves then took 2-6 s
    of wall time where one thread takes 0.1-0.3 s (GPR on diabetes: 14 likelihood
    evaluations). A full run keeps the libraries' defaults: it measures fit times.
    """
    import scipy.linalg  # noqa: F401  (load SciPy's own OpenBLAS before the limit)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def main(argv=None) -> int:
    parser = _common.base_parser(__doc__.split("\n\n")[0], NAME)
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="number of seeds: --seed, --seed + 1, ... (default 3; --quick 1)",
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=None,
        choices=[*CLS_DATASETS, *REG_DATASETS],
        help="data sets to run (classification and/or regression names; "
        "default all, --quick: iris small diabetes)",
    )
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument(
        "--bnn",
        action="append",
        type=_bnn_arg,
        default=[],
        metavar="NAME=JSON",
        help="extra BNN variant, e.g. s10='{\"prior_sigma\": 10}' "
        "(repeatable; run for each architecture)",
    )
    parser.add_argument(
        "--n-tasks",
        type=int,
        default=None,
        help="tasks of the hierarchical section (default 18; --quick 4)",
    )
    parser.add_argument(
        "--md", type=Path, default=None, help="markdown output (default: --out with suffix .md)"
    )
    parser.add_argument(
        "--figure",
        default=None,
        help="reliability-diagram PNG ('none' to skip; default "
        "docs/figures/calibration_reliability.png for a full run "
        "with the default --out, otherwise <out stem>"
        "_reliability.png next to --out)",
    )
    args = parser.parse_args(argv)
    n_seeds = args.seeds if args.seeds is not None else (1 if args.quick else 3)
    args.seeds_list = [args.seed + i for i in range(n_seeds)]
    if args.datasets is None:
        args.cls_datasets = list(QUICK_CLS if args.quick else CLS_DATASETS)
        args.reg_datasets = list(QUICK_REG if args.quick else REG_DATASETS)
    else:
        args.cls_datasets = [d for d in args.datasets if d in CLS_DATASETS]
        args.reg_datasets = [d for d in args.datasets if d in REG_DATASETS]
    args.n_tasks = args.n_tasks or (4 if args.quick else 18)
    args.mlp_max_iter = 300 if args.quick else 3000
    args.mlp_reg_max_iter = 300 if args.quick else 5000
    md_path = args.md or Path(args.out).with_suffix(".md")
    fig_path = figure_path(args.figure, Path(args.out), quick=args.quick)

    M = _import_metrics()
    from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor

    if args.quick:
        quick_blas_one_thread()

    variants = bnn_variants(args)
    info = _common.machine_info()
    _common.print_header("Calibration: default BNNs beside anchors (medians over seeds)", info)
    t_start = time.perf_counter()
    wc = WarningCounter()
    config = {
        "quick": args.quick,
        "seed": args.seed,
        "seeds": args.seeds_list,
        "sections": args.sections,
        "classification_datasets": args.cls_datasets,
        "regression_datasets": args.reg_datasets,
        "datasets": args.cls_datasets + args.reg_datasets,
        "n_tasks": args.n_tasks,
        "bnn_variants": variants,
        "quick_bnn_overrides": QUICK_BNN if args.quick else None,
        "mlp_max_iter": args.mlp_max_iter,
        "mlp_regressor_max_iter": args.mlp_reg_max_iter,
        "blas_threads": 1 if args.quick else "library default",
        "gpc_max_train": GPC_MAX_TRAIN,
        "ece_bins": ECE_BINS,
        "package_defaults": {
            "BayesianMLPClassifier": params_of(BayesianMLPClassifier()),
            "BayesianMLPRegressor": params_of(BayesianMLPRegressor()),
        },
        "dataset_descriptions": {
            **{d: CLS_DATASETS[d] for d in args.cls_datasets},
            **{d: REG_DATASETS[d] for d in args.reg_datasets},
        },
        "out": str(args.out),
        "md": str(md_path),
        "figure": None if fig_path is None else str(fig_path),
    }
    rows: list[dict] = []
    section_s: dict[str, float] = {}
    tables: dict[str, str] = {}
    summary: list[str] = []
    wins = paired = reg_crit = hier_crit = None
    figure_data: dict = {}

    if "classification" in args.sections and args.cls_datasets:
        t0 = time.perf_counter()
        cls_rows = run_classification(args, variants, M, wc, figure_data, config)
        section_s["classification"] = time.perf_counter() - t0
        rows += cls_rows
        wins = classification_wins(cls_rows, variants, args.cls_datasets)
        tables["classification"] = classification_table(cls_rows)
        ood = ood_table(cls_rows)
        if ood:
            tables["ood"] = ood
        tables["wins"] = wins_table(wins, args.cls_datasets)
        paired = paired_comparison(cls_rows, args.cls_datasets)
        tables["paired"] = paired_table(paired)
        for w in wins:
            summary.append(
                f"{w['variant']} {w['hidden']}: meets the criteria on "
                f"{w['n_meets']} of {w['n_datasets']} datasets; NLL <= 5-MLP "
                f"ensemble on {w['n_nll_le_ensemble']} of {w['n_datasets']}"
            )
        for p in paired:
            summary.append(
                f"{p['model']}, seed by seed: NLL <= MLP's on most seeds on "
                f"{p['n_nll_majority']} of {len(p['datasets'])} datasets, ECE on "
                f"{p['n_ece_majority']}; NLL <= the 5-MLP ensemble's on most "
                f"seeds on {p['n_ensemble_nll_majority']}"
            )
        skipped = sorted({r["dataset"] for r in cls_rows if r["status"] == "skipped"})
        if skipped:
            summary.append(f"GPC skipped (n_train > {GPC_MAX_TRAIN}) on: {', '.join(skipped)}")
    if "regression" in args.sections and args.reg_datasets:
        t0 = time.perf_counter()
        reg_rows = run_regression(args, variants, M, wc, config)
        section_s["regression"] = time.perf_counter() - t0
        rows += reg_rows
        reg_crit = regression_criteria(reg_rows, args.reg_datasets)
        tables["regression"] = regression_table(reg_rows)
        tables["regression_criteria"] = regression_criteria_table(reg_crit, args.reg_datasets)
        for c in reg_crit:
            summary.append(
                f"regression {c['model']}: "
                f"{'meets' if c['meets'] else 'does not meet'} the criteria"
            )
    if "hierarchical" in args.sections:
        t0 = time.perf_counter()
        hier_rows = run_hierarchical(args, variants, M, wc, config)
        section_s["hierarchical"] = time.perf_counter() - t0
        rows += hier_rows
        hier_crit = hierarchical_criteria(hier_rows, variants)
        tables["hierarchical"] = hierarchical_table(hier_rows, hier_crit)
        for c in hier_crit:
            summary.append(
                f"hierarchical {c['variant']}: "
                f"{'meets' if c['meets'] else 'does not meet'} the criteria "
                f"(accuracy {c['hierarchical_accuracy']:.3f} vs separate "
                f"{c['separate_accuracy'] or float('nan'):.3f}, "
                f"fit {c['fit_s']:.1f} s)"
            )
        for r in hier_rows:  # how each hierarchical fit's own diagnostics judged it
            fits = [p for p in r.get("per_seed", []) if p.get("inference")]
            if fits:
                summary.append(
                    f"{r['model']}: "
                    + "; ".join(
                        f"seed {p['seed']} {p['inference']}"
                        + (
                            ""
                            if p.get("max_rhat") is None
                            else f" ({p['nuts_sampler']}) R-hat {p['max_rhat']:.3f}, bulk ESS "
                            f"{p['min_ess_bulk']:.0f}, {p['n_divergences']} divergences"
                        )
                        + ("" if p.get("converged") else ", warned")
                        for p in fits
                    )
                )

    figure_datasets = []
    if fig_path is not None and figure_data:
        try:
            figure_datasets = make_figure(
                fig_path, figure_data, args.cls_datasets, args.seeds_list[0]
            )
        except Exception as exc:  # noqa: BLE001 - the numbers matter more than the picture
            log(f"figure failed: {exc!r}")
    config["figure_datasets"] = figure_datasets

    captions = {
        "classification": "Classification (medians over seeds; NLL, Brier, ECE: lower is better):",
        "ood": "Out-of-distribution (digits 0-4 vs 5-9; AUROC of the uncertainty, higher "
        "is better):",
        "wins": "Wins of each BNN over the MLP of the same architecture (✓: NLL ≤, ECE ≤ "
        "and accuracy ≥ MLP − 0.01, and on noisy_label NLL ≤ logistic regression; "
        "✗ lists the failed checks):",
        "paired": "Seed by seed (each BNN and the MLP of its architecture on the same "
        "split; the seeds' shared noise cancels):",
        "regression": "Regression (medians over seeds):",
        "regression_criteria": "Regression criteria (BNN):",
        "hierarchical": f"Hierarchical: rotated moons, {args.n_tasks} tasks (medians over seeds):",
    }
    # the JSON's "table" starts with a table (the first section's), the others follow
    # with a caption line each
    parts = []
    for i, (key, text) in enumerate(tables.items()):
        parts.append(text if i == 0 else f"{captions[key]}\n\n{text}")
    table = "\n\n".join(parts)
    notes = [
        (
            "BNNs are the package defaults as a user would call them: only hidden_layer_sizes "
            "and random_state are set (plus any --bnn variant parameters, and in --quick the "
            f"overrides {QUICK_BNN}); config.*_estimators holds get_params() of each."
        ),
        (
            "Classification: make_pipeline(StandardScaler(), model), stratified 50/50 "
            "train_test_split(random_state=seed); metrics from pymc_bnn.metrics: NLL (mean), "
            "Brier (sklearn) = scikit-learn's brier_score_loss (binary: mean squared error "
            "of the positive-class probability, in [0, 1]; 3+ classes: summed over classes, "
            "in [0, 2]; results before this note used the sum on binary sets too, 2x), ECE "
            "(15 equal-width bins, top label); mean conf. = "
            "mean top-class probability; fit s = wall clock of pipeline.fit (BNN: includes "
            "model build and any compilation not cached from an earlier fit of the same "
            "structure)."
        ),
        "Wins compare medians over seeds; GPC runs only where n_train <= 600.",
        (
            "OOD (digits_ood): AUROC of predictive entropy (BNN: predict_uncertainty()['entropy'];"
            " others: entropy of predict_proba) and of mutual information (BNNs only) for "
            "telling the test digits 0-4 (negative) from all digits 5-9 (positive)."
        ),
        (
            "Regression: 70/30 split, StandardScaler on X; the BNN standardises y itself. "
            "BNN and GPR use their predictive std (BNN: predict(return_std=True); its "
            "predictive is a mixture over draws, so Gaussian NLL and crps_gaussian with its std "
            "are approximations) and BNN intervals come from predict_interval(coverage=0.9); "
            "MLP and RidgeCV get a homoscedastic sigma = RMSE of 5-fold cross_val_predict "
            "residuals (KFold shuffled with the seed) on the training set, intervals mean ± "
            "1.645 sigma."
        ),
        (
            "Hierarchical: make_rotated_moons(n_tasks, random_state=seed) (already standardised"
            " per task, no scaler); default BayesianMLPClassifier(random_state=seed) fit with "
            "groups= and predicted with groups=, vs one default fit per task (fit s: the sum),"
            " test predictions pooled over tasks."
        ),
        (
            f"ConvergenceWarnings (sklearn's, and the BNNs' when ADVI stopped before the "
            f"ELBO levelled off) and the BNNs' SamplingWarnings (NUTS: divergences, R-hat > "
            f"1.01 or ESS < 100 per chain of the network's outputs at 50 training points) "
            f"were silenced and counted: {wc.counts or 'none'}; BNN ones "
            f"on: { {k: v for k, v in wc.where.items() if k.startswith('BNN')} or 'none' }"
        ),
        (
            f"2 shared cores; per-section wall time (s): "
            f"{ {k: round(v, 1) for k, v in section_s.items()} }"
        ),
    ]
    elapsed = time.perf_counter() - t_start

    print("\n" + table + "\n")
    for line in summary:
        print(line)
    print(
        f"\nsections (s): {', '.join(f'{k} {v:.0f}' for k, v in section_s.items())}; "
        f"total {elapsed:.0f} s"
    )
    payload = {
        "benchmark": NAME,
        "machine": info,
        "config": config,
        "rows": rows,
        "table": table,
        "tables": tables,
        "wins": wins,
        "paired": paired,
        "regression_criteria": reg_crit,
        "hierarchical_criteria": hier_crit,
        "summary": summary,
        "convergence_warnings": wc.counts,
        "convergence_warnings_where": wc.where,
        "section_seconds": section_s,
        "notes": notes,
        "elapsed_s": elapsed,
    }
    path = _common.write_json(args.out, payload)
    md = _markdown(info, config, tables, captions, summary, notes, elapsed)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(md)
    print(f"\nwrote {path}, {md_path}" + (f", {fig_path}" if figure_datasets else ""))
    return 0


def _markdown(info, config, tables, captions, summary, notes, elapsed) -> str:
    v = info["versions"]
    lines = [
        "# Calibration benchmark (`benchmarks/calibration.py`)",
        "",
        (
            f"{'quick' if config['quick'] else 'full'} run, seeds {config['seeds']}, "
            f"{elapsed / 60:.1f} min; {info['cpu_model']}, {info['cores_usable']} cores, load "
            f"{info['load_avg_1_5_15']}; pymc {v['pymc']}, pytensor {v['pytensor']}, "
            f"scikit-learn {v['sklearn']}, pymc_bnn {v['pymc_bnn']}; {info['timestamp_utc']}."
        ),
        "",
        "Package defaults of `BayesianMLPClassifier` at this run (the BNN rows set only "
        "`hidden_layer_sizes` and `random_state`"
        + (f", plus the --quick overrides {QUICK_BNN}" if config["quick"] else "")
        + "): "
        + ", ".join(
            f"`{k}={val!r}`"
            for k, val in config["package_defaults"]["BayesianMLPClassifier"].items()
            if k not in ("hidden_layer_sizes", "random_state")
        ),
        "",
    ]
    for key, text in tables.items():
        lines += [f"**{captions[key]}**", "", text, ""]
    if summary:
        lines += ["```", *summary, "```", ""]
    lines += ["Notes:", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
