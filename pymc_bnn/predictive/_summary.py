"""Summaries of class-probability draws: the posterior predictive probabilities, their
spread, and the total and epistemic (mutual information) uncertainty. Plain NumPy, no
package imports: the predictive and the metrics both use it."""

from __future__ import annotations

import numpy as np

__all__ = ["summarize_proba", "xlogx"]


def summarize_proba(proba: np.ndarray) -> dict[str, np.ndarray]:
    """Summaries of class-probability draws.

    Parameters
    ----------
    proba : array of shape (n_draws, n_points, n_classes)

    Returns
    -------
    dict with
        ``mean`` (n_points, n_classes): posterior predictive probabilities;
        ``std`` (n_points, n_classes): their standard deviation over draws;
        ``entropy`` (n_points,): entropy of ``mean`` in nats (total uncertainty);
        ``mutual_info`` (n_points,): ``entropy`` minus the mean entropy of each draw
        (epistemic uncertainty, the BALD score), >= 0.
    """
    mean = proba.mean(axis=0)
    entropy = -xlogx(mean).sum(axis=-1)
    expected_entropy = -xlogx(proba).sum(axis=-1).mean(axis=0)
    return {
        "mean": mean,
        "std": proba.std(axis=0),
        "entropy": entropy,
        "mutual_info": np.maximum(entropy - expected_entropy, 0.0),
    }


def xlogx(p: np.ndarray) -> np.ndarray:
    """``p log p``, 0 where ``p`` is 0 (the limit)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(p), 0.0)
