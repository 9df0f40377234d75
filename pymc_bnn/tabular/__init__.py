"""Tables in, network inputs out: the columns a table's features come from, and the
pipeline that keeps the Bayesian estimators' methods behind preprocessing.

- :mod:`~pymc_bnn.tabular._transform`: :class:`TabularPreprocessor` (one-hot,
  scaling, missing values) and :func:`infer_task`.
- :mod:`~pymc_bnn.tabular._columns`: which columns can be features, and of what kind.
- :mod:`~pymc_bnn.tabular._number_text`: numbers written as text (decimal commas,
  thousands separators).
- :mod:`~pymc_bnn.tabular.pipeline`: :class:`BayesianPipeline`,
  :func:`make_tabular_pipeline`, :func:`save_pipeline`, :func:`load_pipeline`.
"""

from pymc_bnn.tabular._transform import TabularPreprocessor, infer_task, leaking_columns
from pymc_bnn.tabular.pipeline import (
    BayesianPipeline,
    load_pipeline,
    make_tabular_pipeline,
    save_pipeline,
)

__all__ = [
    "BayesianPipeline",
    "TabularPreprocessor",
    "infer_task",
    "leaking_columns",
    "load_pipeline",
    "make_tabular_pipeline",
    "save_pipeline",
]
