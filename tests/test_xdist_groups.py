"""The suite's layout relies on pytest-xdist's ``--dist loadgroup`` (``make test``):
tests that share an expensive session fixture (a benchmark script's quick run, a
LocalCluster, a fitted model) carry one ``xdist_group`` mark so that one worker runs
them all. If grouping silently stops working, every worker repeats those fixtures:
pytest 9.2 with pytest-xdist 3.8 did exactly that (pytest-dev/pytest-xdist#1386), and
the benchmark scripts ran twice. This test fails instead."""

import pytest


@pytest.mark.xdist_group("layout-check")
def test_xdist_groups_are_honoured(request):
    config = request.config
    if getattr(config, "workerinput", None) is None or not config.getvalue("loadgroup"):
        pytest.skip("not running under pytest-xdist with --dist loadgroup")
    assert request.node.nodeid.endswith("@layout-check"), (
        f"pytest-xdist did not tag {request.node.nodeid!r} with its group: tests that "
        "share fixtures are spread over workers (see pytest-dev/pytest-xdist#1386; the "
        "test extra pins pytest < 9.2 for it)"
    )
