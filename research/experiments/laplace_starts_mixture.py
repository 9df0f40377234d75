"""Experiment: the default regressor's Laplace half as an ensemble of Laplace fits from
several starts (a mixture of Laplace approximations, after Eschenhagen et al. 2021),
on the first UCI splits. Each extra start is ``inference="laplace"`` with its own
``random_state`` (so its own MAP and evidence), at the temperature the default chose
for its Laplace half (no folds of its own). Test LL (mean over test rows, y units) of:
the default; its Laplace half alone; the Laplace starts' equal mixture; the default's
ADVI half with that mixture (half the weight each, or the default's stacked Laplace
share split equally among the starts); and all members equally weighted.
Usage::

    python research/experiments/laplace_starts_mixture.py SETS N_SPLITS N_EXTRA OUT.json [FIRST]

(``FIRST``: the first split, default 0.) "The default" is the regressor's with one
Laplace fit (``_LAPLACE_STARTS = 1``, set below): the experiment's extra starts are its
own, as when it was run, before the default took three Laplace modes itself.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy as np  # noqa: E402
from scipy.special import logsumexp  # noqa: E402
from scipy.stats import norm  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from uci_regression import DATA_DIR, load_split  # noqa: E402

from pymc_bnn import BayesianMLPRegressor  # noqa: E402
from pymc_bnn.policy._settings import MIXTURE  # noqa: E402

BayesianMLPRegressor._LAPLACE_STARTS = 1  # the default's Laplace half: one fit


def draw_logpdf(reg, Z, y):
    """Per-draw log density of y (y units), shape (n_draws, n_rows)."""
    mean, sd = reg.predictive_.sample_normal(Z)
    return norm.logpdf((y - reg.y_mean_) / reg.y_scale_, mean, sd) - np.log(reg.y_scale_)


def mix(*parts, weights=None):
    """log density of the mixture of the parts (each (n_draws, n_rows): its own
    equal mixture over draws), weighted ``weights`` (default equal)."""
    comps = [logsumexp(p, axis=0) - np.log(p.shape[0]) for p in parts]
    w = np.full(len(comps), 1 / len(comps)) if weights is None else np.asarray(weights)
    return logsumexp(np.stack(comps) + np.log(w)[:, None], axis=0)


def ensemble_scores(advi, laps, laplace_weight=0.5) -> dict:
    """Test LL of the Laplace starts (``laps``: each (n_draws, n_rows) per-draw log
    densities, the default's half first) alone and in mixtures with ``advi`` (the
    default's ADVI half, or None where it kept Laplace alone); ``laplace_weight``: the
    default's stacked Laplace share."""
    rec = {
        "laplace0": float(mix(laps[0]).mean()),
        "laplace_each": [float(mix(p).mean()) for p in laps],
        "laplace_ensemble": float(mix(*laps).mean()),
    }
    if advi is not None:
        k = len(laps)
        rec["advi"] = float(mix(advi).mean())
        rec["advi_half_ensemble_half"] = float(
            mix(advi, *laps, weights=[0.5] + [0.5 / k] * k).mean()
        )
        rec["all_equal"] = float(mix(advi, *laps).mean())
        w = laplace_weight
        rec["advi_stacked_ensemble"] = float(mix(advi, *laps, weights=[1 - w] + [w / k] * k).mean())
        for j in range(2, k):  # the first j starts only
            rec[f"advi_stacked_ensemble_{j}"] = float(
                mix(advi, *laps[:j], weights=[1 - w] + [w / j] * j).mean()
            )
    return rec


def main():
    sets, n_splits, n_extra, out = (
        sys.argv[1].split(","),
        int(sys.argv[2]),
        int(sys.argv[3]),
        sys.argv[4],
    )
    first = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    rows = []
    for name in sets:
        for split in range(first, first + n_splits):
            X, y, Xt, yt = load_split(DATA_DIR, name, split)
            scaler = StandardScaler().fit(X)
            Z, Zt = scaler.transform(X), scaler.transform(Xt)
            t0 = time.perf_counter()
            reg = BayesianMLPRegressor((50,), random_state=split).fit(Z, y)
            fit_s = time.perf_counter() - t0
            lp = draw_logpdf(reg, Zt, yt)
            rec = {
                "dataset": name,
                "split": split,
                "inference": reg.inference_,
                "default": float(reg.log_predictive_density(Zt, yt).mean()),
                "default_check": float(mix(lp).mean()),
                "fit_s": fit_s,
            }
            if reg.inference_ == MIXTURE:
                n_a = reg.mixture_["n_draws"][0]
                advi, lap0 = lp[:n_a], lp[n_a:]
                t_lap = reg.mixture_["laplace_temperature"]
                rec["laplace_weight"] = reg.mixture_.get("laplace_weight", 0.5)
            elif reg.inference_ == "laplace":
                advi, lap0, t_lap = None, lp, reg.posterior_temperature_
            else:
                rows.append(rec)
                print(json.dumps(rec), flush=True)
                continue
            t0 = time.perf_counter()
            extra = [
                draw_logpdf(
                    BayesianMLPRegressor(
                        (50,),
                        inference="laplace",
                        posterior_temperature=t_lap,
                        random_state=10_000 + 100 * split + k,
                    ).fit(Z, y),
                    Zt,
                    yt,
                )
                for k in range(n_extra)
            ]
            rec["extra_s"] = time.perf_counter() - t0
            rec.update(ensemble_scores(advi, [lap0, *extra], rec.get("laplace_weight", 0.5)))
            rows.append(rec)
            print(json.dumps(rec), flush=True)
            json.dump(
                {"experiment": __doc__, "argv": sys.argv[1:], "rows": rows},
                open(out, "w"),
                indent=1,
            )


if __name__ == "__main__":
    main()
