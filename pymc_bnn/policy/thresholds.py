"""Every tuned number of the default policy, in one place: what it sets and why, in a line,
with a link to its measurement.

The modules that read a threshold import it by name (``from pymc_bnn.policy.thresholds
import AUTO_NUTS_MAX_WORK``): to try another value in a test or an experiment, patch
it in the module that reads it. The measurements are in ``research/notes/`` and
``benchmarks/results/``; the words of the choices in ``research/notes/choices.md``.
"""

from __future__ import annotations

__all__ = [
    "AUTO_BATCH_SIZE",
    "AUTO_ENSEMBLE_MAX_ROWS",
    "AUTO_MIXTURE_MAX_FLOPS",
    "AUTO_MIXTURE_MAX_ROWS",
    "AUTO_NUTS_CHAINS",
    "AUTO_NUTS_DRAWS",
    "AUTO_NUTS_MAX_CHAINS",
    "AUTO_NUTS_MAX_WORK",
    "AUTO_NUTS_TUNE",
    "ENSEMBLE_MEMBERS",
    "HELD_OUT_FRACTION",
    "KL_WEIGHTS",
    "LAPLACE_STARTS",
    "LAPLACE_STARTS_MIN_WEIGHT",
    "LOG_SKEWNESS",
    "MARGIN_SE",
    "MAX_SCORE_ROWS",
    "MIN_HELD_OUT",
    "MIXTURE_WEIGHTS",
    "NOISE_SCALES",
    "REGRESSION_TEMPERATURES",
    "SCORE_DRAWS",
    "TEMPERATURES",
]

# -- which inference ``inference="auto"`` runs --------------------------------------------

#: Regressor: NUTS (a short run) where training rows x network parameters are at most
#: this: NUTS predicted the small UCI tables far better than the approximations, and this
#: keeps a run below about 40 s on two cores (research/notes/uci_regression.md, "NUTS on
#: the small tables").
AUTO_NUTS_MAX_WORK = 500_000
#: The short run's chains at the limit, warm-up iterations and draws per chain: the draws
#: are a predictive ensemble, not a converged posterior (research/notes/uci_regression.md).
AUTO_NUTS_CHAINS = 2
AUTO_NUTS_TUNE = 100
AUTO_NUTS_DRAWS = 100
#: Chains where that many cost no more than AUTO_NUTS_CHAINS at the limit: chains sit in
#: different modes, and four beat two on 16 of 20 UCI splits; four, not three, since two
#: cores run chains in pairs (research/notes/uci_regression.md, "Four chains ...").
AUTO_NUTS_MAX_CHAINS = 4
#: Classifier (and regressor above its NUTS limit): the most rows the mixture of Laplace
#: approximations is fit on; its MAP epochs grow with the rows where minibatch ADVI's
#: steps do not (research/notes/laplace-ensemble.md).
AUTO_ENSEMBLE_MAX_ROWS = 100_000
#: ADVI + Laplace mixture (``inference="advi+laplace"``): the most floating-point work of
#: one Gauss-Newton step of its Laplace half (rows x outputs x weights^2 + weights^3 / 3);
#: beyond it the half covers the output layer only, so the mixture costs 1.3-2.9x ADVI
#: (benchmarks/results/reference/classifier_mixture_cost.json).
AUTO_MIXTURE_MAX_FLOPS = 1e9
#: The same mixture: the most training rows its Laplace half is fit on (its full-batch
#: MAP fit grows with the rows; ADVI's minibatches do not).
AUTO_MIXTURE_MAX_ROWS = 4096
#: ``batch_size="auto"``: full batches up to this many rows, minibatches of this size
#: beyond: 3-5x faster than full batches on 5,000-10,000-row tables at a held-out NLL
#: within 2 % on most (benchmarks/results/fit_scaling.md).
AUTO_BATCH_SIZE = 1024

# -- the mixture of Laplace approximations ------------------------------------------------

#: MAP fits of the mixture: the size of the deep ensemble it is measured against (five are
#: enough on MNIST-sized problems, Lakshminarayanan et al. 2017), so the two cost the same.
ENSEMBLE_MEMBERS = 5
#: Regressor: temperatures tried on the held-out rows, wider than the classifier's: the
#: output layer's Gaussian holds only part of the uncertainty (research/notes/
#: laplace-ensemble.md, "Regression").
REGRESSION_TEMPERATURES = (0.0, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
#: Regressor: factors of the members' noise variance tried on the held-out rows (the noise
#: fitted with the weights is the training rows' and too small where they are overfit).
NOISE_SCALES = tuple(float(1.2**i) for i in range(13))

# -- the temperature and the variational fits ---------------------------------------------

#: Candidate posterior temperatures: spread factors sqrt(T) roughly log-spaced from 0.03
#: to 1.41 (research/notes/calibration-log.md, "The tempered posterior").
TEMPERATURES = (0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
#: Posterior draws per fold that score the temperatures.
SCORE_DRAWS = 200
#: Held-out rows scored per fold at most (a seeded subset beyond, its sum scaled): the
#: temperatures are compared on the same rows, so the scoring stops growing with the data.
MAX_SCORE_ROWS = 20_000
#: ``kl_weight="auto"`` (regressor): KL weights of the ELBO tried with the temperature; a
#: colder ELBO lets the data shape a wide network (research/notes/uci_regression.md).
KL_WEIGHTS = (1.0, 0.25, 0.0625)
#: The Laplace half's shares of the regressor's ADVI + Laplace mixture tried on the folds:
#: tenths, finer near the ends, where a share's change moves the log score most.
MIXTURE_WEIGHTS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)
#: Laplace fits from their own starts in the regressor's mixture, where the folds give the
#: Laplace half at least LAPLACE_STARTS_MIN_WEIGHT: 0.01-0.06 nats over one mode on the
#: UCI splits (research/notes/uci_regression.md).
LAPLACE_STARTS = 3
LAPLACE_STARTS_MIN_WEIGHT = 0.5

# -- the regressor's noise model (the command line's ``--noise auto``) ---------------------

#: The share of rows held out to score the noise models (research/notes/noise-choice.md).
HELD_OUT_FRACTION = 0.2
#: Fewer held-out rows than this cannot tell noise models apart: constant noise is kept.
MIN_HELD_OUT = 30
#: A positive target is also tried on the log scale above this sample skewness
#: ("moderately skewed" by the usual rule of thumb).
LOG_SKEWNESS = 0.5
#: Standard errors of the paired held-out difference by which a noise model must beat
#: constant noise: a one-sided test at about 2 %, so that noise alone rarely moves it.
MARGIN_SE = 2.0
