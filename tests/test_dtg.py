"""Diversity Threshold Generation as the paper describes it (Stasaski & Hearst 2022, §5–6): the 10-of-20
threshold (reached means ≥ by default, > with ``inclusive=False``), the 20-sample cap counting the first 5,
trials averaged, and the 90th-percentile calibration. Expected values are computed by hand in comments."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.nli.core import NLISetScorer
from dialeval.nli.generation import (
    ThresholdGenerationResult,
    calibrate_threshold,
    default_contradiction_threshold,
    reached,
    summarize_trials,
    threshold_resample,
)


def scripted_sampler(responses):
    it = iter(responses)

    def sample(k):
        return [next(it) for _ in range(k)]

    return sample


class TopicClassifier:
    """Two responses on the same topic (text before ':') entail each other, others contradict (C,N,E)."""

    id2label = {0: "contradiction", 1: "neutral", 2: "entailment"}

    def __call__(self, pairs):
        return np.array([[0.1, 0.1, 0.8] if p.split(":")[0] == h.split(":")[0] else [0.8, 0.1, 0.1]
                         for p, h in pairs])


class OrderClassifier:
    """A pair contradicts when the premise sorts before the hypothesis, else is neutral: a set of 5
    distinct responses has exactly one contradiction per unordered pair, 10 of the 20 ordered pairs."""

    id2label = {0: "contradiction", 1: "neutral", 2: "entailment"}

    def __call__(self, pairs):
        return np.array([[0.9, 0.05, 0.05] if p < h else [0.05, 0.9, 0.05] for p, h in pairs])


class CountClassifier:
    """Pairs whose premise starts with 'x' contradict, all others are neutral (C,N,E)."""

    id2label = {0: "contradiction", 1: "neutral", 2: "entailment"}

    def __call__(self, pairs):
        return np.array([[0.9, 0.05, 0.05] if p.startswith("x") else [0.05, 0.9, 0.05] for p, _ in pairs])


def test_default_threshold_is_ten_of_twenty():
    assert default_contradiction_threshold(5) == 10
    assert default_contradiction_threshold(4) == 6  # half of 12 ordered pairs


def test_a_set_with_exactly_ten_contradictions_is_accepted_by_default():
    scorer = NLISetScorer(OrderClassifier(), "contradictions")
    responses = ["a", "b", "c", "d", "e", "f"]
    out = threshold_resample(scripted_sampler(responses), scorer, n=5, threshold=default_contradiction_threshold(5))
    assert out.scores == [10.0] and out.reached_threshold and out.num_samples == 5 and out.replacements == []
    strict = threshold_resample(scripted_sampler([f"r{i:02d}" for i in range(30)]), scorer, n=5, threshold=10,
                                inclusive=False)
    # "> 10" is never met by 5 distinct responses: 5 initial + 15 replacements = the 20-sample cap
    assert not strict.reached_threshold and strict.num_samples == 20 and len(strict.replacements) == 15
    assert strict.scores == [10.0] * 16 and not strict.inclusive


def test_reached_both_readings():
    assert reached(10, 10) and not reached(10, 10, inclusive=False)
    assert reached(11, 10, inclusive=False) and not reached(9.999, 10)


def test_nli_contradictions_from_eight_to_twelve_crosses_ten():
    # [x1, x2, y1, y2, y3] = 8 contradictions; removing a y leaves 2 × 3 = 6, removing an x leaves 1 × 3 = 3
    # → first y (slot 2) is dropped; the new 'x3' gives [x1, x2, x3, y2, y3] = 3 × 4 = 12 ≥ 10.
    scorer = NLISetScorer(CountClassifier(), "contradictions")
    out = threshold_resample(scripted_sampler(["x1", "x2", "y1", "y2", "y3", "x3"]), scorer, n=5, threshold=10)
    assert out.scores == [8.0, 12.0] and out.replacements == [{"slot": 2, "dropped": "y1", "new": "x3"}]
    assert out.num_samples == 6 and out.reached_threshold


def test_topics_hand_counts():
    scorer = NLISetScorer(TopicClassifier(), "contradictions")
    assert scorer(["a:1", "a:2", "b:1", "b:2", "c:1"]) == 16.0
    assert scorer(["a:1", "a:2", "a:3", "b:1", "b:2"]) == 12.0
    assert scorer(["a:1", "a:2", "a:3", "a:4", "b:1"]) == 8.0


def _result(scores, num_samples, ok):
    return ThresholdGenerationResult(["r"] * 5, scores, num_samples, ok, 10.0)


def test_summarize_trials_by_hand():
    runs = [_result([8.0, 12.0], 6, True), _result([4.0, 6.0, 8.0], 20, False), _result([10.0], 5, True)]
    out = summarize_trials(runs)
    # starting (8 + 4 + 10)/3 = 22/3; ending (12 + 8 + 10)/3 = 10; samples (6 + 20 + 5)/3 = 31/3; reached 2/3
    assert out["starting_score"] == pytest.approx(22 / 3) and out["ending_score"] == pytest.approx(10.0)
    assert out["num_samples"] == pytest.approx(31 / 3) and out["reached_share"] == pytest.approx(2 / 3)
    assert out["trials"] == 3
    with pytest.raises(ValueError, match="no trials"):
        summarize_trials([])


def test_initial_set_and_report_scorer():
    scorer = NLISetScorer(CountClassifier(), "contradictions")
    out = threshold_resample(scripted_sampler(["x1", "x2", "y1", "y2", "y3", "x3"]), scorer, n=5, threshold=10)
    assert out.initial_responses() == ["x1", "x2", "y1", "y2", "y3"] and out.responses == ["x1", "x2", "x3", "y2", "y3"]
    baseline = NLISetScorer(CountClassifier(), "baseline")  # +1 per contradiction, neutral 0: 8 → 12
    summary = summarize_trials([out], report=baseline)
    assert summary["starting_report"] == 8.0 and summary["ending_report"] == 12.0


def test_calibrate_threshold_is_the_90th_percentile():
    # scores 1..10 (set sizes): linear interpolation at rank 0.9 · 9 = 8.1 → 9 + 0.1 · (10 − 9) = 9.1
    sets = [[f"r{j}" for j in range(k)] for k in range(1, 11)]
    assert calibrate_threshold(lambda s: float(len(s)), sets) == pytest.approx(9.1)
    assert calibrate_threshold(lambda s: float(len(s)), sets, percentile=50) == pytest.approx(5.5)
    with pytest.raises(ValueError, match="percentile"):
        calibrate_threshold(len, sets, percentile=120)
    with pytest.raises(ValueError, match="reference_sets"):
        calibrate_threshold(len, [])


def test_trials_with_a_tiny_lm(tmp_path):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    from dialeval.nli.generation import threshold_generation_trials
    from dialeval.testing import train_bpe_tokenizer

    tok = train_bpe_tokenizer(tmp_path, GPT2Tokenizer,
                              special_tokens={"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                              "unk_token": "<|endoftext|>"})
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(config).eval()

    def distinct(responses):
        return float(len(set(responses)))

    out = threshold_generation_trials(model, tok, "Hello !", trials=3, seed=5, scorer=distinct, threshold=5,
                                      max_samples=7, max_new_tokens=4)
    assert out.seeds == [5, 6, 7] and len(out.runs) == 3
    assert out.summary == summarize_trials(out.runs)
    assert out.to_dict()["runs"][0]["threshold"] == 5.0
