"""Choose a regressor's noise model by held-out likelihood.

A network with one noise level gives intervals of one width everywhere; where the
spread of the target grows with its value (wages, prices, durations) they cover the
large values too rarely and the small ones too often. :func:`choose_noise` fits the
candidate noise models on most of the rows and keeps the one whose predictive density
of the rows held out is best, by more than its own noise: constant noise (the
estimator's default) unless another is clearly better.

The candidates (:data:`NOISE_MODELS`): ``"constant"`` (one noise sd), ``"varying"``
(the noise sd a second output of the network, ``heteroscedastic=True``) and, for a
positive, right-skewed target, ``"log"`` (``target_scale="log"``: the noise a
fraction of the value). They are compared in two rounds, so that each comparison is
of what the user would get at the least cost: the log scale against constant noise by
cheap fits (:data:`SCREEN`: the two differ only in the target's scale and share every
setting, so a cheap posterior ranks them), then the better of those against varying
noise, each fit as the estimator fits it (varying noise is fit by ADVI, where constant
noise gets the short NUTS run or the mixture of Laplace approximations: a cheap
screen of both favoured varying noise on tables where the kept fit was worse, because
ADVI explains what it cannot fit as noise). The measurements behind the rule are in
``docs/experiments/noise-choice.md``.

Examples
--------
>>> from pymc_bnn.noise_choice import noise_candidates
>>> noise_candidates([1.0, 2.0, 2.5, 3.0, 40.0])
('constant', 'varying', 'log')
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from pymc_bnn.progress import FitProgress

__all__ = ["NOISE_MODELS", "NoiseChoice", "choose_noise", "noise_candidates", "noise_line"]

#: The regressor parameters of each noise model.
NOISE_MODELS = MappingProxyType({
    "constant": MappingProxyType({"heteroscedastic": False, "target_scale": "linear"}),
    "varying": MappingProxyType({"heteroscedastic": True, "target_scale": "linear"}),
    "log": MappingProxyType({"heteroscedastic": False, "target_scale": "log"}),
})
#: Each noise model in a few plain words.
NOISE_WORDS = MappingProxyType({
    "constant": "one sd for all rows",
    "varying": "its sd a function of the features",
    "log": "a fraction of the value, y on the log scale",
})
#: The share of rows held out to score the candidates (at least MIN_HELD_OUT rows).
HELD_OUT_FRACTION = 0.2
#: Fewer held-out rows than this cannot tell noise models apart: constant noise is kept.
MIN_HELD_OUT = 30
#: A positive target is also tried on the log scale where its sample skewness is above
#: this (0.5: "moderately skewed" by the usual rule of thumb).
LOG_SKEWNESS = 0.5
#: The settings of the first round's fits (constant noise against the log scale): plain
#: ADVI, untempered. On the wage table and five other tables it ranked the two as fits
#: with the estimator's own settings did, at a fifth to a tenth of their time
#: (``docs/experiments/noise-choice.md``).
SCREEN = MappingProxyType({"inference": "advi", "posterior_temperature": 1.0, "kl_weight": 1.0,
                           "n_init": 1})
#: How many standard errors of the paired held-out difference a candidate must beat
#: constant noise by: a one-sided test at about 2 %, so that noise alone rarely moves
#: the default.
MARGIN_SE = 2.0


@dataclass(frozen=True)
class NoiseChoice:
    """What :func:`choose_noise` found.

    Attributes
    ----------
    chosen : str
        A key of :data:`NOISE_MODELS`.
    params : mapping
        The regressor parameters of ``chosen`` (for ``set_params``).
    rounds : tuple of dict
        Each comparison: ``"models"`` (the mean log predictive density per held-out
        row of each, nats in the units of ``y``; higher is better), ``"standard_error"``
        (of the per-row difference of the second from the first), ``"fits"``
        (``"screen"``: :data:`SCREEN`; ``"as set"``: the estimator's settings) and
        ``"kept"``.
    n_held_out : int
        Rows held out (0 where nothing was compared: too few rows, or the model given).
    reason : str
        Why ``chosen`` was kept, in a few words.
    """

    chosen: str
    rounds: tuple = ()
    n_held_out: int = 0
    reason: str = ""

    def __post_init__(self):  # read-only, also when built from a model file's lists
        rounds = tuple(MappingProxyType({**r, "models": MappingProxyType(dict(r["models"]))})
                       for r in self.rounds)
        object.__setattr__(self, "rounds", rounds)

    @property
    def params(self) -> MappingProxyType:
        return NOISE_MODELS[self.chosen]

    @property
    def gain(self) -> float | None:
        """Held-out log-likelihood per row of ``chosen`` over the model it beat (None
        where it beat none)."""
        for r in self.rounds:
            first, second = r["models"]
            if r["kept"] == second == self.chosen:
                return r["models"][second] - r["models"][first]
        return None

    def as_dict(self) -> dict:
        """Plain types, for JSON (a model file's metadata)."""
        return {"chosen": self.chosen, "n_held_out": self.n_held_out, "reason": self.reason,
                "rounds": [{**r, "models": dict(r["models"])} for r in self.rounds]}


def noise_candidates(y) -> tuple[str, ...]:
    """The noise models worth trying for the target ``y``: constant and varying noise,
    and the log scale where ``y`` is positive and right-skewed (:data:`LOG_SKEWNESS`)."""
    from scipy.stats import skew

    y = np.asarray(y, dtype=np.float64)
    out = ("constant", "varying")
    if y.size > 2 and np.all(y > 0) and np.ptp(y) > 0 and skew(y) > LOG_SKEWNESS:
        out += ("log",)
    return out


def choose_noise(estimator, X, y, *, groups=None, candidates=None, random_state=0,
                 screen=SCREEN) -> NoiseChoice:
    """Fit ``estimator`` with each noise model on most rows; keep the best held-out one.

    Parameters
    ----------
    estimator : BayesianMLPRegressor
        Its other settings are kept; it is not fitted or changed (clones are).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    groups : array-like of shape (n_samples,), optional
        Group labels, for a hierarchical regressor.
    candidates : sequence of str, optional
        Keys of :data:`NOISE_MODELS` (default: :func:`noise_candidates`); constant
        noise is always one.
    random_state : int, default 0
        Which rows are held out.
    screen : mapping or None, default :data:`SCREEN`
        Settings of the first round's fits (constant noise against the log scale);
        None: the estimator's own, as in the second round.

    Returns
    -------
    NoiseChoice
        Fit the final model with ``estimator.set_params(**choice.params)`` on all rows.
    """
    X = np.asarray(X)
    y = np.asarray(y, dtype=np.float64)
    groups = None if groups is None else np.asarray(groups)
    candidates = tuple(candidates or noise_candidates(y))
    unknown = [c for c in candidates if c not in NOISE_MODELS]
    if unknown or not candidates:
        raise ValueError(f"candidates must be among {list(NOISE_MODELS)}; got {candidates!r}.")
    n_held_out = max(round(HELD_OUT_FRACTION * len(y)), MIN_HELD_OUT)
    if set(candidates) <= {"constant"} or len(y) < 2 * n_held_out:
        return NoiseChoice("constant", reason=f"too few rows to compare noise models "
                                              f"({len(y)}; {2 * MIN_HELD_OUT} needed)")
    order = np.random.default_rng(random_state).permutation(len(y))
    rows = {"held": order[:n_held_out], "kept": order[n_held_out:]}
    plan = ([("log", screen)] if "log" in candidates else []) + (
        [("varying", None)] if "varying" in candidates else [])
    with FitProgress(enabled=bool(getattr(estimator, "progressbar", False))) as progress, \
            progress.stage(f"comparing noise models ({', '.join(['constant', *dict(plan)])}) "
                           f"on {n_held_out} held-out rows", fits=2 * len(plan)):
        rounds, kept = [], "constant"
        for challenger, settings in plan:
            density = {name: _held_out_density(estimator, name, settings, X, y, groups, rows,
                                               progress) for name in (kept, challenger)}
            difference = density[challenger] - density[kept]
            error = float(np.std(difference, ddof=1) / np.sqrt(n_held_out))
            better = float(difference.mean()) > MARGIN_SE * error
            kept = challenger if better else kept
            rounds.append({"models": {name: float(d.mean()) for name, d in density.items()},
                           "standard_error": error, "kept": kept,
                           "fits": "as set" if settings is None else "screen"})
    reason = ("clearly better on held-out rows" if kept != "constant" else
              "no other noise model clearly better on held-out rows")
    return NoiseChoice(kept, tuple(rounds), n_held_out, reason)


def _held_out_density(estimator, name, settings, X, y, groups, rows, progress) -> np.ndarray:
    """Log predictive density of the held-out rows under ``estimator`` with the noise
    model ``name`` (and ``settings``), fit on the other rows, silently: a comparison's
    fit, not the model kept."""
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    from pymc_bnn.exceptions import SamplingWarning

    held, kept = rows["held"], rows["kept"]
    model = clone(estimator).set_params(**NOISE_MODELS[name], **(settings or {}),
                                        progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", SamplingWarning)
        model.fit(X[kept], y[kept], groups=None if groups is None else groups[kept])
    progress.fit_done()
    return np.asarray(model.log_predictive_density(
        X[held], y[held], groups=None if groups is None else groups[held]))


def noise_line(choice: NoiseChoice) -> str:
    """One plain line on the kept noise model, for the command line."""
    gain = choice.gain
    how = (choice.reason if not choice.n_held_out else
           f"held-out log-likelihood {gain:+.3f} per row" if gain is not None else
           "no other noise model clearly better on held-out rows")
    return f"noise: {NOISE_WORDS[choice.chosen]} ({how})"
