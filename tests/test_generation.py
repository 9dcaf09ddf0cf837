"""Diversity Threshold Generation: the resampling loop with scripted samplers/scorers (exact), and the
transformers path on tiny random LMs (causal GPT-2 and encoder-decoder Blenderbot) built offline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialeval.nli.core import NLISetScorer
from dialeval.nli.generation import (
    best_removal,
    context_ids,
    default_contradiction_threshold,
    distinct_scorer,
    diversity_threshold_generation,
    embedding_scorer,
    mean_pairwise_cosine,
    threshold_resample,
)


def scripted_sampler(responses):
    """sample(k) hands out the next k of ``responses`` and records how many were asked for."""
    it = iter(responses)
    asked = []

    def sample(k):
        asked.append(k)
        return [next(it) for _ in range(k)]

    sample.asked = asked
    return sample


def distinct_count(responses):
    return float(len(set(responses)))


class TopicClassifier:
    """Scripted NLI: two responses on the same topic (text before ':') entail, otherwise contradict."""

    id2label = {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}

    def __init__(self):
        self.pairs_seen = 0

    def __call__(self, pairs):
        self.pairs_seen += len(pairs)
        same = [p.split(":")[0] == h.split(":")[0] for p, h in pairs]
        return np.array([[0.8, 0.1, 0.1] if s else [0.1, 0.1, 0.8] for s in same])  # E,N,C order


# ----------------------------------------------------------------------------- the loop, scripted


def test_stops_at_threshold_and_replaces_first_best_removal():
    sample = scripted_sampler(["a", "a", "a", "b", "c", "d", "e", "f"])
    out = threshold_resample(sample, distinct_count, n=5, threshold=5, max_samples=20)
    # [a a a b c]=3: removing any 'a' leaves 3 distinct (removing b or c leaves 2) → slot 0 gets 'd'
    # [d a a b c]=4: removing d, b or c leaves 3, removing an 'a' leaves 4 → slot 1 gets 'e'
    assert out.responses == ["d", "e", "a", "b", "c"]
    assert out.scores == [3.0, 4.0, 5.0]
    assert out.num_samples == 7 and out.reached_threshold
    assert [r["slot"] for r in out.replacements] == [0, 1]
    assert sample.asked == [5, 1, 1]


def test_already_diverse_set_is_kept():
    out = threshold_resample(scripted_sampler("vwxyz"), distinct_count, n=5, threshold=5)
    assert out.responses == list("vwxyz") and out.scores == [5.0] and out.num_samples == 5
    assert out.replacements == []


def test_respects_the_sample_budget():
    sample = scripted_sampler(["same"] * 30)
    out = threshold_resample(sample, distinct_count, n=5, threshold=2, max_samples=8)
    assert out.num_samples == 8 and sum(sample.asked) == 8
    assert out.scores == [1.0] * 4 and not out.reached_threshold
    out20 = threshold_resample(scripted_sampler(["same"] * 30), distinct_count, n=5, threshold=2)
    assert out20.num_samples == 20 and len(out20.scores) == 16  # default budget: 20 samples


def test_nli_scorer_replaces_the_redundant_response_and_reuses_pairs():
    clf = TopicClassifier()
    scorer = NLISetScorer(clf, "contradictions")
    threshold = default_contradiction_threshold(5)
    assert threshold == 10  # the paper's 10 of the 20 ordered pairs
    sample = scripted_sampler(["dogs: run", "cats: purr", "cats: sleep", "cats: eat", "cats: hunt", "news: rain"])
    out = threshold_resample(sample, scorer, n=5, threshold=threshold)
    # {dogs:1, cats:4}: 20 − 4·3 same-topic pairs = 8 contradictions; dropping a cat leaves 12 − 6 = 6,
    # dropping the dog leaves 0 → the first cat (slot 1) goes; {dogs, cats×3, news}: 20 − 6 = 14.
    assert out.replacements == [{"slot": 1, "dropped": "cats: purr", "new": "news: rain"}]
    assert out.scores == [8.0, 14.0] and out.reached_threshold and out.num_samples == 6
    # 20 pairs for the first set, subsets come from the cache, 8 new pairs after the replacement
    assert clf.pairs_seen == 28


def test_plot_of_the_score_trajectory(tmp_path):
    from dialeval.nli.generation import plot_threshold_generation

    out = threshold_resample(scripted_sampler(["a", "a", "a", "b", "c", "d", "e"]), distinct_count, n=5, threshold=5)
    path = tmp_path / "dtg.png"
    plot_threshold_generation(out, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_best_removal_reports_every_subset():
    drop, scores = best_removal(["a", "b", "a"], distinct_count)
    assert scores == [2.0, 1.0, 2.0] and drop == 0


@pytest.mark.parametrize("kwargs, match", [
    ({"n": 1, "threshold": 1}, "`n`"),
    ({"n": 5, "threshold": 1, "max_samples": 4}, "max_samples"),
    ({"n": 5, "threshold": None}, "threshold"),
])
def test_bad_loop_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        threshold_resample(scripted_sampler("abcdefgh"), distinct_count, **kwargs)


# ----------------------------------------------------------------------------- pluggable scorers


def test_distinct_and_embedding_scorers_by_hand():
    # unigrams a b a c → 3/4; bigrams "a b", "a c" → 2/2; mean 0.875
    assert distinct_scorer((1, 2), "whitespace")(["a b", "a c"]) == pytest.approx(0.875)
    # cosines: (1,0)-(0,1) 0, (1,0)-(1,1) 1/√2, (0,1)-(1,1) 1/√2
    assert mean_pairwise_cosine([[1, 0], [0, 1], [1, 1]]) == pytest.approx(math.sqrt(2) / 3)

    class Encoder:
        def encode(self, texts):
            return np.array([[1.0, 0.0] if t.startswith("x") else [0.0, 2.0] for t in texts])

    assert embedding_scorer(Encoder())(["x1", "y", "x2"]) == pytest.approx(1 - 1 / 3)


# ----------------------------------------------------------------------------- tiny transformers LMs


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    from dialeval.testing import train_bpe_tokenizer

    tok = train_bpe_tokenizer(tmp_path_factory.mktemp("gpt2"), GPT2Tokenizer,
                              special_tokens={"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                              "unk_token": "<|endoftext|>"})
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return GPT2LMHeadModel(config).eval(), tok


LONG_CONTEXT = ["Hello , how are you today ?", "I am fine , thank you . And you ?"] * 20 + ["Where are you from ?"]


def test_context_cut_from_the_left(tiny_gpt2):
    _, tok = tiny_gpt2
    ids = context_ids(tok, LONG_CONTEXT, 30)
    full = tok("\n".join(LONG_CONTEXT))["input_ids"]
    assert len(full) > 30 and ids == full[-30:]
    assert context_ids(tok, "Hi", 30) == tok("Hi")["input_ids"]


def test_tiny_lm_reproducible_budget_and_rng_untouched(tiny_gpt2):
    import torch

    model, tok = tiny_gpt2
    state = torch.get_rng_state()
    kwargs = {"scorer": distinct_count, "threshold": 6, "max_samples": 8, "max_new_tokens": 6}
    # 41 turns ≫ 64 positions: only works because the context is cut to 64 − 6 tokens
    a = diversity_threshold_generation(model, tok, LONG_CONTEXT, seed=3, **kwargs)
    b = diversity_threshold_generation(model, tok, LONG_CONTEXT, seed=3, **kwargs)
    c = diversity_threshold_generation(model, tok, LONG_CONTEXT, seed=4, **kwargs)
    assert torch.equal(torch.get_rng_state(), state)
    assert a == b and a.responses != c.responses
    assert a.num_samples == 8 and len(a.scores) == 4 and not a.reached_threshold  # 6 distinct of 5: never
    assert all(isinstance(r, str) for r in a.responses)


def test_tiny_lm_stops_when_diverse_and_drops_the_longest(tiny_gpt2):
    model, tok = tiny_gpt2
    out = diversity_threshold_generation(model, tok, "Hello !", scorer=distinct_count, threshold=5,
                                         max_new_tokens=6)
    assert out.num_samples == 5 and out.scores == [5.0] and out.reached_threshold

    def shortness(responses):  # best subset = the one without the longest response
        return -float(max(len(r) for r in responses))

    out = diversity_threshold_generation(model, tok, "Hello !", scorer=shortness, threshold=0.0, max_samples=7,
                                         max_new_tokens=6, seed=1)
    assert len(out.replacements) == 2 and out.num_samples == 7
    # replay: each dropped response was the longest (first on ties) of the set at that step
    final = list(out.responses)
    sets = [final]
    for step in reversed(out.replacements):
        prev = list(sets[-1])
        prev[step["slot"]] = step["dropped"]
        sets.append(prev)
    sets.reverse()  # sets[i] = set before replacement i
    for before, step in zip(sets, out.replacements):
        lengths = [len(r) for r in before]
        assert step["slot"] == lengths.index(max(lengths))


def test_default_nli_scorer_with_a_tiny_nli_model(tiny_gpt2, tmp_path):
    from dialeval.testing.roberta import tiny_nli_model

    model, tok = tiny_gpt2
    nli = tiny_nli_model(tmp_path / "nli")
    out = diversity_threshold_generation(model, tok, "Do you like music ?", nli_model=str(nli), max_samples=7,
                                         max_new_tokens=6)
    assert out.threshold == 10.0 and out.inclusive
    assert all(float(s).is_integer() and 0 <= s <= 20 for s in out.scores)
    assert out.reached_threshold == (out.scores[-1] >= 10)
    assert out.num_samples == 5 + len(out.replacements) <= 7
    if not out.reached_threshold:
        assert out.num_samples == 7


def test_custom_scorer_needs_a_threshold(tiny_gpt2):
    model, tok = tiny_gpt2
    with pytest.raises(ValueError, match="threshold"):
        diversity_threshold_generation(model, tok, "Hi", scorer=distinct_count)


def test_tiny_encoder_decoder(tmp_path):
    import torch
    from transformers import (
        BlenderbotConfig,
        BlenderbotForConditionalGeneration,
        BlenderbotTokenizer,
    )

    from dialeval.testing import train_bpe_tokenizer

    tok = train_bpe_tokenizer(tmp_path, BlenderbotTokenizer,
                              special_tokens={"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>",
                                              "unk_token": "<unk>", "mask_token": "<mask>"})
    torch.manual_seed(0)
    config = BlenderbotConfig(vocab_size=len(tok), d_model=32, encoder_layers=1, decoder_layers=1,
                              encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                              decoder_ffn_dim=64, max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                              bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                              decoder_start_token_id=tok.bos_token_id)
    model = BlenderbotForConditionalGeneration(config).eval()
    out = diversity_threshold_generation(model, tok, LONG_CONTEXT * 3, scorer=distinct_count, threshold=6,
                                         max_samples=6, max_new_tokens=5)
    assert out.num_samples == 6 and len(out.responses) == 5
