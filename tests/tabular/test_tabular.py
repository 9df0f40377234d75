"""pymc_bnn.tabular: column preprocessing, its plain-data state, identifier and leakage checks."""

import doctest

import numpy as np
import pandas as pd
import pytest

from pymc_bnn.datasets import make_customers
from pymc_bnn.tabular import _transform as tabular
from pymc_bnn.tabular._transform import TabularPreprocessor, infer_task

SEED = 0


@pytest.fixture(scope="module")
def customers():
    return make_customers(200, random_state=SEED).drop(columns=["customer_id"])


def _features(frame):
    return frame.drop(columns=["churned"])


def test_doctests():
    failures, _ = doctest.testmod(tabular)
    assert failures == 0


def test_columns_are_classified_and_encoded(customers):
    pre = TabularPreprocessor().fit(_features(customers))
    assert pre.numeric_columns_ == ["age", "income", "tenure_months", "support_calls"]
    assert pre.categorical_columns_ == ["plan", "region", "autopay"]
    assert pre.categories_["autopay"] == ["False", "True"]
    Z = pre.transform(customers)
    names = pre.get_feature_names_out()
    assert Z.shape == (200, 4 + 3 + 4 + 2) == (200, len(names))
    assert np.isfinite(Z).all()
    # numeric: missing values -> the median, then standardised (by hand)
    income = customers["income"].to_numpy(float)
    seen = ~np.isnan(income)
    filled = np.where(seen, income, np.median(income[seen]))
    expected = (filled - filled.mean()) / filled.std()
    np.testing.assert_allclose(Z[:, 1], expected)
    assert pre.n_missing_["income"] == int((~seen).sum()) > 0
    # categorical: one-hot, missing values -> the most frequent category
    plan = customers["plan"].fillna(customers["plan"].mode()[0])
    for k, category in enumerate(pre.categories_["plan"]):
        np.testing.assert_array_equal(Z[:, 4 + k], (plan == category).to_numpy(float))


def test_input_is_not_mutated(customers):
    frame = customers.copy()
    pre = TabularPreprocessor().fit(frame)
    pre.transform(frame)
    pd.testing.assert_frame_equal(frame, customers)


def test_non_string_column_labels_work_like_their_names(customers):
    """A frame labelled 0, 1, ... (e.g. ``pd.DataFrame(array)``) is encoded as the same
    frame labelled "0", "1", ...; the caller's labels are left as they were."""
    features = _features(customers)
    by_position = features.set_axis(range(features.shape[1]), axis="columns")
    by_name = features.set_axis([str(c) for c in range(features.shape[1])], axis="columns")
    labels = list(by_position.columns)
    pre = TabularPreprocessor().fit(by_position)
    np.testing.assert_array_equal(
        pre.transform(by_position), TabularPreprocessor().fit(by_name).transform(by_name)
    )
    assert pre.numeric_columns_ == ["0", "1", "2", "6"]  # age, income, tenure, calls
    assert list(by_position.columns) == labels
    # columns chosen by their integer labels
    chosen = TabularPreprocessor(numeric=[1], categorical=[3]).fit(by_position)  # income, plan
    assert (chosen.numeric_columns_, chosen.categorical_columns_) == (["1"], ["3"])
    assert chosen.transform(by_position).shape == (200, 1 + len(chosen.categories_["3"]))
    with pytest.raises(ValueError, match="duplicated column names"):
        TabularPreprocessor().fit(features.iloc[:, :2].set_axis([1, "1"], axis="columns"))


def test_unseen_categories_encode_as_zeros_and_are_reported(customers):
    pre = TabularPreprocessor().fit(_features(customers))
    rows = _features(customers).iloc[:3].copy()
    rows["plan"] = ["platinum", "basic", None]
    Z = pre.transform(rows)
    plan = slice(4, 7)
    assert Z[0, plan].tolist() == [0.0, 0.0, 0.0]
    assert Z[1, plan].sum() == 1.0 and Z[2, plan].sum() == 1.0  # None -> imputed
    assert pre.unseen_categories(rows) == {"plan": ["platinum"]}


@pytest.mark.parametrize(
    "column, values, message",
    [
        ("signup", pd.date_range("2024-01-01", periods=30), "dates"),
        ("signup", [f"2024-01-{d:02d}" for d in range(1, 31)], "dates"),
        ("user", [f"u{i}" for i in range(30)], "identifier"),
        ("row", list(range(30)), "row number"),
        ("empty", [np.nan] * 30, "no values"),
        ("many", [f"c{i % 12}" for i in range(30)], "distinct values"),
    ],
)
def test_refused_columns_are_named(column, values, message):
    frame = pd.DataFrame({"x": np.sin(np.arange(30.0)), column: values})
    with pytest.raises(ValueError, match=f"column '{column}'.*{message}"):
        TabularPreprocessor(max_categories=10).fit(frame)


def test_bad_values_at_transform_name_the_column(customers):
    pre = TabularPreprocessor().fit(_features(customers))
    rows = _features(customers).iloc[:3].copy()
    rows["age"] = rows["age"].astype(object)
    rows.loc[rows.index[1], "age"] = "forty"
    with pytest.raises(ValueError, match=r"column 'age'.*row 2 \(counting from 1\) holds 'forty'"):
        pre.transform(rows)
    with pytest.raises(ValueError, match="lacks the columns 'plan', 'region'"):
        pre.transform(_features(customers).drop(columns=["plan", "region"]))


def test_as_categorical_one_hot_encodes_numeric_codes(customers):
    """Integer codes made categories: one input per code, the same code whether read as
    integers or (a column with missing values) as floats, kept by the plain-data state;
    the parameter is stored as given and checked in ``fit`` (scikit-learn's way)."""
    frame = _features(customers).assign(segment=np.arange(200) % 3 + 1)
    assert TabularPreprocessor().fit(frame).numeric_columns_[-1] == "segment"
    pre = TabularPreprocessor(as_categorical=("segment",))
    assert pre.get_params()["as_categorical"] == ("segment",)
    pre.fit(frame)
    assert "segment" not in pre.numeric_columns_
    assert pre.categorical_columns_[-1] == "segment"
    assert pre.categories_["segment"] == ["1", "2", "3"]
    as_floats = frame.assign(segment=frame["segment"].astype(float))
    as_floats.loc[as_floats.index[0], "segment"] = np.nan
    Z = pre.transform(frame)
    np.testing.assert_array_equal(pre.transform(as_floats)[1:], Z[1:])
    assert pre.unseen_categories(as_floats) == {}
    rebuilt = TabularPreprocessor.from_state(pre.get_state())
    np.testing.assert_array_equal(rebuilt.transform(frame), Z)
    with pytest.raises(ValueError, match="as_categorical must be a list of column names"):
        TabularPreprocessor(as_categorical="segment").fit(frame)
    with pytest.raises(ValueError, match="lacks the column 'nope'"):
        TabularPreprocessor(as_categorical=["nope"]).fit(frame)
    with pytest.raises(ValueError, match="column 'income'.*(identifier|distinct values)"):
        TabularPreprocessor(as_categorical=["income"]).fit(frame)


def test_state_is_plain_data_and_rebuilds_identically(customers):
    import json

    pre = TabularPreprocessor().fit(_features(customers))
    state = pre.get_state()
    assert json.loads(json.dumps(state)) == state
    rebuilt = TabularPreprocessor.from_state(json.loads(json.dumps(state)))
    rows = _features(customers).copy()
    rows.loc[rows.index[:5], "region"] = "atlantis"
    np.testing.assert_array_equal(rebuilt.transform(rows), pre.transform(rows))
    assert rebuilt.get_feature_names_out().tolist() == pre.get_feature_names_out().tolist()


def test_damaged_state_is_refused(customers):
    state = TabularPreprocessor().fit(_features(customers)).get_state()
    with pytest.raises(ValueError, match="malformed preprocessing state"):
        TabularPreprocessor.from_state({**state, "numeric": [{"name": "age"}]})
    with pytest.raises(ValueError, match="malformed preprocessing state"):
        TabularPreprocessor.from_state({**state, "version": 99})


@pytest.mark.parametrize(
    "y, task",
    [
        (["a", "b"], "classification"),
        ([True, False], "classification"),
        ([0, 1, 2, 3], "classification"),
        ([1.0, 2.0, 1.0], "classification"),
        (list(range(11)), "regression"),
        ([0.5, 1.5], "regression"),
        (pd.Series(["1", "2", "3"], dtype=object), "classification"),
    ],
)
def test_infer_task(y, task):
    assert infer_task(y) == task


@pytest.mark.parametrize(
    "case",
    [
        "shuffled sample of ids",
        "ids in row order",
        "ids in reverse row order",
        "nearly in row order",
    ],
)
def test_identifiers_are_refused_whatever_the_split(case):
    """Whole numbers, each once, are refused as identifiers when a split or shuffle of
    ids 1..N would leave them: tightly packed, or following the row order. keep=
    overrides."""
    rng = np.random.default_rng(0)
    n = 200
    if case == "shuffled sample of ids":
        ids = rng.permutation(np.arange(1, 301))[:n]
    elif case == "ids in row order":
        ids = np.sort(rng.choice(10**6, n, replace=False))
    elif case == "ids in reverse row order":
        ids = np.sort(rng.choice(10**6, n, replace=False))[::-1]
    else:
        ids = np.sort(rng.choice(10**6, n, replace=False))
        ids[[10, 11]] = ids[[11, 10]]
    frame = pd.DataFrame({"x": rng.normal(size=n), "id": ids})
    with pytest.raises(ValueError, match="column 'id' looks like a row number or identifier"):
        TabularPreprocessor().fit(frame)
    pre = TabularPreprocessor(keep=["id"]).fit(frame)
    assert pre.numeric_columns_ == ["x", "id"]


def test_real_integer_measurements_are_not_identifiers():
    """Distinct whole numbers spread over a wide range in no row order (prices), and
    repeating ones (ages), are features."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {"price": rng.choice(10**7, 300, replace=False), "age": rng.integers(18, 90, 300)}
    )
    assert TabularPreprocessor().fit(frame).numeric_columns_ == ["price", "age"]
    with pytest.raises(ValueError, match="lacks the column 'nope'"):
        TabularPreprocessor(keep=["nope"]).fit(frame)


def test_a_column_that_alone_predicts_the_target_is_named():
    """The leakage check: an identifier of a table sorted by a numeric target (kept on
    purpose), or a column that encodes the classes, is named in a warning; honest
    features are not."""
    import warnings

    from pymc_bnn.exceptions import TargetLeakageWarning
    from pymc_bnn.tabular._transform import leaking_columns

    rng = np.random.default_rng(2)
    n = 300
    y = np.sort(rng.normal(3000, 700, n))
    frame = pd.DataFrame(
        {
            "rownames": np.arange(n) * 3 + 7,
            "x": rng.normal(size=n),
            "noisy": y + rng.normal(0, 700, n),
        }
    )
    assert [c for c, _ in leaking_columns(frame, y)] == ["rownames"]
    with pytest.warns(TargetLeakageWarning, match="'rownames' \\(rank correlation 1.0000"):
        TabularPreprocessor(keep=["rownames"]).fit(frame, y)
    labels = np.where(rng.random(n) < 0.4, "yes", "no")
    classes = pd.DataFrame(
        {
            "code": np.where(labels == "yes", 1.0, 0.0) + rng.normal(0, 0.01, n),
            "plan": np.where(labels == "yes", "gold", "basic"),
            "x": rng.normal(size=n),
        }
    )
    assert [c for c, _ in leaking_columns(classes, labels)] == ["code", "plan"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TargetLeakageWarning)
        TabularPreprocessor().fit(classes[["x"]], labels)
        TabularPreprocessor().fit(frame[["x", "noisy"]], y)


def test_row_flags_name_unseen_categories_and_values_outside_the_training_range(customers):
    features = _features(customers)
    pre = TabularPreprocessor().fit(features)
    new = features.iloc[:6].copy()
    new.iloc[1, new.columns.get_loc("plan")] = "platinum"  # unseen
    new.iloc[2, new.columns.get_loc("age")] = 500.0  # far above the range
    low, high = pre.ranges_["income"]
    new.iloc[3, new.columns.get_loc("income")] = high + 0.05 * (high - low)  # within margin
    new.iloc[4, new.columns.get_loc("income")] = low - 0.2 * (high - low)  # beyond it
    new.iloc[4, new.columns.get_loc("region")] = "atlantis"
    flags = pre.row_flags(new)
    assert flags.index.equals(new.index)
    assert flags["unseen_categories"].tolist() == ["", "plan", "", "", "region", ""]
    assert flags["outside_training_range"].tolist() == ["", "", "age", "", "income", ""]
    # the training rows themselves are never flagged
    assert (pre.row_flags(features) == "").all().all()
    # the ranges are part of the saved state
    again = TabularPreprocessor.from_state(pre.get_state())
    assert again.ranges_ == pre.ranges_
    assert again.row_flags(new).equals(flags)
