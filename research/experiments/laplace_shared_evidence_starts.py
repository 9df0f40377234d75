"""Experiment: extra Laplace starts that share the first start's evidence. The default
regressor is fit; its Laplace half's hyperparameters (per-layer prior scales, noise sd)
are kept, and each extra start finds a new MAP from its own random weights under them
(L-BFGS-B, then ``fit_laplace(start=)``'s Gauss-Newton polish and one curvature) with
no evidence rounds of its own: a new mode at a fraction of a full Laplace fit's cost.
Test LL (mean over test rows, y units) of the default, of its Laplace half with the
extra starts, and of all fits weighted equally, as in ``laplace_starts_mixture.py``;
the seconds of the extra starts. Usage::

    python research/experiments/laplace_shared_evidence_starts.py SETS N_SPLITS N_EXTRA OUT.json
"""

import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from laplace_starts_mixture import draw_logpdf, ensemble_scores  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from uci_regression import DATA_DIR, load_split  # noqa: E402

import pymc_bnn.inference.laplace as lap  # noqa: E402
from pymc_bnn import BayesianMLPRegressor  # noqa: E402
from pymc_bnn.network._flat import compile_mode, layer_index  # noqa: E402
from pymc_bnn.network.model import initial_sds  # noqa: E402
from pymc_bnn.policy._settings import MIXTURE  # noqa: E402

REAL = lap.fit_laplace
CALLS = []


def recording(X, y, **kw):
    out = REAL(X, y, **kw)
    CALLS.append((X.shape[0], out[0]))
    return out


def shared(first):
    def fit(
        X,
        y,
        *,
        layer_shapes,
        activation="tanh",
        random_state=None,
        likelihood="normal",
        start=None,
        hidden_prior_sigmas=None,
    ):
        shapes = tuple((int(a), int(b)) for a, b in layer_shapes)
        rng = np.random.default_rng(random_state)
        theta = np.concatenate(
            [
                rng.normal(0.0, sd, size=size)
                for a, b in shapes
                for sd, size in zip(initial_sds(a), (a * b, b))
            ]
        )
        d = (1.0 / np.square(np.asarray(first.prior_sigmas)))[layer_index(shapes)]
        beta = 1.0 / first.noise_sd**2
        vg = lap._value_grad(shapes, activation, compile_mode())
        n = X.shape[0]

        def fun(t):
            value, grad, _ = vg(t, X, y, beta, d)
            return float(value) / n, np.asarray(grad, dtype=np.float64) / n

        res = minimize(
            fun,
            theta,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 2 * lap.MAX_ITER, "ftol": 1e-12, "gtol": 1e-9},
        )
        return REAL(
            X,
            y,
            layer_shapes=shapes,
            activation=activation,
            likelihood=likelihood,
            start=dataclasses.replace(first, theta=res.x),
        )

    return fit


def main():
    sets, n_splits, n_extra, out = (
        sys.argv[1].split(","),
        int(sys.argv[2]),
        int(sys.argv[3]),
        sys.argv[4],
    )
    rows = []
    for name in sets:
        for split in range(n_splits):
            X, y, Xt, yt = load_split(DATA_DIR, name, split)
            scaler = StandardScaler().fit(X)
            Z, Zt = scaler.transform(X), scaler.transform(Xt)
            CALLS.clear()
            lap.fit_laplace = recording
            t0 = time.perf_counter()
            reg = BayesianMLPRegressor((50,), random_state=split).fit(Z, y)
            fit_s = time.perf_counter() - t0
            lap.fit_laplace = REAL
            rec = {
                "dataset": name,
                "split": split,
                "inference": reg.inference_,
                "default": float(reg.log_predictive_density(Zt, yt).mean()),
                "fit_s": fit_s,
            }
            if reg.inference_ == "advi":
                rows.append(rec)
                continue
            first = [g for n_rows, g in CALLS if n_rows == Z.shape[0]][-1]
            lp = draw_logpdf(reg, Zt, yt)
            if reg.inference_ == MIXTURE:
                n_a = reg.mixture_["n_draws"][0]
                advi, lap0, t_lap = lp[:n_a], lp[n_a:], reg.mixture_["laplace_temperature"]
            else:
                advi, lap0, t_lap = None, lp, reg.posterior_temperature_
            lap.fit_laplace = shared(first)
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
            lap.fit_laplace = REAL
            rec.update(ensemble_scores(advi, [lap0, *extra]))
            rows.append(rec)
            print(json.dumps(rec), flush=True)
            json.dump(
                {"experiment": __doc__, "argv": sys.argv[1:], "rows": rows},
                open(out, "w"),
                indent=1,
            )


if __name__ == "__main__":
    main()
