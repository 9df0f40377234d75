"""Input checks shared by the :mod:`pymc_bnn.metrics` modules.

Each function takes what a user passed (lists, arrays of any dtype) and returns checked
float arrays, or raises a ValueError naming the bad argument; nothing passed in is
modified (arrays already of the right dtype are not copied, and never written).

- class probabilities: :func:`proba_matrix`, :func:`check_proba` (labels against
  probabilities), :func:`check_labels` (no missing label), :func:`check_probabilities`,
  :func:`check_rows_sum_to_one`;
- regression targets and predictions: :func:`check_targets`,
  :func:`check_like_targets`;
- any per-point score: :func:`check_uncertainty`;
- the building blocks: :func:`float_array`, :func:`check_finite`.

Examples
--------
>>> proba_matrix([0.25, 1.0]).tolist()          # binary: P(second class)
[[0.75, 0.25], [0.0, 1.0]]
>>> codes, p, classes = check_proba(["b", "a"], [[0.9, 0.1], [0.3, 0.7]], ["b", "a"])
>>> codes.tolist(), classes.tolist()
([0, 1], ['b', 'a'])
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ROW_SUM_ATOL",
    "check_finite",
    "check_labels",
    "check_like_targets",
    "check_probabilities",
    "check_proba",
    "check_rows_sum_to_one",
    "check_targets",
    "check_uncertainty",
    "float_array",
    "proba_matrix",
]

#: Largest allowed deviation of a row of class probabilities from summing to 1
#: (float32 predictives carry ~1e-7 rounding error per probability).
ROW_SUM_ATOL = 1e-6


def float_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array (not copied when it already is one; never written)."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers; got {value!r}.") from None


def check_finite(name: str, a: np.ndarray) -> None:
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinity (shape {a.shape}).")


def check_probabilities(name: str, a: np.ndarray) -> None:
    """Every value finite and in [0, 1] (row sums: :func:`check_rows_sum_to_one`)."""
    finite = np.isfinite(a)
    if not np.all(finite):
        # the range of the other values would hide the NaN: name it and where it is
        first = tuple(int(i) for i in np.argwhere(~finite)[0])
        where = {1: f"index {first[0]}", 2: f"row {first[0]}, column {first[-1]}"}.get(
            a.ndim, f"position {first}"
        )
        raise ValueError(
            f"{name} must hold finite probabilities in [0, 1]; got {float(a[first])} at "
            f"{where} ({int(np.sum(~finite))} NaN or infinite value(s) in all; shape "
            f"{a.shape})."
        )
    if a.min() < 0 or a.max() > 1:
        raise ValueError(
            f"{name} must hold finite probabilities in [0, 1]; got values from "
            f"{a.min()} to {a.max()} (shape {a.shape})."
        )


def check_rows_sum_to_one(name: str, a: np.ndarray) -> None:
    deviation = np.abs(a.sum(axis=-1) - 1.0)
    if np.any(deviation > ROW_SUM_ATOL):
        worst = np.unravel_index(np.argmax(deviation), deviation.shape)
        raise ValueError(
            f"the class probabilities in each row of {name} must sum to 1 (within "
            f"{ROW_SUM_ATOL:g}); row {tuple(int(i) for i in worst)} of {name} (shape "
            f"{a.shape}) sums to {a.sum(axis=-1)[worst]!r}."
        )


def proba_matrix(proba, *, name: str = "proba") -> np.ndarray:
    """Class probabilities as a float array of shape (n_samples, n_classes).

    A 1-D input is the probability of the second class of a binary problem.
    """
    p = float_array(name, proba)
    if p.ndim not in (1, 2) or p.shape[0] == 0:
        raise ValueError(
            f"{name} must have shape (n_samples, n_classes) or (n_samples,) with "
            f"n_samples >= 1; got shape {p.shape}."
        )
    if p.ndim == 2 and p.shape[1] < 2:
        raise ValueError(
            f"{name} must have one column per class (at least 2); got shape {p.shape}. "
            "For a binary problem pass the probability of the second class as a 1-D array."
        )
    check_probabilities(name, p)
    if p.ndim == 1:
        return np.column_stack([1.0 - p, p])
    check_rows_sum_to_one(name, p)
    return p


def _is_missing(value) -> bool:
    """Whether one element of an object array of labels is a missing value.

    None, float NaN and NaT (``x != x``), and pandas' ``NA`` are missing; pandas is not
    imported for the test. A value whose ``!=`` has no truth value (an array) is not
    missing: the caller's own checks name what is wrong with it.
    """
    if value is None or type(value).__name__ == "NAType":  # pandas.NA
        return True
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return False


def check_labels(name: str, labels) -> np.ndarray:
    """A 1-D array of class labels with no missing value (None, NaN, NaT, pandas NA).

    A missing label is neither a class nor comparable with one: np.unique and sorting
    fail on it deep inside NumPy (None) or count it as a class of its own (NaN).
    """
    a = np.asarray(labels)
    if a.ndim != 1:
        return a  # the caller reports the shape
    if a.dtype.kind in "fc":
        missing = np.isnan(a)
    elif a.dtype.kind in "mM":
        missing = np.isnat(a)
    elif a.dtype.kind == "O":
        # sequences as labels: comparing them raised NumPy's "truth value ... ambiguous"
        # (the kinds of value first: one pass over a million labels takes ~30 ms)
        nested = None
        if {np.ndarray, list, tuple} & set(map(type, a)):
            nested = next((i for i, v in enumerate(a) if np.ndim(v) > 0), None)
        if nested is not None:
            raise ValueError(
                f"{name} must hold one label per sample; position {nested} holds {a[nested]!r}."
            )
        missing = np.fromiter((_is_missing(v) for v in a), dtype=bool, count=a.size)
    else:  # integers, booleans, strings: nothing can be missing
        return a
    if np.any(missing):
        rows = np.flatnonzero(missing)
        shown = ", ".join(str(int(i)) for i in rows[:5]) + (", ..." if rows.size > 5 else "")
        remedy = "drop those samples or label them" if name == "y_true" else "remove them"
        raise ValueError(
            f"{name} holds {rows.size} missing label(s) (None or NaN) at position(s) "
            f"{shown}; {remedy}."
        )
    return a


def check_proba(y_true, proba, classes):
    """Check labels against class probabilities.

    Returns
    -------
    codes : int array of shape (n_samples,)
        Column of ``proba`` holding each sample's true class.
    proba : float array of shape (n_samples, n_classes)
    classes : array of shape (n_classes,)
    """
    y_true = check_labels("y_true", y_true)
    p = float_array("proba", proba)
    if p.ndim not in (1, 2) or y_true.ndim != 1 or p.shape[0] != y_true.shape[0]:
        raise ValueError(
            "proba must have shape (n_samples, n_classes) or (n_samples,) and y_true shape "
            f"(n_samples,); got {p.shape} and {y_true.shape}."
        )
    if y_true.size == 0:
        raise ValueError("y_true and proba are empty.")
    p = proba_matrix(p)
    name, labels = (
        ("y_true", y_true) if classes is None else ("classes", check_labels("classes", classes))
    )
    try:
        distinct = np.unique(labels)
    except TypeError:  # sorting labels of different kinds, e.g. 1 and "a"
        raise ValueError(_mixed_labels(name, labels)) from None
    classes = distinct if classes is None else labels
    if classes.ndim != 1 or distinct.size != classes.size:
        raise ValueError(
            f"classes must be a 1-D array of distinct labels; got {classes.tolist()!r}."
        )
    if classes.shape[0] != p.shape[1]:
        raise ValueError(
            f"proba has {p.shape[1]} columns but there are {classes.shape[0]} classes "
            f"{classes.tolist()}; pass classes= (e.g. clf.classes_) in proba's column order."
        )
    order = np.argsort(classes, kind="stable")
    try:
        pos = np.minimum(np.searchsorted(classes[order], y_true), classes.size - 1)
    except TypeError:  # y_true's labels cannot be compared with the classes
        raise ValueError(
            f"y_true's labels (dtype {y_true.dtype}) cannot be compared with classes "
            f"{classes.tolist()} (dtype {classes.dtype}): pass labels of one kind, all "
            f"numbers or all strings."
        ) from None
    unknown = classes[order][pos] != y_true
    if np.any(unknown):
        raise ValueError(
            f"y_true holds labels not in classes {classes.tolist()}: "
            f"{np.unique(y_true[unknown]).tolist()}."
        )
    return order[pos], p, classes


def _mixed_labels(name: str, labels: np.ndarray) -> str:
    kinds = sorted({type(v).__name__ for v in labels.ravel()})
    return (
        f"{name} must hold labels of one kind (all numbers or all strings), which can "
        f"be sorted; got labels of types {kinds}."
    )


def check_targets(y_true) -> np.ndarray:
    y = float_array("y_true", y_true)
    if y.ndim != 1 or y.shape[0] == 0:
        raise ValueError(f"y_true must be a non-empty 1-D array; got shape {y.shape}.")
    check_finite("y_true", y)
    return y


def check_like_targets(name: str, value, n: int) -> np.ndarray:
    """A finite prediction of shape (n,), or a scalar broadcast to it (read-only view)."""
    a = float_array(name, value)
    if a.shape not in ((), (n,)):
        raise ValueError(
            f"{name} must have shape ({n},) like y_true, or be a scalar; got shape {a.shape}."
        )
    check_finite(name, a)
    return np.broadcast_to(a, (n,))


def check_uncertainty(name: str, value, n: int | None = None) -> np.ndarray:
    u = float_array(name, value)
    if u.ndim != 1 or u.shape[0] == 0 or (n is not None and u.shape[0] != n):
        want = "(n_samples,)" if n is None else f"({n},), one score per sample,"
        raise ValueError(f"{name} must have shape {want} and be non-empty; got {u.shape}.")
    check_finite(name, u)
    return u
