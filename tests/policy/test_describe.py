"""pymc_bnn.policy._describe and pymc_bnn._runtime.progress: what a fit says about itself."""

import doctest
import io
from types import SimpleNamespace

import pytest

from pymc_bnn._runtime import progress
from pymc_bnn._runtime.progress import FitProgress
from pymc_bnn.policy import _describe as fit_summary
from pymc_bnn.policy._describe import describe


@pytest.mark.parametrize("module", [fit_summary, progress])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def _est(t, *, chosen=True, sigmas=None, kl=1.0, inference="advi"):
    return SimpleNamespace(
        posterior_temperature="auto" if chosen else t,
        posterior_temperature_=t,
        inference_=inference,
        kl_weight_=kl,
        evidence_=None if sigmas is None else object(),
        prior_sigma_=sigmas,
    )


def test_the_temperature_in_words_and_when_it_is_unusual():
    assert "narrowed to 0.71" in describe(_est(0.5))[0]
    assert "as it is (temperature 1, chosen on held-out rows)" in describe(_est(1.0))[0]
    assert "widened to 1.2 times" in describe(_est(1.5))[0]
    assert "as set" in describe(_est(0.3, chosen=False))[0]
    assert "unusual" not in " ".join(describe(_est(0.05)) + describe(_est(1.5)))
    assert "unusual: the narrowest tried" in describe(_est(0.001))[0]
    assert "unusual: the widest tried" in describe(_est(2.0))[0]
    assert "unusual" not in describe(_est(2.0, chosen=False))[0]  # the user's choice
    assert describe(_est(1.0, inference="nuts")) == []  # NUTS is not tempered


def test_the_prior_scales_in_words_name_the_layers_and_flag_the_limits():
    (_, line) = describe(_est(1.0, sigmas=[0.605, 0.76, 2.04]))
    assert "0.6 (input layer), 0.76 (hidden layer 1), 2 (output)" in line
    assert "unusual" not in line
    (_, low) = describe(_est(1.0, sigmas=[0.01, 3.0]))
    assert "unusual: input layer at the smallest allowed" in low
    (_, high) = describe(_est(1.0, sigmas=[0.5, 100.0]))
    assert "unusual: output at the largest allowed" in high


def test_the_mixture_says_what_its_second_half_is_without_flagging_its_temperature():
    est = _est(0.3)
    est.mixture_ = {"laplace_temperature": 0.001}
    line = describe(est)[-1]
    assert "Laplace approximation" in line and "temperature 0.001" in line
    assert "unusual" not in line and "linearised" in line
    est.mixture_ = {"laplace_temperature": 0.01, "laplace_diagnostics": {"structure": "last_layer"}}
    line = describe(est)[-1]
    assert "output layer's only" in line and "linearised" not in line
    # the regressor's stacked share, where it is not a half
    est.mixture_ = {"laplace_temperature": 0.01, "n_draws": [100, 900]}
    assert (
        "10% and 90% of the network's draws, the shares that predicted the held-out "
        "rows best: ADVI's (above)" in describe(est)[-1]
    )
    est.mixture_["n_draws"] = [500, 501]
    assert "half the network's draws each" in describe(est)[-1]
    # nor the ADVI half's at the narrowest: the Laplace half brings the spread
    est = _est(0.001)
    assert "unusual" in describe(est)[0]
    est.mixture_ = {"laplace_temperature": 1.5}
    assert "unusual" not in describe(est)[0]


def test_the_check_of_the_mixture_against_advi_alone_is_said():
    est = _est(0.3)
    est.inference_selection_ = {"methods": ["advi+laplace", "advi"], "scores": [0.5, 0.52]}
    est.mixture_ = {"laplace_temperature": 1.0}
    assert describe(est)[-1].endswith(
        "which predicted the held-out rows better than ADVI's alone (log loss 0.5 against "
        "0.52 per row)"
    )
    est.inference_selection_["scores"] = [0.53, 0.52]  # kept: within the folds' noise
    assert describe(est)[-1].endswith(
        "worse than ADVI's alone (log loss 0.53 against 0.52 per row, a difference the "
        "held-out rows could not tell from noise)"
    )
    est.mixture_ = None
    est.inference_selection_["scores"] = [0.6, 0.5]
    assert describe(est)[-1].startswith("predictions: ADVI's draws alone")
    est.inference_selection_ = {"methods": ["advi", "laplace"], "scores": [0.6, 0.5]}
    assert not any("ADVI's draws alone" in line for line in describe(est))


def test_the_regressors_check_against_each_half_is_said():
    est = _est(0.3)
    est.y_scale_ = 1.0  # a regressor: its held-out loss in words
    est.inference_selection_ = {
        "methods": ["advi+laplace", "advi", "laplace"],
        "scores": [0.5, 0.52, 0.49],
    }
    est.mixture_ = {"laplace_temperature": 1.0}
    assert describe(est)[-1].endswith(
        "which was compared on the held-out rows with each alone (negative log-likelihood "
        "per row: the average 0.5, ADVI's 0.52, the Laplace approximation's 0.49, a "
        "difference the held-out rows could not tell from noise)"
    )
    est.mixture_, est.inference_ = None, "laplace"
    assert describe(est)[-1].startswith(
        "predictions: the Laplace approximation's draws alone: the average with ADVI's "
        "was fit too, and was compared"
    )


def test_a_colder_elbo_is_said():
    assert "KL weight 0.25" in describe(_est(1.0, kl=0.25))[-1]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_lines_without_a_terminal_and_in_place_on_one():
    clock = iter(range(100)).__next__
    out = io.StringIO()
    p = FitProgress(enabled=True, stream=out, clock=clock)
    with p.stage("4 ADVI fits", fits=4):
        for task in [p.counted(lambda: 1)] * 4:
            task()
    lines = out.getvalue().splitlines()
    assert lines[0] == "fit: 4 ADVI fits ..." and lines[-1] == "fit: 4 ADVI fits: done in 5 s"
    assert [ln.split(" (")[0] for ln in lines[1:-1]] == [
        f"fit:   {k} of 4 fits done" for k in range(1, 5)
    ]
    term = _Terminal()
    p = FitProgress(enabled=True, stream=term, clock=iter(range(100)).__next__)
    with p.stage("evidence"):
        p.fit_done()  # a stage without counted fits still ends cleanly
    text = term.getvalue()
    assert text.count("\n") == 1 and "\r\033[K" in text and text.endswith("done in 2 s\n")
    stopped = io.StringIO()
    p = FitProgress(enabled=True, stream=stopped, clock=iter(range(100)).__next__)
    with pytest.raises(KeyboardInterrupt), p.stage("NUTS sampling"):
        raise KeyboardInterrupt  # Ctrl-C: the stage does not claim to be done
    assert stopped.getvalue().splitlines()[-1] == "fit: NUTS sampling: interrupted after 1 s"
    quiet = io.StringIO()
    p = FitProgress(enabled=False, stream=quiet)
    with p.stage("x", fits=1):
        p.counted(lambda: 1)()
    assert quiet.getvalue() == ""


def test_a_default_fit_reports_its_stages(capsys):
    """The estimator's progressbar=True: the evidence, the four ADVI fits counted, the
    predictive draws, each named, on stderr; no per-run ADVI bars."""
    import numpy as np

    from pymc_bnn import BayesianMLPClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    BayesianMLPClassifier((3,), n_iter=3000, progressbar=True, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    assert "fit: prior scales from the evidence" in err
    assert (
        "fit: 4 ADVI fits: the network, and 3 on held-out folds to choose the "
        "temperature ..." in err
    )
    assert "4 of 4 fits done" in err and "fit: posterior predictive draws: done" in err
    assert "ADVI ━" not in err and "loss" not in err


def test_the_mixture_fit_reports_both_halves(capsys):
    import numpy as np

    from pymc_bnn import BayesianMLPClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    BayesianMLPClassifier(
        (3,), inference="advi+laplace", n_draws=20, progressbar=True, random_state=0
    ).fit(X, y)
    err = capsys.readouterr().err
    # all at once: each method's fit on all rows and on the three folds (the Laplace
    # folds start on their own)
    assert (
        "fit: 8 fits: the network by ADVI and by Laplace, and 3 "
        "of each on held-out folds to choose their temperatures ..."
    ) in err
    assert "8 of 8 fits done" in err and "Laplace fits on held-out folds" not in err


def test_the_default_fit_reports_its_stage(capsys):
    import numpy as np

    from pymc_bnn import BayesianMLPClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    BayesianMLPClassifier((3,), progressbar=True, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    assert "fit: 5 MAP fits and their Laplace approximations: done" in err


def test_brief_lines_keep_the_figures_within_the_width_and_flag_the_unusual():
    """``describe(brief=True)``, what ``pymc-bnn fit`` prints: one line a choice, at most
    BRIEF_WIDTH characters, the figures kept and an unusual value still flagged."""
    est = _est(0.001, sigmas=[0.01, 0.76, 2.04], kl=0.25)
    est.mixture_ = None
    est.linear_part_ = {"weight": 0.6, "scores": [0.554, 0.54]}
    est.ensemble_ = None
    full, brief = describe(est), describe(est, brief=True)
    assert len(full) == len(brief) == 4
    assert max(map(len, full)) > fit_summary.BRIEF_WIDTH
    assert all(len(line) <= fit_summary.BRIEF_WIDTH for line in brief), brief
    assert brief[0] == (
        "uncertainty: narrowed to 0.032x the posterior's spread "
        "(temperature 0.001) (unusual: see --verbose)"
    )
    assert brief[1] == (
        "weights: prior sd per layer, from the evidence: 0.01, 0.76, 2 (unusual: see --verbose)"
    )
    assert brief[2] == (
        "predictions: 60% of the draws from a linear model (log loss 0.54 "
        "against 0.554 on held-out rows)"
    )
    assert brief[3] == "fit: KL weight 0.25 (chosen on held-out rows)"
    assert describe(_est(0.5), brief=True) == [
        "uncertainty: narrowed to 0.71x the posterior's spread (temperature 0.5)"
    ]
    ens = _est(0.5, inference="laplace_ensemble")
    ens.ensemble_, ens.y_scale_ = {"members": 5, "noise_sd": [0.5, 0.6]}, 2.0
    assert describe(ens, brief=True) == [
        "predictions: 5 networks with Laplace approximations (temperature 0.5); noise sd 1 to 1.2"
    ]
