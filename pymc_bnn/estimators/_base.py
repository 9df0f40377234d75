"""The base the scikit-learn estimators share (model -> inference -> predictive).

:class:`BayesianMLPBase` holds parameters, input validation, seeding, the fit
(starts, KL weight, cross-fitted temperature, streamed dask fits), groups, NUTS
continuation, persistence and pickling; how its settings are chosen is in
:mod:`pymc_bnn.policy._settings`. The estimators are :mod:`pymc_bnn.estimators._classifier` and
:mod:`pymc_bnn.estimators._regressor` (both also in :mod:`pymc_bnn.estimators`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from pymc_bnn._runtime.progress import FitProgress
from pymc_bnn.dask import is_dask_collection
from pymc_bnn.estimators import persistence
from pymc_bnn.inference import (
    METHODS,
    NUTS_INITS,
    NUTS_SAMPLERS,
    fit,
    fit_concurrently,
    sample_more,
)
from pymc_bnn.inference.diagnostics import warn_diagnostics as _warn_diagnostics
from pymc_bnn.network._checks import check_group_labels, check_input_scale, check_same_label_kind
from pymc_bnn.network.model import ACTIVATIONS, PRIORS, NetworkSpec, build_model
from pymc_bnn.policy._ensemble import ENSEMBLE_MEMBERS, fit_ensemble, fitted_attributes
from pymc_bnn.policy._settings import LAPLACE_ENSEMBLE, MIXTURE, FitSettingsMixin, spawned_seeds
from pymc_bnn.policy._tempering import TEMPERATURES, choose_temperature, fold_tasks
from pymc_bnn.policy.thresholds import AUTO_BATCH_SIZE
from pymc_bnn.predictive._composed import composed_idata
from pymc_bnn.predictive._linear import predictive_from_idata

__all__ = ["BayesianMLPBase", "MAX_DENSE_CELLS", "AUTO_BATCH_SIZE"]

#: Largest sparse input (in cells) densified; anything larger raises.
MAX_DENSE_CELLS = 50_000_000


def _hidden_layer_sizes_ok(value) -> bool:
    if isinstance(value, Integral) and not isinstance(value, bool):
        return value >= 1
    try:
        sizes = tuple(value)
    except TypeError:
        return False
    return all(isinstance(s, Integral) and not isinstance(s, bool) and s >= 1 for s in sizes)


def _start_seeds(init_seed: int, n_init: int) -> list[int]:
    """Seeds of the starting weights of ``n_init`` starts: ``init_seed`` first, then
    seeds spawned from it (so that start 0 is the fit ``n_init=1`` makes)."""
    return spawned_seeds(init_seed, n_init)


def _final_loss(posterior) -> float:
    """The final loss (negative ELBO) of a VI fit: its diagnostics' trimmed mean of the
    last steps, or the mean of the last tenth of the steps where a run was too short
    for the diagnostics."""
    final = posterior.diagnostics.get("final_loss")
    if final is not None:
        return float(final)
    loss = np.asarray(posterior.loss, dtype=np.float64)
    return float(np.mean(loss[-max(1, loss.size // 10) :]))


class BayesianMLPBase(FitSettingsMixin, BaseEstimator):
    """What the classifier and the regressor share: parameters, input validation,
    seeding, fitting (model -> inference -> predictive draws), groups, NUTS
    continuation, persistence and pickling. Subclasses say how targets are encoded
    (:meth:`_encode_target`) and what they predict.
    """

    _parameter_constraints: dict = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "prior": [StrOptions(set(PRIORS))],
        "prior_sigma": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto", "evidence"}),
        ],
        "precision_shape": [Interval(Real, 0, None, closed="neither")],
        "precision_rate": [Interval(Real, 0, None, closed="neither")],
        "inference": [StrOptions({"auto", *METHODS})],
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "tune": [Interval(Integral, 0, None, closed="left")],
        "chains": [Interval(Integral, 1, None, closed="left")],
        "nuts_sampler": [StrOptions(set(NUTS_SAMPLERS)), None],
        "nuts_init": [StrOptions(set(NUTS_INITS))],
        "posterior_temperature": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "progressbar": ["boolean"],
    }

    def __init__(
        self,
        hidden_layer_sizes=(5, 5),
        activation="tanh",
        *,
        prior="normal",
        prior_sigma="auto",
        precision_shape=1.0,
        precision_rate=1.0,
        inference="auto",
        n_iter=None,
        learning_rate=None,
        batch_size="auto",
        n_draws=500,
        tune=1000,
        chains=2,
        nuts_sampler=None,
        nuts_init="jitter",
        posterior_temperature="auto",
        n_init=1,
        random_state=None,
        progressbar=False,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.prior = prior
        self.prior_sigma = prior_sigma
        self.precision_shape = precision_shape
        self.precision_rate = precision_rate
        self.inference = inference
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_draws = n_draws
        self.tune = tune
        self.chains = chains
        self.nuts_sampler = nuts_sampler
        self.nuts_init = nuts_init
        self.posterior_temperature = posterior_temperature
        self.n_init = n_init
        self.random_state = random_state
        self.progressbar = progressbar

    # ------------------------------------------------------------------ helpers
    def _validate_X(self, X, *, reset: bool, y=None):
        kwargs = dict(
            accept_sparse=["csr", "csc", "coo"],
            dtype=[np.float64, np.float32],
            ensure_all_finite=True,
        )
        if y is None:
            X = validate_data(self, X, reset=reset, **kwargs)
        else:
            X, y = validate_data(self, X, y, reset=reset, y_numeric=self._y_numeric, **kwargs)
        if sp.issparse(X):
            if X.shape[0] * X.shape[1] > MAX_DENSE_CELLS:
                raise ValueError(
                    f"Sparse X of shape {X.shape} is too large to densify "
                    f"(> {MAX_DENSE_CELLS:,} cells); the network needs dense inputs."
                )
            X = X.toarray()
        X = np.asarray(X, dtype=np.float64)
        return X if y is None else (X, y)

    def _seeds(self) -> dict[str, int]:
        """One seed per stage, all from ``random_state`` (DESIGN.md: split per stage)."""
        root = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        children = np.random.SeedSequence(root).spawn(4)
        names = ("init", "fit", "predict", "temperature")
        return {n: int(c.generate_state(1)[0] >> 1) for n, c in zip(names, children)}

    # ---------------------------------------------------------------------- fit
    def fit(self, X, y, groups=None):
        """Fit the posterior over the network weights.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Classifier: class labels of any type (strings, ints, bools).
            Regressor: real-valued targets.
        groups : array-like of shape (n_samples,), optional
            Group (task) label of each row, of any type: fits a hierarchical network
            with per-group weights (see the class docstring).

        Returns
        -------
        self
        """
        try:
            return self._fit(X, y, groups)
        except BaseException:
            # a fit that failed part way (a refit on bad data, say) must not leave the
            # previous fit's network behind half-updated (a NaN target mean, new classes
            # with old weights), silently predicting: the estimator is unfitted again
            for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
                delattr(self, name)
            raise

    def _fit(self, X, y, groups):
        self._validate_params()
        self._check_prior_settings()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None."
            )
        if not _hidden_layer_sizes_ok(self.hidden_layer_sizes):
            raise ValueError(
                "hidden_layer_sizes must be a positive int or a sequence of positive ints; "
                f"got {self.hidden_layer_sizes!r}."
            )
        streamed = is_dask_collection(X) or is_dask_collection(y)
        self.inference_ = self._resolve_inference(grouped=groups is not None and not streamed)
        self._check_temperature_for_inference()
        self._check_n_init_for_inference()
        if not streamed:  # a streamed fit refuses NUTS itself (data not in memory)
            self._check_vi_settings_for_nuts()
        if self.inference_ in ("laplace", MIXTURE, LAPLACE_ENSEMBLE):
            self._check_laplace(streamed=streamed, grouped=groups is not None)
        if self.inference_ == LAPLACE_ENSEMBLE:
            self._check_ensemble_settings()
        use_evidence = self._check_evidence_prior(streamed=streamed, grouped=groups is not None)
        if streamed:
            return self._fit_streamed(X, y, groups, use_evidence)
        X, y = self._validate_X(X, reset=True, y=y)
        check_input_scale(
            X, estimator=type(self).__name__, feature_names=getattr(self, "feature_names_in_", None)
        )
        y_model, target_kwargs = self._encode_target(y)
        self.inference_ = self._inference_for_data(
            X.shape, target_kwargs, grouped=groups is not None
        )
        group_codes = None
        if groups is not None:
            self.groups_, group_codes = np.unique(
                self._check_groups(groups, X.shape[0]), return_inverse=True
            )
        elif hasattr(self, "groups_"):
            del self.groups_
        seeds = self._seeds()
        n_groups = None if group_codes is None else len(self.groups_)
        progress = FitProgress(enabled=bool(self.progressbar))
        if self.inference_ == LAPLACE_ENSEMBLE:
            return self._fit_ensemble(X, y_model, target_kwargs, seeds, progress)
        if use_evidence:
            with progress.stage("prior scales from the evidence (a MAP fit and its curvature)"):
                self._choose_prior_scales(use_evidence, X, y_model, target_kwargs, seeds["init"])
        else:
            self._choose_prior_scales(use_evidence, X, y_model, target_kwargs, seeds["init"])

        kept = {}
        # decided on all the rows: the temperature's fold fits train as the kept fit does
        batch = self._batch_rows(X.shape[0])

        def fit_rows(rows, fit_seed, kl_weight=None, method=None, init_seed=None):
            """Build and fit the network on ``X[rows]`` (all rows: ``rows=None``), its
            ELBO's KL term weighted ``kl_weight`` (default: the estimator's own), by
            ``method`` (default: ``inference_``), from
            ``init_seed``'s starting weights (default: the estimator's)."""
            sub = slice(None) if rows is None else rows
            n_rows = X.shape[0] if rows is None else len(rows)
            if kl_weight is None:
                kl_weight = self._kl_weight_candidates()[0]
            posterior, start_losses = self._fit_from_starts(
                X[sub],
                y_model[sub],
                target_kwargs,
                fit_seed,
                seeds["init"] if init_seed is None else init_seed,
                method=method,
                groups=None if group_codes is None else group_codes[sub],
                n_groups=n_groups,
                batch_size=None if batch is None else min(batch, n_rows),
                total_size=None if kl_weight == 1.0 else int(round(n_rows / kl_weight)),
                # only the kept fit warns: a fold fit that has not quite levelled off
                # moves the temperature score a little, and the user cannot act on it
                warn=rows is None,
            )
            if rows is None:
                kept[method or self._fit_method] = start_losses
            return posterior

        weights = self._kl_weight_candidates()
        candidates = self._fit_candidates(X.shape, grouped=group_codes is not None)
        self.inference_selection_ = None
        if len(candidates) > 1:
            folds = self._temperature_folds(y_model, seeds["temperature"])
            if folds is not None:
                return self._fit_choosing(
                    fit_rows, candidates, folds, X, y_model, group_codes, seeds, kept, progress
                )
            weights = (1.0,)  # too few rows to hold any out: the plain ELBO
        self.kl_weight_, self.kl_weight_selection_ = weights[0], None
        # the kept fit and the cross-fitting fits of the temperature (each scored on
        # its held-out rows right after it) are independent: they run at the same
        # time (threads; the results do not depend on it)
        folds = self._cross_fitting_folds(y_model, seeds["temperature"])
        # a mixture: the Laplace half's fits too, at the same time
        methods = ("advi", "laplace") if self.inference_ == MIXTURE else (self._fit_method,)
        tasks = []
        for method in methods:
            rows_fit = functools.partial(fit_rows, method=method)
            tasks += [functools.partial(rows_fit, None, seeds["fit"])]
            tasks += fold_tasks(
                rows_fit,
                X,
                y_model,
                folds=folds or [],
                groups=group_codes,
                seed=seeds["temperature"],
                per_row=len(methods) > 1,
            )
        # NUTS in threads, without numpyro's bar (the regressor's short run): its chains
        # are counted as they end, so that a minute of sampling is not one silent step
        run = self._run_settings(True) if self._fit_method == "nuts" else None
        by_chain = run is not None and not run["progressbar"] and len(tasks) == 1
        with progress.stage(
            self._fits_stage_name(len(tasks), folds),
            fits=run["chains"] if by_chain else len(tasks),
            unit="chains" if by_chain else "fits",
        ):
            results = iter(
                fit_concurrently([t if by_chain else progress.counted(t) for t in tasks])
            )
        # each method's kept fit, then its fits on the folds (each from a start of its
        # own: a fold fit that started from the kept fit, which saw the held-out rows,
        # scored them too well; research/notes/calibration-log.md)
        fits = {method: (next(results), [next(results) for _ in folds or []]) for method in methods}
        posterior, fold_scores = fits[methods[0]]
        self.start_losses_ = kept[methods[0]]
        self._choose_temperature(fold_scores, folds, X.shape[0])
        laplace = None
        if self.inference_ == MIXTURE:
            laplace = self._mixture_component(
                *fits["laplace"], folds, X.shape[0], advi_fold_scores=fold_scores
            )
            if laplace is not None:
                # at a fixed temperature the mixture is equal: its share is a half
                laplace["starts"] = self._laplace_modes(
                    fit_rows,
                    seeds,
                    laplace.get("weight", 0.5),
                    progress,
                    first=laplace["posterior"],
                )
        with progress.stage("posterior predictive draws"):
            self._set_posterior(posterior, seeds["predict"], laplace=laplace)
        return self

    def _fit_choosing(
        self, fit_rows, candidates, folds, X, y_model, group_codes, seeds, kept, progress
    ):
        """Several candidate fits, ``(method, kl_weight)`` pairs of one method
        (``kl_weight="auto"``): the folds' fits of every candidate (at once), each scored
        at every temperature (or at the fixed one); the candidate and temperature with
        the best summed held-out density win, then the kept fit."""
        fixed = self.posterior_temperature != "auto"
        # a fit at KL weight w is about as spread as the posterior at temperature w:
        # its temperatures are the grid's divided by w (1 / w restores the spread)
        grids = [
            (float(self.posterior_temperature),) if fixed else tuple(t / w for t in TEMPERATURES)
            for _, w in candidates
        ]
        tasks = []
        for (method, w), grid in zip(candidates, grids):
            tasks += fold_tasks(
                functools.partial(fit_rows, kl_weight=w, method=method),
                X,
                y_model,
                folds=folds,
                seed=seeds["temperature"],
                groups=group_codes,
                temperatures=grid,
            )
        with progress.stage(
            f"{len(tasks)} fits on held-out folds to choose the KL weight and the temperature",
            fits=len(tasks),
        ):
            scores = fit_concurrently([progress.counted(t) for t in tasks])
        scores = [scores[i * len(folds) : (i + 1) * len(folds)] for i in range(len(candidates))]
        selections = [choose_temperature(s, X.shape[0], grid) for s, grid in zip(scores, grids)]
        best = int(np.argmin([sel.scores.min() for sel in selections]))
        self.inference_, self.kl_weight_ = candidates[best]
        self.kl_weight_selection_ = {
            "kl_weights": [w for _, w in candidates],
            "scores": [float(sel.scores.min()) for sel in selections],
            "temperatures": [sel.temperature for sel in selections],
        }
        if fixed:
            self.temperature_selection_ = None
            self.posterior_temperature_ = grids[0][0]
        else:
            self.temperature_selection_ = selections[best]
            self.posterior_temperature_ = selections[best].temperature
        with progress.stage(self._fits_stage_name(1, None), fits=1):
            posterior = progress.counted(fit_rows)(
                None, seeds["fit"], kl_weight=self.kl_weight_, method=self.inference_
            )
        self.start_losses_ = kept[self.inference_]
        with progress.stage("posterior predictive draws"):
            self._set_posterior(posterior, seeds["predict"])
        return self

    def _fit_from_starts(
        self, X, y_model, target_kwargs, fit_seed, init_seed, *, warn=True, method=None, **kwargs
    ):
        """:meth:`_fit_network` from ``n_init`` starting weights; the fit with the lowest
        final loss (the highest ELBO) is kept, as in scikit-learn's ``GaussianMixture``.

        Start 0 is ``init_seed`` itself (``n_init=1`` is the plain fit), the others are
        seeded from it (:func:`_start_seeds`). Every start uses the same ``fit_seed``
        (ADVI noise, minibatch rows): their ELBOs differ by where they started. Only the
        best fit so far is held. Returns ``(posterior, final losses of the starts)``;
        the losses are None for NUTS, whose chains have starts of their own.
        """
        if self.inference_ == "nuts":
            return self._fit_network(
                X, y_model, target_kwargs, fit_seed, init_seed, warn=warn, **kwargs
            ), None
        best, losses = None, []
        for seed in _start_seeds(init_seed, self.n_init):
            # of several starts only the kept one's diagnostics matter (warned below)
            posterior = self._fit_network(
                X,
                y_model,
                target_kwargs,
                fit_seed,
                seed,
                warn=warn and self.n_init == 1,
                method=method,
                **kwargs,
            )
            losses.append(_final_loss(posterior))
            if best is None or losses[-1] < min(losses[:-1]):
                best = posterior
        if warn and self.n_init > 1:
            _warn_diagnostics(best.diagnostics, stacklevel=3)
        return best, np.array(losses)

    def _fit_ensemble(self, X, y_model, target_kwargs, seeds, progress):
        """The mixture of Laplace approximations (:func:`pymc_bnn.policy._ensemble.
        fit_ensemble`), its result stored as the fitted attributes."""
        sigma = 1.0 if self.prior_sigma in ("auto", "evidence") else self.prior_sigma
        with progress.stage(f"{ENSEMBLE_MEMBERS} MAP fits and their Laplace approximations"):
            result = fit_ensemble(
                X,
                y_model,
                hidden_layer_sizes=self._hidden_tuple(),
                n_classes=int(target_kwargs.get("n_classes", 0)),
                activation=self.activation,
                prior_sigma=sigma,
                temperature=self.posterior_temperature,
                n_draws=self.n_draws,
                init_seed=seeds["init"],
                predict_seed=seeds["predict"],
                noise_scale=target_kwargs.get("noise_scale"),
            )
        for name, value in fitted_attributes(result).items():
            setattr(self, name, value)
        self.__dict__.pop("_draw_parts", None)  # the stored draws serve sample_proba
        if not result.posterior.diagnostics["converged"]:
            _warn_diagnostics(result.posterior.diagnostics, stacklevel=3)
        return self

    def _hidden_tuple(self) -> tuple[int, ...]:
        hidden = self.hidden_layer_sizes
        return (int(hidden),) if isinstance(hidden, Integral) else tuple(int(h) for h in hidden)

    def _laplace_spec(self, X, target_kwargs):
        """The network :meth:`_fit_laplace` fits (a classifier's: one logit per class,
        one for two)."""
        return NetworkSpec(
            n_features=X.shape[1],
            hidden_layer_sizes=self._hidden_tuple(),
            n_classes=int(target_kwargs["n_classes"]),
            activation=self.activation,
            prior_sigma=1.0,
            n_rows=X.shape[0],
            batch_size=None,
        )

    def _fit_laplace(self, X, y_model, target_kwargs, init_seed, *, warn=True):
        """The evidence-tuned linearised Laplace fit (:mod:`pymc_bnn.inference.laplace`)."""
        from pymc_bnn.inference import Posterior
        from pymc_bnn.inference.laplace import fit_laplace

        spec = self._laplace_spec(X, target_kwargs)
        hidden = self._laplace_hidden_sigmas(X.shape, target_kwargs)
        gaussian, info = fit_laplace(
            X,
            y_model,
            layer_shapes=spec.layer_shapes,
            activation=self.activation,
            random_state=init_seed,
            likelihood=spec.likelihood,
            hidden_prior_sigmas=hidden,
        )
        diagnostics = {
            "method": "laplace",
            "final_loss": -gaussian.log_evidence,
            "log_evidence": gaussian.log_evidence,
            "effective_parameters": float(np.nansum(gaussian.effective_parameters)),
            "structure": "last_layer" if gaussian.last_layer else "full",
            "gradient_norm": info["gradient_norm"],
            "rounds": info["rounds"],
            "map_iterations": info["map_iterations"],
            "polish_steps": info["polish_steps"],
        }
        if gaussian.noise_sd is not None:
            diagnostics["noise_sd"] = gaussian.noise_sd
        # the spec records the prior the posterior was fit under: the evidence's scales
        spec = dataclasses.replace(spec, prior_sigma=gaussian.prior_sigmas)
        return Posterior(
            method="laplace",
            spec=spec,
            seed=int(init_seed),
            loss=info["loss"],
            laplace=gaussian,
            diagnostics=diagnostics,
        )

    def _fit_network(
        self,
        X,
        y_model,
        target_kwargs,
        fit_seed,
        init_seed,
        *,
        groups=None,
        n_groups=None,
        batch_size=None,
        warn=True,
        total_size=None,
        minibatch_source=None,
        method=None,
    ):
        """``build_model`` + ``fit`` with this estimator's settings (by ``method``,
        default ``inference_``): a Posterior."""
        if (method or self._fit_method) == "laplace":
            return self._fit_laplace(X, y_model, target_kwargs, init_seed, warn=warn)
        model = build_model(
            X,
            y_model,
            hidden_layer_sizes=self.hidden_layer_sizes,
            activation=self.activation,
            prior=self.prior,
            prior_sigma=self.prior_sigma_,
            precision_shape=self.precision_shape,
            precision_rate=self.precision_rate,
            groups=groups,
            n_groups=n_groups,
            batch_size=None if self.inference_ == "nuts" else batch_size,
            total_size=total_size,
            random_state=init_seed,
            **target_kwargs,
        )
        return fit(
            model,
            method=method or self._fit_method,
            n_iter=self.n_iter,
            learning_rate=self.learning_rate,
            **self._run_settings(warn),
            nuts_sampler=self.nuts_sampler,
            nuts_init=self.nuts_init,
            random_seed=fit_seed,
            minibatch_source=minibatch_source,
        )

    def _fit_streamed(self, X, y, groups, use_evidence):
        """Minibatch ADVI on dask collections, streamed by blocks (pymc_bnn.dask)."""
        from pymc_bnn.dask import BlockSampler, streamed_inputs

        if groups is not None:
            raise ValueError(
                "groups are not supported with dask input yet; compute the "
                "data into NumPy arrays for a hierarchical fit."
            )
        if hasattr(self, "groups_"):
            del self.groups_
        seeds = self._seeds()
        stream = streamed_inputs(self, X, y)
        check_input_scale(
            stream["X0"],
            estimator=type(self).__name__,
            feature_names=getattr(self, "feature_names_in_", None),
            sample_note=f" (in the first {len(stream['X0'])} rows)",
            stacklevel=4,
        )
        progress = FitProgress(enabled=bool(self.progressbar))
        # the evidence keeps only its rows (all up to 20,000, else a random 20,000), and
        # is done before the sampler's blocks come into memory
        with (
            progress.stage("prior scales from the evidence (a MAP fit and its curvature)")
            if use_evidence
            else contextlib.nullcontext()
        ):
            self._choose_prior_scales(
                use_evidence, stream["X"], stream["codes"], stream["target_kwargs"], seeds["init"]
            )
        sampler = BlockSampler([stream["X"], stream["codes"]], pool_blocks=4, seed=seeds["init"])
        # the cross-fitted KL weight needs folds held in memory too: "auto" is 1 here
        self.kl_weight_, self.kl_weight_selection_ = self._kl_weight_candidates()[0], None
        self.inference_selection_ = None
        try:
            with progress.stage(f"streamed minibatch {self._fits_stage_name(1, None)}"):
                posterior, self.start_losses_ = self._fit_from_starts(
                    stream["X0"],
                    stream["y0"],
                    stream["target_kwargs"],
                    seeds["fit"],
                    seeds["init"],
                    batch_size=len(stream["X0"]),
                    total_size=int(round(stream["n_rows"] / self.kl_weight_)),
                    minibatch_source=sampler,
                )
        finally:
            sampler.close()
        # the cross-fitted temperature needs folds held in memory: "auto" is 1 here
        self.temperature_selection_ = None
        self.posterior_temperature_ = (
            1.0 if self.posterior_temperature == "auto" else float(self.posterior_temperature)
        )
        self._set_posterior(posterior, seeds["predict"])
        return self

    def _batch_rows(self, n_rows: int) -> int | None:
        """Rows per ADVI step on ``n_rows`` rows (None: full batches); see
        :data:`AUTO_BATCH_SIZE` for ``batch_size="auto"``."""
        if self.batch_size is None:
            return None
        if self.batch_size == "auto":
            return None if n_rows <= AUTO_BATCH_SIZE else AUTO_BATCH_SIZE
        return min(int(self.batch_size), n_rows)

    def _set_posterior(self, posterior, predict_seed, *, laplace=None):
        """Set the fitted posterior and its predictive draws; ``laplace`` (a mixture's
        Laplace half, :meth:`_mixture_component`): half the network's draws are its
        linearised ones (``mixture_`` records it)."""
        self.posterior_ = posterior
        self.approx_ = posterior.approx
        self.loss_curve_ = posterior.loss
        self.diagnostics_ = dict(posterior.diagnostics)
        if posterior.laplace is not None:  # its own evidence chose the scales
            self.prior_sigma_ = posterior.spec.prior_sigma
        temperature = getattr(self, "posterior_temperature_", 1.0)
        # the parts, kept for fresh draws of another number (sample_proba(n_draws=k))
        self._draw_parts = {
            "posterior": posterior,
            "temperature": temperature,
            "laplace": laplace,
            "linear": None,
        }
        self.idata_, counts = composed_idata(
            posterior,
            self.n_draws,
            random_seed=predict_seed,
            temperature=temperature,
            laplace=laplace,
            linear=None,
        )
        self.mixture_ = self.linear_part_ = self.ensemble_ = None
        if laplace is not None:
            selection = laplace["selection"]
            fits = laplace.get("starts") or [laplace["posterior"]]  # its Laplace fits
            self.mixture_ = {
                "methods": [posterior.method, "laplace"],
                "n_draws": [counts["network"], counts["laplace"]],
                "laplace_temperature": float(laplace["temperature"]),
                "laplace_weight": float(laplace.get("weight", 0.5)),
                "laplace_temperature_selection": (
                    None if selection is None else selection.as_dict()
                ),
                "laplace_prior_sigma": [float(v) for v in laplace["posterior"].spec.prior_sigma],
                "laplace_diagnostics": dict(laplace["posterior"].diagnostics),
                "laplace_starts": len(fits),
                "laplace_log_evidence": [
                    float(fit.laplace.log_evidence) for fit in fits if fit.laplace is not None
                ],
            }
        self.predictive_ = predictive_from_idata(posterior.spec, self.idata_)

    def sample_more(self, n_draws, *, tune=0):
        """Continue the NUTS chains and append ``n_draws`` draws per chain.

        The chains restart from their last draws with the adapted step sizes, without
        re-tuning unless ``tune > 0`` (see :func:`pymc_bnn.inference.sample_more`);
        ``idata_`` and the predictions then use all draws, and ``diagnostics_`` is
        recomputed over all of them (with a
        :class:`~pymc_bnn.exceptions.SamplingWarning` if it still fails). Seeded from
        ``random_state`` and the number of draws so far.

        Returns
        -------
        self
        """
        check_is_fitted(self)
        seed = self._seeds()["fit"] + int(self.idata_.posterior.sizes["draw"])
        more = sample_more(
            self.posterior_, n_draws, tune=tune, random_seed=seed, progressbar=self.progressbar
        )
        self._set_posterior(more, None)  # MCMC: predictions use all stored draws
        return self

    @staticmethod
    def _check_groups(groups, n_rows: int) -> np.ndarray:
        return check_group_labels(groups, n_rows)

    def _check_X(self, X, groups=None):
        """Validated X, and group codes for the predictive (-1: unseen group)."""
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        if groups is None:
            return X, None
        if not hasattr(self, "groups_"):
            raise ValueError(
                "groups were passed, but this estimator was fit without groups; fit "
                "with fit(X, y, groups=...) for a hierarchical model."
            )
        groups = self._check_groups(groups, X.shape[0])
        check_same_label_kind(groups, self.groups_)
        try:
            codes = np.searchsorted(self.groups_, groups)
        except TypeError:
            raise ValueError(
                f"group labels of type {groups.dtype} cannot be compared with the fitted "
                f"groups_ of type {self.groups_.dtype}."
            ) from None
        codes = np.minimum(codes, len(self.groups_) - 1)
        seen = self.groups_[codes] == groups
        return X, np.where(seen, codes, -1)

    def _lazy(self, method: str, X, groups, **kwargs):
        """``method``'s lazy dask result for a dask collection ``X`` (pymc_bnn.dask)."""
        check_is_fitted(self)
        from pymc_bnn.dask import predict_blocks

        return predict_blocks(self, X, method, groups=groups, **kwargs)

    def log_predictive_density(self, X, y, groups=None) -> np.ndarray:
        """Log posterior predictive density of each observed target.

        ``log p(y_i | x_i, data) = log mean_s p(y_i | x_i, theta_s)``, the log of the
        mean over the posterior draws held of each draw's likelihood of ``y_i`` (the
        mixture, not a Gaussian fitted to it). For a regressor it is a density in the
        units of ``y`` (nats); for a classifier the log of the predicted probability
        of the observed class, ``log predict_proba(X)[i, y_i]``. Its mean over
        held-out rows is the test log-likelihood of the Bayesian regression
        literature, and its sum a model-comparison score (higher is better), as
        scikit-learn's ``score_samples`` is for density models.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Observed targets: numbers (regressor) or labels from ``classes_``
            (classifier).
        groups : array-like of shape (n_samples,), optional
            Group labels (models fit with groups).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        if is_dask_collection(X) or is_dask_collection(y):
            raise TypeError(
                "log_predictive_density needs X and y in memory; compute them first "
                "(e.g. X.compute()), or evaluate it block by block."
            )
        X, codes = self._check_X(X, groups)
        y = column_or_1d(y, warn=True)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}; they must match.")
        y_model, log_jacobian = self._model_target(y)
        return self.predictive_.log_density(X, y_model, codes) - log_jacobian

    # -------------------------------------------------------------- persistence
    def save(self, path):
        """Save the fitted estimator to a netCDF-4 file (loading it runs no code).

        The file holds the posterior draws the estimator predicts from, the loss
        curve, and JSON metadata (parameters, classes or target scaling, groups,
        architecture, format version). After :meth:`load`, predictions are
        bit-for-bit identical. The variational
        approximation itself is not stored: a loaded VI estimator predicts from its
        ``n_draws`` stored draws (``approx_`` is None).

        Returns
        -------
        pathlib.Path
        """
        return persistence.save(self, path)

    @classmethod
    def load(cls, path):
        """Load an estimator written by :meth:`save`.

        Raises
        ------
        ValueError
            If the file is truncated, corrupted, or not a pymc_bnn model file.
        FileNotFoundError, IsADirectoryError
            If there is no file at ``path``, or it is a folder.
        """
        return persistence.load(cls, path)

    def __getstate__(self):
        """Pickle support (scikit-learn convention; never unpickle untrusted files).

        The PyMC approximation (compiled PyTensor functions) is not picklable; like
        :meth:`save`, a pickled VI estimator keeps its stored posterior draws and
        predicts identically, with ``approx_`` set to None.
        """
        state = self.__dict__.copy()
        state.pop("_draw_parts", None)  # the fitted parts: the stored draws stand for them
        if state.get("approx_") is not None:
            state["approx_"] = None
            state["posterior_"] = dataclasses.replace(
                state["posterior_"], approx=None, idata=state["idata_"]
            )
        elif state.get("posterior_") is not None and state["posterior_"].model is not None:
            state["posterior_"] = dataclasses.replace(state["posterior_"], model=None)
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None
        return tags

    # ------------------------------------------------------------ subclass hooks
    #: validate_data's ``y_numeric`` (regression targets must be numbers)
    _y_numeric = False

    def _encode_target(self, y) -> tuple[np.ndarray, dict]:
        """Set the target's fitted attributes; return (model targets, build_model kwargs)."""
        raise NotImplementedError

    def _model_target(self, y) -> tuple[np.ndarray, float]:
        """Observed targets in the network's units, and the log of the Jacobian of
        that map (subtracted from the network's log densities)."""
        raise NotImplementedError

    def _target_metadata(self) -> dict:
        """JSON-able description of the fitted target encoding (for :meth:`save`)."""
        raise NotImplementedError

    def _restore_target(self, meta: dict, spec) -> None:
        """Inverse of :meth:`_target_metadata` (for :meth:`load`); raises ValueError
        when ``meta`` does not fit ``spec``."""
        raise NotImplementedError
