"""scikit-learn estimator on top of the functional layer (model -> inference -> predictive)."""

from __future__ import annotations

import dataclasses
import functools
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from pymc_bnn import persistence
from pymc_bnn._validation import check_input_scale
from pymc_bnn.exceptions import InputScaleWarning  # re-exported
from pymc_bnn.dask import is_dask_collection
from pymc_bnn.inference import (METHODS, NUTS_INITS, NUTS_SAMPLERS, _warn_diagnostics, fit,
                                fit_concurrently, sample_more)
from pymc_bnn.model import ACTIVATIONS, PRIORS, build_model
from pymc_bnn.predictive import from_idata, posterior_draws, posterior_predictive
from pymc_bnn.tempering import TEMPERATURES, choose_temperature, fold_tasks

__all__ = ["BayesianMLPClassifier", "BayesianMLPRegressor", "InputScaleWarning"]

#: Largest sparse input (in cells) densified; anything larger raises.
MAX_DENSE_CELLS = 50_000_000
#: ``batch_size="auto"``: rows per ADVI step. A fit on at most this many rows takes
#: full batches; a larger one, minibatches of this many rows (``pm.Minibatch`` with
#: ``total_size``), so that a step's cost stops growing with the data. Why this size:
#: a step's cost is flat up to a few hundred rows and linear beyond; minibatches of
#: this size (with the minibatch step-size schedule of :mod:`pymc_bnn.inference`) were
#: 3-5x faster than full batches on 5,000-10,000-row tables, their held-out NLL within
#: 2 % on clean, noisy-label and moons tables, 8-23 % above on imbalanced ones and on
#: one of two 100-feature splits, and at or below MLPClassifier's on 11 of 12
#: (``benchmarks/results/fit_scaling.md``).
AUTO_BATCH_SIZE = 1024
#: ``kl_weight="auto"`` (regressor): the candidate weights of the ELBO's KL term, chosen
#: with the temperature by the cross-fitted held-out predictive density. Mean-field
#: ADVI of a network with many more weights than rows prunes units to the prior and
#: explains the misfit as noise; a smaller KL weight (a tempered, "cold" ELBO) lets
#: the data shape the function where they can, and the held-out density says where
#: that is (``docs/experiments/uci_regression.md``).
KL_WEIGHTS = (1.0, 0.25, 0.0625)


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
    return [init_seed] + [int(np.random.SeedSequence([init_seed, k]).generate_state(1)[0] >> 1)
                          for k in range(1, n_init)]


def _final_loss(posterior) -> float:
    """The final loss (negative ELBO) of a VI fit: its diagnostics' trimmed mean of the
    last steps, or the mean of the last tenth of the steps where a run was too short
    for the diagnostics."""
    final = posterior.diagnostics.get("final_loss")
    if final is not None:
        return float(final)
    loss = np.asarray(posterior.loss, dtype=np.float64)
    return float(np.mean(loss[-max(1, loss.size // 10):]))


class _BayesianMLP(BaseEstimator):
    """What the classifier and the regressor share: parameters, input validation,
    seeding, fitting (model -> inference -> predictive draws), groups, NUTS
    continuation, persistence and pickling. Subclasses say how targets are encoded
    (:meth:`_encode_target`) and what they predict.
    """

    _parameter_constraints: dict = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "prior": [StrOptions(set(PRIORS))],
        "prior_sigma": [Interval(Real, 0, None, closed="neither"),
                        StrOptions({"auto", "evidence"})],
        "precision_shape": [Interval(Real, 0, None, closed="neither")],
        "precision_rate": [Interval(Real, 0, None, closed="neither")],
        "inference": [StrOptions({"auto", *METHODS})],
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}),
                       None],
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
        self._validate_params()
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
        use_evidence = self._check_evidence_prior(streamed=streamed, grouped=groups is not None)
        if streamed:
            return self._fit_streamed(X, y, groups, use_evidence)
        X, y = self._validate_X(X, reset=True, y=y)
        check_input_scale(X, estimator=type(self).__name__,
                          feature_names=getattr(self, "feature_names_in_", None))
        y_model, target_kwargs = self._encode_target(y)
        group_codes = None
        if groups is not None:
            self.groups_, group_codes = np.unique(self._check_groups(groups, X.shape[0]),
                                                  return_inverse=True)
        elif hasattr(self, "groups_"):
            del self.groups_
        seeds = self._seeds()
        n_groups = None if group_codes is None else len(self.groups_)
        self._choose_prior_scales(use_evidence, X, y_model, target_kwargs, seeds["init"])

        kept = {}
        # decided on all the rows: the temperature's fold fits train as the kept fit does
        batch = self._batch_rows(X.shape[0])

        def fit_rows(rows, fit_seed, kl_weight=None):
            """Build and fit the network on ``X[rows]`` (all rows: ``rows=None``), its
            ELBO's KL term weighted ``kl_weight`` (default: the estimator's own)."""
            sub = slice(None) if rows is None else rows
            n_rows = X.shape[0] if rows is None else len(rows)
            if kl_weight is None:
                kl_weight = self._kl_weight_candidates()[0]
            posterior, start_losses = self._fit_from_starts(
                X[sub], y_model[sub], target_kwargs, fit_seed, seeds["init"],
                groups=None if group_codes is None else group_codes[sub], n_groups=n_groups,
                batch_size=None if batch is None else min(batch, n_rows),
                total_size=None if kl_weight == 1.0 else int(round(n_rows / kl_weight)),
                # only the kept fit warns: a fold fit that has not quite levelled off
                # moves the temperature score a little, and the user cannot act on it
                warn=rows is None)
            if rows is None:
                kept["start_losses"] = start_losses
            return posterior

        weights = self._kl_weight_candidates()
        if len(weights) > 1:
            folds = self._temperature_folds(y_model, seeds["temperature"])
            if folds is not None:
                return self._fit_choosing_kl_weight(fit_rows, weights, folds, X, y_model,
                                                    group_codes, seeds, kept)
            weights = (1.0,)  # too few rows to hold any out: the plain ELBO
        self.kl_weight_, self.kl_weight_selection_ = weights[0], None
        # the kept fit and the cross-fitting fits of the temperature (each scored on
        # its held-out rows right after it) are independent: they run at the same
        # time (threads; the results do not depend on it)
        folds = self._cross_fitting_folds(y_model, seeds["temperature"])
        tasks = [functools.partial(fit_rows, None, seeds["fit"])]
        tasks += fold_tasks(fit_rows, X, y_model, folds=folds or [],
                            seed=seeds["temperature"], groups=group_codes)
        posterior, *fold_scores = fit_concurrently(tasks)
        self.start_losses_ = kept["start_losses"]
        self._choose_temperature(fold_scores, folds, X.shape[0])
        self._set_posterior(posterior, seeds["predict"])
        return self

    def _kl_weight_candidates(self) -> tuple[float, ...]:
        """The KL weights to fit: ``(kl_weight,)``, or :data:`KL_WEIGHTS` for "auto"
        (variational inference only; NUTS samples the posterior itself)."""
        value = getattr(self, "kl_weight", 1.0)
        if value != "auto":
            return (float(value),)
        return (1.0,) if self.inference_ == "nuts" else KL_WEIGHTS

    def _fit_choosing_kl_weight(self, fit_rows, weights, folds, X, y_model, group_codes,
                                seeds, kept):
        """``kl_weight="auto"``: the folds' fits at every candidate weight (at once),
        each scored at every temperature (or at the fixed one); the weight and
        temperature with the best summed held-out density win, then the kept fit."""
        fixed = self.posterior_temperature != "auto"
        # a fit at KL weight w is about as spread as the posterior at temperature w:
        # its temperatures are the grid's divided by w (1 / w restores the spread)
        grids = [(float(self.posterior_temperature),) if fixed
                 else tuple(t / w for t in TEMPERATURES) for w in weights]
        tasks = []
        for w, grid in zip(weights, grids):
            tasks += fold_tasks(functools.partial(fit_rows, kl_weight=w), X, y_model,
                                folds=folds, seed=seeds["temperature"], groups=group_codes,
                                temperatures=grid)
        scores = np.reshape(fit_concurrently(tasks), (len(weights), len(folds), -1))
        selections = [choose_temperature(s, X.shape[0], grid)
                      for s, grid in zip(scores, grids)]
        best = int(np.argmin([sel.scores.min() for sel in selections]))
        self.kl_weight_ = weights[best]
        self.kl_weight_selection_ = {
            "kl_weights": list(weights),
            "scores": [float(sel.scores.min()) for sel in selections],
            "temperatures": [sel.temperature for sel in selections]}
        if fixed:
            self.temperature_selection_ = None
            self.posterior_temperature_ = grids[0][0]
        else:
            self.temperature_selection_ = selections[best]
            self.posterior_temperature_ = selections[best].temperature
        posterior = fit_rows(None, seeds["fit"], kl_weight=self.kl_weight_)
        self.start_losses_ = kept["start_losses"]
        self._set_posterior(posterior, seeds["predict"])
        return self

    def _fit_from_starts(self, X, y_model, target_kwargs, fit_seed, init_seed, *, warn=True,
                         **kwargs):
        """:meth:`_fit_network` from ``n_init`` starting weights; the fit with the lowest
        final loss (the highest ELBO) is kept, as in scikit-learn's ``GaussianMixture``.

        Start 0 is ``init_seed`` itself (``n_init=1`` is the plain fit), the others are
        seeded from it (:func:`_start_seeds`). Every start uses the same ``fit_seed``
        (ADVI noise, minibatch rows): their ELBOs differ by where they started. Only the
        best fit so far is held. Returns ``(posterior, final losses of the starts)``;
        the losses are None for NUTS, whose chains have starts of their own.
        """
        if self.inference_ == "nuts":
            return self._fit_network(X, y_model, target_kwargs, fit_seed, init_seed,
                                     warn=warn, **kwargs), None
        best, losses = None, []
        for seed in _start_seeds(init_seed, self.n_init):
            # of several starts only the kept one's diagnostics matter (warned below)
            posterior = self._fit_network(X, y_model, target_kwargs, fit_seed, seed,
                                          warn=warn and self.n_init == 1, **kwargs)
            losses.append(_final_loss(posterior))
            if best is None or losses[-1] < min(losses[:-1]):
                best = posterior
        if warn and self.n_init > 1:
            _warn_diagnostics(best.diagnostics, stacklevel=3)
        return best, np.array(losses)

    def _check_n_init_for_inference(self) -> None:
        """Refuse several starts with NUTS before anything is fit."""
        if self.inference_ == "nuts" and self.n_init != 1:
            raise ValueError(
                f"n_init={self.n_init!r} applies to variational inference only; NUTS "
                "runs its chains from starts of their own (see chains). Use n_init=1 with "
                "inference='nuts'."
            )

    def _fit_network(self, X, y_model, target_kwargs, fit_seed, init_seed, *, groups=None,
                     n_groups=None, batch_size=None, warn=True, total_size=None,
                     minibatch_source=None):
        """``build_model`` + ``fit`` with this estimator's settings: a Posterior."""
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
            method=self.inference_,
            n_iter=self.n_iter,
            learning_rate=self.learning_rate,
            draws=self.n_draws,
            tune=self.tune,
            chains=self.chains,
            nuts_sampler=self.nuts_sampler,
            nuts_init=self.nuts_init,
            random_seed=fit_seed,
            progressbar=self.progressbar,
            warn=warn,
            minibatch_source=minibatch_source,
        )

    def _fit_streamed(self, X, y, groups, use_evidence):
        """Minibatch ADVI on dask collections, streamed by blocks (pymc_bnn.dask)."""
        from pymc_bnn.dask import BlockSampler, streamed_inputs

        if groups is not None:
            raise ValueError("groups are not supported with dask input yet; compute the "
                             "data into NumPy arrays for a hierarchical fit.")
        if hasattr(self, "groups_"):
            del self.groups_
        seeds = self._seeds()
        stream = streamed_inputs(self, X, y)
        check_input_scale(stream["X0"], estimator=type(self).__name__,
                          feature_names=getattr(self, "feature_names_in_", None),
                          sample_note=f" (in the first {len(stream['X0'])} rows)",
                          stacklevel=4)
        # the evidence keeps only its rows (all up to 20,000, else a random 20,000), and
        # is done before the sampler's blocks come into memory
        self._choose_prior_scales(use_evidence, stream["X"], stream["codes"],
                                  stream["target_kwargs"], seeds["init"])
        sampler = BlockSampler([stream["X"], stream["codes"]], pool_blocks=4,
                               seed=seeds["init"])
        # the cross-fitted KL weight needs folds held in memory too: "auto" is 1 here
        self.kl_weight_, self.kl_weight_selection_ = self._kl_weight_candidates()[0], None
        try:
            posterior, self.start_losses_ = self._fit_from_starts(
                stream["X0"], stream["y0"], stream["target_kwargs"], seeds["fit"],
                seeds["init"], batch_size=len(stream["X0"]),
                total_size=int(round(stream["n_rows"] / self.kl_weight_)),
                minibatch_source=sampler)
        finally:
            sampler.close()
        # the cross-fitted temperature needs folds held in memory: "auto" is 1 here
        self.temperature_selection_ = None
        self.posterior_temperature_ = (1.0 if self.posterior_temperature == "auto"
                                       else float(self.posterior_temperature))
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

    def _evidence_unavailable(self, *, streamed: bool, grouped: bool) -> str | None:
        """Why the evidence cannot choose the prior scales of this fit (None: it can)."""
        if self._y_numeric:
            return "is available for classifiers only"
        if self.prior != "normal":
            return f"sets the scales of prior='normal', not prior={self.prior!r}"
        if grouped:
            return "is not available for hierarchical networks (groups=) yet"
        return None

    def _check_evidence_prior(self, *, streamed: bool, grouped: bool) -> bool:
        """Whether the evidence chooses the prior scales: ``"evidence"`` (refused with a
        clear error, before any fit, where unavailable) or ``"auto"`` where available."""
        why = self._evidence_unavailable(streamed=streamed, grouped=grouped)
        if self.prior_sigma == "evidence" and why:
            raise ValueError(f"prior_sigma='evidence' {why}; pass a number instead "
                             "(e.g. prior_sigma=1.0).")
        # "auto" and NUTS: 1.0 (under the evidence's larger output scales NUTS diverged
        # on moons, 18 divergent transitions of 1,000; its calibration was not measured)
        return self.prior_sigma == "evidence" or (
            self.prior_sigma == "auto" and why is None and self.inference_ != "nuts")

    def _choose_prior_scales(self, use_evidence, X, y_model, target_kwargs, seed) -> None:
        """Set ``prior_sigma_`` (and ``evidence_``): the evidence's scales, or the number
        given (1.0 for ``"auto"`` where the evidence is unavailable)."""
        self.evidence_ = None
        if not use_evidence:
            self.prior_sigma_ = 1.0 if self.prior_sigma == "auto" else float(self.prior_sigma)
            return
        from pymc_bnn.evidence import evidence_prior_scales

        self.evidence_ = evidence_prior_scales(
            X, y_model, hidden_layer_sizes=self.hidden_layer_sizes, activation=self.activation,
            n_classes=target_kwargs["n_classes"], random_state=seed)
        self.prior_sigma_ = self.evidence_.sigmas

    #: Whether ``inference="auto"`` samples hierarchical networks with NUTS (the
    #: classifier, measured in docs/calibration.md) or fits them by ADVI (the regressor:
    #: not measured; under its default Neal prior NUTS diverged in a small grouped fit).
    _AUTO_NUTS_FOR_GROUPS = True

    def _resolve_inference(self, *, grouped: bool) -> str:
        """The inference method of this fit: ``inference``, or for ``"auto"`` NUTS on a
        hierarchical network (``groups=``, all rows in memory; classifier only) unless a
        setting that only variational inference uses is given (``n_iter``,
        ``learning_rate``, ``batch_size``, a ``posterior_temperature`` other than
        ``"auto"`` / 1, ``n_init`` > 1), and mean-field ADVI otherwise."""
        if self.inference != "auto":
            return self.inference
        vi_settings = (self.n_iter is not None or self.learning_rate is not None
                       or self.batch_size not in (None, "auto")
                       or self.posterior_temperature not in ("auto", 1, 1.0)
                       or self.n_init != 1)
        use_nuts = grouped and self._AUTO_NUTS_FOR_GROUPS and not vi_settings
        return "nuts" if use_nuts else "advi"

    def _check_temperature_for_inference(self) -> None:
        """Refuse a temperature with NUTS before anything is fit."""
        if self.inference_ == "nuts" and self.posterior_temperature not in ("auto", 1, 1.0):
            raise ValueError(
                f"posterior_temperature={self.posterior_temperature!r} applies to "
                "variational inference only; NUTS draws are used as they are. Use "
                "posterior_temperature='auto' (or 1.0) with inference='nuts'."
            )

    #: Folds of the cross-fitted temperature choice (``posterior_temperature="auto"``).
    _TEMPERATURE_FOLDS = 3

    def _cross_fitting_folds(self, y_model, seed):
        """The folds of the cross-fitted temperature (``posterior_temperature="auto"``
        with variational inference), or None: no cross-fitting."""
        if self.inference_ == "nuts" or self.posterior_temperature != "auto":
            return None
        return self._temperature_folds(y_model, seed)

    def _choose_temperature(self, fold_scores, folds, n_rows) -> None:
        """Set ``posterior_temperature_`` and ``temperature_selection_`` from the
        held-out scores of the fits on the folds of :meth:`_cross_fitting_folds` (see
        :func:`pymc_bnn.tempering.cross_fit_temperature`)."""
        self.temperature_selection_ = None
        if self.inference_ == "nuts":  # a temperature other than 1 was refused in fit
            self.posterior_temperature_ = 1.0
            return
        if self.posterior_temperature != "auto":
            self.posterior_temperature_ = float(self.posterior_temperature)
            return
        if folds is None:  # too few rows (per class) to hold any out: no tempering
            self.posterior_temperature_ = 1.0
            return
        selection = choose_temperature(fold_scores, n_rows)
        self.temperature_selection_ = selection
        self.posterior_temperature_ = selection.temperature

    def _temperature_folds(self, y_model, seed):
        """Folds for the temperature choice, or None when the data are too few."""
        raise NotImplementedError

    def _set_posterior(self, posterior, predict_seed):
        self.posterior_ = posterior
        self.approx_ = posterior.approx
        self.loss_curve_ = posterior.loss
        self.diagnostics_ = dict(posterior.diagnostics)
        self.idata_ = posterior_draws(posterior, n_draws=self.n_draws, random_seed=predict_seed,
                                      temperature=getattr(self, "posterior_temperature_", 1.0))
        self.predictive_ = from_idata(posterior.spec, self.idata_)

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
        more = sample_more(self.posterior_, n_draws, tune=tune, random_seed=seed,
                           progressbar=self.progressbar)
        self._set_posterior(more, None)  # MCMC: predictions use all stored draws
        return self

    @staticmethod
    def _check_groups(groups, n_rows: int) -> np.ndarray:
        groups = column_or_1d(groups, warn=False)
        if groups.shape[0] != n_rows:
            raise ValueError(
                f"groups has {groups.shape[0]} entries but X has {n_rows} rows; give one "
                "group label per row."
            )
        if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
            raise ValueError("groups contains NaN or infinity.")
        if groups.dtype.kind == "O" and any(g is None for g in groups):
            raise ValueError("groups contains None.")
        return groups

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
            raise ValueError(
                f"X has {X.shape[0]} rows but y has {y.shape[0]}; they must match."
            )
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
        """
        return persistence.load(cls, path)

    def __getstate__(self):
        """Pickle support (scikit-learn convention; never unpickle untrusted files).

        The PyMC approximation (compiled PyTensor functions) is not picklable; like
        :meth:`save`, a pickled VI estimator keeps its stored posterior draws and
        predicts identically, with ``approx_`` set to None.
        """
        state = self.__dict__.copy()
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


class BayesianMLPClassifier(ClassifierMixin, _BayesianMLP):
    """Bayesian multi-layer perceptron classifier (PyMC).

    Weights and biases carry Normal(0, ``prior_sigma``) priors; the posterior is fit by
    mean-field ADVI, full-rank ADVI or NUTS. Predictions average the class
    probabilities over ``n_draws`` posterior draws, and
    :meth:`predict_uncertainty` reports how unsure the network is at each point.

    The priors have one scale for every input, so standardise the features (e.g.
    ``make_pipeline(StandardScaler(), BayesianMLPClassifier())``): ``fit`` warns
    :class:`InputScaleWarning` when a feature's root mean square exceeds 10 (tanh
    units saturate) or all its values lie within 0.1 of each other (it is all but
    ignored).

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int, default (5, 5)
        Units per hidden layer; ``()`` gives Bayesian logistic / softmax regression.
    activation : {"tanh", "relu", "logistic"}, default "tanh"
    prior : {"normal", "gamma_precision"}, default "normal"
        ``"normal"``: fixed Normal(0, ``prior_sigma``) priors. ``"gamma_precision"``:
        Radford Neal's hierarchical prior, a Gamma(``precision_shape``,
        ``precision_rate``) precision per layer for the weights and another for the
        biases, inferred with the weights (the data choose the regularisation).
    prior_sigma : "auto", "evidence" or float, default "auto"
        Standard deviation of the weight and bias priors (``prior="normal"``).
        ``"evidence"``: one per layer, chosen before the fit by the marginal likelihood
        of a Laplace approximation around the MAP weights (MacKay's empirical Bayes,
        :func:`pymc_bnn.evidence.evidence_prior_scales`; with more than 20,000 rows, on
        a random 20,000 of them scaled to all; of a dask input only those rows are
        read); not for hierarchical networks (a ValueError). ``"auto"``: the evidence
        for variational inference where it is available, 1.0 where it is not
        (``groups=``, ``prior="gamma_precision"``) and for NUTS (under the evidence's
        larger output scales NUTS diverged on moons; pass ``"evidence"`` to have them
        anyway).
        Why the evidence: one N(0, 1) for every weight makes the predictive
        under-confident on clean data with many inputs; the evidence chooses a small
        first-layer scale and a larger output scale from the data
        (``docs/calibration.md``). ``prior_sigma_`` holds the scales used.
    precision_shape, precision_rate : float, default 1.0
        Gamma shape and rate of the precisions (``prior="gamma_precision"``).
    inference : {"auto", "advi", "fullrank_advi", "nuts"}, default "auto"
        ``"auto"``: NUTS for a hierarchical network (``fit(..., groups=...)``, rows in
        memory) and mean-field ADVI otherwise, or wherever a setting only variational
        inference uses is given (``n_iter``, ``learning_rate``, ``batch_size``,
        ``n_init`` > 1, or a ``posterior_temperature`` other than ``"auto"`` / 1). Why:
        mean-field ADVI shrinks how far groups may differ and gains little over
        separate networks (18 rotated-moons tasks: 0.86 test accuracy against 0.84 for
        separate networks; NUTS 0.90), see ``docs/calibration.md``. ``inference_``
        holds the method used.
    n_iter : int, optional
        Optimisation steps (VI). None: 10,000 for ADVI, 20,000 for full-rank ADVI.
    learning_rate : float, optional
        Adam step size (VI). None: 0.01 for ADVI, 0.003 for full-rank ADVI.
    batch_size : int, "auto" or None, default "auto"
        Rows per ADVI step (``pm.Minibatch``, capped at the number of rows). ``"auto"``:
        full batches on up to 1,024 rows, minibatches of 1,024 rows beyond
        (:data:`AUTO_BATCH_SIZE`: a step then costs the same at any data size; dask
        input streams minibatches of that size). None: full batches always (data in
        memory only).
    n_draws : int, default 500
        Posterior draws used for prediction (VI); draws per chain (NUTS).
    tune : int, default 1000
        NUTS tuning steps per chain.
    chains : int, default 2
        NUTS chains.
    nuts_sampler : {"numpyro", "nutpie", "pymc"}, optional
        NUTS backend; None picks the fastest installed for the network: numpyro for a
        plain one, nutpie for a hierarchical one (``pip install 'pymc_bnn[nutpie]'``;
        see :func:`pymc_bnn.inference.default_nuts_sampler`).
    nuts_init : {"jitter", "advi"}, default "jitter"
        Start of the NUTS chains: PyMC's jittered initial point, or a warm start from
        a quick ADVI fit (one approximation draw per chain). See :func:`pymc_bnn.fit`.
    posterior_temperature : "auto" or float > 0, default "auto"
        Temper the variational posterior to ``q**(1/T)`` before predicting: every
        posterior standard deviation is scaled by ``sqrt(T)`` around the unchanged
        mean (``T < 1`` "cold", ``T > 1`` "warm"; :func:`pymc_bnn.predictive.tempered`).
        ``"auto"`` chooses ``T`` from a fixed grid by the held-out predictive
        likelihood of 3 cross-fitted networks (stratified folds of the training data,
        same settings; :func:`pymc_bnn.tempering.cross_fit_temperature`), so one fit
        costs about four; ``1.0`` uses the posterior as fitted, with one fit. NUTS
        draws are never tempered ("auto" means 1 there). Why: with Normal(0, 1)
        weights, the untempered mean-field posterior is too wide on clean data and
        its predictive under-confident (``docs/calibration.md``).
    n_init : int, default 1
        Starting weights per ADVI fit: each fit (the kept one and each cross-fitting
        one) is run from ``n_init`` starts and the one with the lowest final loss (the
        highest ELBO) is kept, as ``n_init`` in scikit-learn's ``GaussianMixture``; it
        costs ``n_init`` times the fits. A fit can stop in a poor optimum that the ELBO
        sees: on the demo's moons split the default ``(5, 5)`` network reaches 0.834 at
        ``random_state=6`` (-ELBO 191, against 111-122 at other seeds) and 0.970 with
        ``n_init=2``. Over the calibration benchmark's 180 default fits (9 data sets,
        10 splits, two architectures) one of two starts ended >= 15 nats worse than
        the other in 8 (``docs/calibration.md``). ``start_losses_`` holds the starts'
        final losses. Not for NUTS (its chains start apart).
    random_state : int, RandomState instance or None
        Seeds the initial weights, minibatch order, ADVI noise, NUTS and the
        prediction draws: the same int gives identical predictions.
    progressbar : bool, default False

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    groups_ : ndarray of shape (n_groups,)
        Group labels seen by ``fit(X, y, groups=...)``; only when fit with groups.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when fit on a DataFrame with string column names.
    loss_curve_ : ndarray of shape (n_steps,)
        Negative ELBO per step in full-data units (VI; empty for NUTS).
    approx_ : pymc Approximation or None
        The variational approximation (VI; None for NUTS).
    idata_ : xarray.DataTree
        Posterior draws used for prediction (every method); VI: drawn from the
        approximation tempered to ``posterior_temperature_``.
    posterior_ : Posterior
        The full result of :func:`pymc_bnn.fit`.
    diagnostics_ : dict
        Convergence diagnostics of the fit (:func:`pymc_bnn.inference.diagnose`):
        ``"converged"`` (bool), ``"message"`` and the statistics. VI: whether the
        ELBO levelled off (``"relative_decrease"`` of the loss over the last 10% of
        the steps, ...); if not, ``fit`` warns ``sklearn.exceptions.ConvergenceWarning``.
        NUTS: ``"n_divergences"``, and ``"max_rhat"``, ``"min_ess_bulk"``,
        ``"min_ess_tail"`` of the network's outputs at up to 50 training points (not
        of the weights, which are not identifiable); if a check fails, ``fit`` warns
        :class:`pymc_bnn.exceptions.SamplingWarning`. Kept by :meth:`save` / :meth:`load`
        (files saved before diagnostics existed load with ``{}``) and by pickling.
    inference_ : str
        The inference method the fit used (``inference``, or what ``"auto"`` chose).
    posterior_temperature_ : float
        The temperature the predictions use (1.0: untempered).
    prior_sigma_ : float or tuple of float
        The prior scale the fit used (a tuple, one per layer, when the evidence chose it).
    evidence_ : EvidencePrior or None
        When the evidence chose the scales: the scales and the log evidence.
    temperature_selection_ : TemperatureSelection or None
        With ``posterior_temperature="auto"``: the grid of temperatures and their
        held-out negative log predictive densities (None when not chosen by
        cross-fitting, e.g. NUTS, a fixed temperature, or fewer than 2 rows in a class).
    start_losses_ : ndarray of shape (n_init,) or None
        Final loss (negative ELBO; ``diagnostics_["final_loss"]``, a trimmed mean of
        the last steps) of each start of the kept fit; the kept start is the lowest.
        None for NUTS, and for files saved before ``n_init`` existed.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from pymc_bnn import BayesianMLPClassifier
    >>> X, y = make_moons(200, noise=0.2, random_state=0)
    >>> clf = BayesianMLPClassifier(random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:3]).shape
    (3, 2)

    Multi-task data: ``fit(X, y, groups=g)`` fits a hierarchical network, one set of
    weights per group drawn around population-level weights (non-centred,
    ``w_g = w_mu + w_sd * eps_g`` in every layer); pass ``groups=`` to the prediction
    methods too. Rows of a group not seen in training, and all rows when ``groups``
    is omitted, are predicted with the population-level weights ``w_mu``.
    """

    def _encode_target(self, y):
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                "BayesianMLPClassifier needs samples of at least 2 classes in the data; "
                f"got only one class: {classes[0]!r}."
            )
        self.classes_ = classes
        return codes, {"n_classes": classes.shape[0]}

    def _model_target(self, y):
        index = {label: code for code, label in enumerate(self.classes_.tolist())}
        try:
            codes = np.array([index[label] for label in y.tolist()], dtype=np.int64)
        except (KeyError, TypeError):
            unseen = [label for label in y.tolist() if label not in index][:5]
            raise ValueError(
                f"y has labels the classifier was not fit on: {unseen} (classes_: "
                f"{self.classes_.tolist()})."
            ) from None
        return codes, 0.0

    def _temperature_folds(self, y_model, seed):
        from sklearn.model_selection import StratifiedKFold

        n_splits = min(self._TEMPERATURE_FOLDS, int(np.bincount(y_model).min()))
        if n_splits < 2:
            return None
        return list(StratifiedKFold(n_splits, shuffle=True, random_state=seed)
                    .split(np.zeros(len(y_model)), y_model))

    def _target_metadata(self):
        classes, dtype = persistence.jsonable_labels(self.classes_)
        return {"classes": classes, "classes_dtype": dtype}

    def _restore_target(self, meta, spec):
        classes = persistence.restore_labels(meta["classes"], meta["classes_dtype"])
        if classes.shape[0] != spec.n_classes:
            raise ValueError("the classes do not match the network's outputs")
        self.classes_ = classes

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X, groups=None):
        """Posterior predictive class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        groups : array-like of shape (n_samples,), optional
            Group labels (models fit with groups). Unseen labels, and every row when
            omitted, use the population-level weights.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Mean over posterior draws, columns in ``classes_`` order.
        A dask Array or DataFrame ``X`` gives a lazy dask array, computed block-wise
        (:mod:`pymc_bnn.dask`).
        """
        if is_dask_collection(X):
            return self._lazy("predict_proba", X, groups)
        X, codes = self._check_X(X, groups)
        return self.predictive_.mean_proba(X, codes)

    def predict(self, X, groups=None):
        """Most probable class under the posterior predictive.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Values from ``classes_``.
        A dask Array or DataFrame ``X`` gives a lazy dask array, computed block-wise
        (:mod:`pymc_bnn.dask`).
        """
        if is_dask_collection(X):
            return self._lazy("predict", X, groups)
        proba = self.predict_proba(X, groups)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y, sample_weight=None, groups=None):
        """Mean accuracy of :meth:`predict` (scikit-learn's ``score``), with ``groups``
        passed to it: without them a hierarchical model scores its population-level
        weights only."""
        from sklearn.metrics import accuracy_score

        return accuracy_score(y, self.predict(X, groups), sample_weight=sample_weight)

    def predict_uncertainty(self, X, groups=None) -> dict[str, np.ndarray]:
        """Per-point summaries of the posterior predictive.

        Returns
        -------
        dict with ``mean`` and ``std`` of shape (n_samples, n_classes), and
        ``entropy`` (total uncertainty, nats) and ``mutual_info`` (epistemic part)
        of shape (n_samples,). See :func:`pymc_bnn.predictive.summarize_proba`.
        A dask Array or DataFrame ``X`` gives lazy dask arrays, computed block-wise
        (:mod:`pymc_bnn.dask`).
        """
        if is_dask_collection(X):
            return self._lazy("predict_uncertainty", X, groups)
        X, codes = self._check_X(X, groups)
        return self.predictive_.summary(X, codes)

    def sample_proba(self, X, n_draws=None, groups=None):
        """Class-probability draws.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        n_draws : int, optional
            None: the draws used by ``predict_proba``. VI: otherwise that many fresh
            draws, seeded from ``random_state``. NUTS: that many draws thinned from
            the chains.
        groups : array-like of shape (n_samples,), optional
            As in :meth:`predict_proba`.

        Returns
        -------
        proba : ndarray of shape (n_draws, n_samples, n_classes)
        """
        X, codes = self._check_X(X, groups)
        if n_draws is None:
            pred = self.predictive_
        elif self.posterior_.is_variational:
            pred = posterior_predictive(self.posterior_, n_draws=n_draws,
                                        random_seed=self._seeds()["predict"],
                                        temperature=self.posterior_temperature_)
        else:
            pred = from_idata(self.posterior_.spec, self.idata_, n_draws=n_draws)
        return pred.sample_proba(X, codes)


class BayesianMLPRegressor(RegressorMixin, _BayesianMLP):
    """Bayesian multi-layer perceptron regressor (PyMC).

    ``y ~ Normal(f(x), sigma)`` with the network ``f`` under the same priors and
    inference options as :class:`BayesianMLPClassifier`, and either a learned constant
    noise ``sigma ~ HalfCauchy(noise_scale)`` or, with ``heteroscedastic=True``, a
    second network output giving ``sigma(x) = softplus(g(x)) + 0.001``. Targets are
    standardised before fitting (``(y - y_mean_) / y_scale_``) so that the priors and
    ``noise_scale`` mean the same on every data set; every prediction is mapped back
    to the units of ``y``. The predictive distribution at ``x`` is the mixture, over
    posterior draws, of the draws' Normals: its standard deviation combines the
    epistemic part (spread of ``f`` over draws) and the aleatoric part (the noise).
    The features are not standardised for you: as for the classifier, put a
    ``StandardScaler`` in front (``fit`` warns :class:`InputScaleWarning` otherwise).

    Parameters
    ----------
    prior : {"normal", "gamma_precision"}, default "gamma_precision"
        Unlike the classifier, the regressor defaults to Neal's prior (a Gamma
        precision per layer, inferred): how large the function is against the noise
        varies from one regression problem to the next, and the per-layer precisions
        let the data set it. Measured against the fixed N(0, 1) prior (70/30 splits,
        (16,) units): diabetes RMSE 55.1 vs 58.4, make_friedman1 2.51 vs 2.73, a
        heteroscedastic set 0.639 vs 0.636; 90% intervals covered 0.93-0.94 of test
        targets (``docs/calibration.md``). For classifiers it did worse under ADVI.
    hidden_layer_sizes, activation, prior_sigma, precision_shape, precision_rate,
    inference, n_iter, learning_rate, batch_size, n_draws, tune, chains, nuts_sampler,
    nuts_init, posterior_temperature, n_init, random_state, progressbar
        As in :class:`BayesianMLPClassifier` (the regressor's held-out criterion is the
        log density of the predictive mixture; folds are plain K-fold), except that
        ``prior_sigma`` defaults to 1.0 and ``"evidence"`` is for classifiers only
        (``"auto"`` means 1.0 here), and ``inference="auto"`` is mean-field ADVI with
        or without groups (NUTS for grouped regression was not measured; under the
        default Neal prior it diverged in a small grouped fit).
    heteroscedastic : bool, default False
        Learn the noise level as a function of ``x`` (a second output head).
    noise_scale : float, default 0.5
        Scale of the HalfCauchy prior on the noise sd, in standardised target units
        (homoscedastic model only).
    kl_weight : float in (0, 1] or "auto", default 1.0
        Weight of the KL term of the ADVI objective against the data (1: the ELBO;
        smaller: a tempered, "cold" ELBO, fit as if the likelihood counted
        ``1 / kl_weight`` times). ``"auto"`` chooses among ``KL_WEIGHTS`` (1, 1/4,
        1/16) by the held-out predictive density of the temperature's cross-fitting
        (three more fold fits per candidate): with many weights per row, mean-field
        ADVI explains what it cannot fit as noise, and a smaller weight lets the data
        shape the function (``docs/experiments/uci_regression.md``). The posterior
        temperature is then chosen for the kept weight.

    Attributes
    ----------
    y_mean_, y_scale_ : float
        Mean and standard deviation of the training targets (the standardisation).
    kl_weight_ : float
        The KL weight of the kept fit.
    kl_weight_selection_ : dict or None
        With ``kl_weight="auto"``: ``kl_weights``, the held-out NLL per row of each
        (``scores``, at its best temperature) and those ``temperatures``.
    n_features_in_, feature_names_in_, groups_, loss_curve_, approx_, idata_,
    posterior_, diagnostics_, inference_, posterior_temperature_, temperature_selection_,
    start_losses_
        As in :class:`BayesianMLPClassifier` (NUTS diagnostics use the mean of the
        network, in standardised target units).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import BayesianMLPRegressor
    >>> x = np.linspace(-1, 1, 100)[:, None]; y = x[:, 0] * np.sin(5 * x[:, 0])
    >>> reg = BayesianMLPRegressor((10,), random_state=0).fit(x, y)
    >>> mean, std = reg.predict(x[:3], return_std=True)
    >>> lower, upper = reg.predict_interval(x[:3], coverage=0.9)
    >>> mean.shape, bool(np.all(lower < upper))
    ((3,), True)
    """

    _parameter_constraints: dict = {
        **_BayesianMLP._parameter_constraints,
        "heteroscedastic": ["boolean"],
        "noise_scale": [Interval(Real, 0, None, closed="neither")],
        "kl_weight": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
    }
    _y_numeric = True
    _AUTO_NUTS_FOR_GROUPS = False

    def __init__(
        self,
        hidden_layer_sizes=(5, 5),
        activation="tanh",
        *,
        heteroscedastic=False,
        noise_scale=0.5,
        prior="gamma_precision",
        prior_sigma=1.0,
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
        kl_weight=1.0,
        random_state=None,
        progressbar=False,
    ):
        super().__init__(
            hidden_layer_sizes, activation, prior=prior, prior_sigma=prior_sigma,
            precision_shape=precision_shape, precision_rate=precision_rate,
            inference=inference, n_iter=n_iter, learning_rate=learning_rate,
            batch_size=batch_size, n_draws=n_draws, tune=tune, chains=chains,
            nuts_sampler=nuts_sampler, nuts_init=nuts_init,
            posterior_temperature=posterior_temperature, n_init=n_init,
            random_state=random_state, progressbar=progressbar,
        )
        self.heteroscedastic = heteroscedastic
        self.noise_scale = noise_scale
        self.kl_weight = kl_weight

    def _encode_target(self, y):
        y = np.asarray(y, dtype=np.float64)
        kwargs = self._set_target_scaling(float(y.mean()), float(y.std()))
        return (y - self.y_mean_) / self.y_scale_, kwargs

    def _set_target_scaling(self, mean: float, sd: float) -> dict:
        """Store the target's standardisation; returns the model's likelihood options."""
        self.y_mean_ = mean
        self.y_scale_ = sd if sd > 0 else 1.0
        return {"likelihood": "normal", "heteroscedastic": bool(self.heteroscedastic),
                "noise_scale": self.noise_scale}

    def _model_target(self, y):
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("y must be numbers for a regressor.") from None
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity.")
        return (y - self.y_mean_) / self.y_scale_, float(np.log(self.y_scale_))

    def _temperature_folds(self, y_model, seed):
        from sklearn.model_selection import KFold

        if len(y_model) < 2 * self._TEMPERATURE_FOLDS:
            return None
        return list(KFold(self._TEMPERATURE_FOLDS, shuffle=True, random_state=seed)
                    .split(np.zeros(len(y_model))))

    def _target_metadata(self):
        return {"y_mean": self.y_mean_, "y_scale": self.y_scale_}

    def _restore_target(self, meta, spec):
        if not spec.is_regression:
            raise ValueError("the stored network is not a regression network")
        self.y_mean_ = float(meta["y_mean"])
        self.y_scale_ = float(meta["y_scale"])

    # ------------------------------------------------------------------ predict
    def predict_uncertainty(self, X, groups=None) -> dict[str, np.ndarray]:
        """Posterior predictive moments at ``X``, in the units of ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        groups : array-like of shape (n_samples,), optional
            Group labels (models fit with groups); unseen labels, and every row when
            omitted, use the population-level weights.

        Returns
        -------
        dict of arrays of shape (n_samples,): ``mean``, ``std`` (total),
        ``epistemic_std`` (spread of the network's mean over posterior draws) and
        ``aleatoric_std`` (root mean noise variance), with
        ``std**2 = epistemic_std**2 + aleatoric_std**2``.
        A dask Array or DataFrame ``X`` gives lazy dask arrays, computed block-wise
        (:mod:`pymc_bnn.dask`).
        """
        if is_dask_collection(X):
            return self._lazy("predict_uncertainty", X, groups)
        X, codes = self._check_X(X, groups)
        moments = self.predictive_.normal_summary(X, codes)
        out = {k: v * self.y_scale_ for k, v in moments.items()}
        out["mean"] = out["mean"] + self.y_mean_
        return out

    def predict(self, X, return_std=False, groups=None):
        """Posterior predictive mean (and standard deviation).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default False
            Also return the predictive standard deviation (epistemic + aleatoric),
            as scikit-learn's ``GaussianProcessRegressor.predict``.
        groups : array-like of shape (n_samples,), optional

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,), only with ``return_std``
        """
        if is_dask_collection(X):
            return self._lazy("predict", X, groups, return_std=return_std)
        moments = self.predict_uncertainty(X, groups)
        return (moments["mean"], moments["std"]) if return_std else moments["mean"]

    def score(self, X, y, sample_weight=None, groups=None):
        """R^2 of :meth:`predict` (scikit-learn's ``score``), with ``groups`` passed to
        it: without them a hierarchical model scores its population-level weights."""
        from sklearn.metrics import r2_score

        return r2_score(y, self.predict(X, groups=groups), sample_weight=sample_weight)

    def predict_interval(self, X, coverage=0.95, groups=None):
        """Central posterior predictive interval.

        The ``(1 - coverage) / 2`` and ``(1 + coverage) / 2`` quantiles of the
        predictive mixture (:meth:`PosteriorPredictive.quantiles`), in units of ``y``.

        Returns
        -------
        lower, upper : ndarrays of shape (n_samples,)
        """
        if isinstance(coverage, bool) or not isinstance(coverage, Real) or not 0 < coverage < 1:
            raise ValueError(f"coverage must be a number in (0, 1); got {coverage!r}.")
        if is_dask_collection(X):
            return self._lazy("predict_interval", X, groups, coverage=coverage)
        X, codes = self._check_X(X, groups)
        q = self.predictive_.quantiles(X, [(1 - coverage) / 2, (1 + coverage) / 2], codes)
        lower, upper = q * self.y_scale_ + self.y_mean_
        return lower, upper

    def sample_y(self, X, n_samples=1, random_state=0, groups=None):
        """Draws from the posterior predictive (network draw plus noise).

        As scikit-learn's ``GaussianProcessRegressor.sample_y``: each sample picks
        a stored posterior draw at random and adds its Normal noise.

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples)
        """
        if isinstance(n_samples, bool) or not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        X, codes = self._check_X(X, groups)
        rng = check_random_state(random_state)
        mean, sd = self.predictive_.sample_normal(X, codes)
        pick = rng.randint(mean.shape[0], size=n_samples)
        noise = rng.standard_normal((n_samples, X.shape[0]))
        draws = mean[pick] + sd[pick] * noise
        return (draws * self.y_scale_ + self.y_mean_).T
