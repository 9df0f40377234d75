"""The predictive draws of a fit made of parts: the network's own approximation, a
mixture's Laplace half (:mod:`pymc_bnn.inference.laplace`) and a stacked linear part
(:mod:`pymc_bnn.predictive._linear`), each given its share of the draws.

One function makes them for the fit (``n_draws``) and for a later call that asks for
another number of fresh draws (``sample_proba(n_draws=k)``), so the two cannot drift
apart: a request for ``k`` draws gets every part in the fit's proportions, not the first
part alone.
"""

from __future__ import annotations

from pymc_bnn.predictive._linear import stacked_idata
from pymc_bnn.predictive._predictive import posterior_draws

__all__ = ["composed_idata", "laplace_share", "linear_share", "start_shares"]


def laplace_share(weight: float, n_draws: int) -> int:
    """A mixture's Laplace draws of ``n_draws`` network draws: its share ``weight``,
    rounded down (a half: ``n_draws // 2``), at least one draw left to each half."""
    return min(max(1, int(weight * n_draws + 1e-9)), n_draws - 1)


def start_shares(n_draws: int, n_starts: int) -> list[int]:
    """The draws of each of ``n_starts`` Laplace fits sharing ``n_draws`` equally (the
    first ones one more where they do not divide), at least one each: as many starts
    as there are draws at most."""
    n_starts = max(1, min(int(n_starts), int(n_draws)))
    base, extra = divmod(int(n_draws), n_starts)
    return [base + (k < extra) for k in range(n_starts)]


def start_seed(random_seed, k: int):
    """The draws' seed of a mixture's ``k``-th Laplace fit: ``random_seed`` for the
    first (one fit draws as before), ``[random_seed, k]`` (NumPy's seed sequence) for
    the others."""
    return random_seed if k == 0 or random_seed is None else [int(random_seed), int(k)]


def linear_share(weight: float, n_draws: int) -> int:
    """The linear part's draws of ``n_draws``: its share ``weight``, rounded, leaving at
    least two network draws (a mixture's halves need one each)."""
    return max(0, min(int(round(weight * n_draws)), n_draws - 2))


def composed_idata(
    posterior,
    n_draws: int,
    *,
    random_seed,
    temperature: float,
    laplace: dict | None = None,
    linear: dict | None = None,
):
    """The draws of the parts, in one DataTree.

    Parameters
    ----------
    posterior : Posterior
        The network's own fit (its draws come first).
    n_draws : int
        Draws in all.
    random_seed : int
        Seeds every part's draws.
    temperature : float
        The network's posterior temperature.
    laplace : dict, optional
        A mixture's Laplace half: ``{"posterior", "temperature"}`` and its share of
        the network's draws, ``"weight"`` (default a half; :func:`laplace_share`), its
        linearised ones. ``"starts"`` (optional): several Laplace fits (the first is
        ``"posterior"``), the half's draws shared equally among them
        (:func:`start_shares`), each linearised at its own mode, all at the half's
        temperature.
    linear : dict, optional
        A stacked linear part: ``{"posterior", "temperature", "weight"}``; its share of
        all the draws (:func:`linear_share`) are its own, in a group of their own.

    Returns
    -------
    (idata, counts)
        ``counts``: the draws of each part, ``{"network", "laplace", "linear"}``.
    """
    if laplace is not None and n_draws < 2:
        raise ValueError(
            f"n_draws={n_draws}: a mixture of two approximations needs at "
            "least 2 draws (one from each)."
        )
    n_linear = 0 if linear is None else linear_share(linear["weight"], n_draws)
    n_network = n_draws - n_linear
    n_laplace = 0 if laplace is None else laplace_share(laplace.get("weight", 0.5), n_network)
    idata = posterior_draws(
        posterior, n_draws=n_network - n_laplace, random_seed=random_seed, temperature=temperature
    )
    if laplace is not None:
        from pymc_bnn.inference.laplace import mixture_idata

        starts = laplace.get("starts") or [laplace["posterior"]]
        counts = start_shares(n_laplace, len(starts))
        idata = mixture_idata(
            idata,
            [
                posterior_draws(
                    fit,
                    n_draws=n,
                    random_seed=start_seed(random_seed, k),
                    temperature=laplace["temperature"],
                )
                for k, (fit, n) in enumerate(zip(starts, counts))
            ],
            posterior.spec.weight_names,
        )
    if n_linear:
        idata = stacked_idata(
            idata,
            posterior_draws(
                linear["posterior"],
                n_draws=n_linear,
                random_seed=random_seed,
                temperature=linear["temperature"],
            ),
        )
    return idata, {"network": n_network - n_laplace, "laplace": n_laplace, "linear": n_linear}
