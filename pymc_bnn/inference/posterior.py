"""The result of :func:`pymc_bnn.inference.fit`: the immutable :class:`Posterior`."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pymc_bnn.network.spec import NetworkSpec

__all__ = ["Posterior"]


class _ReadOnlyDict(Mapping):
    """A read-only mapping. Unlike ``types.MappingProxyType`` it can be pickled and
    deep-copied (estimators are, and posteriors that hold no live approximation:
    :meth:`Posterior.__getstate__`)."""

    __slots__ = ("_data",)

    def __init__(self, data=()):
        object.__setattr__(self, "_data", dict(data))

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)

    def __setattr__(self, name, value):
        raise AttributeError("diagnostics are read-only")

    def __reduce__(self):
        return (type(self), (self._data,))


@dataclass(frozen=True)
class Posterior:
    """Result of :func:`fit`: an immutable record of one fitted posterior.

    Attributes
    ----------
    method : str
        ``"advi"``, ``"fullrank_advi"``, ``"nuts"`` or ``"laplace"``.
    spec : NetworkSpec
        Architecture of the fitted network.
    seed : int
        The seed that was used (init jitter, minibatch order, ADVI noise, NUTS).
    approx : pymc Approximation or None
        The variational approximation (VI methods only).
    idata : xarray.DataTree or None
        Stored posterior draws: from NUTS, or from a VI fit whose approximation was
        dropped by pickling / :meth:`BayesianMLPClassifier.save`. ``None`` for a live
        VI fit (draw from ``approx`` instead).
    loss : ndarray of shape (n_steps,)
        Negative ELBO per optimisation step, always in full-data units (a minibatch
        run reports its ``total_size``-scaled estimate of the full-data value). Empty
        for NUTS. Read-only.
    learning_rate : float or None
        Adam learning rate of the run that produced ``approx`` (after any restart).
    nuts_sampler : str or None
        NUTS backend used.
    engine : str or None
        How the VI steps were run: ``"jax"`` (compiled scan) or ``"pymc"`` (pm.fit).
    model : pm.Model or None
        The model NUTS sampled (kept so that :func:`sample_more` can continue the
        chains); None for VI (the approximation holds it) and after loading.
    laplace : LaplaceGaussian or None
        The Gaussian of a Laplace fit (``method="laplace"``,
        :mod:`pymc_bnn.inference.laplace`); None otherwise and after loading (the stored draws
        and their linearisation point serve the predictions).
    diagnostics : Mapping
        Convergence diagnostics of the run, computed once by :func:`fit` (or
        :func:`sample_more`) with :func:`diagnose`; see there for the keys. A
        read-only mapping (a plain ``dict`` passed in is copied into one); empty when
        not computed.

    Notes
    -----
    A posterior with stored draws (NUTS, Laplace, a loaded or unpickled estimator's)
    can be pickled and deep-copied without its ``model`` (a PyMC model does not
    pickle; the draws predict without it, and :func:`sample_more` then asks for a new
    fit). A live VI posterior holds its PyMC approximation, all it has to predict
    from, which the standard pickle cannot write (cloudpickle can, as
    ``benchmarks/ppc_strategies.py`` does) and which cannot be deep-copied (TypeError);
    pickle ``pymc_bnn.posterior_predictive(post)`` or a fitted estimator instead, which
    keep draws.
    """

    method: str
    spec: NetworkSpec
    seed: int
    approx: object | None = None
    idata: object | None = None
    loss: np.ndarray = field(default_factory=lambda: np.empty(0))
    learning_rate: float | None = None
    nuts_sampler: str | None = None
    engine: str | None = None
    model: object | None = field(default=None, repr=False, compare=False)
    laplace: object | None = field(default=None, repr=False, compare=False)
    diagnostics: Mapping = field(default_factory=_ReadOnlyDict, compare=False)

    def __post_init__(self):
        if not isinstance(self.diagnostics, Mapping):
            raise TypeError(
                f"diagnostics must be a mapping (e.g. a dict); got "
                f"{type(self.diagnostics).__name__}."
            )
        if not isinstance(self.diagnostics, _ReadOnlyDict):
            object.__setattr__(self, "diagnostics", _ReadOnlyDict(self.diagnostics))

    def __getstate__(self):
        """Pickle support (see Notes): the fields, without a NUTS run's ``model``."""
        state = dict(self.__dict__)
        state["model"] = None  # a pm.Model does not pickle; the draws predict without it
        return state

    def __deepcopy__(self, memo):
        if self.approx is not None:
            # dropping the approximation would leave nothing to predict from; PyMC's
            # own error ("Cannot convert models with non-default initial_values") said
            # neither what failed nor what to do
            raise TypeError(
                f"A live {self.method!r} Posterior cannot be deep-copied: its PyMC "
                "approximation cannot, and it stores no draws to copy instead. Copy "
                "pymc_bnn.posterior_predictive(post) (draws from it), or fit a "
                "BayesianMLPClassifier / BayesianMLPRegressor, which copies, pickles and "
                "saves with its draws."
            )
        new = object.__new__(type(self))
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new

    def __copy__(self):
        # a shallow copy keeps the model (sample_more works on it); __getstate__'s
        # dropping of it is for pickles and deep copies
        return dataclasses.replace(self)

    def __setstate__(self, state):
        self.__dict__.update(state)
        if isinstance(self.loss, np.ndarray):
            # unpickled or copied, the array is a new one and writeable: read-only, as
            # documented
            self.loss.setflags(write=False)

    @property
    def is_variational(self) -> bool:
        """Whether this posterior is a variational approximation."""
        return self.approx is not None

    @property
    def n_stored_draws(self) -> int | None:
        """Number of stored MCMC draws (chains x draws), or None for VI (unlimited)."""
        if self.idata is None:
            return None
        post = self.idata.posterior
        return int(post.sizes["chain"] * post.sizes["draw"])
