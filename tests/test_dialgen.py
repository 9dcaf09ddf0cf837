"""DialGen metric (DialStory masked dialogue generation): BLEU-1/2 per turn against nltk's independent
BLEU and hand computation, Dist-2/3/4 by hand, tokenisations, smoothing, errors, the evaluate module
and its card's worked example."""

from __future__ import annotations

import math
import re

import pytest
from nltk.translate.bleu_score import SmoothingFunction
from nltk.translate.bleu_score import sentence_bleu as nltk_bleu

import dialeval
from dialeval.dialstory.dialgen import char_tokens, dialgen_scores, jieba_tokens, sentence_bleu
from dialeval.registry import get

# Story A: two masked turns; story B: one turn generated exactly.
PREDS = [["我们明天去公园吧。", "好的"], ["我们明天去公园吧。"]]
REFS = [["明天我们一起去公园。", "好的，没问题"], ["我们明天去公园吧。"]]

# By hand (character level). Turn 1: 8 of 9 characters match (吧 does not), bigrams 4 of 8
# (我们 明天 去公 公园), |hyp| = 9, |ref| = 10 → BP = e^(-1/9). Turn 2: "好的" in "好的，没问题": p1 = p2 = 1,
# BP = e^(1 - 6/2) = e^-2. Turn 3: identical → 1.
B1 = (8 / 9 * math.exp(-1 / 9) + math.exp(-2) + 1) / 3
B2 = (math.sqrt(8 / 9 * 4 / 8) * math.exp(-1 / 9) + math.exp(-2) + 1) / 3
# Generated turns: 9 + 2 + 9 characters; bigrams 8 + 1 + 8 = 17, distinct 9 (turn 3 repeats turn 1);
# trigrams 7 + 0 + 7, distinct 7; 4-grams 6 + 0 + 6, distinct 6.
DIST = {"distinct_2": 9 / 17, "distinct_3": 7 / 14, "distinct_4": 6 / 12}


def test_bleu_and_dist_by_hand():
    out = dialgen_scores(PREDS, REFS)
    assert out["bleu_1"] == pytest.approx(B1, abs=1e-12)
    assert out["bleu_2"] == pytest.approx(B2, abs=1e-12)
    for key, value in DIST.items():
        assert out[key] == pytest.approx(value, abs=1e-12)
    assert out["num_stories"] == 2 and out["num_turns"] == 3
    assert out["signature"].startswith("dialgen|tok:char|bleu:sacrebleu-") and "smooth:none" in out["signature"]
    assert "coherence" not in out


@pytest.mark.parametrize("tokenization, tokenize", [("char", char_tokens), ("jieba", jieba_tokens)])
def test_bleu_equals_nltk_per_turn(tokenization, tokenize):
    out = dialgen_scores(PREDS, REFS, tokenization=tokenization)
    pairs = [(g, r) for gs, rs in zip(PREDS, REFS) for g, r in zip(gs, rs)]
    for n, weights in ((1, (1.0,)), (2, (0.5, 0.5))):
        expected = [nltk_bleu([tokenize(r)], tokenize(g), weights=weights) for g, r in pairs]
        assert out["turn_bleu"][f"bleu_{n}"] == pytest.approx(expected, abs=1e-12)
        assert out[f"bleu_{n}"] == pytest.approx(sum(expected) / len(expected), abs=1e-12)


def test_tokenisations():
    assert char_tokens("我们OK, fine.") == ["我", "们", "OK", ",", "fine", "."]
    assert jieba_tokens("我们明天去公园") == ["我们", "明天", "去", "公园"]
    sig = dialgen_scores(PREDS, REFS, tokenization="jieba")["signature"]
    assert re.search(r"\|tok:jieba-\d", sig)
    with pytest.raises(ValueError, match="tokenization"):
        dialgen_scores(PREDS, REFS, tokenization="bpe")


def test_smoothing_only_matters_without_overlap():
    # "天明" vs "明天": both characters match (BLEU-1 = 1), no bigram does
    assert sentence_bleu(list("天明"), list("明天"), 1) == pytest.approx(1.0)
    assert sentence_bleu(list("天明"), list("明天"), 2) == 0.0
    smoothed = nltk_bleu([list("明天")], list("天明"), weights=(0.5, 0.5),
                         smoothing_function=SmoothingFunction().method3)  # Chen & Cherry's exp
    assert sentence_bleu(list("天明"), list("明天"), 2, "exp") == pytest.approx(smoothed, abs=1e-12)
    assert smoothed == pytest.approx(math.sqrt(0.5))
    assert sentence_bleu([], list("明天"), 2) == 0.0


def test_errors_name_the_field():
    with pytest.raises(ValueError, match="story 0: 1 generated turn"):
        dialgen_scores([["一"]], [["一", "二"]])
    with pytest.raises(TypeError, match=r"predictions\[0\]"):
        dialgen_scores(["一句话"], [["一句话"]])
    with pytest.raises(ValueError, match="2 stories but `references` has 1"):
        dialgen_scores([["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match=r"references\[0\]` is empty"):
        dialgen_scores([[]], [[]])
    with pytest.raises(ValueError, match="smooth"):
        dialgen_scores(PREDS, REFS, smooth="laplace")


def test_module_and_registry():
    metric = dialeval.load("dialgen")
    out = metric.compute(predictions=PREDS, references=REFS)
    assert out["bleu_1"] == pytest.approx(B1, abs=1e-12) and out["distinct_2"] == pytest.approx(9 / 17)
    assert out["signature"].startswith("dialgen|")
    jieba_metric = dialeval.load("dialgen", tokenization="jieba")
    assert "tok:jieba-" in jieba_metric.compute(predictions=PREDS, references=REFS)["signature"]
    with pytest.raises(ValueError, match="`coherence_model` needs `stories`"):
        metric.compute(predictions=PREDS, references=REFS, coherence_model="/nonexistent")


def test_card_reproduces_the_worked_example():
    card = get("dialgen").card()
    out = dialgen_scores(PREDS, REFS)
    for key in ("bleu_1", "bleu_2", "distinct_2", "distinct_3", "distinct_4"):
        assert f"'{key}': {out[key]:.4f}" in card, key
    for turn in PREDS[0] + REFS[0]:
        assert turn in card


def test_backend_is_checked_without_a_coherence_model_and_leaves_the_signature_alone():
    metric = dialeval.load("dialgen")
    with pytest.raises(ValueError, match=r"`backend`='tensorrt' is not one of \['torch', 'onnx', 'onnx-int8'\]"):
        metric.compute(predictions=[["好的"]], references=[["好的"]], backend="tensorrt")
    for bad in (True, 3, ["onnx"]):
        with pytest.raises(TypeError, match=r"`backend` must be text, got"):
            metric.compute(predictions=[["好的"]], references=[["好的"]], backend=bad)
    signature = metric.compute(predictions=[["好的"]], references=[["好的"]], backend="torch")["signature"]
    assert "backend" not in signature and signature.endswith("|coherence:none|coh:none|version:" + dialeval.__version__)
