"""Tables in, network inputs out: column preprocessing for the command line and for Python.

A :class:`TabularPreprocessor` turns a pandas DataFrame with numeric, categorical
(string, boolean, pandas ``category``) and missing values into the standardised float
matrix a Bayesian MLP needs. It is built on scikit-learn's ``ColumnTransformer``:

- numeric columns: missing values imputed with the column's median
  (``SimpleImputer``), then standardised (``StandardScaler``);
- categorical columns: missing values imputed with the most frequent value, then
  one-hot encoded (``OneHotEncoder(handle_unknown="ignore")``: a category first seen at
  predict time is encoded as all zeros, i.e. as none of the known categories);
- date columns and identifier-like columns are refused with advice to drop them: a
  network cannot learn from a row number, and dates need features chosen by the user;
  so are numbers with a few stray words in them (``"unknown"``, ``"?"``: blank them, or
  declare the column categorical), and infinite numbers or numbers beyond float32's
  range (the network's predictions are computed in float32);
- a column with a single value (constant, perhaps with missing values) is left out of
  the features, with a warning: there is nothing to learn from it.

Its fitted state is plain data (:meth:`TabularPreprocessor.get_state`: medians,
means, scales, categories), which :func:`pymc_bnn.tabular.pipeline.save_pipeline` writes into
the same no-pickle model file as the network, so that loading a model never runs code.

:func:`pymc_bnn.tabular.pipeline.make_tabular_pipeline` puts a preprocessor in front of an
estimator; the ``pymc-bnn`` command line (:mod:`pymc_bnn.cli`) is a thin shell around it.

Examples
--------
>>> import pandas as pd
>>> frame = pd.DataFrame({"age": [30, 41, None, 25], "plan": ["a", "b", "a", None]})
>>> pre = TabularPreprocessor().fit(frame)
>>> pre.get_feature_names_out().tolist()
['age', 'plan=a', 'plan=b']
>>> pre.transform(pd.DataFrame({"age": [30.0], "plan": ["c"]})).round(3).tolist()
[[-0.256, 0.0, 0.0]]
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted

from pymc_bnn.exceptions import TargetLeakageWarning
from pymc_bnn.tabular._columns import (
    CATEGORICAL,
    FLOAT32_MAX,
    NUMERIC,
    column_kind,
    infer_task,
    leak_message,
    leaking_columns,
    plain,
    rows_text,
)

__all__ = [
    "TabularPreprocessor",
    "infer_task",
    "leaking_columns",
]


#: State format of :meth:`TabularPreprocessor.get_state`.
STATE_VERSION = 1


def _as_frame(X, what: str = "X") -> pd.DataFrame:
    """``X`` as a DataFrame whose column labels are strings (the preprocessor stores and
    looks columns up by name, so a frame labelled ``0, 1, ...`` gets ``"0", "1", ...``;
    a relabelled frame is a new object, the caller's is not changed)."""
    if isinstance(X, pd.DataFrame):
        if all(isinstance(c, str) for c in X.columns):
            return X
        names = [str(c) for c in X.columns]
        if len(set(names)) != len(names):
            raise ValueError("the table has duplicated column names.")
        return X.set_axis(names, axis="columns")
    array = np.asarray(X)
    if array.ndim != 2:
        raise ValueError(
            f"{what} must be a table (a DataFrame or a 2-D array); got an "
            f"array of shape {array.shape}."
        )
    return pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])])


def _numeric(frame: pd.DataFrame, name) -> np.ndarray:
    """A column as float64; ValueError naming the column and the first row with text, an
    infinite value, or a value beyond float32's range (NaN is missing: imputed)."""
    column = frame[name]
    if pd.api.types.is_bool_dtype(column.dtype):
        raise ValueError(
            f"column {name!r} holds true/false values, but the model was fit with numbers in it."
        )
    values = pd.to_numeric(column, errors="coerce")
    bad = values.isna() & column.notna()
    if bad.any():
        row = bad.to_numpy().nonzero()[0][0]
        raise ValueError(
            f"column {name!r} should hold numbers, but "
            f"{rows_text(column.index, [row])} holds "
            f"{plain(column.iloc[row])!r}."
        )
    values = values.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        # NaN is a missing value (imputed), but an infinite one cannot be standardised,
        # and the network's predictive runs in float32 (JAX), where a value beyond its
        # range is infinite too; far beyond it (1e160), the standardisation's squares
        # overflow even in float64 and the fit degenerates
        out_of_range = np.isinf(values) | (np.abs(values) > FLOAT32_MAX)
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        where = rows_text(column.index, [row])
        if np.isinf(values[row]):
            raise ValueError(
                f"column {name!r} holds an infinite value ({values[row]:g}) in "
                f"{where}: only finite numbers can be used. Fix it, or blank "
                "it (missing values are imputed)."
            )
        raise ValueError(
            f"column {name!r} holds {values[row]:g} in {where}, beyond "
            f"float32's range (±{FLOAT32_MAX:.3g}), in which the network "
            "computes its predictions (JAX): rescale the column (other units, "
            "or its logarithm)."
        )
    return values


def _number_label(value) -> str:
    """A number as a category: whole numbers without a decimal point, so that the code 2
    is the same category read as ``2`` (an integer column) or ``2.0`` (a column with
    missing values, read as floats)."""
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating) and np.isfinite(value) and value == int(value):
        return str(int(value))
    return str(value)


def _strings(column: pd.Series, known=None) -> np.ndarray:
    """A categorical column as an object array of strings, missing values as NaN.

    Numbers (a column with a numeric dtype, made categorical by ``as_categorical`` or
    ``categorical``) become :func:`_number_label` strings; a label in ``known`` (the
    fitted categories) as ``str`` writes it is kept as it is (files saved before).
    """
    values = column.astype(object).to_numpy()
    missing = pd.isna(values)
    out = np.empty(len(values), dtype=object)
    out[missing] = np.nan
    dtype = column.dtype
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        known = set(known or ())
        out[~missing] = [str(v) if str(v) in known else _number_label(v) for v in values[~missing]]
    else:
        out[~missing] = [str(v) for v in values[~missing]]
    return out


# ------------------------------------------------------------------ preprocessor
def _column_transformer(numeric: list, categorical: list, categories="auto") -> ColumnTransformer:
    parts = []
    if numeric:
        parts.append(
            (
                NUMERIC,
                Pipeline(
                    [("impute", SimpleImputer(strategy="median")), ("scale", StandardScaler())]
                ),
                list(numeric),
            )
        )
    if categorical:
        parts.append(
            (
                CATEGORICAL,
                Pipeline(
                    [
                        ("impute", SimpleImputer(strategy="most_frequent")),
                        (
                            "onehot",
                            OneHotEncoder(
                                categories=categories,
                                handle_unknown="ignore",
                                sparse_output=False,
                                dtype=np.float64,
                            ),
                        ),
                    ]
                ),
                list(categorical),
            )
        )
    return ColumnTransformer(
        parts, remainder="drop", sparse_threshold=0.0, verbose_feature_names_out=False
    )


class TabularPreprocessor(TransformerMixin, BaseEstimator):
    """Impute, standardise and one-hot encode the columns of a table.

    Parameters
    ----------
    numeric, categorical : list of str, optional
        Columns to treat as numeric / categorical. By default every column is
        classified from its type: numbers are numeric; strings, booleans and pandas
        categories are categorical; dates (date and time types, date / time objects, and
        text such as ``2023-01-15``, ``2023/01/15``, ``15.01.2023``, ``15 Jan 2023``,
        ``2023-01-15T10:00:00Z`` or ``10:30``), identifier-like columns (a different
        string in every row; whole numbers, each once, that are consecutive, follow the
        row order, are too tightly packed to be measurements, or whose name says they
        are identifiers: a word such as ``id``, ``uuid`` anywhere in it, or ``no``,
        ``nr``, ``num``, ``number``, ``key``, ``index``, ``idx`` last, as in
        ``customer_no``, ``OrderID``), text columns whose values are numbers but for a
        few (at least 90 %: a ``"?"`` or ``"unknown"`` in a numeric column) and columns
        with no values raise a ValueError that names the column. When either list is
        given, only the listed columns are used. Either way, numeric columns must hold
        finite numbers within float32's range (missing values are imputed), and columns
        with a single value are left out with a warning.
    as_categorical : list of str, optional
        Columns that are categories although they hold numbers (e.g. codes 1, 2, 3):
        one-hot encoded (whole numbers as ``"1"``, ``"2"``, ..., whether read as
        integers or as floats), with the checks of a text column (identifier-like, at
        most ``max_categories`` values); the other columns are classified as above.
        With ``numeric`` / ``categorical`` lists, they are added to ``categorical``.
    max_categories : int, default 50
        A categorical column with more distinct values is refused (one-hot encoding
        it would add that many inputs).
    keep : list of str, optional
        Columns that are features even though they look like identifiers (by their
        values or by their name).

    ``fit(X, y)`` with a target (as a Pipeline passes it) also checks each column on its
    own against ``y`` and warns (:class:`~pymc_bnn.exceptions.TargetLeakageWarning`)
    naming any that predicts it almost perfectly (:func:`leaking_columns`).

    Attributes
    ----------
    numeric_columns_, categorical_columns_ : list of str
    categories_ : dict of str -> list of str
        The known categories of each categorical column (values as strings).
    ranges_ : dict of str -> (float, float)
        The smallest and largest value of each numeric column in ``fit``'s data
        (for :meth:`row_flags`).
    n_missing_ : dict of str -> int
        Missing values per input column in the data seen by ``fit`` (imputed).
    constant_columns_ : dict of str -> float or str
        Columns with a single value in ``fit``'s data (a number, or a category as a
        string), left out of the features; :meth:`row_flags` and
        :meth:`unseen_categories` name the rows of a later table where they differ.
    feature_names_in_ : ndarray of str
    n_features_in_ : int
    column_transformer_ : sklearn.compose.ColumnTransformer
        The fitted transformer doing the work.

    Examples
    --------
    >>> import pandas as pd
    >>> pre = TabularPreprocessor().fit(pd.DataFrame({"x": [1.0, 3.0], "ok": [True, False]}))
    >>> pre.transform(pd.DataFrame({"x": [2.0], "ok": [True]})).tolist()
    [[0.0, 0.0, 1.0]]
    """

    def __init__(
        self,
        *,
        numeric=None,
        categorical=None,
        max_categories: int = 50,
        keep=None,
        as_categorical=None,
    ):
        self.numeric = numeric
        self.categorical = categorical
        self.max_categories = max_categories
        self.keep = keep
        self.as_categorical = as_categorical

    # -------------------------------------------------------------------- fit
    def _forced_categorical(self) -> list[str]:
        """``as_categorical``, checked: a list of column names."""
        value = self.as_categorical
        if value is None:
            return []
        if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
            raise ValueError(f"as_categorical must be a list of column names; got {value!r}.")
        return [str(c) for c in value]

    def _kinds(self, frame: pd.DataFrame) -> tuple[list, list]:
        forced = self._forced_categorical()
        if self.numeric is None and self.categorical is None:
            keep = {str(c) for c in self.keep or []}
            self._check_columns(frame, sorted(keep | set(forced)))
            kinds = {
                c: column_kind(
                    c,
                    (
                        pd.Series(_strings(frame[c]), index=frame.index, dtype=object)
                        if str(c) in forced
                        else frame[c]
                    ),
                    self.max_categories,
                    str(c) in keep,
                    str(c) in forced,
                )
                for c in frame.columns
            }
            return (
                [c for c, k in kinds.items() if k == NUMERIC],
                [c for c, k in kinds.items() if k == CATEGORICAL],
            )
        numeric = [str(c) for c in self.numeric or []]
        categorical = [str(c) for c in self.categorical or []]
        categorical += [c for c in forced if c not in categorical]
        both = sorted(set(numeric) & set(categorical))
        if both:
            raise ValueError(f"columns {both} are listed as both numeric and categorical.")
        self._check_columns(frame, numeric + categorical)
        return numeric, categorical

    def fit(self, X, y=None):
        """Learn medians, means, scales and categories from the table ``X``.

        Parameters
        ----------
        X : pandas DataFrame of shape (n_samples, n_columns)
            (A 2-D array is accepted; its columns are named ``x0, x1, ...``.)
        y : array-like of shape (n_samples,), optional
            The target, if known: only for the leakage check (a
            :class:`~pymc_bnn.exceptions.TargetLeakageWarning` naming any column that
            alone predicts it almost perfectly).

        Returns
        -------
        self
        """
        frame = _as_frame(X)
        if frame.shape[0] == 0:
            raise ValueError("the table has no rows.")
        self._fit_columns(frame)
        if y is not None:
            used = set(self.feature_names_in_.tolist())
            leaks = leaking_columns(frame[[c for c in frame.columns if str(c) in used]], y)
            if leaks:
                warnings.warn(leak_message(leaks), TargetLeakageWarning, stacklevel=2)
        return self

    def _fit_columns(self, frame: pd.DataFrame) -> None:
        """The column kinds, imputation, scaling and categories of :meth:`fit`."""
        if frame.shape[1] == 0:
            raise ValueError("the table has no feature columns.")
        if not isinstance(self.max_categories, int) or self.max_categories < 2:
            raise ValueError(f"max_categories must be an int >= 2; got {self.max_categories!r}.")
        if len(set(map(str, frame.columns))) != frame.shape[1]:
            raise ValueError("the table has duplicated column names.")
        numeric, categorical = self._kinds(frame)
        if not numeric and not categorical:
            raise ValueError("no feature columns are left to learn from.")
        self.numeric_columns_ = [str(c) for c in numeric]
        self.categorical_columns_ = [str(c) for c in categorical]
        cast = self._cast(frame)  # (checks the values of every numeric column)
        self.constant_columns_ = self._constant_columns(cast)
        if self.constant_columns_:
            # A column with one value carries nothing to learn from, and were it kept, a
            # later table in which it varies would feed the network inputs that its
            # training never moved (a numeric one unscaled: its scale is undefined), so
            # that the predictions would shift for no learned reason. Left out, it cannot
            # change a prediction; row_flags still names the rows where it differs.
            constant = self.constant_columns_
            named = ", ".join(
                f"{c!r} ({_number_label(v) if isinstance(v, float) else repr(v)})"
                for c, v in constant.items()
            )
            many = len(constant) > 1
            warnings.warn(
                f"column{'s' if many else ''} {named} {'hold' if many else 'holds'} a single "
                "value in the training rows: nothing to learn from, so left out of the "
                f"features (rows of a later table where {'they differ' if many else 'it differs'} "
                "are flagged as outside the training range or as unseen categories).",
                UserWarning,
                stacklevel=3,
            )
            numeric = [c for c in numeric if str(c) not in constant]
            categorical = [c for c in categorical if str(c) not in constant]
            if not numeric and not categorical:
                raise ValueError(
                    "no feature columns are left to learn from: every column holds a single value."
                )
            self.numeric_columns_ = [str(c) for c in numeric]
            self.categorical_columns_ = [str(c) for c in categorical]
            cast = cast[self.numeric_columns_ + self.categorical_columns_]
        self.n_missing_ = {str(c): int(frame[c].isna().sum()) for c in numeric + categorical}
        self.column_transformer_ = _column_transformer(numeric, categorical).fit(cast)
        self.ranges_ = {}
        for c in self.numeric_columns_:
            seen = cast[c].to_numpy(dtype=np.float64)
            seen = seen[~np.isnan(seen)]
            if seen.size:
                self.ranges_[c] = (float(seen.min()), float(seen.max()))
        if categorical:
            encoder = self.column_transformer_.named_transformers_[CATEGORICAL]["onehot"]
            self.categories_ = {
                str(c): [str(v) for v in cats] for c, cats in zip(categorical, encoder.categories_)
            }
        else:
            self.categories_ = {}
        self.feature_names_in_ = np.array(
            self.numeric_columns_ + self.categorical_columns_, dtype=object
        )
        self.n_features_in_ = len(self.feature_names_in_)

    def _constant_columns(self, cast: pd.DataFrame) -> dict:
        """The columns of ``cast`` (:meth:`_cast`'s) with a single value: name -> value
        (a float, or a category's string); ValueError for a column with none (one the
        user listed: the others were checked by :func:`_column_kind`)."""
        out = {}
        for c in self.numeric_columns_ + self.categorical_columns_:
            values = pd.unique(cast[c].dropna())
            if len(values) == 0:
                raise ValueError(f"column {c!r} has no values (all missing): drop it.")
            if len(values) == 1:
                out[c] = float(values[0]) if c in self.numeric_columns_ else str(values[0])
        return out

    def _differs_from_constant(self, frame: pd.DataFrame, column: str) -> np.ndarray:
        """Rows of ``frame`` where a column that was constant in ``fit`` holds another
        value (text in a numeric one too: it was left out, so it is not checked)."""
        value = self.constant_columns_[column]
        present = frame[column].notna().to_numpy()
        if isinstance(value, float):
            numbers = pd.to_numeric(frame[column], errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan
            )
            return present & ~(numbers == value)
        return present & (_strings(frame[column], [value]) != value)

    # -------------------------------------------------------------- transform
    def _check_columns(self, frame: pd.DataFrame, needed) -> None:
        missing = [str(c) for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(
                f"the table lacks the column{'s' if len(missing) > 1 else ''} "
                f"{', '.join(map(repr, missing))}"
                + (" that the model needs." if hasattr(self, "n_features_in_") else ".")
            )

    def _cast(self, frame: pd.DataFrame, categories=None) -> pd.DataFrame:
        """The used columns with clean types: float64 numbers (ValueError naming a column
        with text in it), strings or NaN (``categories``: the fitted ones, if fitted)."""
        numeric, categorical = self.numeric_columns_, self.categorical_columns_
        out = {c: _numeric(frame, c) for c in numeric}
        out.update({c: _strings(frame[c], (categories or {}).get(c)) for c in categorical})
        return pd.DataFrame(out, index=frame.index, columns=list(numeric) + list(categorical))

    def transform(self, X) -> np.ndarray:
        """Encode a table with the statistics learned in ``fit``.

        Parameters
        ----------
        X : pandas DataFrame with (at least) the columns seen in ``fit``
            Extra columns are ignored; missing values are imputed; unseen categories
            become all-zero one-hot codes.

        Returns
        -------
        ndarray of shape (n_samples, n_features_out), float64
        """
        check_is_fitted(self)
        frame = _as_frame(X)
        self._check_columns(frame, self.feature_names_in_)
        return np.asarray(
            self.column_transformer_.transform(self._cast(frame, self.categories_)),
            dtype=np.float64,
        )

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the encoded features: ``column`` (numeric), ``column=category``.

        Returns
        -------
        ndarray of str, shape (n_features_out,)
        """
        check_is_fitted(self)
        names = list(self.numeric_columns_)
        for column in self.categorical_columns_:
            names += [f"{column}={v}" for v in self.categories_[column]]
        return np.array(names, dtype=object)

    def unseen_categories(self, X) -> dict[str, list[str]]:
        """Categories in ``X`` that ``fit`` never saw, per categorical column (and per
        categorical column left out for holding a single value, where ``X`` has it).

        Returns
        -------
        dict of column -> sorted list of unseen values (columns without any are left out)
        """
        check_is_fitted(self)
        frame = _as_frame(X)
        self._check_columns(frame, self.categorical_columns_)
        out = {}
        for column in self.categorical_columns_:
            values = _strings(frame[column], self.categories_[column])
            known = set(self.categories_[column])
            unseen = sorted({v for v in values[~pd.isna(values)] if v not in known})
            if unseen:
                out[column] = unseen
        for column, value in getattr(self, "constant_columns_", {}).items():
            if isinstance(value, str) and column in frame.columns:
                values = _strings(frame[column], [value])
                unseen = sorted({v for v in values[self._differs_from_constant(frame, column)]})
                if unseen:
                    out[column] = unseen
        return out

    #: A value is outside the training range when it is beyond the smallest or largest
    #: value seen in ``fit`` by more than this fraction of their difference: a margin,
    #: so that the test rows just past the extremes that any new sample has (about 2 in
    #: n + 1 rows of the same distribution) are not flagged.
    RANGE_MARGIN = 0.1

    def row_flags(self, X) -> pd.DataFrame:
        """Per row, the columns whose values the training data did not cover.

        Parameters
        ----------
        X : pandas DataFrame with the columns seen in ``fit``

        Returns
        -------
        pandas DataFrame with ``X``'s index and two text columns, ``""`` where nothing
        is flagged: ``unseen_categories`` (the categorical columns holding a category
        ``fit`` never saw, which the network sees as none of the known ones) and
        ``outside_training_range`` (the numeric columns whose value is beyond the
        training range by more than :attr:`RANGE_MARGIN` of its width: the network
        extrapolates there, and its uncertainty may not show it). A column left out for
        holding a single value in ``fit`` (:attr:`constant_columns_`) is named, where
        ``X`` has it, in the rows where it differs from that value: the model could not
        learn what the difference does. Column names are joined by ``", "``.

        Examples
        --------
        >>> import pandas as pd
        >>> pre = TabularPreprocessor().fit(pd.DataFrame({"x": [0.0, 1.0, 2.0],
        ...                                               "c": ["a", "b", "a"]}))
        >>> pre.row_flags(pd.DataFrame({"x": [1.0, 9.0], "c": ["z", "a"]})).values.tolist()
        [['c', ''], ['', 'x']]
        """
        check_is_fitted(self)
        frame = _as_frame(X)
        self._check_columns(frame, self.feature_names_in_)
        n = frame.shape[0]
        unseen = [[] for _ in range(n)]
        outside = [[] for _ in range(n)]
        for column in self.categorical_columns_:
            values = _strings(frame[column], self.categories_[column])
            known = set(self.categories_[column])
            for row in np.flatnonzero([not pd.isna(v) and v not in known for v in values]):
                unseen[row].append(column)
        for column, (low, high) in getattr(self, "ranges_", {}).items():
            values = _numeric(frame, column)
            margin = self.RANGE_MARGIN * (high - low)
            with np.errstate(invalid="ignore"):
                beyond = (values < low - margin) | (values > high + margin)
            for row in np.flatnonzero(beyond):
                outside[row].append(column)
        for column, value in getattr(self, "constant_columns_", {}).items():
            if column in frame.columns:  # (left out of the features: it may be absent)
                flagged = outside if isinstance(value, float) else unseen
                for row in np.flatnonzero(self._differs_from_constant(frame, column)):
                    flagged[row].append(column)
        return pd.DataFrame(
            {
                "unseen_categories": [", ".join(c) for c in unseen],
                "outside_training_range": [", ".join(c) for c in outside],
            },
            index=frame.index,
        )

    def count_missing(self, X) -> dict[str, int]:
        """Missing values per used column of ``X`` (they will be imputed)."""
        check_is_fitted(self)
        frame = _as_frame(X)
        self._check_columns(frame, self.feature_names_in_)
        return {str(c): int(frame[c].isna().sum()) for c in self.feature_names_in_}

    # ------------------------------------------------------------ plain state
    def get_state(self) -> dict:
        """The fitted state as plain JSON-able data (see :meth:`from_state`).

        Returns
        -------
        dict with ``numeric`` (a list of ``{name, median, mean, scale, min, max}``),
        ``categorical`` (a list of ``{name, mode, categories}``), ``n_missing``,
        ``max_categories``, ``version`` and, when some columns were left out for holding
        a single value, ``constant`` (a list of ``{name, kind, value}``; states without
        it, such as those saved before it existed, load as having none).
        """
        check_is_fitted(self)
        numeric, categorical = [], []
        ct = self.column_transformer_
        if self.numeric_columns_:
            steps = ct.named_transformers_[NUMERIC]
            imputer, scaler = steps["impute"], steps["scale"]
            for i, name in enumerate(self.numeric_columns_):
                numeric.append(
                    {
                        "name": name,
                        "median": float(imputer.statistics_[i]),
                        "mean": float(scaler.mean_[i]),
                        "scale": float(scaler.scale_[i]),
                    }
                )
                if name in getattr(self, "ranges_", {}):  # (files before it lack it)
                    numeric[-1]["min"], numeric[-1]["max"] = self.ranges_[name]
        if self.categorical_columns_:
            imputer = ct.named_transformers_[CATEGORICAL]["impute"]
            for i, name in enumerate(self.categorical_columns_):
                categorical.append(
                    {
                        "name": name,
                        "mode": str(imputer.statistics_[i]),
                        "categories": list(self.categories_[name]),
                    }
                )
        state = {
            "version": STATE_VERSION,
            "numeric": numeric,
            "categorical": categorical,
            "n_missing": dict(self.n_missing_),
            "max_categories": int(self.max_categories),
        }
        constant = getattr(self, "constant_columns_", {})
        if constant:  # (only when there are: the states saved before have no such key)
            state["constant"] = [
                {"name": c, "kind": NUMERIC if isinstance(v, float) else CATEGORICAL, "value": v}
                for c, v in constant.items()
            ]
        return state

    @classmethod
    def from_state(cls, state: dict) -> TabularPreprocessor:
        """A fitted preprocessor from :meth:`get_state`'s data; runs no stored code.

        The scikit-learn transformers are rebuilt with the stored categories, fit on
        a two-row table, and then given the stored medians, modes, means and scales;
        the result is checked to reproduce ``state``.

        Raises
        ------
        ValueError
            If ``state`` is malformed.
        """
        try:
            if state.get("version") != STATE_VERSION:
                raise ValueError(f"unknown preprocessing version {state.get('version')!r}")
            numeric = [dict(c) for c in state["numeric"]]
            categorical = [dict(c) for c in state["categorical"]]
            num_names = [str(c["name"]) for c in numeric]
            cat_names = [str(c["name"]) for c in categorical]
            categories = [[str(v) for v in c["categories"]] for c in categorical]
            pre = cls(max_categories=int(state["max_categories"]))
            pre.numeric_columns_, pre.categorical_columns_ = num_names, cat_names
            medians = np.array([c["median"] for c in numeric], dtype=np.float64)
            means = np.array([c["mean"] for c in numeric], dtype=np.float64)
            scales = np.array([c["scale"] for c in numeric], dtype=np.float64)
            modes = [str(c["mode"]) for c in categorical]
            ct = _column_transformer(num_names, cat_names, categories or "auto")
            rows = {name: np.array([m - s, m + s]) for name, m, s in zip(num_names, means, scales)}
            rows.update(
                {name: np.array([mode, mode], dtype=object) for name, mode in zip(cat_names, modes)}
            )
            ct.fit(pd.DataFrame(rows, columns=num_names + cat_names))
            if num_names:
                steps = ct.named_transformers_[NUMERIC]
                steps["impute"].fit(pd.DataFrame([medians], columns=num_names))
                scaler = steps["scale"]
                scaler.mean_, scaler.scale_, scaler.var_ = means, scales, scales**2
            if cat_names:
                ct.named_transformers_[CATEGORICAL]["impute"].fit(
                    pd.DataFrame([modes], columns=cat_names, dtype=object)
                )
            pre.column_transformer_ = ct
            pre.categories_ = dict(zip(cat_names, categories))
            pre.ranges_ = {
                str(c["name"]): (float(c["min"]), float(c["max"]))
                for c in numeric
                if "min" in c and "max" in c
            }
            pre.n_missing_ = {str(k): int(v) for k, v in state["n_missing"].items()}
            constant = [dict(c) for c in state.get("constant", [])]
            pre.constant_columns_ = {}
            for c in constant:
                if c["kind"] not in (NUMERIC, CATEGORICAL) or c["name"] in num_names + cat_names:
                    raise ValueError(f"bad constant column {c!r}")
                pre.constant_columns_[str(c["name"])] = (
                    float(c["value"]) if c["kind"] == NUMERIC else str(c["value"])
                )
            pre.feature_names_in_ = np.array(num_names + cat_names, dtype=object)
            pre.n_features_in_ = len(pre.feature_names_in_)
            rebuilt = pre.get_state()
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"malformed preprocessing state: {err}") from None
        expected = {**state, "numeric": numeric, "categorical": categorical}
        expected.pop("constant", None)
        if constant:
            expected["constant"] = constant
        if rebuilt != expected:
            raise ValueError("malformed preprocessing state: it does not rebuild to itself.")
        return pre
