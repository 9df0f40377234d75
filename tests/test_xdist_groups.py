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


class _Item:
    """What conftest's ordering reads of a collected test."""

    def __init__(self, nodeid, group=None, slow=False):
        self.nodeid, self.slow = nodeid, slow
        self.marks = [pytest.mark.xdist_group(group).mark] if group else []

    def iter_markers(self, name):
        return [m for m in self.marks if m.name == name]

    def get_closest_marker(self, name):
        return pytest.mark.slow.mark if name == "slow" and self.slow else None


def test_units_of_work_go_out_heaviest_first():
    """conftest orders the units of work (a group, or a test of its own) by weight, so
    that long ones do not come last (``make test`` keeps the order with
    ``--no-loadscope-reorder``); a unit's tests stay together and in collection order."""
    from conftest import SLOW_WEIGHT, _heaviest_first

    items = [
        _Item("a"),
        _Item("g1"),
        _Item("nb", slow=True),
        _Item("b", group="G"),
        _Item("c"),
        _Item("d", group="G"),
        _Item("e", group="H"),
        _Item("f", group="H", slow=True),
        _Item("g", group="G"),
    ]
    _heaviest_first(items)
    assert [i.nodeid for i in items] == ["e", "f", "nb", "b", "d", "g", "a", "g1", "c"]
    assert SLOW_WEIGHT > 3  # a slow test outweighs group G's three fast ones
