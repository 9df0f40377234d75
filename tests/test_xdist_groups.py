"""The suite's layout relies on pytest-xdist's ``--dist loadgroup`` (``make test``):
tests that share an expensive session fixture (a benchmark script's quick run, a
LocalCluster, a fitted model) carry one ``xdist_group`` mark so that one worker runs
them all (for the fitted models of ``conftest.SHARED_FITS`` conftest.py adds the
marks). If grouping silently stops working, every worker repeats those fixtures:
pytest 9.2 with pytest-xdist 3.8 did exactly that (pytest-dev/pytest-xdist#1386), and
the benchmark scripts ran twice. These tests fail instead."""

import pytest

from conftest import SHARED_FITS


def _under_loadgroup(config) -> bool:
    return getattr(config, "workerinput", None) is not None and config.getvalue("loadgroup")


@pytest.mark.xdist_group("layout-check")
def test_xdist_groups_are_honoured(request):
    if not _under_loadgroup(request.config):
        pytest.skip("not running under pytest-xdist with --dist loadgroup")
    assert request.node.nodeid.endswith("@layout-check"), (
        f"pytest-xdist did not tag {request.node.nodeid!r} with its group: tests that "
        "share fixtures are spread over workers (see pytest-dev/pytest-xdist#1386; the "
        "test extra pins pytest < 9.2 for it)"
    )


@pytest.mark.xdist_group("layout-check")
def test_tests_sharing_a_fitted_model_share_one_group(request):
    """Every fixture of SHARED_FITS used by two or more of the collected tests is used
    within one xdist group only (so one worker computes it)."""
    if not _under_loadgroup(request.config):
        pytest.skip("not running under pytest-xdist with --dist loadgroup")
    groups = {}
    for item in request.session.items:
        defs = item._fixtureinfo.name2fixturedefs
        group = item.nodeid.rpartition("@")[2] if "@" in item.nodeid else None
        for name in SHARED_FITS.intersection(item.fixturenames):
            groups.setdefault((defs[name][-1].baseid, name), []).append(group)
    shared = {key: set(g) for key, g in groups.items() if len(g) > 1}
    if not shared:
        pytest.skip("no two of the selected tests share a fixture of SHARED_FITS")
    split = {key: g for key, g in shared.items() if len(g) > 1 or None in g}
    assert not split, f"shared fits used outside one xdist group: {split}"
