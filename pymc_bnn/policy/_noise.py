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
fraction of the value). All are first fit by a cheap screen (:data:`SCREEN`), which
decides between constant noise and the log scale (they differ only in the target's
scale and share every setting). Varying noise is fit by ADVI, where constant noise
gets the short NUTS run or the mixture of Laplace approximations, and a screen
favours it wherever ADVI explains as noise what it cannot fit: where the screen
prefers it, the choice is confirmed by fitting it and the kept scale as the
estimator fits them (on concrete and yacht the screen chose varying noise, whose
ADVI fit then lost to the short NUTS run). The measurements behind the rule are in
``research/notes/noise-choice.md``.

Examples
--------
>>> from pymc_bnn.policy._noise import noise_candidates
>>> noise_candidates([1.0, 2.0, 2.5, 3.0, 40.0])
('constant', 'varying', 'log')
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from pymc_bnn._runtime.progress import FitProgress
from pymc_bnn.policy.thresholds import HELD_OUT_FRACTION, LOG_SKEWNESS, MARGIN_SE, MIN_HELD_OUT

__all__ = ["NOISE_MODELS", "NoiseChoice", "choose_noise", "noise_candidates", "noise_line"]

#: The regressor parameters of each noise model.
NOISE_MODELS = MappingProxyType(
    {
        "constant": MappingProxyType({"heteroscedastic": False, "target_scale": "linear"}),
        "varying": MappingProxyType({"heteroscedastic": True, "target_scale": "linear"}),
        "log": MappingProxyType({"heteroscedastic": False, "target_scale": "log"}),
    }
)
#: Each noise model in a few plain words.
NOISE_WORDS = MappingProxyType(
    {
        "constant": "one sd for all rows",
        "varying": "its sd a function of the features",
        "log": "a fraction of the value, y on the log scale",
    }
)
#: The settings of the screen's fits: plain ADVI, untempered. On the wage table and five
#: other tables it ranked constant noise and the log scale as fits with the estimator's
#: own settings did, at a fifth to a tenth of their time
#: (``research/notes/noise-choice.md``).
SCREEN = MappingProxyType(
    {"inference": "advi", "posterior_temperature": 1.0, "kl_weight": 1.0, "n_init": 1}
)


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
        Each comparison: ``"models"`` (each one's mean log predictive density per
        held-out row, nats in the units of ``y``; higher is better), ``"fits"``
        (``"screen"``: :data:`SCREEN`; ``"as set"``: the estimator's settings) and
        ``"kept"``.
    gain : float or None
        How much better ``chosen`` predicted the held-out rows (per row) than the model
        it replaced, in the comparison that decided; None for constant noise.
    n_held_out : int
        Rows held out (0 where nothing was compared: too few rows, or the model given).
    reason : str
        Why ``chosen`` was kept, in a few words.
    """

    chosen: str
    rounds: tuple = ()
    gain: float | None = None
    n_held_out: int = 0
    reason: str = ""

    def __post_init__(self):  # read-only, also when built from a model file's lists
        rounds = tuple(
            MappingProxyType({**r, "models": MappingProxyType(dict(r["models"]))})
            for r in self.rounds
        )
        object.__setattr__(self, "rounds", rounds)

    @property
    def params(self) -> MappingProxyType:
        return NOISE_MODELS[self.chosen]

    def as_dict(self) -> dict:
        """Plain types, for JSON (a model file's metadata)."""
        return {
            "chosen": self.chosen,
            "gain": self.gain,
            "n_held_out": self.n_held_out,
            "reason": self.reason,
            "rounds": [{**r, "models": dict(r["models"])} for r in self.rounds],
        }


def noise_candidates(y) -> tuple[str, ...]:
    """The noise models worth trying for the target ``y``: constant and varying noise,
    and the log scale where ``y`` is positive and right-skewed (:data:`LOG_SKEWNESS`)."""
    from scipy.stats import skew

    y = np.asarray(y, dtype=np.float64)
    out = ("constant", "varying")
    if y.size > 2 and np.all(y > 0) and np.ptp(y) > 0 and skew(y) > LOG_SKEWNESS:
        out += ("log",)
    return out


def choose_noise(
    estimator, X, y, *, groups=None, candidates=None, random_state=0, screen=SCREEN
) -> NoiseChoice:
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
        Settings of the screen's fits; None: the estimator's own (no confirmation
        round then).

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
    if set(candidates) <= {"constant"}:
        return NoiseChoice("constant", reason="the only candidate")
    if len(y) < 2 * n_held_out:
        return NoiseChoice(
            "constant",
            reason=f"too few rows to compare noise models ({len(y)}; {2 * MIN_HELD_OUT} needed)",
        )
    order = np.random.default_rng(random_state).permutation(len(y))
    rows = {"held": order[:n_held_out], "kept": order[n_held_out:]}
    names = ["constant", *(c for c in ("log", "varying") if c in candidates)]
    with FitProgress(enabled=bool(getattr(estimator, "progressbar", False))) as progress:
        with progress.stage(
            f"comparing noise models ({', '.join(names)}) on {n_held_out} held-out rows",
            fits=len(names),
        ):
            density = {
                name: _held_out_density(estimator, name, screen, X, y, groups, rows, progress)
                for name in names
            }
        # the scale: the log scale where clearly better than constant noise
        scale = (
            "log"
            if "log" in density and _better(density["log"], density["constant"])
            else "constant"
        )
        kept = (
            "varying"
            if "varying" in density and _better(density["varying"], density[scale])
            else scale
        )
        rounds = [
            {
                "models": {n: float(d.mean()) for n, d in density.items()},
                "fits": "as set" if screen is None else "screen",
                "kept": kept,
            }
        ]
        if kept == "varying" and screen is not None:
            # a screen favours varying noise where ADVI fits the mean poorly: confirmed
            # by the fits the user would get
            with progress.stage(f"confirming varying noise against {scale} noise, as fit", fits=2):
                density = {
                    name: _held_out_density(estimator, name, None, X, y, groups, rows, progress)
                    for name in (scale, "varying")
                }
            kept = "varying" if _better(density["varying"], density[scale]) else scale
            rounds.append(
                {
                    "models": {n: float(d.mean()) for n, d in density.items()},
                    "fits": "as set",
                    "kept": kept,
                }
            )
    # the gain that decided: over the model the kept one replaced, where it was compared
    replaced = {"constant": None, "log": "constant", "varying": scale}[kept]
    gain = (
        None
        if replaced is None
        else next(
            r["models"][kept] - r["models"][replaced]
            for r in reversed(rounds)
            if kept in r["models"] and replaced in r["models"]
        )
    )
    reason = (
        "clearly better on held-out rows"
        if kept != "constant"
        else "no other noise model clearly better on held-out rows"
    )
    return NoiseChoice(kept, tuple(rounds), gain, n_held_out, reason)


def _better(challenger: np.ndarray, baseline: np.ndarray) -> bool:
    """Whether ``challenger``'s held-out log densities beat ``baseline``'s by more than
    :data:`MARGIN_SE` standard errors of the per-row difference."""
    difference = challenger - baseline
    error = np.std(difference, ddof=1) / np.sqrt(difference.size)
    return bool(difference.mean() > MARGIN_SE * error)


def _gain(challenger: np.ndarray, baseline: np.ndarray) -> float:
    return float(np.mean(challenger - baseline))


def _held_out_density(estimator, name, settings, X, y, groups, rows, progress) -> np.ndarray:
    """Log predictive density of the held-out rows under ``estimator`` with the noise
    model ``name`` (and ``settings``), fit on the other rows, silently: a comparison's
    fit, not the model kept."""
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    from pymc_bnn.exceptions import SamplingWarning

    held, kept = rows["held"], rows["kept"]
    model = clone(estimator).set_params(**NOISE_MODELS[name], **(settings or {}), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", SamplingWarning)
        model.fit(X[kept], y[kept], groups=None if groups is None else groups[kept])
    progress.fit_done()
    return np.asarray(
        model.log_predictive_density(
            X[held], y[held], groups=None if groups is None else groups[held]
        )
    )


def noise_line(choice: NoiseChoice) -> str:
    """One plain line on the kept noise model, for the command line."""
    how = (
        choice.reason
        if not choice.n_held_out
        else f"held-out log-likelihood {choice.gain:+.3f} per row"
        if choice.gain is not None
        else "no other noise model clearly better on held-out rows"
    )
    return f"noise: {NOISE_WORDS[choice.chosen]} ({how})"
