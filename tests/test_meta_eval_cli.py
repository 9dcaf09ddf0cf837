"""``dialeval meta-eval`` as a new user meets it: a stored column that is a human quality is never reported as a
metric's correlation with itself, the qualities taken by default are named, system-level rows where the rows name
enough systems, ``--metric-arg METRIC:KEY=VALUE`` as the leaderboard takes it, one ``--metric`` only, help texts
that say what each command takes, and significance-cluster rows best first. Expected values come from the raw
files through scipy."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.cli import main
from dialeval.meta import own_data, tables
from dialeval.meta import quality as lq
from dialeval.meta.evaluation import meta_evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, means, write_jsonl  # noqa: E402

_write_jsonl, _means = write_jsonl, means


def _items(n=40, seed=0, systems=4):
    return items(n, seed, systems, varied_words=True)


def _one_error(capsys, rc):
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("dialeval ")]  # not datasets' progress bars
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _fed(shared_data, level):
    """FED's raw entries of ``level`` (turn: those with a response) and each quality's mean over its numeric
    answers (an "N/A" answer left out), straight from fed_data.json."""
    data = json.loads((shared_data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    entries = [e for e in data if ("response" in e) == (level == "turn")]

    def mean(entry, quality):
        nums = [v for v in entry["annotations"][quality] if isinstance(v, (int, float))]
        return sum(nums) / len(nums)

    return entries, mean


# ----------------------------------------------------------------------------------------------
# A human quality is never a metric's result against itself
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("config, other", [("turn", "Engaging"), ("dialog", "Coherent")])
def test_fed_another_quality_against_overall_item_and_system_level(shared_data, tmp_path, config, other):
    entries, mean = _fed(shared_data, config)
    x, y = [mean(e, other) for e in entries], [mean(e, "Overall") for e in entries]
    report = meta_evaluate("fed", f"column:annotation_means.{other}", config=config, data_dir=shared_data / "fed",
                           cache_dir=tmp_path, n_resamples=100)
    item, system = report["configs"][config]["results"]
    assert (item["target"], item["statistic"], item["level"], item["n"]) == (
        "annotation_means.Overall", "spearman", "item", len(entries))
    assert item["value"] == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)
    names = sorted({e["system"] for e in entries})  # Human, Meena, Mitsuku
    ms = [np.mean([a for a, e in zip(x, entries) if e["system"] == s]) for s in names]
    mh = [np.mean([b for b, e in zip(y, entries) if e["system"] == s]) for s in names]
    assert (system["level"], system["statistic"], system["n"]) == ("system", "spearman", 3)
    assert system["value"] == pytest.approx(sps.spearmanr(ms, mh).statistic, abs=1e-12)
    assert report["notes"] == []


@pytest.mark.parametrize("column", ["annotation_means.Overall", "annotations.Overall"])
def test_fed_overall_against_itself_is_refused_in_one_line(shared_data, tmp_path, capsys, column):
    with pytest.raises(ValueError, match=rf"column:{column} is the human quality 'Overall' of fed/turn itself") as err:
        meta_evaluate("fed", f"column:{column}", data_dir=shared_data / "fed", cache_dir=tmp_path / "c",
                      n_resamples=100)
    assert "\n" not in str(err.value)
    line = _one_error(capsys, main(["meta-eval", "fed", "--metric", f"column:{column}", "--data-dir",
                                    str(shared_data / "fed"), "--cache-dir", str(tmp_path / "c"), "--out",
                                    str(tmp_path / "r.json")]))
    assert "is the human quality 'Overall' of fed/turn itself" in line and "ρ = 1 by construction" in line
    assert not (tmp_path / "r.json").exists()


def test_own_quality_as_column_leaves_its_cells_out_and_says_so(tmp_path, capsys):
    rows = _items(40)
    path = _write_jsonl(tmp_path / "d.jsonl", rows)
    mine = own_data.read(path, qualities=["relevance", "fluency"])
    report = meta_evaluate(mine.declaration, "column:annotation_means.relevance", rows={mine.config: mine.rows},
                           n_resamples=100)
    results = report["configs"]["turn"]["results"]
    assert {r["target"] for r in results} == {"annotation_means.fluency"} and len(results) == 6  # 3 item, 3 system
    spearman = next(r for r in results if r["statistic"] == "spearman" and r["level"] == "item")
    expected = sps.spearmanr(_means(rows, "relevance"), _means(rows, "fluency")).statistic
    assert spearman["value"] == pytest.approx(expected, abs=1e-12)
    assert report["notes"] == ["turn: 6 cell(s) left out: column:annotation_means.relevance is the human quality "
                               "'relevance' itself (ρ = 1 by construction, not a metric's result)"]
    assert main(["meta-eval", "--data", str(path), "--metric", "column:annotation_means.relevance",
                 "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "turn: 6 cell(s) left out" in out and "annotation_means.relevance  spearman" not in out
    assert f"{expected:.3f}" in out


# ----------------------------------------------------------------------------------------------
# The default qualities are named; system-level rows
# ----------------------------------------------------------------------------------------------


def test_default_qualities_are_named_in_the_notes(tmp_path, capsys):
    path = _write_jsonl(tmp_path / "d.jsonl", _items(20))
    note = ("qualities: 'relevance', 'fluency' (every numeric column not otherwise used); choose them with "
            "--quality NAME (repeatable).")
    assert note in own_data.read(path, columns=["mine"]).notes
    assert not any(n.startswith("qualities:") for n in own_data.read(path, qualities=["relevance"]).notes)
    assert "'mine'" in next(n for n in own_data.read(path).notes if n.startswith("qualities:"))
    assert main(["meta-eval", "--data", str(path), "--metric", "column:mine", "--resamples", "100"]) == 0
    assert f"d: {note}" in capsys.readouterr().out.splitlines()


def test_system_level_rows_of_an_own_file_equal_scipy_on_system_means(tmp_path, capsys):
    rows = _items(40, systems=4)
    mine = own_data.read(_write_jsonl(tmp_path / "d.jsonl", rows), columns=["mine"])
    report = meta_evaluate(mine.declaration, "column:mine", rows={mine.config: mine.rows}, n_resamples=100)
    system = {(r["target"], r["statistic"]): r for r in report["configs"]["turn"]["results"] if r["level"] == "system"}
    names = sorted({r["system"] for r in rows})
    score = np.array([r["mine"] for r in rows])
    for quality in ("relevance", "fluency"):
        human = _means(rows, quality)
        ms = [score[[r["system"] == s for r in rows]].mean() for s in names]
        mh = [human[[r["system"] == s for r in rows]].mean() for s in names]
        for statistic, fn in (("spearman", sps.spearmanr), ("pearson", sps.pearsonr), ("kendall", sps.kendalltau)):
            row = system[(f"annotation_means.{quality}", statistic)]
            assert row["n"] == 4 and row["value"] == pytest.approx(fn(ms, mh).statistic, abs=1e-12)
    text = main(["meta-eval", "--data", str(tmp_path / "d.jsonl"), "--metric", "column:mine", "--resamples", "100"])
    assert text == 0 and "spearman (system)" in capsys.readouterr().out


@pytest.mark.parametrize("edit, note", [
    (lambda rows: rows, "turn: no system-level rows: 2 system(s) with 2 or more items, fewer than the 3 a "
                        "system-level correlation needs"),
    (lambda rows: [{**rows[0], "system": None}, *rows[1:]], "turn: no system-level rows: 1 of 20 items name no system"),
])
def test_no_system_level_says_why(tmp_path, edit, note):
    mine = own_data.read(_write_jsonl(tmp_path / "d.jsonl", edit(_items(20, systems=2))), columns=["mine"])
    report = meta_evaluate(mine.declaration, "column:mine", rows={mine.config: mine.rows}, n_resamples=100)
    assert note in report["notes"]
    assert all(r["level"] == "item" for r in report["configs"]["turn"]["results"])


def test_the_leaderboard_says_why_a_unit_has_no_system_level(tmp_path, capsys):
    rows = _items(20, systems=4)
    rows = [{**r, "system": None} if k < 3 else r for k, r in enumerate(rows)]  # 3 items name no system
    out = tmp_path / "lb"
    assert main(["leaderboard", "--data", str(_write_jsonl(tmp_path / "d.jsonl", rows)), "--out", str(out),
                 "--metric", "column:mine", "--resamples", "100"]) == 0
    capsys.readouterr()
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    text = json.dumps(board)
    assert "no system-level rows: 3 of 20 items name no system" in text
    assert not any(r.get("level") == "system" for r in board["rows"])


# ----------------------------------------------------------------------------------------------
# Options: --metric-arg METRIC:KEY=VALUE, one --metric, help texts
# ----------------------------------------------------------------------------------------------


def test_metric_arg_takes_the_leaderboard_form_for_the_scored_metric(tmp_path, capsys):
    from sacrebleu.metrics import BLEU

    rows = _items(30)
    path = _write_jsonl(tmp_path / "d.jsonl", rows)
    bleu = BLEU(max_ngram_order=2, effective_order=True)
    scores = [bleu.sentence_score(r["response"], [r["reference"]]).score for r in rows]
    expected = sps.spearmanr(scores, _means(rows, "relevance")).statistic
    outs = []
    for arg in ("max_order=2", "bleu:max_order=2"):
        out = tmp_path / f"{arg.replace(':', '_')}.json"
        assert main(["meta-eval", "--data", str(path), "--metric", "bleu", "--metric-arg", arg, "--quality",
                     "relevance", "--resamples", "100", "--out", str(out)]) == 0
        outs.append(json.loads(out.read_text(encoding="utf-8")))
    assert outs[0] == outs[1] and "options:max_order=2" in outs[0]["signature"]
    assert outs[0]["configs"]["turn"]["results"][0]["value"] == pytest.approx(expected, abs=1e-12)
    capsys.readouterr()
    line = _one_error(capsys, main(["meta-eval", "--data", str(path), "--metric", "bleu", "--metric-arg",
                                    "distinct_n:n=2"]))
    assert "--metric-arg 'distinct_n:n=2' is an option of 'distinct_n', but meta-eval scores 'bleu'" in line


def test_two_metrics_are_refused_in_one_line(tmp_path, capsys):
    path = _write_jsonl(tmp_path / "d.jsonl", _items(12))
    line = _one_error(capsys, main(["meta-eval", "--data", str(path), "--metric", "column:mine", "--metric", "bleu"]))
    assert "meta-eval scores one metric, got --metric column:mine --metric bleu" in line and "leaderboard" in line


def _help(command):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0


def test_help_says_what_each_command_takes(capsys):
    _help("meta-eval")
    meta = " ".join(capsys.readouterr().out.split())
    _help("leaderboard")
    board = " ".join(capsys.readouterr().out.split())
    assert "DSTC10 JSON (one file;" in meta and "DSTC10 JSON (repeatable;" in board
    assert "or METRIC:KEY=VALUE as the leaderboard takes it" in meta and "--metric-arg METRIC:KEY=VALUE" in board
    assert "the one metric to score" in meta and "(the leaderboard takes several)" in meta


# ----------------------------------------------------------------------------------------------
# Significance-cluster rows best first
# ----------------------------------------------------------------------------------------------


def test_cluster_rows_are_sorted_by_correlation_best_first_ties_by_name():
    def row(metric, value):
        return {"metric": metric, "dataset": "toy", "config": "turn", "target": "annotation_means.q",
                "statistic": "spearman", "level": "item", "value": value, "ci_low": value - 0.1,
                "ci_high": value + 0.1}

    rows = [row("a", 0.30), row("d", math.nan), row("c", 0.50), row("b", 0.50), row("e", 0.70)]
    clusters = lq.clusters(rows, [])
    assert [c["metric"] for c in clusters] == ["e", "b", "c", "a", "d"]
    report = {"clusters": list(reversed(clusters)), "datasets": {"toy/turn": {"overall": "annotation_means.q"}}}
    lines = [x for x in tables.quality_markdown(report) if x.startswith("| toy |")]
    assert [x.split(" | ")[4] for x in lines] == ["e", "b", "c", "a", "d"]
