"""A regressor's NUTS run and its diagnostics in words, for ``describe()`` and for
``pymc-bnn info`` (which reads them from a model file's metadata, so this module
imports nothing heavy)."""

from __future__ import annotations

__all__ = ["draws_kept_text", "nuts_run_text", "poor_draws_note", "short_run_diagnostics_text"]

#: The thresholds of :mod:`pymc_bnn.inference.diagnostics` (R-hat 1.01, bulk ESS 100
#: a chain; Vehtari et al. 2021), repeated here so that the command line's ``info``
#: imports nothing heavy; ``tests/cli/test_cli.py`` checks they agree.
RHAT_THRESHOLD = 1.01
ESS_PER_CHAIN = 100


def nuts_run_text(run: dict) -> str:
    """A regressor's NUTS run (its ``nuts_run_``) in words: the chains and iterations,
    and whether ``inference="auto"`` chose it or it was asked for."""
    how = (
        f"chosen by inference='auto' for a table this small (rows x parameters "
        f"{run['rows_x_parameters']:,} <= {run['limit']:,}), a short run used as a "
        "predictive ensemble"
        if run["chosen"] == "auto"
        else "as asked"
    )
    chains = f"{run['chains']} chain{'s' if run['chains'] != 1 else ''}"
    return (
        f"NUTS on the whole model, {chains} x ({run['tune']} warm-up + {run['draws']} draws), {how}"
    )


def short_run_diagnostics_text(diagnostics: dict) -> str:
    """The sampling diagnostics of ``inference="auto"``'s short NUTS run, as figures
    without the advice of a fit meant to converge: 100 draws a chain are a predictive
    ensemble (its test log-likelihood is what was measured:
    ``benchmarks/results/uci_regression.md``), not a posterior whose R-hat and ESS
    should pass the usual thresholds."""
    parts = []
    if diagnostics.get("max_rhat") is not None:
        parts.append(f"R-hat up to {diagnostics['max_rhat']:.3g}")
    if diagnostics.get("min_ess_bulk") is not None:
        parts.append(f"bulk ESS as low as {diagnostics['min_ess_bulk']:.0f}")
    if diagnostics.get("n_divergences") is not None:
        draws = diagnostics.get("n_chains", 0) * diagnostics.get("n_draws", 0)
        parts.append(
            f"{diagnostics['n_divergences']} divergent transitions"
            + (f" in {draws} draws" if draws else "")
        )
    return "not checked for convergence (a short run used as a predictive ensemble)" + (
        ": " + ", ".join(parts) if parts else ""
    )


def poor_draws_note(diagnostics: dict) -> str | None:
    """One plain line where the short NUTS run's draws fail the usual checks (R-hat above
    :data:`RHAT_THRESHOLD`, bulk ESS below :data:`ESS_PER_CHAIN` a chain, or any
    divergent transition): the figures, what they mean for the user and what to do;
    else None."""
    rhat, ess = diagnostics.get("max_rhat"), diagnostics.get("min_ess_bulk")
    chains = diagnostics.get("n_chains") or 1
    divergent = diagnostics.get("n_divergences") or 0
    bad = []
    if rhat is not None and rhat > RHAT_THRESHOLD:
        bad.append(f"R-hat {rhat:.2f}")
    if ess is not None and ess < ESS_PER_CHAIN * chains:
        bad.append(f"ESS {ess:.0f}")
    if divergent:
        bad.append(f"{divergent} divergent")
    if not bad:
        return None
    return f"a short NUTS run, not converged ({', '.join(bad)}); for more: --inference nuts"


def draws_kept_text(run: dict | None, n_draws_kept: int | None) -> str | None:
    """What a model kept, where ``n_draws`` does not say it: a NUTS run's chains x
    draws, or (``n_draws_kept``) the draws stored; None where there is nothing to add."""
    if run:
        return (
            f"{run['chains'] * run['draws']} ({run['chains']} chains x {run['draws']} "
            "draws; n_draws does not apply to NUTS)"
        )
    if n_draws_kept is not None:
        return f"{n_draws_kept}"
    return None
