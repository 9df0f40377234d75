"""A persistent cache of JAX compilations, so a new process does not compile again.

A fit's compiled ADVI scan and the predictive's forward pass are XLA programs; JAX
can keep them on disk (its *persistent compilation cache*) and a later process that
compiles the same program reads it back instead (measured on moons: ~0.5 s of XLA
compilation per program). pymc_bnn switches it on the first time it runs a JAX
function, in the user's cache directory, unless

- the environment variable ``PYMC_BNN_COMPILE_CACHE`` is ``0``, ``off``, ``false`` or
  ``no`` (switched off), or a path (used instead of the default directory; ``1``,
  ``on``, ``true`` and ``yes`` mean the default directory, not a folder of that name);
- JAX already has a cache directory (``jax_compilation_cache_dir``, set by the user or
  ``JAX_COMPILATION_CACHE_DIR``): it is left alone.

The default directory is ``$XDG_CACHE_HOME/pymc_bnn/jax`` (``~/.cache/pymc_bnn/jax``
when ``XDG_CACHE_HOME`` is unset). Entries are keyed by the program, the JAX version
and the machine, so a stale or foreign entry is never used; the cache is capped at
:data:`MAX_BYTES` (JAX evicts the least recently used entries). Note that JAX's cache
settings are process-wide: with the cache on, the user's own ``jax.jit`` programs
that take longer than :data:`MIN_COMPILE_SECONDS` to compile are cached too.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["ENV_VAR", "MAX_BYTES", "MIN_COMPILE_SECONDS", "cache_dir", "enable"]

#: Environment variable: ``0``/``off``/``false``/``no`` switches the cache off;
#: ``1``/``on``/``true``/``yes`` (or unset) keeps the default directory; a path moves it.
ENV_VAR = "PYMC_BNN_COMPILE_CACHE"
#: Size cap of the cache directory in bytes (JAX evicts least recently used entries).
MAX_BYTES = 1 << 30
#: Programs that compile faster than this are not written (JAX's default is 1 s, which
#: would keep none of ours: a small network's scan compiles in ~0.5 s).
MIN_COMPILE_SECONDS = 0.05

_OFF = {"0", "off", "false", "no"}
_ON = {"1", "on", "true", "yes"}
_lock = threading.Lock()
_state: dict = {}


def cache_dir() -> Path | None:
    """The directory pymc_bnn would use, or None when switched off by :data:`ENV_VAR`.

    Examples
    --------
    >>> import os
    >>> from pymc_bnn.compile_cache import cache_dir
    >>> os.environ["PYMC_BNN_COMPILE_CACHE"] = "off"; cache_dir() is None
    True
    >>> del os.environ["PYMC_BNN_COMPILE_CACHE"]
    """
    value = os.environ.get(ENV_VAR, "").strip()
    if value.lower() in _OFF:
        return None
    if value and value.lower() not in _ON:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pymc_bnn" / "jax"


def enable() -> Path | None:
    """Switch on JAX's persistent compilation cache (once per process).

    Returns
    -------
    Path or None
        The cache directory in use: pymc_bnn's (:func:`cache_dir`), or the one JAX
        was already given; None when switched off or when the directory cannot be
        created (then JAX compiles as usual: the cache only saves time).
    """
    with _lock:
        if "dir" in _state:
            return _state["dir"]
        _state["dir"] = _configure()
        return _state["dir"]


def _configure() -> Path | None:
    import jax

    existing = jax.config.jax_compilation_cache_dir
    if existing:
        return Path(existing)
    path = cache_dir()
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    return path
