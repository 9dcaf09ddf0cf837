"""A failed ``dialeval leaderboard`` removes what it wrote into its ``--out`` folder and nothing else: an existing
empty folder is empty again, a folder it created is gone, and scores it cached stay (with the marker) so that
the rerun resumes from them; an interrupted run keeps everything."""

from __future__ import annotations

import errno
import json

import pytest

from dialeval.cli import main
from dialeval.meta import leaderboard


def _data(tmp_path, n=30):
    rows = [{"id": f"i{i}", "context": ["hi"], "response": "word " * (i % 5 + 1), "reference": "ok",
             "system": f"s{i % 3}", "relevance": [1 + i % 5, 1 + (i * 7) % 5], "mine": float(i % 4)} for i in range(n)]
    path = tmp_path / "own.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(tmp_path, out, *extra):
    return main(["leaderboard", "--data", str(_data(tmp_path)), "--metric", "column:mine", "--resamples", "100",
                 "--out", str(out), *extra])


def test_a_failed_run_leaves_an_existing_empty_folder_empty(tmp_path, capsys):
    out = tmp_path / "board"
    out.mkdir()
    assert _run(tmp_path, out, "--overall", "nosuch") != 0  # fails after the folder was prepared
    assert "nosuch" in capsys.readouterr().err
    assert out.is_dir() and list(out.iterdir()) == []
    assert _run(tmp_path, out) == 0 and (out / "leaderboard.json").is_file()


def test_a_failed_run_removes_the_folder_it_created(tmp_path):
    out = tmp_path / "new" / "board"
    assert _run(tmp_path, out, "--overall", "nosuch") != 0
    assert not (tmp_path / "new").exists()


def test_a_full_disk_removes_what_the_run_wrote_into_an_existing_folder(tmp_path, monkeypatch):
    out = tmp_path / "board"
    out.mkdir()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(leaderboard, "write_outputs", full)
    assert _run(tmp_path, out) != 0
    assert out.is_dir() and list(out.iterdir()) == []


def test_a_failed_rerun_keeps_what_an_earlier_run_wrote(tmp_path):
    out = tmp_path / "board"
    assert _run(tmp_path, out) == 0
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert _run(tmp_path, out, "--overall", "nosuch") != 0
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_cached_scores_of_a_failed_run_stay_for_the_rerun(tmp_path, monkeypatch):
    """A metric scored (and cached) before the failure: its cache and the marker stay, and the rerun reads them."""
    path = _data(tmp_path)
    out = tmp_path / "board"
    out.mkdir()
    calls = []

    def fake(metric, decl, config, rows, *rest):
        calls.append(metric)
        return {"scores": [float(len(r["response"])) for r in rows], "signature": "fake"}

    monkeypatch.setattr(leaderboard, "offline_reason", lambda decl: None)
    monkeypatch.setattr(leaderboard, "score_rows", fake)
    args = ["leaderboard", "--data", str(path), "--metric", "token_f1", "--resamples", "100", "--out", str(out)]
    monkeypatch.setattr(leaderboard, "write_outputs", lambda *a: (_ for _ in ()).throw(RuntimeError("late")))
    with pytest.raises(RuntimeError, match="late"):
        main(args)
    assert calls == ["token_f1"] and (out / leaderboard.MARKER).is_file() and any((out / "cache").iterdir())
    monkeypatch.undo()
    monkeypatch.setattr(leaderboard, "offline_reason", lambda decl: None)
    monkeypatch.setattr(leaderboard, "score_rows", fake)
    assert main(args) == 0 and calls == ["token_f1"]  # resumed from the cache: not scored again
