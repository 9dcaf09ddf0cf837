"""The leaderboard on the human-judged quality datasets: Kendall/Pearson/system-level statistics against scipy
on the same per-item scores, significance clusters on synthetic scores with a known answer, the summary row,
and the resume path (a run interrupted mid-dataset rescoring nothing it had finished)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.meta import leaderboard
from dialeval.meta import quality as lq
from dialeval.meta.evaluation import STATISTICS, Target
from dialeval.meta.stats import paired_permutation, significance_ranks, system_level


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 6, size=n).astype(float)  # ties, as human means have
    s = y + rng.normal(scale=2.0, size=n)
    return s, y


def test_kendall_and_pearson_equal_scipy():
    s, y = _data()
    assert STATISTICS["kendall"](s, y) == pytest.approx(sps.kendalltau(s, y).statistic, abs=1e-12)
    assert STATISTICS["pearson"](s, y) == pytest.approx(sps.pearsonr(s, y).statistic, abs=1e-12)
    assert STATISTICS["spearman"](s, y) == pytest.approx(sps.spearmanr(s, y).statistic, abs=1e-12)
    y_na = y.copy()
    y_na[[3, 50, 77]] = np.nan  # items every rater answered N/A: left out
    keep = ~np.isnan(y_na)
    for name, ref in (("kendall", sps.kendalltau), ("pearson", sps.pearsonr), ("spearman", sps.spearmanr)):
        assert STATISTICS[name](s, y_na) == pytest.approx(ref(s[keep], y[keep]).statistic, abs=1e-12)


def test_system_level_equals_scipy_on_system_means():
    s, y = _data(n=240, seed=1)
    systems = [f"sys{i % 6}" for i in range(240)]
    names = sorted(set(systems))
    ms = [np.mean([v for v, g in zip(s, systems) if g == n]) for n in names]
    mh = [np.mean([v for v, g in zip(y, systems) if g == n]) for n in names]
    assert system_level(STATISTICS["kendall"], s, y, systems) == pytest.approx(sps.kendalltau(ms, mh).statistic, abs=1e-12)
    assert system_level(STATISTICS["pearson"], s, y, systems) == pytest.approx(sps.pearsonr(ms, mh).statistic, abs=1e-12)
    rows = lq.system_rows(s, [Target("annotation_means.q", list(y), "spearman")], systems, n_resamples=50, seed=0,
                          confidence=0.95)
    assert len(rows) == 1 and rows[0]["level"] == "system" and rows[0]["n"] == 6
    assert rows[0]["value"] == pytest.approx(sps.spearmanr(ms, mh).statistic, abs=1e-12)
    assert rows[0]["ci_low"] <= rows[0]["value"] <= rows[0]["ci_high"]


def test_significance_ranks_follow_the_rule():
    # sorted 0 > 1 > 2 > 3: 1 joins 0 (p 0.3); 0 beats 2 (p 0.01) so 2 starts rank 2; 3 ties with 2 (p 0.4)
    p = {(0, 1): 0.3, (0, 2): 0.01, (1, 2): 0.2, (0, 3): 0.001, (1, 3): 0.001, (2, 3): 0.4}
    assert significance_ranks([0.9, 0.85, 0.8, 0.5], p) == [1, 1, 2, 2]
    assert significance_ranks([0.5, 0.9, 0.8, 0.85], {(1, 3): 0.3, (1, 2): 0.01, (2, 0): 0.4, (1, 0): 0.001,
                                                      (3, 0): 0.001, (3, 2): 0.2}) == [2, 1, 2, 1]


def test_clusters_on_synthetic_scores_with_a_known_answer():
    rng = np.random.default_rng(7)
    n = 1500
    y = rng.normal(size=n)
    good = y + rng.normal(scale=0.5, size=n)
    same = good + rng.normal(scale=1e-3, size=n)  # indistinguishable from `good`
    weak = y + rng.normal(scale=3.0, size=n)
    noise = rng.normal(size=n)
    metrics = {"good": good, "same": same, "weak": weak, "noise": noise}
    rows, pairs = [], []
    for name, s in metrics.items():
        rows.append({"metric": name, "dataset": "usr_topicalchat", "config": "turn", "target": "annotation_means.Overall",
                     "statistic": "spearman", "level": "item", "value": STATISTICS["spearman"](s, y)})
    names = list(metrics)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            p = paired_permutation(STATISTICS["spearman"], metrics[a], metrics[b], y, n_resamples=200, seed=0)
            pairs.append({"metric_a": a, "metric_b": b, "dataset": "usr_topicalchat", "config": "turn",
                          "target": "annotation_means.Overall", "statistic": "spearman", "p_one_sided": p["p_one_sided"]})
    ranks = {c["metric"]: c["rank"] for c in lq.clusters(rows, pairs)}
    assert ranks == {"good": 1, "same": 1, "weak": 2, "noise": 3}


def test_paired_permutation_is_scipys_test():
    s, y = _data(n=120, seed=3)
    t = s + np.random.default_rng(4).normal(size=120)
    got = paired_permutation(STATISTICS["pearson"], s, t, y, n_resamples=300, seed=5)
    zs, zt = (s - s.mean()) / s.std(), (t - t.mean()) / t.std()
    ref = sps.permutation_test((zs, zt), lambda u, v: sps.pearsonr(u, y).statistic - sps.pearsonr(v, y).statistic,
                               permutation_type="samples", n_resamples=300, random_state=5)
    assert got["p_value"] == pytest.approx(ref.pvalue, abs=1e-12)
    assert got["difference"] == pytest.approx(sps.pearsonr(s, y).statistic - sps.pearsonr(t, y).statistic, abs=1e-12)


def test_summary_mean_equals_the_mean_of_scipy_rhos():
    units = {}
    expected = []
    for k, (d, c) in enumerate((("usr_topicalchat", "turn"), ("grade", "convai2"), ("conture", "turn"))):
        s, y = _data(n=100 + 50 * k, seed=10 + k)
        units[(d, c)] = {"targets": {lq.overall_target(d, c): y}, "scores": {"m": list(s)}}
        expected.append(sps.spearmanr(s, y).statistic)
    (row,) = lq.summary(units, [], n_resamples=100, seed=0, confidence=0.95)
    assert row["mean"] == pytest.approx(np.mean(expected), abs=1e-12) and row["units"] == 3
    assert row["ci_low"] <= row["mean"] <= row["ci_high"]


def _fake_scores(metric, dataset, config, rows, calls, fail_at=None):
    calls.append(len(rows))
    if fail_at is not None and len(calls) == fail_at:
        raise KeyboardInterrupt("killed")  # a kill mid-run: nothing after this is written
    return {"scores": [float(len(r["response"]) % 7) for r in rows], "signature": f"fake|{metric}"}


def test_an_interrupted_run_resumes_without_rescoring(shared_data, tmp_path, monkeypatch):
    """usr_topicalchat (300 rows once the ground truth's 60 are left out) is scored in two cached chunks; a run killed on the second rescored nothing
    of the first when resumed, and a finished run rescored nothing at all."""
    monkeypatch.setattr(leaderboard, "offline_reason", lambda decl: None)
    calls: list[int] = []
    out = tmp_path / "lb"
    kw = {"datasets": ["usr_topicalchat"], "metrics": ["full_followup"], "n_resamples": 100, "log": lambda _: None}
    monkeypatch.setattr(leaderboard, "score_rows", lambda *a: _fake_scores(*a, calls, fail_at=2))
    with pytest.raises(KeyboardInterrupt):
        leaderboard.build(shared_data, out, **kw)
    assert calls == [200, 100] and not (out / "leaderboard.json").exists()
    calls.clear()
    monkeypatch.setattr(leaderboard, "score_rows", lambda *a: _fake_scores(*a, calls))
    report = leaderboard.build(shared_data, out, **kw)
    assert calls == [100]  # only the chunk the kill interrupted
    calls.clear()
    again = leaderboard.build(shared_data, out, **kw)
    assert calls == [] and again["rows"] == report["rows"]
    fresh = leaderboard.build(shared_data, tmp_path / "fresh", **kw)
    assert fresh["rows"] == report["rows"]
    cached = json.loads((out / "cache" / "full_followup__usr_topicalchat__turn.json").read_text(encoding="utf-8"))
    assert len(cached["scores"]) == 300
    rows = [r for r in report["rows"] if r["level"] == "system"]
    assert {r["n"] for r in rows} == {5} and len(rows) == 18  # 5 decoding strategies/humans; 6 qualities x 3


def test_quality_rows_drop_empty_turns_and_unscorable_responses():
    from dialeval.meta.evaluation import protocol_rows

    rows = [{"id": "a", "context": ["hi", " ", "there"], "speakers": ["User", "System", "User"], "response": "yo"},
            {"id": "b", "context": ["hi"], "speakers": [], "response": "  "}]
    assert protocol_rows("conture", rows) == [{"id": "a", "context": ["hi", "there"], "speakers": ["User", "User"],
                                               "response": "yo"}]
    assert protocol_rows("fed", rows) == rows  # FED's protocol is unchanged


def test_hub_folder_has_configs_heatmap_and_both_eval_results_formats(shared_data, tmp_path):
    import datasets
    import yaml
    from huggingface_hub import DatasetCard, ModelCard, parse_eval_result_entries

    from dialeval.hub import repos as hub

    cols = [f"column:metrics.{c}" for c in ("Ruber_Unref_Score", "CTX_Unref_Score", "Eng_Score_MeanPooling")]
    board = tmp_path / "board"
    report = leaderboard.build(shared_data, board, datasets=["predictive_engagement"], metrics=cols, n_resamples=100,
                               log=lambda _: None)
    assert len(report["clusters"]) == 9 and len(report["summary"]) == 3  # 3 metrics x 3 statistics; one row each
    hub.build("acme", tmp_path / "hub", from_index=True, only=[], leaderboard=board)
    folder = tmp_path / "hub" / "datasets" / "dialeval-leaderboard"
    card = DatasetCard.load(folder / "README.md")
    assert [c["config_name"] for c in card.data.to_dict()["configs"]] == ["rows", "pairs", "clusters"]
    clusters = datasets.load_dataset(str(folder), "clusters", split="train", cache_dir=str(tmp_path / "hf"))
    assert clusters.num_rows == 9 and set(clusters["rank"]) <= {1, 2, 3}
    assert (folder / "heatmap.png").read_bytes()[:4] == b"\x89PNG" and "heatmap.png" in card.text
    for col in cols:
        name = col.replace(":", "-")
        entries = parse_eval_result_entries(yaml.safe_load(
            (folder / "eval_results" / name / ".eval_results" / "predictive_engagement.yaml").read_text(encoding="utf-8")))
        row = next(r for r in report["rows"] if r["metric"] == col and r["statistic"] == "spearman")
        assert [(e.dataset_id, e.task_id, e.value) for e in entries] == [
            ("acme/predictive_engagement", "turn", round(row["value"], 4))]
        assert entries[0].source_url == "https://huggingface.co/datasets/acme/dialeval-leaderboard"
        legacy = ModelCard("---\n" + (folder / "eval_results" / f"{name}.yaml").read_text(encoding="utf-8") + "---\n")
        mine = [r for r in report["rows"] if r["metric"] == col]
        assert [res.metric_value for res in legacy.data.eval_results] == [round(r["value"], 4) for r in mine]


def test_overview_has_a_line_per_unit_with_item_and_system_cells():
    def row(metric, dataset, config, target, value, n, level="item"):
        return {"metric": metric, "dataset": dataset, "config": config, "target": target, "statistic": "spearman",
                "value": value, "ci_low": value - 0.1, "ci_high": value + 0.1, "n": n, "level": level}

    fed, usr = "annotation_means.Overall", "annotation_means.Overall"
    report = {"rows": [row("full_followup", "fed", "turn", fed, 0.35, 375), row("full_followup", "fed", "turn", fed, 1.0, 3, "system"),
                       row("llm_judge", "fed", "turn", fed, 0.16, 375),
                       row("full_followup", "usr_topicalchat", "turn", usr, -0.05, 360),
                       row("full_followup", "usr_topicalchat", "turn", "annotation_means.Natural", 0.9, 360),  # not overall
                       row("llm_judge", "usr_topicalchat", "turn", usr, float("nan"), 360),
                       row("column:metrics.CTX", "predictive_engagement", "turn", "annotation_means.engagement", 0.5, 600)],
              "published": [{"dataset": "fed", "config": "turn", "target": fed, "statistic": "spearman",
                             "compare_with": ["FULL 0.51", "DynaEval 0.323"]}],
              "datasets": {"fed/turn": {"overall": fed}, "usr_topicalchat/turn": {"overall": usr},
                           "predictive_engagement/turn": {"overall": "annotation_means.engagement"}}}
    # every system-level value has its interval beside it; an undefined ρ is "undefined", never "– [–, –]"
    assert lq.overview_markdown(report) == [
        "| unit (overall quality) | n | full_followup ρ [95% CI] | llm_judge ρ [95% CI] | full_followup system ρ [95% CI]"
        " (systems) | published |",
        "|---|---:|---:|---:|---:|---|",
        "| fed turn (`Overall`) | 375 | 0.350 [0.250, 0.450] | 0.160 [0.060, 0.260] | 1.000 [0.900, 1.100] (3) | "
        "FULL 0.51; DynaEval 0.323 |",
        "| usr_topicalchat turn (`Overall`) | 360 | -0.050 [-0.150, 0.050] | undefined | – | – |",
        "",
    ]
    full = {**report, "bootstrap": {"confidence": 0.95}, "pairs": [], "skipped": [], "signature": "s"}
    assert leaderboard.markdown(full).startswith("| unit (overall quality) | n | full_followup ρ [95% CI]")
