"""Dataset builders on the real files in ../shared/data, on malformed copies, export round trips, the
committed cards, and the DialStory recipe (dialstory-make)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import datasets
import pytest

from dialeval.cli import main
from dialeval.datasets import (
    ContestBuilder,
    MalformedDataError,
    config_names,
    export,
    load,
)
from dialeval.datasets.contest import read_contest_csv
from dialeval.datasets.dialstory import (
    check_dialgen,
    dialogue_turns,
    fill_masks,
    identify_characters,
    insert_speaker_masks,
    make_dialgen,
    make_dialgen_example,
    mask_turns,
    maskable_turns,
    number_to_mask,
)
from dialeval.resources import dataset_card_dir

REPO = Path(__file__).resolve().parents[1]
CARDS = dataset_card_dir("")  # card templates and the DialStory sample are package data
SAMPLE = CARDS / "dialstory" / "sample"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hf_cache")


# ----------------------------------------------------------------------------------------------
# Real files: row counts and hand-checked fields
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("config, rows", [
    ("con_test_200_resp_gen", 220), ("dec_test_1000_resp_gen", 994), ("dec_test_200_resp_gen", 203),
    ("dec_test_200_story_gen", 203), ("con_test_200_prompt_gen", 200),
])
def test_contest_row_counts(shared_data, cache, config, rows):
    ds = load("contest", config, data_dir=shared_data / "diversity_eval", cache_dir=cache)
    assert list(ds) == ["test"]
    assert ds["test"].num_rows == rows


def test_contest_builder_used_directly(shared_data, tmp_path):
    builder = ContestBuilder(config_name="con_test_200_resp_gen", data_dir=str(shared_data / "diversity_eval"),
                             cache_dir=str(tmp_path))
    builder.download_and_prepare()
    ds = builder.as_dataset()
    row = ds["test"][0]
    # values read by hand from with_metrics/conTest/con_test_200_with_hds_resp_gen.csv, first data row
    assert row["sample_id"] == "test.ca-cb.ca::00240"
    assert row["context"] == "Yeah I thought about not putting the door on it hangs weird"
    assert row["responses"][0] == "Agreed, it almost looks like it's about to fall off"
    assert len(row["responses"]) == 5
    assert row["label_value"] == 1.0 and row["label_name"] == "content_diversity"
    assert row["human_score_mean"] == 3.25 and row["human_score_std"] == 0.75
    assert row["metrics"]["SentBert"] == -0.307
    assert row["metrics"]["AveragedDistinctNgrams"] == 0.955  # exact float, no JSON round-off
    feats = ds["test"].features
    assert feats["responses"] == datasets.List(datasets.Value("string"))
    assert feats["metrics"]["BertScore"] == datasets.Value("float64")


def test_contest_without_human_scores_and_any_csv(shared_data, cache):
    raw = shared_data / "diversity_eval" / "raw" / "decTest" / "dec_test_1000_no_hds_resp_gen.csv"
    ds = load("contest", data_files={"test": str(raw)}, cache_dir=cache)["test"]
    assert ds.num_rows == 994
    assert ds[0]["human_score_mean"] is None and ds[0]["human_score_std"] is None
    assert "metrics" not in ds.features  # the raw file has no metric_* column
    assert ds[0]["label_name"] == "temp" and ds[0]["label_value"] == 0.46
    assert len(ds[0]["responses"]) == 10


def test_dailydialog_plusplus(shared_data, cache):
    ds = load("dailydialog_plusplus", data_dir=shared_data / "dailydialog_plusplus", cache_dir=cache)
    # the original dev split is exported under the standard name `validation`
    assert {k: v.num_rows for k, v in ds.items()} == {"validation": 1028, "test": 1142}
    row = ds["validation"][0]
    assert row["id"] == 0
    assert row["context"][0] == "Am I too abrupt? Did I scare you? Or you don't want ..."
    assert row["positive_responses"][0] == "So nice of you."
    assert [len(row[k]) for k in ("positive_responses", "adversarial_negative_responses",
                                  "random_negative_responses")] == [5, 5, 5]
    pos = load("dailydialog_plusplus", "positives", data_dir=shared_data / "dailydialog_plusplus", cache_dir=cache)
    assert pos["train"].num_rows == 7641
    assert pos["train"][0]["context"] == ["All of my friends are going out to the lake tonight and I'm going too!"]


def test_fed_turn_and_dialog(shared_data, cache):
    turn = load("fed", "turn", data_dir=shared_data / "fed", cache_dir=cache)["test"]
    dialog = load("fed", "dialog", data_dir=shared_data / "fed", cache_dir=cache)["test"]
    assert (turn.num_rows, dialog.num_rows) == (375, 125)
    first = turn[0]
    assert first["context"][:2] == [{"speaker": "User", "text": "Hi!"}, {"speaker": "System", "text": "Hi! What's up?"}]
    assert len(first["context"]) == 9
    assert first["response"] == "It's probably boring, isn't it?" and first["response_speaker"] == "System"
    assert turn.features["system"].int2str(first["system"]) == "Meena"  # a ClassLabel
    assert first["annotations"]["Overall"] == [2, 1, 3, 3, 4]
    assert first["annotation_means"]["Overall"] == pytest.approx(13 / 5, abs=0)
    d0 = dialog[0]
    # "Error recovery": ["N/A (The user was too …)", 1, 1, "N/A (The conversation contained no errors.)", 2]
    assert d0["annotations"]["Error recovery"] == [None, 1, 1, None, 2]
    assert d0["annotation_means"]["Error recovery"] == pytest.approx(4 / 3, abs=1e-15)
    assert [n["annotator"] for n in d0["na_notes"]] == [0, 3]
    assert d0["na_notes"][1]["text"] == "N/A (The conversation contained no errors.)"
    assert "response" not in dialog.features


def features_act(ds, row):
    return ds["train"].features["act"].int2str(row["act"])


def test_dailydialog_pairs(shared_data, cache):
    with pytest.raises(MalformedDataError, match=r"dialogue_id 203 repeats dialogue_id 64.*--allow-duplicates"):
        load("dailydialog", data_dir=shared_data / "dailydialog", cache_dir=cache)  # the release repeats 3 dialogues
    ds = load("dailydialog", data_dir=shared_data / "dailydialog", cache_dir=cache, allow_duplicates=True)
    # 7,740 test turns in 1,000 dialogues → 6,740 pairs; 8,069 validation turns → 7,069; the release's train/ folder:
    # 87,171 utterances (`__eou__`-separated) in 11,118 dialogues → 76,053
    assert {k: v.num_rows for k, v in ds.items()} == {"train": 76053, "validation": 7069, "test": 6740}
    first = ds["train"][0]
    assert first["context"] == ["Say , Jim , how about going for a few beers after dinner ?"]
    assert first["response"] == "You know that is tempting but is really not good for our fitness ."
    assert (first["topic"], features_act(ds, first)) == (-1, "commissive")  # the release's act 4; no topics there
    row = ds["test"][0]
    assert row["context"] == ["Hey man , you wanna buy some weed ?"]
    assert row["response"] == "Some what ?"
    features = ds["test"].features  # ClassLabel columns
    assert features["emotion"].int2str(row["emotion"]) == "surprise" and features["act"].int2str(row["act"]) == "question"
    # the Hub's daily_dialog ClassLabels, names and ids (written out by hand from its card)
    assert features["act"].names == ["__dummy__", "inform", "question", "directive", "commissive"]
    assert features["emotion"].names == ["no emotion", "anger", "disgust", "fear", "happiness", "sadness", "surprise"]
    assert (row["act"], row["emotion"]) == (2, 6)  # question, surprise


def test_dailydialog_dialogues_config(shared_data, cache):
    ds = load("dailydialog", "dialogues", data_dir=shared_data / "dailydialog", cache_dir=cache,
              allow_duplicates=True)  # the release repeats dialogues (issue 21)
    assert {k: v.num_rows for k, v in ds.items()} == {"train": 11118, "validation": 1000, "test": 1000}
    short = ds["train"][7851]  # 12 utterances, 11 labels in the release: the last turn's are missing (-1)
    assert len(short["dialog"]) == 12 and short["act"][-1] == -1 and short["emotion"][-1] == -1
    first = ds["test"][0]
    assert first["dialog"][:2] == ["Hey man , you wanna buy some weed ?", "Some what ?"]
    assert len(first["act"]) == len(first["emotion"]) == len(first["dialog"])
    assert sum(len(d) for d in ds["test"]["dialog"]) == 7740  # every turn (SOURCE.md: 7,740 test turns)
    features = ds["test"].features
    assert features["act"].feature.names[0] == "__dummy__" and features["emotion"].feature.names[0] == "no emotion"
    assert first["act"][1] == 2 and first["emotion"][1] == 6  # turn 1: question, surprise (as in pairs)
    assert 0 not in {a for acts in ds["test"]["act"] for a in acts}  # __dummy__ is never a label


def test_dialstory_sample(cache):
    gen = load("dialstory", "dialgen", data_dir=SAMPLE, cache_dir=cache)["test"]
    spk = load("dialstory", "dialspk", data_dir=SAMPLE, cache_dir=cache)["test"]
    assert gen.num_rows == 1 and spk.num_rows == 4  # only story-004 has five characters
    for row in gen:
        assert row["story"].count("[MASK") == len(row["targets"])
    s3 = spk[2]
    assert s3["speakers"] == ["豆豆", "花花", "豆豆", "花花"]
    assert s3["story"].count("[MASK]") == 4
    assert spk[3]["speakers"] == ["张伟", "王丽", "刘洋", "刘洋", "陈静", "王丽"]
    assert config_names("dialstory") == ["dialgen", "dialspk"]


# ----------------------------------------------------------------------------------------------
# Malformed copies: the error names the file and the line/row
# ----------------------------------------------------------------------------------------------


def _copy(src: Path, dst_dir: Path, name: str | None = None) -> Path:
    dst_dir.mkdir(parents=True, exist_ok=True)
    dst = dst_dir / (name or src.name)
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    return dst


def test_contest_malformed(shared_data, tmp_path):
    src = shared_data / "diversity_eval" / "with_metrics" / "conTest" / "con_test_200_with_hds_resp_gen.csv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = tmp_path / "bad_number.csv"
    # row 2 (third line) gets a non-numeric label_value
    lines_bad = list(lines)
    lines_bad[2] = lines_bad[2].replace(",0.0,content_diversity,", ",zero,content_diversity,", 1)
    bad.write_text("".join(lines_bad), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"bad_number\.csv, row 2 .*label_value.*'zero'"):
        read_contest_csv(bad)
    # through the builder the same message reaches the user (not datasets' generic wrapper)
    with pytest.raises(MalformedDataError, match=r"bad_number\.csv, row 2"):
        load("contest", data_files={"test": str(bad)}, cache_dir=tmp_path / "c")
    missing = tmp_path / "missing_column.csv"
    missing.write_text(lines[0].replace("label_value,", "") + "".join(lines[1:3]), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"missing_column\.csv: missing column\(s\) \['label_value'\]"):
        read_contest_csv(missing)
    gap = tmp_path / "gap.csv"
    gap.write_text(lines[0].replace("resp_1,", "respX,") + lines[1], encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"gap\.csv: response columns must be resp_0"):
        read_contest_csv(gap)
    short = tmp_path / "short.csv"
    short.write_text(lines[0] + "a,b,1.0,c,r0\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"short\.csv, row 1 \(line 2\): has"):
        read_contest_csv(short)


def test_jsonl_malformed(shared_data, tmp_path):
    dev = _copy(shared_data / "dailydialog_plusplus" / "dev.json", tmp_path / "dd")
    _copy(shared_data / "dailydialog_plusplus" / "test.json", tmp_path / "dd")
    lines = dev.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = lines[4][:-5] + "\n"  # truncate line 5
    dev.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"dev\.json, line 5: invalid JSON"):
        load("dailydialog_plusplus", data_dir=tmp_path / "dd", cache_dir=tmp_path / "c1")
    lines = (shared_data / "dailydialog_plusplus" / "dev.json").read_text(encoding="utf-8").splitlines(keepends=True)
    obj = json.loads(lines[1])
    obj["positive_responses"] = "just one string"
    lines[1] = json.dumps(obj) + "\n"
    dev.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"dev\.json, line 2: field 'positive_responses' must be a list"):
        load("dailydialog_plusplus", data_dir=tmp_path / "dd", cache_dir=tmp_path / "c2")
    del obj["random_negative_responses"]
    obj["positive_responses"] = ["ok"]
    lines[1] = json.dumps(obj) + "\n"
    dev.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"line 2: missing field\(s\) \['random_negative_responses'\]"):
        load("dailydialog_plusplus", data_dir=tmp_path / "dd", cache_dir=tmp_path / "c3")


def test_fed_malformed(shared_data, tmp_path):
    data = json.loads((shared_data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    data[2]["annotations"]["Overall"][2] = "three"
    (tmp_path / "fed").mkdir()
    (tmp_path / "fed" / "fed_data.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"fed_data\.json, entry 2 .*Overall.*'three'"):
        load("fed", "turn", data_dir=tmp_path / "fed", cache_dir=tmp_path / "c")
    data[2]["annotations"]["Overall"][2] = 3
    data[5]["context"] = "User: hi\nBot: hello"
    (tmp_path / "fed" / "fed_data.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"entry 5 .*'Bot: hello'.*does not start with"):
        load("fed", "turn", data_dir=tmp_path / "fed", cache_dir=tmp_path / "c2")
    (tmp_path / "fed" / "fed_data.json").write_text("[{\"context\": 1,}]", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"fed_data\.json, line 1: invalid JSON"):
        load("fed", "turn", data_dir=tmp_path / "fed", cache_dir=tmp_path / "c3")


def test_dialstory_malformed(tmp_path):
    spk_lines = (SAMPLE / "dialspk" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(spk_lines[1])
    row["speakers"] = row["speakers"][:-1]
    (tmp_path / "d" / "dialspk").mkdir(parents=True)
    (tmp_path / "d" / "dialspk" / "test.jsonl").write_text(
        "\n".join([spk_lines[0], json.dumps(row, ensure_ascii=False)]) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"test\.jsonl, line 2: story has 6 \[MASK\] but 5 speaker"):
        load("dialstory", "dialspk", data_dir=tmp_path / "d", cache_dir=tmp_path / "c")
    row = json.loads(spk_lines[0])
    row["speakers"][0] = "路人"
    (tmp_path / "d" / "dialspk" / "test.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"line 1: speaker '路人' is not among the candidates"):
        load("dialstory", "dialspk", data_dir=tmp_path / "d", cache_dir=tmp_path / "c2")
    gen = json.loads((SAMPLE / "dialgen" / "test.jsonl").read_text(encoding="utf-8").splitlines()[0])
    gen["targets"] = gen["targets"][:2]
    (tmp_path / "d" / "dialgen").mkdir()
    (tmp_path / "d" / "dialgen" / "test.jsonl").write_text(json.dumps(gen, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"line 1: story has placeholders .* but 2 target"):
        load("dialstory", "dialgen", data_dir=tmp_path / "d", cache_dir=tmp_path / "c3")


def test_dailydialog_malformed_and_skipped_counted(tmp_path, caplog):
    (tmp_path / "dd").mkdir()
    dialogues = [
        {"fold": "test", "topic": "work", "dialogue": [{"emotion": "anger", "act": "inform", "text": "hi"},
                                                      {"emotion": "fear", "act": "question", "text": "hello"}]},
        {"fold": "test", "topic": "work", "dialogue": [{"emotion": "anger", "act": "inform", "text": "alone"}]},
    ]
    (tmp_path / "dd" / "test.json").write_text(json.dumps(dialogues), encoding="utf-8")
    with caplog.at_level("WARNING", logger="dialeval.datasets"):
        ds = load("dailydialog", data_dir=tmp_path / "dd", cache_dir=tmp_path / "c")
    assert ds["test"].num_rows == 1
    assert "skipped 1 of 2 rows (1 dialogues with fewer than 2 turns)" in caplog.text
    dialogues[0]["dialogue"][1]["text"] = 7
    (tmp_path / "dd" / "test.json").write_text(json.dumps(dialogues), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"test\.json, dialogue 0 \(0-based\), turn 1: field 'text' must be a string"):
        load("dailydialog", data_dir=tmp_path / "dd", cache_dir=tmp_path / "c2")
    dialogues[0]["dialogue"][1].update(text="hello", emotion="joy")  # not a DailyDialog emotion label
    (tmp_path / "dd" / "test.json").write_text(json.dumps(dialogues), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"dialogue 0 \(0-based\), turn 1: emotion 'joy' is not one of"):
        load("dailydialog", data_dir=tmp_path / "dd", cache_dir=tmp_path / "c3")


def test_unknown_names_and_missing_dir(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'fedd'"):
        load("fedd")
    with pytest.raises(ValueError, match=r"unknown config 'turns' for 'fed'; choose one of \['turn', 'dialog'\]"):
        load("fed", "turns", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"fed_data\.json"):
        load("fed", "turn", data_dir=tmp_path, cache_dir=tmp_path / "c")


# ----------------------------------------------------------------------------------------------
# Export round trip and the committed cards
# ----------------------------------------------------------------------------------------------


def _rows_equal(a: datasets.Dataset, b: datasets.Dataset) -> None:
    assert a.features == b.features
    assert a.num_rows == b.num_rows
    assert a.to_list() == b.to_list()


def test_export_round_trip_parquet(shared_data, cache, tmp_path):
    out = tmp_path / "fed_export"
    counts = export("fed", out, data_dir=shared_data / "fed", cache_dir=cache)
    assert counts == {"turn": {"test": 375}, "dialog": {"test": 125}}
    for cfg in ("turn", "dialog"):
        built = load("fed", cfg, data_dir=shared_data / "fed", cache_dir=cache)["test"]
        loaded = datasets.load_dataset(str(out), cfg, cache_dir=str(tmp_path / "c"))["test"]
        _rows_equal(built, loaded)
    default = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "c"))  # the default config: turn
    assert default["test"].num_rows == 375


def test_export_round_trip_jsonl_cli(shared_data, cache, tmp_path, capsys):
    out = tmp_path / "contest_export"
    rc = main(["datasets", "export", "contest", "--data-dir", str(shared_data / "diversity_eval"), "--out", str(out),
               "--config", "con_test_200_resp_gen", "--format", "jsonl", "--cache-dir", str(cache)])
    assert rc == 0
    assert "con_test_200_resp_gen: test 220 rows" in capsys.readouterr().out
    assert (out / "con_test_200_resp_gen" / "test.jsonl").is_file()
    built = load("contest", "con_test_200_resp_gen", data_dir=shared_data / "diversity_eval", cache_dir=cache)["test"]
    loaded = datasets.load_dataset(str(out), "con_test_200_resp_gen", cache_dir=str(tmp_path / "c"))["test"]
    _rows_equal(built, loaded)


def test_export_cli_error_is_one_line(tmp_path, capsys):
    rc = main(["datasets", "export", "nope", "--out", str(tmp_path / "x"), "--data-dir", str(tmp_path / "data")])
    assert rc == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("name, config, data", [
    ("fed", "turn", "fed"), ("fed", "dialog", "fed"), ("contest", "con_test_200_resp_gen", "diversity_eval"),
    ("dailydialog_plusplus", "default", "dailydialog_plusplus"), ("dailydialog", "pairs", "dailydialog"),
    ("dialstory", "dialspk", None),
])
def test_committed_cards_declare_the_built_features(shared_data, cache, name, config, data):
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard

    card = DatasetCard((CARDS / name / "README.md").read_text(encoding="utf-8"))
    infos = DatasetInfosDict.from_dataset_card_data(card.data)
    built = load(name, config, data_dir=shared_data / data if data else SAMPLE, cache_dir=cache,
                 allow_duplicates=name == "dailydialog")  # the release repeats 3 dialogues (issue 21)
    assert infos[config].features == next(iter(built.values())).features
    assert {s: built[s].num_rows for s in built} == {s.name: s.num_examples for s in infos[config].splits.values()}
    configs = {c["config_name"]: c for c in card.data.to_dict()["configs"]}
    assert {d["split"] for d in configs[config]["data_files"]} == set(built)
    body = card.text
    for section in ("## License", "## Citation"):
        assert section in body


# ----------------------------------------------------------------------------------------------
# DialStory recipe
# ----------------------------------------------------------------------------------------------


def test_dialogue_turns_all_quote_styles():
    text = '他说：“你好。”她答：「早上好」。He said "hi" and "bye".'
    assert [text[s:e] for s, e in dialogue_turns(text)] == ["你好。", "早上好", "hi", "bye"]


def test_number_to_mask_rounds_half_up():
    assert [number_to_mask(n, 0.3) for n in (10, 11, 12, 5, 1)] == [3, 3, 4, 2, 1]


def test_maskable_turns_protect_head_and_tail_chars():
    # 10 turns “甲”; the first starts at offset 11 (< 50), the last ends 5 characters before the end (< 30)
    text = "开" * 10 + "“甲”" + "中" * 60 + "“甲”" * 8 + "中" * 40 + "“甲”" + "尾" * 4
    spans = dialogue_turns(text)
    assert len(spans) == 10
    assert spans[0][0] == 11 and len(text) - spans[-1][1] == 5
    assert maskable_turns(text, spans, head=50, tail=30) == list(range(1, 9))


def test_maskable_turns_words_for_english():
    words = " ".join(["w"] * 5)
    text = f'{words} "a b" {words} "c d" {words}'
    spans = dialogue_turns(text)
    # turn 0 has 5 tokens before it and 5 + 1 quoted-token + 5 = 11 after; turn 1: 11 before, 5 after
    assert maskable_turns(text, spans, head=5, tail=5, unit="word") == [0, 1]
    assert maskable_turns(text, spans, head=6, tail=5, unit="word") == [1]
    assert maskable_turns(text, spans, head=5, tail=6, unit="word") == [0]


def test_mask_turns_and_speaker_masks():
    text = "甲说：“一”乙说：“二”丙说：“三”"
    spans = dialogue_turns(text)
    assert mask_turns(text, spans, [2, 0]) == ("甲说：“[MASK1]”乙说：“二”丙说：“[MASK2]”", ["一", "三"])
    assert insert_speaker_masks(text, [1, 2]) == "甲说：“一”乙说：[MASK]“二”丙说：[MASK]“三”"


# The synthetic stories below name their characters in the first 5 of the 50 head characters (given names must
# occur in the story) and hold about 20 % dialogue, so they pass min_share=0.0 (the 30–50 % rule is tested in
# tests/test_dialstory_recipe.py).
LOOSE = {"min_share": 0.0}


def test_make_dialgen_seeded_order_free_and_skips_counted():
    body = "".join(f"第{i}句说：“台词{i}”。" for i in range(12))
    story = "甲乙丙丁戊" + "序" * 45 + body + "尾" * 30
    five = ["甲", "乙", "丙", "丁", "戊"]
    a, _ = make_dialgen_example("s1", story, five, seed=7, **LOOSE)
    b, _ = make_dialgen_example("s1", story, five, seed=7, **LOOSE)
    assert a == b
    assert len(a["targets"]) == 4  # round(0.3 · 12)
    assert a["story"].count("[MASK") == 4 and a["characters"] == five
    seeds = {tuple(make_dialgen_example("s1", story, five, seed=s, **LOOSE)[0]["targets"]) for s in range(20)}
    assert len(seeds) > 1
    for targets in seeds:
        assert all(t.startswith("台词") for t in targets)
    short = {"id": "s2", "story": "“一”“二”", "characters": five}
    rec = {"id": "s1", "story": story, "characters": five}
    out, skipped = make_dialgen([rec, short], characters="given", seed=7, **LOOSE)
    out_rev, _ = make_dialgen([short, rec], characters="given", seed=7, **LOOSE)
    assert out == out_rev == [a]
    assert skipped == {"fewer than 10 dialogue turns": 1, "dialogue outside 0%–50% of the story's tokens": 0,
                       "fewer than 5 characters (person names)": 0,
                       "fewer than 30% of the turns outside the first 50 / last 30 tokens": 0,
                       "fewer than 5 characters left in the masked story": 0}


def test_make_dialgen_five_character_and_head_tail_rules():
    body = "".join(f"第{i}句说：“台词{i}”。" for i in range(12))
    story = "甲乙丙丁戊" + "序" * 45 + body + "尾" * 30
    four = {"id": "s4", "story": story, "characters": ["甲", "乙", "丙", "丁"]}
    five = {"id": "s5", "story": story, "characters": ["甲", "乙", "丙", "丁", "戊"]}
    # turn i (i < 10) is "第i句说：“台词i”。" (11 characters), so its text starts at 50 + 11·i + 6; turns 10 and 11
    # start at 160 + 7 = 167 and 173 + 7 = 180, and the story is 216 characters long (all turns end ≥ 30 before its end). With a
    # head of 150 only turns 9, 10, 11 are maskable, but round(0.3 · 12) = 4 must be masked.
    crowded = {"id": "s6", "story": story, "characters": five["characters"]}
    spans = dialogue_turns(story)
    assert len(story) == 216 and spans[9][0] == 155 and spans[10][0] == 167
    assert maskable_turns(story, spans, head=150) == [9, 10, 11]
    out, skipped = make_dialgen([four, five], characters="given", **LOOSE)
    assert [ex["id"] for ex in out] == ["s5"]
    assert skipped == {"fewer than 10 dialogue turns": 0, "dialogue outside 0%–50% of the story's tokens": 0,
                       "fewer than 5 characters (person names)": 1,
                       "fewer than 30% of the turns outside the first 50 / last 30 tokens": 0,
                       "fewer than 5 characters left in the masked story": 0}
    out, skipped = make_dialgen([crowded], characters="given", head=150, **LOOSE)
    assert out == [] and skipped["fewer than 30% of the turns outside the first 150 / last 30 tokens"] == 1
    out, _ = make_dialgen([four], characters="given", min_characters=4, **LOOSE)
    assert [ex["id"] for ex in out] == ["s4"]


def test_identify_characters_with_jieba():
    raw = {json.loads(line)["id"]: json.loads(line)
           for line in (SAMPLE / "raw" / "stories.jsonl").read_text(encoding="utf-8").splitlines()}
    found = identify_characters(raw["story-004"]["story"])
    assert set(raw["story-004"]["characters"]) <= set(found)  # the five hand-listed names
    assert len(found) <= 6  # one false positive at most (小树林, tagged nr twice)
    # one-off person-name tags are dropped (阳光 in story-001, 谢谢 in story-002); kinship terms are no names
    assert identify_characters(raw["story-001"]["story"]) == ["小明"]
    assert sorted(identify_characters(raw["story-002"]["story"])) == sorted(["李老师", "王芳", "张强"])


def test_mask_text_in_the_story_is_escaped_and_restored():
    body = "".join(f"第{i}句说：“台词{i}”。" for i in range(12))
    text = "旁白写着[MASK1]和[MASK]，" + "甲乙丙丁戊" + "序" * 45 + body.replace("台词3", "台词[MASK2]") + "尾" * 30
    five = ["甲", "乙", "丙", "丁", "戊"]
    ex, _ = make_dialgen_example("m", text, five, seed=1, **LOOSE)
    assert ex["story"].startswith("旁白写着[[MASK1]和[[MASK]，")
    check_dialgen(ex, "here")  # the builder accepts it: placeholders [MASK1]…[MASKn] once each
    assert fill_masks(ex["story"], ex["targets"]) == text
    skipped_ex, reason = make_dialgen_example("m", text, five, mask_text="skip", **LOOSE)
    assert skipped_ex is None and reason.startswith("contains the mask text")
    _, counts = make_dialgen([{"id": "m", "story": text, "characters": five}], characters="given", mask_text="skip",
                             **LOOSE)
    assert counts["contains the mask text [MASK (mask_text='skip')"] == 1
    spans = dialogue_turns(text)
    assert fill_masks(*mask_turns(text, spans, [0, 3, 5])) == text
    with pytest.raises(ValueError, match="2 turn"):
        fill_masks("“[MASK1]”", ["a", "b"])


def test_dialstory_make_cli_rebuilds_the_sample(tmp_path, capsys):
    out = tmp_path / "dialgen" / "test.jsonl"
    rc = main(["datasets", "dialstory-make", "--input", str(SAMPLE / "raw" / "stories.jsonl"), "--out", str(out),
               "--seed", "0"])
    assert rc == 0
    captured = capsys.readouterr()
    assert "1 of 4 stories written" in captured.out
    assert "dropped 1: fewer than 10 dialogue turns" in captured.err
    assert "dropped 2: fewer than 5 characters (person names)" in captured.err
    assert "dropped 0: fewer than 30% of the turns outside the first 50 / last 30 tokens" in captured.err
    assert "dropped 0: dialogue outside 30%–50% of the story's tokens" in captured.err
    assert "dropped 0: fewer than 5 characters left in the masked story" in captured.err
    assert out.read_text(encoding="utf-8") == (SAMPLE / "dialgen" / "test.jsonl").read_text(encoding="utf-8")
    for line in out.read_text(encoding="utf-8").splitlines():
        ex = json.loads(line)
        turns = ex["story"].count("“")  # masked turns keep their quotation marks
        assert len(ex["targets"]) == math.floor(0.3 * turns + 0.5)
        assert len(ex["characters"]) >= 5
    # the hand-listed characters instead of jieba's: the same stories pass
    rc = main(["datasets", "dialstory-make", "--input", str(SAMPLE / "raw" / "stories.jsonl"), "--out", str(out),
               "--characters", "given", "--overwrite"])  # an existing output file is replaced only with --overwrite
    assert rc == 0 and "1 of 4 stories written" in capsys.readouterr().out


def test_dialspk_baseline_nearest_mention(capsys):
    from dialeval.dialstory.dialspk import nearest_mention_speakers

    story = "王芳走进来。[MASK]“早！”芳芳和小明都笑了，小明说：[MASK]“你好。”[MASK]“再见。”"
    # nearest before mask 1: 王芳; mask 2: 小明 (its last mention ends right before); mask 3: still 小明
    assert nearest_mention_speakers(story, ["小明", "王芳"]) == ["王芳", "小明", "小明"]
    # a longer name ending at the same place wins over its suffix
    assert nearest_mention_speakers("老王芳说：[MASK]“嗯”", ["王芳", "老王芳"]) == ["老王芳"]
    # nobody mentioned before: the most mentioned candidate
    assert nearest_mention_speakers("[MASK]“嗯”小红小红小明", ["小明", "小红"]) == ["小红"]
    rc = main(["dialspk-baseline", "--data", str(SAMPLE)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    # every annotated turn in the hand-written sample names its speaker right before the quote
    assert out["num_turns"] == 23 and out["dac"] == 1.0 and out["sac"] == 1.0
    assert "predictor:nearest-mention" in out["signature"]
