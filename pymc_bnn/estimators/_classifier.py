"""The scikit-learn classifier: :class:`BayesianMLPClassifier`."""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets

from pymc_bnn.dask import is_dask_collection
from pymc_bnn.estimators import persistence
from pymc_bnn.estimators._base import BayesianMLPBase
from pymc_bnn.inference import METHODS
from pymc_bnn.policy._settings import LAPLACE_ENSEMBLE, MIXTURE
from pymc_bnn.policy.thresholds import AUTO_MIXTURE_MAX_FLOPS, AUTO_MIXTURE_MAX_ROWS
from pymc_bnn.predictive._composed import composed_idata
from pymc_bnn.predictive._draws import check_n_draws
from pymc_bnn.predictive._linear import predictive_from_idata

__all__ = [
    "AUTO_MIXTURE_MAX_FLOPS",
    "AUTO_MIXTURE_MAX_ROWS",
    "BayesianMLPClassifier",
    "laplace_structure",
    "mixture_affordable",
]


def laplace_structure(shape, hidden: tuple, n_classes: int) -> str | None:
    """What the ADVI + Laplace mixture's Laplace half covers on data of ``shape``
    (rows, features) for a network of ``hidden`` units and ``n_classes`` classes:
    ``"full"``, the whole network, where one Gauss-Newton step of it is within
    :data:`AUTO_MIXTURE_MAX_FLOPS`; else ``"last_layer"``, the output layer (the hidden
    layers a point estimate under the evidence step's scales; :func:`pymc_bnn.inference.laplace.
    fit_laplace` ``hidden_prior_sigmas``) where its step is (``rows x outputs^2 x
    (units + 1)^2``: its curvature's structure); else None. Either way at most
    :data:`AUTO_MIXTURE_MAX_ROWS` rows and :data:`pymc_bnn.inference.laplace.MAX_PARAMS`
    weights (each MAP iteration costs rows x weights, as the full fit's did)."""
    from pymc_bnn.inference.laplace import MAX_PARAMS
    from pymc_bnn.network._flat import n_params

    outputs = 1 if n_classes == 2 else n_classes
    widths = (int(shape[1]), *hidden, outputs)
    P = n_params(tuple(zip(widths[:-1], widths[1:])))
    if shape[0] > AUTO_MIXTURE_MAX_ROWS or P > MAX_PARAMS:
        return None
    if float(shape[0]) * outputs * P**2 + P**3 / 3 <= AUTO_MIXTURE_MAX_FLOPS:
        return "full"
    last = (widths[-2] + 1) * outputs
    if (
        len(widths) > 2
        and float(shape[0]) * outputs**2 * (widths[-2] + 1) ** 2 + last**3 / 3
        <= AUTO_MIXTURE_MAX_FLOPS
    ):
        return "last_layer"
    return None


def mixture_affordable(shape, hidden: tuple, n_classes: int) -> bool:
    """Whether ``inference="auto"`` fits the ADVI + Laplace mixture on data of
    ``shape`` (rows, features) for a network of ``hidden`` units and ``n_classes``
    classes: where :func:`laplace_structure` is not None."""
    return laplace_structure(shape, hidden, n_classes) is not None


class BayesianMLPClassifier(ClassifierMixin, BayesianMLPBase):
    """Bayesian multi-layer perceptron classifier (PyMC).

    Weights and biases carry Normal(0, ``prior_sigma``) priors; the posterior is
    approximated by a mixture of Laplace approximations around several MAP networks (the
    default), mean-field or full-rank ADVI, a Laplace approximation, or sampled by NUTS.
    Predictions average the class
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
        Standard deviation of the weight and bias priors (``prior="normal"``; with
        ``prior="gamma_precision"``, whose precisions set the scales, any value other
        than the default or 1.0 is refused with a ValueError rather than ignored).
        ``"evidence"``: one per layer, chosen before the fit by the marginal likelihood
        of a Laplace approximation around the MAP weights (MacKay's empirical Bayes,
        :func:`pymc_bnn.inference.evidence.evidence_prior_scales`; with more than 20,000 rows, on
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
        Gamma shape and rate of the precisions (``prior="gamma_precision"``; with
        ``prior="normal"`` any value other than 1.0 is refused rather than ignored).
    inference : {"auto", "laplace_ensemble", "advi", "fullrank_advi", "nuts", "laplace", \
"advi+laplace"}, default "auto"
        How the posterior is approximated; ``inference_`` holds the method used.
        ``"auto"``: ``"laplace_ensemble"`` where it applies (no groups, data in memory on
        at most :data:`~pymc_bnn.policy.thresholds.AUTO_ENSEMBLE_MAX_ROWS` rows, the
        Normal prior at its default scale, no setting only variational inference uses),
        NUTS for a hierarchical network, mean-field ADVI otherwise.
        ``"laplace_ensemble"``: five MAP networks, each output layer's Gaussian by an
        evidence-tuned Laplace approximation, their spread chosen on held-out rows, at
        about a deep ensemble's cost (``ensemble_`` records the members).
        ``"laplace"``: the linearised Laplace approximation of one network.
        ``"advi+laplace"``: an equal mixture of the ADVI and Laplace fits (``mixture_``).
        ``"advi"``, ``"fullrank_advi"``, ``"nuts"``: as in :func:`pymc_bnn.fit`.
        How each works, and why ``"auto"`` chooses as it does: ``docs/design.md``, "The
        default policy".
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
        Posterior draws used for prediction (VI, Laplace); draws per chain (NUTS).
        ``"laplace_ensemble"`` at temperature 0 keeps one draw per network (the same
        predictive).
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
        same settings; :func:`pymc_bnn.policy._tempering.cross_fit_temperature`), so one fit
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
        the other in 8 (``research/notes/calibration-log.md``). ``start_losses_``
        holds the starts' final losses. Not for NUTS (its chains start apart).
    random_state : int, RandomState instance or None
        Seeds the initial weights, minibatch order, ADVI noise, NUTS and the
        prediction draws: the same int gives identical predictions on the same machine
        and library versions (with groups, NUTS through nutpie: once PyTensor's
        compile cache is warm; README, limits).
    progressbar : bool, default False
        Report the fit's progress on stderr, stage by stage (the evidence step, the
        ADVI fits with a count of those done, the predictive draws;
        :class:`pymc_bnn._runtime.progress.FitProgress`): one line per stage updated in place
        on a terminal, a line per event elsewhere. NUTS also shows its chains' bar.

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
        For the ADVI + Laplace mixture: the mixture's held-out NLL over the ADVI half's
        temperatures, the Laplace half's held at its chosen one.
    inference_selection_ : dict or None
        Where ``inference="auto"`` weighed the mixture against ADVI alone: ``methods``
        (``["advi+laplace", "advi"]``), the held-out NLL per row of each (``scores``,
        each at its best temperatures), the ``standard_errors`` of their difference
        (one value, from the rows' paired differences) and those ``temperatures``; else
        None.
    mixture_ : dict or None
        ``inference_ == "advi+laplace"``: the halves' ``"methods"`` and ``"n_draws"``
        (``idata_`` holds the ADVI draws first), the Laplace half's
        ``"laplace_temperature"`` (with its ``"laplace_temperature_selection"``, plain
        data), ``"laplace_prior_sigma"`` (its evidence's scales) and
        ``"laplace_diagnostics"`` (its ``"structure"``: ``"full"`` or
        ``"last_layer"``); the other attributes (``posterior_``,
        ``diagnostics_``, ``posterior_temperature_``, ``prior_sigma_``, ...) are the
        ADVI half's. None for one method.
    ensemble_ : dict or None
        ``inference_ == "laplace_ensemble"``: ``"members"``, each one's ``"epochs"`` and
        ``"converged"``, its output layer's ``"output_prior_sigma"`` and
        ``"log_evidence"``, the ``"heldout_rows"`` each held out while the temperature
        was chosen, and the ``"temperature"`` (plain data); None for other methods.
    linear_part_ : dict or None
        Models saved by an earlier version whose ``inference="auto"`` stacked a linear
        part with the network (no fit makes one now): its share
        (``"weight"``) and number (``"n_draws"``) of the draws (``idata_`` holds them
        in its ``linear_part`` group, after the network's), the shares tried
        (``"weights"``) and their held-out NLL per row (``"scores"``; the first is the
        network alone), its ``"temperature"`` (its own best on the folds, with its
        ``"temperature_selection"``) and ``"prior_sigma"`` (its evidence's scale).
        None where the folds gave it no share or it was not fit.
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

    _TASK = "classification"

    _parameter_constraints: dict = {
        **BayesianMLPBase._parameter_constraints,
        "inference": [StrOptions({"auto", *METHODS, "laplace", MIXTURE, LAPLACE_ENSEMBLE})],
    }

    def _laplace_hidden_sigmas(self, shape, target_kwargs):
        """A mixture's Laplace half over the output layer only (:func:`laplace_structure`):
        the hidden layers' prior scales, the ADVI half's (its evidence's); else None."""
        if (
            self.inference_ != MIXTURE
            or laplace_structure(shape, self._hidden_tuple(), int(target_kwargs["n_classes"]))
            != "last_layer"
        ):
            return None
        n_layers = len(self._hidden_tuple()) + 1
        sigmas = np.broadcast_to(
            np.atleast_1d(np.asarray(self.prior_sigma_, dtype=float)), (n_layers,)
        )
        return tuple(float(s) for s in sigmas[:-1])

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
            None: the draws used by ``predict_proba``. VI, in the fitting process:
            otherwise that many fresh draws, seeded from ``random_state``, every part of
            the fit in its share (a mixture's Laplace half, a linear part). NUTS, the
            Laplace approximation alone, or a loaded or unpickled model: that many of
            the stored draws, thinned evenly (each part in its share).
        groups : array-like of shape (n_samples,), optional
            As in :meth:`predict_proba`.

        Returns
        -------
        proba : ndarray of shape (n_draws, n_samples, n_classes)
        """
        X, codes = self._check_X(X, groups)
        if n_draws is None:
            pred = self.predictive_
        elif self.posterior_.is_variational and hasattr(self, "_draw_parts"):
            # the fit's parts (base._set_posterior), each in its share of the k draws
            idata, _ = composed_idata(
                n_draws=check_n_draws(n_draws, allow_none=False),
                random_seed=self._seeds()["predict"],
                **self._draw_parts,
            )
            pred = predictive_from_idata(self.posterior_.spec, idata)
        else:
            pred = predictive_from_idata(self.posterior_.spec, self.idata_, n_draws=n_draws)
        return pred.sample_proba(X, codes)
