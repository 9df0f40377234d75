"""Input and parameter checks shared by the functional layer and the estimator.

Everything a user passes in is checked here, before any PyTensor graph is built, so
that bad input gives a short error naming the problem rather than a deep traceback.
Inputs are copied, never modified in place.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence

import numpy as np

from pymc_bnn.exceptions import InputScaleWarning
from pymc_bnn.network.spec import ACTIVATION_NAMES, LIKELIHOODS, PRIORS, NetworkSpec

__all__ = [
    "InputScaleWarning",
    "check_choice",
    "check_group_codes",
    "check_group_labels",
    "check_hidden_layer_sizes",
    "check_input_scale",
    "check_model_inputs",
    "check_positive_int",
    "check_positive_float",
    "check_predictive_X",
    "check_predictive_targets",
    "check_random_seed",
    "checked_spec",
    "check_same_label_kind",
    "is_dask_collection",
]

#: A feature whose root mean square exceeds this is an order of magnitude beyond
#: tanh's linear range (|a| < 1) for a weight of the priors' unit scale ...
MAX_FEATURE_RMS = 10.0
#: ... and one whose values all lie within this of each other moves such a weight's
#: pre-activation by less than this over the whole data: it is all but ignored.
MIN_FEATURE_RANGE = 0.1
#: Columns named in the warning, at most.
_NAMED_COLUMNS = 5


def check_input_scale(
    X, *, estimator: str, feature_names=None, sample_note: str = "", stacklevel: int = 3
) -> None:
    """Warn (:class:`InputScaleWarning`) when features of ``X`` are far from unit scale.

    The weights' priors (and the evidence's per-layer prior scales) have one scale for
    every input, so they suit standardised inputs: a feature of root mean square above
    :data:`MAX_FEATURE_RMS` saturates tanh units (mean area of breast_cancer: 740), and
    one whose values all lie within :data:`MIN_FEATURE_RANGE` of each other is all but
    ignored (a rare one-hot column, of range 1, is not). Constant features are exempt
    from the second rule. Nothing is changed: the warning names the columns and the
    remedy (a ``StandardScaler`` in a pipeline).

    Parameters
    ----------
    X : float array of shape (n_rows, n_features)
    estimator : str
        The estimator's name, for the suggested pipeline.
    feature_names : sequence of str, optional
        Column names for the message (else column indices).
    sample_note : str
        Follows "input features" in the message, e.g. which rows the statistics
        come from.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        return
    rms, spread = _column_scales(X)
    # (values, flagged columns, what they have, sort order: worst first)
    rules = [
        (rms, rms > MAX_FEATURE_RMS, f"root mean square above {MAX_FEATURE_RMS:g}", -1),
        (
            spread,
            (spread > 0) & (spread < MIN_FEATURE_RANGE),
            f"a range (max - min) below {MIN_FEATURE_RANGE:g}",
            1,
        ),
    ]
    parts = []
    for values, flagged, what, order in rules:
        cols = np.flatnonzero(flagged)
        if cols.size == 0:
            continue
        cols = cols[np.argsort(order * values[cols], kind="stable")]
        shown = ", ".join(
            f"{feature_names[c] if feature_names is not None else f'column {c}'} ({values[c]:.3g})"
            for c in cols[:_NAMED_COLUMNS]
        )
        more = f", and {cols.size - _NAMED_COLUMNS} more" if cols.size > _NAMED_COLUMNS else ""
        parts.append(f"{cols.size} {'has' if cols.size == 1 else 'have'} {what}: {shown}{more}")
    if not parts:
        return
    warnings.warn(
        f"Of {X.shape[1]} input features{sample_note}, {'; '.join(parts)}. The network's "
        f"priors assume inputs of unit scale, and far from it the fit is poor (large "
        f"features saturate tanh and logistic units, tiny ones are all but ignored). "
        f"Standardise the features, e.g. make_pipeline(StandardScaler(), {estimator}(...)).",
        InputScaleWarning,
        stacklevel=stacklevel,
    )


def _column_scales(X, rows: int = 65_536):
    """Root mean square and range (max - min) of each column, ``(n_features,)`` each.

    In blocks of ``rows`` rows, so that a large ``X`` is not copied whole. Features
    near the float range give an infinite root mean square, without warnings.
    """
    squares = np.zeros(X.shape[1])
    low, high = X[0].copy(), X[0].copy()
    with np.errstate(over="ignore"):
        for start in range(0, X.shape[0], rows):
            block = X[start : start + rows]
            squares += np.einsum("ij,ij->j", block, block)
            np.minimum(low, block.min(axis=0), out=low)
            np.maximum(high, block.max(axis=0), out=high)
        return np.sqrt(squares / X.shape[0]), high - low


def check_choice(name: str, value, options: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``options``, else raise a ValueError listing them."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}; got {value!r}.")
    return value


def check_positive_int(name: str, value, *, allow_none: bool = False, minimum: int = 1):
    """Return ``value`` as int if it is an integer >= ``minimum`` (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def check_positive_float(name: str, value) -> float:
    """Return ``value`` as float if it is a finite real number > 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (np.isfinite(value) and value > 0)
    ):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}.")
    return float(value)


def check_random_seed(value, *, sequence: bool = False):
    """``value`` as an int if it is None or a whole number in ``0 .. 2**32 - 1`` (NumPy's
    and PyMC's seed range), else a ValueError: int() truncated 1.5 silently, and -1,
    2**70 or a Generator failed many frames down in NumPy. None is returned as it is.
    With ``sequence``, a non-empty sequence of such numbers (NumPy's ``SeedSequence``
    entropy, as a mixture's Laplace draws are seeded, ``[seed, k]``) too, as a list."""

    def whole(v) -> bool:
        return not isinstance(v, bool) and isinstance(v, numbers.Integral) and 0 <= v < 2**32

    if value is None or whole(value):
        return None if value is None else int(value)
    if (
        sequence
        and isinstance(value, list | tuple | np.ndarray)
        and np.ndim(value) == 1
        and len(value) > 0
        and all(whole(v) for v in value)
    ):
        return [int(v) for v in value]
    kinds = (
        "a whole number in 0 .. 2**32 - 1"
        if not sequence
        else "a whole number in 0 .. 2**32 - 1 or a sequence of them"
    )
    raise ValueError(f"random_seed must be None or {kinds}; got {value!r}.")


def check_prior_sigma(value, n_layers: int) -> float | tuple[float, ...]:
    """One prior standard deviation (a float > 0), or one per layer (input layer first)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()  # np.array(1.0): a scalar (len() of it raised a TypeError)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return check_positive_float("prior_sigma", value)
    if isinstance(value, str) or not hasattr(value, "__len__") or len(value) != n_layers:
        raise ValueError(
            f"prior_sigma must be a finite number > 0 or a sequence of "
            f"{n_layers} of them (one per layer); got {value!r}."
        )
    return tuple(check_positive_float("prior_sigma", v) for v in value)


def check_hidden_layer_sizes(value) -> tuple[int, ...]:
    """Return hidden layer sizes as a tuple of positive ints (an int means one layer)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,)
    try:
        sizes = tuple(value)
    except TypeError:
        raise ValueError(
            f"hidden_layer_sizes must be a sequence of positive integers; got {value!r}."
        ) from None
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1:
            raise ValueError(
                f"hidden_layer_sizes must be a sequence of positive integers; got {value!r}."
            )
    return tuple(int(s) for s in sizes)


def check_model_inputs(
    X,
    y,
    *,
    hidden_layer_sizes,
    activation,
    prior_sigma,
    n_classes,
    batch_size,
    prior="normal",
    precision_shape=1.0,
    precision_rate=1.0,
    groups=None,
    n_groups=None,
    likelihood="categorical",
    heteroscedastic=False,
    noise_scale=0.5,
):
    """Validate the arguments of :func:`pymc_bnn.network.model.build_model`.

    Returns
    -------
    X : float64 array of shape (n_rows, n_features), a copy
    y : int64 array of shape (n_rows,) (float64 for regression), a copy
    groups : int64 array of shape (n_rows,) (a copy), or None
    spec : NetworkSpec
    """
    try:
        X = np.array(X, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        _refuse_missing("X", X)
        raise ValueError(
            "X must hold real numbers; some of its values cannot be converted to float."
        ) from None
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_rows, n_features); got shape {X.shape}.")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must have at least one row and one column; got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinity.")
    likelihood = check_choice("likelihood", likelihood, list(LIKELIHOODS))
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must be 1-D with one entry per row of X ({X.shape[0]}); got shape {y.shape}."
        )
    if likelihood == "normal":
        y, n_classes = _check_real_targets(y, n_classes)
    else:
        y, n_classes = _check_class_codes(y, n_classes)
    batch_size = check_positive_int("batch_size", batch_size, allow_none=True)
    if batch_size is not None and batch_size > X.shape[0]:
        raise ValueError(
            f"batch_size ({batch_size}) cannot exceed the number of rows ({X.shape[0]})."
        )
    groups, n_groups = check_group_codes(groups, n_groups, n_rows=X.shape[0])
    spec = checked_spec(
        n_features=int(X.shape[1]),
        hidden_layer_sizes=hidden_layer_sizes,
        n_classes=n_classes,
        activation=activation,
        prior_sigma=prior_sigma,
        n_rows=int(X.shape[0]),
        batch_size=batch_size,
        prior=prior,
        precision_shape=precision_shape,
        precision_rate=precision_rate,
        n_groups=n_groups,
        likelihood=likelihood,
        heteroscedastic=bool(heteroscedastic),
        noise_scale=noise_scale,
    )
    if heteroscedastic and likelihood != "normal":
        raise ValueError("heteroscedastic=True needs likelihood='normal' (regression).")
    _check_prior_parameters(spec)
    return X, y, groups, spec


def checked_spec(
    *,
    hidden_layer_sizes,
    activation,
    prior_sigma,
    prior,
    precision_shape,
    precision_rate,
    likelihood,
    noise_scale,
    **counts,
) -> NetworkSpec:
    """A :class:`NetworkSpec` whose architecture and prior fields are checked (ValueError
    naming the field); ``counts`` (sizes, batch, groups, heteroscedastic) go in as given,
    checked by the caller against the data (:func:`check_model_inputs`) or a file
    (:mod:`pymc_bnn.estimators.persistence`)."""
    hidden_layer_sizes = check_hidden_layer_sizes(hidden_layer_sizes)
    return NetworkSpec(
        hidden_layer_sizes=hidden_layer_sizes,
        activation=check_choice("activation", activation, list(ACTIVATION_NAMES)),
        prior_sigma=check_prior_sigma(prior_sigma, len(hidden_layer_sizes) + 1),
        prior=check_choice("prior", prior, list(PRIORS)),
        precision_shape=check_positive_float("precision_shape", precision_shape),
        precision_rate=check_positive_float("precision_rate", precision_rate),
        likelihood=check_choice("likelihood", likelihood, list(LIKELIHOODS)),
        noise_scale=check_positive_float("noise_scale", noise_scale),
        **counts,
    )


def _check_prior_parameters(spec: NetworkSpec) -> None:
    """Refuse a parameter of the prior not chosen: the model would ignore it silently
    (the estimators refuse the same, ``fit_settings._check_prior_settings``)."""
    if spec.prior == "gamma_precision" and np.any(np.asarray(spec.prior_sigma) != 1.0):
        raise ValueError(
            f"prior_sigma={spec.prior_sigma!r} is the scale of prior='normal'; "
            "prior='gamma_precision' infers each layer's scale from its Gamma precision "
            "(precision_shape, precision_rate) and would ignore it. Pass prior='normal' "
            "to fix the scale, or leave prior_sigma at 1.0."
        )
    given = {
        name: value
        for name in ("precision_shape", "precision_rate")
        if (value := getattr(spec, name)) != 1.0
    }
    if spec.prior == "normal" and given:
        settings = ", ".join(f"{name}={value!r}" for name, value in given.items())
        verb, them = ("sets", "it") if len(given) == 1 else ("set", "them")
        raise ValueError(
            f"{settings} {verb} the Gamma precision of prior='gamma_precision'; "
            f"prior='normal' has fixed scales (prior_sigma) and would ignore {them}. Pass "
            f"prior='gamma_precision' to use {them}, or leave {them} at 1.0."
        )


def _refuse_missing(name: str, values) -> None:
    """ValueError if ``values`` (which failed to convert to float) hold missing values:
    pandas' nullable columns (Float64, Int64) with NA raised a pandas TypeError or
    ValueError, not the "contains NaN" a float column with NaN gives."""
    import pandas as pd

    try:
        missing = bool(np.any(pd.isna(np.asarray(values, dtype=object))))
    except (TypeError, ValueError):
        return
    if missing:
        raise ValueError(
            f"{name} contains NaN or missing values (None, pandas' NA); impute "
            "or drop such rows first."
        )


def _check_real_targets(y, n_classes):
    if n_classes not in (None, 0):
        raise ValueError("n_classes is meaningless for likelihood='normal' (regression).")
    try:
        y = np.array(y, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        _refuse_missing("y", y)
        raise ValueError("y must hold real-valued targets for likelihood='normal'.") from None
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity.")
    return y, 0


def _check_class_codes(y, n_classes):
    if y.dtype == np.bool_:  # two classes, False and True: codes 0 and 1
        y = y.astype(np.int64)
    if not np.issubdtype(y.dtype, np.integer):
        if (
            np.issubdtype(y.dtype, np.number)
            and np.all(np.isfinite(y))
            and np.all(y == np.round(y))
        ):
            y = y.astype(np.int64)
        else:
            raise ValueError("y must hold integer class codes 0 .. n_classes - 1.")
    y = np.array(y, dtype=np.int64, copy=True)
    if y.min() < 0:
        raise ValueError("y must hold integer class codes 0 .. n_classes - 1; found a negative.")
    if n_classes is None:
        n_classes = max(int(y.max()) + 1, 2)
    n_classes = check_positive_int("n_classes", n_classes, minimum=2)
    if y.max() >= n_classes:
        raise ValueError(f"y holds class code {int(y.max())} but n_classes is {n_classes}.")
    return y, n_classes


def check_group_codes(groups, n_groups, *, n_rows: int):
    """Validate integer group codes ``0 .. n_groups - 1``, one per row.

    Returns
    -------
    groups : int64 array of shape (n_rows,) (a copy), or None
    n_groups : int (0 when ``groups`` is None)
    """
    if groups is None:
        if n_groups not in (None, 0):
            raise ValueError("n_groups was given without groups.")
        return None, 0
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n_rows:
        raise ValueError(
            f"groups must be 1-D with one entry per row of X ({n_rows}); got shape {groups.shape}."
        )
    if not np.issubdtype(groups.dtype, np.integer):
        raise ValueError("groups must hold integer group codes 0 .. n_groups - 1.")
    groups = np.array(groups, dtype=np.int64, copy=True)
    if groups.min() < 0:
        raise ValueError(
            "groups must hold integer group codes 0 .. n_groups - 1; found a negative."
        )
    if n_groups is None:
        n_groups = int(groups.max()) + 1
    n_groups = check_positive_int("n_groups", n_groups)
    if groups.max() >= n_groups:
        raise ValueError(
            f"groups must hold integer group codes 0 .. n_groups - 1 = {n_groups - 1}; got "
            f"values from {int(groups.min())} to {int(groups.max())}."
        )
    return groups, n_groups


def is_dask_collection(X) -> bool:
    """Whether ``X`` is a dask collection (checked without importing dask).

    Here with the other input checks (:mod:`pymc_bnn.dask` re-exports it): every fit
    asks, with or without dask installed.
    """
    return callable(getattr(X, "__dask_graph__", None)) and X.__dask_graph__() is not None


# ------------------------------------------------------------------ group labels
def check_group_labels(groups, n_rows: int) -> np.ndarray:
    """An estimator's ``groups``: one label per row, none missing, all of one kind."""
    from sklearn.utils.validation import column_or_1d

    groups = column_or_1d(groups, warn=False)
    if groups.shape[0] != n_rows:
        raise ValueError(
            f"groups has {groups.shape[0]} entries but X has {n_rows} rows; give "
            "one group label per row."
        )
    if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
        raise ValueError("groups contains NaN or infinity.")
    if groups.dtype.kind == "O":
        # None, NaN, pd.NA, NaT among labels (a text column with gaps): named here, not
        # by np.unique's comparison of a float with a string
        import pandas as pd

        missing = np.array(
            [g is None or (np.ndim(g) == 0 and bool(pd.isna(g))) for g in groups], dtype=bool
        )
        if missing.any():
            k = int(missing.argmax())
            raise ValueError(
                f"groups contains a missing label ({groups[k]!r}) at position "
                f"{k}; give every row a group."
            )
        kinds = {_label_kind(g) for g in groups}
        if len(kinds) > 1:
            raise ValueError(
                f"groups mixes {' and '.join(sorted(kinds))} labels; give labels of one type."
            )
    return groups


def check_same_label_kind(groups: np.ndarray, fitted: np.ndarray) -> None:
    """ValueError if ``groups`` are labels of another kind than the ``fitted`` ones:
    np.searchsorted compares "1" with 1 without an error, and every row would silently
    be an unseen group."""
    given, known = _array_label_kind(groups), _array_label_kind(fitted)
    if given != known:
        raise ValueError(
            f"groups holds {given} labels, but the estimator was fit with {known} "
            f"groups ({', '.join(map(repr, fitted[:3].tolist()))}"
            f"{', ...' if len(fitted) > 3 else ''}); convert them."
        )


def _label_kind(value) -> str:
    """``"text"``, ``"true/false"`` or ``"number"``: what kind of label a value is."""
    if isinstance(value, (bool, np.bool_)):
        return "true/false"
    if isinstance(value, (str, bytes)):
        return "text"
    return "number" if isinstance(value, (numbers.Real, np.number)) else type(value).__name__


def _array_label_kind(values: np.ndarray) -> str:
    """:func:`_label_kind` of an array's labels (its first, for an object array)."""
    if values.dtype.kind == "O":
        return _label_kind(values[0]) if len(values) else "number"
    return {"b": "true/false", "U": "text", "S": "text"}.get(values.dtype.kind, "number")


# ------------------------------------------------------------------ the predictive
def check_predictive_X(X, n_features: int) -> np.ndarray:
    """``X`` as a C-contiguous float64 (n_points, n_features) array of finite values
    (a list too); ValueError otherwise: a NaN would give NaN probabilities for its row,
    silently (the estimators check their own input; this is the functional layer's)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(f"X must have shape (n_points, {n_features}); got {X.shape}.")
    finite = np.isfinite(X)
    if not finite.all():
        row = int(np.flatnonzero(~finite.all(axis=1))[0])
        raise ValueError(
            f"X contains NaN or infinity (first in row {row}); impute or drop such rows first."
        )
    return X


def check_predictive_targets(y: np.ndarray, n_classes: int | None) -> np.ndarray:
    """Targets of a predictive's log density as float64: finite numbers, and with
    ``n_classes`` whole class codes ``0 .. n_classes - 1`` (-1 would index the last
    class, 0.5 be truncated to 0: silently wrong)."""
    try:
        values = np.asarray(y).astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"y must hold numbers; got values of type {np.asarray(y).dtype}."
        ) from None
    bad = ~np.isfinite(values)
    if n_classes is not None:
        bad |= (values != np.round(values)) | (values < 0) | (values >= n_classes)
    if bad.any():
        i = int(bad.argmax())
        what = "finite numbers" if n_classes is None else f"class codes 0 .. {n_classes - 1}"
        raise ValueError(f"y must hold {what}; position {i} holds {np.asarray(y)[i]!r}.")
    return values
