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
  network cannot learn from a row number, and dates need features chosen by the user.

Its fitted state is plain data (:meth:`TabularPreprocessor.get_state`: medians,
means, scales, categories), which :func:`pymc_bnn.pipeline.save_pipeline` writes into
the same no-pickle model file as the network, so that loading a model never runs code.

:func:`pymc_bnn.pipeline.make_tabular_pipeline` puts a preprocessor in front of an
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

import re
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

__all__ = [
    "TabularPreprocessor",
    "infer_task",
    "leaking_columns",
]

NUMERIC, CATEGORICAL = "numeric", "categorical"

#: A numeric target with at most this many distinct integer values is a classification
#: target under ``infer_task`` (e.g. 0/1, or ratings 1..5); more is regression.
MAX_INTEGER_CLASSES = 10

#: State format of :meth:`TabularPreprocessor.get_state`.
STATE_VERSION = 1

_DATE_PATTERN = re.compile(
    r"^\s*(\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?"
    r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"
    r"|\d{1,2}:\d{2}(:\d{2})?)\s*$"
)


# ----------------------------------------------------------------------- columns
def _is_categorical_dtype(series: pd.Series) -> bool:
    dtype = series.dtype
    return (pd.api.types.is_bool_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype)
            or pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype))


def _looks_like_dates(values: pd.Series) -> bool:
    """Most non-missing values are strings shaped like dates or times."""
    strings = values.dropna()
    strings = strings[strings.map(lambda v: isinstance(v, str))]
    if len(strings) == 0 or len(strings) < 0.9 * values.notna().sum():
        return False
    sample = strings.iloc[:200]
    return sample.map(lambda v: bool(_DATE_PATTERN.match(v))).mean() >= 0.9


#: Identifier tests: the chance, were the column's distinct integers independent draws
#: from the range they span, that none would repeat, below which they are taken for an
#: identifier; and the rank correlation with the row order above which they are.
ID_NO_REPEAT_CHANCE = 1e-6
ID_ROW_ORDER_RANK_CORRELATION = 0.99


def _identifier_reason(series: pd.Series) -> str | None:
    """Why a numeric column looks like a row number or identifier, or None.

    Only whole numbers, each once, in at least 20 rows, are candidates; a train/test
    split or a shuffle cannot hide any of the signs:

    - consecutive (a row number);
    - in (or near, rank correlation >= :data:`ID_ROW_ORDER_RANK_CORRELATION`) the
      order of the rows, increasing or decreasing (ids assigned as rows were added);
    - all different although they span a narrow range: ``n`` values drawn from ``R``
      possible ones all differ with chance about ``exp(-n (n - 1) / (2 R))`` (the
      birthday problem); below :data:`ID_NO_REPEAT_CHANCE` measurements would have
      repeated (a sample of the ids ``1..N`` spans about ``N`` for ``n`` of them).
    """
    values = series.dropna().to_numpy()
    n = len(values)
    if n < 20 or not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
        return None
    if len(np.unique(values)) != n:
        return None
    ordered = np.sort(values)
    if np.all(np.diff(ordered) == 1):
        return f"consecutive integers {ordered[0]:.0f}..{ordered[-1]:.0f}, each once"
    ranks = np.argsort(np.argsort(values))
    rho = np.corrcoef(ranks, np.arange(n))[0, 1]
    if abs(rho) >= ID_ROW_ORDER_RANK_CORRELATION:
        way = "increase" if rho > 0 else "decrease"
        return f"distinct integers that {way} with the row order (rank correlation {rho:.3f})"
    span = float(ordered[-1] - ordered[0] + 1)
    if -n * (n - 1) / (2 * span) < np.log(ID_NO_REPEAT_CHANCE):
        return (f"{n} distinct integers within {ordered[0]:.0f}..{ordered[-1]:.0f}: "
                "measurements in so narrow a range would repeat")
    return None


def _column_kind(name, series: pd.Series, max_categories: int, keep: bool = False) -> str:
    """``"numeric"`` or ``"categorical"``; ValueError for dates, identifiers, empty columns
    (``keep``: the user says it is a feature, the identifier tests are skipped)."""
    n_present = int(series.notna().sum())
    if n_present == 0:
        raise ValueError(f"column {name!r} has no values (all missing): drop it.")
    dtype = series.dtype
    if (pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype)
            or isinstance(dtype, pd.PeriodDtype)):
        raise ValueError(f"column {name!r} holds dates or times, which pymc_bnn does not encode: "
                         "drop it, or derive numeric features from it (e.g. a year or a day "
                         "of the week) first.")
    n_distinct = int(series.nunique(dropna=True))
    if _is_categorical_dtype(series):
        if pd.api.types.is_bool_dtype(dtype):
            return CATEGORICAL
        if _looks_like_dates(series):
            raise ValueError(f"column {name!r} holds dates or times (e.g. "
                             f"{series.dropna().iloc[0]!r}), which pymc_bnn does not encode: "
                             "drop it, or derive numeric features from it first.")
        if n_distinct == n_present and n_present >= 20 and not keep:
            raise ValueError(f"column {name!r} looks like an identifier (a different value in "
                             f"each of its {n_present} rows), from which nothing can be "
                             "learned: drop it.")
        if n_distinct > max_categories:
            raise ValueError(f"column {name!r} has {n_distinct} distinct values, more than "
                             f"max_categories={max_categories} for one-hot encoding: drop it, "
                             "or raise the limit.")
        return CATEGORICAL
    if pd.api.types.is_numeric_dtype(dtype):
        reason = None if keep else _identifier_reason(series)
        if reason is not None:
            raise ValueError(f"column {name!r} looks like a row number or identifier "
                             f"({reason}), from which nothing can be learned and through "
                             "which a table's order can leak the target: drop it (or keep "
                             "it, if it is a real measurement).")
        return NUMERIC
    raise ValueError(f"column {name!r} has values of type {dtype}, which pymc_bnn cannot "
                     "encode: drop it, or convert it to numbers or strings.")


#: Leakage check: rows it looks at (a seeded subset beyond), and the scores above which
#: one column alone "predicts the target almost perfectly": the rank correlation of a
#: numeric column with a numeric target; the cross-validated accuracy of a depth-3 tree
#: on the column for classes (counted only when the majority class is rarer than that).
LEAK_MAX_ROWS = 10_000
LEAK_RANK_CORRELATION = 0.99
LEAK_ACCURACY = 0.99


def leaking_columns(frame: pd.DataFrame, y) -> list[tuple[str, str]]:
    """Columns that alone predict ``y`` almost perfectly, with how well.

    A real feature rarely does; a column derived from the target, or an identifier of
    a table sorted by the target, does. Regression targets (:func:`infer_task`): the
    Spearman rank correlation of each numeric column with ``y``, flagged at
    :data:`LEAK_RANK_CORRELATION` in absolute value. Classes: the 3-fold
    cross-validated accuracy of a depth-3 decision tree on the column alone (numbers, or
    category codes), flagged at :data:`LEAK_ACCURACY` when the most frequent class is
    rarer than that.

    Returns
    -------
    list of (column, description)
    """
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.tree import DecisionTreeClassifier

    y = pd.Series(np.asarray(y)).reset_index(drop=True)
    frame = frame.reset_index(drop=True)
    present = y.notna().to_numpy()
    frame, y = frame.loc[present], y.loc[present]
    if len(y) > LEAK_MAX_ROWS:
        rows = np.sort(np.random.default_rng(0).choice(len(y), LEAK_MAX_ROWS, replace=False))
        frame, y = frame.iloc[rows], y.iloc[rows]
    if len(y) < 20:
        return []
    regression = infer_task(y.to_numpy()) == "regression"
    out = []
    for column in frame.columns:
        values = frame[column]
        if regression:
            if not pd.api.types.is_numeric_dtype(values.dtype) or _is_categorical_dtype(values):
                continue
            rho = values.astype(float).corr(pd.to_numeric(y), method="spearman")
            if np.isfinite(rho) and abs(rho) >= LEAK_RANK_CORRELATION:
                out.append((str(column), f"rank correlation {rho:.4f} with the target"))
            continue
        labels = y.astype(str).to_numpy()
        counts = pd.Series(labels).value_counts()
        if counts.iloc[0] / len(labels) >= LEAK_ACCURACY or counts.iloc[-1] < 3:
            continue
        if _is_categorical_dtype(values) or not pd.api.types.is_numeric_dtype(values.dtype):
            codes = pd.factorize(values.astype(str).where(values.notna()))[0].astype(float)
        else:
            codes = values.astype(float).fillna(values.median()).to_numpy()
        accuracy = cross_val_score(
            DecisionTreeClassifier(max_depth=3, random_state=0), codes.reshape(-1, 1), labels,
            cv=StratifiedKFold(3, shuffle=True, random_state=0)).mean()
        if accuracy >= LEAK_ACCURACY:
            out.append((str(column), f"alone, a small tree is {accuracy:.1%} accurate"))
    return out


def leak_message(leaks) -> str:
    named = "; ".join(f"{c!r} ({how})" for c, how in leaks)
    return (f"a single column predicts the target almost perfectly: {named}. If it is "
            "derived from the target, or an identifier of a table sorted by it, drop it: "
            "the model will fail on new data.")


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
        raise ValueError(f"{what} must be a table (a DataFrame or a 2-D array); got an "
                         f"array of shape {array.shape}.")
    return pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])])


def _numeric(frame: pd.DataFrame, name) -> np.ndarray:
    """A column as float64; ValueError naming the column and a bad value."""
    column = frame[name]
    if pd.api.types.is_bool_dtype(column.dtype):
        raise ValueError(f"column {name!r} holds true/false values, but the model was fit "
                         "with numbers in it.")
    values = pd.to_numeric(column, errors="coerce")
    bad = values.isna() & column.notna()
    if bad.any():
        row = bad.to_numpy().nonzero()[0][0]
        raise ValueError(f"column {name!r} should hold numbers, but row {row + 1} (counting "
                         f"from 1) holds {column.iloc[row]!r}.")
    return values.to_numpy(dtype=np.float64)


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
        out[~missing] = [str(v) if str(v) in known else _number_label(v)
                         for v in values[~missing]]
    else:
        out[~missing] = [str(v) for v in values[~missing]]
    return out


def infer_task(y, *, max_integer_classes: int = MAX_INTEGER_CLASSES) -> str:
    """``"classification"`` or ``"regression"`` for a target column.

    A target of strings, booleans or pandas categories, or of numbers that are all
    integers with at most ``max_integer_classes`` distinct values, is a classification
    target; any other numeric target is a regression target.

    Parameters
    ----------
    y : pandas Series or array of shape (n_samples,)
        The target, missing values allowed (ignored).

    Returns
    -------
    str

    Examples
    --------
    >>> infer_task(["yes", "no", "yes"]), infer_task([0, 1, 2, 1]), infer_task([0.5, 1.7])
    ('classification', 'classification', 'regression')
    """
    series = pd.Series(y).dropna()
    if _is_categorical_dtype(series):
        values = pd.to_numeric(series, errors="coerce")
        if values.isna().any() or len(values) == 0:
            return "classification"
        series = values
    values = series.to_numpy(dtype=np.float64)
    integers = np.all(np.isfinite(values) & (values == np.round(values)))
    n_distinct = len(np.unique(values))
    return "classification" if integers and n_distinct <= max_integer_classes else "regression"


# ------------------------------------------------------------------ preprocessor
def _column_transformer(numeric: list, categorical: list, categories="auto") -> ColumnTransformer:
    parts = []
    if numeric:
        parts.append((NUMERIC, Pipeline([("impute", SimpleImputer(strategy="median")),
                                         ("scale", StandardScaler())]), list(numeric)))
    if categorical:
        parts.append((CATEGORICAL, Pipeline([
            ("impute", SimpleImputer(strategy="most_frequent")),
            ("onehot", OneHotEncoder(categories=categories, handle_unknown="ignore",
                                     sparse_output=False, dtype=np.float64)),
        ]), list(categorical)))
    return ColumnTransformer(parts, remainder="drop", sparse_threshold=0.0,
                             verbose_feature_names_out=False)


class TabularPreprocessor(TransformerMixin, BaseEstimator):
    """Impute, standardise and one-hot encode the columns of a table.

    Parameters
    ----------
    numeric, categorical : list of str, optional
        Columns to treat as numeric / categorical. By default every column is
        classified from its type: numbers are numeric; strings, booleans and pandas
        categories are categorical; dates, identifier-like columns (a different string
        in every row; whole numbers, each once, that are consecutive, follow the row
        order, or are too tightly packed to be measurements) and columns with no values
        raise a ValueError that names the column. When either list is given, only the
        listed columns are used.
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
        Columns that are features even though they look like identifiers.

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

    def __init__(self, *, numeric=None, categorical=None, max_categories: int = 50,
                 keep=None, as_categorical=None):
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
            kinds = {c: _column_kind(c, (pd.Series(_strings(frame[c]), index=frame.index,
                                                   dtype=object)
                                         if str(c) in forced else frame[c]),
                                     self.max_categories, str(c) in keep)
                     for c in frame.columns}
            return ([c for c, k in kinds.items() if k == NUMERIC],
                    [c for c, k in kinds.items() if k == CATEGORICAL])
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
        self.n_missing_ = {str(c): int(frame[c].isna().sum()) for c in numeric + categorical}
        cast = self._cast(frame)
        self.column_transformer_ = _column_transformer(numeric, categorical).fit(cast)
        self.ranges_ = {}
        for c in self.numeric_columns_:
            seen = cast[c].to_numpy(dtype=np.float64)
            seen = seen[~np.isnan(seen)]
            if seen.size:
                self.ranges_[c] = (float(seen.min()), float(seen.max()))
        if categorical:
            encoder = self.column_transformer_.named_transformers_[CATEGORICAL]["onehot"]
            self.categories_ = {str(c): [str(v) for v in cats]
                                for c, cats in zip(categorical, encoder.categories_)}
        else:
            self.categories_ = {}
        self.feature_names_in_ = np.array(self.numeric_columns_ + self.categorical_columns_,
                                          dtype=object)
        self.n_features_in_ = len(self.feature_names_in_)

    # -------------------------------------------------------------- transform
    def _check_columns(self, frame: pd.DataFrame, needed) -> None:
        missing = [str(c) for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(f"the table lacks the column{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(map(repr, missing))}"
                             + (" that the model needs." if hasattr(self, "n_features_in_")
                                else "."))

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
        return np.asarray(self.column_transformer_.transform(self._cast(frame, self.categories_)),
                          dtype=np.float64)

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
        """Categories in ``X`` that ``fit`` never saw, per categorical column.

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
        extrapolates there, and its uncertainty may not show it). Column names are
        joined by ``", "``.

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
        return pd.DataFrame({"unseen_categories": [", ".join(c) for c in unseen],
                             "outside_training_range": [", ".join(c) for c in outside]},
                            index=frame.index)

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
        ``max_categories`` and ``version``.
        """
        check_is_fitted(self)
        numeric, categorical = [], []
        ct = self.column_transformer_
        if self.numeric_columns_:
            steps = ct.named_transformers_[NUMERIC]
            imputer, scaler = steps["impute"], steps["scale"]
            for i, name in enumerate(self.numeric_columns_):
                numeric.append({"name": name, "median": float(imputer.statistics_[i]),
                                "mean": float(scaler.mean_[i]), "scale": float(scaler.scale_[i])})
                if name in getattr(self, "ranges_", {}):  # (files before it lack it)
                    numeric[-1]["min"], numeric[-1]["max"] = self.ranges_[name]
        if self.categorical_columns_:
            imputer = ct.named_transformers_[CATEGORICAL]["impute"]
            for i, name in enumerate(self.categorical_columns_):
                categorical.append({"name": name, "mode": str(imputer.statistics_[i]),
                                    "categories": list(self.categories_[name])})
        return {"version": STATE_VERSION, "numeric": numeric, "categorical": categorical,
                "n_missing": dict(self.n_missing_), "max_categories": int(self.max_categories)}

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
            rows.update({name: np.array([mode, mode], dtype=object)
                         for name, mode in zip(cat_names, modes)})
            ct.fit(pd.DataFrame(rows, columns=num_names + cat_names))
            if num_names:
                steps = ct.named_transformers_[NUMERIC]
                steps["impute"].fit(pd.DataFrame([medians], columns=num_names))
                scaler = steps["scale"]
                scaler.mean_, scaler.scale_, scaler.var_ = means, scales, scales**2
            if cat_names:
                ct.named_transformers_[CATEGORICAL]["impute"].fit(
                    pd.DataFrame([modes], columns=cat_names, dtype=object))
            pre.column_transformer_ = ct
            pre.categories_ = dict(zip(cat_names, categories))
            pre.ranges_ = {str(c["name"]): (float(c["min"]), float(c["max"]))
                           for c in numeric if "min" in c and "max" in c}
            pre.n_missing_ = {str(k): int(v) for k, v in state["n_missing"].items()}
            pre.feature_names_in_ = np.array(num_names + cat_names, dtype=object)
            pre.n_features_in_ = len(pre.feature_names_in_)
            rebuilt = pre.get_state()
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"malformed preprocessing state: {err}") from None
        if rebuilt != {**state, "numeric": numeric, "categorical": categorical}:
            raise ValueError("malformed preprocessing state: it does not rebuild to itself.")
        return pre


#: Moved to :mod:`pymc_bnn.pipeline`; still importable from here.
_MOVED = ("BayesianPipeline", "load_pipeline", "make_tabular_pipeline", "save_pipeline")


def __getattr__(name: str):
    """The pipeline helpers that moved to :mod:`pymc_bnn.pipeline` (which builds on
    this module), for code that imports them from here."""
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module("pymc_bnn.pipeline"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
