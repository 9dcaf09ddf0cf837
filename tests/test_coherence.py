"""Coherence classifier (DialStory §6): pair building by the paper's recipe, reading sources, and the
train-coherence → dialgen pipeline on a tiny offline model."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from dialeval.cli import main
from dialeval.datasets.dialstory import dialogue_turns
from dialeval.dialstory.coherence_data import (
    Pair,
    dialogue_pairs,
    majority_accuracy,
    permute,
    read_sources,
    shuffle_story_turns,
    split_by_source,
    story_pairs,
)
from dialeval.resources import dataset_card_dir

SAMPLE = dataset_card_dir("dialstory") / "sample"
STORY = "甲说：“一二”乙问：“三四五？”丙答：“六”。甲笑了：“七八”"


def test_shuffled_story_keeps_everything_but_the_turn_order():
    neg = shuffle_story_turns(STORY, random.Random(0))
    assert neg is not None and neg != STORY
    spans, neg_spans = dialogue_turns(STORY), dialogue_turns(neg)
    turns = [STORY[s:e] for s, e in spans]
    neg_turns = [neg[s:e] for s, e in neg_spans]
    assert sorted(neg_turns) == sorted(turns) and neg_turns != turns
    # the narration between the turns is unchanged, character for character
    narration = [STORY[e:s] for (_, e), (s, _) in zip([(0, 0)] + spans, spans + [(len(STORY), 0)])]
    neg_narr = [neg[e:s] for (_, e), (s, _) in zip([(0, 0)] + neg_spans, neg_spans + [(len(neg), 0)])]
    assert narration == neg_narr
    assert shuffle_story_turns("他说：“好”她说：“好”", random.Random(0)) is None  # identical turns
    assert shuffle_story_turns("没有对话。", random.Random(0)) is None


def test_pairs_are_balanced_seeded_and_count_unusable():
    pairs, skipped = story_pairs([STORY, "他说：“好”", STORY], seed=3)
    assert skipped == 1
    assert [(p.label, p.source) for p in pairs] == [(1, 0), (0, 0), (1, 2), (0, 2)]
    assert pairs[0].text == STORY and pairs[1].text != STORY
    again, _ = story_pairs([STORY, "他说：“好”", STORY], seed=3)
    assert again == pairs
    assert majority_accuracy(pairs) == 0.5
    d, skipped = dialogue_pairs([["a", "b", "c"], ["x", "x"]], seed=0, sep=" | ")
    assert skipped == 1 and d[0] == Pair("a | b | c", 1, 0)
    assert sorted(d[1].text.split(" | ")) == ["a", "b", "c"] and d[1].text != "a | b | c"
    assert permute(["x", "x", "x"], random.Random(0)) is None


def test_split_keeps_sources_whole():
    pairs = [Pair(f"t{i}{lab}", lab, i) for i in range(10) for lab in (1, 0)]
    train, held = split_by_source(pairs, 0.2, seed=0)
    assert len(held) == 4 and len(train) == 16
    assert {p.source for p in train}.isdisjoint({p.source for p in held})
    assert Counter(p.label for p in held) == {1: 2, 0: 2}
    with pytest.raises(ValueError, match="at least 2"):
        split_by_source(pairs[:2], 0.5)


def test_read_sources(shared_data, tmp_path):
    kind, items = read_sources(shared_data / "dailydialog", "validation")
    assert kind == "dialogue" and len(items) == 1000  # SOURCE.md: 1,000 dialogues, 8,069 turns
    assert sum(len(d) for d in items) == 8069
    # DialGen records are filled back into the original stories
    kind, items = read_sources(SAMPLE, "test")
    raw = {json.loads(line)["id"]: json.loads(line)["story"]
           for line in (SAMPLE / "raw" / "stories.jsonl").read_text(encoding="utf-8").splitlines()}
    assert kind == "story" and items == [raw["story-004"]]
    f = tmp_path / "d.jsonl"
    f.write_text('{"turns": ["a", "b"]}\n{"story": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="mixes stories and dialogues"):
        read_sources(f, "train")
    with pytest.raises(FileNotFoundError, match="no 'train' split"):
        read_sources(tmp_path, "train")


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A random 2-layer RoBERTa encoder with a locally trained tokenizer (no classification head)."""
    from transformers import RobertaConfig, RobertaModel

    from dialeval.testing.roberta import TINY, roberta_tokenizer

    out = tmp_path_factory.mktemp("tiny_encoder")
    tok = roberta_tokenizer(out)
    cfg = RobertaConfig(vocab_size=len(tok), max_position_embeddings=70, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **TINY)
    RobertaModel(cfg).save_pretrained(out)
    return out


def _dialogues(path: Path) -> None:
    rows = [{"turns": [f"Hello , how are you {i} ?", "I am fine , thank you .", f"Let's go at {i} .",
                       "Sure , see you ."]} for i in range(12)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_train_coherence_cli_and_dialgen_scoring(tiny_encoder, tmp_path, capsys):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    import dialeval
    from dialeval.datasets.dialstory import fill_masks

    data = tmp_path / "train.jsonl"
    _dialogues(data)
    out = tmp_path / "coh"
    args = ["train-coherence", "--data", str(data), "--encoder", str(tiny_encoder), "--out", str(out),
            "--epochs", "1", "--batch-size", "8", "--max-length", "64", "--eval-every", "1", "--val-fraction",
            "0.25", "--eval-split", "train", "--no-progress", "--seed", "1"]
    assert main(args) == 0
    files = sorted(p.name for p in out.iterdir())
    assert "model.safetensors" in files and not any(f.endswith((".bin", ".pkl", ".pt")) for f in files)
    meta = json.loads((out / "coherence.json").read_text(encoding="utf-8"))
    assert meta["train_pairs"] == 18 and meta["val_pairs"] == 6 and meta["majority_accuracy"] == 0.5
    assert meta["sep"] == " </s> " and meta["signature"].startswith("coherence|encoder:")
    assert meta["max_length"] == 64 and meta["window"] == "head-64" and "|window:head-64|" in meta["signature"]
    assert 0 <= meta["test_accuracy"] <= 1 and meta["steps"] >= 1
    # seeded: a second run writes the same weights
    assert main(args[:6] + [str(tmp_path / "coh2")] + args[7:]) == 0
    from safetensors.torch import load_file

    a, b = load_file(out / "model.safetensors"), load_file(tmp_path / "coh2" / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    # DialStory stories: the quoted turns are shuffled in place; the tokenizer's separator is not used
    stories_out = tmp_path / "coh_zh"
    # no --max-length: the encoder's full window (70 positions, two reserved by RoBERTa: 68), not a fixed 256
    assert main(["train-coherence", "--data", str(SAMPLE / "raw" / "stories.jsonl"), "--encoder", str(tiny_encoder),
                 "--out", str(stories_out), "--epochs", "1", "--val-fraction", "0.25", "--no-progress"]) == 0
    zh = json.loads((stories_out / "coherence.json").read_text(encoding="utf-8"))
    assert zh["kind"] == "story" and zh["train_pairs"] == 6 and zh["val_pairs"] == 2 and zh["sep"] == "\n"
    assert zh["max_length"] == 68 and zh["window"] == "head-68"
    capsys.readouterr()
    assert main(["train-coherence", "--data", str(SAMPLE / "raw" / "stories.jsonl"), "--encoder", str(tiny_encoder),
                 "--out", str(tmp_path / "too_long"), "--max-length", "512", "--no-progress"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # past transformers' bars
    assert len(errors) == 1 and "--max-length 512 exceeds the encoder's window of 68 tokens" in errors[0]
    capsys.readouterr()

    # dialgen's coherence = mean P(original) of the filled stories, checked by a direct forward pass
    stories = ["甲说：“[MASK1]”乙说：“好”", "“[MASK1]”他又说：“[MASK2]”"]
    preds, refs = [["你好"], ["走吧", "快点"]], [["您好"], ["走", "快"]]
    res = dialeval.load("dialgen").compute(predictions=preds, references=refs, stories=stories,
                                           coherence_model=str(out))
    model = AutoModelForSequenceClassification.from_pretrained(out).eval()
    tok = AutoTokenizer.from_pretrained(out)
    expected = []
    for story, turns in zip(stories, preds):
        with torch.no_grad():
            logits = model(**tok(fill_masks(story, turns), return_tensors="pt", truncation=True, max_length=64)).logits
        expected.append(torch.softmax(logits, -1)[0, 1].item())
    assert res["story_coherence"] == pytest.approx(expected, abs=1e-5)
    assert res["coherence_mean"] == pytest.approx(sum(expected) / 2, abs=1e-5)
    assert res["coherence"] == sum(p > 0.5 for p in expected) / 2
    try:  # the CPU default: ONNX Runtime when installed, torch otherwise
        import onnxruntime  # noqa: F401
        default = "onnx"
    except ImportError:
        default = "torch"
    assert f"coherence:{out}" in res["signature"] and f"|backend:{default}|window:head-64|" in res["signature"]
    ref = dialeval.load("dialgen").compute(predictions=preds, references=refs, stories=stories,
                                           coherence_model=str(out), backend="torch")
    assert ref["story_coherence"] == pytest.approx(expected, abs=1e-6) and "|backend:torch|" in ref["signature"]
    with pytest.raises(ValueError, match=r"stories\[0\]"):
        dialeval.load("dialgen").compute(predictions=[["a", "b"]], references=[["a", "b"]],
                                         stories=["只有“[MASK1]”"], coherence_model=str(out))


def test_encoder_window_is_the_full_window_up_to_512():
    from types import SimpleNamespace

    from dialeval.dialstory.coherence import TrainConfig, encoder_window

    assert TrainConfig().max_length == 512  # DialStory's stories average ~454 tokens: 256 never saw the later turns
    bert = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=512, model_type="bert"))
    roberta = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=514, model_type="roberta"))
    unbounded = SimpleNamespace(model_max_length=int(1e30))
    assert encoder_window(unbounded, bert) == 512 and encoder_window(unbounded, roberta) == 512
    assert encoder_window(SimpleNamespace(model_max_length=128), bert) == 128
    longformer = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=4096, model_type="longformer"))
    assert encoder_window(unbounded, longformer) == 512
