"""Choose the posterior temperature of a variational fit by cross-fitting.

Why: with the fixed Normal(0, 1) prior and mean-field ADVI, the posterior's spread on
clean data is too wide: the draws disagree, so the averaged predictive is
*under-confident* (wine: mean top-class probability 0.90 at 98% accuracy). The
literature calls it the cold-posterior effect (Wenzel et al. 2020) and fixes it by
tempering, ``p(theta | D)**(1/T)`` with ``T < 1``, with ``T`` chosen on held-out data.
On noisy labels the same data-driven choice keeps ``T`` near (or above) 1.

How: the training rows are split into ``n_splits`` stratified folds; a network of
the same settings is fit on each fold's complement, its approximation is tempered to
every ``T`` of a fixed grid (:func:`pymc_bnn.predictive.tempered`: the spread around
the mean scaled by ``sqrt(T)``, common random numbers across ``T``), and the
held-out negative log predictive density of every ``T`` is summed over folds. The
``T`` with the smallest held-out NLL is used for the final fit's predictions. This
is a plain function of a "fit on these rows" callback, so it serves both
estimators; ``research/notes/calibration-log.md`` holds the evidence for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pymc_bnn.inference import fit_concurrently
from pymc_bnn.policy.thresholds import MAX_SCORE_ROWS, MIXTURE_WEIGHTS, SCORE_DRAWS, TEMPERATURES
from pymc_bnn.predictive._forward import static_shapes
from pymc_bnn.predictive._predictive import (
    PosteriorPredictive,
    mean_proba_nll,
    mixture_nll,
    posterior_predictive,
)

__all__ = [
    "temperature_folds",
    "MIXTURE_WEIGHTS",
    "TEMPERATURES",
    "FoldScores",
    "TemperatureSelection",
    "choose_mixture_temperatures",
    "choose_temperature",
    "cross_fit_temperature",
    "fold_tasks",
    "heldout_nll",
    "heldout_nll_table",
    "heldout_scores",
    "mixed_nll",
]


@dataclass(frozen=True)
class TemperatureSelection:
    """Result of :func:`cross_fit_temperature`.

    Attributes
    ----------
    temperature : float
        The chosen temperature (smallest held-out NLL; ties go to the one nearest 1).
    temperatures : tuple of float
        The grid that was scored.
    scores : ndarray of shape (n_temperatures,)
        Mean held-out negative log predictive density per temperature (nats per row).
    n_splits : int
        Number of folds.
    """

    temperature: float
    temperatures: tuple
    scores: np.ndarray
    n_splits: int

    def as_dict(self) -> dict:
        """Plain-data form (JSON-able), e.g. for persistence."""
        return {
            "temperature": self.temperature,
            "temperatures": list(self.temperatures),
            "scores": [float(s) for s in self.scores],
            "n_splits": self.n_splits,
        }


def heldout_nll(
    predictive: PosteriorPredictive, X: np.ndarray, y: np.ndarray, groups=None
) -> np.ndarray:
    """Negative log posterior predictive density of each held-out row.

    Classification: ``-log mean_s p_s(y_i | x_i)`` with ``y`` integer class codes.
    Regression: ``-log mean_s N(y_i | mu_s(x_i), sigma_s(x_i)^2)`` (the predictive
    mixture), ``y`` in the model's (standardised) units.

    Returns
    -------
    ndarray of shape (n_rows,)
    """
    return -predictive.log_density(X, y, groups)


def cross_fit_temperature(
    fit_rows: Callable[[np.ndarray, int], object],
    X: np.ndarray,
    y: np.ndarray,
    *,
    folds: list[tuple[np.ndarray, np.ndarray]],
    seed: int,
    groups=None,
    temperatures=TEMPERATURES,
) -> TemperatureSelection:
    """Choose a posterior temperature by held-out predictive density over folds.

    Parameters
    ----------
    fit_rows : callable ``(train_rows, seed) -> Posterior``
        Fits a variational posterior on the given rows of ``X`` / ``y`` with the
        caller's settings. The folds' fits (each followed by its scoring,
        :func:`heldout_scores`) run at the same time
        (:func:`pymc_bnn.inference.fit_concurrently`).
    X : array of shape (n_rows, n_features)
    y : array of shape (n_rows,)
        Model targets (class codes, or standardised regression targets).
    folds : list of (train_rows, test_rows)
        E.g. from ``StratifiedKFold.split``.
    seed : int
        Seeds the fold fits (``seed + k``) and their scoring draws.
    groups : int array of shape (n_rows,), optional
        Group codes of a hierarchical network.
    temperatures : sequence of float
        Candidate temperatures.

    Returns
    -------
    TemperatureSelection

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_bnn import build_model, fit
    >>> from sklearn.model_selection import StratifiedKFold
    >>> X = np.random.default_rng(0).normal(size=(60, 2)); y = (X[:, 0] > 0).astype(int)
    >>> fit_rows = lambda rows, s: fit(build_model(X[rows], y[rows], hidden_layer_sizes=(3,),
    ...                                            random_state=s), n_iter=3000, random_seed=s)
    >>> folds = list(StratifiedKFold(2).split(X, y))
    >>> sel = cross_fit_temperature(fit_rows, X, y, folds=folds, seed=0)
    >>> sel.scores.shape
    (13,)
    """
    tasks = fold_tasks(
        fit_rows, X, y, folds=folds, seed=seed, groups=groups, temperatures=temperatures
    )
    return choose_temperature(fit_concurrently(tasks), X.shape[0], temperatures)


def fold_tasks(
    fit_rows,
    X,
    y,
    *,
    folds,
    seed: int,
    groups=None,
    temperatures=TEMPERATURES,
    per_row: bool = False,
) -> list:
    """The folds of :func:`cross_fit_temperature` as tasks for
    :func:`pymc_bnn.inference.fit_concurrently` (arguments as there).

    Returns
    -------
    list of callables ``() -> ndarray of shape (n_temperatures,)``
        Task ``k``: ``fit_rows(train_k, seed + k)``, then its :func:`heldout_scores`
        on the rows ``test_k`` (scoring draws seeded ``seed + k``). With ``per_row``
        the task returns the rows' scores, a :class:`FoldScores` (``.sums()`` is the
        array above): fits of two methods on the same folds can then be compared, or
        mixed, row by row.
    """
    return [
        functools.partial(
            _fit_and_score,
            fit_rows,
            train,
            test,
            X,
            y,
            seed=seed + k,
            groups=groups,
            temperatures=temperatures,
            per_row=per_row,
        )
        for k, (train, test) in enumerate(folds)
    ]


@dataclass(frozen=True)
class FoldScores:
    """The held-out scores of one fold's fit, row by row (``fold_tasks(per_row=True)``).

    Attributes
    ----------
    nll : ndarray of shape (n_temperatures, n_scored_rows)
        :func:`heldout_nll_table` of the fold's scored rows (:data:`MAX_SCORE_ROWS` at
        most, a seeded subset of a larger fold: the same rows for every fit of that
        fold and seed).
    scale : float
        Held-out rows of the fold per scored row (1.0 unless subsetted).
    """

    nll: np.ndarray
    scale: float

    def sums(self) -> np.ndarray:
        """The fold's summed held-out NLL per temperature, scaled to all its rows
        (:func:`heldout_scores` times :attr:`scale`)."""
        return self.scale * np.array([row.sum() for row in self.nll])


def _scored_rows(test: np.ndarray, seed: int) -> np.ndarray:
    """The held-out rows scored: all of ``test``, or a seeded sorted subset of
    :data:`MAX_SCORE_ROWS` of them."""
    if len(test) <= MAX_SCORE_ROWS:
        return test
    return np.sort(np.random.default_rng(seed).choice(test, MAX_SCORE_ROWS, replace=False))


def _fit_and_score(fit_rows, train, test, X, y, *, seed, groups, temperatures, per_row=False):
    posterior = fit_rows(train, seed)
    rows = _scored_rows(test, seed)
    g = None if groups is None else groups[rows]
    table = heldout_nll_table(
        posterior, X[rows], y[rows], seed=seed, groups=g, temperatures=temperatures
    )
    scores = FoldScores(nll=table, scale=len(test) / len(rows))
    return scores if per_row else scores.sums()


def heldout_scores(
    posterior, X: np.ndarray, y: np.ndarray, *, seed: int, groups=None, temperatures=TEMPERATURES
) -> np.ndarray:
    """Summed held-out negative log predictive density of one fold at each temperature.

    Returns
    -------
    ndarray of shape (n_temperatures,)
        ``heldout_nll(...).sum()`` per temperature (nats): the rows of
        :func:`heldout_nll_table` summed.
    """
    table = heldout_nll_table(posterior, X, y, seed=seed, groups=groups, temperatures=temperatures)
    return FoldScores(nll=table, scale=1.0).sums()


def heldout_nll_table(
    posterior, X: np.ndarray, y: np.ndarray, *, seed: int, groups=None, temperatures=TEMPERATURES
) -> np.ndarray:
    """Held-out negative log predictive density of each row at each temperature.

    ``posterior`` was fit without the rows ``X`` / ``y``; ``SCORE_DRAWS`` draws seeded
    ``seed`` at every temperature (common random numbers across ``T``). The draws of
    several temperatures go through the network together (:func:`_score_batches`):
    one compiled call per chunk of rows instead of one per temperature, each sized
    for its draws rather than padded to a chunk sized for ``SCORE_DRAWS`` (equal to
    scoring each temperature on its own up to float32 rounding; tested).

    Returns
    -------
    ndarray of shape (n_temperatures, n_rows)
        ``heldout_nll(...)`` per temperature (nats).
    """
    temperatures = [float(t) for t in temperatures]
    rows = []
    for batch in _score_batches(posterior.spec, len(temperatures)):
        parts = [
            posterior_predictive(
                posterior, n_draws=SCORE_DRAWS, random_seed=seed, temperature=temperatures[i]
            )
            for i in batch
        ]
        rows.extend(_stacked_heldout_nll(parts, X, y, groups))
    return np.array(rows).reshape(len(temperatures), X.shape[0])


#: Bound on the weight draws (float64 bytes) scored in one batch of temperatures.
SCORE_BATCH_BYTES = 64 * 2**20


def _score_batches(spec, n_temperatures: int) -> list[range]:
    """Temperatures scored together, in batches of (nearly) equal size.

    Only where the predictive is one fused loop over small layers (fan-ins up to
    ``predictive.UNROLL_MAX``): there a chunk of rows is sized for the number of
    draws (2,621 binary rows for ``SCORE_DRAWS``), so a fold's few hundred held-out
    rows, scored one temperature at a time, were mostly padding (moons: 13 calls of
    2,621 rows for 233 rows; batched, 2 calls of 201 rows, ~6x faster). Batches
    hold as many temperatures as keep their weight draws within
    :data:`SCORE_BATCH_BYTES`. Elsewhere a chunk's rows shrink as its draws grow, so
    batching would only trade rows for draws: one temperature at a time.
    """
    if static_shapes(spec) is None:
        return [range(i, i + 1) for i in range(n_temperatures)]
    per_draw = 8 * sum(a * b + b for a, b in spec.layer_shapes)
    most = max(1, SCORE_BATCH_BYTES // (SCORE_DRAWS * per_draw))
    n_batches = -(-n_temperatures // most)
    size = -(-n_temperatures // n_batches)
    return [range(i, min(i + size, n_temperatures)) for i in range(0, n_temperatures, size)]


def _stacked_heldout_nll(
    parts: Sequence[PosteriorPredictive], X: np.ndarray, y: np.ndarray, groups=None
) -> list[np.ndarray]:
    """``[heldout_nll(p, X, y, groups) for p in parts]`` (predictives of one network,
    the same number of draws each) through one predictive holding all their draws,
    a chunk of rows at a time (memory stays bounded by the predictive's chunk)."""
    first = parts[0]
    if len(parts) == 1:
        return [heldout_nll(first, X, y, groups)]
    stacked = PosteriorPredictive(
        spec=first.spec,
        weights=tuple(
            (
                np.concatenate([p.weights[i][0] for p in parts]),
                np.concatenate([p.weights[i][1] for p in parts]),
            )
            for i in range(len(first.weights))
        ),
        noise=None if first.noise is None else np.concatenate([p.noise for p in parts]),
        linearized_at=first.linearized_at,
    )  # one posterior: the same point for all
    k, s = len(parts), first.n_draws
    step = stacked._chunk_rows()
    out = np.empty((k, X.shape[0]))
    for start in range(0, X.shape[0], step):
        rows = slice(start, start + step)
        g = None if groups is None else groups[rows]
        if stacked.spec.is_regression:
            mean, sd = stacked.sample_normal(X[rows], g)
            out[:, rows] = mixture_nll(
                mean.reshape(k, s, -1), sd.reshape(k, s, -1), y[rows], axis=1
            )
        else:
            proba = stacked.sample_proba(X[rows], g)
            out[:, rows] = mean_proba_nll(
                proba.reshape(k, s, *proba.shape[1:]).mean(axis=1), y[rows]
            )
    return list(out)


def choose_temperature(
    fold_scores: Sequence[np.ndarray], n_rows: int, temperatures=TEMPERATURES
) -> TemperatureSelection:
    """The temperature with the smallest held-out NLL summed over folds.

    Parameters
    ----------
    fold_scores : sequence of ndarray of shape (n_temperatures,) or of FoldScores
        :func:`heldout_scores` of each fold (or its rows' scores).
    n_rows : int
        Rows held out over all folds (the scores are reported per row).

    Returns
    -------
    TemperatureSelection
        Ties (within 1e-9 nats per row) go to the temperature nearest 1 (least tempering).
    """
    temperatures = tuple(float(t) for t in temperatures)
    fold_scores = [f.sums() if isinstance(f, FoldScores) else f for f in fold_scores]
    scores = np.sum(fold_scores, axis=0) / n_rows
    best = scores.min()
    near = [i for i, s in enumerate(scores) if s <= best + 1e-9]
    choice = min(near, key=lambda i: abs(np.log(temperatures[i])))
    return TemperatureSelection(
        temperature=temperatures[choice],
        temperatures=temperatures,
        scores=scores,
        n_splits=len(fold_scores),
    )


def choose_mixture_temperatures(
    first: Sequence[FoldScores],
    second: Sequence[FoldScores],
    n_rows: int,
    temperatures=TEMPERATURES,
    *,
    weights=(0.5,),
) -> tuple:
    """The pair of temperatures, and the second fit's share of the draws, at which the
    mixture of two fits' predictives predicts the held-out folds best.

    A row's mixture density is ``(1 - w) p_first + w p_second``, so its NLL is
    ``-logaddexp(log(1 - w) - a, log(w) - b)`` for the fits' NLLs ``a`` and ``b`` of
    that row (:func:`mixed_nll`). Every weight and pair of the grid is scored. Why the
    temperatures jointly: each fit's own best temperature makes it alone as confident
    as the folds allow; their average is then less confident than either where they
    disagree (digits: mean confidence 0.947 at accuracy 0.971,
    ``research/notes/calibration-log.md``), so the mixture, which is what predicts,
    is what the temperatures are chosen for. The weight with them: stacking (Yao,
    Vehtari, Simpson & Gelman 2018), as the linear part's share is
    (:mod:`pymc_bnn.predictive._linear`).

    Parameters
    ----------
    first, second : sequence of FoldScores
        ``fold_tasks(..., per_row=True)`` results of the two fits, fold by fold, on
        the same folds and seed (so the same scored rows), on the grid ``temperatures``.
    n_rows : int
        Rows held out over all folds (the scores are reported per row).
    weights : sequence of float in (0, 1)
        The second fit's shares tried (``(0.5,)``: the equal mixture).

    Returns
    -------
    (first_selection, second_selection, weight) : tuple
        The chosen pair's temperatures (TemperatureSelection); each one's ``scores``
        are the mixture's held-out NLL per row over its own grid, the other fit held at
        its chosen temperature and the chosen weight; and the second fit's chosen share
        (float). Ties (within 1e-9 nats per row) go to the weight nearest 0.5, then to
        the pair nearest (1, 1).
    """
    temperatures = tuple(float(t) for t in temperatures)
    weights = tuple(float(w) for w in weights)
    if not all(0.0 < w < 1.0 for w in weights):
        raise ValueError(f"a mixture's weights must lie strictly between 0 and 1; got {weights}")
    total = 0.0
    for a, b in _same_rows(first, second):
        total = total + a.scale * np.stack(
            [mixed_nll(a.nll[:, None, :], b.nll[None, :, :], w).sum(axis=2) for w in weights]
        )
    scores = total / n_rows
    log_t = np.abs(np.log(temperatures))
    near = np.argwhere(scores <= scores.min() + 1e-9)
    k, i, j = min(
        near.tolist(), key=lambda kij: (abs(weights[kij[0]] - 0.5), log_t[kij[1]] + log_t[kij[2]])
    )
    n_splits = len(first)
    return (
        TemperatureSelection(temperatures[i], temperatures, scores[k, :, j], n_splits),
        TemperatureSelection(temperatures[j], temperatures, scores[k, i, :], n_splits),
        weights[k],
    )


def mixed_nll(a: np.ndarray, b: np.ndarray, weight: float = 0.5) -> np.ndarray:
    """NLL of the mixture of two predictives whose NLLs (of the same rows) are ``a`` and
    ``b``, the second's share ``weight``: ``-log((1 - w) exp(-a) + w exp(-b))``."""
    return -np.logaddexp(np.log1p(-weight) - a, np.log(weight) - b)


def _same_rows(first: Sequence[FoldScores], second: Sequence[FoldScores]):
    """The two fits' scores fold by fold, checked to be of the same rows."""
    for a, b in zip(first, second, strict=True):
        if a.nll.shape[1] != b.nll.shape[1] or a.scale != b.scale:
            raise ValueError("the two fits' folds were scored on different rows")
        yield a, b


def temperature_folds(task: str, y_model: np.ndarray, seed: int, n_folds: int = 3):
    """The folds of the cross-fitted temperature, as ``(train, held-out)`` index pairs,
    or None where too few rows (of the rarest class) can be held out: stratified by
    class for classification (``y_model`` the class codes), plain shuffled folds for
    regression."""
    from sklearn.model_selection import KFold, StratifiedKFold

    rows = np.zeros(len(y_model))
    if task == "classification":
        n_splits = min(n_folds, int(np.bincount(y_model).min()))
        if n_splits < 2:
            return None
        return list(StratifiedKFold(n_splits, shuffle=True, random_state=seed).split(rows, y_model))
    if len(y_model) < 2 * n_folds:
        return None
    return list(KFold(n_folds, shuffle=True, random_state=seed).split(rows))
