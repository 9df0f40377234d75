"""Synthetic benchmark data sets (generated locally; nothing is downloaded)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_moons
from sklearn.preprocessing import scale

__all__ = ["make_rotated_moons"]


def make_rotated_moons(
    n_tasks: int = 18,
    n_samples: int = 100,
    *,
    noise: float = 0.3,
    angle_sd: float = 90.0,
    train_fraction: float = 0.5,
    random_state: int | None = 0,
) -> dict[str, np.ndarray]:
    """Related classification tasks: two-moons data sets, each rotated differently.

    The multi-task benchmark of hierarchical BNNs (T. Wiecki, "Hierarchical Bayesian
    neural networks with informative priors"): every task draws ``n_samples`` points
    from ``make_moons(noise=noise)``, scales them to zero mean and unit variance, and
    rotates them by an angle drawn from Normal(0, ``angle_sd`` degrees). Each task is
    split at random into train and test rows, stratified by class.

    Parameters
    ----------
    n_tasks : int, default 18
    n_samples : int, default 100
        Points per task (train + test).
    noise : float, default 0.3
    angle_sd : float, default 90.0
        Standard deviation of the rotation angles, in degrees.
    train_fraction : float, default 0.5
    random_state : int, optional

    Returns
    -------
    dict with ``X_train`` (n_train, 2), ``y_train`` (n_train,), ``groups_train``
    (n_train,), ``X_test``, ``y_test``, ``groups_test`` and ``angles`` (n_tasks,)
    in degrees.

    Examples
    --------
    >>> data = make_rotated_moons(n_tasks=3, n_samples=20, random_state=0)
    >>> data["X_train"].shape, data["groups_test"].tolist()[:3]
    ((30, 2), [0, 0, 0])
    """
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(random_state)
    angles = rng.normal(0.0, angle_sd, size=n_tasks)
    parts: dict[str, list] = {k: [] for k in ("X_train", "X_test", "y_train", "y_test",
                                              "groups_train", "groups_test")}
    for task, angle in enumerate(angles):
        seed = int(rng.integers(2**31 - 1))
        X, y = make_moons(n_samples, noise=noise, random_state=seed)
        theta = np.radians(angle)
        rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        X = scale(X) @ rotation
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, train_size=train_fraction, stratify=y, random_state=seed
        )
        for key, value in (("X_train", X_tr), ("X_test", X_te), ("y_train", y_tr),
                           ("y_test", y_te)):
            parts[key].append(value)
        parts["groups_train"].append(np.full(len(y_tr), task))
        parts["groups_test"].append(np.full(len(y_te), task))
    out = {k: np.concatenate(v) for k, v in parts.items()}
    out["angles"] = angles
    return out
