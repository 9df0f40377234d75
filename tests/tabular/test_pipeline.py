"""pymc_bnn.tabular.pipeline: the Bayesian methods through preprocessing, and one model file."""

import doctest

import numpy as np
import pytest
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from pymc_bnn import BayesianMLPClassifier, BayesianMLPRegressor
from pymc_bnn.datasets import make_customers
from pymc_bnn.estimators import persistence
from pymc_bnn.tabular import pipeline
from pymc_bnn.tabular.pipeline import BayesianPipeline

SEED = 0


@pytest.fixture(scope="module")
def customers():
    return make_customers(200, random_state=SEED).drop(columns=["customer_id"])


def _features(frame):
    return frame.drop(columns=["churned"])


def test_doctests():
    failures, _ = doctest.testmod(pipeline)
    assert failures == 0


@pytest.fixture(scope="module")
def fitted_classifier(customers):
    pipe = pipeline.make_tabular_pipeline(
        BayesianMLPClassifier(
            hidden_layer_sizes=(4,),
            n_iter=1500,
            n_draws=100,
            posterior_temperature=1.0,
            random_state=SEED,
        )
    )
    return pipe.fit(_features(customers), customers["churned"])


def test_the_bayesian_methods_pass_through_the_preprocessing(customers, fitted_classifier):
    """Each Bayesian method of the pipeline is the last step's on the transformed rows
    (what users had to write by hand: ``pipe[-1].method(pipe[:-1].transform(X))``)."""
    pipe = fitted_classifier
    assert isinstance(pipe, BayesianPipeline) and isinstance(pipe, Pipeline)
    rows = _features(customers).iloc[:30]
    Z = pipe[:-1].transform(rows)
    model = pipe[-1]
    for key, value in pipe.predict_uncertainty(rows).items():
        np.testing.assert_array_equal(value, model.predict_uncertainty(Z)[key])
    np.testing.assert_array_equal(pipe.sample_proba(rows), model.sample_proba(Z))
    np.testing.assert_array_equal(
        pipe.sample_proba(rows, n_draws=7), model.sample_proba(Z, n_draws=7)
    )
    y = customers["churned"].iloc[:30]
    np.testing.assert_array_equal(
        pipe.log_predictive_density(rows, y), model.log_predictive_density(Z, y)
    )
    # what the classifier does not have, the pipeline does not pretend to have
    assert not hasattr(pipe, "predict_interval") and not hasattr(pipe, "sample_y")


def test_a_regression_pipeline_gives_intervals_and_draws():
    rng = np.random.default_rng(SEED)
    X = rng.normal(size=(80, 3)) * [1.0, 100.0, 0.01]
    y = X[:, 0] + 0.01 * X[:, 1] + rng.normal(0, 0.1, 80)
    pipe = BayesianPipeline(
        [
            ("scale", StandardScaler()),
            (
                "model",
                BayesianMLPRegressor(
                    (4,), n_iter=3000, posterior_temperature=1.0, random_state=SEED
                ),
            ),
        ]
    ).fit(X, y)
    Z = pipe[:-1].transform(X[:10])
    model = pipe[-1]
    for got, want in zip(
        pipe.predict_interval(X[:10], coverage=0.8), model.predict_interval(Z, coverage=0.8)
    ):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        pipe.predict(X[:10], return_std=True)[1], model.predict(Z, return_std=True)[1]
    )
    np.testing.assert_array_equal(
        pipe.sample_y(X[:10], n_samples=3), model.sample_y(Z, n_samples=3)
    )
    np.testing.assert_array_equal(
        pipe.log_predictive_density(X[:10], y[:10]), model.log_predictive_density(Z, y[:10])
    )
    assert not hasattr(pipe, "sample_proba")
    # saving needs the tabular preprocessor, and says so
    with pytest.raises(TypeError, match="TabularPreprocessor"):
        pipe.save("never-written.nc")


def test_an_unfitted_pipeline_says_so(customers):
    from sklearn.exceptions import NotFittedError

    pipe = pipeline.make_tabular_pipeline(BayesianMLPClassifier())
    with pytest.raises(NotFittedError):
        pipe.predict_uncertainty(_features(customers))


def test_the_saved_pipeline_loads_with_its_bayesian_methods(tmp_path, customers, fitted_classifier):
    path = fitted_classifier.save(tmp_path / "m.nc")
    loaded = BayesianPipeline.load(path)
    assert isinstance(loaded, BayesianPipeline)
    rows = _features(customers).iloc[:20]
    np.testing.assert_array_equal(
        loaded.predict_uncertainty(rows)["mutual_info"],
        fitted_classifier.predict_uncertainty(rows)["mutual_info"],
    )


def test_pipeline_saves_and_loads_with_identical_predictions(
    tmp_path, customers, fitted_classifier
):
    pipe = fitted_classifier
    path = pipeline.save_pipeline(pipe, tmp_path / "m.nc", info={"target": "churned"})
    loaded = pipeline.load_pipeline(path)
    rows = _features(customers).iloc[:40]
    np.testing.assert_array_equal(loaded.predict_proba(rows), pipe.predict_proba(rows))
    assert loaded.predict(rows).tolist() == pipe.predict(rows).tolist()
    meta = persistence.read_metadata(path)
    assert meta["extra"]["info"] == {"target": "churned"}
    # a plain estimator file is refused with advice, not misread
    plain = pipe.named_steps["model"].save(tmp_path / "plain.nc")
    with pytest.raises(ValueError, match="saved without preprocessing"):
        pipeline.load_pipeline(plain)
    # same seed, same predictions
    again = pipeline.make_tabular_pipeline(
        BayesianMLPClassifier(
            hidden_layer_sizes=(4,),
            n_iter=1500,
            n_draws=100,
            posterior_temperature=1.0,
            random_state=SEED,
        )
    ).fit(_features(customers), customers["churned"])
    np.testing.assert_array_equal(again.predict_proba(rows), pipe.predict_proba(rows))


def test_save_pipeline_refuses_other_pipelines(tmp_path):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    with pytest.raises(TypeError, match="TabularPreprocessor"):
        pipeline.save_pipeline(
            make_pipeline(StandardScaler(), BayesianMLPRegressor()), tmp_path / "x.nc"
        )
