"""Command line: ``python -m pymc_bnn demo`` — the two-moons demo."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["demo", "main"]


def moons_split(*, n_samples: int = 1000, noise: float = 0.2, random_state: int = 0):
    """The classic example's data: scaled two moons, split 50/50.

    Returns
    -------
    X_train, X_test, y_train, y_test
    """
    from sklearn.datasets import make_moons
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import scale

    X, y = make_moons(noise=noise, random_state=random_state, n_samples=n_samples)
    X = scale(X)
    return train_test_split(X, y, test_size=0.5, random_state=random_state)


def demo(out_dir: str | Path = "figures", *, inference: str = "advi", batch_size=None,
         random_state: int = 0, resolution: int = 100) -> dict:
    """Fit the moons classifier, print its test accuracy, write the figures.

    Returns
    -------
    dict with ``accuracy``, ``fit_seconds`` and the written ``figures`` paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_bnn import BayesianMLPClassifier
    from pymc_bnn.plotting import loss_curve, uncertainty_map

    X_train, X_test, y_train, y_test = moons_split(random_state=random_state)
    clf = BayesianMLPClassifier(inference=inference, batch_size=batch_size,
                                random_state=random_state)
    t0 = time.perf_counter()
    clf.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - t0
    accuracy = clf.score(X_test, y_test)
    print(f"{inference} fit in {fit_seconds:.1f} s; test accuracy: {accuracy:.1%}")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = {}
    for kind in ("mean", "std"):
        fig, ax = plt.subplots(figsize=(6.4, 5))
        uncertainty_map(clf, kind=kind, X=X_test, y=y_test, resolution=resolution, ax=ax,
                        title=f"Two moons, {inference}: posterior predictive {kind}")
        path = out / f"moons_{kind}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        figures[kind] = path
    if clf.loss_curve_.size:
        fig, ax = plt.subplots(figsize=(6.4, 4))
        loss_curve(clf.loss_curve_, ax=ax, label=inference)
        ax.set_title("Two moons: ELBO convergence")
        path = out / "moons_elbo.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        figures["elbo"] = path
    for name, path in figures.items():
        print(f"wrote {path}")
    return {"accuracy": accuracy, "fit_seconds": fit_seconds, "figures": figures}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pymc_bnn", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="fit two moons, print accuracy, write uncertainty maps")
    d.add_argument("--out", default="figures", help="output folder (default: figures)")
    d.add_argument("--inference", default="advi", choices=["advi", "fullrank_advi", "nuts"])
    d.add_argument("--batch-size", type=int, default=None)
    d.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(args.out, inference=args.inference, batch_size=args.batch_size,
             random_state=args.seed)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
