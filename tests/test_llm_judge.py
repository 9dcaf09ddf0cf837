"""The LLM judge: G-Eval's expected rating by hand, on a tiny model against a plain transformers forward pass,
the shared-prefix cache against scoring from scratch, the rubric hash in the signature, the pairwise order
swap, and one-line errors for bad rubric, quality and model input."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from tolerances import TINY_LM_RTOL

import dialeval
from dialeval.judge.llm_judge import compare, compute_llm_judge
from dialeval.judge.rubrics import RUBRICS, item_text, prompt_parts
from dialeval.judge.scorer import JudgeScorer, expected_rating
from dialeval.testing.blenderbot import build_tiny_blenderbot, build_tiny_causal_lm

CONTEXTS = [["Hi! How was your weekend?", "Great , I went hiking ."], ["What is your favourite food ?"],
            ["Do you like jazz ?", "Yes , a lot .", "Who do you like ?"]]
RESPONSES = ["Oh nice , which trail ?", "I like trains .", "Miles Davis , for sure ."]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("judge_lm"), seed=3))


def test_expected_rating_by_hand():
    # p over a 7-token vocabulary; tokens 2..6 are the ratings 1..5: p(r) = .1 .2 .3 .2 .1, 0.1 elsewhere
    p = np.array([[0.05, 0.05, 0.1, 0.2, 0.3, 0.2, 0.1]])
    value, argmax, mass = expected_rating(np.log(p) + 7.0, [2, 3, 4, 5, 6])  # a constant shift changes nothing
    # E = (1·.1 + 2·.2 + 3·.3 + 4·.2 + 5·.1) / .9 = 2.7 / .9 = 3
    assert value[0] == pytest.approx(3.0, abs=1e-12) and argmax[0] == 3 and mass[0] == pytest.approx(0.9, abs=1e-12)


def _by_hand(model_dir: str, level: str, context: list[str], response: str | None) -> float:
    """Plain transformers: the prompt text laid out by the rubric module, one forward pass, softmax over the
    vocabulary, E over the five rating tokens."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    head, tail = prompt_parts(level, RUBRICS[level]["overall"])
    answer = "Rating:" if len(tok("Rating: 4", add_special_tokens=False)["input_ids"]) == len(
        tok("Rating:", add_special_tokens=False)["input_ids"]) + 1 else "Rating: "
    ids = (tok(head)["input_ids"] + tok(item_text(level, context, response) + tail + "\n", add_special_tokens=False)
           ["input_ids"] + tok(answer, add_special_tokens=False)["input_ids"])
    digits = [tok(answer + (" " if answer.endswith(":") else "") + r, add_special_tokens=False)["input_ids"][-1]
              for r in "12345"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].double()
    p = torch.softmax(logits, -1)[digits]
    return float(sum((r + 1) * p[r] for r in range(5)) / p.sum())


@pytest.mark.onnx
def test_scores_equal_a_plain_forward_pass_on_every_route(tiny_lm):
    want = [_by_hand(tiny_lm, "turn", c, r) for c, r in zip(CONTEXTS, RESPONSES)]
    for backend in ("torch", "onnx"):
        for share in (True, False):
            got = compute_llm_judge(CONTEXTS, RESPONSES, model=tiny_lm, backend=backend, share_prefix=share,
                                    batch_size=2)
            assert got["scores"] == pytest.approx(want, abs=2e-5), (backend, share)
            assert got["llm_judge"] == pytest.approx(sum(got["scores"]) / 3, abs=1e-12)
            assert all(1 <= s <= 5 for s in got["scores"]) and all(r in range(1, 6) for r in got["ratings"])
    dialogs = [[*c, r] for c, r in zip(CONTEXTS, RESPONSES)]
    got = compute_llm_judge(dialogues=dialogs, config="dialog", model=tiny_lm, backend="torch")
    assert got["scores"] == pytest.approx([_by_hand(tiny_lm, "dialog", d, None) for d in dialogs], abs=2e-5)


@pytest.mark.onnx
def test_responses_to_one_context_share_it_and_equal_the_plain_pass(tiny_lm, monkeypatch, cached_routes):
    """Three systems' responses to each context: the context runs once after the rubric prefix (its responses in
    passes of 2), and every score equals a plain forward pass of its whole prompt."""
    contexts = [CONTEXTS[0]] * 3 + [CONTEXTS[2]] * 2 + [CONTEXTS[1]]
    responses = ["Oh nice , which trail ?", "Cool .", "I went to the sea instead , it was cold and windy .",
                 "Miles Davis , for sure .", "Nobody .", "I like trains ."]
    want = [_by_hand(tiny_lm, "turn", c, r) for c, r in zip(contexts, responses)]
    shared_packs = []
    original = JudgeScorer._shared
    monkeypatch.setattr(JudgeScorer, "_shared", lambda self, past, n, pack, items, chunks: shared_packs.append(
        (pack, chunks)) or original(self, past, n, pack, items, chunks))
    for backend in ("torch", "onnx"):
        shared_packs.clear()
        got = compute_llm_judge(contexts, responses, model=tiny_lm, backend=backend, batch_size=2)
        assert got["scores"] == pytest.approx(want, abs=2e-5), backend
        assert sorted(i for pack, _ in shared_packs for _, members in pack for i in members) == [0, 1, 2, 3, 4]
        assert [[len(c) for c in chunks] for _, chunks in shared_packs] == [[2, 1], [2]]  # ≤ batch_size rows a pass


def test_a_token_budget_regroups_shared_packs_and_keeps_the_scores(tiny_lm, monkeypatch, cached_routes):
    contexts = [CONTEXTS[0]] * 3 + [CONTEXTS[2]] * 2
    responses = ["Oh nice , which trail ?", "Cool .", "Sure .", "Miles Davis , for sure .", "Nobody ."]
    packs = []
    original = JudgeScorer._shared
    monkeypatch.setattr(JudgeScorer, "_shared", lambda self, past, n, pack, items, chunks: packs.append(
        (pack, chunks)) or original(self, past, n, pack, items, chunks))
    free = compute_llm_judge(contexts, responses, model=tiny_lm, backend="torch", max_tokens=None)["scores"]
    assert [len(chunks) for _, chunks in packs] == [1]  # both contexts in one pack, all five responses in one pass
    capped = compute_llm_judge(contexts, responses, model=tiny_lm, backend="torch", max_tokens=1)["scores"]
    assert [len(chunks) for _, chunks in packs[1:]] == [3, 2]  # each context alone, once; every response alone
    assert capped == pytest.approx(free, abs=1e-6)


def test_a_judge_pack_stays_within_max_tokens(tiny_lm, monkeypatch, cached_routes):
    # hand-built prompts: a 20-token rubric prefix, then context A (40 shared tokens) with 5 responses of 3, 4,
    # 5, 6, 3 own tokens, and context B (30 shared tokens) with 4 responses of 2, 3, 4, 5 own tokens
    from dialeval.judge import scorer as judge_scorer
    from dialeval.models.lm import load_lm

    lm = load_lm(tiny_lm, backend="torch")
    prefix = list(range(10, 30))
    a, b = list(range(100, 140)), list(range(200, 230))
    items = [a + [50 + k] * n for k, n in enumerate([3, 4, 5, 6, 3])] + [b + [60 + k] * n for k, n in enumerate([2, 3, 4, 5])]
    keys = ["A"] * 5 + ["B"] * 4
    held, prefixes = [], []
    layout, prefix_pass = judge_scorer.guest_layout, judge_scorer.group_prefix_pass

    def recording_layout(host_mask, n_prefix, rows, seen, shared, suffixes, pad):
        lay = layout(host_mask, n_prefix, rows, seen, shared, suffixes, pad)
        members = sorted(s[0] - 50 if s[0] < 60 else s[0] - 55 for s in suffixes)  # item k's own tokens: 50+k / 60+k-5
        held.append((lay["mask"].shape[0], lay["mask"].shape[1] - len(prefix), members))
        return lay

    def recording_prefix(lm, pack, items, *args):
        prefixes.append(sorted(i for _, m in pack for i in m))
        return prefix_pass(lm, pack, items, *args)

    monkeypatch.setattr(judge_scorer, "guest_layout", recording_layout)
    monkeypatch.setattr(judge_scorer, "group_prefix_pass", recording_prefix)
    judge = JudgeScorer(lm)
    capped = judge.score(prefix, items, [5, 6, 7, 8, 9], batch_size=8, max_tokens=100, keys=keys)
    # rows × (longest shared + longest own) ≤ 100: A holds 43 44 | 45 46 | 43 tokens a row, B 32 33 | 34 35
    assert held == [(2, 44, [0, 1]), (2, 46, [2, 3]), (1, 43, [4]), (2, 33, [5, 6]), (2, 35, [7, 8])]
    assert all(rows * width <= 100 for rows, width, _ in held)
    assert prefixes == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]  # each context runs once, not once per pass of its responses
    held.clear()
    prefixes.clear()
    free = judge.score(prefix, items, [5, 6, 7, 8, 9], batch_size=8, max_tokens=None, keys=keys)
    assert [members for _, _, members in held] == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]  # 5 + 4 rows > batch_size
    assert max(rows * width for rows, width, _ in held) == 5 * 46  # 2.3x the budget without it
    np.testing.assert_allclose(capped[0], free[0], rtol=1e-5)
    held.clear()
    prefixes.clear()
    narrow = judge.score(prefix, items, [5, 6, 7, 8, 9], batch_size=2, max_tokens=None, keys=keys)
    assert [members for _, _, members in held] == [[0, 1], [2, 3], [4], [5, 6], [7, 8]]  # ≤ batch_size rows a pass
    assert prefixes == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]  # a context with more responses than batch_size runs once
    np.testing.assert_allclose(narrow[0], free[0], rtol=1e-5)


def test_the_scored_speaker_is_b_at_both_levels():
    # turn level: the last context turn is the other speaker's (A), the rated response is B's
    assert item_text("turn", ["u1", "s1", "u2"], "r") == "Conversation:\nA: u1\nB: s1\nA: u2\n\nResponse (B): r"
    assert item_text("turn", ["s0", "u1"], "r").startswith("Conversation:\nB: s0\nA: u1")
    # dialogue level: the user opens (A), the system is B whatever the length
    assert item_text("dialog", ["u1", "s1", "u2", "s2"], None) == "Conversation:\nA: u1\nB: s1\nA: u2\nB: s2"


def test_pairwise_refuses_a_budget_the_rubric_fills(tiny_lm):
    with pytest.raises(ValueError, match="leaves .* tokens for the pair after the rubric prompt") as err:
        compare(CONTEXTS, RESPONSES, RESPONSES, model=tiny_lm, backend="torch", max_length=64, rubric="x " * 1950)
    assert "\n" not in str(err.value)


def test_module_equals_core_and_signature_carries_the_rubric_hash(tiny_lm):
    core = compute_llm_judge(CONTEXTS, RESPONSES, model=tiny_lm, backend="torch")
    module = dialeval.load("llm_judge", "turn", model=tiny_lm, backend="torch").compute(
        contexts=CONTEXTS, predictions=RESPONSES)
    assert module == core
    default = hashlib.sha256(RUBRICS["turn"]["overall"].encode()).hexdigest()[:10]
    assert f"|rubric:{default}|" in core["signature"] and "|quality:overall|" in core["signature"]
    assert "|prompt:geval2|chat:no|weighting:expected-1-5|max_len:512|" in core["signature"]  # tiny LM: 512 positions
    own = "Politeness: is the response polite? 1 = rude, 5 = very polite."
    mine = compute_llm_judge(CONTEXTS, RESPONSES, model=tiny_lm, backend="torch", quality="politeness", rubric=own)
    assert f"|rubric:{hashlib.sha256(own.encode()).hexdigest()[:10]}|" in mine["signature"]
    assert "|quality:politeness|" in mine["signature"] and mine["scores"] != core["scores"]
    # quality names are read case- and underscore-insensitively
    spelled = compute_llm_judge(CONTEXTS, RESPONSES, model=tiny_lm, backend="torch", quality="Maintains_Context")
    assert spelled["quality"] == "maintains context"


def test_pairwise_order_swap_is_exact(tiny_lm):
    other = ["I do not know .", "No .", "Hmm ."]
    ab = compare(CONTEXTS, RESPONSES, other, model=tiny_lm, backend="torch")
    ba = compare(CONTEXTS, other, RESPONSES, model=tiny_lm, backend="torch")
    # both orders are judged, so P(a better | a, b) = 1 − P(b better | b, a) exactly, up to float rounding: the same
    # prompt ran in another row of another batch (other padding, so other attention blocks and sums), which moves it
    # by the tiny LM's fp32 rounding
    assert np.allclose(np.array(ab["p_a_better"]) + np.array(ba["p_a_better"]), 1.0, rtol=0, atol=TINY_LM_RTOL)
    assert np.allclose(ab["p_a_first"], 1 - np.array(ba["p_a_second"]), rtol=0, atol=TINY_LM_RTOL)
    assert ab["position_consistency"] == ba["position_consistency"]
    wins = [0.5 if abs(p - 0.5) <= 1e-6 else 1.0 if p > 0.5 else 0.0 for p in ab["p_a_better"]]  # ties to 1e-6
    assert ab["win_rate_a"] == pytest.approx(sum(wins) / 3) and ab["win_rate_a"] + ba["win_rate_a"] == pytest.approx(1)
    low, high = ab["win_rate_a_ci"]
    assert 0 <= low <= ab["win_rate_a"] <= high <= 1 and "weighting:pairwise-both-orders" in ab["signature"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"quality": "humour"}, r"quality='humour' has no default rubric at level 'turn'; use one of \["),
    ({"quality": ""}, r"quality='': give a quality name"),
    ({"rubric": "  "}, r"rubric='  ': give the rubric as non-empty text"),
    ({"rubric": "x" * 4001}, r"rubric has 4,001 characters; at most 4,000"),
    ({"max_length": 10}, r"max_length=10: use an integer 64 ≤ max_length"),
    ({"config": "story"}, r"llm_judge has configs \('turn', 'dialog'\); got 'story'"),
])
def test_bad_rubric_quality_and_options_are_one_line_errors(tiny_lm, kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        compute_llm_judge(CONTEXTS, RESPONSES, model=tiny_lm, **kwargs)
    assert "\n" not in str(err.value)


def test_a_seq2seq_model_and_mismatched_inputs_are_refused(tmp_path, tiny_lm):
    bart = build_tiny_blenderbot(tmp_path / "bb")
    with pytest.raises(ValueError, match=r"is a seq2seq model; the LLM judge needs a causal \(decoder-only\) chat LM"):
        compute_llm_judge(CONTEXTS, RESPONSES, model=str(bart), backend="torch")
    with pytest.raises(ValueError, match="contexts"):
        compute_llm_judge(CONTEXTS, RESPONSES[:2], model=tiny_lm)
    with pytest.raises(ValueError, match="config 'turn' takes contexts= and predictions="):
        compute_llm_judge(dialogues=[["a", "b"]], model=tiny_lm)
    assert math.isfinite(compute_llm_judge([["a"]], ["b"], model=tiny_lm, backend="torch")["llm_judge"])
