"""The meta-evaluation harness: pure statistics checked by hand and against scipy, Tevet's published
correlations from the stored columns and from our own distinct_n, the FED protocol, adapters and the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from dialeval.cli import main
from dialeval.meta.evaluation import (
    Target,
    auc,
    average_ranks,
    best_threshold_accuracy,
    bootstrap_interval,
    evaluate_scores,
    format_report,
    make_adapter,
    meta_evaluate,
    parse_metric_args,
    pearson,
    spearman,
    subsample_indices,
)

# ----------------------------------------------------------------------------------------------
# Pure statistics
# ----------------------------------------------------------------------------------------------


def test_average_ranks_by_hand():
    assert average_ranks([10, 20, 20, 5]).tolist() == [2.0, 3.5, 3.5, 1.0]
    assert average_ranks([3, 3, 3]).tolist() == [2.0, 2.0, 2.0]


def test_spearman_by_hand_and_against_scipy():
    # ranks y = [1, 2, 3.5, 5, 3.5]; Σdx·dy = 8, Σdx² = 10, Σdy² = 9.5 → ρ = 8 / √95
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95), abs=1e-15)
    assert spearman([1, 2, 3], [3, 2, 1]) == -1.0
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 6, size=40).astype(float)  # many ties
        y = rng.normal(size=40)
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    with pytest.raises(ValueError, match="3 scores but 2 targets"):
        spearman([1, 2, 3], [1, 2])


def test_pearson_by_hand():
    # dx = [-1, 0, 1], dy = [-7/3, -1/3, 8/3]: Σdx·dy = 5, Σdx² = 2, Σdy² = 114/9 → r = 15 / √228
    assert pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(15 / math.sqrt(228), abs=1e-15)
    assert math.isnan(pearson([1, 2, 3], [4, 4, 4]))


def _brute_force_oca(scores, labels):
    """Every threshold t in the scores, both rules (≤ t → class a / class b): the best accuracy."""
    best = 0.0
    for t in scores:
        acc = sum((s <= t) == (lab == 0) for s, lab in zip(scores, labels)) / len(scores)
        best = max(best, acc, 1 - acc)
    return best


def test_best_threshold_accuracy_by_hand():
    assert best_threshold_accuracy([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]) == (1.0, 0.2)
    assert best_threshold_accuracy([0.1, 0.2, 0.3, 0.4], [1, 1, 0, 0]) == (1.0, 0.2)  # either direction
    assert best_threshold_accuracy([1, 1, 2, 2], [0, 1, 0, 1])[0] == 0.5  # ties cannot be split
    # cut after 1: {1}→0 ✓, {2,3,4,5}→1: 3 of 4 ✓ → 4/5
    assert best_threshold_accuracy([1, 2, 3, 4, 5], [0, 1, 0, 1, 1]) == (0.8, 1.0)
    rng = np.random.default_rng(1)
    for _ in range(30):
        s = rng.integers(0, 8, size=25).tolist()
        lab = rng.integers(0, 2, size=25).tolist()
        if len(set(lab)) == 2:
            assert best_threshold_accuracy(s, lab)[0] == pytest.approx(_brute_force_oca(s, lab), abs=0)
    with pytest.raises(ValueError, match="two label values"):
        best_threshold_accuracy([1, 2], [0, 0])


def test_subsamples_are_without_replacement_and_seeded():
    idx = subsample_indices(11, 5, 200, seed=3)
    assert idx.shape == (200, 5)
    assert all(len(set(row)) == 5 for row in idx.tolist())
    assert idx.min() >= 0 and idx.max() <= 10
    assert np.array_equal(idx, subsample_indices(11, 5, 200, seed=3))
    assert not np.array_equal(idx, subsample_indices(11, 5, 200, seed=4))


def test_bootstrap_interval_percentiles():
    x = np.arange(10.0)
    # statistic = the smallest index drawn: with 5 of 10 drawn it is 0..5
    ci = bootstrap_interval(lambda a: float(a.min()), [x], n_resamples=1000, fraction=0.5, seed=0, confidence=0.9)
    idx = subsample_indices(10, 5, 1000, seed=0)
    mins = idx.min(axis=1)
    assert ci["low"] == np.quantile(mins, 0.05) and ci["high"] == np.quantile(mins, 0.95)
    assert ci["undefined"] == 0
    # undefined resamples (NaN) are left out and counted
    y = np.array([0.0] * 9 + [1.0])
    ci = bootstrap_interval(lambda a: float(a.max()) if a.max() > 0 else float("nan"), [y], n_resamples=400, seed=1)
    assert 0 < ci["undefined"] < 400 and ci["low"] == ci["high"] == 1.0


# ----------------------------------------------------------------------------------------------
# Tevet's published numbers on conTest resp_gen
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def contest_rows(shared_data, tmp_path_factory):
    from dialeval.datasets import load

    ds = load("contest", "con_test_200_resp_gen", data_dir=shared_data / "diversity_eval",
              cache_dir=tmp_path_factory.mktemp("cache"))
    return {"con_test_200_resp_gen": ds["test"].to_list()}


@pytest.mark.parametrize("column, published", [
    ("SentBert", 0.591), ("BertScore", 0.492), ("AveragedDistinctNgrams", 0.346),
    ("AveragedCosineSimilarity", 0.327), ("abs_hds_mean", 0.631), ("metric_abs_hds_mean", 0.631),
])
def test_stored_columns_reproduce_tevet(contest_rows, column, published):
    report = meta_evaluate("contest", f"column:{column}", rows=contest_rows, n_resamples=100)
    by_target = {(r["target"], r["statistic"]): r for r in report["configs"]["con_test_200_resp_gen"]["results"]}
    assert round(by_target[("label_value", "spearman")]["value"], 3) == published
    assert set(by_target) == {("label_value", "spearman"), ("label_value", "oca"), ("human_score_mean", "spearman")}


def test_a_stored_target_is_not_correlated_with_itself(contest_rows):
    rows = contest_rows["con_test_200_resp_gen"]
    report = meta_evaluate("contest", "column:human_score_mean", rows=contest_rows, n_resamples=100)
    results = report["configs"]["con_test_200_resp_gen"]["results"]
    assert [(r["target"], r["statistic"]) for r in results] == [("label_value", "spearman"), ("label_value", "oca")]
    expected = spearmanr([r["human_score_mean"] for r in rows], [r["label_value"] for r in rows]).statistic
    assert results[0]["value"] == pytest.approx(expected, abs=1e-12)
    assert report["notes"] == ["con_test_200_resp_gen: 1 cell(s) left out: column:human_score_mean is the human "
                               "quality 'human_score_mean' itself (ρ = 1 by construction, not a metric's result)"]


def test_our_distinct_n_reproduces_tevet(contest_rows):
    report = meta_evaluate("contest", "distinct_n", rows=contest_rows, metric_args={"tokenizer": "tevet"})
    res = report["configs"]["con_test_200_resp_gen"]
    spearman_label = res["results"][0]
    assert (spearman_label["target"], spearman_label["statistic"]) == ("label_value", "spearman")
    assert round(spearman_label["value"], 3) == 0.346
    # rounded to 3 decimals like Tevet's pipeline, our scores equal his stored column on every row
    stored = [r["metrics"]["AveragedDistinctNgrams"] for r in contest_rows["con_test_200_resp_gen"]]
    assert res["scores"] == stored
    assert report["round_decimals"] == 3
    assert spearman_label["ci_low"] < spearman_label["value"] < spearman_label["ci_high"]
    assert report["bootstrap"] == {"n_resamples": 1000, "fraction": 0.5, "seed": 0, "confidence": 0.95}
    assert "scorer:distinct_n" in report["signature"] and "options:tokenizer=tevet" in report["signature"]
    assert res["metric_signature"].startswith("distinct_n|tok:tevet|n:1,2,3,4,5|level:set|vocab:none|")
    again = meta_evaluate("contest", "distinct_n", rows=contest_rows, metric_args={"tokenizer": "tevet"})
    assert again["configs"] == report["configs"]  # seeded: identical intervals


# Spearman ρ (scipy) and brute-force OCA computed with pandas straight from Tevet's CSVs, 3 decimals
@pytest.mark.parametrize("config, column, rho, oca", [
    ("dec_test_200_resp_gen", "AveragedDistinctNgrams", 0.893, None),
    ("dec_test_200_resp_gen", "SentBert", 0.764, None),
    ("dec_test_200_resp_gen", "abs_hds_mean", 0.807, None),
    ("dec_test_1000_resp_gen", "BertScore", 0.874, None),
    ("con_test_200_resp_gen", "SentBert", 0.591, 0.791),
    ("con_test_200_resp_gen", "abs_hds_mean", 0.631, 0.809),
])
def test_dectest_and_oca_from_stored_columns(shared_data, tmp_path_factory, config, column, rho, oca):
    report = meta_evaluate("contest", f"column:{column}", config=config, data_dir=shared_data / "diversity_eval",
                           cache_dir=tmp_path_factory.mktemp("c"), n_resamples=100)
    res = {(r["target"], r["statistic"]): r["value"] for r in report["configs"][config]["results"]}
    assert round(res[("label_value", "spearman")], 3) == rho
    assert round(res[("label_value", "oca")], 3) == oca if oca else ("label_value", "oca") not in res
    assert (("human_score_mean", "spearman") in res) == ("1000" not in config)


def test_auc_by_hand():
    # pairs (3,2) (3,0) (1,0) are ordered, (1,2) is not: 3/4; a tie counts one half
    assert auc([3.0, 1.0], [2.0, 0.0]) == 0.75
    assert auc([1.0, 2.0], [1.0]) == 0.75
    assert auc([0.0], [5.0, 6.0]) == 0.0
    with pytest.raises(ValueError, match="positives and negatives"):
        auc([], [1.0])


def test_ent_n_adapter_by_hand():
    rows = [{"responses": ["a b", "a b"]}, {"responses": ["a b", "c d"]}]
    # n=1, base 2: set 1 has p(a)=p(b)=1/2 → 1 bit; set 2 has four unigrams at 1/4 → 2 bits
    out = make_adapter("ent_n", "contest", "x", {"n": 1, "tokenizer": "whitespace"})(rows)
    assert out["scores"] == [1.0, 2.0]
    assert out["signature"].startswith("ent_n|tok:whitespace|n:1|base:2|level:set|")


# ----------------------------------------------------------------------------------------------
# FED protocol, adapters with stand-in modules, errors
# ----------------------------------------------------------------------------------------------


def _fed_rows(overall, extra):
    return [{"context": [{"speaker": "User", "text": f"hi {i}"}], "response": f"r{i}", "response_speaker": "System",
             "annotation_means": {"Overall": o, "Engaging": e}} for i, (o, e) in enumerate(zip(overall, extra))]


def test_fed_protocol_on_hand_rows():
    rows = {"turn": _fed_rows([1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 4.0, 3.0, 2.0, 1.0])}
    report = meta_evaluate("fed", "column:annotation_means.Engaging", rows=rows, n_resamples=100)
    [res] = report["configs"]["turn"]["results"]
    assert (res["target"], res["statistic"], res["value"]) == ("annotation_means.Overall", "spearman", -1.0)
    assert report["round_decimals"] is None


@pytest.mark.parametrize("config, column, rows", [("turn", "Engaging", 375), ("dialog", "Coherent", 125)])
def test_fed_turn_and_dialog_real(shared_data, tmp_path, config, column, rows):
    # another quality of the same items against Overall (Overall against itself is refused: test_meta_eval_cli.py),
    # expected from the raw file: each quality's mean over its numeric answers, scipy's ρ
    data = json.loads((shared_data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    entries = [e for e in data if ("response" in e) == (config == "turn")]
    means = {q: [np.mean([v for v in e["annotations"][q] if isinstance(v, int)]) for e in entries]
             for q in (column, "Overall")}
    report = meta_evaluate("fed", f"column:annotation_means.{column}", config=config, data_dir=shared_data / "fed",
                           cache_dir=tmp_path, n_resamples=100)
    res = report["configs"][config]
    assert res["num_rows"] == len(entries) == rows
    assert res["results"][0]["value"] == pytest.approx(spearmanr(means[column], means["Overall"]).statistic, abs=1e-12)


class _FakeModule:
    def __init__(self, calls):
        self.calls = calls

    def compute(self, **kwargs):
        self.calls.append(kwargs)
        n = len(next(iter(kwargs.values())))
        return {"scores": [float(i) for i in range(n)], "signature": "fake|version:0"}


def test_model_adapters_pass_options_and_inputs(monkeypatch):
    import dialeval.models.loading

    calls, loads = [], []

    def fake_load(name, config_name=None, **options):
        loads.append((name, config_name, options))
        return _FakeModule(calls)

    monkeypatch.setattr(dialeval.models.loading, "load", fake_load)
    sets = [{"responses": ["a", "b"]}, {"responses": ["c", "d"]}]
    assert make_adapter("nli_diversity", "contest", "c", {"model": "/m"})(sets) == {
        "scores": [0.0, 1.0], "signature": "fake|version:0"}
    assert loads[-1] == ("nli_diversity", None, {"model": "/m"}) and calls[-1] == {"predictions": [["a", "b"], ["c", "d"]]}
    rows = _fed_rows([1, 2], [1, 2])
    # FULL's adapter calls the metric's core (no evaluate module): record what reaches it
    import dialeval.full.full_followup as full_core

    cores = []

    def fake_core(histories, *, level, **options):
        cores.append((histories, level, options))
        return {"scores": [0.0] * len(histories), "signature": f"fake|speakers:{options.get('_speakers')}"}

    monkeypatch.setattr(full_core, "compute_full", fake_core)
    # default: the FULL paper's protocol, speaker tags stripped
    make_adapter("full_followup", "fed", "turn", {"model": "/f"})(rows)
    assert cores[-1] == ([["hi 0", "r0"], ["hi 1", "r1"]], "turn", {"model": "/f"})
    make_adapter("full_followup", "fed", "dialog", {})(rows)
    assert cores[-1] == ([["hi 0"], ["hi 1"]], "dialog", {})
    # the earlier texts, behind an explicit option
    make_adapter("full_followup", "fed", "turn", {"speaker_prefix": True})(rows)
    assert cores[-1] == ([["User: hi 0", "System: r0"], ["User: hi 1", "System: r1"]], "turn", {})
    fed_rows = {"dialog": rows}
    assert "|speakers:stripped|" in meta_evaluate("fed", "full_followup", rows=fed_rows, n_resamples=100)["signature"]
    report = meta_evaluate("fed", "full_followup", rows=fed_rows, n_resamples=100, metric_args={"speaker_prefix": True})
    assert "|speakers:prefixed|" in report["signature"] and cores[-1][0] == [["User: hi 0"], ["User: hi 1"]]
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['modle'\]"):
        make_adapter("full_followup", "fed", "turn", {"modle": "/f"})
    with pytest.raises(ValueError, match="speaker_prefix='yes'"):
        make_adapter("full_followup", "fed", "turn", {"speaker_prefix": "yes"})


def test_adapter_errors():
    with pytest.raises(ValueError, match="corpus-level"):
        make_adapter("low_frequency", "contest", "c")
    with pytest.raises(ValueError, match="distinct_n does not apply to 'fed'"):
        make_adapter("distinct_n", "fed", "turn")
    with pytest.raises(ValueError, match="unknown metric 'belu'"):
        make_adapter("belu", "contest", "c")
    with pytest.raises(ValueError, match=r"column 'nope' is not in this dataset; available: \['x'\]"):
        make_adapter("column:nope", "contest", "c")([{"x": 1.0}])
    with pytest.raises(ValueError, match="unknown option"):
        make_adapter("distinct_n", "contest", "c", {"modle": "x"})
    with pytest.raises(ValueError, match="non-finite score"):
        evaluate_scores([1.0, float("nan")], [Target("y", [1.0, 2.0], "spearman")])
    with pytest.raises(ValueError, match="no meta-evaluation protocol for 'dailydialog'"):
        meta_evaluate("dailydialog", "column:x")


def test_parse_metric_args():
    assert parse_metric_args(["n=[1, 2]", "model=/tmp/m", "batch_size=8", "dtype=bf16"]) == {
        "n": [1, 2], "model": "/tmp/m", "batch_size": 8, "dtype": "bf16"}
    with pytest.raises(ValueError, match="key=value"):
        parse_metric_args(["model"])


def test_cli_writes_table_json_and_plot(shared_data, tmp_path, capsys):
    out, plot = tmp_path / "report.json", tmp_path / "fig.png"
    rc = main(["meta-eval", "contest", "--metric", "column:SentBert", "--data-dir", str(shared_data / "diversity_eval"),
               "--cache-dir", str(tmp_path / "c"), "--out", str(out), "--plot", str(plot), "--resamples", "100"])
    assert rc == 0
    table = capsys.readouterr().out
    assert "con_test_200_resp_gen" in table and "0.591" in table
    report = json.loads(out.read_text(encoding="utf-8"))
    assert round(report["configs"]["con_test_200_resp_gen"]["results"][0]["value"], 3) == 0.591
    assert plot.stat().st_size > 5000 and plot.read_bytes()[:4] == b"\x89PNG"
    assert format_report({**report, "configs": report["configs"]}).splitlines()[0].startswith("config")
    rc = main(["meta-eval", "contest", "--metric", "low_frequency", "--data-dir", str(shared_data / "diversity_eval")])
    assert rc == 2 and "corpus-level" in capsys.readouterr().err
