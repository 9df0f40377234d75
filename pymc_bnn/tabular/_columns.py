"""Which columns of a user's table can be features, and what kind: the rules.

:class:`pymc_bnn.tabular.TabularPreprocessor` asks :func:`column_kind` of each column
("numeric" or "categorical", or a ValueError saying why the column cannot be a feature:
dates, identifiers, numbers with stray text, values beyond float32, no values), and the
command line asks :func:`leaking_columns` which columns alone predict the target almost
perfectly (a copy of the target, an identifier of a table sorted by it). Kept apart from
the preprocessor: these are judgements about data, each with its threshold and reason,
and they grow as users' tables teach new ones.
"""

from __future__ import annotations

import datetime
import re
import warnings

import numpy as np
import pandas as pd

from pymc_bnn.tabular._number_text import DECIMAL_COMMA, number_notation

__all__ = [
    "CATEGORICAL",
    "FLOAT32_MAX",
    "NUMERIC",
    "column_kind",
    "infer_task",
    "leak_message",
    "leaking_columns",
    "plain",
    "rows_text",
]

NUMERIC, CATEGORICAL = "numeric", "categorical"

#: A numeric target with at most this many distinct integer values is a classification
#: target under ``infer_task`` (e.g. 0/1, or ratings 1..5); more is regression.
MAX_INTEGER_CLASSES = 10

#: The largest magnitude a numeric feature may have: the network's predictive is
#: computed in float32 (JAX), where anything beyond this becomes infinite.
FLOAT32_MAX = float(np.finfo(np.float32).max)

#: Share of a column's values (of its non-missing ones) that must be dates, or numbers,
#: for it to be taken for a date column, or for a numeric column with stray text in it.
DATE_SHARE = 0.9
NUMBER_SHARE = 0.9

# A string is a date candidate when it holds a month's name next to a digit, three digit
# groups separated by - / . in a day-month-year or year-month-day layout, or a time of
# day; pandas' parser then has the last word, so that "Model Mar 5" or "2023-13-45"
# are not dates. The layouts ask for a four-digit year first, or a two- or four-digit
# year last: "1.2.3" (a version) and "A-12" (a code) are not dates, "01.02.23" is.
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|"
    "november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
)
_MONTH_NAME = re.compile(rf"(?<![a-z])({_MONTHS})\.?(?![a-z])", re.IGNORECASE)
_DIGIT_DATE = re.compile(
    r"(?<!\d)(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    r"|\d{1,2}[-/.]\d{1,2}[-/.](\d{4}|\d{2}))(?!\d)"
)
_TIME = re.compile(r"(?<!\d)\d{1,2}:\d{2}(?!\d)")
_DATE_OBJECTS = (datetime.date, datetime.time, np.datetime64)

#: Identifier test by name: a column of whole numbers, each once, whose name has one of
#: these words (split at non-alphanumerics and camelCase: ``OrderID`` is "order", "id")
#: anywhere, or one of :data:`ID_LAST_WORDS` as its last word ("account_number", but not
#: "number_of_rooms" or "num_employees": counts, whose values may well all differ).
#: "code" is not one: zip or product codes are categories, not row labels.
ID_WORDS = frozenset({"id", "uuid", "guid", "pk"})
ID_LAST_WORDS = frozenset({"no", "nr", "num", "number", "key", "index", "idx"})
_NAME_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


# ----------------------------------------------------------------------- columns
def _is_categorical_dtype(series: pd.Series) -> bool:
    dtype = series.dtype
    return (
        pd.api.types.is_bool_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def rows_text(index: pd.Index, positions) -> str:
    """Rows as a message names them: by their place, ``row 12 (counting from 1)``, when
    ``index`` is the default ``0, 1, ...`` (a table read from a file; the command line
    says "after the header"), else by their index labels."""
    positions = [int(p) for p in positions]
    plural = "s" if len(positions) > 1 else ""
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return f"row{plural} {', '.join(str(p + 1) for p in positions)} (counting from 1)"
    return f"the row{plural} labelled {', '.join(repr(plain(index[p])) for p in positions)}"


def plain(value):
    """A cell's value in a message: ``66.8``, ``'basic'`` (not ``np.float64(66.8)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _is_date_string(value: str) -> bool:
    if _DIGIT_DATE.search(value) or _TIME.search(value):
        return True
    return bool(_MONTH_NAME.search(value)) and any(ch.isdigit() for ch in value)


def _looks_like_dates(values: pd.Series) -> bool:
    """At least :data:`DATE_SHARE` of the non-missing values are dates or times: date /
    time objects (what pyarrow gives for a Parquet date column), or strings shaped like
    one (see :func:`_is_date_string`) that pandas' parser reads as one (checked on up to
    200 values spread over the column)."""
    present = values.dropna()
    if len(present) == 0:
        return False
    if len(present) > 200:
        present = present.iloc[np.linspace(0, len(present) - 1, 200).round().astype(int)]
    objects = present.map(lambda v: isinstance(v, _DATE_OBJECTS)).to_numpy(dtype=bool)
    candidates = present.map(lambda v: isinstance(v, str) and _is_date_string(v))
    candidates = candidates.to_numpy(dtype=bool)
    if (objects | candidates).mean() < DATE_SHARE:
        return False
    parsed = np.zeros(len(present), dtype=bool)
    if candidates.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas' notes on the inferred layout
            when = pd.to_datetime(
                pd.Series(present[candidates].to_numpy(), dtype=object),
                errors="coerce",
                format="mixed",
                utc=True,
            )
        parsed[candidates] = when.notna().to_numpy()
    return (objects | parsed).mean() >= DATE_SHARE


def _stray_text(series: pd.Series) -> tuple[np.ndarray, list] | None:
    """(positions, values) of the cells of a text column that are not numbers, when at
    least :data:`NUMBER_SHARE` of its non-missing values are numbers (and some are not):
    a numeric column with a "?", "unknown" or a typo in it, which pandas reads as text."""
    values = series.astype(object)
    present = values.notna().to_numpy()
    if not present.any():
        return None
    numbers = pd.to_numeric(values, errors="coerce").notna().to_numpy()
    stray = present & ~numbers
    if not stray.any() or numbers.sum() < NUMBER_SHARE * present.sum():
        return None
    positions = np.flatnonzero(stray)
    return positions, [plain(values.iloc[p]) for p in positions]


def _all_numbers(series: pd.Series) -> bool:
    """An object column whose values are all numbers (floats or integers, not text and
    not true/false), as a DataFrame built from Python lists may have: numeric."""
    if not pd.api.types.is_object_dtype(series.dtype):
        return False
    return pd.api.types.infer_dtype(series, skipna=True) in (
        "integer",
        "floating",
        "mixed-integer-float",
    )


#: Fewest rows a value, on average, of a text column with more values than
#: ``max_categories`` for the advice to raise that limit: below it most values are seen
#: in a row or two of the training rows (and many test values not at all), so no limit
#: makes the column learnable (a 8,395-value column in 26,217 rows: about 3 a value).
MIN_ROWS_PER_CATEGORY = 5

#: Identifier tests: the chance, were the column's distinct integers independent draws
#: from the range they span, that none would repeat, below which they are taken for an
#: identifier; and the rank correlation with the row order above which they are.
ID_NO_REPEAT_CHANCE = 1e-6
ID_ROW_ORDER_RANK_CORRELATION = 0.99


def _id_word(name) -> str | None:
    """The word of a column's name that says it labels rows (:data:`ID_WORDS`,
    :data:`ID_LAST_WORDS`), or None."""
    words = [w.lower() for w in _NAME_WORDS.findall(str(name))]
    found = [w for w in words if w in ID_WORDS]
    if found:
        return found[0]
    return words[-1] if words and words[-1] in ID_LAST_WORDS else None


def _identifier_reason(series: pd.Series, name=None) -> str | None:
    """Why a numeric column looks like a row number or identifier, or None.

    Only whole numbers, each once, in at least 20 rows, are candidates; a train/test
    split or a shuffle cannot hide any of the signs:

    - consecutive (a row number);
    - in (or near, rank correlation >= :data:`ID_ROW_ORDER_RANK_CORRELATION`) the
      order of the rows, increasing or decreasing (ids assigned as rows were added);
    - all different although they span a narrow range: ``n`` values drawn from ``R``
      possible ones all differ with chance about ``exp(-n (n - 1) / (2 R))`` (the
      birthday problem); below :data:`ID_NO_REPEAT_CHANCE` measurements would have
      repeated (a sample of the ids ``1..N`` spans about ``N`` for ``n`` of them);
    - a ``name`` that says so (:func:`_id_word`: ``customer_no``, ``OrderID``): random
      ids over a wide range show none of the signs above, their name does.
    """
    values = series.dropna().to_numpy(dtype=np.float64)
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
        return (
            f"{n} distinct integers within {ordered[0]:.0f}..{ordered[-1]:.0f}: "
            "measurements in so narrow a range would repeat"
        )
    word = None if name is None else _id_word(name)
    if word is not None:
        return f"{n} whole numbers, each once, under a name with the word {word!r} in it"
    return None


def column_kind(
    name, series: pd.Series, max_categories: int, keep: bool = False, declared: bool = False
) -> str:
    """``"numeric"`` or ``"categorical"``; ValueError for dates, identifiers, empty columns,
    numbers with stray text (``keep``: the user says it is a feature, the identifier
    tests are skipped; ``declared``: the user made it categorical, stray text is a
    category)."""
    n_present = int(series.notna().sum())
    if n_present == 0:
        raise ValueError(f"column {name!r} has no values (all missing): drop it.")
    dtype = series.dtype
    if (
        pd.api.types.is_datetime64_any_dtype(dtype)
        or pd.api.types.is_timedelta64_dtype(dtype)
        or isinstance(dtype, pd.PeriodDtype)
    ):
        raise ValueError(
            f"column {name!r} holds dates or times, which pymc_bnn does not encode: "
            "drop it, or derive numeric features from it (e.g. a year or a day "
            "of the week) first."
        )
    if _all_numbers(series):
        series = pd.to_numeric(series)  # (a new Series: the caller's is not changed)
        dtype = series.dtype
    n_distinct = int(series.nunique(dropna=True))
    if _is_categorical_dtype(series):
        if pd.api.types.is_bool_dtype(dtype):
            return CATEGORICAL
        # dates first: unique dates would otherwise be refused as an identifier, and
        # repeated ones one-hot encoded
        if _looks_like_dates(series):
            example = plain(series.dropna().iloc[0])
            raise ValueError(
                f"column {name!r} holds dates or times (e.g. "
                f"{str(example)!r}), which pymc_bnn does not encode: "
                "drop it, or derive numeric features from it first."
            )
        # a column the user declared categorical (as_categorical, or a pandas category
        # dtype) may hold numbers and words alike
        declared = declared or isinstance(dtype, pd.CategoricalDtype)
        stray = None if declared else _stray_text(series)
        if stray is not None:
            positions, values = stray
            shown = ", ".join(map(repr, values[:5])) + (", ..." if len(values) > 5 else "")
            more = f" ({len(values)} cells in all)" if len(values) > 5 else ""
            raise ValueError(
                f"column {name!r} holds numbers except in {rows_text(series.index, positions[:5])}"
                f"{more}: {shown}. Blank those cells (missing values are imputed) or fix "
                f"them; if the column is really categorical, say so (as_categorical="
                f"[{str(name)!r}] in Python, --categorical {name} on the command line)."
            )
        notation = None if declared else number_notation(series)
        if notation is not None:
            example = next(v for v in series.dropna() if "," in str(v))
            how = "decimal=',', thousands='.'" if notation == DECIMAL_COMMA else "thousands=','"
            raise ValueError(
                f"column {name!r} holds numbers written with {notation}s (e.g. "
                f"{str(example)!r}), which would be read as categories: read the table with "
                f"pandas.read_csv(..., {how}) (the command line does so itself), or declare "
                f"the column categorical if it is one."
            )
        if n_distinct == n_present and n_present >= 20 and not keep:
            raise ValueError(
                f"column {name!r} looks like an identifier (a different value in "
                f"each of its {n_present} rows), from which nothing can be "
                "learned: drop it."
            )
        if n_distinct > max_categories and n_present < MIN_ROWS_PER_CATEGORY * n_distinct:
            raise ValueError(
                f"column {name!r} has {n_distinct:,} distinct values in "
                f"{n_present:,} rows, too few rows a value to learn from (an "
                "identifier or free text?): drop it."
            )
        if n_distinct > max_categories:
            raise ValueError(
                f"column {name!r} has {n_distinct} distinct values, more than "
                f"max_categories={max_categories} for one-hot encoding: drop it, "
                "or raise the limit (max_categories in Python, --max-categories "
                "on the command line)."
            )
        return CATEGORICAL
    if pd.api.types.is_numeric_dtype(dtype):
        reason = None if keep else _identifier_reason(series, name)
        if reason is not None:
            raise ValueError(
                f"column {name!r} looks like a row number or identifier "
                f"({reason}), from which nothing can be learned and through "
                "which a table's order can leak the target: drop it (or keep "
                "it, if it is a real measurement)."
            )
        return NUMERIC
    raise ValueError(
        f"column {name!r} has values of type {dtype}, which pymc_bnn cannot "
        "encode: drop it, or convert it to numbers or strings."
    )


#: Leakage check: rows it looks at (a seeded subset beyond), and the scores above which
#: one column alone "predicts the target almost perfectly": the rank correlation of a
#: numeric column with a numeric target; the cross-validated accuracy of a depth-3 tree
#: on the column for classes (counted only when the majority class is rarer than that);
#: for a categorical column and a numeric target, the cross-fitted R² of its categories'
#: mean targets. 0.98 is about 0.99², the variance that a relation with correlation
#: 0.99 explains: the same bar as the rank correlation's.
LEAK_MAX_ROWS = 10_000
LEAK_RANK_CORRELATION = 0.99
LEAK_ACCURACY = 0.99
LEAK_R2 = 0.98
#: The R² is scored on the rows whose category the other folds saw, when they are
#: at least this share of the rows (:func:`_category_mean_r2`).
LEAK_CATEGORY_COVERAGE = 0.9


def _category_mean_r2(values: pd.Series, target: np.ndarray) -> float:
    """R² of predicting ``target`` by the mean target of each row's category, learned on
    the other two of three seeded folds (missing values are a category of their own).

    Cross-fitting keeps a column with a different value in (nearly) every row from
    scoring by memorising. A row whose category the fold's training part lacks says
    nothing either way and is left out of the score, rather than predicted by the mean:
    a text copy of a target with 41 values in 300 rows has a few such rows, and they
    alone would pull its R² below the bar. NaN when more than a tenth of the rows are
    left out (mostly rare categories: nothing to score on).
    """
    from sklearn.model_selection import KFold

    codes = pd.factorize(values.astype(str).where(values.notna()))[0]  # missing: -1
    predicted = np.full(len(target), np.nan)
    for train, test in KFold(3, shuffle=True, random_state=0).split(target):
        means = pd.Series(target[train]).groupby(codes[train]).mean()
        predicted[test] = pd.Series(codes[test]).map(means).to_numpy(dtype=np.float64)
    seen = ~np.isnan(predicted)
    if seen.mean() < LEAK_CATEGORY_COVERAGE:
        return np.nan
    with np.errstate(all="ignore"):
        scored = target[seen]
        total = np.sum((scored - scored.mean()) ** 2)
        return float(1.0 - np.sum((scored - predicted[seen]) ** 2) / total) if total > 0 else np.nan


def _leak(values: pd.Series, y: pd.Series, regression: bool) -> str | None:
    """How well the column ``values`` alone predicts ``y``, if almost perfectly."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.tree import DecisionTreeClassifier

    if _all_numbers(values):  # numeric to the preprocessor too
        values = pd.to_numeric(values)
    numeric = pd.api.types.is_numeric_dtype(values.dtype) and not _is_categorical_dtype(values)
    if regression:
        target = pd.to_numeric(y).astype(float)
        if numeric:
            rho = values.astype(float).corr(target, method="spearman")
            if np.isfinite(rho) and abs(rho) >= LEAK_RANK_CORRELATION:
                return f"rank correlation {rho:.4f} with the target"
            return None
        finite = np.isfinite(target.to_numpy())
        r2 = _category_mean_r2(values[finite], target.to_numpy()[finite])
        if np.isfinite(r2) and r2 >= LEAK_R2:
            return f"the mean target of each of its values predicts it with R² {r2:.4f}"
        return None
    labels = y.astype(str).to_numpy()
    counts = pd.Series(labels).value_counts()
    if counts.iloc[0] / len(labels) >= LEAK_ACCURACY or counts.iloc[-1] < 3:
        return None
    if numeric:
        # the ranks, not the values: the same splits for a tree on one column, and no
        # value too large for the tree's float32 (1e300) or infinite
        codes = values.astype(float).rank().to_numpy()
        codes = np.where(
            np.isnan(codes), np.nanmedian(codes) if np.isfinite(codes).any() else 0.0, codes
        )
    else:
        codes = pd.factorize(values.astype(str).where(values.notna()))[0].astype(float)
    accuracy = cross_val_score(
        DecisionTreeClassifier(max_depth=3, random_state=0),
        codes.reshape(-1, 1),
        labels,
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
    ).mean()
    if accuracy >= LEAK_ACCURACY:
        return f"alone, a small tree is {accuracy:.1%} accurate"
    return None


def leaking_columns(frame: pd.DataFrame, y) -> list[tuple[str, str]]:
    """Columns that alone predict ``y`` almost perfectly, with how well.

    A real feature rarely does; a column derived from the target, or an identifier of
    a table sorted by the target, does. Regression targets (:func:`infer_task`): the
    Spearman rank correlation of each numeric column with ``y``, flagged at
    :data:`LEAK_RANK_CORRELATION` in absolute value; for a categorical (text) column,
    the R² of its categories' mean targets, cross-fitted on 3 seeded folds, flagged at
    :data:`LEAK_R2` (a text copy of the target, such as "grade 7"). Classes: the 3-fold
    cross-validated accuracy of a depth-3 decision tree on the column alone (the ranks
    of its numbers, or category codes), flagged at :data:`LEAK_ACCURACY` when the most
    frequent class is rarer than that. A column the check cannot score (values of a
    type it cannot rank) is left out: the check advises, it never fails a fit.

    Returns
    -------
    list of (column, description)
    """
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
        try:
            with np.errstate(all="ignore"):
                how = _leak(frame[column], y, regression)
        except (ValueError, TypeError, ArithmeticError):
            how = None
        if how is not None:
            out.append((str(column), how))
    return out


def leak_message(leaks) -> str:
    named = "; ".join(f"{c!r} ({how})" for c, how in leaks)
    return (
        f"a single column predicts the target almost perfectly: {named}. If it is "
        "derived from the target, or an identifier of a table sorted by it, drop it: "
        "the model will fail on new data."
    )


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
