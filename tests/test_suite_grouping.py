"""The suite's own layout: under ``-n 2 --dist loadgroup`` (pyproject's addopts) every test carries its group,
so one worker takes a whole file (its module fixtures made once) and every Ray test shares one worker and one
cluster; the Ray group, the longest, is handed out first."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conftest import _group, _scheduled


def test_every_collected_test_runs_in_its_group(request):
    """pytest-xdist names the scope it schedules by after the group it finds on a test when its own collection
    hook runs; the suite's hook must add the groups before that, or every test is scheduled alone."""
    items = request.session.items
    assert request.node in items
    for item in items:
        assert [m.args[0] for m in item.iter_markers("xdist_group")] == [_group(item)], item.nodeid
    if request.config.getoption("loadgroup", False):  # -n 2 (the default); -n 0 runs in one process
        assert [item for item in items if not item.nodeid.endswith(f"@{_group(item)}")] == []
    assert [_group(item) for item in items] == [_group(item) for item in _scheduled(items)]  # the Ray group first


def test_the_ray_group_is_handed_out_first_and_the_rest_keep_their_order():
    def item(file: str, name: str) -> SimpleNamespace:
        return SimpleNamespace(path=Path("tests") / file, name=name)

    items = [item("test_a.py", "test_one"), item("test_distributed.py", "test_two"), item("test_b.py", "test_ray_x"),
             item("test_a.py", "test_three"), item("test_distributed_io.py", "test_four")]
    assert [i.name for i in _scheduled(items)] == ["test_two", "test_ray_x", "test_four", "test_one", "test_three"]
    assert [_group(i) for i in items] == ["test_a.py", "ray", "ray", "test_a.py", "ray"]
