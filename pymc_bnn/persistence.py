"""Save and load fitted estimators in a format whose loading never executes code.

One netCDF-4 file (HDF5, through h5netcdf) holds the posterior draws that the
estimator predicts from, its loss curve, and a JSON document (in the root group's
attributes) with the parameters, the target encoding (classes, or the regressor's
target scaling), the groups, the architecture, the fit's convergence diagnostics and a
format version.
Loading reads arrays and JSON only, unlike pickle/joblib, which can run arbitrary code
from an untrusted file.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import xarray as xr

__all__ = ["FORMAT", "FORMAT_VERSION", "jsonable_labels", "load", "load_any", "read_metadata",
           "restore_labels", "save"]

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
    groups, groups_dtype = (None, None) if groups is None else jsonable_labels(groups, "group labels")
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
        # a regressor's NUTS run: chains, iterations, who chose it (plain data)
        "nuts_run": getattr(estimator, "nuts_run_", None),
        "seed": int(post.seed),
        "learning_rate": post.learning_rate,
        "nuts_sampler": post.nuts_sampler,
        # the stored draws are already tempered; these record how T was chosen
        "posterior_temperature": float(estimator.posterior_temperature_),
        "temperature_selection": (None if estimator.temperature_selection_ is None
                                  else estimator.temperature_selection_.as_dict()),
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
        "evidence": (None if getattr(estimator, "evidence_", None) is None
                     else estimator.evidence_.as_dict()),
    }
    if extra:
        meta["extra"] = extra
    try:
        meta_json = json.dumps(meta)
    except (TypeError, ValueError) as err:
        raise ValueError(f"extra metadata must be JSON-able: {err}") from None
    from pymc_bnn.laplace import LINEARIZATION_GROUP
    from pymc_bnn.linear_part import LINEAR_PART_GROUP

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
    tree.to_netcdf(path, engine="h5netcdf")
    return path


def read_metadata(path) -> dict:
    """The JSON metadata of a model file (format, parameters, architecture, extra, ...).

    Reads every object of the HDF5 file once (so damage is found) but builds nothing.

    Raises
    ------
    FileNotFoundError, ValueError
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No such file: {path}")
    return _read_metadata(path)


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

    Raises
    ------
    ValueError
        If the file is missing, truncated, corrupted, or not a pymc_bnn model file.
    """
    from sklearn.base import is_regressor

    from pymc_bnn.evidence import EvidencePrior
    from pymc_bnn.inference import Posterior
    from pymc_bnn.laplace import LINEARIZATION_GROUP
    from pymc_bnn.linear_part import LINEAR_PART_GROUP, predictive_from_idata
    from pymc_bnn.model import NetworkSpec
    from pymc_bnn.tempering import TemperatureSelection

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No such file: {path}")
    meta = _read_metadata(path)
    try:
        with xr.open_datatree(path, engine="h5netcdf") as opened:
            tree = opened.load()
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
        params["hidden_layer_sizes"] = tuple(params["hidden_layer_sizes"])
        spec_d = dict(meta["spec"])
        spec_d["hidden_layer_sizes"] = tuple(spec_d["hidden_layer_sizes"])
        if isinstance(spec_d["prior_sigma"], list):  # one per layer
            spec_d["prior_sigma"] = tuple(float(v) for v in spec_d["prior_sigma"])
        spec = NetworkSpec(**spec_d)
        est = cls(**params)
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
                n_splits=int(selection["n_splits"]))
        # files written before the evidence step existed have none
        evidence = meta.get("evidence")
        if evidence is not None:
            evidence = EvidencePrior(
                sigmas=tuple(float(v) for v in evidence["sigmas"]),
                log_evidence=float(evidence["log_evidence"]),
                curvature=tuple(str(v) for v in evidence["curvature"]),
                map_iterations=int(evidence["map_iterations"]))
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
        method=meta["method"], spec=spec, seed=meta["seed"], idata=idata, loss=loss,
        learning_rate=meta["learning_rate"], nuts_sampler=meta["nuts_sampler"],
        diagnostics=diagnostics,
    )
    est.approx_ = None
    est.inference_ = meta.get("inference", meta["method"])
    est.mixture_ = mixture
    est.linear_part_ = linear_part
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
