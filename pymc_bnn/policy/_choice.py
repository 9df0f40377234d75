"""What ``inference="auto"`` fits, as plain functions of an estimator's parameters (its
``get_params()``) and the data's size: the one place the choice is made, for the fit and
for :func:`~pymc_bnn.policy.describe`'s account of it.

- The default fits, where they apply: the classifier's mixture of Laplace approximations
  (:data:`~pymc_bnn.policy._settings.LAPLACE_ENSEMBLE`); the regressor's short NUTS run
  on a small table, and the mixture above it.
- What keeps a fit from them (:func:`default_obstacle`): groups, a varying noise sd,
  another prior, a fixed prior scale (classifier), a setting only variational inference
  uses, more rows than the mixture's limit; in words, so that ``describe`` says why.
"""

from __future__ import annotations

from pymc_bnn.policy.thresholds import (
    AUTO_ENSEMBLE_MAX_ROWS,
    AUTO_NUTS_CHAINS,
    AUTO_NUTS_DRAWS,
    AUTO_NUTS_MAX_CHAINS,
    AUTO_NUTS_MAX_WORK,
    AUTO_NUTS_TUNE,
)

__all__ = [
    "DEFAULT_PRIORS",
    "LAPLACE_ENSEMBLE",
    "MIXTURE",
    "auto_inference",
    "auto_nuts_chains",
    "default_obstacle",
    "vi_settings_given",
    "vi_step_settings",
]

#: ``inference`` of the mixture of last-layer Laplace approximations around several MAP
#: fits (:mod:`pymc_bnn.inference._map_ensemble`): the classifier's default.
LAPLACE_ENSEMBLE = "laplace_ensemble"
#: ``inference`` of the mixture of a mean-field ADVI fit and a linearised Laplace fit
#: (``research/notes/calibration-log.md``, ``research/notes/uci_regression.md``).
MIXTURE = "advi+laplace"
#: The prior each task's defaults were measured under.
DEFAULT_PRIORS = {"classification": "normal", "regression": "gamma_precision"}


def vi_step_settings(params: dict) -> dict:
    """The settings of ADVI's steps that were given (``n_iter``, ``learning_rate``,
    ``batch_size`` other than None / ``"auto"``), by name."""
    given = {
        "n_iter": params["n_iter"],
        "learning_rate": params["learning_rate"],
        "batch_size": None if params["batch_size"] == "auto" else params["batch_size"],
    }
    return {name: value for name, value in given.items() if value is not None}


def vi_settings_given(params: dict) -> bool:
    """Whether a setting only variational inference uses was given (``n_iter``,
    ``learning_rate``, ``batch_size``, a ``posterior_temperature`` other than ``"auto"``
    / 1, ``n_init`` > 1): then ``inference="auto"`` is ADVI."""
    return (
        bool(vi_step_settings(params))
        or params["posterior_temperature"] not in ("auto", 1, 1.0)
        or params["n_init"] != 1
    )


def default_obstacle(params: dict, task: str, *, grouped: bool, n_rows: int | None) -> str | None:
    """What keeps ``inference="auto"`` from the default fits (the mixture of Laplace
    approximations; the regressor's short NUTS run too), in words; None where nothing
    does. ``n_rows=None`` leaves the rows out (the NUTS run has a limit of its own)."""
    if grouped:
        return "a hierarchical network (groups=)"
    if params.get("heteroscedastic", False):
        return "heteroscedastic"
    if params["prior"] != DEFAULT_PRIORS[task]:
        return f"prior={params['prior']!r}" if task == "regression" else "Neal's prior"
    if task == "classification" and params["prior_sigma"] not in ("auto", "evidence"):
        return "a fixed prior_sigma"
    if vi_settings_given(params) or params.get("kl_weight", 1.0) not in (1, 1.0):
        return "settings only ADVI uses were given"
    if n_rows is not None and n_rows > AUTO_ENSEMBLE_MAX_ROWS:
        return f"more than {AUTO_ENSEMBLE_MAX_ROWS:,} rows"
    return None


def auto_nuts_chains(work: int) -> int:
    """Chains of the regressor's short NUTS run for ``work`` training rows x network
    parameters (within :data:`~pymc_bnn.policy.thresholds.AUTO_NUTS_MAX_WORK`):
    ``AUTO_NUTS_MAX_CHAINS`` where that many fit the budget of ``AUTO_NUTS_CHAINS`` at
    the limit, else ``AUTO_NUTS_CHAINS``.

    Examples
    --------
    >>> auto_nuts_chains(100_000), auto_nuts_chains(400_000)
    (4, 2)
    """
    if AUTO_NUTS_MAX_CHAINS * work <= AUTO_NUTS_CHAINS * AUTO_NUTS_MAX_WORK:
        return AUTO_NUTS_MAX_CHAINS
    return AUTO_NUTS_CHAINS


def auto_inference(
    params: dict,
    task: str,
    *,
    resolved: str,
    grouped: bool,
    n_rows: int,
    n_params: int,
    nuts_sampler: str,
) -> tuple[str, dict | None]:
    """``inference="auto"`` once the data are known: ``(method, nuts_run)``.

    ``resolved`` is the method chosen before the data were seen (``"advi"``, or NUTS for
    a grouped classifier); ``n_params`` the network's weights and biases;
    ``nuts_sampler`` the NUTS backend that would run. The regressor samples with a short
    NUTS run where rows x parameters are within ``AUTO_NUTS_MAX_WORK`` (numpyro only);
    both tasks fit the mixture of Laplace approximations on at most
    ``AUTO_ENSEMBLE_MAX_ROWS`` rows; else ``resolved``. ``nuts_run`` describes the short
    run (None otherwise).
    """
    if params["inference"] != "auto" or resolved != "advi":
        return resolved, None
    if default_obstacle(params, task, grouped=grouped, n_rows=None) is not None:
        return resolved, None
    work = n_rows * n_params
    if task == "regression" and nuts_sampler == "numpyro" and work <= AUTO_NUTS_MAX_WORK:
        run = {
            "chains": auto_nuts_chains(work),
            "tune": AUTO_NUTS_TUNE,
            "draws": AUTO_NUTS_DRAWS,
            "chosen": "auto",
            "rows_x_parameters": int(work),
            "limit": AUTO_NUTS_MAX_WORK,
        }
        return "nuts", run
    if n_rows <= AUTO_ENSEMBLE_MAX_ROWS:
        return LAPLACE_ENSEMBLE, None
    return resolved, None
