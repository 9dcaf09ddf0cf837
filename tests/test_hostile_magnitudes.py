"""Ratings and scores too large to correlate: a rating, a stored column, a --scores value or a metric's score of
1e308 is one line naming where it is (Pearson printed 0.000 where scipy gives 0.240), never a wrong number."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dialeval.cli import main
from dialeval.meta import leaderboard
from dialeval.meta.evaluation import evaluate_scores, quality_targets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, write_jsonl  # noqa: E402


def _one_line(capsys, argv: list[str]) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("dialeval leaderboard: error: "), err
    return err[0]


@pytest.mark.parametrize("field,value,what", [("relevance", [1e308, 2, 3], "quality 'relevance'"),
                                              ("relevance", 1e308, "quality 'relevance'"),
                                              ("mine", -1e200, "column 'mine'")])
def test_a_huge_rating_or_column_is_one_line_naming_the_record(tmp_path, capsys, field, value, what):
    rows = items(30)
    rows[4][field] = value
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    line = _one_line(capsys, ["leaderboard", "--data", str(data), "--metric", "column:mine", "--quality",
                              "relevance", "--out", str(tmp_path / "lb")])
    assert f"d.jsonl, line 5: {what} is " in line and "beyond ±1e+100" in line and "rescale it" in line


def test_a_huge_own_score_is_one_line(tmp_path, capsys):
    rows = items(30)
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    scores = write_jsonl(tmp_path / "s.jsonl", [{"id": r["id"], "score": 1e308 if i == 2 else i}
                                                for i, r in enumerate(rows)])
    line = _one_line(capsys, ["leaderboard", "--data", str(data), "--scores", f"big={scores}", "--out",
                              str(tmp_path / "lb")])
    assert "s.jsonl, line 3: score is 1e+308, beyond ±1e+100" in line


def test_a_metric_score_of_1e308_is_refused_not_correlated_as_zero():
    rows = [{"annotation_means": {"q": float(q)}} for q in (1, 2, 3, 4, 5, 1, 2)]
    targets = [t for t in quality_targets(rows) if t.statistic == "pearson"]
    with pytest.raises(ValueError, match="gave a score of 1e\\+308 for row 3, beyond ±1e100"):
        evaluate_scores([0.1, 0.2, 0.3, 1e308, 0.5, 0.1, 0.2], targets, n_resamples=5)


def test_ratings_up_to_the_bound_correlate_as_scipy_does(tmp_path):
    from scipy import stats as sps

    rows = items(30)
    for i, r in enumerate(rows):
        r["relevance"] = [(i % 7) * 1e99]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    report = leaderboard.build(None, tmp_path / "lb", data=[data], metrics=["column:mine"], qualities=["relevance"],
                               n_resamples=100, log=lambda _: None)
    got = next(r["value"] for r in report["rows"] if r["statistic"] == "pearson" and r.get("level") == "item")
    expected = sps.pearsonr([r["mine"] for r in rows], [(i % 7) * 1e99 for i in range(30)]).statistic
    assert got == pytest.approx(expected, abs=1e-12)
