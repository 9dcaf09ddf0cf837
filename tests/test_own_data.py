"""A user's file as a dataset and a user's scores as a metric: the DSTC10 route on a real slice (unannotated items
and non-numeric annotation keys counted and named), the record schema in JSONL, CSV and Parquet, malformed
input (one clear error each), ``column:``/``--scores``/a plugin metric as rows, pairs and cluster members, and
the score cache (a changed option, row, plugin code or cache file is never reused)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from dialeval import registry
from dialeval.cli import main
from dialeval.meta import leaderboard, own_data

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, means, write_jsonl  # noqa: E402

_write_jsonl, _means = write_jsonl, means


def _items(n=40, seed=0, systems=4):
    return items(n, seed, systems)


def test_dstc10_slice_counts_what_is_left_out(shared_data, tmp_path, plugin):
    data = json.loads((shared_data / "dstc10_esl" / "esl_eval.json").read_text(encoding="utf-8"))[:60]
    for item in data[:5]:
        item["annotations"]["comment"] = "rater note"  # not numeric: ignored and named
    data[10]["annotations"] = {}
    del data[11]["annotations"]  # two unannotated items: left out and counted
    path = tmp_path / "esl_slice.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    scores = _write_jsonl(tmp_path / "len.jsonl", [{"id": f"{d['dialogue_id']}:{i}", "score": len(d["response"])}
                                                    for i, d in enumerate(data)])
    report = leaderboard.build(None, tmp_path / "lb", data=[path], metrics=["lenplug"], scores={"length": scores},
                               n_resamples=100, log=lambda _: None)
    unit = report["datasets"]["esl_slice/turn"]
    assert unit["rows"] == 58 and unit["overall"] == "annotation_means.appropriateness"
    assert "2 of 60 items have no annotations; left out." in unit["notes"]
    assert "annotation 'comment' is not numeric on 5 item(s); ignored." in unit["notes"]
    kept = [(i, d) for i, d in enumerate(data) if d.get("annotations")]
    human = [np.mean(d["annotations"]["appropriateness"]) for _, d in kept]
    expected = sps.spearmanr([len(d["response"]) for _, d in kept], human).statistic
    row = next(r for r in report["rows"] if r["statistic"] == "spearman" and r.get("level") == "item"
               and r["metric"] == "length")
    assert row["value"] == pytest.approx(expected, abs=1e-12) and row["n"] == 58
    md = (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert {p["metric_a"] for p in report["pairs"]} == {"lenplug"}  # the plugin and the scores file are paired
    assert "2 of 60 items have no annotations" in md and "'comment' is not numeric" in md


def test_jsonl_schema_column_and_scores_are_rows_pairs_and_cluster_members(tmp_path):
    rows = _items(60)
    path = _write_jsonl(tmp_path / "mine.jsonl", [{k: v for k, v in r.items()} for r in rows])
    noisy = np.random.default_rng(1).normal(size=60) + _means(rows, "relevance")
    scores = _write_jsonl(tmp_path / "s.jsonl", [{"id": r["id"], "score": float(x)} for r, x in zip(rows, noisy)])
    report = leaderboard.build(None, tmp_path / "lb", data=[path], metrics=["column:mine"], scores={"noisy": scores},
                               overall="relevance", n_resamples=100, log=lambda _: None)
    items = [r for r in report["rows"] if r.get("level") == "item"]
    assert {(r["metric"], r["target"]) for r in items} == {
        (m, f"annotation_means.{q}") for m in ("column:mine", "noisy") for q in ("relevance", "fluency")}
    assert all(r["ci_low"] <= r["value"] <= r["ci_high"] for r in report["rows"])
    for metric, values in (("column:mine", [r["mine"] for r in rows]), ("noisy", noisy)):
        got = next(r for r in items if r["metric"] == metric and r["statistic"] == "kendall"
                   and r["target"] == "annotation_means.fluency")
        assert got["value"] == pytest.approx(sps.kendalltau(values, _means(rows, "fluency")).statistic, abs=1e-12)
    assert {(p["metric_a"], p["metric_b"]) for p in report["pairs"]} == {("column:mine", "noisy")}
    assert {c["metric"] for c in report["clusters"]} == {"column:mine", "noisy"}
    assert [s["metric"] for s in report["summary"]] == ["column:mine", "noisy"]
    assert {r["n"] for r in report["rows"] if r.get("level") == "system"} == {4}


def test_csv_with_field_mapping_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _items(30)
    csv_path = tmp_path / "c.csv"
    lines = ["key,history,reply,model,relevance,fluency,mine"]
    for r in rows:
        lines.append(f'{r["id"]},"{chr(10).join(r["context"])}",{r["response"]},{r["system"]},'
                     f'"{json.dumps(r["relevance"])}",{r["fluency"][0]},{r["mine"]}')
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = own_data.read(csv_path, fields={"id": "key", "context": "history", "response": "reply", "system": "model"},
                        columns=["mine"])
    assert got.config == "turn" and got.rows[0]["context"] == ["hello there", "how are you"]
    assert got.rows[0]["annotations"]["relevance"] == [float(x) for x in rows[0]["relevance"]]
    assert got.declaration.overall == {"turn": "relevance"} and got.declaration.system_field == "system"
    table = pa.Table.from_pylist([{k: r[k] for k in ("id", "context", "response", "relevance")} for r in rows])
    pq.write_table(table, tmp_path / "p.parquet")
    parquet = own_data.read(tmp_path / "p.parquet")
    assert [r["annotation_means"]["relevance"] for r in parquet.rows] == pytest.approx(list(_means(rows, "relevance")))


@pytest.mark.parametrize("change, kwargs, message", [
    (lambda r: [{k: v for k, v in x.items() if k != "response"} for x in r], {}, "records need 'context' and 'response'"),
    (lambda r: [{**x, "relevance": "great"} if i == 3 else x for i, x in enumerate(r)], {"qualities": ["relevance"]},
     r"line 4: quality 'relevance' is 'great', not a number"),
    (lambda r: [{**x, "empty": None} for x in r], {"qualities": ["empty"]}, "quality 'empty' has no score in any record"),
    (lambda r: r, {"overall": "coherence"}, r"--overall 'coherence' is not among the qualities"),
    (lambda r: [{**x, "id": "same"} for x in r], {}, "id 'same' appears more than once"),
])
def test_malformed_files_give_one_clear_error(tmp_path, change, kwargs, message):
    path = _write_jsonl(tmp_path / "bad.jsonl", change(_items(12)))
    with pytest.raises(ValueError, match=message) as err:
        own_data.read(path, **kwargs)
    assert "\n" not in str(err.value)


def test_cli_errors_are_one_line_and_write_nothing(tmp_path, capsys):
    rows = _items(20)
    path = _write_jsonl(tmp_path / "d.jsonl", rows)
    partial = _write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "score": 1.0} for r in rows[:15]])
    bad = _write_jsonl(tmp_path / "b.jsonl", [{"id": "i0", "score": "high"}])
    for args, message in (
        (["--scores", f"mine={partial}"], "5 of 20 items of d/turn have no score"),
        (["--scores", f"mine={bad}"], "score 'high' is not a finite number"),
        (["--metric", "column:nope"], "no selected dataset has that stored column"),
    ):
        out = tmp_path / "lb"
        rc = main(["leaderboard", "--data", str(path), "--out", str(out), "--resamples", "100",
                   *(["--metric", "column:mine"] if "--metric" not in args else []), *args])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and message in err[0], err
        assert not (out / "leaderboard.json").exists()


def test_meta_eval_on_a_file(tmp_path, capsys):
    rows = _items(30)
    path = _write_jsonl(tmp_path / "d.jsonl", rows)
    assert main(["meta-eval", "--data", str(path), "--metric", "column:mine", "--resamples", "100"]) == 0
    table = capsys.readouterr().out
    expected = sps.spearmanr([r["mine"] for r in rows], _means(rows, "relevance")).statistic
    assert f"{expected:.3f}" in table and "annotation_means.fluency" in table


PLUGIN = '''
from dialeval.registry import Option, declare

METRIC = declare(__name__, name="lenplug", title="Length", summary="words in the response", papers=("none",),
                 urls=("none",), inputs="turns", module="lenplug.adapter:Nothing",
                 options=(Option("scale", 1.0, "float"),), meta_levels=("turn",), meta_adapter="lenplug.adapter:factory")
'''
ADAPTER = '''
SIGN = {sign}


def factory(options, config):
    scale = float(options.get("scale", 1.0))
    return lambda rows: {{"scores": [SIGN * scale * len(r["response"].split()) for r in rows], "signature": "lenplug"}}
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    root = tmp_path / "site" / "lenplug"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    (root / "adapter.py").write_text(ADAPTER.format(sign=1), encoding="utf-8")
    monkeypatch.syspath_prepend(str(root.parent))
    monkeypatch.setenv(registry.PACKAGES_ENV, "lenplug")
    yield root
    for name in [m for m in sys.modules if m.split(".")[0] == "lenplug"]:
        sys.modules.pop(name)


def test_cache_reuses_only_what_matches(plugin, tmp_path):
    rows = _items(40)
    path = _write_jsonl(tmp_path / "d.jsonl", rows)
    out, logs = tmp_path / "lb", []

    def run(**kw):
        logs.clear()
        return leaderboard.build(None, out, data=[path], metrics=["lenplug", "column:mine"], n_resamples=100,
                                 log=logs.append, **kw)

    first = run()
    lengths = [len(r["response"].split()) for r in rows]
    rho = next(r["value"] for r in first["rows"] if r["metric"] == "lenplug" and r["statistic"] == "spearman")
    assert rho == pytest.approx(sps.spearmanr(lengths, _means(rows, "relevance")).statistic, abs=1e-12)
    assert any(c["metric"] == "lenplug" for c in first["clusters"]) and first["pairs"]
    run()
    assert logs[0] == "lenplug / d / turn: cached"
    run(metric_args={"lenplug": {"scale": 2.0}})
    assert "rescored (an option changed)" in " ".join(logs)
    (plugin / "adapter.py").write_text(ADAPTER.format(sign=-1), encoding="utf-8")  # the sign flips
    sys.modules.pop("lenplug.adapter", None)
    flipped = run(metric_args={"lenplug": {"scale": 2.0}})
    assert "rescored (the metric's code changed)" in " ".join(logs)
    assert next(r["value"] for r in flipped["rows"] if r["metric"] == "lenplug" and r["statistic"] == "spearman") == (
        pytest.approx(-rho, abs=1e-12))
    rows[0]["response"] = "an edited response of many more words"
    _write_jsonl(path, rows)
    run(metric_args={"lenplug": {"scale": 2.0}})
    assert "rescored (the rows changed)" in " ".join(logs)
    entry = out / "cache" / "lenplug__d__turn.json"
    stored = json.loads(entry.read_text(encoding="utf-8"))
    stored["scores"][0] += 1.0  # altered numbers
    entry.write_text(json.dumps(stored), encoding="utf-8")
    run(metric_args={"lenplug": {"scale": 2.0}})
    assert f"rescored (cache file {entry}: its scores do not match their checksum" in " ".join(logs)
    entry.write_text("[1, 2, 3]", encoding="utf-8")
    run(metric_args={"lenplug": {"scale": 2.0}})
    assert f"rescored (cache file {entry} holds a JSON list, not an object)" in " ".join(logs)
    entry.write_text(json.dumps({**stored, "scores": [float("nan")] * 40}).replace("NaN", "NaN"), encoding="utf-8")
    run(metric_args={"lenplug": {"scale": 2.0}})
    assert f"rescored (cache file {entry} holds scores that are not finite numbers)" in " ".join(logs)


def test_a_cache_path_that_is_a_file_fails_before_scoring(plugin, tmp_path, monkeypatch):
    path = _write_jsonl(tmp_path / "d.jsonl", _items(20))
    out = tmp_path / "lb"
    out.mkdir()
    (out / leaderboard.MARKER).write_text("", encoding="utf-8")
    (out / "cache").write_text("not a folder", encoding="utf-8")
    monkeypatch.setattr(leaderboard, "score_rows", lambda *a, **k: pytest.fail("scored before the cache check"))
    with pytest.raises(ValueError, match="cache is a file, not the cache folder"):
        leaderboard.build(None, out, data=[path], metrics=["lenplug"], n_resamples=100, log=lambda _: None)


def test_a_turn_record_without_its_response_or_context_field_is_refused(tmp_path):
    from dialeval.io.readers import MalformedDataError
    from dialeval.meta import own_data

    good = {"id": "a", "context": ["hi"], "response": "hello", "q": [3, 4]}
    for drop in ("response", "context"):
        path = tmp_path / f"no_{drop}.jsonl"
        bad = {k: v for k, v in good.items() if k != drop}
        path.write_text("\n".join(json.dumps(r) for r in (good, {**good, "id": "b"}, {**bad, "id": "c"})) + "\n")
        with pytest.raises(MalformedDataError, match=rf"no field {drop!r}; a turn-level record needs"):
            own_data.read(path)
