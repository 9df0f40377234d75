"""Dask adapters: lazy, block-wise predictions over dask collections, and minibatch ADVI
that streams row blocks from them (data larger than memory).

Optional extra: ``pip install 'pymc_bnn[dask]'``. The estimators call into this module
when ``predict``, ``predict_proba``, ``predict_uncertainty`` (and the regressor's
``predict_interval``) receive a ``dask.array.Array`` or a ``dask.dataframe.DataFrame``:
the result is a lazy dask array, row-chunked like the input, computed block by block
with the compiled predictive wherever the blocks live (threads, processes or a
``distributed`` cluster of any kind: nothing here assumes a ``LocalCluster``). The
fitted estimator enters the task graph once, as one key that every block task depends
on, so a distributed scheduler ships it to each worker once, not with every block.

``fit`` on a dask Array / DataFrame (with ``batch_size`` set) runs the same compiled
minibatch ADVI as on NumPy data, with ``total_size`` the full row count, but draws each
step's rows from a pool of a few row blocks that a background thread keeps refreshing
(:class:`BlockSampler`), so the whole array is never in memory.

NumPy input never comes here; its results are unchanged.

Examples
--------
>>> import dask.array as da  # doctest: +SKIP
>>> proba = clf.predict_proba(da.from_zarr("big.zarr"))  # lazy  # doctest: +SKIP
>>> proba.to_zarr("proba.zarr")  # computed block-wise  # doctest: +SKIP
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from pymc_bnn.network._checks import is_dask_collection

__all__ = [
    "INSTALL",
    "BlockSampler",
    "compute",
    "is_dask_collection",
    "predict_blocks",
    "streamed_inputs",
]

#: How to install what this module needs.
INSTALL = "pip install 'pymc_bnn[dask]'"

#: Held by :func:`compute`: dask's configuration is process-wide, and two overlapping
#: ``dask.config.set`` blocks (the fit's thread and the block loader's) could restore
#: it in the wrong order and leave fusion off in the user's process.
_UNFUSED = threading.Lock()


def compute(*collections):
    """``dask.compute`` of the package's own reads, with dask's low-level fusion off.

    Linear fusion renames a chain of tasks to a key such as
    ``('standard_normal-getitem-<token>', 1)`` that another graph of the same arrays
    (another slice, another block) defines with other dependencies. A distributed
    scheduler that still knows that key from an earlier or concurrent computation then
    fails with a spurious ``KeyError`` (dask/dask#9888, open): a second fit on the same
    collections hit it in most runs. Unfused, each key names one task whatever the
    graph; a streamed fit's reads are a few tasks per block, so nothing is lost.
    Computations of the user's own in other threads meanwhile run unfused too, which
    changes no result.

    Returns
    -------
    tuple
        One computed value per collection, as ``dask.compute`` returns them.

    Examples
    --------
    >>> import dask.array as da  # doctest: +SKIP
    >>> X = da.ones((1_000, 3), chunks=(250, 3))  # doctest: +SKIP
    >>> head, total = compute(X[:5], X.sum())  # doctest: +SKIP
    >>> head.shape, float(total)  # doctest: +SKIP
    ((5, 3), 3000.0)
    """
    import dask

    with _UNFUSED, dask.config.set({"optimization.fuse.active": False}):
        return dask.compute(*collections)


def _require_dask():
    try:
        import dask
        import dask.array as da
    except ImportError:
        raise ImportError(f"dask input needs dask: {INSTALL}") from None
    return dask, da


def _frame_array(frame):
    """A dask DataFrame or Series as a dask array with row chunks of known length.

    The frame's expression is optimized first: dask's query optimizer may read a
    selection of few columns in fewer, larger partitions (e.g. ``read_parquet(...)["y"]``
    as 3 partitions of a dataset of 8 files), and ``to_dask_array(lengths=True)`` on the
    unoptimized frame then fails, its lengths counted on the optimized one.
    """
    if hasattr(frame, "optimize"):
        frame = frame.optimize()
    return frame.to_dask_array(lengths=True)


def _rows(X, n_features: int, what: str):
    """``X`` as a 2-D dask array with one chunk across its columns."""
    _, da = _require_dask()
    if hasattr(X, "to_dask_array"):  # dask DataFrame: row chunks of known length
        X = _frame_array(X)
    if not isinstance(X, da.Array):
        raise TypeError(f"{what} must be a dask Array or DataFrame; got {type(X).__name__}.")
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D; got a dask array of shape {X.shape}.")
    if not np.isnan(X.shape[1]) and X.shape[1] != n_features:
        raise ValueError(
            f"{what} has {X.shape[1]} features, but the estimator was fit with {n_features}."
        )
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    return X.rechunk({1: -1})


def _groups_like(groups, X):
    """Groups as a 1-D dask array chunked like ``X``'s rows (or None)."""
    if groups is None:
        return None
    _, da = _require_dask()
    if hasattr(groups, "to_dask_array"):
        groups = _frame_array(groups)
    if not isinstance(groups, da.Array):
        groups = np.asarray(groups)
        if groups.ndim != 1 or groups.shape[0] != X.shape[0]:
            raise ValueError(
                f"groups must have one label per row of X ({X.shape[0]}); got shape {groups.shape}."
            )
        return da.from_array(groups, chunks=(X.chunks[0],))
    if groups.ndim != 1 or groups.shape[0] != X.shape[0]:
        raise ValueError(
            f"groups must have one label per row of X ({X.shape[0]}); got shape {groups.shape}."
        )
    return groups.rechunk((X.chunks[0],))


# Block functions: module-level (picklable), one call per block of rows.
def _block(estimator, x, g, method, kwargs, names=None):
    if x.shape[0] == 0:
        # an empty partition (a filtered frame): the outputs of one row, cut to none
        one = np.zeros((1, x.shape[1]), dtype=np.float64)
        g1 = None if g is None else np.asarray(estimator.groups_[:1])
        out = _block(estimator, one, g1, method, kwargs, names)
        if isinstance(out, dict):
            return {k: v[:0] for k, v in out.items()}
        return tuple(v[:0] for v in out) if isinstance(out, tuple) else out[:0]
    if names is not None:  # the frame's column names, as the estimator was fit with
        import pandas as pd

        x = pd.DataFrame(x, columns=names, copy=False)
    return getattr(estimator, method)(x, **({} if g is None else {"groups": g}), **kwargs)


def _stacked_block(estimator, x, g, method, kwargs, keys, names=None):
    out = _block(estimator, x, g, method, kwargs, names)
    if isinstance(out, dict):
        out = [out[k] for k in keys]
    # (len(o), -1): a reshape of no rows to (0, -1) would be ambiguous
    return np.column_stack(
        [
            np.reshape(o, (len(o), -1 if len(o) else int(np.prod(np.shape(o)[1:], dtype=int))))
            for o in out
        ]
    )


def _frame_names(X) -> list[str] | None:
    """A DataFrame's column names as scikit-learn takes them: all strings, else none (a
    frame with integer columns has no feature names); mixed types are an error."""
    if not hasattr(X, "columns"):
        return None
    names = list(X.columns)
    kinds = {isinstance(c, str) for c in names}
    if kinds == {True}:
        return names
    if kinds == {True, False}:
        types = sorted({type(c).__name__ for c in names})
        raise TypeError(
            f"Feature names are only supported if all input features have string names, "
            f"but your input has {types} as feature name / column name types. Convert them "
            f"all to strings (X.columns = X.columns.astype(str)) or to a non-string type."
        )
    return None


def _checked_names(estimator, X):
    """The column names to give each block, checked here once, as scikit-learn checks
    them in memory (its warnings, worded alike): the estimator's feature names when it
    was fit with them (a DataFrame ``X`` must have the same, in order), else None (the
    blocks stay NumPy, as the estimator was fit). A block without names would warn once
    per block."""
    fitted = getattr(estimator, "feature_names_in_", None)
    kind = type(estimator).__name__
    names = _frame_names(X)
    if fitted is None:
        if names is not None:
            warnings.warn(
                f"X has feature names, but {kind} was fitted without feature names",
                UserWarning,
                stacklevel=5,
            )
        return None
    fitted = [str(c) for c in fitted]
    if names is None:
        warnings.warn(
            f"X does not have valid feature names, but {kind} was fitted with feature names",
            UserWarning,
            stacklevel=5,
        )
        return fitted
    if names != fitted:
        raise ValueError(
            f"X has the columns {names}, but {kind} was fit with {fitted}: "
            f"the feature names must match, in order."
        )
    return names


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
    names = _checked_names(estimator, X)
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
        return da.blockwise(
            fn,
            "i" if columns is None else "ik",
            *args,
            new_axes=None if columns is None else {"k": columns},
            concatenate=True,
            dtype=dtype,
            meta=np.empty(shape, dtype=dtype),
        )

    classifier = hasattr(estimator, "classes_")
    if method == "predict_proba" and classifier:
        return blockwise(_block, method, kwargs, names, columns=len(estimator.classes_))
    if method == "predict" and (classifier or not kwargs.get("return_std")):
        dtype = estimator.classes_.dtype if classifier else np.float64
        return blockwise(_block, method, kwargs, names, dtype=dtype)
    if method in ("predict", "predict_interval") and not classifier:
        # two outputs, (mean, std) or (lower, upper), computed together per block
        both = blockwise(_stacked_block, method, kwargs, None, names, columns=2)
        return both[:, 0], both[:, 1]
    if method == "predict_uncertainty":
        if classifier:
            k = len(estimator.classes_)
            layout = [("mean", k), ("std", k), ("entropy", None), ("mutual_info", None)]
        else:
            layout = [(name, None) for name in ("mean", "std", "epistemic_std", "aleatoric_std")]
        width = sum(w or 1 for _, w in layout)
        stacked = blockwise(
            _stacked_block, method, kwargs, tuple(n for n, _ in layout), names, columns=width
        )
        out, start = {}, 0
        for name, w in layout:
            out[name] = stacked[:, start : start + w] if w else stacked[:, start]
            start += w or 1
        return out
    raise ValueError(f"{type(estimator).__name__}.{method} has no dask version.")


# ---------------------------------------------------------------- out-of-core fits
class BlockSampler:
    """Minibatch rows drawn from a pool of row blocks of dask arrays, refreshed as it goes.

    The ADVI engine (:mod:`pymc_bnn.inference._compiled_vi`) asks for the rows of ``n_steps``
    steps at a time (:meth:`fill`). The sampler holds ``pool_blocks`` row blocks in
    memory, each drawn at random with probability proportional to its length, and
    draws each row as: a pool block uniformly, then a row of it uniformly. With every
    pool slot an independent length-weighted draw of a block (true from the start, and
    kept by replacing a random slot with a fresh draw), each row of the data is drawn
    with probability 1 / n_rows, as ``pm.Minibatch`` draws from data in memory; only
    the rows of nearby calls come from the same few blocks.

    Refreshing is paced by rows, not calls (*data echoing*, Choi et al. 2019, "Faster
    neural network training with data echoing"): a block, loaded by a background thread
    while the steps run, replaces a random slot once the calls since the last
    replacement have drawn ``echo`` times the mean block length, at most once per call.
    Each loaded row is then drawn about ``echo`` times on average, so reading and
    decompressing blocks (which can take longer than the steps that draw as many rows;
    measurements: research/notes/code-measurements.md) keeps up with the steps
    whatever the chunking;
    small blocks are still replaced every call. The schedule depends only on the row
    counts and the generator, never on timing, so a seed gives the same fit.

    Memory: ``pool_blocks + 1`` blocks (one buffer, the spare slot receiving the next
    block), plus one block in flight while it is decoded.

    Parameters
    ----------
    arrays : list of dask arrays with equal row chunks
        ``X`` (n_rows, n_features) and the encoded target (n_rows,).
    pool_blocks : int, default 4
    echo : float, default 4
        Rows drawn per row loaded (see above); 1 loads a block's worth of rows for every
        block's worth drawn. Every row keeps probability 1 / n_rows whatever the value;
        larger values keep the same few blocks longer (consecutive minibatches more
        alike).
    seed : int
        Seeds the initial pool; later choices use the engine's generator.
    """

    def __init__(self, arrays, *, pool_blocks: int = 4, echo: float = 4.0, seed: int = 0):
        import concurrent.futures

        if isinstance(echo, bool) or not isinstance(echo, (int, float)) or not echo > 0:
            raise ValueError(f"echo must be a positive number; got {echo!r}.")
        self.echo = float(echo)
        self.arrays = arrays
        self.lengths = np.array(arrays[0].chunks[0], dtype=np.int64)
        self.n_rows = int(self.lengths.sum())
        self.p = self.lengths / self.n_rows
        self.n_blocks = len(self.lengths)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]])
        self._drawn = 0  # rows drawn since the last replacement
        rng = np.random.default_rng(seed)
        m = int(min(pool_blocks, self.n_blocks)) if self.n_blocks > 1 else 1
        # slot k holds rows [k * width, k * width + slot_rows[k]) of every buffer
        self._width = int(self.lengths.max())
        self._buffers = [
            np.empty(((m + 1) * self._width, *a.shape[1:]), dtype=a.dtype) for a in arrays
        ]
        self._slot_rows = np.zeros(m + 1, dtype=np.int64)
        self._active = np.arange(m)  # pool position -> slot
        self._spare = m
        for slot, block in enumerate(rng.choice(self.n_blocks, size=m, p=self.p)):
            self._load(int(block), slot)
        self._executor = concurrent.futures.ThreadPoolExecutor(1, "pymc_bnn-blocks")
        self._next = self._executor.submit(
            self._load, int(rng.choice(self.n_blocks, p=self.p)), self._spare
        )
        #: blocks loaded so far (the initial pool included)
        self.loads = m

    def _load(self, block: int, slot: int) -> None:
        """Compute ``block`` of every array into ``slot`` (in the loader thread)."""
        parts = compute(*[a.blocks[block] for a in self.arrays])
        start = int(self.starts[block])
        for name, part in zip(("X", "y"), parts):
            if part.dtype.kind == "f" and not np.isfinite(part).all():
                raise ValueError(
                    f"{name} has NaN or infinite values in rows {start} to "
                    f"{start + part.shape[0] - 1}."
                )
        begin = slot * self._width
        for buf, part in zip(self._buffers, parts):
            buf[begin : begin + part.shape[0]] = part
        self._slot_rows[slot] = parts[0].shape[0]

    def fill(self, rng: np.random.Generator, out: list[np.ndarray]) -> None:
        """Fill ``out`` (one (n_steps, batch, ...) array per input array) with rows."""
        n = out[0].shape[0] * out[0].shape[1]
        if self.n_blocks > 1 and self._drawn >= self.echo * self.n_rows / self.n_blocks:
            self._next.result()
            position = int(rng.integers(len(self._active)))
            self._active[position], self._spare = self._spare, int(self._active[position])
            self.loads += 1
            self._drawn = 0
            self._next = self._executor.submit(
                self._load, int(rng.choice(self.n_blocks, p=self.p)), self._spare
            )
        self._drawn += n
        slots = self._active[rng.integers(0, len(self._active), size=out[0].shape[:2])]
        index = rng.integers(0, self._slot_rows[slots]) + slots * self._width
        for buf, o in zip(self._buffers, out):
            # one gather per array; indices are in range by construction
            np.take(buf, index, axis=0, out=o, mode="wrap")

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._buffers = []


def streamed_inputs(estimator, X, y) -> dict:
    """What a minibatch fit on dask collections needs, without loading them.

    Sets the estimator's target encoding (``classes_`` from the distinct labels, or
    the regressor's ``y_mean_`` / ``y_scale_``) and ``n_features_in_``.

    Returns
    -------
    dict with ``X0`` and ``y0`` (the first ``batch_size`` rows, encoded: the model's
    placeholder data), ``n_rows``, ``target_kwargs``, and ``X`` and ``codes`` (the
    lazy float64 rows and encoded target, row-chunked alike: what a
    :class:`BlockSampler` streams).
    """
    _, da = _require_dask()
    from sklearn.base import is_classifier

    if estimator.batch_size is None:
        raise ValueError(
            "fit on a dask collection streams minibatches: batch_size=None "
            "(full batches) needs the data in memory; set batch_size "
            "(e.g. 'auto' or 128), or compute the data into NumPy arrays "
            "first."
        )
    if estimator.inference not in ("auto", "advi"):  # "auto" is ADVI on dask input
        raise ValueError(
            f"fit on a dask collection runs minibatch ADVI; "
            f"inference={estimator.inference!r} needs the data in memory."
        )
    names = _frame_names(X)
    if getattr(X, "ndim", 2) != 2:
        raise ValueError(f"X must be 2-D; got a dask array of shape {X.shape}.")
    X = _rows(X, X.shape[1], "X")
    if hasattr(y, "to_dask_array"):
        y = _frame_array(y)
    if not isinstance(y, da.Array):
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:  # before dask splits it like X's rows
            raise ValueError(
                f"y must have one value per row of X ({X.shape[0]}); got shape {y.shape}."
            )
        y = da.from_array(y, chunks=(X.chunks[0],))
    elif any(np.isnan(c) for c in y.chunks[0]):  # y[mask]: lengths known only once counted
        y = y.compute_chunk_sizes()
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one value per row of X ({X.shape[0]}); got shape {y.shape}.")
    y = y.rechunk((X.chunks[0],))
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must hold numbers; got dtype {X.dtype}.")
    X = X.astype(np.float64)
    if is_classifier(estimator):
        classes = np.unique(compute(da.unique(y))[0])
        _, target_kwargs = estimator._encode_target(classes)
        codes = y.map_blocks(lambda b: np.searchsorted(classes, b).astype(np.int64), dtype=np.int64)
    else:
        mean, sd = compute(y.astype(np.float64).mean(), y.astype(np.float64).std())
        if not (np.isfinite(mean) and np.isfinite(sd)):
            # else every block's encoded target would be NaN, and the first block loaded
            # would be blamed for it
            raise ValueError(
                "y has NaN or infinite values (its mean over the collection "
                "is not finite); drop or impute those rows first."
            )
        target_kwargs = estimator._set_target_scaling(float(mean), float(sd))
        codes = (y.astype(np.float64) - estimator.y_mean_) / estimator.y_scale_
    n_rows = int(X.shape[0])
    # "auto" on few rows means full batches: streamed, one minibatch of all the rows
    batch = (
        (estimator._batch_rows(n_rows) or n_rows)
        if estimator.batch_size == "auto"
        else int(estimator.batch_size)
    )
    if batch > n_rows:
        raise ValueError(f"batch_size ({batch}) cannot exceed the number of rows ({n_rows}).")
    X0, y0 = compute(X[:batch], codes[:batch])
    estimator.n_features_in_ = int(X.shape[1])
    if names is not None:
        estimator.feature_names_in_ = np.array(names, dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    return {
        "X0": X0,
        "y0": y0,
        "n_rows": n_rows,
        "target_kwargs": target_kwargs,
        "X": X,
        "codes": codes,
    }
