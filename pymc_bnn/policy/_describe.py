"""A fitted estimator's choices in plain words, and whether they are unusual.

The default fit chooses a posterior temperature and (for classifiers) one prior scale
per layer; as bare numbers (``temperature 0.5``, ``prior sd per layer: 0.605, 0.76,
2.04``) they mean nothing to most users. :func:`describe` says what each does to the
predictions and flags values at the edge of what the fit could choose, which is where
a fit deserves a second look. The numbers themselves stay in the estimator's
attributes and in ``pymc-bnn info``.

Examples
--------
>>> from types import SimpleNamespace
>>> est = SimpleNamespace(posterior_temperature="auto", posterior_temperature_=0.5,
...                       evidence_=None, kl_weight_=1.0, inference_="advi")
>>> print(describe(est)[0])  # doctest: +NORMALIZE_WHITESPACE
uncertainty: narrowed to 0.71 of the fitted posterior's spread (temperature 0.5, chosen
on held-out rows), as is usual on clean data
>>> print(describe(est, brief=True)[0])
uncertainty: narrowed to 0.71x the posterior's spread (temperature 0.5)
"""

from __future__ import annotations

import math

from pymc_bnn.inference.evidence import SIGMA_RANGE
from pymc_bnn.policy._choice import MIXTURE, default_obstacle
from pymc_bnn.policy._nuts_words import nuts_run_text
from pymc_bnn.policy._tempering import TEMPERATURES

__all__ = ["describe"]

#: The smallest and largest temperature ``posterior_temperature="auto"`` chooses among.
TEMPERATURE_RANGE = (min(TEMPERATURES), max(TEMPERATURES))


def describe(estimator, *, brief: bool = False) -> list[str]:
    """Plain-word lines on a fitted estimator's temperature, prior scales and KL weight.

    Parameters
    ----------
    estimator : fitted BayesianMLPClassifier or BayesianMLPRegressor
        (or anything with their fitted attributes: ``inference_``,
        ``posterior_temperature_``, ``posterior_temperature``, ``evidence_``,
        ``prior_sigma_``, ``kl_weight_``)

    brief : bool, default False
        At most :data:`BRIEF_WIDTH` characters a line, the figures without their
        explanation (the command line's ``fit``; ``--verbose`` gives the full lines).

    Returns
    -------
    list of str
        One line per choice; a line that ends with ``(unusual: ...)`` names what to
        check (brief: ``unusual``, the full line says why).
    """
    return [pair[1] if brief else pair[0] for pair in _lines(estimator)]


#: The longest line of :func:`describe` with ``brief=True``.
BRIEF_WIDTH = 100
_UNUSUAL = " (unusual: see --verbose)"


def _pair(full: str, brief: str | None = None) -> tuple[str, str]:
    """A line of :func:`describe` and its brief form (``full`` itself where short), the
    brief one flagged where the full one is unusual."""
    brief = full if brief is None else brief
    if "(unusual:" in full and "(unusual:" not in brief:
        brief += _UNUSUAL
    if len(brief) > BRIEF_WIDTH:  # a long reason of the caller's: the rest is in info
        brief = brief[: BRIEF_WIDTH - 3].rstrip() + "..."
    return full, brief


def _lines(estimator) -> list[tuple[str, str]]:
    """Each line of :func:`describe`: (full, brief)."""
    lines = []
    if getattr(estimator, "target_scale", "linear") == "log":
        lines.append(
            _pair(
                "target: modelled on the log scale (its noise a fraction of the value)",
                "target: modelled on the log scale",
            )
        )
    why = _not_the_ensemble(estimator)
    if why:
        lines.append(_pair(why))
    ensemble = getattr(estimator, "ensemble_", None)
    method = getattr(estimator, "inference_", None)
    if method == "laplace_ensemble" and ensemble:
        lines.append(_ensemble_line(estimator, ensemble))
    elif method != "nuts":
        lines.append(_temperature_line(estimator))
    run = getattr(estimator, "nuts_run_", None)
    if method == "nuts" and run:
        lines.append(
            _pair(
                f"fit: {nuts_run_text(run)}", f"fit: {nuts_run_text(run).split(', chosen by')[0]}"
            )
        )
    if getattr(estimator, "evidence_", None) is not None:
        lines.append(_prior_line(estimator.prior_sigma_))
    mixture = getattr(estimator, "mixture_", None)
    loss = "negative log-likelihood" if hasattr(estimator, "y_scale_") else "log loss"
    checked = _mixture_check(getattr(estimator, "inference_selection_", None), bool(mixture), loss)
    if mixture:
        full, brief = _mixture_line(mixture)
        lines.append(_pair(full + (f", which {checked}" if checked else ""), brief))
    elif checked:
        alone = "the Laplace approximation's" if method == "laplace" else "ADVI's"
        other = "ADVI's" if method == "laplace" else "a Laplace approximation's"
        lines.append(
            _pair(
                f"predictions: {alone} draws alone: the average with {other} "
                f"was fit too, and {checked}",
                f"predictions: {alone} draws alone (better than mixed with "
                f"{other} on held-out rows)",
            )
        )
    linear = getattr(estimator, "linear_part_", None)
    if linear:
        lines.append(_linear_line(linear))
    kl = getattr(estimator, "kl_weight_", 1.0)
    if kl is not None and kl != 1.0:
        lines.append(
            _pair(
                f"fit: the prior counted {kl:g} times as much as usual against the "
                f"data (KL weight {kl:g}, chosen on held-out rows): the data looked "
                "smooth and nearly noise-free",
                f"fit: KL weight {kl:g} (chosen on held-out rows)",
            )
        )
    return lines


_METHOD_NAMES = {"advi": "mean-field ADVI", "nuts": "NUTS", "fullrank_advi": "full-rank ADVI"}


def _not_the_ensemble(estimator) -> str | None:
    """An ``inference="auto"`` fit that is not the mixture of Laplace approximations:
    which method ran, and why (:func:`pymc_bnn.policy._choice.default_obstacle`, the
    choice's own words; the regressor's short NUTS run on a small table is its default
    too, said by its own line)."""
    method = getattr(estimator, "inference_", None)
    if getattr(estimator, "inference", None) != "auto" or method not in _METHOD_NAMES:
        return None
    regressor = hasattr(estimator, "y_scale_")
    run = getattr(estimator, "nuts_run_", None) if regressor else None
    if run is not None and run.get("chosen") == "auto":
        return None  # the default on a small table: its own line says so
    grouped = getattr(estimator, "groups_", None) is not None
    if regressor and not grouped and estimator.heteroscedastic:
        return "fit: mean-field ADVI, as the noise sd varies with the features (heteroscedastic)"
    post = getattr(estimator, "posterior_", None)
    rows = getattr(getattr(post, "spec", None), "n_rows", 0) or 0
    task = "regression" if regressor else "classification"
    why = default_obstacle(estimator.get_params(), task, grouped=grouped, n_rows=rows)
    why = why or "the rows were streamed (dask input)"
    return f"fit: {_METHOD_NAMES[method]}, not the default mixture of Laplace approximations: {why}"


def _ensemble_line(estimator, ensemble: dict) -> tuple[str, str]:
    """The mixture of Laplace approximations: its members and their spread."""
    t = float(estimator.posterior_temperature_)
    how = (
        "chosen on rows each network held out"
        if estimator.posterior_temperature == "auto"
        else "as set"
    )
    spread = (
        "no spread around each (temperature 0, " + how + "): a deep ensemble with the prior"
        if t == 0
        else f"each one's output layer drawn from its Laplace approximation, the spread "
        f"scaled by temperature {t:g} ({how})"
    )
    line = f"predictions: {ensemble['members']} networks at their most probable weights, {spread}"
    brief = (
        f"predictions: {ensemble['members']} networks with Laplace approximations "
        f"(temperature {t:g})"
    )
    if "noise_sd" in ensemble:  # a regressor's: each network's noise, in y's units
        sds = [float(v) * float(estimator.y_scale_) for v in ensemble["noise_sd"]]
        scale = float(ensemble.get("noise_scale", 1.0))
        log = " (log scale)" if getattr(estimator, "target_scale", "linear") == "log" else ""
        noise = f"; noise sd {min(sds):.3g} to {max(sds):.3g}{log}"
        line += noise + (
            f" (the fitted variance x {scale:.2g}, held-out rows)" if scale != 1 else ""
        )
        brief += noise.replace(" (log scale)", " (log)")
    if not all(ensemble.get("converged", [True])):
        line += " (unusual: a fit ran out of epochs; standardise the features)"
    return _pair(line, brief)


def _temperature_line(estimator) -> tuple[str, str]:
    t = float(estimator.posterior_temperature_)
    chosen = estimator.posterior_temperature == "auto"
    how = "chosen on held-out rows" if chosen else "as set"
    scale = math.sqrt(t)
    if t == 1.0:
        line = f"uncertainty: the fitted posterior's spread as it is (temperature 1, {how})"
        brief = line
    elif t < 1.0:
        line = (
            f"uncertainty: narrowed to {scale:.2g} of the fitted posterior's spread "
            f"(temperature {t:g}, {how})"
        )
        brief = line.replace(" of the fitted", "x the")
        if chosen:
            line += ", as is usual on clean data"
    else:
        line = (
            f"uncertainty: widened to {scale:.2g} times the fitted posterior's spread "
            f"(temperature {t:g}, {how})"
        )
        brief = line.replace(" times the fitted", "x the")
        if chosen:
            line += ": the held-out rows were predicted better with more doubt"
    # a mixture's ADVI half at the narrowest is not one network's predictions: the
    # Laplace half brings its own spread (the halves' temperatures are chosen together)
    mixed = bool(getattr(estimator, "mixture_", None))
    if chosen and t <= TEMPERATURE_RANGE[0] and not mixed:
        line += (
            " (unusual: the narrowest tried, so predictions are nearly those of one "
            "network; compare them with a plain model on held-out data)"
        )
    elif chosen and t >= TEMPERATURE_RANGE[1]:
        line += " (unusual: the widest tried; the network may over-fit: try fewer hidden units)"
    return _pair(line, brief.replace(f", {how})", ")"))


def _mixture_line(mixture: dict) -> tuple[str, str]:
    """The ADVI + Laplace mixture: what its second half is (its temperature is not
    flagged: the Laplace half's folds choose ~0, its most probable network, on clean
    data as a rule)."""
    t = float(mixture["laplace_temperature"])
    last = mixture.get("laplace_diagnostics", {}).get("structure") == "last_layer"
    what = (
        "the network at its most probable weights with a spread of the output "
        "layer's only (the whole network's was too costly here)"
        if last
        else "the network linearised at its most probable weights"
    )
    modes = int(mixture.get("laplace_starts", 1))
    if modes > 1 and not last:
        what = (
            f"the network linearised at each of {modes} modes (fits from starting "
            "weights of their own), sharing its draws equally"
        )
    advi, laplace = (int(n) for n in mixture.get("n_draws", (1, 1)))
    if abs(advi - laplace) <= 1:
        shares = "half the network's draws each"
    else:  # stacked on the folds (the regressor)
        shares = (
            f"{advi / (advi + laplace):.0%} and {laplace / (advi + laplace):.0%} of the "
            "network's draws, the shares that predicted the held-out rows best"
        )
    full = (
        f"predictions: the average of two approximations of the posterior, {shares}: "
        f"ADVI's (above) and the Laplace approximation's, {what}, its "
        f"spread scaled by temperature {t:g} (chosen on held-out rows)"
    )
    brief = (
        f"predictions: {advi / (advi + laplace):.0%} ADVI's draws, "
        f"{laplace / (advi + laplace):.0%} a Laplace approximation's (temperature {t:g})"
    )
    return full, brief


#: The approximations' names in :func:`describe`'s lines.
_NAMES = {"advi": "ADVI's", "laplace": "the Laplace approximation's"}


def _mixture_check(selection, kept: bool, loss: str = "log loss") -> str | None:
    """How the ADVI + Laplace mixture and each approximation alone compared on the
    held-out folds (``inference="auto"``), in words; None where they were not
    compared."""
    if not selection or selection.get("methods", [None])[0] != MIXTURE:
        return None
    mixed, *alone = (float(v) for v in selection["scores"])
    names = [_NAMES.get(m, m) for m in selection["methods"][1:]]
    if len(alone) == 1:
        verdict = "better" if mixed <= alone[0] else "worse"
        words = (
            f"predicted the held-out rows {verdict} than {names[0]} alone ({loss} "
            f"{mixed:.3g} against {alone[0]:.3g} per row"
        )
    else:
        words = (
            "was compared on the held-out rows with each alone (" + loss + " per row: "
            f"the average {mixed:.3g}, " + ", ".join(f"{n} {a:.3g}" for n, a in zip(names, alone))
        )
    if mixed > min(alone) and kept:  # kept: not clearly worse (fit_settings.MIXTURE_DROP_SE)
        return words + ", a difference the held-out rows could not tell from noise)"
    return words + ")"


def _linear_line(linear: dict) -> tuple[str, str]:
    """The linear part stacked with the network (:mod:`pymc_bnn.predictive._linear`)."""
    share = float(linear["weight"])
    network = float(linear["scores"][0])
    stacked = min(float(v) for v in linear["scores"])
    return _pair(
        f"predictions: {share:.0%} of the draws from a linear model (Bayesian "
        "logistic regression, its prior scale chosen by the evidence), stacked with "
        "the network: the share that predicted the held-out rows best (log loss "
        f"{stacked:.3g} against the network's {network:.3g} per row)",
        f"predictions: {share:.0%} of the draws from a linear model (log loss "
        f"{stacked:.3g} against {network:.3g} on held-out rows)",
    )


def _prior_line(sigmas) -> tuple[str, str]:
    sigmas = [float(s) for s in sigmas]
    names = _layer_names(len(sigmas))
    shown = ", ".join(f"{s:.2g} ({n})" for s, n in zip(sigmas, names))
    line = (
        f"weights: how large each layer's weights may be was chosen from the data: "
        f"{shown}; a small value keeps that layer close to zero"
    )
    low = [n for s, n in zip(sigmas, names) if s <= SIGMA_RANGE[0] * 1.01]
    high = [n for s, n in zip(sigmas, names) if s >= SIGMA_RANGE[1] / 1.01]
    if low:
        line += (
            f" (unusual: {', '.join(low)} at the smallest allowed: the data show "
            "almost no signal through it; check the features)"
        )
    if high:
        line += f" (unusual: {', '.join(high)} at the largest allowed: check the inputs' scale)"
    return _pair(
        line,
        "weights: prior sd per layer, from the evidence: " + ", ".join(f"{s:.2g}" for s in sigmas),
    )


def _layer_names(n: int) -> list[str]:
    if n == 1:
        return ["output"]
    if n == 2:
        return ["input layer", "output"]
    return ["input layer", *[f"hidden layer {k}" for k in range(1, n - 1)], "output"]
