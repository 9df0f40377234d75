"""What identifies a model's structure for the caches of compiled programs (the ADVI
runners, :mod:`pymc_bnn.inference._runner_cache`; nutpie's models,
:mod:`pymc_bnn.inference._compiled_nuts`): the graph that defines its log density, its
shared inputs, its transforms, and that graph without the fit's data.
"""

from __future__ import annotations

from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random.type import RandomType

__all__ = ["detached", "model_graph", "shared_inputs", "transform_key"]


def shared_inputs(variables) -> list:
    """The shared variables among graph inputs, random generators aside."""
    return [
        v for v in variables if isinstance(v, SharedVariable) and not isinstance(v.type, RandomType)
    ]


def model_graph(model) -> tuple[list, list]:
    """(outputs, non-constant inputs) of what defines a model's log-density.

    The log density is a function of the random variables' graphs (priors, the network,
    the likelihood; an observed variable's ``total_size`` is part of its graph in PyMC
    6, a shared input in :func:`pymc_bnn.network.model.build_model`'s models), the observed
    values, any potentials, the value variables and the transforms (both go into the
    caches' keys: the ADVI runners' and nutpie's models'). Comparing these graphs is ~20x
    cheaper than deriving ``model.logp()`` for every fit.
    """
    rvs = [*model.free_RVs, *model.observed_RVs]
    outputs = [*rvs, *(model.rvs_to_values[rv] for rv in model.observed_RVs), *model.potentials]
    inputs = [v for v in graph_inputs(outputs) if not isinstance(v, Constant)]
    return outputs, inputs


def transform_key(transform):
    if transform is None:
        return None
    attrs = tuple(sorted((k, repr(v)) for k, v in vars(transform).items()))
    return (type(transform).__module__, type(transform).__qualname__, attrs)


def detached(key, outputs, inputs) -> tuple:
    """A problem's signature (key, graph outputs, graph inputs) whose graph has placeholders of the
    same types for its non-constant inputs: compared by position all the same, and it
    holds no reference to the fit's data (shared variables) in memory or on disk."""
    placeholders = [v.type() for v in inputs]
    return key, graph_replace(outputs, dict(zip(inputs, placeholders)), strict=False), placeholders
