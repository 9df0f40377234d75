"""Split conformal prediction on top of a fitted Bayesian estimator: intervals and class
sets whose coverage holds in finite samples, whatever the posterior got wrong.

The posterior says *how* unsure the model is; conformal calibration on rows the model
did not see turns that into a guarantee (Vovk et al. 2005; Angelopoulos & Bates 2021):
for exchangeable calibration and test rows, a set built at ``coverage=1 - alpha``
contains the truth with probability at least ``1 - alpha``. The scores keep the
posterior's shape:

- regression, ``score="normalized"``: ``|y - mean| / sd`` with the posterior predictive
  mean and sd, so the interval ``mean +- q sd`` stays as wide or narrow as the posterior
  says, scaled by one factor ``q`` fit on the calibration rows; ``score="absolute"``:
  ``|y - mean|``, one width for every row;
- classification, ``score="lac"``: ``1 - p(y)`` (the smallest sets on average; Sadinle
  et al. 2019); ``score="aps"``: the posterior mass of the classes more probable than
  ``y`` and a uniform share of ``y``'s own (sets that grow where the posterior is
  spread; Romano et al. 2020; the share is drawn from ``random_state``, so that the
  same rows give the same sets).

``groups`` (Mondrian conformal) calibrate one quantile per group, so that coverage
holds within each group, not only on average over them.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.exceptions import NotFittedError

__all__ = ["ConformalClassifier", "ConformalRegressor", "conformal_quantile"]


def conformal_quantile(scores: np.ndarray, coverage: float) -> float:
    """The finite-sample conformal quantile of calibration ``scores``: the
    ``ceil((n + 1) * coverage)``-th smallest, or infinity where ``n`` is too small for
    that coverage (every set must then be everything).

    Examples
    --------
    >>> conformal_quantile(np.arange(1.0, 10.0), 0.8)  # n = 9: the 8th smallest
    8.0
    >>> conformal_quantile(np.arange(1.0, 4.0), 0.9)  # n = 3 cannot promise 90 %
    inf
    """
    scores = np.sort(np.asarray(scores, dtype=float))
    k = math.ceil((len(scores) + 1) * coverage)
    return float(scores[k - 1]) if k <= len(scores) else math.inf


def _check_coverage(coverage) -> float:
    if not isinstance(coverage, (int, float)) or not 0 < coverage < 1:
        raise ValueError(f"coverage must be a number between 0 and 1, got {coverage!r}.")
    return float(coverage)


def _check_groups(groups, n_rows: int, what: str):
    if groups is None:
        return None
    groups = np.asarray(groups)
    if groups.ndim != 1 or len(groups) != n_rows:
        raise ValueError(
            f"groups must be one label per row of {what} ({n_rows}), got shape {groups.shape}."
        )
    return groups


class _SplitConformal:
    """Calibration shared by the regressor and the classifier: scores of held-out rows,
    by group where groups are given."""

    def __init__(self, estimator, *, score: str):
        self.estimator = estimator
        self.score = score

    def _check_score(self, allowed):
        if self.score not in allowed:
            raise ValueError(f"score must be one of {sorted(allowed)}, got {self.score!r}.")

    def calibrate(self, X, y, groups=None):
        """Score the calibration rows ``(X, y)``, which the estimator must not have been
        fit on; with ``groups``, each group's rows apart (Mondrian conformal).

        Returns
        -------
        self
        """
        scores = np.asarray(self._scores(X, y), dtype=float)
        if not np.all(np.isfinite(scores) | np.isposinf(scores)):
            raise ValueError("the calibration scores contain NaN: check X and y.")
        if len(scores) == 0:
            raise ValueError("calibrate needs at least one row.")
        groups = _check_groups(groups, len(scores), "the calibration rows")
        self.scores_ = scores
        self.groups_ = None if groups is None else groups.copy()
        return self

    def _quantiles(self, coverage: float, n_rows: int, groups) -> np.ndarray:
        """Each prediction row's conformal quantile at ``coverage``."""
        if not hasattr(self, "scores_"):
            raise NotFittedError(f"{type(self).__name__} is not calibrated: call calibrate first.")
        coverage = _check_coverage(coverage)
        if self.groups_ is None:
            if groups is not None:
                raise ValueError(
                    "groups were not given to calibrate; calibrate with groups "
                    "for coverage within each group."
                )
            return np.full(n_rows, conformal_quantile(self.scores_, coverage))
        groups = _check_groups(groups, n_rows, "X")
        if groups is None:
            raise ValueError("this calibration is by group: pass the rows' groups.")
        out = np.empty(n_rows)
        for label in np.unique(groups):
            mask = self.groups_ == label
            if not mask.any():
                raise ValueError(
                    f"no calibration rows of group {np.asarray(label).tolist()!r}: coverage within "
                    "it cannot be promised."
                )
            out[groups == label] = conformal_quantile(self.scores_[mask], coverage)
        return out


class ConformalRegressor(_SplitConformal):
    """Prediction intervals with finite-sample coverage around a fitted regressor's
    posterior predictive (any estimator with ``predict(X, return_std=True)``, e.g.
    :class:`~pymc_bnn.BayesianMLPRegressor` or a pipeline ending in one).

    Parameters
    ----------
    estimator : fitted regressor
        Used as it is: calibration does not refit it.
    score : {"normalized", "absolute"}, default "normalized"
        ``|y - mean| / sd`` (intervals as adaptive as the posterior) or ``|y - mean|``.

    Attributes
    ----------
    scores_ : ndarray of shape (n_calibration,)
    groups_ : ndarray of shape (n_calibration,) or None

    Examples
    --------
    >>> import numpy as np
    >>> class Exact:  # a model whose predictive is the truth: N(x, (1 + x)^2)
    ...     def predict(self, X, return_std=False):
    ...         x = np.asarray(X)[:, 0]
    ...         return (x, 1 + x) if return_std else x
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 2, size=(4000, 1))
    >>> y = X[:, 0] + (1 + X[:, 0]) * rng.normal(size=4000)
    >>> conf = ConformalRegressor(Exact()).calibrate(X[:2000], y[:2000])
    >>> lower, upper = conf.predict_interval(X[2000:], coverage=0.9)
    >>> round(float(np.mean((lower <= y[2000:]) & (y[2000:] <= upper))), 2)
    0.9
    """

    def __init__(self, estimator, *, score: str = "normalized"):
        super().__init__(estimator, score=score)

    def _moments(self, X):
        self._check_score({"normalized", "absolute"})
        mean, sd = self.estimator.predict(X, return_std=True)
        mean, sd = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
        if self.score == "absolute":
            sd = np.ones_like(mean)
        elif np.any(sd <= 0):
            raise ValueError(
                "the estimator predicted a standard deviation <= 0: use score='absolute'."
            )
        return mean, sd

    def _scores(self, X, y):
        mean, sd = self._moments(X)
        y = np.asarray(y, dtype=float).ravel()
        if len(y) != len(mean):
            raise ValueError(f"y has {len(y)} rows, X {len(mean)}.")
        return np.abs(y - mean) / sd

    def predict_interval(self, X, coverage: float = 0.9, groups=None):
        """``(lower, upper)``, arrays of shape (n_samples,): intervals that contain a
        new row's ``y`` with probability at least ``coverage`` (infinite where the
        calibration rows are too few for it)."""
        mean, sd = self._moments(X)
        q = self._quantiles(coverage, len(mean), groups)
        return mean - q * sd, mean + q * sd


class ConformalClassifier(_SplitConformal):
    """Prediction sets with finite-sample coverage from a fitted classifier's posterior
    predictive probabilities (any estimator with ``predict_proba`` and ``classes_``).

    Parameters
    ----------
    estimator : fitted classifier
        Used as it is: calibration does not refit it.
    score : {"lac", "aps"}, default "lac"
        ``1 - p(y)`` (smallest sets) or the mass of the classes more probable than ``y``
        plus a uniform share of ``p(y)`` (sets that follow the posterior's spread).
    random_state : int, default 0
        Seed of APS's uniform shares (one per row).

    Examples
    --------
    >>> import numpy as np
    >>> class Exact:  # a model whose probabilities are the truth
    ...     classes_ = np.array([0, 1, 2])
    ...     def predict_proba(self, X):
    ...         p = np.asarray(X)
    ...         return p / p.sum(axis=1, keepdims=True)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.dirichlet([1, 1, 1], size=4000)
    >>> y = np.array([rng.choice(3, p=p) for p in X])
    >>> conf = ConformalClassifier(Exact(), score="aps").calibrate(X[:2000], y[:2000])
    >>> sets = conf.predict_set(X[2000:], coverage=0.9)
    >>> round(float(sets[np.arange(2000), y[2000:]].mean()), 2)
    0.9
    """

    def __init__(self, estimator, *, score: str = "lac", random_state: int = 0):
        super().__init__(estimator, score=score)
        self.random_state = random_state

    def _class_scores(self, X, stream: int) -> np.ndarray:
        """Every class's score for every row, shape (n_samples, n_classes); ``stream``
        keeps the calibration rows' uniform shares apart from the predicted rows'."""
        self._check_score({"lac", "aps"})
        proba = np.asarray(self.estimator.predict_proba(X), dtype=float)
        if self.score == "lac":
            return 1.0 - proba
        # a stable descending sort: tied classes are ranked by their order in classes_
        order = np.argsort(-proba, axis=1, kind="stable")
        sorted_p = np.take_along_axis(proba, order, axis=1)
        before = np.cumsum(sorted_p, axis=1) - sorted_p
        rng = np.random.default_rng([self.random_state, stream])
        share = rng.uniform(size=(len(proba), 1))
        out = np.empty_like(proba)
        np.put_along_axis(out, order, before + share * sorted_p, axis=1)
        return out

    def _scores(self, X, y):
        classes = np.asarray(self.estimator.classes_)
        y = np.asarray(y).ravel()
        index = np.searchsorted(classes, y)
        index = np.clip(index, 0, len(classes) - 1)
        unknown = classes[index] != y
        if unknown.any():
            raise ValueError(
                f"y holds labels the estimator does not know: "
                f"{sorted(set(y[unknown].tolist()))[:5]}."
            )
        scores = self._class_scores(X, stream=0)
        if len(y) != len(scores):
            raise ValueError(f"y has {len(y)} rows, X {len(scores)}.")
        return scores[np.arange(len(y)), index]

    def predict_set(self, X, coverage: float = 0.9, groups=None) -> np.ndarray:
        """Boolean array of shape (n_samples, n_classes), columns in ``classes_`` order:
        the classes in each row's set, which holds a new row's label with probability at
        least ``coverage``."""
        scores = self._class_scores(X, stream=1)
        q = self._quantiles(coverage, len(scores), groups)
        return scores <= q[:, None]
