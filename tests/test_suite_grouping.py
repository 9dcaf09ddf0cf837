"""The suite's own layout: under ``-n 2 --dist loadgroup`` (pyproject's addopts) every test carries its group,
so one worker takes a whole file (its module fixtures made once) and every Ray test shares one cluster."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conftest import _group, _scheduled


def test_this_test_runs_in_its_files_group(request):
    group = _group(request.node)
    assert group == "test_suite_grouping.py"
    assert [m.args[0] for m in request.node.iter_markers("xdist_group")] == [group]
    if request.config.getvalue("loadgroup"):  # pytest-xdist schedules by the group it appends to the test's id
        assert request.node.nodeid.endswith(f"@{group}")


def test_the_ray_group_is_handed_out_first_and_the_rest_keep_their_order():
    def item(file: str, name: str) -> SimpleNamespace:
        return SimpleNamespace(path=Path("tests") / file, name=name)

    items = [item("test_a.py", "test_one"), item("test_distributed.py", "test_two"), item("test_b.py", "test_ray_x"),
             item("test_a.py", "test_three"), item("test_distributed_io.py", "test_four")]
    assert [i.name for i in _scheduled(items)] == ["test_two", "test_ray_x", "test_four", "test_one", "test_three"]
    assert [_group(i) for i in items] == ["test_a.py", "ray", "ray", "test_a.py", "ray"]
