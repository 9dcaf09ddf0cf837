"""Issue 33 items 6 and 8: no paired test of a metric against itself or against the human reference, and
``hub build --leaderboard`` refuses a ``leaderboard.json`` whose names would become unsafe paths."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dialeval.hub import repos as hub
from dialeval.meta import leaderboard


def test_no_pair_with_the_human_reference_or_itself(shared_data, tmp_path):
    # conTest's stored abs_hds_mean is human_score_mean itself: paired with Sent-BERT on that target, Williams'
    # test measured the reference against itself (p ≈ 4e-79).
    report = leaderboard.build(shared_data, tmp_path / "lb", datasets=["contest"],
                               metrics=["column:metrics.abs_hds_mean", "column:metrics.SentBert"], n_resamples=100,
                               log=lambda _: None)
    kept = {(p["config"], p["target"], p["statistic"]) for p in report["pairs"]}
    assert ("con_test_200_resp_gen", "human_score_mean", "spearman") not in kept
    assert ("dec_test_200_resp_gen", "human_score_mean", "spearman") not in kept
    assert ("con_test_200_resp_gen", "label_value", "spearman") in kept  # a real comparison stays
    out = {(p["config"], p["target"]): p["reason"] for p in report["pairs_left_out"]}
    assert out == {(c, "human_score_mean"): "column:metrics.abs_hds_mean is the human reference of this target"
                   for c in ("con_test_200_resp_gen", "dec_test_200_resp_gen")}
    assert "No paired test column:metrics.abs_hds_mean vs column:metrics.SentBert" in (
        tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")


def test_pair_left_out_rules():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    a, b = np.array([0.1, 0.5, 0.2, 0.9]), np.array([0.3, 0.1, 0.8, 0.2])
    assert leaderboard.pair_left_out("a", "b", a, b, y) is None
    assert leaderboard.pair_left_out("a", "a2", a, a.copy(), y).startswith("self-pair")
    assert leaderboard.pair_left_out("a", "human", a, y.copy(), y) == "human is the human reference of this target"


def _board(folder, metric):
    folder.mkdir()
    row = {"metric": metric, "dataset": "fed", "config": "turn", "target": "annotation_means.Overall",
           "statistic": "spearman", "value": 0.3, "ci_low": 0.2, "ci_high": 0.4, "n": 375}
    (folder / "leaderboard.json").write_text(json.dumps(
        {"generator": "dialeval leaderboard", "rows": [row], "pairs": [], "skipped": [], "published": [],
         "bootstrap": {"confidence": 0.95}, "signature": "x"}), encoding="utf-8")
    return folder


@pytest.mark.parametrize("metric", [5, None, "../../escape", "a/b"])
def test_hub_build_refuses_unsafe_or_malformed_names(tmp_path, metric):
    board = _board(tmp_path / "board", metric)
    with pytest.raises(ValueError, match=r"leaderboard\.json: rows\[0\]\.metric is") as err:
        hub.build("acme", tmp_path / "hub", from_index=True, only=[], leaderboard=board)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "hub").exists()


def test_hub_build_refuses_an_absolute_metric_path(tmp_path):
    target = tmp_path / "outside" / "evil"
    board = _board(tmp_path / "board", str(target))
    with pytest.raises(ValueError, match=r"rows\[0\]\.metric is"):
        hub.build("acme", tmp_path / "hub", from_index=True, only=[], leaderboard=board)
    assert not target.with_suffix(".yaml").exists() and not (tmp_path / "outside").exists()


def test_hub_build_refuses_a_report_that_is_not_json(tmp_path):
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="is not valid JSON"):
        hub.build("acme", tmp_path / "hub", from_index=True, only=[], leaderboard=board)


def test_rerunning_an_out_folder_with_other_metrics_says_which_rows_it_replaced(tmp_path, capsys):
    """The README's headline commands each write ``--out lb/``: a run with another metric replaces the files, and
    says so in one line naming the rows it replaced and how to see them together; the same run again says nothing."""
    from pathlib import Path

    from dialeval.cli import main

    ratings = str(Path(__file__).resolve().parents[1] / "docs" / "examples" / "ratings.jsonl")
    out = str(tmp_path / "lb")

    def board(*metrics: str) -> list[str]:
        args = ["leaderboard", "--data", ratings, "--overall", "relevance", "--out", out, "--resamples", "100"]
        assert main([*args, *(a for m in metrics for a in ("--metric", m))]) == 0
        return [line for line in capsys.readouterr().err.splitlines() if "note:" in line and "replaced" in line]

    assert board("column:my_metric") == []
    assert board("column:my_metric") == []  # the same rows again
    [line] = board("token_f1")
    assert line.startswith(f"dialeval leaderboard: note: {out} held rows this run replaced (column:my_metric on "
                           "ratings/")
    assert "--metric column:my_metric --metric token_f1" in line and f"cached in {out}/cache" in line
    rows = json.loads((tmp_path / "lb" / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert {r["metric"] for r in rows} == {"token_f1"}  # what the note says: this run's rows only
    assert board("column:my_metric", "token_f1") == []  # together: nothing replaced
