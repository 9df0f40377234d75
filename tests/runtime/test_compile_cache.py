"""JAX's persistent compilation cache, as pymc_bnn._runtime.compile_cache switches it on.

Each case runs a fresh Python process (the cache is process-wide configuration) with
its own cache directory: the tests never read a cache that another run warmed.
"""

import doctest
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pymc_bnn._runtime import compile_cache

pytestmark = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("jax") is None, reason="needs jax"
)

FIT = (
    "import warnings, numpy as np; warnings.simplefilter('ignore');"
    "from pymc_bnn import build_model, fit; from pymc_bnn._runtime import compile_cache;"
    "rng = np.random.default_rng(0); X = rng.normal(size=(40, 2));"
    "y = (X[:, 0] > 0).astype(int);"
    "post = fit(build_model(X, y, hidden_layer_sizes=(3,), random_state=0), n_iter=300,"
    " random_seed=0, warn=False);"
    "print(compile_cache.enable()); print(repr(post.loss[-1]));"
    "from pymc_bnn.inference._runner_cache import RUNNERS; print(RUNNERS.loads)"
)


def _run(tmp_path, script=FIT, **env):
    """(cache directory, last loss, runners read from disk) of a fresh process."""
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYMC_BNN_COMPILE_CACHE", "JAX_COMPILATION_CACHE_DIR")
    }
    full["XDG_CACHE_HOME"] = str(tmp_path / "xdg")  # never the caller's
    full.update(env)
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=full,
        capture_output=True,
        text=True,
        check=True,
        cwd=str(tmp_path),
    )
    return out.stdout.split()


def _entries(path: Path) -> set[str]:
    return {p.name for p in path.rglob("*") if p.is_file()}


@pytest.mark.extended  # five cold processes, ~1 minute: make test-extended (CI runs it)
def test_second_process_reads_the_cache_and_compiles_nothing_new(tmp_path):
    """The default place is $XDG_CACHE_HOME/pymc_bnn/jax; the first process writes its
    programs there (XLA's, and the compiled ADVI runner in pytensor-runners/), a
    second one finds every program of the fit (writes none), reads the runner back
    instead of compiling it, and computes the same fit to the last bit. A damaged
    runner file is dropped: the next process compiles (same fit) and stores it again.

    Every program is kept (MIN_COMPILE_SECONDS = 0), so the second process also writes
    JAX's one-op transfers (``jit_stage``) of the values it reads back with the runner,
    which the first process never made; a third process writes nothing at all."""
    where, loss, loads = _run(tmp_path)
    cache = tmp_path / "xdg" / "pymc_bnn" / "jax"
    assert Path(where) == cache and loads == "0"
    first = _entries(cache)
    assert first, "the first process wrote nothing to the cache"
    (stored,) = (cache / compile_cache.ENTRY_FOLDER).glob("*.pkl")
    where2, loss2, loads2 = _run(tmp_path)
    assert (where2, loss2, loads2) == (where, loss, "1")
    second = _entries(cache)
    assert first <= second
    assert all(name.startswith("jit_stage-") for name in second - first), second - first
    assert _run(tmp_path)[1:] == [loss, "1"]
    assert _entries(cache) == second

    stored.write_bytes(stored.read_bytes()[:50_000])  # e.g. a disk that filled up
    assert _run(tmp_path)[1:] == [loss, "0"]  # compiled, same fit
    assert _run(tmp_path)[1:] == [loss, "1"]  # stored again, whole: read back


#: Fits on data whose values are easy to recognise (full batch and minibatch, an
#: estimator with the evidence step), then prints the entries' folder.
FIT_MARKED = (
    "import warnings, numpy as np; warnings.simplefilter('ignore');"
    "from pymc_bnn import build_model, fit, BayesianMLPClassifier; "
    "from pymc_bnn._runtime import compile_cache;"
    "X = np.load('X.npy'); y = (X[:, 0] > X[:, 0].mean()).astype(int);"
    "fit(build_model(X, y, hidden_layer_sizes=(3,), random_state=0), n_iter=200, warn=False);"
    "fit(build_model(X, y, hidden_layer_sizes=(3,), batch_size=8, random_state=0),"
    " n_iter=200, warn=False);"
    "BayesianMLPClassifier((3,), n_iter=200, random_state=0).fit(X, y);"
    "print(compile_cache.entry_dir())"
)


def test_stored_functions_hold_no_data_of_a_fit(tmp_path):
    """What goes to disk is compiled code and graphs, never the user's rows (nor the
    fitted weights): no value of X appears in any stored file."""
    X = 1234.5 + np.arange(60 * 2, dtype=np.float64).reshape(60, 2) / 7.0
    np.save(tmp_path / "X.npy", X)
    (folder,) = _run(tmp_path, FIT_MARKED)
    files = list(Path(folder).glob("*.pkl"))
    assert len(files) >= 3  # two runners, the evidence step's functions
    blob = b"".join(f.read_bytes() for f in files)
    for value in X.ravel():
        assert value.tobytes() not in blob
    assert all(f.stat().st_mode & 0o077 == 0 for f in files)  # owner only
    assert Path(folder).stat().st_mode & 0o077 == 0


def test_entries_are_capped(monkeypatch, tmp_path):
    monkeypatch.setattr(compile_cache, "entry_dir", lambda: tmp_path)
    monkeypatch.setattr(compile_cache, "MAX_ENTRIES", 3)
    for k in range(5):
        assert compile_cache.write_entry(f"e{k}.pkl", bytes(10))
        os.utime(tmp_path / f"e{k}.pkl", (k, k))  # e4 most recently used
    assert sorted(p.name for p in tmp_path.glob("*.pkl")) == ["e2.pkl", "e3.pkl", "e4.pkl"]
    assert compile_cache.read_entry("e2.pkl") == bytes(10)  # used now: kept longest
    monkeypatch.setattr(compile_cache, "MAX_ENTRY_BYTES", 25)
    compile_cache.write_entry("e5.pkl", bytes(10))
    assert sorted(p.name for p in tmp_path.glob("*.pkl")) == ["e2.pkl", "e5.pkl"]
    monkeypatch.setattr(compile_cache, "MAX_FILE_BYTES", 9)
    assert not compile_cache.write_entry("e6.pkl", bytes(10))  # too large to be worth it
    assert compile_cache.write_entry("e7.pkl", bytes(9))
    assert sorted(p.name for p in tmp_path.glob("*.pkl")) == ["e5.pkl", "e7.pkl"]
    assert not list(tmp_path.glob(".tmp-*"))


def test_prune_keeps_the_most_recently_used_programs_under_the_cap(tmp_path):
    """Least recently used first (the file's access time), JAX's stale access-time
    files and nothing else deleted, the pruning's time stamped."""
    now = 1_800_000_000
    for k, used in enumerate((now - 30, now - 10, now - 20, now)):  # 0 and 2 oldest
        f = tmp_path / f"jit_f-{k}-cache"
        f.write_bytes(bytes(100))
        os.utime(f, (used, now - 40))
        (tmp_path / f"jit_f-{k}-atime").write_bytes(bytes(8))
    (tmp_path / "pytensor-runners").mkdir()
    (tmp_path / "pytensor-runners" / "r.pkl").write_bytes(bytes(500))
    assert compile_cache.prune(tmp_path, max_bytes=250) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        compile_cache.PRUNE_STAMP,
        "jit_f-1-cache",
        "jit_f-3-cache",
        "pytensor-runners",
    ]
    assert compile_cache.prune(tmp_path, max_bytes=250) == 0  # under the cap: nothing
    assert compile_cache.prune(tmp_path / "missing") == 0  # no folder: no error


PRUNED = (
    "import jax, time; from pymc_bnn._runtime import compile_cache as c;"
    "c.MAX_BYTES = 150; path = c.enable();"
    "print(jax.config.jax_compilation_cache_max_size);"
    "print(sorted(p.name for p in path.glob('*-cache')))"
)


def test_jax_writes_without_scanning_and_the_directory_is_pruned_hourly(tmp_path):
    """JAX's own cap (a scan of the directory on every write) is off; a process
    prunes the directory when the last pruning is older than PRUNE_INTERVAL_S."""
    cache = tmp_path / "xdg" / "pymc_bnn" / "jax"
    cache.mkdir(parents=True)
    for k in range(3):
        (cache / f"jit_f-{k}-cache").write_bytes(bytes(100))
        os.utime(cache / f"jit_f-{k}-cache", (1e9 + k, 1e9 + k))
    cap, kept = _run(tmp_path, PRUNED)[0], _run(tmp_path, PRUNED)  # pruned once
    assert cap == "-1" and kept[1:] == ["['jit_f-2-cache']"]
    (cache / "jit_f-9-cache").write_bytes(bytes(100))  # within the hour: not pruned
    assert _run(tmp_path, PRUNED)[1:] == ["['jit_f-2-cache',", "'jit_f-9-cache']"]
    old = 1e9
    os.utime(cache / compile_cache.PRUNE_STAMP, (old, old))
    os.utime(cache / "jit_f-9-cache", (1e9 + 10, 1e9 + 10))
    assert _run(tmp_path, PRUNED)[1:] == ["['jit_f-9-cache']"]


def test_cache_can_be_moved_or_switched_off(tmp_path):
    """Also where PyTensor's generated source goes: into the cache's folder, named by
    content, so nothing lands in the temporary directory (TMPDIR) while the cache is
    on; switched off, PyTensor's default is left alone: a new file per compiled
    function in TMPDIR (which also shows that this test sees those files)."""
    tmp_on, tmp_off = tmp_path / "tmp_on", tmp_path / "tmp_off"
    tmp_on.mkdir(), tmp_off.mkdir()
    where, loss, _ = _run(
        tmp_path, PYMC_BNN_COMPILE_CACHE=str(tmp_path / "mine"), TMPDIR=str(tmp_on)
    )
    assert Path(where) == tmp_path / "mine" and _entries(tmp_path / "mine")
    sources = list((tmp_path / "mine" / compile_cache.SOURCE_FOLDER).glob("*.py"))
    assert sources and "def " in sources[0].read_text()
    assert not list(tmp_on.iterdir())
    off, loss_off, _ = _run(tmp_path, PYMC_BNN_COMPILE_CACHE="off", TMPDIR=str(tmp_off))
    assert off == "None" and loss_off == loss
    assert not (tmp_path / "xdg").exists()
    assert any("def " in p.read_text() for p in tmp_off.iterdir() if p.is_file())


def test_compiled_functions_keep_their_generated_source_in_the_cache(monkeypatch, tmp_path):
    """A process whose first compilation is not a fit (a loaded model's predictive, here
    with Numba, which writes source like JAX) also keeps it out of the temporary
    directory."""
    import pytensor
    import pytensor.tensor as pt

    monkeypatch.setattr(compile_cache, "_state", {})
    monkeypatch.setattr(pytensor.config, "generated_src_dir", "")
    monkeypatch.setenv(compile_cache.ENV_VAR, str(tmp_path / "ours"))
    x = pt.dvector("x")
    f = compile_cache.compiled_function(("test", "tanh"), [x], pt.tanh(x) * 2, mode="NUMBA")
    np.testing.assert_allclose(f(np.array([0.0, 1.0])), [0.0, 2 * np.tanh(1.0)])
    folder = tmp_path / "ours" / compile_cache.SOURCE_FOLDER
    assert pytensor.config.generated_src_dir == str(folder)
    assert list(folder.glob("*.py"))


def test_a_cache_folder_this_process_cannot_write_is_not_given_to_jax(tmp_path):
    """A read-only folder (simulated: root writes anywhere) made JAX warn at every
    program it failed to store, dozens a fit: JAX is then given no cache folder."""
    script = (
        "import os; os.access = lambda *a, **k: False; "
        "from pymc_bnn._runtime import compile_cache; import jax; "
        "print(compile_cache.enable(), jax.config.jax_compilation_cache_dir)"
    )
    assert _run(tmp_path, script) == ["None", "None"]
    writable = script.replace("os.access = lambda *a, **k: False; ", "")
    assert _run(tmp_path, writable) == [str(tmp_path / "xdg" / "pymc_bnn" / "jax")] * 2


def test_a_generated_source_folder_pytensor_has_is_left_alone(monkeypatch, tmp_path):
    import pytensor

    monkeypatch.setattr(pytensor.config, "generated_src_dir", str(tmp_path / "users"))
    monkeypatch.setenv(compile_cache.ENV_VAR, str(tmp_path / "ours"))
    assert compile_cache._configure_source() == tmp_path / "users"
    assert pytensor.config.generated_src_dir == str(tmp_path / "users")
    assert not (tmp_path / "ours").exists()


#: FIT, then JAX's cache directory as the process left it.
FIT_JAX_DIR = FIT + "; import jax; print(jax.config.jax_compilation_cache_dir)"


def test_a_cache_jax_already_has_is_left_alone_and_off_stores_nothing_in_it(tmp_path):
    """The runners go beside JAX's programs in a directory the user gave JAX; with
    PYMC_BNN_COMPILE_CACHE=off none is read from there (a pickle runs code) or written,
    though JAX keeps its own cache there, as the user set it."""
    users = tmp_path / "users"
    where, loss, _, jax_dir = _run(tmp_path, FIT_JAX_DIR, JAX_COMPILATION_CACHE_DIR=str(users))
    assert Path(where) == users and Path(jax_dir) == users
    # pymc_bnn's own directory holds only PyTensor's generated source
    ours = tmp_path / "xdg" / "pymc_bnn" / "jax"
    assert {p.relative_to(ours).parts[0] for p in ours.rglob("*")} == {compile_cache.SOURCE_FOLDER}
    runners = users / compile_cache.ENTRY_FOLDER
    (stored,) = runners.glob("*.pkl")
    before = {p: p.stat().st_mtime_ns for p in runners.iterdir()}
    off = _run(
        tmp_path, FIT_JAX_DIR, JAX_COMPILATION_CACHE_DIR=str(users), PYMC_BNN_COMPILE_CACHE="off"
    )
    assert off == ["None", loss, "0", str(users)]  # compiled, not read; JAX's dir kept
    assert {p: p.stat().st_mtime_ns for p in runners.iterdir()} == before  # nor written


def _own_folder(monkeypatch, folder: Path) -> Path:
    """``folder`` as the stored functions' folder, with no warning given yet."""
    monkeypatch.setattr(compile_cache, "entry_dir", lambda: folder)
    monkeypatch.setattr(compile_cache, "_warned", set())
    return folder


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_a_folder_of_runners_others_can_write_to_is_made_the_users_alone(monkeypatch, tmp_path):
    """The folder's files are run when read: one the user made open to others (a
    shared cache directory, say) is made owner-only before it is used, and a file in
    it that others can write to, or that is another user's, is not read."""
    folder = _own_folder(monkeypatch, tmp_path / "pytensor-runners")
    folder.mkdir()
    os.chmod(folder, 0o777)
    assert compile_cache.read_entry("a.pkl") is None
    assert folder.stat().st_mode & 0o777 == 0o700
    os.chmod(folder, 0o775)
    assert compile_cache.write_entry("a.pkl", b"code")
    assert folder.stat().st_mode & 0o777 == 0o700
    assert compile_cache.read_entry("a.pkl") == b"code"
    os.chmod(folder / "a.pkl", 0o666)  # e.g. put there while the folder was open
    assert compile_cache.read_entry("a.pkl") is None
    os.chmod(folder / "a.pkl", 0o600)
    real_fstat = os.fstat

    def another_users(fd):  # the file opened, as if another user's
        st = real_fstat(fd)
        return os.stat_result((*st[:4], os.getuid() + 1, *st[5:]))

    monkeypatch.setattr(os, "fstat", another_users)
    assert compile_cache.read_entry("a.pkl") is None
    monkeypatch.setattr(os, "fstat", real_fstat)
    assert compile_cache.read_entry("a.pkl") == b"code"


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_a_folder_of_runners_of_another_user_is_not_used(monkeypatch, tmp_path):
    """Neither read nor written, with one warning per process; nor one others can write
    to whose mode cannot be changed."""
    folder = _own_folder(monkeypatch, tmp_path / "pytensor-runners")
    assert compile_cache.write_entry("a.pkl", b"code")
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)
    with pytest.warns(RuntimeWarning, match="belongs to another user") as record:
        assert compile_cache.read_entry("a.pkl") is None
        assert not compile_cache.write_entry("b.pkl", b"code")
        assert compile_cache.read_entry("a.pkl") is None
    assert len(record) == 1 and not (folder / "b.pkl").exists()
    monkeypatch.setattr(os, "getuid", lambda: real_uid)
    monkeypatch.setattr(compile_cache, "_warned", set())
    os.chmod(folder, 0o777)

    def refused(*args, **kwargs):
        raise PermissionError("not allowed")

    monkeypatch.setattr(os, "chmod", refused)
    with pytest.warns(RuntimeWarning, match="can be written by other users"):
        assert compile_cache.read_entry("a.pkl") is None
    monkeypatch.undo()
    os.chmod(folder, 0o700)


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


#: What calls the cache or compiles a graph: a module doing so must be in the digest.
_CACHE_CALLS = (
    "compiled_function(",
    "write_entry(",
    "load_entry(",
    "entry_name(",
    "RUNNERS",
    "pytensor.function(",
    "ScanADVI(",
)


def _module_names(paths, package: Path) -> set[str]:
    """Dotted names of module files relative to ``package`` (``inference.vi``)."""
    names = set()
    for p in paths:
        parts = p.relative_to(package).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__")
    return names


def test_the_source_digest_covers_the_graph_builders_and_not_downstream():
    """The digest in the entries' names covers every module that calls the cache or
    compiles a graph, and what they import; editing a downstream module (the
    estimators, tempering, the command line) keeps the stored functions."""
    package = Path(compile_cache.__file__).parents[1]
    covered = _module_names(compile_cache.graph_sources(), package)
    callers = _module_names(
        [
            p
            for p in package.rglob("*.py")
            if p.stem != "compile_cache"
            and any(c in p.read_text(encoding="utf-8") for c in _CACHE_CALLS)
        ],
        package,
    )
    assert callers and callers <= covered, callers - covered
    assert {
        "network.model",
        "network.spec",
        "_runtime.compile_cache",
        "inference.evidence",
        "predictive._predictive",
    } <= covered
    downstream = {
        "estimators",
        "estimators._classifier",
        "estimators._regressor",
        "policy._tempering",
        "cli",
        "cli._main",
        "tabular",
        "tabular._transform",
        "plotting",
        "metrics",
        "plotting.report",
        "estimators.persistence",
        "datasets",
        "__init__",
    }
    assert not covered & downstream


def _fake_package(root: Path, files: dict) -> Path:
    """A package folder named like this one holding ``files`` (relative path without
    ``.py`` -> source), an empty ``__init__`` and ``compile_cache``."""
    package = root / Path(compile_cache.__file__).parents[1].name
    package.mkdir(parents=True)
    for stem, text in {"__init__": "", "compile_cache": "", **files}.items():
        path = package / f"{stem}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_graph_sources_example_holds():
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(compile_cache.graph_sources):
        runner.run(test)
    assert runner.tries == 3 and runner.failures == 0


def test_graph_sources_follow_every_import_form(tmp_path):
    """The modules that import the cache are followed through absolute, relative, lazy
    (in a function) and ``import pymc_bnn.x`` imports, into subpackages (with their
    ``__init__``); ``from pymc_bnn import __version__`` is not followed."""
    package = _fake_package(
        tmp_path,
        {
            "inference/__init__": "from .vi import fit\n",
            "inference/vi": "from pymc_bnn import __version__\n"
            "from pymc_bnn.compile_cache import enable\n"
            "def f():\n    from pymc_bnn.model import g\n",
            "model": "from . import helper\n",
            "helper": "import pymc_bnn.deep\nfrom .sub import leaf\n",
            "deep": "import numpy\n",
            "sub/__init__": "",
            "sub/leaf": "",
            "sub/other": "",
            "estimator": "from pymc_bnn.inference import f\n",
        },
    )
    covered = _module_names(compile_cache.graph_sources(package), package)
    assert covered == {
        "compile_cache",
        "inference",
        "inference.vi",
        "model",
        "helper",
        "deep",
        "sub",
        "sub.leaf",
    }


@pytest.mark.parametrize("line", ["from pymc_bnn import BayesianMLPClassifier", "import pymc_bnn"])
def test_graph_sources_take_everything_through_the_package_init(tmp_path, line):
    """A name from the package's ``__init__`` may be any module: all files count."""
    package = _fake_package(
        tmp_path, {"predictive": f"import pymc_bnn.compile_cache\n{line}\n", "estimator": ""}
    )
    assert compile_cache.graph_sources(package) == sorted(package.rglob("*.py"))


def test_the_source_digest_changes_with_a_graph_builder_only(tmp_path):
    """Editing a covered module changes the digest; editing another does not."""
    package = _fake_package(
        tmp_path,
        {
            "inference": "from pymc_bnn import compile_cache, model\n",
            "model": "x = 1\n",
            "estimator": "y = 1\n",
        },
    )
    before = compile_cache.source_digest(package)
    (package / "estimator.py").write_text("y = 2\n")
    assert compile_cache.source_digest(package) == before
    (package / "model.py").write_text("x = 2\n")
    assert compile_cache.source_digest(package) != before


def test_the_source_digest_survives_moving_code_between_modules(tmp_path):
    """Where code sits is not part of the key: a function moved to a new module, a
    module renamed or turned into a subpackage keep the digest (and the stored
    functions); changing what the moved code does still changes it."""
    f = "def f(a):\n    return a + 1\n"
    g = "def g(a):\n    return 2 * a\n"
    before = compile_cache.source_digest(
        _fake_package(
            tmp_path / "a",
            {
                "inference": (
                    "from pymc_bnn import compile_cache\nfrom pymc_bnn.model import f, g\n"
                ),
                "model": f + g,
            },
        )
    )
    after = compile_cache.source_digest(
        _fake_package(
            tmp_path / "b",
            {
                "inference/__init__": "from .vi import f\nfrom pymc_bnn.graphs.network import g\n",
                "inference/vi": "from pymc_bnn.compile_cache import enable\n" + f,
                "graphs/__init__": "",
                "graphs/network": "import numpy\n\n\n" + g,
            },
        )
    )
    assert after == before
    changed = compile_cache.source_digest(
        _fake_package(
            tmp_path / "c",
            {
                "inference": (
                    "from pymc_bnn import compile_cache\nfrom pymc_bnn.model import f, g\n"
                ),
                "model": f.replace("+ 1", "+ 2") + g,
            },
        )
    )
    assert changed != before


def test_the_package_own_digest_survives_a_module_rename(tmp_path):
    """This package, copied with one of its graph modules renamed and every import of
    it rewritten, has the same digest as the package itself."""
    import re
    import shutil

    package = Path(compile_cache.__file__).parents[1]
    copy = tmp_path / package.name
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "inference" / "_structure.py").rename(copy / "inference" / "_keys.py")
    for path in copy.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(
            re.sub(r"\bpymc_bnn\.inference\._structure\b", "pymc_bnn.inference._keys", text),
            encoding="utf-8",
        )
    assert "_keys.py" in {p.name for p in compile_cache.graph_sources(copy)}
    assert compile_cache.source_digest(copy) == compile_cache.source_digest(package)


def test_a_stored_object_finds_its_class_after_the_class_moved(monkeypatch):
    """A file written when a stored class lived in another module of the package
    loads: the class is found by its registered name; an unregistered one is not."""
    import pickle

    class Moved:
        pass

    monkeypatch.setitem(compile_cache.STORED_CLASSES, "Moved", Moved)
    # pickle protocol 2: GLOBAL pymc_bnn.gone_module Moved, NEWOBJ, BUILD {"a": 1}
    data = b"\x80\x02cpymc_bnn.gone_module\nMoved\n)\x81}X\x01\x00\x00\x00aK\x01sb."
    obj = compile_cache.unpickle(data)
    assert type(obj) is Moved and obj.a == 1
    with pytest.raises((ModuleNotFoundError, AttributeError, pickle.UnpicklingError)):
        compile_cache.unpickle(data.replace(b"Moved", b"Other"))
    from pymc_bnn.inference._compiled_vi import ScanADVI

    assert compile_cache.STORED_CLASSES["ScanADVI"] is ScanADVI


def test_entry_names_follow_versions_source_and_settings(monkeypatch):
    """What shapes a compiled function is in its file name: the same parts under
    other PyTensor settings, another package source or graph format name another file."""
    import pytensor

    name = compile_cache.entry_name("function", ("x", 1))
    assert name == compile_cache.entry_name("function", ("x", 1)) and name.endswith(".pkl")
    assert name != compile_cache.entry_name("function", ("x", 2))
    with pytensor.config.change_flags(floatX="float32"):  # (rewriting flags are
        assert name != compile_cache.entry_name("function", ("x", 1))  # start-up only)
    monkeypatch.setattr(compile_cache, "GRAPH_FORMAT", compile_cache.GRAPH_FORMAT + 1)
    assert name != compile_cache.entry_name("function", ("x", 1))
    monkeypatch.undo()
    monkeypatch.setattr(compile_cache, "_source_digest", lambda: "edited")
    assert name != compile_cache.entry_name("function", ("x", 1))


def test_the_source_digest_ignores_docstrings_comments_and_layout(tmp_path):
    """Only code counts: documenting or reformatting a graph builder keeps the stored
    functions (each such edit used to cost every machine a cold test run); a change of
    what the code does, a string constant included, does not."""
    code = (
        '"""Module doc."""\nimport numpy as np\n\n\n'
        'class A:\n    """Class doc."""\n    x = "value"\n\n'
        'def f(a, b=1):\n    """Function doc."""\n    return np.tanh(a) * b  # note\n'
    )
    package = _fake_package(
        tmp_path, {"inference": "from pymc_bnn import compile_cache, model\n", "model": code}
    )
    model = package / "model.py"
    before = compile_cache.source_digest(package)
    for same in (
        code.replace("Module doc.", "Another module doc.").replace("Function doc.", "Doc."),
        code.replace('    """Class doc."""\n', "").replace("  # note", ""),
        code.replace("(a, b=1)", "(a,\n      b=1)").replace("\n\n\n", "\n# spacer\n\n\n"),
        code.replace("import numpy as np\n", "import numpy as np\nimport os\n"),
    ):
        model.write_text(same)
        assert compile_cache.source_digest(package) == before, same
    for other in (
        code.replace("b=1", "b=2"),
        code.replace('"value"', '"other"'),
        code.replace("np.tanh(a) * b", "np.tanh(a) * b + 0"),
    ):
        model.write_text(other)
        assert compile_cache.source_digest(package) != before, other


def test_the_source_digest_is_remembered_until_a_file_changes(tmp_path, monkeypatch):
    """A new process reads the digest from the cache folder instead of parsing every
    module, while no file of the package has changed (its size or modification time);
    the remembered value is the computed one."""
    # the folder of the stored functions, here a new one (enable() configures JAX for
    # the whole process, so the test does not call it)
    monkeypatch.setattr(compile_cache, "entry_dir", lambda: tmp_path)
    compile_cache._source_digest.cache_clear()
    try:
        first = compile_cache._source_digest()
        assert first == compile_cache.source_digest()
        memo = tmp_path / compile_cache.DIGEST_MEMO
        assert memo.is_file()
        # a remembered digest is used as long as the key matches ...
        import json

        data = json.loads(memo.read_text())
        memo.write_text(json.dumps({"key": data["key"], "digest": "remembered"}))
        compile_cache._source_digest.cache_clear()
        assert compile_cache._source_digest() == "remembered"
        # ... and a memo of other files is not
        memo.write_text(json.dumps({"key": "other files", "digest": "stale"}))
        compile_cache._source_digest.cache_clear()
        assert compile_cache._source_digest() == first
    finally:
        compile_cache._source_digest.cache_clear()
