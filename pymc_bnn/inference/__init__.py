"""Fit a model from :func:`pymc_bnn.network.model.build_model` by ADVI, full-rank ADVI or NUTS.

All three go through PyMC's own machinery (``pm.ADVI`` / ``pm.FullRankADVI`` with
Adam, ``pm.sample`` with the fastest installed NUTS backend). This package adds the
defaults that converge on small BNNs, seeding, a NaN guard with bounded restarts,
an optional convergence stop, convergence diagnostics (:func:`diagnose`, with a
warning when they fail) and an immutable result.

Its modules, by concept (each public name is re-exported here):

- :mod:`~pymc_bnn.inference.posterior`: the result type, :class:`Posterior`;
- :mod:`~pymc_bnn.inference._fitting`: :func:`fit`, which dispatches to
- :mod:`~pymc_bnn.inference._vi`: ADVI and full-rank ADVI (step sizes, the compiled
  engine's calls, ``pm.fit``), on
- :mod:`~pymc_bnn.inference._compiled_vi`: the compiled ADVI scan
  (:class:`~pymc_bnn.inference._compiled_vi.ScanADVI`), and
  :mod:`~pymc_bnn.inference._runner_cache`: its runners kept per model structure, in
  memory and on disk;
- :mod:`~pymc_bnn.inference._nuts`: NUTS with the fastest installed backend and
  :func:`sample_more`, on :mod:`~pymc_bnn.inference._compiled_nuts` (nutpie's compiled
  models kept per model structure);
- :mod:`~pymc_bnn.inference._structure`: what identifies a model's structure for both
  caches;
- :mod:`~pymc_bnn.inference.diagnostics`: :func:`diagnose` and the warnings;
- :mod:`~pymc_bnn.inference._concurrency`: :func:`fit_concurrently` and the lock that
  serialises concurrent fits' graph work.
"""

# re-exported: every public name of the modules below that pymc_bnn.inference had
# default_threads is public here (fit_concurrently's default); it lives in its own
# module so that the NUTS chains (pymc_bnn.inference._compiled_nuts) need not import
# the concurrency helpers
from pymc_bnn._runtime.threads import THREADS_ENV, default_threads
from pymc_bnn.exceptions import ConvergenceWarning, SamplingWarning
from pymc_bnn.inference._concurrency import fit_concurrently
from pymc_bnn.inference._fitting import METHODS, fit
from pymc_bnn.inference._nuts import (
    NUTS_INITS,
    NUTS_SAMPLERS,
    NUTS_SAMPLERS_HIERARCHICAL,
    default_nuts_sampler,
    sample_more,
)
from pymc_bnn.inference._vi import (
    ENGINES,
    MINIBATCH_ADVI_LEARNING_RATE,
    MINIBATCH_FINAL_LR_FRACTION,
    SCAN_CALL_BYTES,
    SCAN_CHUNK,
    VI_DEFAULTS,
    minibatch_learning_rate,
)
from pymc_bnn.inference.diagnostics import (
    ELBO_MIN_STEPS,
    ELBO_MIN_WINDOW,
    ELBO_NOISE_Z,
    ELBO_RELATIVE_TOL,
    ELBO_TRIM,
    ELBO_WINDOW_FRACTION,
    ESS_PER_CHAIN,
    N_DIAGNOSTIC_POINTS,
    RHAT_THRESHOLD,
    diagnose,
)
from pymc_bnn.inference.posterior import Posterior

# importable from here before inference was a package (Posterior.spec is a NetworkSpec)
from pymc_bnn.network.model import NetworkSpec, network_spec

__all__ = [
    "ENGINES",
    "METHODS",
    "NUTS_INITS",
    "NUTS_SAMPLERS",
    "VI_DEFAULTS",
    "Posterior",
    "SamplingWarning",
    "default_nuts_sampler",
    "default_threads",
    "diagnose",
    "fit",
    "fit_concurrently",
    "sample_more",
]
