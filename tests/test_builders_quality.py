"""The human-judged quality datasets' builders: each on its real file in ../shared/data (read in place; counts
and values checked against SOURCE.md and an independent parse), on malformed copies (one line naming the file,
record and field), the generic DSTC10 builder on files with other quality sets, and the cards."""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import DatasetCard

from dialeval.datasets import QUALITY_CONFIGS, MalformedDataError, export, load

# (dataset, config) → rows, from each folder's SOURCE.md
COUNTS = {("usr_topicalchat", "turn"): 360, ("usr_personachat", "turn"): 300, ("grade", "convai2"): 600,
          ("grade", "dailydialog"): 300, ("grade", "empatheticdialogues"): 300, ("dstc9_interactive", "dialog"): 2200,
          ("predictive_engagement", "turn"): 600, ("holistic_pang2020", "context"): 200,
          ("holistic_pang2020", "fluency"): 200, ("conture", "turn"): 1066, ("conture", "dialog"): 119,
          ("dailydialog_zhao", "turn"): 900, ("dstc10_jsalt", "turn"): 741, ("dstc10_esl", "turn"): 1242}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("hf-cache")


def _rows(shared_data, cache, name, config):
    return load(name, config, data_dir=shared_data / name, cache_dir=cache)["test"].to_list()


@pytest.mark.parametrize("name,config", list(COUNTS))
def test_counts_and_shape_on_the_real_files(shared_data, cache, name, config):
    rows = _rows(shared_data, cache, name, config)
    assert len(rows) == COUNTS[(name, config)]
    level, overall = QUALITY_CONFIGS[name][config]
    for r in rows:
        assert ("response" in r) == (level == "turn") and r["id"]
        assert overall in r["annotations"] and set(r["annotations"]) == set(r["annotation_means"])
        for q, scores in r["annotations"].items():
            nums = [s for s in scores if s is not None]
            assert r["annotation_means"][q] == (pytest.approx(sum(nums) / len(nums)) if nums else None)
    assert len({r["id"] for r in rows}) == len(rows)


def test_usr_matches_an_independent_parse(shared_data, cache):
    raw = json.loads((shared_data / "usr_topicalchat" / "tc_usr_data.json").read_text(encoding="utf-8"))
    rows = _rows(shared_data, cache, "usr_topicalchat", "turn")
    assert sum(len(s) for r in rows for s in r["annotations"].values()) == 6480  # SOURCE.md: 360 x 6 x 3
    flat = [(c, resp) for c in raw for resp in c["responses"]]
    for row, (ctx, resp) in zip(rows, flat):
        assert row["annotations"]["Overall"] == [float(v) for v in resp["Overall"]] and row["system"] == resp["model"]
        assert row["knowledge"] == ctx["fact"]
        truth = next(x["response"] for x in ctx["responses"] if x["model"] == "Original Ground Truth")
        assert row["reference"] == truth.strip()


def test_grade_means_equal_the_released_human_score_files(shared_data, cache):
    rows = [r for r in _rows(shared_data, cache, "grade", "convai2") if r["system"] == "bert_ranker"]
    released = (shared_data / "grade" / "human_score" / "convai2" / "bert_ranker" / "human_score.txt").read_text().split()
    assert [round(r["annotation_means"]["coherence"], 6) for r in rows] == [round(float(x), 6) for x in released]
    refs = (shared_data / "grade" / "eval_data" / "convai2" / "bert_ranker" / "human_ref.txt").read_text().splitlines()
    assert [r["reference"] for r in rows] == [x.strip() for x in refs]


def test_dstc9_groups_raters_per_dialogue(shared_data, cache):
    rows = _rows(shared_data, cache, "dstc9_interactive", "dialog")
    assert sum(len(r["annotations"]["human (overall)"]) for r in rows) == 6473  # rater rows (SOURCE.md)
    assert sum(s is None for r in rows for v in r["annotations"].values() for s in v) == 236  # "N/A" answers
    assert {r["system"] for r in rows} == {f"chatbot{i}" for i in range(1, 12)}
    first = json.loads((shared_data / "dstc9_interactive" / "chatbot1.json").read_text(encoding="utf-8"))[:3]
    assert len({x["context"] for x in first}) == 1  # the first dialogue's three raters
    assert rows[0]["annotations"]["human (overall)"] == [float(x["human (overall)"]) for x in first]
    assert rows[0]["speakers"][:2] == ["User", "System"] and rows[0]["context"][0] == "hola"


def test_predictive_engagement_groups_the_three_raters(shared_data, cache):
    path = shared_data / "predictive_engagement" / "Eng_Scores_queries_gen_gtruth_replies.csv"
    with open(path, encoding="utf-8", newline="") as f:
        table = list(csv.DictReader(f))
    first = [float(r["human_score"]) for r in table if (r["query"], r["response"]) == (table[0]["query"], table[0]["response"])]
    rows = _rows(shared_data, cache, "predictive_engagement", "turn")
    assert len(first) == 3 and rows[0]["annotations"]["engagement"] == first
    assert all(len(r["annotations"]["engagement"]) == 3 for r in rows)


def test_dstc10_instances_keep_their_qualities(shared_data, cache):
    zhao = _rows(shared_data, cache, "dailydialog_zhao", "turn")
    assert set(zhao[0]["annotations"]) == {"content", "grammar", "relevance", "overall"}
    assert sum(len(v) for r in zhao for v in r["annotations"].values()) == 14400
    jsalt = _rows(shared_data, cache, "dstc10_jsalt", "turn")
    assert sum(len(r["annotations"]["appropriateness"]) for r in jsalt) == 2822
    esl = _rows(shared_data, cache, "dstc10_esl", "turn")
    assert len({r["system"] for r in esl}) == 7 and all(len(r["annotations"]["appropriateness"]) == 1 for r in esl)


def test_jsalt_scores_no_reference_based_metric_as_each_reference_is_the_response(shared_data):
    """Every JSALT item's reference is its rated response (read from the file itself), so no reference-based metric
    is scored there; the ESL set, with real references, keeps them."""
    from dialeval import registry
    from dialeval.meta import sources

    items = json.loads((shared_data / "dstc10_jsalt" / "jsalt_eval.json").read_text(encoding="utf-8"))
    assert all(item["reference"][0].strip() == item["response"].strip() for item in items)
    esl = json.loads(next((shared_data / "dstc10_esl").glob("*.json")).read_text(encoding="utf-8"))
    assert any(item["reference"][0].strip() != item["response"].strip() for item in esl)
    for metric in ("bleu", "bertscore", "chrf", "meteor"):
        assert "reference" in sources.fits(registry.get(metric), sources.get("dstc10_jsalt"), "turn")
        assert sources.fits(registry.get(metric), sources.get("dstc10_esl"), "turn") is None


def _item(i, annotations):
    return {"dialogue_id": f"d{i}", "model": f"m{i % 2}", "context": "hi\nhello there", "response": f"r{i}",
            "reference": ["ref"], "annotations": annotations}


@pytest.mark.parametrize("qualities", [("appropriateness",), ("a", "b", "c", "d")])
def test_dstc10_any_quality_set_through_the_cli(tmp_path, qualities):
    path = tmp_path / "mine_eval.json"
    items = [_item(i, {q: [i + k, 3] for k, q in enumerate(qualities)}) for i in range(4)]
    path.write_text(json.dumps(items), encoding="utf-8")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "dialeval", "datasets", "export", "dstc10", "--file", str(path),
                          "--out", str(out), "--cache-dir", str(tmp_path / "c")], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    import datasets

    ds = datasets.load_dataset(str(out), "turn", split="test", cache_dir=str(tmp_path / "hf"))
    assert list(ds.features["annotations"]) == list(qualities)
    assert ds[2]["annotations"][qualities[-1]] == [2 + len(qualities) - 1, 3]
    assert ds[2]["annotation_means"][qualities[0]] == (2 + 3) / 2 and ds[1]["system"] == "m1"


def _one_line(exc) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def _malformed(tmp_path, name, files):
    folder = tmp_path / name
    folder.mkdir()
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


USR_BAD = [{"context": "a\nb", "fact": "f", "annotators": ["x"], "responses": [
    {"response": "r", "model": "Original Ground Truth", **{q: [1, 2, 3] for q in
     ("Understandable", "Natural", "Maintains Context", "Engaging", "Uses Knowledge")}, "Overall": [1, "high", 3]}]}]
DSTC9_BAD = [{"context": "hello\nSystem: hi", **{q: 3 for q in ("consistent", "likeable", "diverse", "informative",
              "coherent", "human (overall)", "understanding", "flexible", "topic depth", "error recovery", "inquisitive")}}]
MALFORMED = {
    ("usr_personachat", "turn"): ({"pc_usr_data.json": json.dumps(USR_BAD)},
                                  r"pc_usr_data\.json, context 0 \(0-based\), response 0: Overall\[1\] is 'high'"),
    ("grade", "convai2"): ({"human_judgement.json": json.dumps([{"ID": 0, "Dataset": "convai2", "DialogModel": "m",
                                                                 "Context": "a|||b", "Response": "r", "HumanScores": "[1, 2"}])},
                           r"human_judgement\.json, item 0 \(0-based\): field HumanScores, line 1: invalid JSON"),
    ("dstc9_interactive", "dialog"): ({"chatbot1.json": json.dumps(DSTC9_BAD)},
                                      r"chatbot1\.json, rows 0-0 \(dialogue 0\): the first line 'hello'"),
    ("predictive_engagement", "turn"): ({"Eng_Scores_queries_gen_gtruth_replies.csv": "query,response,human_score,"
                                         "Ruber_Unref_Score,CTX_Unref_Score,Eng_Score_MeanPooling,Eng_Score_MaxPooling\n"
                                         "q,r,five,0.1,0.2,0.3,0.4\n"},
                                        r"Eng_Scores_queries_gen_gtruth_replies\.csv, row 1: column 'human_score' is 'five'"),
    ("holistic_pang2020", "fluency"): ({"fluency_data_release.csv": "1,hello," + ",".join(["3"] * 9) + ",\n"},
                                       r"fluency_data_release\.csv, row 1: score column 10 is empty"),
    ("holistic_pang2020", "context"): ({"context_data_release.csv": "1,a,b" + ",3" * 10 + "\n2,a,b" + ",3" * 9 + "\n"},
                                       r"context_data_release\.csv, line 2: 12 cells, but the header has 13 columns"),
    ("conture", "turn"): ({"data.json": json.dumps([{"dialog_id": 0, "dialog_ratings": [], "turns": [
        {"user": "User: hi", "chatbot": "Chatbot: yo"}]}])},
        r"data\.json, dialogue 0 \(0-based\), turn 0: missing field\(s\) \['overall impression'\]"),
    ("dailydialog_zhao", "turn"): ({"x_eval.json": json.dumps([_item(0, {"overall": [1]}), _item(1, {"grammar": [2]})])},
                                   r"x_eval\.json, item 1 \(0-based\): field 'annotations' has qualities \['grammar'\]"),
}


@pytest.mark.parametrize("key", list(MALFORMED))
def test_malformed_files_get_one_line(tmp_path, key):
    name, config = key
    files, pattern = MALFORMED[key]
    folder = _malformed(tmp_path, name, files)
    with pytest.raises(MalformedDataError) as exc:
        load(name, config, data_dir=folder, cache_dir=tmp_path / "cache")
    assert re.search(pattern, _one_line(exc)), str(exc.value)
    assert str(folder) in str(exc.value)


NEW = [n for n in QUALITY_CONFIGS if n != "fed"] + ["dstc10"]
SOURCE_LICENSE = re.compile(r"## License\n\n(.*?)\n\n", re.S)


@pytest.mark.parametrize("name", NEW)
def test_card_states_the_source_license(shared_data, name):
    from dialeval.resources import dataset_card_dir

    text = (dataset_card_dir(name) / "README.md").read_text(encoding="utf-8")
    card = DatasetCard(text)
    assert card.data.license in {"unknown", "mit", "cc-by-4.0"} and "## Use in a training loop" in text
    if name != "dstc10":
        source = SOURCE_LICENSE.search((shared_data / name / "SOURCE.md").read_text(encoding="utf-8")).group(1)
        assert source.strip() in text


def test_card_training_loop_runs_on_an_export(shared_data, tmp_path):
    out = tmp_path / "usr_personachat"
    export("usr_personachat", out, data_dir=shared_data / "usr_personachat", cache_dir=tmp_path / "c")
    text = (out / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text.split("## Use in a training loop", 1)[1], flags=re.S).group(1)
    namespace: dict = {}
    exec(compile(code.replace('"<org>/usr_personachat"', repr(str(out))), "card", "exec"), namespace)
    batch = namespace["batch"]
    raw = json.loads((shared_data / "usr_personachat" / "pc_usr_data.json").read_text(encoding="utf-8"))
    first = [resp for c in raw for resp in c["responses"]][:8]
    assert [round(float(x), 5) for x in batch["target"]] == [round(sum(r["Overall"]) / 3, 5) for r in first]
    assert batch["scores"].shape == (8, 3) and bool(batch["score_mask"].all())
    assert batch["response"] == [r["response"].strip() for r in first]
    assert not math.isnan(float(batch["scores"][0, 0]))
    assert DatasetCard.load(Path(out) / "README.md").data.to_dict()["configs"][0]["config_name"] == "turn"


def test_dstc10_needs_a_file_and_refuses_other_shapes(tmp_path):
    from dialeval.cli import main

    with pytest.raises(ValueError, match="'dstc10' builds a file in its format: pass data_files=FILE"):
        load("dstc10", "turn", cache_dir=tmp_path / "c")
    bad = tmp_path / "bad_eval.json"
    bad.write_text(json.dumps({"not": "a list"}), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"bad_eval\.json: expected a non-empty JSON array of items"):
        load("dstc10", "turn", data_files=str(bad), cache_dir=tmp_path / "c")
    assert main(["datasets", "export", "dstc10", "--file", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", [n for n in NEW if n not in ("dstc10", "usr_personachat")])
def test_every_card_training_loop_runs(shared_data, tmp_path, name):
    import torch

    from dialeval.datasets import config_names

    out = tmp_path / name
    config = config_names(name)[0]
    export(name, out, data_dir=shared_data / name, configs=[config], cache_dir=tmp_path / "c")
    text = (out / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text.split("## Use in a training loop", 1)[1], flags=re.S).group(1)
    namespace: dict = {}
    exec(compile(code.replace(f'"<org>/{name}"', repr(str(out))), "card", "exec"), namespace)
    batch = namespace["batch"]
    assert batch["target"].shape == (8,) and batch["scores"].shape[0] == 8 and len(batch["context"]) == 8
    means = torch.nanmean(batch["scores"].double(), dim=1)  # the mean over the padded, masked answers
    assert torch.allclose(means, batch["target"].double(), atol=1e-5)


def test_dstc10_export_leaves_out_unannotated_items_as_meta_eval_does(tmp_path, capsys):
    """A DSTC10 test file holds items without annotations (no field, or an empty object), the first one among
    them: the export builds the annotated items and says how many it left out, as ``meta-eval --data`` counts
    them on the same file."""
    from dialeval.cli import main
    from dialeval.meta.own_data import read as read_own

    items = [_item(i, {"appropriateness": [i % 3 + 1, 2]}) for i in range(7)]
    del items[0]["annotations"]
    items[4]["annotations"] = {}
    path = tmp_path / "persona_eval.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    assert main(["datasets", "export", "dstc10", "--file", str(path), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "turn: test 5 rows"
    assert printed[1] == f"note: {path}: 2 of 7 items have no annotations; left out."
    assert len(read_own(path).rows) == 5  # meta-eval reads the same five


def test_export_data_dir_is_the_folder_above_as_for_the_leaderboard_or_the_datasets_own(shared_data, tmp_path, capsys):
    from dialeval.cli import main

    for i, data_dir in enumerate((shared_data, shared_data / "dstc10_jsalt")):
        assert main(["datasets", "export", "dstc10_jsalt", "--data-dir", str(data_dir), "--out", str(tmp_path / str(i)),
                     "--cache-dir", str(tmp_path / "c")]) == 0
        assert capsys.readouterr().out.splitlines()[0] == "turn: test 741 rows"  # SOURCE.md: 741 items
