"""Numbers written as text: decimal commas and thousands separators.

A table written in a decimal-comma locale (``16,0``, ``1.250,5``; usually
``;``-separated) or with thousands separators (``1,250.5``) reaches pandas as text, and
text columns would be one-hot encoded. :func:`read_numbers` converts such columns to
numbers by one rule per table, :func:`number_notation` says whether a column is
numbers in one of these notations (:func:`pymc_bnn.tabular._columns.column_kind` refuses to
one-hot encode one).

The rule: a value either has a separator that only one notation explains (a comma
followed by other than three digits, ``16,0``, or dot groups before a comma,
``1.250,5``, or several dot groups, ``1.250.000``: decimal comma; comma groups before a
dot, ``1,250.5``, or several comma groups, ``1,250,000``: thousands commas), or it is
ambiguous (``1,250``: 1.25 or 1250). One table uses one notation: the unambiguous
values decide it; where there are none, a ``;``-separated file is taken for a
decimal-comma locale (the reason it is not comma-separated), any other for thousands
commas. Values of both notations in one table are left as text (the columns' own
checks then say so).
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["DECIMAL_COMMA", "THOUSANDS_COMMA", "number_notation", "read_numbers"]

DECIMAL_COMMA = "decimal comma"
THOUSANDS_COMMA = "thousands comma"

# integer part: plain digits, or 1-3 digits then groups of three after the separator
_DECIMAL = re.compile(r"^[+-]?(?:\d{1,3}(?:\.\d{3})+|\d+)(?:,\d+)?$")
_THOUSANDS = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
# values only one notation explains
_ONLY_DECIMAL = (
    re.compile(r",(?!\d{3}$)\d+$"),
    re.compile(r"\.\d{3}.*,"),
    re.compile(r"\.\d{3}\.\d{3}"),
)
_ONLY_THOUSANDS = (re.compile(r",\d{3}.*\."), re.compile(r",\d{3},\d{3}"))


def _texts(series: pd.Series) -> list[str] | None:
    """The column's non-missing values as stripped strings, if it is a text column."""
    if not (
        pd.api.types.is_object_dtype(series.dtype) or pd.api.types.is_string_dtype(series.dtype)
    ):
        return None
    values = series.dropna()
    if values.empty or not all(isinstance(v, str) for v in values):
        return None
    return [v.strip() for v in values]


def _evidence(texts: list[str]) -> tuple[bool, bool, bool] | None:
    """``(decimal, thousands, separated)``: whether some value only the decimal-comma
    notation explains, some only the thousands-comma one, and some has a separator at
    all; None where a value fits neither notation."""
    decimal = thousands = separated = False
    for text in texts:
        fits_decimal, fits_thousands = bool(_DECIMAL.match(text)), bool(_THOUSANDS.match(text))
        if not (fits_decimal or fits_thousands):
            return None
        if "," in text:
            separated = True
        decimal |= fits_decimal and any(p.search(text) for p in _ONLY_DECIMAL)
        thousands |= fits_thousands and any(p.search(text) for p in _ONLY_THOUSANDS)
    return decimal, thousands, separated


def number_notation(series: pd.Series, sep: str | None = None) -> str | None:
    """:data:`DECIMAL_COMMA` or :data:`THOUSANDS_COMMA` where every value of a text
    column is a number in that notation and some have a comma; else None. ``sep``
    (the file's separator) decides a column of ambiguous values only (see the
    module)."""
    texts = _texts(series)
    found = None if texts is None else _evidence(texts)
    if found is None or not found[2] or (found[0] and found[1]):
        return None
    if found[0] or found[1]:
        notation = DECIMAL_COMMA if found[0] else THOUSANDS_COMMA
    else:
        notation = DECIMAL_COMMA if sep == ";" else THOUSANDS_COMMA
    return notation if _all_fit(texts, notation) else None


def _all_fit(texts: list[str], notation: str) -> bool:
    pattern = _DECIMAL if notation == DECIMAL_COMMA else _THOUSANDS
    return all(pattern.match(t) for t in texts)


def _to_numbers(series: pd.Series, notation: str) -> pd.Series:
    text = series.astype("string").str.strip()
    if notation == DECIMAL_COMMA:
        text = text.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    else:
        text = text.str.replace(",", "", regex=False)
    return pd.to_numeric(text).astype("float64")


def read_numbers(
    frame: pd.DataFrame, sep: str | None = None
) -> tuple[pd.DataFrame, str | None, dict[str, str]]:
    """``frame`` with its text columns of numbers converted (a new frame; ``frame`` is
    not changed), the table's notation (None: no column converted) and an example
    value of each converted column, by name. One notation for the whole table (see the
    module); columns whose values are not all numbers stay as they are."""
    candidates, decimal, thousands = {}, False, False
    for name in frame.columns:
        texts = _texts(frame[name])
        found = None if texts is None else _evidence(texts)
        if found is None or not found[2]:
            continue
        candidates[name] = texts
        decimal |= found[0]
        thousands |= found[1]
    if not candidates or (decimal and thousands):
        return frame, None, {}
    notation = DECIMAL_COMMA if decimal or (not thousands and sep == ";") else THOUSANDS_COMMA
    converted = {
        name: next(t for t in texts if "," in t)
        for name, texts in candidates.items()
        if _all_fit(texts, notation)
    }
    if not converted:
        return frame, None, {}
    out = frame.copy()
    for name in converted:
        out[name] = _to_numbers(frame[name], notation)
    return out, notation, {str(k): v for k, v in converted.items()}
