"""A saved model file is checked as it is read: damaged data (a checksum that does not
match, NaN draws), hand-edited metadata and paths that are no file give one clear
error; loading closes the file; a fitted Posterior pickles or says what to pickle."""

import copy
import dataclasses
import json
import os
import pickle
from pathlib import Path

import h5py
import numpy as np
import pytest

from pymc_bnn import BayesianMLPClassifier, build_model, posterior_predictive
from pymc_bnn.estimators import persistence

# one worker computes the fitted model these tests share (pytest-xdist --dist loadgroup)
pytestmark = pytest.mark.xdist_group("persistence_integrity")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


@pytest.fixture(scope="module")
def clf(data):
    # 2,000 steps: the ELBO levels off on these 40 rows (no ConvergenceWarning)
    return BayesianMLPClassifier(
        (4,), n_iter=2000, n_draws=30, random_state=0, posterior_temperature=1.0
    ).fit(*data)


@pytest.fixture
def saved(clf, tmp_path):
    return clf.save(tmp_path / "model.nc")


def _data_offset(path: Path, name: str) -> int:
    """Where the bytes of dataset ``name`` start in the file (its first chunk's, or the
    contiguous data's)."""
    with h5py.File(path, "r") as f:
        dsid = f[name].id
        return dsid.get_chunk_info(0).byte_offset if f[name].chunks else dsid.get_offset()


def _flip(path: Path, offset: int, n: int = 8) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        chunk = f.read(n)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in chunk))


def _edit_metadata(path: Path, edit) -> None:
    with h5py.File(path, "r+") as f:
        raw = f.attrs[persistence._META]
        meta = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        edit(meta)
        f.attrs[persistence._META] = json.dumps(meta)


# ------------------------------------------------------------------ damaged data
def test_every_numeric_array_is_written_with_a_checksum(saved):
    found = {}

    def visit(name, obj):
        # a dimension without coordinates (the loss curve's "step") holds no data
        bare = str(obj.attrs.get("NAME", b"")).find("not a netCDF variable") >= 0
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "biuf" and not bare:
            found[name] = obj.fletcher32

    with h5py.File(saved, "r") as f:
        f.visititems(visit)
    assert {"posterior/w0", "posterior/b1", "posterior/draw", "loss_curve/loss_curve"} <= set(found)
    assert all(found.values()), found


def test_flipped_bytes_in_the_draws_are_refused(saved, data):
    """Before checksums, damaged weights loaded silently and changed the predictions."""
    _flip(saved, _data_offset(saved, "posterior/w0") + 8)
    with pytest.raises(
        ValueError,
        match=r"model\.nc is not a readable pymc_bnn model "
        r"file \(truncated, corrupted",
    ):
        BayesianMLPClassifier.load(saved)
    with pytest.raises(ValueError, match="not a readable pymc_bnn model file"):
        persistence.read_metadata(saved)


def test_a_nan_weight_is_refused_naming_the_variable(saved):
    """h5py recomputes the checksum as it writes: the draws themselves are checked."""
    with h5py.File(saved, "r+") as f:
        w = f["posterior/w1"]
        values = w[()]
        values[0, 3, 0, 0] = np.nan
        w[...] = values
    with pytest.raises(
        ValueError,
        match=r"model\.nc is a damaged pymc_bnn model file: "
        r"the draws of posterior/w1 are not all finite",
    ):
        BayesianMLPClassifier.load(saved)


def test_files_written_without_checksums_still_load(clf, data, tmp_path, monkeypatch):
    """Files written before the checksums were (simulated: the old encoding) load and
    predict as before; a loaded model saved again is checksummed."""
    monkeypatch.setattr(persistence, "_encoding", lambda groups: {g: {} for g in groups})
    old = clf.save(tmp_path / "old.nc")
    monkeypatch.undo()
    with h5py.File(old, "r") as f:
        assert not f["posterior/w0"].fletcher32 and f["posterior/w0"].chunks is None
    loaded = BayesianMLPClassifier.load(old)
    X, _ = data
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    again = loaded.save(tmp_path / "again.nc")
    with h5py.File(again, "r") as f:
        assert f["posterior/w0"].fletcher32
        # one chunk an array: h5netcdf's own chunk shapes padded the draws (files of a
        # small network 1.4-1.5x larger)
        assert f["posterior/w0"].chunks == f["posterior/w0"].shape
    np.testing.assert_array_equal(
        BayesianMLPClassifier.load(again).predict_proba(X), clf.predict_proba(X)
    )


# ------------------------------------------------------------------ open handles
def test_load_closes_the_file_and_the_same_path_can_be_saved_again(saved, data):
    loaded = BayesianMLPClassifier.load(saved)
    fds = Path("/proc/self/fd")
    if fds.is_dir():
        open_files = set()
        for fd in fds.iterdir():
            try:
                open_files.add(os.path.realpath(os.readlink(fd)))
            except OSError:  # the descriptor of the listing itself, closed meanwhile
                pass
        assert os.path.realpath(saved) not in open_files
    loaded.save(saved)  # h5py: "unable to truncate a file which is already open"
    X, _ = data
    np.testing.assert_array_equal(
        BayesianMLPClassifier.load(saved).predict_proba(X), loaded.predict_proba(X)
    )


# ------------------------------------------------------------------ paths
def test_a_missing_file_and_a_directory_say_which(tmp_path):
    for read in (lambda p: BayesianMLPClassifier.load(p), persistence.read_metadata):
        with pytest.raises(FileNotFoundError, match="No such file: .*absent.nc"):
            read(tmp_path / "absent.nc")
        with pytest.raises(IsADirectoryError, match="is a directory"):
            read(tmp_path)


# ------------------------------------------------------------------ edited metadata
@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda m: m["spec"].update(activation="bogus"), "activation"),
        (lambda m: m["spec"].update(hidden_layer_sizes=[0]), "hidden_layer_sizes"),
        (lambda m: m["spec"].update(n_classes=1), "n_classes"),
        (lambda m: m["spec"].update(prior_sigma=-1.0), "prior_sigma"),
        (lambda m: m["spec"].update(prior_sigma=[1.0]), "prior_sigma"),
        (lambda m: m["spec"].update(likelihood="poisson"), "likelihood"),
        (lambda m: m["spec"].update(batch_size=0), "batch_size"),
        (lambda m: m["params"].update(n_draws=-5), "n_draws"),
        (lambda m: m["params"].update(activation="bogus"), "activation"),
        (lambda m: m["params"].update(hidden_layer_sizes=[-3]), "hidden_layer_sizes"),
    ],
)
def test_hand_edited_metadata_is_refused_naming_the_field(saved, edit, field):
    """``activation="bogus"`` loaded and failed at the first prediction (KeyError);
    ``n_draws=-5`` loaded."""
    _edit_metadata(saved, edit)
    with pytest.raises(
        ValueError,
        match=rf"model\.nc is a damaged pymc_bnn model file: "
        rf".*{field}",
    ):
        BayesianMLPClassifier.load(saved)


def test_the_checked_metadata_loads_as_saved(saved, clf, data):
    """The checks turn the JSON lists into the tuples a fitted estimator holds."""
    loaded = BayesianMLPClassifier.load(saved)
    assert loaded.posterior_.spec == clf.posterior_.spec
    assert loaded.get_params() == clf.get_params()


# ------------------------------------------------------------------ pickling a Posterior
def test_a_live_vi_posterior_says_what_to_copy_instead(clf, data):
    """Deep-copying failed deep inside PyMC; cloudpickle writes it whole (as
    benchmarks/ppc_strategies.py ships it to its cells' processes)."""
    import cloudpickle

    post = clf.posterior_
    assert post.approx is not None and post.idata is None
    with pytest.raises(TypeError, match=r"posterior_predictive\(post\)"):
        copy.deepcopy(post)
    X, _ = data
    shipped = pickle.loads(cloudpickle.dumps(post))
    assert shipped.approx is not None and shipped.method == post.method
    np.testing.assert_array_equal(
        posterior_predictive(shipped, n_draws=20, random_seed=0).mean_proba(X),
        posterior_predictive(post, n_draws=20, random_seed=0).mean_proba(X),
    )
    # what it names pickles, and predicts the same
    pp = posterior_predictive(post, n_draws=20, random_seed=0)
    X, _ = data
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(pp)).mean_proba(X), pp.mean_proba(X))


def test_a_posterior_with_draws_pickles_and_copies_without_its_model(clf, data):
    """A NUTS posterior holds its draws and the PyMC model (which does not pickle:
    functools.partial, initial_values); the copy keeps the draws, predicts the same and
    has no model. (The model is a real one of build_model; the draws an estimator's.)"""
    X, y = data
    post = dataclasses.replace(
        clf.posterior_,
        method="nuts",
        approx=None,
        idata=clf.idata_,
        nuts_sampler="pymc",
        model=build_model(X, y, hidden_layer_sizes=(4,), random_state=0),
    )
    want = posterior_predictive(post, n_draws=None).mean_proba(X)
    for again in (pickle.loads(pickle.dumps(post)), copy.deepcopy(post)):
        assert again.model is None and post.model is not None
        assert (again.method, again.spec, again.seed) == (post.method, post.spec, post.seed)
        np.testing.assert_array_equal(again.loss, post.loss)
        assert not again.loss.flags.writeable
        assert dict(again.diagnostics) == dict(post.diagnostics)
        np.testing.assert_array_equal(posterior_predictive(again, n_draws=None).mean_proba(X), want)
    # as the estimator pickles it (approximation dropped, its draws kept)
    restored = pickle.loads(pickle.dumps(clf)).posterior_
    np.testing.assert_array_equal(
        posterior_predictive(pickle.loads(pickle.dumps(restored)), n_draws=None).mean_proba(X),
        posterior_predictive(restored, n_draws=None).mean_proba(X),
    )


def test_chunks_of_large_arrays_stay_under_the_limit():
    assert persistence._chunks((1, 500, 20, 32), 8) == (1, 500, 20, 32)
    assert persistence._chunks((0, 3), 8) == (1, 3)
    big = persistence._chunks((4, 500, 784, 100), 8)  # 1.25 GB of draws
    assert np.prod(big) * 8 <= persistence._MAX_CHUNK_BYTES and big[2:] == (784, 100)
