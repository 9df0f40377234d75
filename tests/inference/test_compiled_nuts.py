"""nutpie models compiled once per structure (pymc_bnn.inference._compiled_nuts): the cached
path gives pm.sample's draws, bit for bit, and a later fit of the structure compiles nothing."""

import numpy as np
import pymc as pm
import pytest

import pymc_bnn
from pymc_bnn.inference._compiled_nuts import NutpieModels, _Name, _signature, sample_nutpie

pytest.importorskip("nutpie", reason="install the 'nutpie' extra")

SETTINGS = dict(draws=50, tune=50, chains=2)


def _model(X, y, n, sigma=1.0, hidden=(2,)):
    return pymc_bnn.build_model(
        X[:n], y[:n], hidden_layer_sizes=hidden, prior_sigma=sigma, random_state=0
    )


def _pm_sample(model, seed, initvals=None):
    """The slow, obvious path: PyMC compiles and samples with nutpie itself."""
    with model:
        return pm.sample(
            **SETTINGS,
            nuts_sampler="nutpie",
            random_seed=seed,
            initvals=initvals,
            progressbar=False,
            compute_convergence_checks=False,
        )


def _assert_same_draws(a, b):
    assert set(a.posterior.data_vars) == set(b.posterior.data_vars)
    for name in a.posterior.data_vars:
        np.testing.assert_array_equal(
            a.posterior[name].values, b.posterior[name].values, err_msg=name
        )
    for group in ("constant_data", "observed_data"):
        assert set(a[group].data_vars) == set(b[group].data_vars)
        for name in a[group].data_vars:
            np.testing.assert_array_equal(a[group][name].values, b[group][name].values)
    np.testing.assert_array_equal(
        a.sample_stats["diverging"].values, b.sample_stats["diverging"].values
    )


@pytest.fixture(scope="module")
def cached(tiny):
    """A private cache after one fit (a compilation) of a 2-unit network on 40 rows."""
    X, y = tiny
    cache = NutpieModels()
    model = _model(X, y, 40)
    X_before = model["X"].get_value().copy()
    with pytest.MonkeyPatch.context() as m:
        m.setenv("PYMC_BNN_NUM_THREADS", "2")  # both chains at once (pm.sample: 1 on 2 CPUs)
        first = sample_nutpie(model, seed=1, cache=cache, **SETTINGS)
    return cache, model, X_before, first


def test_first_fit_draws_equal_pm_sample(cached):
    cache, model, X_before, first = cached
    assert (cache.compiles, cache.misses, cache.hits) == (1, 1, 0)
    _assert_same_draws(first, _pm_sample(model, seed=1))


def test_a_later_fit_reuses_the_compiled_model_and_equals_pm_sample(cached, tiny, monkeypatch):
    """Fewer rows, another prior scale and a start point: no compilation (nutpie's
    compile function is made to fail), the chains in parallel on the threads allowed,
    and the draws PyMC's own nutpie call gives."""
    import nutpie

    cache, _, _, _ = cached
    X, y = tiny
    later = _model(X, y, 31, sigma=2.0)
    start = {
        rv.name: np.full(later.initial_point()[later.rvs_to_values[rv].name].shape, 0.1)
        for rv in later.free_RVs
    }
    cores, sample = [], nutpie.sample
    with monkeypatch.context() as m:
        m.setattr(nutpie, "compile_pymc_model", lambda *a, **k: pytest.fail("compiled"))
        m.setattr(nutpie, "sample", lambda *a, **k: cores.append(k["cores"]) or sample(*a, **k))
        m.setenv("PYMC_BNN_NUM_THREADS", "2")
        ours = sample_nutpie(later, seed=5, initvals=start, cache=cache, **SETTINGS)
    assert (cache.compiles, cache.hits) == (1, 1) and cores == [2]
    assert ours.posterior.sizes["chain"] == 2 and ours.observed_data["y_obs"].size == 31
    _assert_same_draws(ours, _pm_sample(later, seed=5, initvals=start))


def test_the_cache_keeps_no_model_and_no_data_and_mutates_nothing(cached, tiny):
    cache, model, X_before, _ = cached
    np.testing.assert_array_equal(model["X"].get_value(), X_before)
    (entry,) = cache._entries.values()
    assert all(isinstance(v, _Name) for v in entry.compiled.shared_var_keys)
    assert entry.compiled.logp_func is None and entry.compiled.expand_func is None
    assert all(a.size == 0 for a in entry.compiled.shared_data.values() if a.ndim)
    # the structure it is compared with has placeholders, not the model's variables
    own = {id(v) for v in model.free_RVs} | {id(model["X"]), id(model["y"])}
    assert not own & {id(v) for v in entry.inputs}
    # another structure is not served by it
    X, y = tiny
    assert entry.same(*_signature(_model(X, y, 40, hidden=(3,)))) is False
    assert entry.same(*_signature(_model(X, y, 20, sigma=0.5))) is True
