"""What the table says about weak and undefined rows, each on a small synthetic case with a known answer: "leads"
needs an interval above 0 and a rival, significantly negative and sole rows are marked, an undefined correlation
has no rank, no cluster and no interval, a summary of undefined units prints no interval, a missing overall
quality is one clear error, a one-item system is left out of the system level (every resample keeps every
system), ``n`` counts only items with a human score, and the clusters follow mt-metrics-eval's one-sided p ≤ 0.05."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.meta import quality as lq
from dialeval.meta import tables
from dialeval.meta.evaluation import STATISTICS, Target, evaluate_scores, targets_for
from dialeval.meta.sources import DatasetDeclaration
from dialeval.meta.stats import paired_permutation, significance_ranks

RATED = DatasetDeclaration(name="toy", protocol="rated", levels={"turn": "turn"}, overall={"turn": "q"})


def _row(metric, value, low, high, config="turn"):
    return {"metric": metric, "dataset": "toy", "config": config, "target": "annotation_means.q",
            "statistic": "spearman", "level": "item", "value": value, "ci_low": low, "ci_high": high}


def _pair(a, b, p, config="turn"):
    return {"metric_a": a, "metric_b": b, "dataset": "toy", "config": config, "target": "annotation_means.q",
            "statistic": "spearman", "p_one_sided": p}


def test_leads_needs_an_interval_above_zero_and_a_rival():
    rows = [_row("a", 0.30, 0.10, 0.50), _row("b", 0.25, -0.05, 0.55), _row("c", -0.40, -0.60, -0.20),
            _row("solo", 0.9, 0.8, 0.95, config="other")]
    pairs = [_pair("a", "b", 0.4), _pair("a", "c", 0.001), _pair("b", "c", 0.001)]
    got = {(c["metric"], c["config"]): c for c in lq.clusters(rows, pairs)}
    # a and b share the top cluster; only a's interval excludes 0 upwards
    assert (got[("a", "turn")]["rank"], got[("a", "turn")]["leads"]) == (1, True)
    assert (got[("b", "turn")]["rank"], got[("b", "turn")]["leads"], got[("b", "turn")]["state"]) == (1, False, "includes 0")
    assert (got[("c", "turn")]["rank"], got[("c", "turn")]["state"], got[("c", "turn")]["leads"]) == (2, "negative", False)
    assert (got[("solo", "other")]["rank"], got[("solo", "other")]["sole"], got[("solo", "other")]["leads"]) == (1, True, False)
    report = {"clusters": list(got.values()), "datasets": {"toy/turn": {"overall": "annotation_means.q"},
                                                           "toy/other": {"overall": "annotation_means.q"}}}
    md = "\n".join(tables.quality_markdown(report))
    assert "| toy | other | annotation_means.q | 1 (sole) | solo | 0.900 |  |" in md
    assert "| toy | turn | annotation_means.q | 2 | c | -0.400 | significantly negative |" in md
    assert "| toy | turn | annotation_means.q | 1 | a | 0.300 | leads |" in md


def test_constant_human_scores_are_undefined_with_no_rank_and_no_interval():
    scores = np.arange(10.0)
    [res] = evaluate_scores(scores, [Target("annotation_means.q", [3.0] * 10, "spearman")], n_resamples=20)
    assert math.isnan(res["value"]) and math.isnan(res["ci_low"]) and math.isnan(res["ci_high"])
    assert res["state"] == "undefined" and res["undefined"] == "the human scores are all equal"
    rows = [_row("a", float("nan"), float("nan"), float("nan")), _row("b", float("nan"), float("nan"), float("nan"))]
    assert [(c["rank"], c["leads"], c["sole"]) for c in lq.clusters(rows, [])] == [(None, False, False)] * 2
    units = {("toy", "turn"): {"targets": {"annotation_means.q": np.full(10, 3.0)}, "scores": {"a": list(scores)}}}
    [summary] = lq.summary(units, [], n_resamples=20, seed=0, confidence=0.95)
    assert summary["units"] == 0 and summary["undefined"] == 1 and math.isnan(summary["mean"])
    assert math.isnan(summary["ci_low"]) and math.isnan(summary["ci_high"])
    line = next(x for x in tables.quality_markdown({"summary": [summary]}) if x.startswith("| a |"))
    assert line == "| a | – | – | 0 | 0 | 0 | 0 | 1 |"  # no interval beside an undefined mean


def test_an_undefined_unit_is_left_out_of_the_mean_and_counted():
    rng = np.random.default_rng(0)
    y = rng.normal(size=50)
    s = y + rng.normal(size=50)
    units = {("toy", "turn"): {"targets": {"annotation_means.q": y}, "scores": {"a": list(s)}},
             ("toy", "flat"): {"targets": {"annotation_means.q": np.ones(50)}, "scores": {"a": list(s)}}}
    [row] = lq.summary(units, [], n_resamples=50, seed=0, confidence=0.95)
    assert row["mean"] == pytest.approx(sps.spearmanr(s, y).statistic, abs=1e-12)
    assert (row["units"], row["undefined"], row["undefined_units"]) == (1, 1, ["toy/flat"])


def test_a_missing_overall_quality_is_one_clear_error():
    decl = DatasetDeclaration(name="dstcfile", protocol="rated", levels={"turn": "turn"},
                              overall={"turn": "appropriateness"})
    rows = [{"context": ["a"], "response": "b", "annotation_means": {"relevance": 3.0}}] * 4
    with pytest.raises(ValueError, match=r"dstcfile/turn: the overall quality 'appropriateness' is not among the "
                                         r"rated qualities \['relevance'\]; name one with --overall"):
        targets_for(decl, "turn", rows, all_qualities=True)


def test_a_one_item_system_is_left_out_and_every_resample_keeps_every_system():
    rng = np.random.default_rng(2)
    systems = [f"s{i % 4}" for i in range(40)] + ["lonely"]
    y = rng.normal(size=41)
    s = y + rng.normal(size=41)
    groups, small = lq.systems_of([{"system": g} for g in systems])
    assert small == {"lonely": 1} and groups[-1] is None and groups[:40] == systems[:40]
    [row] = lq.system_rows(s, [Target("annotation_means.q", list(y), "pearson")], groups, n_resamples=200, seed=0,
                           confidence=0.95)
    names = sorted(set(systems[:40]))
    ms = [np.mean([v for v, g in zip(s, systems) if g == n]) for n in names]
    mh = [np.mean([v for v, g in zip(y, systems) if g == n]) for n in names]
    assert row["n"] == 4 and row["value"] == pytest.approx(sps.pearsonr(ms, mh).statistic, abs=1e-12)
    assert row["undefined_resamples"] == 0 and row["ci_low"] <= row["value"] <= row["ci_high"]


def test_n_counts_only_items_with_a_human_score():
    y = [1.0, 2.0, float("nan"), 4.0, 5.0, float("nan"), 3.0]
    [res] = evaluate_scores([1, 2, 3, 4, 5, 6, 7], [Target("annotation_means.q", y, "spearman")], n_resamples=10)
    assert res["n"] == 5


def test_empty_responses_are_counted_and_logged(tmp_path):
    import json

    from dialeval.meta import leaderboard

    rows = [{"id": str(i), "context": ["hi"], "response": "" if i < 3 else f"r {i}", "q": i % 5, "mine": float(i)}
            for i in range(20)]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    logs: list[str] = []
    report = leaderboard.build(None, tmp_path / "lb", data=[path], metrics=["column:mine"], n_resamples=100,
                               log=logs.append)
    assert report["datasets"]["d/turn"]["left_out"] == {"empty response": 3}
    assert "d / turn: 3 row(s) left out (empty response)" in logs
    assert {r["n"] for r in report["rows"]} == {17}


def test_clusters_use_one_sided_p_at_most_alpha_as_mt_metrics_eval():
    # p exactly 0.05 splits (mt-metrics-eval: sig_matrix <= pval); 0.0501 does not
    assert significance_ranks([0.9, 0.8], {(0, 1): 0.05}) == [1, 2]
    assert significance_ranks([0.9, 0.8], {(0, 1): 0.0501}) == [1, 1]
    rng = np.random.default_rng(4)
    y = rng.normal(size=80)
    a, b = y + rng.normal(size=80), y + rng.normal(scale=2.0, size=80)
    got = paired_permutation(STATISTICS["spearman"], a, b, y, n_resamples=500, seed=3)
    za, zb = ((v - v.mean()) / v.std() for v in (a, b))
    ref = sps.permutation_test((za, zb), lambda u, v: sps.spearmanr(u, y).statistic - sps.spearmanr(v, y).statistic,
                               permutation_type="samples", n_resamples=500, random_state=3, alternative="greater")
    assert got["difference"] > 0 and got["p_one_sided"] == pytest.approx(ref.pvalue, abs=1e-12)
