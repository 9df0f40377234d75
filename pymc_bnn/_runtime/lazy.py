"""Names a package exports, imported on first use (PEP 562).

A package that lists its public names here can be imported without importing what
they need (PyMC, PyTensor, JAX): ``import pymc_bnn`` and the command line start fast.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]):
    """``(__getattr__, __dir__)`` for the package named ``package``, whose names in
    ``exports`` (name -> dotted module defining it) are imported on first use."""

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(exports[name])
        value = module if module.__name__.endswith("." + name) else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
