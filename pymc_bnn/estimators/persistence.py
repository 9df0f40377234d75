"""Save and load fitted estimators in a format whose loading never executes code.

One netCDF-4 file (HDF5, through h5netcdf) holds the posterior draws that the
estimator predicts from, its loss curve, and a JSON document (in the root group's
attributes) with the parameters, the target encoding (classes, or the regressor's
target scaling), the groups, the architecture, the fit's convergence diagnostics and a
format version.
Loading reads arrays and JSON only, unlike pickle/joblib, which can run arbitrary code
from an untrusted file. It checks what it reads: every numeric array is written with
HDF5's Fletcher-32 checksum (files written before have none and load as before), the
draws must be finite and the parameters and architecture valid, so a damaged or
hand-edited file gives one ValueError instead of changed or NaN predictions.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import xarray as xr

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "jsonable_labels",
    "load",
    "load_any",
    "read_metadata",
    "restore_labels",
    "save",
]

#: Format tag prefix; a file's tag names the estimator class, e.g.
#: ``"pymc_bnn.BayesianMLPClassifier"``.
FORMAT = "pymc_bnn"
#: Version 2 (adds the regressor, groups and priors) also reads version-1 files.
#: Later additions are optional keys of the JSON that older files lack, read with a
#: default, so they need no new version: the posterior temperature (default 1.0, the
#: draws are untempered), the diagnostics (default ``{}``, not computed) and the
#: evidence step (default None; the prior scale(s) used are the network spec's).
FORMAT_VERSION = 2
_META = "pymc_bnn_metadata"
_LOSS = "loss_curve"
#: HDF5 filter setting of every numeric array written (h5netcdf's encoding): a checksum
#: of each chunk, which HDF5 checks on every read, so damaged data raises instead of
#: loading as other weights. A file without it (written before) reads as before.
_CHECKSUM = {"fletcher32": True}


def jsonable_labels(classes: np.ndarray, what: str = "class labels") -> tuple[list, str]:
    kind = classes.dtype.kind
    if kind in "biuf":
        return classes.tolist(), classes.dtype.str
    if kind == "U":
        return classes.tolist(), classes.dtype.str
    if kind == "O" and all(isinstance(c, str) for c in classes):
        return [str(c) for c in classes], "object-str"
    raise ValueError(
        f"Cannot save {what} of dtype {classes.dtype} (only numbers, booleans and "
        "strings are stored safely); re-encode the labels, or use pickle for trusted use."
    )


def restore_labels(values: list, dtype: str) -> np.ndarray:
    if dtype == "object-str":
        return np.array(values, dtype=object)
    return np.array(values, dtype=np.dtype(dtype))


def _float_list(values) -> list[float] | None:
    return None if values is None else [float(v) for v in values]


def save(estimator, path, *, extra: dict | None = None) -> Path:
    """Write a fitted estimator to ``path`` (netCDF-4); see :func:`load`.

    ``extra`` (a JSON-able dict; e.g. :func:`pymc_bnn.tabular.save_pipeline`'s
    preprocessing state) is stored in the metadata under ``"extra"``; :func:`load_any`
    returns it.

    Returns
    -------
    Path of the written file.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)
    path = Path(path)
    if not path.parent.is_dir():  # h5py's own error is a long traceback of C calls
        raise FileNotFoundError(f"No such folder: {path.parent} (to save {path.name} in)")
    params = estimator.get_params(deep=False)
    hls = params["hidden_layer_sizes"]
    params["hidden_layer_sizes"] = [hls] if isinstance(hls, int) else list(hls)
    rs = params["random_state"]
    params["random_state"] = int(rs) if isinstance(rs, int | np.integer) else None
    groups = getattr(estimator, "groups_", None)
    groups, groups_dtype = (
        (None, None) if groups is None else jsonable_labels(groups, "group labels")
    )
    post = estimator.posterior_
    names = getattr(estimator, "feature_names_in_", None)
    meta = {
        "format": f"{FORMAT}.{type(estimator).__name__}",
        "format_version": FORMAT_VERSION,
        "params": params,
        "target": estimator._target_metadata(),
        "groups": groups,
        "groups_dtype": groups_dtype,
        "n_features_in": int(estimator.n_features_in_),
        "feature_names_in": None if names is None else [str(n) for n in names],
        "spec": dataclasses.asdict(post.spec),
        "method": post.method,
        # inference_ where it is not the posterior's method (the ADVI + Laplace mixture)
        "inference": estimator.inference_,
        # a mixture's halves: the draws of each, the Laplace half's temperature (plain data)
        "mixture": getattr(estimator, "mixture_", None),
        "linear_part": getattr(estimator, "linear_part_", None),
        # the mixture of Laplace approximations' members (plain data)
        "ensemble": getattr(estimator, "ensemble_", None),
        # a regressor's NUTS run: chains, iterations, who chose it (plain data)
        "nuts_run": getattr(estimator, "nuts_run_", None),
        "seed": int(post.seed),
        "learning_rate": post.learning_rate,
        "nuts_sampler": post.nuts_sampler,
        # the stored draws are already tempered; these record how T was chosen
        "posterior_temperature": float(estimator.posterior_temperature_),
        "temperature_selection": (
            None
            if estimator.temperature_selection_ is None
            else estimator.temperature_selection_.as_dict()
        ),
        # the ELBO's KL weight of the kept fit, and how it was chosen (plain data)
        "kl_weight": float(getattr(estimator, "kl_weight_", 1.0)),
        "kl_weight_selection": getattr(estimator, "kl_weight_selection_", None),
        # how inference="auto" chose the method, where it chose (plain data)
        "inference_selection": getattr(estimator, "inference_selection_", None),
        # str / int / float / bool / None values (pymc_bnn.inference.diagnose)
        "diagnostics": dict(getattr(estimator, "diagnostics_", {})),
        # the final loss of each of the kept fit's n_init starts (None: NUTS)
        "start_losses": _float_list(getattr(estimator, "start_losses_", None)),
        # how the evidence chose the scales, if it did (the spec holds the scales used)
        "evidence": (
            None if getattr(estimator, "evidence_", None) is None else estimator.evidence_.as_dict()
        ),
    }
    if extra:
        meta["extra"] = extra
    try:
        meta_json = json.dumps(meta)
    except (TypeError, ValueError) as err:
        raise ValueError(f"extra metadata must be JSON-able: {err}") from None
    from pymc_bnn.inference.laplace import LINEARIZATION_GROUP
    from pymc_bnn.predictive._linear import LINEAR_PART_GROUP

    posterior = estimator.idata_.posterior.to_dataset()
    groups = {
        "/posterior": xr.Dataset({v: posterior[v] for v in posterior.data_vars}),
        f"/{_LOSS}": xr.Dataset({_LOSS: ("step", np.asarray(estimator.loss_curve_))}),
    }
    for name in (LINEARIZATION_GROUP, LINEAR_PART_GROUP):  # a Laplace fit's MAP weights,
        if name in estimator.idata_.children:  # a linear part's draws
            groups[f"/{name}"] = estimator.idata_[name].to_dataset()
    tree = xr.DataTree.from_dict(groups)
    tree.attrs[_META] = meta_json
    tree.to_netcdf(path, engine="h5netcdf", encoding=_encoding(groups))
    return path


def _encoding(groups: dict) -> dict:
    """``to_netcdf``'s encoding of ``groups``: :data:`_CHECKSUM` for every numeric array
    with a dimension (HDF5 filters need chunked storage, which neither a scalar nor a
    string array can have). It replaces the variables' own encoding, so a loaded
    estimator saved again is written the same way as a fitted one."""
    return {
        name: {
            k: {**_CHECKSUM, "chunksizes": _chunks(v.shape, v.dtype.itemsize)}
            for k, v in ds.variables.items()
            if v.ndim and v.dtype.kind in "biufc"
        }
        for name, ds in groups.items()
    }


#: Largest chunk of a saved array (HDF5 allows up to 4 GiB; a chunk is read whole).
_MAX_CHUNK_BYTES = 2**28


def _chunks(shape: tuple, itemsize: int) -> tuple:
    """One chunk per array where it fits :data:`_MAX_CHUNK_BYTES`, else the leading axes
    halved until it does: h5netcdf's own chunk shapes pad the edge chunks (files of
    draws 1.4-1.5x larger with checksums, which need chunked storage)."""
    chunks = [max(1, int(n)) for n in shape]
    while int(np.prod(chunks)) * itemsize > _MAX_CHUNK_BYTES:
        axis = next(i for i, c in enumerate(chunks) if c > 1)
        chunks[axis] = -(-chunks[axis] // 2)
    return tuple(chunks)


def _model_file(path) -> Path:
    """``path`` as a Path if it is there and not a folder (each its own error)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No such file: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a pymc_bnn model file.")
    return path


def read_metadata(path) -> dict:
    """The JSON metadata of a model file (format, parameters, architecture, extra, ...).

    Reads every object of the HDF5 file once (so damage is found) but builds nothing.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    IsADirectoryError
        If ``path`` is a directory.
    ValueError
        If the file is truncated, corrupted (a checksum that does not match), or not a
        pymc_bnn model file.
    """
    return _read_metadata(_model_file(path))


def load_any(path, classes):
    """Load a model file of any of the estimator ``classes``, with its ``extra`` metadata.

    The caller names the classes (e.g. ``(BayesianMLPClassifier, BayesianMLPRegressor)``):
    the estimators use this module to save and load themselves, so it does not import
    them.

    Parameters
    ----------
    path : path-like
    classes : iterable of estimator classes
        The classes the file may hold; its format tag names one of them.

    Returns
    -------
    (estimator, extra dict)
    """
    meta = read_metadata(path)
    classes = {c.__name__: c for c in classes}
    name = str(meta["format"]).removeprefix(FORMAT + ".")
    if name not in classes:
        raise ValueError(f"{path} holds an unknown estimator class {name!r}.")
    extra = meta.get("extra") or {}
    if not isinstance(extra, dict):
        raise ValueError(f"{path} is a damaged pymc_bnn model file: extra is not an object.")
    return load(classes[name], path), extra


def _read_metadata(path: Path) -> dict:
    """Read the JSON metadata with h5py, after reading every object of the file once.

    Checking with plain h5py first turns any damage into one clear ValueError (and
    avoids h5netcdf's noisy half-constructed file objects on corrupted input).
    """
    import h5py

    def touch(_name, obj):
        dict(obj.attrs)
        if isinstance(obj, h5py.Dataset):
            obj[()]

    try:
        with h5py.File(path, "r") as f:
            f.visititems(touch)
            raw = f.attrs.get(_META)
    except Exception as err:  # h5py raises OSError, KeyError, RuntimeError, ... on damage
        raise ValueError(
            f"{path} is not a readable pymc_bnn model file (truncated, corrupted or of "
            f"another format): {type(err).__name__}: {err}"
        ) from None
    try:
        meta = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        if not isinstance(meta, dict) or not str(meta.get("format")).startswith(FORMAT + "."):
            raise KeyError("format")
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError):
        raise ValueError(f"{path} is not a pymc_bnn model file (no pymc_bnn metadata).") from None
    return meta


def load(cls, path):
    """Read an estimator written by :func:`save`.

    Every array is read into memory before the file is closed: no handle stays open
    (the same path can be saved to again at once).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    IsADirectoryError
        If ``path`` is a directory.
    ValueError
        If the file is truncated, corrupted (a checksum that does not match, draws that
        are NaN or infinite), holds invalid parameters or architecture (a hand edit),
        or is not a pymc_bnn model file.
    """
    from sklearn.base import is_regressor

    from pymc_bnn.inference import Posterior
    from pymc_bnn.inference.evidence import EvidencePrior
    from pymc_bnn.inference.laplace import LINEARIZATION_GROUP
    from pymc_bnn.network._checks import check_hidden_layer_sizes
    from pymc_bnn.network.model import NetworkSpec
    from pymc_bnn.policy._tempering import TemperatureSelection
    from pymc_bnn.predictive._linear import LINEAR_PART_GROUP, predictive_from_idata

    path = _model_file(path)
    meta = _read_metadata(path)
    try:
        with xr.open_datatree(path, engine="h5netcdf") as opened:
            # every variable read now: DataTree.load() skips one named like its group
            # (xarray 2026.9; the loss curve's), which xarray then read from the file
            # opened again, and kept open: a save to the same path failed
            for node in opened.subtree:
                for variable in node.variables.values():
                    variable.load()
            tree = opened
    except Exception as err:  # pragma: no cover - _read_metadata read every object
        raise ValueError(f"{path} is not a readable pymc_bnn model file: {err}") from None
    if meta.get("format_version") not in (1, FORMAT_VERSION):
        raise ValueError(
            f"{path} has pymc_bnn format version {meta.get('format_version')!r}; this "
            f"version of pymc_bnn reads versions 1 to {FORMAT_VERSION}."
        )
    if meta["format"] != f"{FORMAT}.{cls.__name__}":
        raise ValueError(
            f"{path} holds a {meta['format'].removeprefix(FORMAT + '.')}, not a "
            f"{cls.__name__}; load it with that class."
        )
    if meta["format_version"] == 1:  # classes were stored at the top level
        meta["target"] = {"classes": meta["classes"], "classes_dtype": meta["classes_dtype"]}
    try:
        params = dict(meta["params"])
        params["hidden_layer_sizes"] = check_hidden_layer_sizes(params["hidden_layer_sizes"])
        spec = _checked_spec(NetworkSpec(**meta["spec"]))
        est = cls(**params)
        # the checks of fit: a hand-edited value (n_draws=-5) fails here, naming it
        est._validate_params()
        stored = {"/posterior": tree["posterior"].to_dataset()}
        for name in (LINEARIZATION_GROUP, LINEAR_PART_GROUP):
            if name in tree.children:
                stored[f"/{name}"] = tree[name].to_dataset()
        idata = xr.DataTree.from_dict(stored)
        predictive = predictive_from_idata(spec, idata)
        loss = np.array(tree[_LOSS][_LOSS].values, dtype=np.float64)
        est._restore_target(meta["target"], spec)
        groups = meta.get("groups")
        groups = None if groups is None else restore_labels(groups, meta["groups_dtype"])
        # files written before tempering existed hold untempered draws
        temperature = float(meta.get("posterior_temperature", 1.0))
        selection = meta.get("temperature_selection")
        if selection is not None:
            selection = TemperatureSelection(
                temperature=float(selection["temperature"]),
                temperatures=tuple(float(t) for t in selection["temperatures"]),
                scores=np.array(selection["scores"], dtype=np.float64),
                n_splits=int(selection["n_splits"]),
            )
        # files written before the evidence step existed have none
        evidence = meta.get("evidence")
        if evidence is not None:
            evidence = EvidencePrior(
                sigmas=tuple(float(v) for v in evidence["sigmas"]),
                log_evidence=float(evidence["log_evidence"]),
                curvature=tuple(str(v) for v in evidence["curvature"]),
                map_iterations=int(evidence["map_iterations"]),
            )
        # files written before n_init existed have none
        start_losses = meta.get("start_losses")
        if start_losses is not None:
            start_losses = np.array([float(v) for v in start_losses], dtype=np.float64)
        # files written before the KL weight existed fit the plain ELBO
        kl_weight = float(meta.get("kl_weight", 1.0))
        kl_selection = meta.get("kl_weight_selection")
        if kl_selection is not None and not isinstance(kl_selection, dict):
            raise TypeError("the KL weight's selection is not a JSON object")
        # files written before the choice of method existed made none
        inference_selection = meta.get("inference_selection")
        if inference_selection is not None and not isinstance(inference_selection, dict):
            raise TypeError("the method's selection is not a JSON object")
        # files written before the mixture existed hold one method's draws
        mixture = meta.get("mixture")
        if mixture is not None and not isinstance(mixture, dict):
            raise TypeError("the mixture's record is not a JSON object")
        linear_part = meta.get("linear_part")
        if linear_part is not None and not isinstance(linear_part, dict):
            raise TypeError("the linear part's record is not a JSON object")
        # files written before the mixture of Laplace approximations have none
        ensemble = meta.get("ensemble")
        if ensemble is not None and not isinstance(ensemble, dict):
            raise TypeError("the ensemble's record is not a JSON object")
        # files written before the record of the NUTS run existed have none
        nuts_run = meta.get("nuts_run")
        if nuts_run is not None and not isinstance(nuts_run, dict):
            raise TypeError("the NUTS run's record is not a JSON object")
        # files written before diagnostics existed have none: {} (not computed)
        diagnostics = meta.get("diagnostics") or {}
        if not isinstance(diagnostics, dict):
            raise TypeError("the diagnostics are not a JSON object")
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path} is a damaged pymc_bnn model file: {err}") from None
    _check_finite(path, stored)
    n_groups = 0 if groups is None else groups.shape[0]
    if meta["n_features_in"] != spec.n_features or n_groups != spec.n_groups:
        raise ValueError(f"{path} is a damaged pymc_bnn model file: inconsistent metadata.")
    loss.setflags(write=False)
    est.n_features_in_ = int(meta["n_features_in"])
    if groups is not None:
        est.groups_ = groups
    if meta["feature_names_in"] is not None:
        est.feature_names_in_ = np.array(meta["feature_names_in"], dtype=object)
    est.posterior_ = Posterior(
        method=meta["method"],
        spec=spec,
        seed=meta["seed"],
        idata=idata,
        loss=loss,
        learning_rate=meta["learning_rate"],
        nuts_sampler=meta["nuts_sampler"],
        diagnostics=diagnostics,
    )
    est.approx_ = None
    est.inference_ = meta.get("inference", meta["method"])
    est.mixture_ = mixture
    est.linear_part_ = linear_part
    est.ensemble_ = ensemble
    if is_regressor(est):  # the classifier has no NUTS run record
        est.nuts_run_ = nuts_run
    est.posterior_temperature_ = temperature
    est.temperature_selection_ = selection
    est.kl_weight_ = kl_weight
    est.kl_weight_selection_ = kl_selection
    est.inference_selection_ = inference_selection
    est.prior_sigma_ = spec.prior_sigma  # the scale(s) the network was fit with
    est.evidence_ = evidence
    est.loss_curve_ = loss
    est.diagnostics_ = dict(diagnostics)
    est.start_losses_ = start_losses
    est.idata_ = idata
    est.predictive_ = predictive
    return est


def _checked_spec(spec):
    """``spec`` (a NetworkSpec read from a file) with each field checked as
    :func:`pymc_bnn.build_model` checks it (ValueError naming the field): a hand-edited
    activation failed only at the first prediction (KeyError), a negative size not at
    all. Lists read from JSON become the tuples a built spec holds."""
    from pymc_bnn.network._checks import check_choice, check_positive_int, checked_spec
    from pymc_bnn.network.spec import LIKELIHOODS

    try:
        likelihood = check_choice("likelihood", spec.likelihood, LIKELIHOODS)
        regression = likelihood == "normal"
        n_rows = check_positive_int("n_rows", spec.n_rows)
        batch_size = check_positive_int("batch_size", spec.batch_size, allow_none=True)
        if batch_size is not None and batch_size > n_rows:
            raise ValueError(f"batch_size ({batch_size}) exceeds n_rows ({n_rows}).")
        if not isinstance(spec.heteroscedastic, bool) or (spec.heteroscedastic and not regression):
            raise ValueError(
                f"heteroscedastic must be a boolean, and False for "
                f"classification; got {spec.heteroscedastic!r}."
            )
        # a classifier has at least 2 classes, regression 0
        n_classes = check_positive_int("n_classes", spec.n_classes, minimum=0 if regression else 2)
        if regression and n_classes:
            raise ValueError(f"n_classes must be 0 for regression; got {n_classes}.")
        fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
        return checked_spec(
            **fields
            | {
                "n_features": check_positive_int("n_features", spec.n_features),
                "n_classes": n_classes,
                "n_rows": n_rows,
                "batch_size": batch_size,
                "n_groups": check_positive_int("n_groups", spec.n_groups, minimum=0),
            }
        )
    except ValueError as err:
        raise ValueError(f"architecture (spec): {err}") from None


def _check_finite(path: Path, groups: dict) -> None:
    """ValueError naming the first array of draws in ``groups`` that holds NaN or
    infinity: a network with such a weight predicts NaN probabilities (class 0) and no
    error, where no fit stores one."""
    for group, ds in groups.items():
        for name, var in ds.data_vars.items():
            if var.dtype.kind in "fc" and not np.all(np.isfinite(var.values)):
                raise ValueError(
                    f"{path} is a damaged pymc_bnn model file: the draws of "
                    f"{group.strip('/')}/{name} are not all finite (NaN or infinity)."
                )
