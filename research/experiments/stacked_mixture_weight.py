"""Experiment: the regressor's ADVI + Laplace mixture with its weight stacked on the
held-out folds, against the three-way check of the default (equal mixture unless a
half alone is clearly better), on the UCI splits.

One ``inference="advi+laplace"`` fit per split (the same folds, fold fits and kept
fits as the default's mixture) gives every rule's inputs: both halves' per-row NLL on
the folds at every temperature, and both kept halves' per-row NLL on the test rows at
every temperature (``SCORE_DRAWS`` draws each). Rules, each scored on the test rows:

- ``threeway``: the default's check (``FitSettingsMixin._check_mixture``);
- ``stacked``: the Laplace share ``w`` of :data:`LINEAR_WEIGHTS` (0 to 1) and both
  temperatures chosen jointly for the folds' log score (Yao et al. 2018's stacking);
- ``stacked_checked``: ``w`` in 0.1 ... 0.9 chosen the same way, then the default's
  check of each half alone against that mixture.

With the tables saved (``TABLES_DIR`` below), ``score`` compares more rules without
refitting: the Laplace share stacked over tenths or a finer grid (0.02 ... 0.98 and
the ends), with or without the check, with each half at its own temperature, or at
the equal mixture's pair.

Test LL is a mean over test rows in y units. Usage::

    python research/experiments/stacked_mixture_weight.py SETS SPLITS OUT.json [TABLES_DIR]

    python research/experiments/stacked_mixture_weight.py score TABLES_DIR OUT.json

``SPLITS``: ``a:b`` (range) or a count. ``TABLES_DIR``: where to save each split's
per-row tables (``.npz``: the folds' and the test rows' NLL of both halves at every
temperature), so that other rules can be scored without refitting.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy as np  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from uci_regression import DATA_DIR, load_split  # noqa: E402

from pymc_bnn import BayesianMLPRegressor  # noqa: E402
from pymc_bnn.policy._settings import MIXTURE, _index  # noqa: E402
from pymc_bnn.policy._tempering import choose_temperature, heldout_nll_table  # noqa: E402
from pymc_bnn.predictive._linear import LINEAR_WEIGHTS  # noqa: E402


class Capturing(BayesianMLPRegressor):
    """The regressor, keeping the fold scores and kept fits of its mixture."""

    def _check_mixture(self, halves, alone, n_rows):
        self.captured_halves_, self.captured_rows_ = halves, n_rows
        return super()._check_mixture(halves, alone, n_rows)

    def _set_posterior(self, posterior, predict_seed, *, laplace=None, linear=None):
        self.captured_fits_ = {"advi": posterior, "laplace": laplace["posterior"]}
        return super()._set_posterior(posterior, predict_seed, laplace=laplace, linear=linear)


def weighted_grid(a, b, weights):
    """NLL of ``(1 - w) p_a + w p_b`` per (weight, T_a, T_b, row); a, b: (n_T, rows)."""
    w = np.asarray(weights, dtype=float)[:, None, None, None]
    with np.errstate(divide="ignore"):
        return -np.logaddexp(np.log1p(-w) - a[None, :, None, :], np.log(w) - b[None, None, :, :])


def stacked_choice(halves, n_rows, weights):
    """(w, i, j) with the smallest held-out NLL summed over the folds (ties: the
    first found, weights in order given)."""
    total = 0.0
    for fa, fb in zip(halves["advi"], halves["laplace"], strict=True):
        total = total + fa.scale * weighted_grid(fa.nll, fb.nll, weights).sum(axis=-1)
    total = total / n_rows
    k = int(np.argmin(total))
    return (*np.unravel_index(k, total.shape), total)


TENTHS = tuple(round(0.1 * k, 1) for k in range(11))
FINE = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0)


def score_tables(tables_dir: Path) -> list[dict]:
    """Every rule's test LL on each split, from the saved per-row tables (``score``)."""
    out = []
    for path in sorted(tables_dir.glob("*.npz")):
        d = np.load(path)
        k = sum(1 for f in d.files if f.startswith("fold") and f.endswith("_advi"))
        folds = [(d[f"fold{i}_advi"], d[f"fold{i}_laplace"], d["scales"][i]) for i in range(k)]
        n, ta, tl = int(d["n_rows"]), d["test_advi"], d["test_laplace"]

        def fold_total(weights):
            return sum(s * weighted_grid(a, b, weights).sum(axis=-1) for a, b, s in folds) / n

        def test_ll(w, i, j):
            return float(-weighted_grid(ta[i : i + 1], tl[j : j + 1], [w]).mean())

        own = {
            m: int(
                np.argmin(
                    sum(
                        s * x.sum(axis=-1)
                        for x, s in ((f[0 if m == "advi" else 1], f[2]) for f in folds)
                    )
                )
            )
            for m in ("advi", "laplace")
        }
        rec = {
            "dataset": path.stem.rsplit("_", 1)[0],
            "split": int(path.stem.rsplit("_", 1)[1]),
            "advi": test_ll(0.0, own["advi"], 0),
            "laplace": test_ll(1.0, 0, own["laplace"]),
        }

        def kept(w, i, j):
            """The default's check of each half alone against the mixture (w, i, j)."""
            mixed = np.concatenate(
                [weighted_grid(a[i : i + 1], b[j : j + 1], [w])[0, 0, 0] for a, b, _ in folds]
            )
            scale = np.concatenate([np.full(a.shape[1], s) for a, _, s in folds])
            choice, margin = "mixture", 0.0
            for m, col in (("advi", 0), ("laplace", 1)):
                alone = np.concatenate([f[col][own[m]] for f in folds])
                diff = mixed - alone
                mean = np.average(diff, weights=scale)
                se = np.sqrt(np.average((diff - mean) ** 2, weights=scale) / diff.size)
                if n > 100 and mean * n > 4 and mean > 2 * se and mean > margin:
                    choice, margin = m, mean
            return choice

        def rule(weights, check, pair=None):
            tot = fold_total(weights)
            if pair is None:
                w, i, j = np.unravel_index(np.argmin(tot), tot.shape)
            else:
                (i, j), w = pair, int(np.argmin(tot[:, pair[0], pair[1]]))
            choice = kept(weights[w], i, j) if check else "mixture"
            return (
                rec[choice] if choice != "mixture" else test_ll(weights[w], i, j),
                weights[w] if choice == "mixture" else float(choice == "laplace"),
            )

        rec["threeway"], _ = rule((0.5,), True)
        rec["stacked_tenths"], rec["w_stacked_tenths"] = rule(TENTHS, False)
        rec["stacked_fine"], rec["w_stacked_fine"] = rule(FINE, False)
        rec["stacked_checked"], rec["w_stacked_checked"] = rule(FINE[1:-1], True)
        rec["own_temperatures"], _ = rule(FINE, False, (own["advi"], own["laplace"]))
        _, i, j = np.unravel_index(np.argmin(fold_total((0.5,))), (1, len(ta), len(tl)))
        rec["equal_pair_checked"], _ = rule(FINE[1:-1], True, (i, j))
        out.append(rec)
    return out


RULES = (
    "advi",
    "laplace",
    "threeway",
    "stacked_tenths",
    "stacked_fine",
    "stacked_checked",
    "own_temperatures",
    "equal_pair_checked",
)


def score_main(tables_dir: Path, out: str) -> None:
    rows = score_tables(tables_dir)
    summary = {}
    for name in dict.fromkeys(r["dataset"] for r in rows):
        rs = [r for r in rows if r["dataset"] == name]
        summary[name] = {"splits": len(rs)} | {
            rule: float(np.mean([r[rule] for r in rs])) for rule in RULES
        }
        for rule in RULES[3:]:
            d = np.array([r[rule] - r["threeway"] for r in rs])
            summary[name][f"{rule}_minus_threeway"] = [
                float(d.mean()),
                float(d.std(ddof=1) / np.sqrt(d.size)),
                int((d > 0).sum()),
            ]
        summary[name]["mean_laplace_share_checked"] = float(
            np.mean([r["w_stacked_checked"] for r in rs])
        )
        print(name, json.dumps(summary[name]))
    json.dump(
        {"experiment": __doc__, "argv": sys.argv[1:], "summary": summary, "rows": rows},
        open(out, "w"),
        indent=1,
    )


def main():
    if sys.argv[1] == "score":
        return score_main(Path(sys.argv[2]), sys.argv[3])
    sets, splits, out = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    splits = range(*map(int, splits.split(":"))) if ":" in splits else range(int(splits))
    rows = []
    for split in splits:
        for name in sets:
            X, y, Xt, yt = load_split(DATA_DIR, name, split)
            scaler = StandardScaler().fit(X)
            Z, Zt = scaler.transform(X), scaler.transform(Xt)
            t0 = time.perf_counter()
            reg = Capturing((50,), inference="advi+laplace", random_state=split).fit(Z, y)
            fit_s = time.perf_counter() - t0
            halves, n_rows = reg.captured_halves_, reg.captured_rows_
            yt_model = (yt - reg.y_mean_) / reg.y_scale_
            log_scale = np.log(reg.y_scale_)
            test = {
                m: heldout_nll_table(reg.captured_fits_[m], Zt, yt_model, seed=12345) + log_scale
                for m in ("advi", "laplace")
            }

            def ll(w, i, j):
                return float(
                    -weighted_grid(test["advi"][i : i + 1], test["laplace"][j : j + 1], [w]).mean()
                )

            alone = {m: choose_temperature([f.sums() for f in halves[m]], n_rows) for m in halves}
            rec = {
                "dataset": name,
                "split": split,
                "fit_s": fit_s,
                "advi": ll(0.0, _index(alone["advi"]), 0),
                "laplace": ll(1.0, 0, _index(alone["laplace"])),
            }
            # the default's three-way check
            choice, pair, _ = reg._check_mixture(halves, alone, n_rows)
            if choice == MIXTURE:
                rec["threeway"] = ll(0.5, _index(pair["advi"]), _index(pair["laplace"]))
            else:
                rec["threeway"] = rec[choice]
            rec["threeway_choice"] = choice
            # stacking over the whole grid
            w, i, j, _ = stacked_choice(halves, n_rows, LINEAR_WEIGHTS)
            rec["stacked_weight"] = float(LINEAR_WEIGHTS[w])
            rec["stacked"] = ll(LINEAR_WEIGHTS[w], i, j)
            # stacking inside (0, 1), then the default's check of each half alone
            inner = LINEAR_WEIGHTS[1:-1]
            w, i, j, total = stacked_choice(halves, n_rows, inner)
            rec["stacked_inner_weight"] = float(inner[w])
            rec["stacked_inner"] = ll(inner[w], i, j)
            # the check, against the stacked mixture: drop it for a half alone on the
            # default's rule (same thresholds), from the fold differences
            mixed_rows, alone_rows, scale = [], {"advi": [], "laplace": []}, []
            for fa, fb in zip(halves["advi"], halves["laplace"], strict=True):
                mixed_rows.append(
                    weighted_grid(fa.nll[i : i + 1], fb.nll[j : j + 1], [inner[w]])[0, 0, 0]
                )
                alone_rows["advi"].append(fa.nll[_index(alone["advi"])])
                alone_rows["laplace"].append(fb.nll[_index(alone["laplace"])])
                scale.append(np.full(fa.nll.shape[1], fa.scale))
            mixed_rows, scale = np.concatenate(mixed_rows), np.concatenate(scale)
            kept, margin = "stacked", 0.0
            for m in ("advi", "laplace"):
                diff = mixed_rows - np.concatenate(alone_rows[m])
                mean = np.average(diff, weights=scale)
                se = np.sqrt(np.average((diff - mean) ** 2, weights=scale) / diff.size)
                if n_rows > 100 and mean * n_rows > 4 and mean > 2 * se and mean > margin:
                    kept, margin = m, mean
            rec["stacked_checked_choice"] = kept
            rec["stacked_checked"] = rec["stacked_inner"] if kept == "stacked" else rec[kept]
            if len(sys.argv) > 4:
                np.savez_compressed(
                    Path(sys.argv[4]) / f"{name}_{split}.npz",
                    n_rows=n_rows,
                    test_advi=test["advi"],
                    test_laplace=test["laplace"],
                    **{f"fold{k}_{m}": f.nll for m in halves for k, f in enumerate(halves[m])},
                    scales=[f.scale for f in halves["advi"]],
                )
            rows.append(rec)
            print(json.dumps(rec), flush=True)
            json.dump(
                {"experiment": __doc__, "argv": sys.argv[1:], "rows": rows},
                open(out, "w"),
                indent=1,
            )


if __name__ == "__main__":
    main()
