"""What ``pymc-bnn info`` prints about a model file: its data, settings and fit, in
plain lines (the numbers themselves; ``--json`` gives everything)."""

from __future__ import annotations

from pymc_bnn.cli._tables import format_number, model_info
from pymc_bnn.policy._noise import NoiseChoice, noise_line

__all__ = ["info_lines"]


def info_lines(path, meta: dict) -> list[str]:
    """The lines of ``pymc-bnn info`` for the model file ``path`` of metadata ``meta``."""
    info = model_info(meta)
    params = meta.get("params", {})
    pre = (meta.get("extra") or {}).get("preprocessing") or {}
    lines = [f"{path}: {meta['format'].split('.')[-1]} (format {meta.get('format_version')})"]
    for key in (
        "created",
        "data",
        "target",
        "task",
        "groups",
        "rows",
        "features_after_encoding",
        "inference",
        "fit_seconds",
        "training_accuracy",
        "training_rmse",
    ):
        if info.get(key) is not None:
            value = info[key] if key == "fit_seconds" else format_number(info[key])
            lines.append(f"  {key.replace('_', ' ')}: {value}")
    target = meta.get("target", {})
    if "classes" in target:
        lines.append(f"  classes: {', '.join(map(str, target['classes']))}")
    for c in pre.get("numeric", []):
        median, mean, sd = (format_number(c[k], trim=True) for k in ("median", "mean", "scale"))
        lines.append(f"  numeric {c['name']}: median {median}, mean {mean}, sd {sd}")
    forced = set(info.get("categorical") or [])
    for c in pre.get("categorical", []):
        how = " (--categorical)" if c["name"] in forced else ""
        lines.append(f"  categorical {c['name']}{how}: {', '.join(c['categories'])}")
    for c in pre.get("constant", []):
        lines.append(
            f"  constant {c['name']}: {format_number(c['value'], trim=True)} (left "
            "out: one value in training)"
        )
    shown = (
        "hidden_layer_sizes",
        "activation",
        "prior",
        "prior_sigma",
        "inference",
        "n_iter",
        "batch_size",
        "n_draws",
        "posterior_temperature",
        "n_init",
        "random_state",
    )
    lines.append("  settings: " + ", ".join(f"{k}={params[k]}" for k in shown if k in params))
    from pymc_bnn.policy._nuts_words import draws_kept_text

    kept = draws_kept_text(meta.get("nuts_run"), info.get("draws_kept"))
    if kept is not None and (meta.get("nuts_run") or kept != str(params.get("n_draws"))):
        lines.append(f"  draws kept: {kept}")
    lines.append(f"  posterior temperature used: {meta.get('posterior_temperature', 1.0):g}")
    if meta.get("mixture"):
        lines.append(
            "  mixture: half the network's draws from ADVI, half from a Laplace fit "
            f"(temperature {meta['mixture']['laplace_temperature']:g})"
        )
    if meta.get("linear_part"):
        lines.append(
            f"  linear part: {meta['linear_part']['weight']:.0%} of the draws from a "
            "Bayesian logistic regression (its share chosen on held-out rows)"
        )
    ensemble = meta.get("ensemble")
    if ensemble:
        epochs = ensemble.get("epochs") or [0]
        text = (
            f"  ensemble: {ensemble['members']} networks at their MAP weights, trained "
            f"{min(epochs)}-{max(epochs)} epochs"
        )
        if ensemble.get("noise_sd"):
            scale = float(target.get("y_scale", 1.0))
            sds = [float(v) * scale for v in ensemble["noise_sd"]]
            text += f", noise sd {min(sds):.3g}-{max(sds):.3g}"
            text += " (log scale)" if params.get("target_scale") == "log" else ""
        lines.append(text)
    noise = info.get("noise")
    if noise:
        lines.append(f"  {noise_line(NoiseChoice(**noise))}")
        for r in noise.get("rounds", []):  # log-likelihood per held-out row
            how = " (quick fits)" if r["fits"] == "screen" else ""
            lines.append(
                f"  noise models on held-out rows{how}: "
                + ", ".join(f"{k} {v:.4g}" for k, v in r["models"].items())
                + f"; kept {r['kept']}"
            )
    if meta.get("evidence"):
        lines.append(
            "  prior sd per layer (evidence): "
            + ", ".join(f"{v:.3g}" for v in meta["evidence"]["sigmas"])
        )
    from pymc_bnn.policy._nuts_words import nuts_run_text, short_run_diagnostics_text

    run = meta.get("nuts_run")
    if run:
        lines.append(f"  sampling: {nuts_run_text(run)}")
    diagnostics = meta.get("diagnostics") or {}
    if run and run.get("chosen") == "auto" and diagnostics:
        lines.append(f"  diagnostics: {short_run_diagnostics_text(diagnostics)}")
    elif "converged" in diagnostics:
        steps = diagnostics.get("n_steps")
        lines.append(
            f"  converged: {diagnostics['converged']}"
            + (f" ({steps} steps)" if steps is not None else "")
            + (f"; {diagnostics['message']}" if diagnostics.get("message") else "")
        )
    fit_with = info.get("versions") or {}
    if fit_with:
        lines.append("  fit with: " + ", ".join(f"{k} {v}" for k, v in fit_with.items()))
    return lines
