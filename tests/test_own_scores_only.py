"""A user's own rows as a new user meets them: items whose response is their reference are counted, named and
optionally left out; DSTC10 JSON items have ids ``<dialogue_id>:<position>`` and the "no id matches" error shows
that form; ``--metric none`` scores only the user's ``--scores`` (and ``column:``) on a built-in dataset or a
reference-free file. Expected values are counts of the files written here and scipy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.cli import main
from dialeval.meta import own_data
from dialeval.meta.evaluation import protocol_rows, raw_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, write_jsonl  # noqa: E402


def _with_copies(n: int = 20, copies: int = 3) -> list[dict]:
    rows = items(n, varied_words=True)
    for r in rows[:copies]:
        r.update(response=" " + r["reference"] + " ", system="ground-truth")
    return rows


def test_responses_equal_to_their_reference_are_counted_and_named(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", _with_copies())
    kept = own_data.read(path, columns=["mine"])
    assert len(kept.rows) == 20
    note = next(n for n in kept.notes if "equal to their reference" in n)
    assert note.startswith("3 of 20 items of d.jsonl have a response equal to their reference (by system: "
                           "'ground-truth' 3; e.g. id 'i0'): kept")
    left = own_data.read(path, columns=["mine"], copies="leave-out")
    assert [r["id"] for r in left.rows] == [f"i{k}" for k in range(3, 20)]
    assert any(n.endswith("left out (--reference-copies leave-out)") for n in left.notes)
    with pytest.raises(ValueError, match=r"--reference-copies 'drop': use one of \['keep', 'leave-out'\]"):
        own_data.read(path, copies="drop")


def test_the_reports_say_which_choice_was_made(tmp_path, capsys):
    path = write_jsonl(tmp_path / "d.jsonl", _with_copies())
    assert main(["meta-eval", "--data", str(path), "--metric", "column:mine", "--resamples", "100",
                 "--reference-copies", "leave-out"]) == 0
    out = capsys.readouterr().out
    assert "left out (--reference-copies leave-out)" in out and "turn    17" in out
    board = tmp_path / "lb"
    assert main(["leaderboard", "--data", str(path), "--metric", "column:mine", "--resamples", "100",
                 "--out", str(board)]) == 0
    page = (board / "leaderboard.md").read_text(encoding="utf-8")
    assert "3 of 20 items of d.jsonl have a response equal to their reference" in page and ": kept" in page


def _dstc10(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    data = [{"dialogue_id": f"dlg{k // 4}", "model": f"m{k % 4}", "context": "hi\nhello", "response": f"reply {k}",
             "reference": "a reference", "annotations": {"overall": [int(x) for x in rng.integers(1, 6, size=3)]}}
            for k in range(24)]
    data[5]["annotations"] = {}  # no annotations: left out, its position still counts
    path = tmp_path / "track5.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_dstc10_items_have_dialogue_id_and_position_ids(tmp_path):
    got = own_data.read(_dstc10(tmp_path))
    ids = [r["id"] for r in got.rows]
    assert ids[:6] == ["dlg0:0", "dlg0:1", "dlg0:2", "dlg0:3", "dlg1:4", "dlg1:6"] and len(ids) == 23


def test_no_matching_id_shows_the_expected_form(tmp_path, capsys):
    path = _dstc10(tmp_path)
    scores = write_jsonl(tmp_path / "s.jsonl", [{"id": str(k), "score": 0.5} for k in range(24)])
    assert main(["meta-eval", "--data", str(path), "--scores", f"mine={scores}", "--resamples", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no id in it matches" in err and "its ids are like '0', '1'" in err and "'dlg0:0', 'dlg0:1'" in err
    assert "DIALOGUE_ID:POSITION" in err and "\n" not in err


def test_metric_none_scores_only_your_scores_on_a_built_in_dataset(tmp_path, shared_data):
    rows = protocol_rows("usr_topicalchat", raw_rows("usr_topicalchat", "turn", data_dir=shared_data / "usr_topicalchat"))
    mine = [float(len(r["response"])) for r in rows]
    scores = write_jsonl(tmp_path / "s.jsonl", [{"id": r["id"], "score": s} for r, s in zip(rows, mine)])
    out = tmp_path / "lb"
    assert main(["leaderboard", "--data-dir", str(shared_data), "--dataset", "usr_topicalchat", "--metric", "none",
                 "--scores", f"mine={scores}", "--resamples", "100", "--out", str(out)]) == 0
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert {r["metric"] for r in board["rows"]} == {"mine"} and not board["pairs"]
    row = next(r for r in board["rows"] if r["target"] == "annotation_means.Overall" and r["statistic"] == "spearman"
               and r["level"] == "item")
    human = [r["annotation_means"]["Overall"] for r in rows]
    assert row["value"] == pytest.approx(sps.spearmanr(mine, human).statistic, abs=1e-12) and row["n"] == 300


def test_metric_none_on_a_reference_free_file(tmp_path):
    rows = items(30)
    for r in rows:
        del r["reference"]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    scores = write_jsonl(tmp_path / "s.jsonl", [{"id": r["id"], "score": r["mine"]} for r in rows])
    out = tmp_path / "lb"
    assert main(["leaderboard", "--data", str(path), "--metric", "none", "--scores", f"own={scores}",
                 "--resamples", "100", "--out", str(out)]) == 0
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert {r["metric"] for r in board["rows"]} == {"own"}


@pytest.mark.parametrize("extra, message", [
    (["--metric", "bleu"], "--metric none scores no metric, only your --scores and column:NAME; drop --metric bleu"),
    ([], "--metric none scores only your own scores: give --scores NAME=FILE or --metric column:NAME"),
])
def test_metric_none_says_what_it_takes(tmp_path, capsys, extra, message):
    path = write_jsonl(tmp_path / "d.jsonl", items(10))
    assert main(["leaderboard", "--data", str(path), "--metric", "none", *extra, "--out", str(tmp_path / "lb")]) == 2
    assert message in capsys.readouterr().err
