"""A regressor's NUTS run and its diagnostics in words, for ``describe()`` and for
``pymc-bnn info`` (which reads them from a model file's metadata, so this module
imports nothing heavy)."""

from __future__ import annotations

__all__ = ["nuts_run_text", "short_run_diagnostics_text"]


def nuts_run_text(run: dict) -> str:
    """A regressor's NUTS run (its ``nuts_run_``) in words: the chains and iterations,
    and whether ``inference="auto"`` chose it or it was asked for."""
    how = (f"chosen by inference='auto' for a table this small (rows x parameters "
           f"{run['rows_x_parameters']:,} <= {run['limit']:,}), a short run used as a "
           "predictive ensemble" if run["chosen"] == "auto" else "as asked")
    chains = f"{run['chains']} chain{'s' if run['chains'] != 1 else ''}"
    return (f"NUTS on the whole model, {chains} x "
            f"({run['tune']} warm-up + {run['draws']} draws), {how}")


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
        parts.append(f"{diagnostics['n_divergences']} divergent transitions"
                     + (f" in {draws} draws" if draws else ""))
    return ("not checked for convergence (a short run used as a predictive ensemble)"
            + (": " + ", ".join(parts) if parts else ""))
