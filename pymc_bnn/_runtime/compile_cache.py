"""A persistent cache of JAX compilations, so a new process does not compile again.

A fit's compiled ADVI scan and the predictive's forward pass are XLA programs; JAX
can keep them on disk (its *persistent compilation cache*) and a later process that
compiles the same program reads it back instead of spending the XLA compilation again
(measurements: research/notes/code-measurements.md). pymc_bnn switches it on the
first time it runs a JAX function, in the user's cache directory, unless

- the environment variable ``PYMC_BNN_COMPILE_CACHE`` is ``0``, ``off``, ``false`` or
  ``no`` (switched off: nothing of this package is written to or read from disk,
  whatever JAX's settings; a cache the user gave JAX stays JAX's), or a path (used
  instead of the default directory; ``1``, ``on``, ``true`` and ``yes`` mean the
  default directory, not a folder of that name);
- JAX already has a cache directory (``jax_compilation_cache_dir``, set by the user or
  ``JAX_COMPILATION_CACHE_DIR``): it is left alone (and used, as below).

The default directory is ``$XDG_CACHE_HOME/pymc_bnn/jax`` (``~/.cache/pymc_bnn/jax``
when ``XDG_CACHE_HOME`` is unset). Entries are keyed by the program, the JAX version
and the machine, so a stale or foreign entry is never used; the cache is capped at
:data:`MAX_BYTES` (the least recently used entries go first, pruned by
:func:`prune` at most once every :data:`PRUNE_INTERVAL_S` across processes, not by
JAX on every write). Note that JAX's cache
settings are process-wide: with the cache on, the user's own ``jax.jit`` programs
are cached too (every program, however fast it compiles: :data:`MIN_COMPILE_SECONDS`).

JAX's cache saves the XLA compilation only; building and rewriting the PyTensor graphs
costs more than that again per network structure in every new process (the ADVI scan
most, then the evidence step's functions and the predictive; measurements:
research/notes/code-measurements.md). So the compiled PyTensor
functions themselves are kept too, pickled, in a ``pytensor-runners`` folder inside the
same directory (same switch, same place; at most :data:`MAX_ENTRIES` files and
:data:`MAX_ENTRY_BYTES`, least recently used first out; none larger than
:data:`MAX_FILE_BYTES`): the ADVI runners
(:func:`pymc_bnn.inference._runner_cache.dump_runner`, which holds no data of a fit and is used
only when the new fit's graph equals the stored one), the evidence step's functions
and the predictive's forward pass (:func:`compiled_function`). A file's name carries the
versions of Python, PyMC, PyTensor, JAX, NumPy and pymc_bnn, :data:`GRAPH_FORMAT`, a
digest of the code that builds the graphs (:func:`graph_sources`: the modules that use
this cache and those they import; an edit of the estimators, the command line or
plotting keeps the files) and PyTensor's ``floatX`` and rewriting flags, so an upgrade,
an edited graph builder or other ``PYTENSOR_FLAGS`` never read an old file. The digest
is of the code's definitions, not of its files (:func:`source_digest`): moving code
between modules, splitting or renaming a module, or editing docstrings and comments
keeps the files, and a stored runner finds its class wherever it is defined now
(:func:`stored_class`). Like the XLA programs of JAX's
cache, the files are code this package wrote and runs (loading a pickle runs what it
says), so they are read only from a folder that is the user's alone: made so when
created, and when found open to others made so again (``chmod 700``); a folder of
another user's, or one others can write to that cannot be changed, is not used (one
warning), and a file of another user's or that others can write to is not read. A file
that fails to load is deleted and the graph compiled as usual.

PyTensor writes the Python source of every function it compiles with JAX or Numba to
a file (for tracebacks and Numba's type inference). Unless it is given a folder for
them (its ``generated_src_dir`` setting), each file is a new one in the system's
temporary directory that nothing ever removes: ~7 per default fit, 53,000 in ``/tmp``
after two days of this project's test runs. With the cache on, pymc_bnn gives PyTensor
the ``pytensor-src`` folder inside its own cache directory (:func:`cache_dir`, also
when JAX's programs go to a directory of the user's; :func:`keep_generated_source`),
where the files are named by their content (a later fit reuses them) and PyTensor
removes those unused for a month; a folder the user gave PyTensor is left alone.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import os
import pickle
import stat
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

__all__ = [
    "ENV_VAR",
    "MAX_BYTES",
    "MAX_ENTRIES",
    "MAX_ENTRY_BYTES",
    "MAX_FILE_BYTES",
    "MIN_COMPILE_SECONDS",
    "GRAPH_FORMAT",
    "PRUNE_INTERVAL_S",
    "STORED_CLASSES",
    "cache_dir",
    "compiled_function",
    "definitions",
    "enable",
    "entry_dir",
    "entry_name",
    "graph_sources",
    "keep_generated_source",
    "load_entry",
    "prune",
    "read_entry",
    "source_digest",
    "stored_class",
    "trusted_entry_dir",
    "unpickle",
    "write_entry",
]

#: Environment variable: ``0``/``off``/``false``/``no`` switches the cache off;
#: ``1``/``on``/``true``/``yes`` (or unset) keeps the default directory; a path moves it.
ENV_VAR = "PYMC_BNN_COMPILE_CACHE"
#: Size cap of JAX's programs in the cache directory, in bytes (:func:`prune`).
MAX_BYTES = 1 << 30
#: Least time between two prunings of the directory (:func:`prune`), in seconds. JAX's
#: own cap (``jax_compilation_cache_max_size``) is left off: with it, every program a
#: process writes first scans the whole directory (a stat and a read of each entry's
#: access-time file) to find what to evict: about 0.5 s a write at 6,000 entries, paid
#: by every compilation stored (a NUTS fit on a new shape stores ~80 programs;
#: measurements: research/notes/test-suite-time.md). One scan per interval instead.
PRUNE_INTERVAL_S = 3600
#: File in the directory whose modification time is that of the last pruning.
PRUNE_STAMP = ".pymc_bnn-pruned"
#: Programs that compile faster than this are not written. JAX's default, 1 s, would
#: keep none of ours (a small network's scan compiles in less); and the many small
#: programs JAX compiles op by op (NumPyro's NUTS set-up, PyMC's JAX sampling wrappers:
#: hundreds in notebook 06) cost more to compile again than to read, so every program
#: is kept: a second process of notebook 06 ran faster with 0 than with 0.05, for a few
#: MB more of cache (measurements: research/notes/code-measurements.md).
MIN_COMPILE_SECONDS = 0.0
#: Most compiled functions kept on disk, and their total size (a small network's ADVI
#: runner is well under 1 MB, the evidence step's Jacobian several MB). A structure fit
#: on data of several sizes keeps one runner per size, so work that cycles through more
#: functions than the cap holds (cross-validation of several data sets, a benchmark,
#: this package's test suite) finds none of them again (least recently used goes
#: first): with caps below the suite's working set a warm run of the suite compiled
#: many of its runners again. The total matches JAX's cap (measurements:
#: research/notes/code-measurements.md).
MAX_ENTRIES = 1024
MAX_ENTRY_BYTES = 1 << 30
#: A compiled function larger than this is not written: it reads back no faster than
#: it compiles (as measured for the evidence step's Jacobian for digits, hidden (32,),
#: whose constants are several times this bound), and a few such files would fill the
#: folder (measurements: research/notes/code-measurements.md).
MAX_FILE_BYTES = 16 << 20
#: Folder of the compiled runners, inside the directory of JAX's cache.
ENTRY_FOLDER = "pytensor-runners"
#: Folder of the Python source PyTensor generates for JAX and Numba functions, inside
#: pymc_bnn's cache directory (:func:`keep_generated_source`).
SOURCE_FOLDER = "pytensor-src"

_OFF = {"0", "off", "false", "no"}
_ON = {"1", "on", "true", "yes"}
_lock = threading.Lock()
_state: dict = {}


def cache_dir() -> Path | None:
    """The directory pymc_bnn would use, or None when switched off by :data:`ENV_VAR`.

    Examples
    --------
    >>> import os
    >>> from pymc_bnn._runtime.compile_cache import cache_dir
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
        was already given; None when switched off (then also where JAX was given a
        directory: JAX keeps its programs there as the user set it, but nothing of
        pymc_bnn is stored) or when the directory cannot be created (then JAX compiles
        as usual: the cache only saves time).
    """
    with _lock:
        if "dir" in _state:
            return _state["dir"]
        _state["dir"] = _configure()
        return _state["dir"]


def keep_generated_source() -> Path | None:
    """Point PyTensor's generated source at :data:`SOURCE_FOLDER` in :func:`cache_dir`
    (once per process), unless PyTensor already has a folder for it (the user's
    ``PYTENSOR_FLAGS=generated_src_dir=...``) or the cache is switched off.

    Returns
    -------
    Path or None
        The folder PyTensor writes its generated source to, or None: one file per
        function in the system's temporary directory (PyTensor's default).
    """
    with _lock:
        if "src" not in _state:
            _state["src"] = _configure_source()
        return _state["src"]


def _configure_source() -> Path | None:
    import pytensor

    existing = pytensor.config.generated_src_dir
    if existing:
        return Path(existing)
    path = _created(SOURCE_FOLDER, mode=0o700)
    if path is not None:
        pytensor.config.generated_src_dir = str(path)
    return path


def _created(*parts: str, mode: int = 0o777) -> Path | None:
    """``cache_dir() / parts``, created if need be; None when the cache is switched off
    or the folder cannot be created (then nothing is kept: the cache only saves time)."""
    base = cache_dir()
    if base is None:
        return None
    path = base.joinpath(*parts)
    try:
        path.mkdir(mode=mode, parents=True, exist_ok=True)
    except OSError:
        return None
    return path


def _configure() -> Path | None:
    if cache_dir() is None:
        # switched off before JAX's directory is looked at: "off" also keeps the
        # runners (pickles, which run code when read) out of a directory of JAX's
        return None
    import jax

    existing = jax.config.jax_compilation_cache_dir
    if existing:
        return Path(existing)
    path = _created()
    if path is None or not os.access(path, os.W_OK | os.X_OK):
        # a folder this process cannot write (read-only, another user's): JAX would warn
        # at every program it failed to store, dozens a fit; compile as usual instead
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_max_size", -1)  # no scan per write: prune()
    try:
        stamp = (path / PRUNE_STAMP).stat().st_mtime
    except OSError:
        stamp = 0.0
    if time.time() - stamp >= PRUNE_INTERVAL_S:
        prune(path)
    return path


#: Suffixes of JAX's files in its cache directory: a program, and (written by JAX only
#: while its own cap is on) the program's last use.
_JAX_PROGRAM, _JAX_ATIME = "-cache", "-atime"


def prune(path: Path, max_bytes: int | None = None) -> int:
    """Delete JAX's least recently used programs in ``path`` until the rest total at
    most ``max_bytes`` (default :data:`MAX_BYTES`); return how many were deleted. The
    time of last use is the file's access time (updated at most daily by ``relatime``
    mounts, the common default; with ``noatime``, its creation: the oldest go first).
    JAX's access-time files, which nothing updates while its cap is off, are deleted.
    Marks the time of the pruning in :data:`PRUNE_STAMP`. Errors (a folder another
    process is pruning, a read-only disk) are ignored: the cache only saves time.

    Examples
    --------
    >>> import tempfile; from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> for k in range(3):
    ...     _ = (d / f"jit_f-{k}-cache").write_bytes(b"x" * 100)
    >>> prune(d, max_bytes=250), sorted(p.name for p in d.glob("*-cache"))
    (1, ['jit_f-1-cache', 'jit_f-2-cache'])
    """
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    programs, total, removed = [], 0, 0
    try:
        with os.scandir(path) as it:
            for entry in it:
                try:
                    if entry.name.endswith(_JAX_ATIME):
                        os.unlink(entry.path)
                    elif entry.name.endswith(_JAX_PROGRAM) and entry.is_file():
                        st = entry.stat()
                        total += st.st_size
                        programs.append((max(st.st_atime, st.st_mtime), entry.name, st.st_size))
                except OSError:  # removed meanwhile by another process
                    continue
        programs.sort()
        for _, name, size in programs:
            if total <= max_bytes:
                break
            try:
                os.unlink(path / name)
                removed += 1
            except OSError:
                pass
            total -= size
        (path / PRUNE_STAMP).touch()
    except OSError:
        pass
    return removed


def entry_dir() -> Path | None:
    """The folder of pickled compiled runners: ``ENTRY_FOLDER`` in the directory
    :func:`enable` returns, or None when the cache is switched off."""
    base = enable()
    return None if base is None else base / ENTRY_FOLDER


def entry_name(*parts) -> str:
    """A file name for an entry described by ``parts`` (reprs), the versions of
    everything that shapes a compiled function and PyTensor's rewriting settings:
    another version or setting, another name."""
    from importlib.metadata import version

    import jax
    import numpy
    import pytensor

    from pymc_bnn import __version__

    # PyMC's version from its metadata: importing PyMC costs a prediction (which needs
    # PyTensor only) about a second
    versions = (
        sys.version,
        version("pymc"),
        pytensor.__version__,
        jax.__version__,
        numpy.__version__,
        __version__,
        GRAPH_FORMAT,
        _source_digest(),
    )
    # PyTensor settings that change what a graph compiles to (PYTENSOR_FLAGS)
    config = tuple(
        str(getattr(pytensor.config, k, None))
        for k in (
            "floatX",
            "optimizer",
            "optimizer_including",
            "optimizer_excluding",
            "optimizer_requiring",
        )
    )
    return hashlib.sha256(repr((versions, config, parts)).encode()).hexdigest()[:40] + ".pkl"


#: Version of what the stored functions are made of beyond the code the digest sees
#: (:func:`source_digest`): bump it when a change outside this package's code, or in
#: how a stored object is laid out, must not meet the old files.
GRAPH_FORMAT = 1


def _modules(package: Path) -> dict[str, Path]:
    """The package's modules by dotted name relative to it (``"predictive"``, a
    subpackage ``"inference"`` for its ``__init__`` and ``"inference.vi"``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts) or "__init__"] = path
    return found


def _imported(node, module: str, is_package: bool, package: str, names) -> set[str] | None:
    """The package's modules an import statement ``node`` of ``module`` loads (and
    the subpackages they sit in), or None for "anything": a name taken from the
    package's ``__init__`` that is not a module of it."""
    targets = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == package:
                return None  # the whole package, through its __init__
            if alias.name.startswith(package + "."):
                targets.append(alias.name[len(package) + 1 :])
    elif isinstance(node, ast.ImportFrom):
        if node.level:  # relative: inside the package
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            within = ".".join([*base, *([node.module] if node.module else [])])
        elif node.module == package or (node.module or "").startswith(package + "."):
            within = node.module[len(package) + 1 :]
        else:
            return set()
        for alias in node.names:
            if alias.name == "__version__" and not within:
                continue  # the version is in the file name on its own
            sub = f"{within}.{alias.name}" if within else alias.name
            if sub in names:
                targets.append(sub)
            elif within:
                targets.append(within)
            else:
                return None
    found = set()
    for target in targets:
        parts = target.split(".")
        found.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return found & names


def graph_sources(package: Path | None = None) -> list[Path]:
    """The package's source files a stored function can depend on, sorted.

    The modules that use this cache (they import ``pymc_bnn._runtime.compile_cache``), this one,
    and, transitively, every module of the package they import, wherever the import
    statement is (a function's lazy import counts). ``from pymc_bnn import
    __version__`` is not followed (the version is in the file name on its own); any
    other name imported from the package's ``__init__`` that is not a module of it
    stands for anything, so then every source file is returned.

    Parameters
    ----------
    package : Path, optional
        The package's folder (default: this package's).

    Returns
    -------
    list of Path

    Examples
    --------
    >>> from pymc_bnn._runtime.compile_cache import graph_sources
    >>> names = [p.name for p in graph_sources()]
    >>> "model.py" in names, "tabular.py" in names
    (True, False)
    """
    package = Path(__file__).parents[1] if package is None else Path(package)
    modules = _modules(package)
    names = set(modules)
    # the cache's own module, wherever it sits in the package
    cache = {m for m in modules if m.rsplit(".", 1)[-1] == "compile_cache"}
    imports, roots = {}, sorted(cache)
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps: set[str] | None = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found = _imported(node, module, path.name == "__init__.py", package.name, names)
                if found is not None and found & cache:
                    roots.append(module)
                deps = None if found is None or deps is None else deps | found
        imports[module] = deps
    seen: set[str] = set()
    todo = roots
    while todo:
        module = todo.pop()
        if module in seen or module not in modules:
            continue
        seen.add(module)
        if imports[module] is None:
            return sorted(modules.values())
        todo.extend(imports[module])
        parts = module.split(".")  # importing a.b runs the package a's __init__ first
        todo.extend(".".join(parts[:k]) for k in range(1, len(parts)))
    return sorted(modules[m] for m in seen)


def source_digest(package: Path | None = None) -> str:
    """Digest of the code that builds the stored graphs (:func:`graph_sources`): such
    code may change without a new version number (a development install), and must not
    meet its old programs. ``package``: as in :func:`graph_sources`.

    What is digested is the set of the modules' definitions as Python parses them
    (:func:`definitions`), not their files: moving a function or class to another
    module, or renaming or splitting a module, keeps the stored functions, and so does
    an edit of docstrings, comments, layout or import statements alone.

    Examples
    --------
    >>> from pymc_bnn._runtime.compile_cache import source_digest
    >>> len(source_digest())
    64
    """
    digest = hashlib.sha256()
    for code in sorted(c for path in graph_sources(package) for c in definitions(path)):
        digest.update(code.encode() + b"\0")
    return digest.hexdigest()


def definitions(path: Path) -> list[str]:
    """A module's top-level statements but its imports, docstrings and ``__all__``, each
    as the text of its syntax tree: what its bytecode is made of, but not where it
    sits, its comments, layout, line numbers or documentation."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if ast.get_docstring(node, clean=False) is not None:
                node.body = node.body[1:]
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
        out.append(ast.dump(node))
    return out


#: File, beside the stored functions (:func:`entry_dir`), that remembers the source
#: digest of a package's files as they were (path, size, modification time): parsing
#: every module costs a new process about half a second, a prediction's process
#: included.
DIGEST_MEMO = "source-digest.json"


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    """:func:`source_digest` of this package, once per process, and read from
    :data:`DIGEST_MEMO` while no file of the package has changed since it was written."""
    import json

    package = Path(__file__).parents[1]
    try:
        stats = sorted(
            (str(p.relative_to(package)), p.stat().st_size, p.stat().st_mtime_ns)
            for p in package.rglob("*.py")
        )
    except OSError:  # a file removed meanwhile
        return source_digest()
    key = hashlib.sha256(repr((str(package), stats)).encode()).hexdigest()
    base = trusted_entry_dir()  # a forged memo would name other files
    memo = None if base is None else base / DIGEST_MEMO
    try:
        known = json.loads(memo.read_text()) if memo is not None else {}
        if known.get("key") == key and isinstance(known.get("digest"), str):
            return known["digest"]
    except (OSError, ValueError, AttributeError):
        pass
    digest = source_digest()
    if memo is not None:
        try:
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=base, prefix=".tmp-")
            with os.fdopen(fd, "w") as f:
                json.dump({"key": key, "digest": digest}, f)
            os.replace(tmp, memo)
        except OSError:  # read-only: computed again next time
            pass
    return digest


#: Classes whose instances are stored (e.g. the ADVI runner), by name: a stored file
#: names a class by the module it was defined in, and a file written before the class
#: moved to another module finds it here (:func:`load_entry`).
STORED_CLASSES: dict[str, type] = {}


def stored_class(cls: type) -> type:
    """Class decorator: instances of ``cls`` are stored in the cache, and a stored file
    finds ``cls`` by its name wherever in the package it is defined now."""
    STORED_CLASSES[cls.__qualname__] = cls
    return cls


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.split(".")[0] == __name__.split(".")[0] and name in STORED_CLASSES:
            return STORED_CLASSES[name]
        return super().find_class(module, name)


def unpickle(data: bytes):
    """``pickle.loads(data)``, except that a class of this package registered with
    :func:`stored_class` is found by its name, whatever module the file names."""
    return _Unpickler(io.BytesIO(data)).load()


def compiled_function(parts: tuple, inputs, outputs, *, mode: str, **kwargs):
    """``pytensor.function(inputs, outputs, mode=mode, **kwargs)``; with JAX, the one an
    earlier process stored for the same ``parts`` is read back instead of compiling
    (~0.2 s per function), and a newly compiled one is stored.

    For functions without shared inputs (nothing of a fit in them). ``parts``: a
    tuple of plain values naming what determines the graph (its builder, sizes,
    options); what it leaves out, the versions and the graph builders' source in the
    file name (:func:`entry_name`) cover.
    """
    import pytensor
    from pytensor.compile import Function

    keep_generated_source()  # also where no fit ran first: a loaded model's predictions

    def build():
        return pytensor.function(inputs, outputs, mode=mode, **kwargs)

    if mode != "JAX" or entry_dir() is None:
        return build()
    name = entry_name("function", *parts)
    fn = load_entry(name, lambda obj: isinstance(obj, Function))
    if fn is None:
        fn = build()
        try:
            write_entry(name, pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL))
        except Exception:  # noqa: BLE001 - not picklable: compiled again next time
            pass
    return fn


def load_entry(name: str, accept):
    """The object stored as entry ``name``, unpickled, or None: absent, switched off,
    or damaged or not ``accept(obj)`` (then the file is deleted)."""
    data = read_entry(name)
    if data is None:
        return None
    import pytensor.link.jax.dispatch  # noqa: F401 - JAX in 64 bits, as at compile time

    try:
        obj = unpickle(data)
        if accept(obj):
            return obj
    except Exception:  # noqa: BLE001 - a damaged or foreign file: compile instead
        pass
    _drop_entry(name)
    return None


#: Folders :func:`trusted_entry_dir` has warned about (one warning per process each).
_warned: set = set()


def trusted_entry_dir() -> Path | None:
    """:func:`entry_dir` where its files may be run (unpickled), else None.

    The folder must be the user's and writable by no one else: one that is the user's
    but open to others (made by hand, or by another tool) is made owner-only first
    (``chmod 700``); one of another user's, or open to others and not changeable, is
    not used, with one warning (:class:`RuntimeWarning`). A folder not made yet is
    returned (:func:`write_entry` makes it owner-only). Where the system has no user
    ids (Windows) the folder is returned as it is.
    """
    folder = entry_dir()
    if folder is None or not hasattr(os, "getuid"):
        return folder
    try:
        st = folder.stat()
    except FileNotFoundError:
        return folder
    except OSError:
        return None
    problem = None
    if not stat.S_ISDIR(st.st_mode):
        problem = "is not a folder"
    elif st.st_uid != os.getuid():
        problem = f"belongs to another user (uid {st.st_uid})"
    elif st.st_mode & 0o077:
        try:
            os.chmod(folder, 0o700)
        except OSError:
            if st.st_mode & 0o022:
                problem = "can be written by other users and its mode cannot be changed"
    if problem is None:
        return folder
    with _lock:
        first = folder not in _warned
        _warned.add(folder)
    if first:
        warnings.warn(
            f"pymc_bnn does not use the compiled functions stored in {folder}: the folder "
            f"{problem}, and loading them would run whatever another user put there. "
            f"They are compiled again instead; make the folder yours alone (chmod 700), "
            f"or set {ENV_VAR} to another folder or to off.",
            RuntimeWarning,
            stacklevel=2,
        )
    return None


def read_entry(name: str) -> bytes | None:
    """The bytes of entry ``name``, or None (absent, switched off, unreadable, or in a
    folder or file that others could have written: :func:`trusted_entry_dir`)."""
    folder = trusted_entry_dir()
    if folder is None:
        return None
    path = folder / name
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())  # of the file read, whatever the name points to
            if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
                # not written by this user's write_entry (mode 0600): compiled again,
                # and the new file replaces it
                return None
            data = f.read()
        os.utime(path)  # recently used: evicted last
    except OSError:
        return None
    return data


def _drop_entry(name: str) -> None:
    """Delete entry ``name`` (one that failed to load)."""
    folder = entry_dir()
    if folder is not None:
        try:
            (folder / name).unlink()
        except OSError:
            pass


def write_entry(name: str, data: bytes) -> bool:
    """Store ``data`` as entry ``name`` (atomically: a reader never sees part of a
    file), then keep the :data:`MAX_ENTRIES` most recently used. Returns whether it
    was written; failing to write (read-only or full disk) only costs a compilation
    in a later process, and data larger than :data:`MAX_FILE_BYTES` is not written."""
    folder = trusted_entry_dir()
    if folder is None or len(data) > MAX_FILE_BYTES:
        return False
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _evict(folder)
    except OSError:
        return False
    return True


def _evict(folder: Path) -> None:
    """Keep the most recently used entries, at most :data:`MAX_ENTRIES` of them and
    :data:`MAX_ENTRY_BYTES` in all."""
    entries = []
    for p in folder.glob("*.pkl"):
        try:
            stat = p.stat()
        except OSError:  # removed meanwhile by another process
            continue
        entries.append((stat.st_mtime, stat.st_size, p))
    entries.sort(reverse=True)
    total = 0
    for k, (_, size, p) in enumerate(entries):
        total += size
        if k >= MAX_ENTRIES or total > MAX_ENTRY_BYTES:
            p.unlink(missing_ok=True)
