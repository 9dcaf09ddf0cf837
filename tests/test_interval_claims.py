"""No claim from an interval that carries no information, and system-level intervals that speak of other systems:
NCM-like systems (item-level ρ near 0, system-level ρ ≈ 0.24 over 13 systems) are not called positive; too few
resamples or every row in every subsample is refused in one line; an interval that leaves out its own value or has
no width is marked; a copy (or monotone function) of a human quality is flagged and never leads. Expected values
are known answers or scipy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.cli import main
from dialeval.meta import quality as lq
from dialeval.meta.evaluation import evaluate_scores
from dialeval.meta.stats import monotone_function, system_level_interval
from dialeval.meta.targets import COPY, STATISTICS, UNINFORMATIVE, Target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, write_jsonl  # noqa: E402

# 13 systems' mean human score (0..12) and mean metric score: a permutation whose Spearman ρ with 0..12 is 0.242
HUMAN_MEANS = np.arange(13.0)
METRIC_MEANS = np.array([0, 3, 12, 6, 2, 9, 7, 1, 10, 8, 11, 5, 4], dtype=float)


def _ncm_like(per_system: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Items whose noise is centred within each system: system means exactly HUMAN_MEANS / METRIC_MEANS, item
    scores dominated by independent noise (item-level ρ near 0)."""
    rng = np.random.default_rng(seed)
    s, h, g = [], [], []
    for j in range(13):
        a, b = rng.normal(scale=20, size=per_system), rng.normal(scale=20, size=per_system)
        s += list(METRIC_MEANS[j] + a - a.mean())
        h += list(HUMAN_MEANS[j] + b - b.mean())
        g += [f"sys{j:02d}"] * per_system
    return np.array(s), np.array(h), g


def test_ncm_like_systems_are_not_positive_at_system_level():
    s, h, g = _ncm_like()
    assert sps.spearmanr(METRIC_MEANS, HUMAN_MEANS).statistic == pytest.approx(0.2417582, abs=1e-6)
    assert abs(sps.spearmanr(s, h).statistic) < 0.1  # item level: nothing
    assert sps.spearmanr(METRIC_MEANS, HUMAN_MEANS).pvalue > 0.4  # a test over the 13 systems: nothing
    [row] = lq.system_rows(s, [Target("annotation_means.q", list(h), "spearman")], g, n_resamples=1000, seed=0,
                           confidence=0.95)
    assert row["value"] == pytest.approx(0.2417582, abs=1e-6) and row["n"] == 13
    assert row["resampled"] == "systems and items"
    assert row["ci_low"] < 0 < row["ci_high"] and row["state"] == "includes 0"


def test_systems_that_agree_are_positive_at_system_level():
    s, h, g = _ncm_like()
    s = s - np.repeat(METRIC_MEANS, 60) + np.repeat(HUMAN_MEANS, 60)  # system means now in the human order
    [row] = lq.system_rows(s, [Target("annotation_means.q", list(h), "spearman")], g, n_resamples=1000, seed=0,
                           confidence=0.95)
    assert row["value"] == 1.0 and row["state"] == "positive"
    assert row["ci_high"] < 1.0 and "leaves out its own value 1.000" in row["interval_note"]  # resamples fall below 1


def test_system_only_resampling_draws_whole_systems():
    # two systems with constant items: a system-only resample of them can only repeat the two means
    s, h, g = [0.0, 0.0, 1.0, 1.0, 2.0, 2.0], [0.0, 0.0, 2.0, 2.0, 1.0, 1.0], ["a", "a", "b", "b", "c", "c"]
    got = system_level_interval(STATISTICS["pearson"], s, h, g, n_resamples=200, seed=1, resample="systems")
    assert -1.0 <= got["low"] <= got["high"] <= 1.0 and got["undefined"] > 0  # a resample of one system is undefined
    with pytest.raises(ValueError, match="resample must be one of"):
        system_level_interval(STATISTICS["pearson"], s, h, g, resample="items")


@pytest.mark.parametrize("args, option", [(["--resamples", "1"], "--resamples"), (["--resamples", "99"], "--resamples"),
                                          (["--fraction", "1"], "--fraction"), (["--fraction", "0"], "--fraction")])
@pytest.mark.parametrize("command", ["meta-eval", "leaderboard"])
def test_intervals_without_information_are_refused_in_one_line(tmp_path, capsys, args, option, command):
    path = write_jsonl(tmp_path / "d.jsonl", items(20))
    extra = ["--out", str(tmp_path / "lb")] if command == "leaderboard" else []
    assert main([command, "--data", str(path), "--metric", "column:mine", *args, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert option in err and "\n" not in err and "Traceback" not in err


def test_an_interval_that_leaves_out_its_value_is_marked():
    # 3 items: every subsample of 2 has ρ = 1 or is undefined, so the interval is [1, 1]; ρ of all 3 is 0.866
    [row] = evaluate_scores([1.0, 2.0, 3.0], [Target("annotation_means.q", [1.0, 2.0, 2.0], "spearman")],
                            n_resamples=200)
    assert row["value"] == pytest.approx(sps.spearmanr([1, 2, 3], [1, 2, 2]).statistic, abs=1e-12)
    assert (row["ci_low"], row["ci_high"]) == (1.0, 1.0)
    assert row["state"] == UNINFORMATIVE and "subsamples of 2 items" in row["interval_note"]


def test_the_meta_eval_table_marks_an_uninformative_interval(tmp_path, capsys):
    rows = items(3, systems=1)
    for r, rel, mine in zip(rows, ([1, 1, 1], [2, 2, 2], [2, 2, 2]), (1.0, 2.0, 3.0)):
        r.update(relevance=rel, fluency=rel, mine=mine)
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    assert main(["meta-eval", "--data", str(path), "--metric", "column:mine", "--quality", "relevance"]) == 0
    out = capsys.readouterr().out
    assert "[1.000, 1.000] uninformative" in out and "no sign is read from it" in out
    assert "positive" not in out


@pytest.mark.parametrize("transform", [lambda y: y, lambda y: 3 * y - 7, np.exp, lambda y: -y, np.round])
def test_monotone_functions_of_a_quality_are_found(transform):
    y = np.array([1.0, 2.5, 2.5, 4.0, 3.0, 1.5, np.nan, 5.0])
    assert monotone_function(transform(np.nan_to_num(y, nan=9.0)), y)


def test_a_metric_that_only_correlates_is_not_a_copy():
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert not monotone_function([1.0, 3.0, 2.0, 4.0, 5.0], y)
    assert not monotone_function([2.0, 1.0, 3.0, 4.0, 5.0], [1.0, 1.0, 3.0, 4.0, 5.0])  # equal y, different x
    assert not monotone_function([3.0] * 5, y)  # constant: undefined, not a copy


def _rows(scores: dict[str, np.ndarray], y: np.ndarray) -> list[dict]:
    target = Target("annotation_means.overall", list(y), "spearman")
    return [{"metric": m, "dataset": "d", "config": "turn", "level": "item", **r}
            for m, s in scores.items() for r in evaluate_scores(s, [target], n_resamples=200)]


def test_a_copy_of_the_human_rating_never_leads():
    rng = np.random.default_rng(4)
    y = rng.normal(size=80)
    scores = {"copy": 2 * y + 1, "good": y + rng.normal(scale=0.3, size=80), "noise": rng.normal(size=80)}
    rows = _rows(scores, y)
    copy = next(r for r in rows if r["metric"] == "copy")
    assert copy["value"] == 1.0 and copy["state"] == COPY and copy["copies"] == "annotation_means.overall"
    pairs = [{"dataset": "d", "config": "turn", "target": "annotation_means.overall", "statistic": "spearman",
              "metric_a": "good", "metric_b": "noise", "p_one_sided": 0.001}]
    found = {c["metric"]: c for c in lq.clusters(rows, pairs)}
    assert not found["copy"]["leads"] and found["copy"]["rank"] is None
    assert found["good"]["leads"] and found["good"]["rank"] == 1 and found["noise"]["rank"] == 2


def test_the_leaderboard_flags_a_column_equal_to_the_rating(tmp_path, capsys):
    rows = items(40)
    for r in rows:
        r["mine"] = float(np.mean(r["relevance"]))
    out = tmp_path / "lb"
    assert main(["leaderboard", "--data", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--out", str(out),
                 "--metric", "column:mine", "--overall", "relevance", "--resamples", "100"]) == 0
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    mine = [c for c in board["clusters"] if c["metric"] == "column:mine"]
    assert mine and not any(c["leads"] for c in mine)
    page = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "copy of a human quality" in page and "System level: systems drawn with replacement" in page
    assert "Item level: subsamples of 0.5 of the items drawn without replacement" in page


@pytest.mark.parametrize("value, low, high, state", [
    (0.3, 0.2, 0.2, UNINFORMATIVE),  # zero width short of ±1: one resample, or every row in every subsample
    (1.0, 1.0, 1.0, "positive"),  # every resample perfectly monotone
    (-0.05, 0.1, 0.4, "includes 0"),  # widened to its value, which is below 0
    (0.05, -0.4, -0.1, "includes 0"),
    (0.5, 0.1, 0.4, "positive"),
])
def test_states_never_claim_more_than_interval_and_value_share(value, low, high, state):
    from dialeval.meta.targets import row_state

    assert row_state("spearman", value, low, high) == state
    assert row_state("spearman", 0.9, 0.5, 1.0, subsample=2) == UNINFORMATIVE
