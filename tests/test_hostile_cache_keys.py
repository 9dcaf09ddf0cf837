"""The leaderboard's score cache against what its key used to miss: an edit to the dialeval code a metric calls, a
plugin's helper module, new weights in the same model folder, a library upgrade; and entries that are a FIFO, a
symbolic link, a symlinked cache folder or an entry whose ``seconds`` is text."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from dialeval.cli import main
from dialeval.meta import cache_key, leaderboard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, write_jsonl  # noqa: E402
from plugin_rows import forget, install_plugin  # noqa: E402

ADAPTER = '''
from pathlib import Path

from {name}.helper import FACTOR


def factory(options, config):
    weight = float((Path(options["model"]) / "weights.txt").read_text()) if options.get("model") else 1.0
    return lambda rows: {{"scores": [FACTOR * weight * len(r["response"].split()) for r in rows],
                          "signature": "plug"}}
'''


@pytest.fixture
def plug(tmp_path, monkeypatch):
    name = "cacheplug"
    package = install_plugin(tmp_path / "site", monkeypatch, name, {"adapter.py": ADAPTER.format(name=name),
                                                                  "helper.py": "FACTOR = 1.0\n"})
    yield package
    forget(name)


def _run(tmp_path, logs, **kw):
    data = tmp_path / "d.jsonl"
    if not data.exists():
        write_jsonl(data, items(40))
    logs.clear()
    return leaderboard.build(None, tmp_path / "lb", data=[data], metrics=["cacheplug"], n_resamples=100,
                             log=logs.append, **kw)


def _rho(report):
    return next(r["value"] for r in report["rows"] if r["metric"] == "cacheplug" and r["statistic"] == "pearson")


def test_a_plugin_helper_module_edit_is_rescored(plug, tmp_path):
    logs: list[str] = []
    first = _run(tmp_path, logs)
    _run(tmp_path, logs)
    assert logs[0] == "cacheplug / d / turn: cached"
    (plug / "helper.py").write_text("FACTOR = -1.0\n", encoding="utf-8")  # only the helper changes
    forget("cacheplug")
    flipped = _run(tmp_path, logs)
    assert "cacheplug / d / turn: rescored (the metric's code changed)" in logs
    assert _rho(flipped) == pytest.approx(-_rho(first), abs=1e-12)


def test_an_edit_to_the_dialeval_code_a_metric_calls_is_rescored(plug, tmp_path, monkeypatch):
    library = tmp_path / "fake-dialeval"
    library.mkdir()
    (library / "overlap.py").write_text("ORDER = 4\n", encoding="utf-8")
    real = cache_key.package_root
    monkeypatch.setattr(cache_key, "package_root", lambda m: library if m == "dialeval" else real(m))
    logs: list[str] = []
    _run(tmp_path, logs)
    _run(tmp_path, logs)
    assert logs[0] == "cacheplug / d / turn: cached"
    (library / "overlap.py").write_text("ORDER = 2\n", encoding="utf-8")
    _run(tmp_path, logs)
    assert "cacheplug / d / turn: rescored (the metric's code changed)" in logs


def test_new_weights_in_the_same_model_folder_are_rescored(plug, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.txt").write_text("1.0", encoding="utf-8")
    logs: list[str] = []
    args = {"metric_args": {"cacheplug": {"model": str(model)}}}
    first = _run(tmp_path, logs, **args)
    _run(tmp_path, logs, **args)
    assert logs[0] == "cacheplug / d / turn: cached"
    (model / "weights.txt").write_text("-1.0", encoding="utf-8")  # same folder, same size, new weights
    flipped = _run(tmp_path, logs, **args)
    assert "rescored (a file an option names changed" in " ".join(logs)
    assert _rho(flipped) == pytest.approx(-_rho(first), abs=1e-12)


def test_a_library_upgrade_is_rescored(plug, tmp_path, monkeypatch):
    logs: list[str] = []
    _run(tmp_path, logs)
    stored = json.loads((tmp_path / "lb" / "cache" / "cacheplug__d__turn.json").read_text(encoding="utf-8"))
    assert stored["libraries"]["numpy"] == cache_key.installed_versions()["numpy"]
    upgraded = {**cache_key.installed_versions(), "numpy": "99.0"}
    monkeypatch.setattr(cache_key, "installed_versions", lambda: upgraded)
    _run(tmp_path, logs)
    line = next(line for line in logs if "rescored" in line)
    assert line.startswith("cacheplug / d / turn: rescored (a library changed: numpy ") and "→ 99.0" in line
    _run(tmp_path, logs)
    assert logs[0] == "cacheplug / d / turn: cached"


def _alarm(seconds: int):
    def fail(*_):
        raise TimeoutError("blocked on the cache entry")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    return old


def test_a_fifo_in_place_of_a_cache_entry_is_refused_without_blocking(plug, tmp_path, capsys):
    logs: list[str] = []
    _run(tmp_path, logs)
    entry = tmp_path / "lb" / "cache" / "cacheplug__d__turn.json"
    entry.unlink()
    os.mkfifo(entry)
    old = _alarm(20)
    try:
        rc = main(["leaderboard", "--data", str(tmp_path / "d.jsonl"), "--metric", "cacheplug", "--resamples", "100",
                   "--out", str(tmp_path / "lb")])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith("dialeval leaderboard: error: cache entry ")
    assert "not a regular file" in err[-1]
    assert entry.is_fifo()  # left as it was


def test_a_symlinked_cache_folder_or_entry_is_refused_and_nothing_is_written_through_it(plug, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    precious = mine / "cacheplug__d__turn.json"
    precious.write_text("my own file", encoding="utf-8")
    out = tmp_path / "lb"
    out.mkdir()
    (out / leaderboard.MARKER).write_text("", encoding="utf-8")
    (out / "cache").symlink_to(mine)
    logs: list[str] = []
    with pytest.raises(ValueError, match="cache is a symbolic link"):
        _run(tmp_path, logs)
    assert precious.read_text(encoding="utf-8") == "my own file" and sorted(os.listdir(mine)) == [precious.name]
    (out / "cache").unlink()
    (out / "cache").mkdir()
    (out / "cache" / precious.name).symlink_to(precious)
    with pytest.raises(ValueError, match="cacheplug__d__turn.json is a symbolic link"):
        _run(tmp_path, logs)
    assert precious.read_text(encoding="utf-8") == "my own file"


def test_a_cache_part_whose_seconds_is_text_is_rescored(plug, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", items(210))  # two parts of 200 and 10 rows
    logs: list[str] = []
    _run(tmp_path, logs)
    part = tmp_path / "lb" / "cache" / "cacheplug__d__turn.part0.json"
    whole = tmp_path / "lb" / "cache" / "cacheplug__d__turn.json"
    whole.unlink()
    stored = json.loads(part.read_text(encoding="utf-8"))
    part.write_text(json.dumps({**stored, "seconds": "12"}), encoding="utf-8")
    report = _run(tmp_path, logs)
    assert any("turn.part0: rescored (cache file" in line and "its 'seconds' is '12', not a number of seconds"
               in line for line in logs)
    assert all(isinstance(r["seconds"], (int, float)) for r in report["rows"])
