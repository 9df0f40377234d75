"""numpyro's chains in threads (:class:`pymc_bnn.inference._nuts.ThreadedChains`): the
same draws as one chain after another, and the path really taken; and which data and
seeds :func:`sample_more` continues the chains with."""

import dataclasses
import threading

import numpy as np
import pytest

from pymc_bnn import build_model, fit
from pymc_bnn.inference import _nuts as nuts

pytest.importorskip("numpyro")

# 30 draws a chain cannot reach an ESS of 100 per chain: about the chains' draws only
pytestmark = pytest.mark.filterwarnings("ignore::pymc_bnn.exceptions.SamplingWarning")


def _fit_nuts(tiny, seed=1):
    X, y = tiny
    return fit(
        build_model(X, y, hidden_layer_sizes=(2,), random_state=0),
        method="nuts",
        draws=30,
        tune=30,
        chains=2,
        nuts_sampler="numpyro",
        random_seed=seed,
    )


def test_chain_method_choice(monkeypatch):
    import jax

    monkeypatch.setattr(nuts, "default_threads", lambda: 2)
    monkeypatch.setattr(jax, "local_device_count", lambda: 1)
    method = nuts._numpyro_chain_method(2)
    assert isinstance(method, nuts.ThreadedChains) and method.n_threads == 2
    assert nuts._numpyro_chain_method(4).n_threads == 2  # no more threads than allowed
    assert nuts._numpyro_chain_method(2, progressbar=True) == "sequential"  # numpyro's bar
    assert nuts._numpyro_chain_method(1) == "parallel"  # one chain: numpyro runs it alone
    monkeypatch.setattr(nuts, "default_threads", lambda: 1)
    assert nuts._numpyro_chain_method(2) == "sequential"
    monkeypatch.setattr(jax, "local_device_count", lambda: 2)
    assert nuts._numpyro_chain_method(2) == "parallel"


def test_threaded_chains_equal_sequential_chains_and_are_taken(tiny, monkeypatch):
    made = []
    threads = set()

    class Spy(nuts.ThreadedChains):
        def __init__(self, n_threads):
            super().__init__(n_threads)
            made.append(self)

        def __call__(self, f):
            def traced(part):
                threads.add(threading.get_ident())
                return f(part)

            return super().__call__(traced)

    monkeypatch.setattr(nuts, "default_threads", lambda: 2)
    monkeypatch.setattr(nuts, "ThreadedChains", Spy)
    threaded = _fit_nuts(tiny)
    assert len(made) == 1 and made[0].calls == 2  # both chains went through the threads
    assert threading.get_ident() not in threads and len(threads) >= 1

    monkeypatch.setattr(
        nuts, "_numpyro_chain_method", lambda chains, progressbar=False: "sequential"
    )
    sequential = _fit_nuts(tiny)
    assert len(made) == 1  # the slow, obvious path: numpyro's own loop over the chains
    a, b = threaded.idata.posterior, sequential.idata.posterior
    assert a.sizes["chain"] == 2 and a.sizes["draw"] == 30
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values)
    for name in ("diverging", "step_size", "n_steps"):
        if name in threaded.idata.sample_stats:
            np.testing.assert_array_equal(
                threaded.idata.sample_stats[name].values, sequential.idata.sample_stats[name].values
            )
    # the two chains are different chains, and another seed gives other draws
    first = a[next(iter(a.data_vars))].values
    assert not np.array_equal(first[0], first[1])
    other = _fit_nuts(tiny, seed=2).idata.posterior
    assert not np.array_equal(other[next(iter(a.data_vars))].values, first)


def test_a_thread_waits_for_its_chain_before_starting_the_next(monkeypatch):
    """JAX returns a chain's arrays before they are computed: a thread that did not
    wait would start its next chain at once, and more chains than threads would run at
    the same time. Each chain's result is waited for in its thread, before the next
    chain starts there."""
    import jax
    import jax.numpy as jnp

    events = []
    real = jax.block_until_ready
    monkeypatch.setattr(
        jax, "block_until_ready", lambda x: (events.append(("wait", int(x))), real(x))[1]
    )

    def f(part):
        events.append(("start", int(part[0])))
        return jnp.asarray(part[0]) * 2

    out = nuts.ThreadedChains(1)(f)((np.arange(3.0),))
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert events == [
        ("start", 0),
        ("wait", 0),
        ("start", 1),
        ("wait", 2),
        ("start", 2),
        ("wait", 4),
    ]


def test_a_failing_chain_raises(monkeypatch):
    def f(part):
        if int(part[0]) == 1:
            raise RuntimeError("chain 1 failed")
        return part

    with pytest.raises(RuntimeError, match="chain 1 failed"):
        nuts.ThreadedChains(2)(f)((np.arange(2),))


def test_a_numpyro_run_releases_jaxs_compiled_programs(tiny, monkeypatch):
    """Each run's new closures stay in JAX's caches otherwise (a leak of 90-300 MiB a
    fit in a long process): the run clears them once its draws are out."""
    import jax

    calls = []
    real = jax.clear_caches
    monkeypatch.setattr(jax, "clear_caches", lambda: (calls.append(1), real()))
    post = _fit_nuts(tiny)
    assert calls == [1] and post.idata.posterior.sizes["draw"] == 30


class _Records(list):
    """A stand-in log handler that keeps the records it is given."""

    level = 0

    def handle(self, record):
        self.append(record)
        return True


def test_pymc_logs_nothing_without_a_progress_bar(tiny, monkeypatch):
    """pm.sample's INFO lines ("NUTS[numpyro]: [...]") are silenced as pm.fit's are: an
    estimator's default fit prints nothing; the same call with a bar still logs them."""
    import logging

    records = _Records()
    log = logging.getLogger("pymc.sampling.mcmc")
    monkeypatch.setattr(log, "handlers", [records])
    monkeypatch.setattr(log, "propagate", False)
    level = log.level
    log.setLevel(logging.INFO)  # as when PyMC set up its own handler (no root handler)
    try:
        _fit_nuts(tiny)
        assert [r.getMessage() for r in records] == []
        # the same call with a bar keeps PyMC's lines (the test is able to see them)
        X, y = tiny
        fit(
            build_model(X, y, hidden_layer_sizes=(2,), random_state=0),
            method="nuts",
            draws=5,
            tune=5,
            chains=1,
            nuts_sampler="numpyro",
            random_seed=1,
            progressbar=True,
        )
    finally:
        log.setLevel(level)
    assert any(r.getMessage().startswith("NUTS[numpyro]") for r in records)


@pytest.mark.parametrize("sampler", ["numpyro", "pymc"])
def test_sample_more_continues_on_the_fitted_data_and_leaves_the_users(tiny, sampler, monkeypatch):
    """After pm.set_data for predictions the chains continued on the new rows: another
    posterior, silently (training accuracy 0.98 -> 0.50), and diagnostics at them. They
    continue on the fitted data, as if nothing had been set, and the model keeps the
    user's rows afterwards, after an error too."""
    import pymc as pm

    X, y = tiny
    model = build_model(X, y, hidden_layer_sizes=(2,), random_state=0)
    post = fit(
        model, method="nuts", draws=30, tune=30, chains=2, nuts_sampler=sampler, random_seed=1
    )
    plain = nuts.sample_more(post, 10, random_seed=3)
    X_new, y_new = X[:5] + 3.0, 1 - y[:5]
    pm.set_data({"X": X_new, "y": y_new}, model=model)
    more = nuts.sample_more(post, 10, random_seed=3)
    for name in ("w0", "b0", "w1", "b1"):
        np.testing.assert_array_equal(
            more.idata.posterior[name].values, plain.idata.posterior[name].values
        )
    assert more.diagnostics == plain.diagnostics and more.diagnostics["n_points"] == 40
    np.testing.assert_array_equal(model["X"].get_value(), X_new)
    np.testing.assert_array_equal(model["y"].get_value(), y_new)

    def fail(*args, **kwargs):
        assert model["X"].get_value().shape == X.shape  # the fitted rows, while sampling
        raise RuntimeError("sampler failed")

    monkeypatch.setattr(nuts, "sample_nuts", fail)
    with pytest.raises(RuntimeError, match="sampler failed"):
        nuts.sample_more(post, 10, random_seed=3)
    np.testing.assert_array_equal(model["X"].get_value(), X_new)
    np.testing.assert_array_equal(model["y"].get_value(), y_new)


def test_sample_more_refuses_bad_seeds_and_unknown_fitted_data(tiny):
    """A seed as fit takes (-1 failed deep in NumPy, 1.5 was taken silently); without
    the fitted data stored with the draws, no silent run on the model's current data."""
    post = _fit_nuts(tiny)
    for seed in (-1, 1.5, 2**70, True, np.random.default_rng(0)):
        with pytest.raises(ValueError, match="random_seed must be None or a whole number"):
            nuts.sample_more(post, 5, random_seed=seed)
    tree = post.idata.copy()
    del tree["constant_data"]
    with pytest.raises(
        ValueError, match="data the chains were fitted on are not stored.*for X, y\\)"
    ):
        nuts.sample_more(dataclasses.replace(post, idata=tree), 5)


def test_sample_more_leaves_a_data_container_added_since_the_fit(tiny):
    """A pm.Data added to the model after the fit (for predictions) is not the fit's:
    sample_more continues (it had refused: "Refit instead") and leaves it as it is."""
    import pymc as pm

    post = _fit_nuts(tiny)
    with post.model:
        extra = pm.Data("X_other", np.ones((3, 2)))
    more = nuts.sample_more(post, 5, random_seed=3)
    assert more.idata.posterior.sizes["draw"] == post.idata.posterior.sizes["draw"] + 5
    np.testing.assert_array_equal(extra.get_value(), np.ones((3, 2)))


def test_a_shallow_copy_of_a_nuts_posterior_keeps_its_model(tiny):
    """copy.copy went through __getstate__ (which drops the model for pickles and deep
    copies), and sample_more on the copy then asked for a refit."""
    import copy

    post = _fit_nuts(tiny)
    same = copy.copy(post)
    assert same.model is post.model and same == post
    assert nuts.sample_more(same, 5, random_seed=3).idata.posterior.sizes["draw"] == 35
    assert copy.deepcopy(post).model is None


def test_an_interrupt_does_not_wait_for_the_running_chains():
    """Ctrl-C while chains run in threads reaches the caller at once (the threads are
    left to finish on their own; the script then exits without waiting for them), where
    a ``with ThreadPoolExecutor`` block would wait for every chain first."""
    import os
    import signal
    import threading
    import time

    import jax.numpy as jnp

    release = threading.Event()

    def chain(x):
        release.wait(60)  # a long compiled call
        return jnp.asarray(x)

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    # Python's own Ctrl-C handler (a pytest-xdist worker ignores SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))  # Ctrl-C
    timer.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            nuts.ThreadedChains(2)(chain)(jnp.arange(2.0))
        assert time.perf_counter() - t0 < 30  # not the 60 s the chains would take
    finally:
        release.set()
        signal.signal(signal.SIGINT, previous)


def test_the_script_exits_without_waiting_for_threads():
    import subprocess
    import sys

    code = (
        "import threading, time\n"
        "from pymc_bnn.cli._main import _exit_now_if_threads_run\n"
        "threading.Thread(target=time.sleep, args=(120,)).start()\n"
        "_exit_now_if_threads_run(130)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert proc.returncode == 130


def test_threaded_chains_are_counted_by_the_fits_progress():
    """The short NUTS run's stage counts its chains as they end (``progress.chain_done``
    from ThreadedChains), and only a stage that counts chains does."""
    import io

    import jax.numpy as jnp

    from pymc_bnn._runtime.progress import FitProgress

    out = io.StringIO()
    p = FitProgress(enabled=True, stream=out, clock=iter(range(100)).__next__)
    with p.stage("NUTS sampling", fits=3, unit="chains"):
        nuts.ThreadedChains(2)(lambda x: jnp.asarray(x) * 2)(jnp.arange(3.0))
    with p.stage("other fits", fits=1):  # counts fits, not chains
        nuts.ThreadedChains(2)(lambda x: jnp.asarray(x))(jnp.arange(2.0))
    lines = [line.split(" (")[0] for line in out.getvalue().splitlines()]
    assert lines[1:4] == [f"fit:   {k} of 3 chains done" for k in (1, 2, 3)]
    assert lines[5:] == ["fit: other fits ...", "fit: other fits: done in 1 s"]
