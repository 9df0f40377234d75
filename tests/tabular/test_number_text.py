"""Numbers written as text (pymc_bnn.tabular._number_text): decimal commas and thousands
separators read by one rule per table, and the column checks that refuse to one-hot
encode such a column or to advise a larger category limit for an identifier."""

import numpy as np
import pandas as pd
import pytest

from pymc_bnn.tabular._columns import column_kind
from pymc_bnn.tabular._number_text import (
    DECIMAL_COMMA,
    THOUSANDS_COMMA,
    number_notation,
    read_numbers,
)


def credit_like(n=60, seed=0):
    """Shaped like the credit-scoring table: money columns written with decimal commas
    (and dot thousands), a text column, a column pandas already read as numbers."""
    rng = np.random.default_rng(seed)
    income = rng.gamma(2.0, 80.0, n).round(1)
    assets = rng.gamma(1.5, 3000.0, n).round(2)
    text = pd.DataFrame(
        {
            "Income": [f"{v:.1f}".replace(".", ",") for v in income],
            "Assets": [
                f"{v:,.2f}".replace(",", "_").replace(".", ",").replace("_", ".") for v in assets
            ],
            "Home": rng.choice(["rent", "owner", "other"], n),
            "Age": rng.integers(20, 70, n),
        }
    )
    text.loc[3, "Income"] = None
    return text, income, assets


def test_a_decimal_comma_table_is_read_as_numbers_without_changing_the_input():
    frame, income, assets = credit_like()
    before = frame.copy()
    out, notation, examples = read_numbers(frame, ";")
    pd.testing.assert_frame_equal(frame, before)
    assert notation == DECIMAL_COMMA and set(examples) == {"Income", "Assets"}
    expected = income.copy()
    expected[3] = np.nan
    np.testing.assert_allclose(out["Income"], expected)
    np.testing.assert_allclose(out["Assets"], assets)
    assert out["Home"].tolist() == frame["Home"].tolist() and out["Age"].dtype.kind == "i"


def test_thousands_commas_and_the_separator_decide_ambiguous_values():
    frame = pd.DataFrame({"a": ["1,250.5", "2,000,000", "7"]})
    out, notation, _ = read_numbers(frame, ",")
    assert notation == THOUSANDS_COMMA and out["a"].tolist() == [1250.5, 2_000_000.0, 7.0]
    ambiguous = pd.DataFrame({"a": ["1,250", "2,500", "3"]})
    assert read_numbers(ambiguous, ";")[0]["a"].tolist() == [1.25, 2.5, 3.0]
    assert read_numbers(ambiguous, ",")[0]["a"].tolist() == [1250.0, 2500.0, 3.0]
    # an unambiguous value elsewhere in the table decides for the ambiguous column
    both = pd.DataFrame({"a": ["1,250", "2,500"], "b": ["16,5", "3"]})
    assert read_numbers(both, ",")[0]["a"].tolist() == [1.25, 2.5]


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"a": ["16,5", "3"], "b": ["1,250.5", "3"]}),  # both notations
        pd.DataFrame({"a": ["16,5", "17.25"]}),  # not one notation
        pd.DataFrame({"a": ["16,5", "n/a"]}),  # not all numbers
        pd.DataFrame({"a": ["1.5", "2.25"]}),  # no comma at all
    ],
)
def test_tables_that_are_not_one_notation_stay_as_they_are(frame):
    out, notation, examples = read_numbers(frame, ";")
    assert notation is None and examples == {} and out is frame


def test_a_text_column_of_numbers_is_never_one_hot_encoded():
    column = pd.Series(["16,0", "17,5", "18"] * 10)
    assert number_notation(column) == DECIMAL_COMMA
    with pytest.raises(ValueError, match=r"decimal=','.*command line does so itself"):
        column_kind("Income", column, max_categories=1000)
    assert column_kind("Income", column, max_categories=50, declared=True) == "categorical"


def test_an_identifier_like_text_column_is_not_told_to_raise_the_limit():
    column = pd.Series([f"c{i % 3000:05d}x" for i in range(9000)])
    with pytest.raises(ValueError, match="too few rows a value") as err:
        column_kind("client", column, max_categories=50)
    assert "max-categories" not in str(err.value)
    few = pd.Series([f"v{i % 80}" for i in range(2000)])  # 25 rows a value: the limit
    with pytest.raises(ValueError, match="--max-categories"):
        column_kind("city", few, max_categories=50)
