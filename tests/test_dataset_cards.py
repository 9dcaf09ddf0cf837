"""Exported dataset cards are ready for the Hub and for training loops: complete metadata, ClassLabel
columns with their names, standard split names, and a batching example (``with_format("torch")`` plus a
collate function for the ragged columns) that runs on a real export of ../shared/data."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from huggingface_hub import DatasetCard

from dialeval.datasets import export

REQUIRED = ("license", "size_categories", "task_categories", "task_ids", "source_datasets", "pretty_name")
# name → (folder under ../shared/data, configs to export)
EXPORTS = {"dailydialog": ("dailydialog", None), "fed": ("fed", ["turn"]),
           "dailydialog_plusplus": ("dailydialog_plusplus", ["default"]),
           "contest": ("diversity_eval", ["con_test_200_resp_gen"])}


@pytest.fixture(scope="module")
def exports(tmp_path_factory, shared_data) -> dict[str, Path]:
    root, cache = tmp_path_factory.mktemp("exports"), tmp_path_factory.mktemp("cache")
    out = {}
    for name, (folder, configs) in EXPORTS.items():
        out[name] = root / name
        export(name, out[name], data_dir=shared_data / folder, configs=configs, cache_dir=cache,
               allow_duplicates=name == "dailydialog")  # the release repeats 3 dialogues (issue 21)
    return out


def run_card_example(folder: Path, name: str) -> dict:
    """Execute the card's "Use in a training loop" code block against the local export; its namespace."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    section = text.split("## Use in a training loop", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    assert f'load_dataset("<org>/{name}"' in code and 'with_format("torch")' in code and "def collate" in code
    namespace: dict = {}
    exec(compile(code.replace(f'"<org>/{name}"', repr(str(folder))), f"{name}-card", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", list(EXPORTS))
def test_card_metadata_is_complete(exports, name):
    meta = DatasetCard.load(exports[name] / "README.md").data.to_dict()
    assert all(meta.get(key) for key in REQUIRED), [key for key in REQUIRED if not meta.get(key)]
    for config in meta["configs"]:
        assert {f["split"] for f in config["data_files"]} <= {"train", "validation", "test"}


def test_dailydialog_labels_and_training_loop(exports, shared_data):
    ns = run_card_example(exports["dailydialog"], "dailydialog")
    ds, batch = ns["ds"], ns["batch"]
    # the Hub's daily_dialog ClassLabels (names and ids, written out from its card)
    assert ds.features["emotion"].names == ["no emotion", "anger", "disgust", "fear", "happiness", "sadness",
                                            "surprise"]
    assert ds.features["act"].names == ["__dummy__", "inform", "question", "directive", "commissive"]
    assert ds.features["topic"].num_classes == 10
    # the first 8 context/response pairs, read straight from ParlAI's validation.json
    raw = json.loads((shared_data / "dailydialog" / "validation.json").read_text(encoding="utf-8"))
    expected = [(d["topic"], d["dialogue"][t]) for d in raw for t in range(1, len(d["dialogue"]))][:8]
    parlai = {"no_emotion": "no emotion"}  # ParlAI's spelling of daily_dialog's name
    assert [ds.features["emotion"].int2str(int(i)) for i in batch["emotion"]] == \
        [parlai.get(t["emotion"], t["emotion"]) for _, t in expected]
    assert [ds.features["act"].int2str(int(i)) for i in batch["act"]] == [t["act"] for _, t in expected]
    assert [ds.features["topic"].int2str(int(i)) for i in batch["topic"]] == [topic for topic, _ in expected]
    assert batch["response"] == [t["text"] for _, t in expected]
    assert batch["emotion"].shape == (8,) and [len(c) for c in batch["context"]][:2] == [1, 2]
    card = (exports["dailydialog"] / "README.md").read_text(encoding="utf-8")
    assert "0 `no emotion`" in card and "0 `__dummy__`" in card and "4 `commissive`" in card and "9 `finance`" in card


def test_fed_system_label_and_training_loop(exports, shared_data):
    ns = run_card_example(exports["fed"], "fed")
    ds, batch = ns["ds"], ns["batch"]
    assert ds.features["system"].names == ["Human", "Meena", "Mitsuku"]
    raw = [e for e in json.loads((shared_data / "fed" / "fed_data.json").read_text(encoding="utf-8"))
           if "response" in e][:8]
    assert [ds.features["system"].names[int(i)] for i in batch["system"]] == [e["system"] for e in raw]
    means = [math.fsum(e["annotations"]["Overall"]) / len(e["annotations"]["Overall"]) for e in raw]
    assert batch["overall"].tolist() == pytest.approx(means, abs=1e-6)  # the torch format gives float32
    assert batch["overall_answers"].tolist() == [e["annotations"]["Overall"] for e in raw]  # 5 answers each
    assert bool(batch["answer_mask"].all())
    assert "0 `Human`, 1 `Meena`, 2 `Mitsuku`" in (exports["fed"] / "README.md").read_text(encoding="utf-8")


def test_dailydialog_plusplus_validation_split_and_training_loop(exports, shared_data):
    ns = run_card_example(exports["dailydialog_plusplus"], "dailydialog_plusplus")
    batch = ns["batch"]
    dev = [json.loads(line) for line in (shared_data / "dailydialog_plusplus" / "dev.json").read_text(
        encoding="utf-8").splitlines()[:4]]
    assert batch["id"] == [d["id"] for d in dev]
    assert batch["context"] == [d["context"] for d in dev]
    assert batch["candidates"][0] == dev[0]["positive_responses"] + dev[0]["adversarial_negative_responses"]
    assert batch["labels"][0] == [1] * 5 + [0] * 5
    card = (exports["dailydialog_plusplus"] / "README.md").read_text(encoding="utf-8")
    assert "the original **`dev`** split" in card  # the original split name is recorded


def test_dialstory_training_loop(tmp_path):
    from dialeval.resources import dataset_card_dir

    sample = dataset_card_dir("dialstory") / "sample"
    export("dialstory", tmp_path / "dialstory", data_dir=sample, cache_dir=tmp_path / "cache")
    batch = run_card_example(tmp_path / "dialstory", "dialstory")["batch"]
    # story-001 (hand-annotated): candidates 小明, 妈妈, 爸爸; speakers 妈妈 小明 爸爸 小明 妈妈 爸爸 妈妈
    assert batch["candidates"][0] == ["小明", "妈妈", "爸爸"]
    assert batch["labels"][0].tolist() == [1, 0, 2, 0, 1, 2, 1]
    assert [len(c) for c in batch["candidates"]] == [3, 3, 2, 5] and len(batch["labels"]) == 4


def test_license_fields_follow_the_source_notes(shared_data):
    """Each card's ``license`` is what its SOURCE.md supports (read by hand): a data license only where one
    is stated; a repository's code license is not a data license."""
    from dialeval.resources import dataset_card_dir

    expected = {"dailydialog": ("dailydialog", "cc-by-nc-sa-4.0", "CC BY-NC-SA 4.0"),
                "contest": ("diversity_eval", "unknown", "No separate data license found"),
                "dailydialog_plusplus": ("dailydialog_plusplus", "unknown", "No data license is stated"),
                "fed": ("fed", "unknown", "No license is stated for the FED data")}
    for name, (folder, license_id, note) in expected.items():
        assert note in (shared_data / folder / "SOURCE.md").read_text(encoding="utf-8"), name
        meta = DatasetCard.load(dataset_card_dir(name) / "README.md").data.to_dict()
        assert meta["license"] == license_id, name
    assert DatasetCard.load(dataset_card_dir("dialstory") / "README.md").data.to_dict()["license"] == "unknown"


def test_contest_training_loop(exports):
    batch = run_card_example(exports["contest"], "contest")["batch"]
    assert batch["label"].shape == (8,) and set(batch["label"].tolist()) <= {0.0, 1.0}
    assert str(batch["human"].dtype) == "torch.float32"  # the torch format's float
    assert [len(r) for r in batch["responses"]] == [5] * 8  # conTest: 5 responses per set
