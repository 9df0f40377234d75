"""How the estimators' fit chooses its settings: the inference method
(``inference="auto"``), settings refused with NUTS (a temperature, several starts), the
prior scales (``prior_sigma="auto"`` / ``"evidence"``), the KL weights of the ELBO
(``kl_weight="auto"``) and the posterior temperature (``posterior_temperature="auto"``,
by cross-fitting).

:class:`FitSettingsMixin` is a part of :class:`pymc_bnn.estimators._base.BayesianMLPBase`: its
methods read the estimator's parameters and set its fitted attributes; the fit itself
is orchestrated there.
"""

from __future__ import annotations

import functools

import numpy as np

from pymc_bnn.inference import fit_concurrently
from pymc_bnn.policy._choice import (
    LAPLACE_ENSEMBLE,
    MIXTURE,
    auto_inference,
    vi_settings_given,
    vi_step_settings,
)
from pymc_bnn.policy._tempering import (
    choose_mixture_temperatures,
    choose_temperature,
    temperature_folds,
)
from pymc_bnn.policy.thresholds import KL_WEIGHTS, LAPLACE_STARTS_MIN_WEIGHT


class FitSettingsMixin:
    """The settings half of :class:`pymc_bnn.estimators._base.BayesianMLPBase` (see the module
    docstring); not an estimator on its own."""

    #: The ``prior`` values :data:`LAPLACE_ENSEMBLE` accepts (its MAP fits use the
    #: Normal prior; the regressor's default, Neal's, has each layer's scale inferred,
    #: which the ensemble does for the output layer by its evidence).
    _ENSEMBLE_PRIORS = ("normal",)

    def _kl_weight_candidates(self) -> tuple[float, ...]:
        """The KL weights to fit: ``(kl_weight,)``, or :data:`KL_WEIGHTS` for "auto"
        (variational inference only; NUTS samples the posterior itself)."""
        value = getattr(self, "kl_weight", 1.0)
        if value != "auto":
            return (float(value),)
        return (1.0,) if self.inference_ in ("nuts", "laplace") else KL_WEIGHTS

    def _fit_candidates(self, shape, *, grouped: bool) -> list[tuple[str, float]]:
        """The ``(method, kl_weight)`` fits to choose among on held-out folds: one per
        KL weight (:meth:`_kl_weight_candidates`) by ``inference_``; a single one is
        fit without a choice."""
        return [(self.inference_, w) for w in self._kl_weight_candidates()]

    @property
    def _fit_method(self) -> str:
        """The method of the network's own fits: ``inference_``, or ADVI for a mixture
        (its Laplace half is asked for by name)."""
        return "advi" if self.inference_ == MIXTURE else self.inference_

    def _inference_for_data(self, shape, target_kwargs, *, grouped: bool) -> str:
        """``inference_`` once the data are known
        (:func:`pymc_bnn.policy._choice.auto_inference`): the mixture of Laplace
        approximations, or the regressor's short NUTS run, where ``"auto"`` takes them;
        else as resolved. Sets the regressor's ``nuts_run_``."""
        regression = self._TASK == "regression"
        sampler, n_params = "", 0
        if regression:
            from pymc_bnn.inference import default_nuts_sampler
            from pymc_bnn.network._checks import check_hidden_layer_sizes
            from pymc_bnn.network._flat import n_params as count_params

            sampler = self.nuts_sampler or default_nuts_sampler()
            widths = (shape[1], *check_hidden_layer_sizes(self.hidden_layer_sizes), 1)
            n_params = count_params(tuple(zip(widths[:-1], widths[1:])))
        method, run = auto_inference(
            self.get_params(),
            self._TASK,
            resolved=self.inference_,
            grouped=grouped,
            n_rows=shape[0],
            n_params=n_params,
            nuts_sampler=sampler,
        )
        if regression:
            if run is None and self.inference_ == "nuts":
                run = {"chains": self.chains, "tune": self.tune, "draws": self.n_draws}
                run["chosen"] = "given"
            self.nuts_run_ = run
        return method

    def _mixture_component(
        self, posterior, fold_scores, folds, n_rows, *, advi_fold_scores=()
    ) -> dict | None:
        """The Laplace half of a mixture: its posterior and its temperature. Cross-fitted
        (``posterior_temperature="auto"``), the two halves' temperatures are chosen
        together, for the mixture's held-out NLL on the folds that fit both
        (:func:`pymc_bnn.policy._tempering.choose_mixture_temperatures`; the ADVI half's
        ``posterior_temperature_`` and ``temperature_selection_`` are set from it);
        else fixed, as for ADVI."""
        if self.posterior_temperature != "auto" or folds is None:
            temperature = (
                1.0 if self.posterior_temperature == "auto" else float(self.posterior_temperature)
            )
            return {"posterior": posterior, "temperature": temperature, "selection": None}
        advi, laplace, weight = choose_mixture_temperatures(
            advi_fold_scores, fold_scores, n_rows, weights=self._MIXTURE_WEIGHTS
        )
        self.inference_selection_ = None
        self.temperature_selection_ = advi
        self.posterior_temperature_ = advi.temperature
        return {
            "posterior": posterior,
            "temperature": laplace.temperature,
            "selection": laplace,
            "weight": weight,
        }

    #: The Laplace half's shares of the ADVI + Laplace mixture tried on the folds
    #: (:func:`pymc_bnn.policy._tempering.choose_mixture_temperatures`); ``(0.5,)``: the equal
    #: mixture (the classifier's: on five splits of the calibration benchmark a stacked
    #: share gained a little on the larger sets and lost on the small ones, where the
    #: folds' share swings from seed to seed; ``research/notes/calibration-log.md``).
    _MIXTURE_WEIGHTS = (0.5,)

    #: The Laplace fits of a mixture's Laplace half where the folds give it at least
    #: :data:`LAPLACE_STARTS_MIN_WEIGHT` (one: the classifier's; the regressor's
    #: :data:`LAPLACE_STARTS`).
    _LAPLACE_STARTS = 1

    def _laplace_starts(self, weight: float) -> int:
        """The Laplace fits of a mixture whose Laplace half has the share ``weight``."""
        return self._LAPLACE_STARTS if weight >= LAPLACE_STARTS_MIN_WEIGHT else 1

    def _laplace_modes(self, fit_rows, seeds, weight, progress, *, first=None):
        """The Laplace fits of a mixture's Laplace half, on all the rows: one, or
        :meth:`_laplace_starts` of them from starting weights of their own
        (:func:`mode_seeds`), fitted at once; ``first``: the first, already fitted.
        Returns the list (None where ``first`` is the only one)."""
        n = self._laplace_starts(weight)
        if first is not None and n == 1:
            return None
        todo = mode_seeds(seeds["init"], n)[first is not None :]
        tasks = [
            functools.partial(fit_rows, None, seeds["fit"], method="laplace", init_seed=seed)
            for seed in todo
        ]
        name = (
            "Laplace fit"
            if n == 1
            else f"{len(tasks)} Laplace fits from starting weights of their own"
        )
        with progress.stage(name, fits=len(tasks)):
            fits = fit_concurrently([progress.counted(t) for t in tasks])
        return ([] if first is None else [first]) + list(fits)

    def _fits_stage_name(self, n_fits: int, folds) -> str:
        """What the fit's main stage does, in words (for :class:`FitProgress`)."""
        if self.inference_ == "nuts":
            run = self._run_settings(True)
            return (
                f"NUTS sampling ({run['chains']} chains x ({run['tune']} warm-up + "
                f"{run['draws']} draws))"
            )
        method = {"advi": "ADVI", "laplace": "Laplace", MIXTURE: "ADVI and Laplace"}.get(
            self.inference_, "full-rank ADVI"
        )
        starts = f", each from {self.n_init} starts" if self.n_init > 1 else ""
        if self.inference_ == MIXTURE:
            return (
                f"{n_fits} fits{starts}: the network by ADVI and by Laplace, "
                f"and {len(folds or [])} of each on held-out folds to choose their "
                "temperatures"
            )
        if not folds:
            return f"{method} fit{starts}"
        return (
            f"{n_fits} {method} fits{starts}: the network, and {len(folds)} on "
            "held-out folds to choose the temperature"
        )

    def _check_n_init_for_inference(self) -> None:
        """Refuse several starts with NUTS before anything is fit."""
        if self.inference_ == "nuts" and self.n_init != 1:
            raise ValueError(
                f"n_init={self.n_init!r} applies to variational inference only; NUTS "
                "runs its chains from starts of their own (see chains). Use n_init=1 with "
                "inference='nuts'."
            )

    def _laplace_unsupported(self, *, streamed: bool, grouped: bool) -> str | None:
        """What of this fit ``inference="laplace"`` does not model (None: nothing)."""
        return "groups" if grouped else "dask input" if streamed else None

    def _check_laplace(self, *, streamed: bool, grouped: bool) -> None:
        """Refuse what ``inference="laplace"`` does not model, before anything is fit."""
        why = self._laplace_unsupported(streamed=streamed, grouped=grouped)
        if why is not None:
            raise ValueError(
                f"inference={self.inference_!r} fits a Laplace approximation of a network "
                f"without groups (a regressor's: "
                f"homoscedastic, with its own evidence in place of an ELBO), on data in "
                f"memory; {why} is not supported with it. Use inference='advi' (or 'auto')."
            )

    def _check_ensemble_settings(self) -> None:
        """Refuse, with ``inference="laplace_ensemble"``, a setting it has no use for
        (those of ADVI's steps and starts, Neal's prior), before anything is fit."""
        given = self._vi_step_settings()
        if self.n_init != 1:
            given["n_init"] = self.n_init
        if self.prior not in self._ENSEMBLE_PRIORS:
            given["prior"] = self.prior
        _refuse(
            given,
            f"does not apply to inference={LAPLACE_ENSEMBLE!r}, which trains its "
            "networks with fixed settings under the Normal prior. Leave them at their "
            "defaults, or use inference='advi'.",
        )

    def _check_vi_settings_for_nuts(self) -> None:
        """Refuse, with ``inference="nuts"``, a setting only variational inference uses
        (NUTS samples the full-batch posterior as it is): ``n_iter``, ``learning_rate``,
        ``batch_size``, and a ``kl_weight`` other than 1, which would otherwise sharpen
        the posterior NUTS samples (the likelihood counted ``1 / kl_weight`` times)."""
        if self.inference_ != "nuts":
            return
        given = self._vi_step_settings()
        if getattr(self, "kl_weight", 1.0) not in (1, 1.0):
            given["kl_weight"] = self.kl_weight
        _refuse(
            given,
            "applies to variational inference only; NUTS samples the posterior of "
            "all the rows as it is (its length: tune, n_draws, chains). Leave it at its "
            "default with inference='nuts'.",
        )

    def _check_prior_settings(self) -> None:
        """Refuse a prior setting that the prior would ignore: ``prior_sigma`` sets
        ``prior="normal"``'s scale, while Neal's prior infers each layer's from a Gamma
        precision whose shape and rate ``prior="normal"`` has no use for."""
        if self.prior == "gamma_precision" and self.prior_sigma not in ("auto", "evidence", 1.0):
            raise ValueError(
                f"prior_sigma={self.prior_sigma!r} sets the scale of prior='normal'; "
                "prior='gamma_precision' infers each layer's scale from its Gamma "
                "precision (precision_shape, precision_rate) and would ignore it. Pass "
                "prior='normal' to fix the scale, or leave prior_sigma at its default."
            )
        given = {
            name: value
            for name in ("precision_shape", "precision_rate")
            if (value := getattr(self, name)) != 1.0
        }
        if self.prior == "normal" and given:
            settings = ", ".join(f"{name}={value!r}" for name, value in given.items())
            raise ValueError(
                f"{settings} set the Gamma precision of prior='gamma_precision'; "
                "prior='normal' has fixed scales (prior_sigma) and would ignore them. "
                "Pass prior='gamma_precision' to use them."
            )

    def _evidence_unavailable(self, *, streamed: bool, grouped: bool) -> str | None:
        """Why the evidence cannot choose the prior scales of this fit (None: it can)."""
        if self._y_numeric:
            return "is available for classifiers only"
        if self.prior != "normal":
            return f"sets the scales of prior='normal', not prior={self.prior!r}"
        if grouped:
            return "is not available for hierarchical networks (groups=) yet"
        return None

    def _laplace_hidden_sigmas(self, shape, target_kwargs):
        """The hidden layers' prior scales of a last-layer Laplace fit (the output layer's
        Gaussian only; :func:`pymc_bnn.inference.laplace.fit_laplace`), or None: the whole
        network's (the classifier's mixture overrides it)."""
        return None

    def _check_evidence_prior(self, *, streamed: bool, grouped: bool) -> bool:
        """Whether the evidence chooses the prior scales: ``"evidence"`` (refused with a
        clear error, before any fit, where unavailable) or ``"auto"`` where available."""
        why = self._evidence_unavailable(streamed=streamed, grouped=grouped)
        if self.prior_sigma == "evidence" and why:
            raise ValueError(
                f"prior_sigma='evidence' {why}; pass a number instead (e.g. prior_sigma=1.0)."
            )
        # "auto" and NUTS: 1.0 (under the evidence's larger output scales NUTS diverged
        # on moons, 18 divergent transitions of 1,000; its calibration was not measured)
        # Laplace: its own evidence chooses the scales, in its own fit
        return self.prior_sigma == "evidence" or (
            self.prior_sigma == "auto"
            and why is None
            and self.inference_ not in ("nuts", "laplace")
        )

    def _choose_prior_scales(self, use_evidence, X, y_model, target_kwargs, seed) -> None:
        """Set ``prior_sigma_`` (and ``evidence_``): the evidence's scales, or the number
        given (1.0 for ``"auto"`` where the evidence is unavailable)."""
        self.evidence_ = None
        if not use_evidence:
            self.prior_sigma_ = 1.0 if self.prior_sigma == "auto" else float(self.prior_sigma)
            return
        from pymc_bnn.inference.evidence import evidence_prior_scales

        self.evidence_ = evidence_prior_scales(
            X,
            y_model,
            hidden_layer_sizes=self.hidden_layer_sizes,
            activation=self.activation,
            n_classes=target_kwargs["n_classes"],
            random_state=seed,
        )
        self.prior_sigma_ = self.evidence_.sigmas

    #: Whether ``inference="auto"`` samples hierarchical networks with NUTS (the
    #: classifier, measured in research/notes/calibration-log.md) or fits them by
    #: ADVI (the regressor: not measured; under its default Neal prior NUTS diverged in
    #: a small grouped fit).
    _AUTO_NUTS_FOR_GROUPS = True

    def _resolve_inference(self, *, grouped: bool) -> str:
        """The inference method of this fit: ``inference``, or for ``"auto"`` NUTS on a
        hierarchical network (``groups=``, all rows in memory; classifier only) unless a
        setting that only variational inference uses is given (``n_iter``,
        ``learning_rate``, ``batch_size``, a ``posterior_temperature`` other than
        ``"auto"`` / 1, ``n_init`` > 1), and mean-field ADVI otherwise."""
        if self.inference == MIXTURE and self.n_draws < 2:
            raise ValueError(
                f"inference={MIXTURE!r} draws half its n_draws from each "
                f"fit; it needs n_draws >= 2, got {self.n_draws}."
            )
        if self.inference != "auto":
            return self.inference
        use_nuts = grouped and self._AUTO_NUTS_FOR_GROUPS and not self._vi_settings_given()
        return "nuts" if use_nuts else "advi"

    def _run_settings(self, warn: bool) -> dict:
        """``draws``, ``tune``, ``chains``, ``warn`` and ``progressbar`` of the network's
        fit: the estimator's own (the regressor's ``inference="auto"`` NUTS overrides
        them). ADVI fits are counted by the fit's stages (``FitProgress``); NUTS's own
        bar shows its chains."""
        return {
            "draws": self.n_draws,
            "tune": self.tune,
            "chains": self.chains,
            "warn": warn,
            "progressbar": bool(self.progressbar) and self.inference_ == "nuts",
        }

    def _vi_step_settings(self) -> dict:
        """The settings of ADVI's steps that were given, by name
        (:func:`pymc_bnn.policy._choice.vi_step_settings`)."""
        return vi_step_settings(self.get_params())

    def _vi_settings_given(self) -> bool:
        """Whether a setting only variational inference uses was given
        (:func:`pymc_bnn.policy._choice.vi_settings_given`)."""
        return vi_settings_given(self.get_params())

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
        :func:`pymc_bnn.policy._tempering.cross_fit_temperature`)."""
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
        """The folds of the cross-fitted temperature
        (:func:`pymc_bnn.policy._tempering.temperature_folds`), or None."""
        return temperature_folds(self._TASK, y_model, seed, self._TEMPERATURE_FOLDS)


def _refuse(given: dict, why: str) -> None:
    """Raise ValueError naming the settings ``given`` (name: value), then ``why``."""
    if given:
        settings = ", ".join(f"{name}={value!r}" for name, value in given.items())
        raise ValueError(f"{settings} {why}")


def spawned_seeds(init_seed: int, n: int, stream: tuple = ()) -> list[int]:
    """``init_seed`` then ``n - 1`` seeds spawned from it (``SeedSequence([init_seed,
    *stream, k])``): so that the first of ``n`` fits is the plain one. ``stream``
    keeps the seeds of one use apart from another's."""
    return [init_seed] + [
        int(np.random.SeedSequence([init_seed, *stream, k]).generate_state(1)[0] >> 1)
        for k in range(1, n)
    ]


def mode_seeds(init_seed: int, n_modes: int) -> list[int]:
    """Seeds of the starting weights of a mixture's ``n_modes`` Laplace fits
    (:func:`spawned_seeds`, apart from those of each fit's own ``n_init`` starts)."""
    return spawned_seeds(init_seed, n_modes, stream=(0,))
