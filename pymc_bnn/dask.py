"""Dask adapters: lazy, block-wise predictions over dask collections.

Optional extra: ``pip install 'pymc_bnn[dask]'``. The estimators call into this module
when ``predict``, ``predict_proba``, ``predict_uncertainty`` (and the regressor's
``predict_interval``) receive a ``dask.array.Array`` or a ``dask.dataframe.DataFrame``:
the result is a lazy dask array, row-chunked like the input, computed block by block
with the compiled predictive wherever the blocks live (threads, processes or a
``distributed`` cluster of any kind: nothing here assumes a ``LocalCluster``). The
fitted estimator enters the task graph once, as one key that every block task depends
on, so a distributed scheduler ships it to each worker once, not with every block.

NumPy input never comes here; its results are unchanged.

Examples
--------
>>> import dask.array as da  # doctest: +SKIP
>>> proba = clf.predict_proba(da.from_zarr("big.zarr"))  # lazy  # doctest: +SKIP
>>> proba.to_zarr("proba.zarr")  # computed block-wise  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

__all__ = ["INSTALL", "is_dask_collection", "predict_blocks"]

#: How to install what this module needs.
INSTALL = "pip install 'pymc_bnn[dask]'"


def is_dask_collection(X) -> bool:
    """Whether ``X`` is a dask collection (checked without importing dask)."""
    return callable(getattr(X, "__dask_graph__", None)) and X.__dask_graph__() is not None


def _require_dask():
    try:
        import dask
        import dask.array as da
    except ImportError:
        raise ImportError(f"dask input needs dask: {INSTALL}") from None
    return dask, da


def _rows(X, n_features: int, what: str):
    """``X`` as a 2-D dask array with one chunk across its columns."""
    _, da = _require_dask()
    if hasattr(X, "to_dask_array"):  # dask DataFrame: row chunks of known length
        X = X.to_dask_array(lengths=True)
    if not isinstance(X, da.Array):
        raise TypeError(f"{what} must be a dask Array or DataFrame; got {type(X).__name__}.")
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D; got a dask array of shape {X.shape}.")
    if not np.isnan(X.shape[1]) and X.shape[1] != n_features:
        raise ValueError(f"{what} has {X.shape[1]} features, but the estimator was fit with "
                         f"{n_features}.")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    return X.rechunk({1: -1})


def _groups_like(groups, X):
    """Groups as a 1-D dask array chunked like ``X``'s rows (or None)."""
    if groups is None:
        return None
    _, da = _require_dask()
    if hasattr(groups, "to_dask_array"):
        groups = groups.to_dask_array(lengths=True)
    if not isinstance(groups, da.Array):
        groups = np.asarray(groups)
        if groups.ndim != 1 or groups.shape[0] != X.shape[0]:
            raise ValueError(f"groups must have one label per row of X ({X.shape[0]}); got "
                             f"shape {groups.shape}.")
        return da.from_array(groups, chunks=(X.chunks[0],))
    if groups.ndim != 1 or groups.shape[0] != X.shape[0]:
        raise ValueError(f"groups must have one label per row of X ({X.shape[0]}); got "
                         f"shape {groups.shape}.")
    return groups.rechunk((X.chunks[0],))


# Block functions: module-level (picklable), one call per block of rows.
def _block(estimator, x, g, method, kwargs):
    return getattr(estimator, method)(x, **({} if g is None else {"groups": g}), **kwargs)


def _stacked_block(estimator, x, g, method, kwargs, keys):
    out = _block(estimator, x, g, method, kwargs)
    if isinstance(out, dict):
        out = [out[k] for k in keys]
    return np.column_stack([np.reshape(o, (x.shape[0], -1)) for o in out])


def predict_blocks(estimator, X, method: str, *, groups=None, **kwargs):
    """Lazy ``estimator.<method>(X)`` over the row blocks of a dask collection.

    Parameters
    ----------
    estimator : fitted BayesianMLPClassifier or BayesianMLPRegressor
    X : dask Array of shape (n_samples, n_features), or dask DataFrame
    method : {"predict", "predict_proba", "predict_uncertainty", "predict_interval"}
        ``predict`` with ``return_std=True`` and ``predict_interval`` return a tuple of
        arrays, ``predict_uncertainty`` a dict, as their NumPy versions do.
    groups : array-like or dask Array of shape (n_samples,), optional
    **kwargs
        Passed to the method (e.g. ``coverage=``, ``return_std=``).

    Returns
    -------
    dask Array (or a tuple / dict of them), row-chunked like ``X``, not computed.
    """
    dask, da = _require_dask()
    X = _rows(X, estimator.n_features_in_, "X")
    g = _groups_like(groups, X)
    # one graph key for the estimator: each worker receives it once
    est = dask.delayed(estimator, pure=True, traverse=False)

    def blockwise(fn, *extra, columns=None, dtype=np.float64):
        """``fn(estimator, x_block, g_block, *extra)`` per row block; ``columns=None``:
        1-D output (n_samples,), else (n_samples, columns)."""
        args = [est, None, X, "ij", g, None if g is None else "i"]
        for e in extra:
            args += [e, None]
        shape = (0,) if columns is None else (0, columns)
        return da.blockwise(fn, "i" if columns is None else "ik", *args,
                            new_axes=None if columns is None else {"k": columns},
                            concatenate=True, dtype=dtype, meta=np.empty(shape, dtype=dtype))

    classifier = hasattr(estimator, "classes_")
    if method == "predict_proba" and classifier:
        return blockwise(_block, method, kwargs, columns=len(estimator.classes_))
    if method == "predict" and (classifier or not kwargs.get("return_std")):
        dtype = estimator.classes_.dtype if classifier else np.float64
        return blockwise(_block, method, kwargs, dtype=dtype)
    if method in ("predict", "predict_interval") and not classifier:
        # two outputs, (mean, std) or (lower, upper), computed together per block
        both = blockwise(_stacked_block, method, kwargs, None, columns=2)
        return both[:, 0], both[:, 1]
    if method == "predict_uncertainty":
        if classifier:
            k = len(estimator.classes_)
            layout = [("mean", k), ("std", k), ("entropy", None), ("mutual_info", None)]
        else:
            layout = [(name, None) for name in ("mean", "std", "epistemic_std",
                                                "aleatoric_std")]
        width = sum(w or 1 for _, w in layout)
        stacked = blockwise(_stacked_block, method, kwargs, tuple(n for n, _ in layout),
                            columns=width)
        out, start = {}, 0
        for name, w in layout:
            out[name] = stacked[:, start:start + w] if w else stacked[:, start]
            start += w or 1
        return out
    raise ValueError(f"{type(estimator).__name__}.{method} has no dask version.")
