"""JAX's persistent compilation cache, as pymc_bnn.compile_cache switches it on.

Each case runs a fresh Python process (the cache is process-wide configuration) with
its own cache directory: the tests never read a cache that another run warmed.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pymc_bnn import compile_cache

pytestmark = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("jax") is None, reason="needs jax"
)

FIT = (
    "import warnings, numpy as np; warnings.simplefilter('ignore');"
    "from pymc_bnn import build_model, fit, compile_cache;"
    "rng = np.random.default_rng(0); X = rng.normal(size=(40, 2));"
    "y = (X[:, 0] > 0).astype(int);"
    "post = fit(build_model(X, y, hidden_layer_sizes=(3,), random_state=0), n_iter=300,"
    " random_seed=0, warn=False);"
    "print(compile_cache.enable()); print(repr(post.loss[-1]))"
)


def _run(tmp_path, **env):
    full = {k: v for k, v in os.environ.items()
            if k not in ("PYMC_BNN_COMPILE_CACHE", "JAX_COMPILATION_CACHE_DIR")}
    full.update(env)
    full.setdefault("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    out = subprocess.run([sys.executable, "-c", FIT], env=full, capture_output=True,
                         text=True, check=True, cwd=str(tmp_path))
    return out.stdout.split()


def _entries(path: Path) -> set[str]:
    return {p.name for p in path.rglob("*") if p.is_file()}


def test_second_process_reads_the_cache_and_compiles_nothing_new(tmp_path):
    """The default place is $XDG_CACHE_HOME/pymc_bnn/jax; the first process writes its
    programs there, a second one finds every program it needs (writes no new entry)
    and computes the same fit."""
    where, loss = _run(tmp_path)
    cache = tmp_path / "xdg" / "pymc_bnn" / "jax"
    assert Path(where) == cache
    first = _entries(cache)
    assert first, "the first process wrote nothing to the cache"
    where2, loss2 = _run(tmp_path)
    assert (where2, loss2) == (where, loss)
    assert _entries(cache) == first


def test_cache_can_be_moved_or_switched_off(tmp_path):
    where, loss = _run(tmp_path, PYMC_BNN_COMPILE_CACHE=str(tmp_path / "mine"))
    assert Path(where) == tmp_path / "mine" and _entries(tmp_path / "mine")
    off, loss_off = _run(tmp_path, PYMC_BNN_COMPILE_CACHE="off")
    assert off == "None" and loss_off == loss
    assert not (tmp_path / "xdg").exists()


def test_a_cache_jax_already_has_is_left_alone(tmp_path):
    where, _ = _run(tmp_path, JAX_COMPILATION_CACHE_DIR=str(tmp_path / "users"))
    assert Path(where) == tmp_path / "users"
    assert not (tmp_path / "xdg").exists()


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(compile_cache.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.cache_dir() == tmp_path / "pymc_bnn" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compile_cache.cache_dir() == Path.home() / ".cache" / "pymc_bnn" / "jax"
    for off in ("0", "off", "False", " no "):
        monkeypatch.setenv(compile_cache.ENV_VAR, off)
        assert compile_cache.cache_dir() is None
    for on in ("1", "on", "True", " yes "):  # the default place, not a folder named "1"
        monkeypatch.setenv(compile_cache.ENV_VAR, on)
        assert compile_cache.cache_dir() == Path.home() / ".cache" / "pymc_bnn" / "jax"
    monkeypatch.setenv(compile_cache.ENV_VAR, "~/elsewhere")
    assert compile_cache.cache_dir() == Path.home() / "elsewhere"
