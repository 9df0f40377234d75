"""The scikit-learn regressor: :class:`BayesianMLPRegressor`."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from pymc_bnn.dask import is_dask_collection
from pymc_bnn.estimators._base import BayesianMLPBase
from pymc_bnn.inference import METHODS
from pymc_bnn.network.spec import NetworkSpec
from pymc_bnn.policy._settings import LAPLACE_ENSEMBLE, MIXTURE
from pymc_bnn.policy._tempering import MIXTURE_WEIGHTS
from pymc_bnn.policy.thresholds import (
    LAPLACE_STARTS,
)

__all__ = ["BayesianMLPRegressor"]


class BayesianMLPRegressor(RegressorMixin, BayesianMLPBase):
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
        targets (``research/notes/calibration-log.md``). For classifiers it did worse under ADVI.
    inference : {"auto", "laplace_ensemble", "advi", "fullrank_advi", "nuts", "laplace", \
"advi+laplace"}, default "auto"
        As in :class:`BayesianMLPClassifier`, except for what ``"auto"`` fits. On small
        tables it samples with NUTS: a short run (:data:`AUTO_NUTS_CHAINS` chains, or
        :data:`AUTO_NUTS_MAX_CHAINS` where they fit the same budget
        (:func:`auto_nuts_chains`), of :data:`AUTO_NUTS_TUNE` warm-up iterations and
        :data:`AUTO_NUTS_DRAWS` draws each, in threads, its diagnostics in
        ``diagnostics_`` without a warning; ``nuts_run_``) where the training rows
        times the network's parameters are at most :data:`AUTO_NUTS_MAX_WORK`, with
        numpyro installed; on the UCI tables it predicted better than every cheaper
        method tried (``research/notes/uci_regression.md``,
        ``research/notes/laplace-ensemble.md``). Above that limit, on at most
        :data:`~pymc_bnn.policy.thresholds.AUTO_ENSEMBLE_MAX_ROWS` rows, ``"auto"`` is
        ``"laplace_ensemble"``. Both need the default ``prior``, a homoscedastic
        network, no groups and no setting only ADVI uses (``n_iter``,
        ``learning_rate``, ``batch_size``, ``n_init`` > 1, a fixed temperature other
        than 1, ``kl_weight``); elsewhere ``"auto"`` is mean-field ADVI (NUTS for
        grouped regression was not measured; under the default Neal prior it diverged
        in a small grouped fit).
        ``"laplace_ensemble"``: five networks trained to their MAP weights at once
        (:mod:`pymc_bnn.inference._map_ensemble`), each with its noise sd and holding out
        a tenth of the rows, on which it stops early; each one's output layer gets its
        exact Gaussian posterior given the hidden features, its prior and noise
        precisions by their evidence; the held-out rows then choose the Gaussians'
        temperature and a factor of the noise variance
        (:func:`pymc_bnn.policy._ensemble.fit_regression_ensemble`). The MAP fits use
        Normal priors of sd 1 on the standardised scale under either ``prior`` (the
        output layer's scale is its evidence's). ``ensemble_`` records the members.
        ``"laplace"``: the linearised Laplace approximation (:mod:`pymc_bnn.inference.laplace`):
        the MAP network, one Normal prior precision per layer and the noise level
        chosen by the Laplace evidence (MacKay's empirical Bayes, in place of ``prior``
        and ``noise_scale``), and the predictive of the network linearised at the MAP
        (``Normal(f(x), J(x) A^-1 J(x)^T + sigma^2)``, as draws). It fits in seconds
        and is far better than ADVI on smooth, nearly noise-free tables; on small
        noisy ones it can over-fit (``research/notes/uci_regression.md``).
        Homoscedastic, without groups, data in memory, networks of at most
        :data:`pymc_bnn.inference.laplace.MAX_PARAMS` weights; ``n_init`` > 1 keeps the start
        of the highest evidence; ``n_iter``, ``learning_rate``, ``batch_size`` and
        ``kl_weight`` do not apply.
        ``"advi+laplace"``: both fits and their mixture, as the classifier's, each half
        with its own noise sd; the Laplace half's share of the draws is stacked on the
        folds (one of :data:`pymc_bnn.policy._tempering.MIXTURE_WEIGHTS`, 0.02 to 0.98: the
        share whose mixture predicts the held-out rows best; Yao, Vehtari, Simpson &
        Gelman 2018) together with the halves' temperatures, and no check against
        either half alone. Where that share is at least a half, the Laplace half is
        a mixture of :data:`pymc_bnn.policy._settings.LAPLACE_STARTS` Laplace fits from
        starting weights of their own, each linearised at its own mode (after
        Eschenhagen et al. 2021).
    hidden_layer_sizes, activation, prior_sigma, precision_shape, precision_rate,
    n_iter, learning_rate, batch_size, n_draws, tune, chains, nuts_sampler,
    nuts_init, posterior_temperature, n_init, random_state, progressbar
        As in :class:`BayesianMLPClassifier` (the regressor's held-out criterion is the
        log density of the predictive mixture; folds are plain K-fold), except that
        ``prior_sigma`` defaults to 1.0 and ``"evidence"`` is for classifiers only
        (``"auto"`` means 1.0 here), and that ``inference="auto"``'s short NUTS run on
        small tables has lengths of its own (:data:`AUTO_NUTS_TUNE`,
        :data:`AUTO_NUTS_DRAWS`, :func:`auto_nuts_chains`; ``nuts_run_`` says which):
        ``n_draws``, ``tune`` and ``chains`` apply to ``inference="nuts"`` (and
        ``n_draws`` to the approximations); pass ``inference="nuts"`` to set them.
    heteroscedastic : bool, default False
        Learn the noise level as a function of ``x`` (a second output head).
    noise_scale : float, default 0.5
        Scale of the HalfCauchy prior on the noise sd, in standardised target units
        (homoscedastic model only).
    target_scale : {"linear", "log"}, default "linear"
        ``"log"``: model ``log(y)`` (``y`` must be positive), so that the noise is a
        fraction of the value, as for incomes, prices or durations; predictions,
        intervals, draws and densities are back in the units of ``y`` (the mean is
        the log-normal mixture's, ``E[exp(z)]``, not ``exp(E[z])``).
        :func:`pymc_bnn.policy.choose_noise` chooses among the noise models
        by held-out likelihood.
    kl_weight : float in (0, 1] or "auto", default 1.0
        Weight of the KL term of the ADVI objective against the data (1: the ELBO;
        smaller: a tempered, "cold" ELBO, fit as if the likelihood counted
        ``1 / kl_weight`` times). ``"auto"`` chooses among ``KL_WEIGHTS`` (1, 1/4,
        1/16) by the held-out predictive density of the temperature's cross-fitting
        (three more fold fits per candidate): with many weights per row, mean-field
        ADVI explains what it cannot fit as noise, and a smaller weight lets the data
        shape the function (``research/notes/uci_regression.md``). The posterior
        temperature is then chosen for the kept weight.

    Attributes
    ----------
    y_mean_, y_scale_ : float
        Mean and standard deviation of the training targets (the standardisation).
    kl_weight_ : float
        The KL weight of the kept fit.
    inference_selection_ : dict or None
        Where ``inference="auto"`` weighed the mixture against ADVI and the Laplace
        approximation alone: ``methods`` (``["advi+laplace", "advi", "laplace"]``), the
        held-out NLL per row of each (``scores``, each at its best temperatures), the
        ``standard_errors`` of each half's difference from the mixture and those
        ``temperatures`` (the mixture's pair first), and the mixture's
        ``laplace_weight``; at a fixed temperature,
        ``methods`` ``["advi", "laplace"]`` with their ``scores`` and
        ``temperatures``; else None.
    mixture_ : dict or None
        ``inference_ == "advi+laplace"``: the halves, as the classifier's ``mixture_``;
        ``laplace_weight`` is the Laplace half's stacked share (``n_draws`` its draws);
        where it is at least a half, that half is ``laplace_starts`` Laplace fits from
        starting weights of their own (:data:`pymc_bnn.policy._settings.LAPLACE_STARTS`),
        each linearised at its own mode, sharing its draws equally
        (``laplace_log_evidence``: each fit's; ``laplace_prior_sigma`` and
        ``laplace_diagnostics`` are the first's).
    ensemble_ : dict or None
        ``inference_ == "laplace_ensemble"``: as the classifier's, and each member's
        ``"noise_sd"`` (standardised units, after the held-out factor) and that
        ``"noise_scale"`` factor of its variance; None for other methods.
    nuts_run_ : dict or None
        Where the network was sampled with NUTS: its ``chains``, ``tune`` and ``draws``
        (per chain) and ``chosen``: ``"given"`` (``inference="nuts"``) or ``"auto"``
        (``inference="auto"``'s short run, with ``rows_x_parameters`` and the
        ``limit`` it was within: :data:`AUTO_NUTS_MAX_WORK`); else None.
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

    _TASK = "regression"

    _parameter_constraints: dict = {
        **BayesianMLPBase._parameter_constraints,
        "heteroscedastic": ["boolean"],
        "noise_scale": [Interval(Real, 0, None, closed="neither")],
        "target_scale": [StrOptions({"linear", "log"})],
        "kl_weight": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
        "inference": [StrOptions({"auto", *METHODS, "laplace", MIXTURE, LAPLACE_ENSEMBLE})],
    }
    _y_numeric = True
    _AUTO_NUTS_FOR_GROUPS = False
    _ENSEMBLE_PRIORS = ("normal", "gamma_precision")
    # the mixture's Laplace share stacked on the folds, not fixed at a half: on the UCI
    # splits the folds' share beat the equal mixture's test LL on four of five sets
    # (research/notes/uci_regression.md)
    _MIXTURE_WEIGHTS = MIXTURE_WEIGHTS
    _LAPLACE_STARTS = LAPLACE_STARTS
    # rows per block of the log-scale moments: 500 draws x 4,096 rows x 8 bytes = 16 MB
    # an array
    _LOG_MOMENT_ROWS = 4096

    def __init__(
        self,
        hidden_layer_sizes=(5, 5),
        activation="tanh",
        *,
        heteroscedastic=False,
        noise_scale=0.5,
        target_scale="linear",
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
            hidden_layer_sizes,
            activation,
            prior=prior,
            prior_sigma=prior_sigma,
            precision_shape=precision_shape,
            precision_rate=precision_rate,
            inference=inference,
            n_iter=n_iter,
            learning_rate=learning_rate,
            batch_size=batch_size,
            n_draws=n_draws,
            tune=tune,
            chains=chains,
            nuts_sampler=nuts_sampler,
            nuts_init=nuts_init,
            posterior_temperature=posterior_temperature,
            n_init=n_init,
            random_state=random_state,
            progressbar=progressbar,
        )
        self.heteroscedastic = heteroscedastic
        self.noise_scale = noise_scale
        self.target_scale = target_scale
        self.kl_weight = kl_weight

    def _log_target(self, y: np.ndarray) -> np.ndarray:
        """``log(y)`` where ``target_scale="log"`` (``y`` checked positive), else ``y``."""
        if self.target_scale != "log":
            return y
        bad = ~(y > 0)
        if bad.any():
            raise ValueError(
                f"target_scale='log' needs a positive target, but {int(bad.sum())} value"
                f"{'s are' if bad.sum() > 1 else ' is'} zero or negative (the smallest "
                f"{float(np.min(y)):.4g}): use target_scale='linear', or shift y."
            )
        return np.log(y)

    def _encode_target(self, y):
        y = self._log_target(np.asarray(y, dtype=np.float64))
        with np.errstate(over="ignore", under="ignore"):
            mean, sd, spread = float(y.mean()), float(y.std()), float(np.ptp(y))
        # the model sees the target standardised: a scale that overflows (|y| ~ 1e155
        # and beyond) or underflows to 0 (|y| ~ 1e-160) would give inf or meaningless
        # predictions rather than an error
        if not (np.isfinite(mean) and np.isfinite(sd)) or (sd == 0 and spread > 0):
            raise ValueError(
                f"y cannot be standardised in float64 (mean {mean:.3g}, sd {sd:.3g}, "
                f"range {spread:.3g}): rescale it to ordinary magnitudes first (e.g. "
                "divide by a power of ten), and scale the predictions back."
            )
        kwargs = self._set_target_scaling(mean, sd)
        return (y - self.y_mean_) / self.y_scale_, kwargs

    def _set_target_scaling(self, mean: float, sd: float) -> dict:
        """Store the target's standardisation; returns the model's likelihood options."""
        self.y_mean_ = mean
        self.y_scale_ = sd if sd > 0 else 1.0
        return {
            "likelihood": "normal",
            "heteroscedastic": bool(self.heteroscedastic),
            "noise_scale": self.noise_scale,
        }

    def _model_target(self, y):
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("y must be numbers for a regressor.") from None
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity.")
        log_jacobian = float(np.log(self.y_scale_))
        if self.target_scale == "log":  # the density of y = exp(z): p(z) / y
            y = self._log_target(y)
            log_jacobian = log_jacobian + y
        return (y - self.y_mean_) / self.y_scale_, log_jacobian

    def _fit_streamed(self, X, y, groups, use_evidence):
        if self.target_scale == "log":
            raise ValueError(
                "target_scale='log' is not available for dask data yet: "
                "stream log(y) with target_scale='linear' instead."
            )
        self.nuts_run_ = None  # streamed fits are minibatch ADVI
        return super()._fit_streamed(X, y, groups, use_evidence)

    def _run_settings(self, warn: bool) -> dict:
        """The short run of ``inference="auto"``'s NUTS (:data:`AUTO_NUTS_TUNE`, ...),
        its diagnostics kept without a warning, its chains in threads (numpyro shows no
        bar for them: the fit's stages say what runs); else the estimator's own."""
        run = getattr(self, "nuts_run_", None)
        if self.inference_ == "nuts" and run is not None and run["chosen"] == "auto":
            return {
                "draws": run["draws"],
                "tune": run["tune"],
                "chains": run["chains"],
                "warn": False,
                "progressbar": False,
            }
        return super()._run_settings(warn)

    def _laplace_unsupported(self, *, streamed: bool, grouped: bool) -> str | None:
        """Also a heteroscedastic network and a weighted KL term (Laplace's evidence
        replaces the ELBO)."""
        if self.heteroscedastic:
            return "heteroscedastic=True"
        why = super()._laplace_unsupported(streamed=streamed, grouped=grouped)
        if why is None and self.kl_weight not in (1, 1.0):
            why = f"kl_weight={self.kl_weight!r}"
        return why

    def _laplace_spec(self, X, target_kwargs) -> NetworkSpec:
        """The network :meth:`_fit_laplace` fits: one Normal output."""
        return NetworkSpec(
            n_features=X.shape[1],
            hidden_layer_sizes=self._hidden_tuple(),
            n_classes=0,
            activation=self.activation,
            prior_sigma=1.0,
            n_rows=X.shape[0],
            batch_size=None,
            likelihood="normal",
            noise_scale=target_kwargs["noise_scale"],
        )

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
        if self.target_scale == "log":
            return self._log_normal_moments(X, codes)
        moments = self.predictive_.normal_summary(X, codes)
        out = {k: v * self.y_scale_ for k, v in moments.items()}
        out["mean"] = out["mean"] + self.y_mean_
        return out

    def _log_normal_moments(self, X, codes) -> dict[str, np.ndarray]:
        """:meth:`predict_uncertainty` of a log-scale model: each draw's noise is
        log-normal in ``y``, so its conditional mean is ``exp(mu + sd^2 / 2)`` and its
        variance ``(exp(sd^2) - 1) exp(2 mu + sd^2)``; the law of total variance splits
        the mixture's variance into the spread of those means and their mean noise.
        Rows go in blocks, so that the (draws x rows) arrays stay small."""
        parts = []
        for start in range(0, X.shape[0], self._LOG_MOMENT_ROWS):
            rows = slice(start, start + self._LOG_MOMENT_ROWS)
            mean, sd = self.predictive_.sample_normal(
                X[rows], None if codes is None else codes[rows]
            )
            mu = mean * self.y_scale_ + self.y_mean_
            var = np.broadcast_to(sd * self.y_scale_, mu.shape) ** 2
            with np.errstate(over="ignore"):
                conditional_mean = np.exp(mu + var / 2)
                noise_var = np.expm1(var) * np.exp(2 * mu + var)
            parts.append(
                (
                    conditional_mean.mean(axis=0),
                    conditional_mean.std(axis=0),
                    np.sqrt(noise_var.mean(axis=0)),
                )
            )
        mean, epistemic, aleatoric = (np.concatenate(p) for p in zip(*parts))
        return {
            "mean": mean,
            "std": np.hypot(epistemic, aleatoric),
            "epistemic_std": epistemic,
            "aleatoric_std": aleatoric,
        }

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
        if self.target_scale == "log":  # quantiles of exp(z) are exp of z's quantiles
            lower, upper = np.exp(lower), np.exp(upper)
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
        draws = (mean[pick] + sd[pick] * noise) * self.y_scale_ + self.y_mean_
        return (np.exp(draws) if self.target_scale == "log" else draws).T
