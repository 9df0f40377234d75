"""Synthetic benchmark data sets (generated locally; nothing is downloaded)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_moons
from sklearn.preprocessing import scale

__all__ = ["make_customers", "make_rotated_moons", "make_wages", "moons_split"]


def moons_split(*, n_samples: int = 1000, noise: float = 0.2, random_state: int = 0):
    """The classic example's data: scaled two moons, split 50/50.

    ``make_moons(n_samples, noise=noise)`` scaled to zero mean and unit variance, then
    split in half at random (the demo, the notebooks and the benchmarks use it).

    Returns
    -------
    X_train, X_test, y_train, y_test

    Examples
    --------
    >>> X_train, X_test, y_train, y_test = moons_split(n_samples=100)
    >>> X_train.shape, X_test.shape
    ((50, 2), (50, 2))
    """
    from sklearn.model_selection import train_test_split

    X, y = make_moons(noise=noise, random_state=random_state, n_samples=n_samples)
    X = scale(X)
    return train_test_split(X, y, test_size=0.5, random_state=random_state)


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
    parts: dict[str, list] = {
        k: [] for k in ("X_train", "X_test", "y_train", "y_test", "groups_train", "groups_test")
    }
    for task, angle in enumerate(angles):
        seed = int(rng.integers(2**31 - 1))
        X, y = make_moons(n_samples, noise=noise, random_state=seed)
        theta = np.radians(angle)
        rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        X = scale(X) @ rotation
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, train_size=train_fraction, stratify=y, random_state=seed
        )
        for key, value in (
            ("X_train", X_tr),
            ("X_test", X_te),
            ("y_train", y_tr),
            ("y_test", y_te),
        ):
            parts[key].append(value)
        parts["groups_train"].append(np.full(len(y_tr), task))
        parts["groups_test"].append(np.full(len(y_te), task))
    out = {k: np.concatenate(v) for k, v in parts.items()}
    out["angles"] = angles
    return out


#: Targets of :func:`make_customers`, by task.
CUSTOMER_TARGETS = {
    "classification": "churned",
    "multiclass": "plan_next_year",
    "regression": "monthly_spend",
}


def make_customers(
    n_rows: int = 800,
    *,
    task: str = "classification",
    missing_fraction: float = 0.05,
    random_state: int | None = 0,
):
    """A synthetic customer table with mixed column types, for the tabular tools.

    Columns: ``customer_id`` (an identifier, to be dropped), ``age`` (int),
    ``income`` (float, thousands), ``tenure_months`` (int), ``plan`` (``basic`` /
    ``standard`` / ``premium``), ``region`` (four strings), ``autopay`` (bool),
    ``support_calls`` (int), and one target that depends on them non-linearly, with
    noise:

    - ``task="classification"``: ``churned`` (``"yes"`` / ``"no"``);
    - ``task="multiclass"``: ``plan_next_year`` (``basic`` / ``standard`` / ``premium``);
    - ``task="regression"``: ``monthly_spend`` (float).

    About ``missing_fraction`` of ``income``, ``region``, ``plan`` and ``support_calls``
    is missing (NaN / None), as in real exports. The same ``random_state`` gives the
    same table.

    Returns
    -------
    pandas.DataFrame of shape (n_rows, 9)

    Examples
    --------
    >>> frame = make_customers(50, random_state=0)
    >>> frame.shape, frame["churned"].isin(["yes", "no"]).all()
    ((50, 9), np.True_)
    """
    import pandas as pd

    from pymc_bnn.network._checks import check_choice, check_positive_int

    check_choice("task", task, tuple(CUSTOMER_TARGETS))
    n = check_positive_int("n_rows", n_rows)
    if not 0 <= missing_fraction < 1:
        raise ValueError(f"missing_fraction must be in [0, 1); got {missing_fraction!r}.")
    rng = np.random.default_rng(random_state)
    age = rng.integers(18, 80, size=n)
    income = np.round(np.exp(rng.normal(3.8, 0.45, size=n)), 1)
    tenure = rng.integers(0, 120, size=n)
    plans = np.array(["basic", "standard", "premium"], dtype=object)
    plan_code = rng.choice(3, size=n, p=[0.5, 0.35, 0.15])
    regions = np.array(["north", "south", "east", "west"], dtype=object)
    region_code = rng.choice(4, size=n)
    autopay = rng.random(n) < 0.6
    calls = rng.poisson(1.0 + 1.5 * (plan_code == 0), size=n)
    # a non-linear signal: churn peaks at short tenure and many support calls, and
    # young customers on the basic plan in the south churn most
    z_age = (age - 48) / 18
    signal = (
        1.2
        - 0.03 * tenure
        + 0.55 * calls
        - 0.9 * autopay
        + 0.8 * z_age**2
        + 0.9 * ((plan_code == 0) & (region_code == 1))
        - 0.5 * (income - 50) / 25
    )
    frame = pd.DataFrame(
        {
            "customer_id": [f"C{100000 + i}" for i in rng.permutation(n)],
            "age": age,
            "income": income,
            "tenure_months": tenure,
            "plan": plans[plan_code],
            "region": regions[region_code],
            "autopay": autopay,
            "support_calls": calls.astype(float),
        }
    )
    if task == "classification":
        p = 1 / (1 + np.exp(-(signal - 1.0)))
        frame["churned"] = np.where(rng.random(n) < p, "yes", "no")
    elif task == "multiclass":
        logits = np.stack(
            [
                0.4 * signal,
                0.4 * income / 25 - 0.6 * (calls > 2),
                1.2 * (income - 55) / 25 + 0.02 * tenure - 1.2,
            ],
            axis=1,
        )
        logits += rng.gumbel(size=logits.shape)
        frame["plan_next_year"] = plans[np.argmax(logits, axis=1)]
    else:
        spend = (
            20
            + 15 * plan_code
            + 0.3 * income
            + 6 * np.tanh((tenure - 36) / 24)
            + 4 * calls * (plan_code == 2)
            + rng.normal(0, 4 + 2 * plan_code, size=n)
        )
        frame["monthly_spend"] = np.round(spend, 2)
    for column in ("income", "region", "plan", "support_calls"):
        holes = rng.random(n) < missing_fraction
        frame[column] = frame[column].astype(object if column in ("region", "plan") else float)
        frame.loc[holes, column] = None if column in ("region", "plan") else np.nan
    return frame


def make_wages(n_rows: int = 3000, *, random_state: int | None = 0):
    """A synthetic wage table: a positive, right-skewed target whose spread grows with it.

    Shaped like the census wage tables of regression textbooks: ``year`` (2003-2009),
    ``age`` (18-80), ``education`` (five ordered levels, as text), ``jobclass``,
    ``health``, ``health_ins`` and ``maritl`` (text), and ``wage`` (thousands a year).
    The log of the wage is a smooth function of the columns plus noise, and about 4 %
    of rows earn far more (the cluster above 250 of those tables): the noise in
    ``wage`` is a fraction of its value, so intervals of one width fit it badly.

    Returns
    -------
    pandas.DataFrame of shape (n_rows, 8)

    Examples
    --------
    >>> frame = make_wages(100, random_state=0)
    >>> frame.shape, bool((frame["wage"] > 0).all())
    ((100, 8), True)
    """
    import pandas as pd

    from pymc_bnn.network._checks import check_positive_int

    n = check_positive_int("n_rows", n_rows)
    rng = np.random.default_rng(random_state)
    year = rng.integers(2003, 2010, size=n)
    age = np.clip(np.round(rng.normal(42, 11.5, size=n)), 18, 80).astype(int)
    levels = np.array(
        ["1. < HS Grad", "2. HS Grad", "3. Some College", "4. College Grad", "5. Advanced Degree"],
        dtype=object,
    )
    education = rng.choice(5, size=n, p=[0.09, 0.32, 0.22, 0.23, 0.14])
    information = rng.random(n) < 0.3 + 0.08 * education
    health = rng.random(n) < 0.65 + 0.04 * education
    insured = rng.random(n) < 0.6 + 0.05 * education
    married = rng.random(n) < 0.3 + 0.4 * (age > 28)
    log_wage = (
        4.05
        + 0.12 * education
        + 0.25 * np.tanh((age - 25) / 12)
        - 0.002 * np.maximum(age - 55, 0) ** 2 / 4
        + 0.012 * (year - 2003)
        + 0.05 * information
        + 0.06 * health
        + 0.17 * insured
        + 0.1 * married
        + rng.normal(0, 0.27, size=n)
    )
    high = rng.random(n) < 0.01 + 0.015 * education
    log_wage = np.where(high, np.log(270) + rng.normal(0, 0.12, size=n), log_wage)
    return pd.DataFrame(
        {
            "year": year,
            "age": age,
            "education": levels[education],
            "jobclass": np.where(information, "2. Information", "1. Industrial").astype(object),
            "health": np.where(health, "2. >=Very Good", "1. <=Good").astype(object),
            "health_ins": np.where(insured, "1. Yes", "2. No").astype(object),
            "maritl": np.where(married, "2. Married", "1. Never Married").astype(object),
            "wage": np.round(np.exp(log_wage), 2),
        }
    )
