"""The ``pymc-bnn`` command line (also ``python -m pymc_bnn``).

- :mod:`~pymc_bnn.cli._main`: the commands (``demo``, ``fit``, ``predict``,
  ``evaluate``, ``report``, ``info``) and their options.
- :mod:`~pymc_bnn.cli._tables`: files in and out: tables, model files, predictions.
- :mod:`~pymc_bnn.cli._info`: what ``info`` prints about a model file.
"""

from pymc_bnn._runtime.lazy import lazy_exports
from pymc_bnn.cli._main import BadInput, demo, main

# moons_split moved to pymc_bnn.datasets; importable from here without importing
# scikit-learn until it is used
__getattr__, __dir__ = lazy_exports(__name__, {"moons_split": "pymc_bnn.datasets"})
__all__ = ["BadInput", "demo", "main"]
