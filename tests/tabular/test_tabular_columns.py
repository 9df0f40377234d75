"""pymc_bnn.tabular: which columns can be features. Dates in common layouts, identifiers
named as such, text copies of a numeric target, numbers beyond float32's range, numbers
with stray text, and columns with a single value."""

import datetime
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from pymc_bnn import BayesianMLPRegressor
from pymc_bnn.exceptions import TargetLeakageWarning
from pymc_bnn.tabular._transform import TabularPreprocessor, leaking_columns
from pymc_bnn.tabular.pipeline import make_tabular_pipeline

N = 60


def _frame(column, values, n=None):
    n = len(values) if n is None else n
    return pd.DataFrame({"x": np.sin(np.arange(n) * 1.3), column: values})


def _fit_quietly(frame, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning expected either
        return TabularPreprocessor(**params).fit(frame)


# ------------------------------------------------------------------------- dates
DATE_LAYOUTS = [
    "2023/01/{d:02d}",
    "2023-01-{d:02d}T10:00:00+00:00",
    "2023-01-{d:02d}T10:00:00Z",
    "2023-01-{d:02d} 10:00:00.123456+00:00",
    "2023.01.{d:02d}",
    "{d} Jan 2023",
    "Jan {d}, 2023",
    "{d:02d}-Jan-2023",
    "{d:02d}.01.23",
    "{d:02d}/01/2023",
    "2023-01-{d:02d}",
    "10:{d:02d}",
]


@pytest.mark.parametrize("layout", DATE_LAYOUTS)
@pytest.mark.parametrize("repeated", [True, False], ids=["repeated", "unique"])
def test_dates_in_common_layouts_are_refused_as_dates(layout, repeated):
    """Repeated dates were one-hot encoded, unique ones refused as an identifier."""
    days = [1 + i % 5 for i in range(N)] if repeated else list(range(1, 29))
    frame = _frame("signup", [layout.format(d=d) for d in days])
    with pytest.raises(ValueError, match="column 'signup' holds dates or times"):
        TabularPreprocessor().fit(frame)


@pytest.mark.parametrize(
    "make",
    [
        lambda i: datetime.date(2023, 1, 1 + i % 5),
        lambda i: datetime.datetime(2023, 1, 1 + i % 28, 10, 30),
        lambda i: pd.Timestamp("2023-01-01") + pd.Timedelta(days=i % 3),
    ],
    ids=["date", "datetime", "Timestamp"],
)
def test_columns_of_date_objects_are_refused(make):
    """What pyarrow gives for a Parquet date32 column: an object column of dates."""
    values = pd.Series([make(i) for i in range(N)], dtype=object)
    values[3] = None
    with pytest.raises(ValueError, match="column 'day' holds dates or times"):
        TabularPreprocessor().fit(_frame("day", values))


@pytest.mark.parametrize(
    "values",
    [
        [f"{1 + i % 2}.{i % 3}.{i % 5}" for i in range(N)],  # versions 1.2.3
        [f"{'ABC'[i % 3]}-{10 + i % 4}" for i in range(N)],  # codes A-12
        [["may", "march", "june", "dec"][i % 4] for i in range(N)],  # words
        [f"model Mar {i % 4}" for i in range(N)],  # a month, no date
        [f"{i % 6}" for i in range(N)],  # numbers as text
        [["20230115", "20230116"][i % 2] for i in range(N)],  # numbers as text
    ],
    ids=["versions", "codes", "month words", "month in text", "digits", "yyyymmdd"],
)
def test_look_alikes_are_not_dates(values):
    pre = _fit_quietly(_frame("c", values))
    assert pre.categorical_columns_ == ["c"]


def test_a_few_dates_among_words_do_not_make_a_date_column():
    values = [["red", "green", "blue"][i % 3] for i in range(N)]
    values[:5] = ["2023-01-01"] * 5  # under 90 %
    assert _fit_quietly(_frame("colour", values)).categorical_columns_ == ["colour"]


# ------------------------------------------------------------- identifiers by name
ID_NAMES = [
    "customer_no",
    "account_number",
    "user_id",
    "ID",
    "OrderID",
    "record_nr",
    "uuid",
    "key",
    "customerNo",
    "row_index",
    "Customer ID",
]


@pytest.mark.parametrize("name", ID_NAMES)
def test_random_whole_numbers_named_as_identifiers_are_refused(name):
    """300 distinct ids in 100000..999999 in no row order: the value tests cannot tell
    them from measurements, the name can; keep= overrides."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=300),
            name: rng.choice(np.arange(100_000, 1_000_000), 300, replace=False),
        }
    )
    with pytest.raises(
        ValueError, match=f"column '{name}' looks like a row number or identifier .*name.*keep it"
    ):
        TabularPreprocessor().fit(frame)
    assert _fit_quietly(frame, keep=[name]).numeric_columns_ == ["x", name]


@pytest.mark.parametrize(
    "name",
    [
        "price",
        "number_of_rooms",
        "num_employees",
        "zip_code",
        "idea_score",
        "keys_held",
        "nominal",
        "paid",
    ],
)
def test_other_names_with_the_same_values_are_features(name):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=300),
            name: rng.choice(np.arange(100_000, 1_000_000), 300, replace=False),
        }
    )
    assert _fit_quietly(frame).numeric_columns_ == ["x", name]


def test_an_identifier_name_on_repeating_numbers_is_a_feature():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=300), "store_id": rng.integers(1, 9, 300)})
    assert _fit_quietly(frame).numeric_columns_ == ["x", "store_id"]


# --------------------------------------------------------- text copies of a target
def test_a_text_copy_of_a_regression_target_is_named():
    rng = np.random.default_rng(0)
    n = 300
    y = rng.integers(0, 41, n).astype(float)
    frame = pd.DataFrame(
        {
            "grade": ["grade " + str(int(v)) for v in y],
            "plan": rng.choice(["a", "b", "c"], n),
            "noisy": ["g%d" % round(v + rng.normal(0, 2)) for v in y],
            "uid": [f"u{i}" for i in range(n)],
            "x": rng.normal(size=n),
        }
    )
    leaks = leaking_columns(frame, y)
    assert [c for c, _ in leaks] == ["grade"]
    assert "R² 1.0000" in leaks[0][1]
    with pytest.warns(TargetLeakageWarning, match="'grade'"):
        TabularPreprocessor().fit(frame[["grade", "x"]], y)


# ------------------------------------------------ infinite and float32-overflowing
@pytest.mark.parametrize(
    "value, message",
    [
        (np.inf, r"holds an infinite value \(inf\) in row 4 \(counting from 1\)"),
        (-np.inf, r"holds an infinite value \(-inf\) in row 4 \(counting from 1\)"),
        (1e300, r"holds 1e\+300 in row 4 \(counting from 1\), beyond float32's range"),
        (-5e38, r"holds -5e\+38 in row 4 \(counting from 1\), beyond float32's range"),
    ],
)
def test_values_beyond_float32_are_refused_at_fit_and_transform(value, message):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=50), "z": rng.normal(size=50)})
    bad = frame.copy()
    bad.loc[3, "z"] = value
    kept = bad.copy()
    with pytest.raises(ValueError, match=f"column 'z' {message}"):
        TabularPreprocessor().fit(bad)
    with pytest.raises(ValueError, match=f"column 'z' {message}"):
        TabularPreprocessor(numeric=["x", "z"]).fit(bad)
    pre = TabularPreprocessor().fit(frame)
    with pytest.raises(ValueError, match=f"column 'z' {message}"):
        pre.transform(bad)
    pd.testing.assert_frame_equal(bad, kept)
    # the pipeline refuses it before any network is fit
    with pytest.raises(ValueError, match=f"column 'z' {message}"):
        make_tabular_pipeline(BayesianMLPRegressor()).fit(bad, rng.normal(size=50))
    # a float32-sized value and a missing one are fine
    ok = frame.copy()
    ok.loc[3, "z"], ok.loc[4, "z"] = 3e38, np.nan
    assert np.isfinite(TabularPreprocessor().fit(ok).transform(ok)).all()


def test_the_leak_check_never_fails_on_huge_or_infinite_values():
    rng = np.random.default_rng(0)
    n = 300
    x = rng.normal(size=n)
    frame = pd.DataFrame(
        {
            "huge": x * 1e160,
            "inf": np.where(np.arange(n) == 5, np.inf, x),
            "big": np.where(np.arange(n) == 7, 1e300, x),
            "mixed": pd.Series([1, "a", 2.5, None] * (n // 4), dtype=object),
            "x": rng.normal(size=n),
        }
    )
    classes = np.where(x > 0, "up", "down")
    assert [c for c, _ in leaking_columns(frame, classes)] == ["huge", "inf", "big"]
    assert [c for c, _ in leaking_columns(frame, x * 3.0)] == ["huge", "inf", "big"]
    assert leaking_columns(frame, np.where(np.arange(n) == 0, np.inf, x)) is not None


def test_rows_of_a_relabelled_frame_are_named_by_their_labels():
    frame = pd.DataFrame({"z": np.arange(30.0) % 7}, index=[f"r{i}" for i in range(30)])
    frame.loc["r5", "z"] = np.inf
    with pytest.raises(
        ValueError, match="column 'z' holds an infinite value .* in the row labelled 'r5'"
    ):
        TabularPreprocessor().fit(frame)


# ------------------------------------------------------------ numbers with stray text
def test_a_numeric_column_with_a_stray_word_is_refused_with_its_rows():
    rng = np.random.default_rng(0)
    x1 = pd.Series(rng.normal(size=300).round(3), dtype=object)
    x1[11] = "unknown"
    frame = pd.DataFrame({"x1": x1, "x2": rng.normal(size=300)})
    kept = frame.copy()
    with pytest.raises(
        ValueError,
        match=r"column 'x1' holds numbers except in row 12 "
        r"\(counting from 1\): 'unknown'\. Blank those cells "
        r".*as_categorical=\['x1'\].*--categorical x1",
    ):
        TabularPreprocessor().fit(frame)
    pd.testing.assert_frame_equal(frame, kept)
    # blanked (even in an object column, as in Python), it is a numeric column
    blanked = frame.assign(x1=frame["x1"].where(frame["x1"] != "unknown"))
    pre = _fit_quietly(blanked)
    assert pre.numeric_columns_ == ["x1", "x2"] and pre.n_missing_["x1"] == 1


def test_few_codes_with_a_question_mark_are_not_one_hot_encoded_silently():
    rng = np.random.default_rng(1)
    codes = pd.Series(rng.integers(0, 6, 300), dtype=object)
    codes[[20, 40, 41]] = "?"
    frame = pd.DataFrame({"level": codes, "x": rng.normal(size=300)})
    with pytest.raises(
        ValueError,
        match=r"column 'level' holds numbers except in rows 21, "
        r"41, 42 \(counting from 1\): '\?', '\?', '\?'",
    ):
        TabularPreprocessor().fit(frame)
    # declared categorical: "?" is one more category
    pre = _fit_quietly(frame, as_categorical=["level"])
    assert "?" in pre.categories_["level"]
    pre = _fit_quietly(frame.assign(level=frame["level"].astype(str).astype("category")))
    assert "?" in pre.categories_["level"]
    # through the pipeline, before any network is fit
    with pytest.raises(ValueError, match="column 'level' holds numbers except"):
        make_tabular_pipeline(BayesianMLPRegressor()).fit(frame, rng.normal(size=300))


def test_too_many_categories_names_both_ways_to_raise_the_limit():
    frame = _frame("many", [f"c{i % 12}" for i in range(N)])
    with pytest.raises(
        ValueError, match="max_categories in Python, --max-categories on the command line"
    ):
        TabularPreprocessor(max_categories=10).fit(frame)


# ---------------------------------------------------------------- constant columns
def test_constant_columns_are_left_out_with_a_warning_and_the_state_keeps_them():
    rng = np.random.default_rng(0)
    n = 40
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "const": 7,
            "region": "EU",
            "plan": rng.choice(["a", "b"], n),
            "flag": np.where(np.arange(n) % 3 == 0, 1.0, np.nan),
        }
    )
    kept = frame.copy()
    with pytest.warns(
        UserWarning,
        match=r"columns 'const' \(7\), 'flag' \(1\), 'region' "
        r"\('EU'\) hold a single value",
    ):
        pre = TabularPreprocessor().fit(frame)
    pd.testing.assert_frame_equal(frame, kept)
    assert pre.numeric_columns_ == ["x"] and pre.categorical_columns_ == ["plan"]
    assert pre.constant_columns_ == {"const": 7.0, "flag": 1.0, "region": "EU"}
    assert pre.get_feature_names_out().tolist() == ["x", "plan=a", "plan=b"]
    # a later table: not needed, and where it has them and they differ, rows are flagged
    new = frame.iloc[:4].copy()
    new["const"] = [7, 8, 7, np.nan]
    new["region"] = ["EU", "EU", "US", None]
    Z = pre.transform(new)
    np.testing.assert_array_equal(Z, pre.transform(new.drop(columns=["const", "region", "flag"])))
    flags = pre.row_flags(new)
    assert flags["outside_training_range"].tolist() == ["", "const", "", ""]
    assert flags["unseen_categories"].tolist() == ["", "", "region", ""]
    assert pre.unseen_categories(new) == {"region": ["US"]}
    # the plain-data state keeps them, through JSON
    state = json.loads(json.dumps(pre.get_state()))
    assert state["constant"] == [
        {"name": "const", "kind": "numeric", "value": 7.0},
        {"name": "flag", "kind": "numeric", "value": 1.0},
        {"name": "region", "kind": "categorical", "value": "EU"},
    ]
    again = TabularPreprocessor.from_state(state)
    assert again.constant_columns_ == pre.constant_columns_
    assert again.row_flags(new).equals(flags)
    np.testing.assert_array_equal(again.transform(new), Z)
    with pytest.raises(ValueError, match="malformed preprocessing state"):
        TabularPreprocessor.from_state(
            {**state, "constant": [{"name": "x", "kind": "numeric", "value": 1.0}]}
        )


def test_states_without_constant_columns_load_as_before():
    """A state saved before constant columns were left out has no "constant" key; one
    fit without constant columns still has none (older versions read it)."""
    rng = np.random.default_rng(0)
    pre = _fit_quietly(pd.DataFrame({"x": rng.normal(size=30), "c": rng.choice(["a", "b"], 30)}))
    state = pre.get_state()
    assert "constant" not in state and state["version"] == 1
    again = TabularPreprocessor.from_state(state)
    assert again.constant_columns_ == {}
    assert again.row_flags(pd.DataFrame({"x": [0.0], "c": ["a"]})).values.tolist() == [["", ""]]
    assert TabularPreprocessor.from_state({**state, "constant": []}).constant_columns_ == {}


def test_a_table_of_constant_columns_leaves_nothing_to_learn():
    frame = pd.DataFrame({"a": [1.0] * 10, "b": ["x"] * 10})
    with (
        pytest.warns(UserWarning, match="single value"),
        pytest.raises(ValueError, match="every column holds a single value"),
    ):
        TabularPreprocessor().fit(frame)


def test_a_listed_column_without_values_is_refused():
    frame = pd.DataFrame({"a": np.arange(10.0) % 3, "b": [np.nan] * 10})
    with pytest.raises(ValueError, match="column 'b' has no values"):
        TabularPreprocessor(numeric=["a", "b"]).fit(frame)
