"""FULL (follow-up likelihood): pure functions, the batched scorer against hand-written loops, truncation,
the evaluate module, bad input, and the language-model loader."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import dialeval
from dialeval.full.formulation import default_formulation
from dialeval.full.full_followup import follow_up_set_name
from dialeval.full.scorer import FollowupScorer, full_scores
from dialeval.full.texts import (
    FOLLOW_UPS,
    FULL_0_0_3_FOLLOW_UPS,
    aggregate_followups,
    followup_values,
    keep_last_tokens,
    mean_token_nll,
    package_history_text,
    package_turns,
    recent_turns_fitting,
)
from dialeval.io.signature import parse_signature
from dialeval.io.validation import check_dialogues, check_turn_inputs
from dialeval.models.lm import ModelNotAvailableError, detect_kind, find_smollm2_gguf, load_lm
from dialeval.testing.blenderbot import build_tiny_blenderbot, build_tiny_causal_lm

HISTORIES = [
    ["Hello , how are you today ?", "I am fine , thank you . And you ?", "Do you like music ?"],
    ["Hi"],
    ["Where are you from ?", "I am from Beijing .", "Let's go to the movies tonight !", "Sure , what do you need ?",
     "We should eat dinner at seven ."],
]


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("full_models")
    return {
        "blenderbot": build_tiny_blenderbot(root / "blenderbot"),
        "llama": build_tiny_causal_lm(root / "llama", arch="llama"),
        "gpt2": build_tiny_causal_lm(root / "gpt2", arch="gpt2"),
    }


@pytest.fixture(scope="module")
def lms(tiny_dirs):
    return {k: load_lm(str(v), device="cpu", backend="torch") for k, v in tiny_dirs.items()}  # the reference


# ---------------------------------------------------------------- pure functions

def test_follow_up_lists():
    assert len(FOLLOW_UPS) == 5 and FOLLOW_UPS[1] == "You're really confusing."
    # the package's list literal lacks a comma after "You're really confusing.": Python fuses the strings
    assert FULL_0_0_3_FOLLOW_UPS == ("Not really relevant here.", "You're really confusing.You're really boring.",
                                     "What are you trying to say?", "You don't seem interested.")


def test_package_text_and_lookback():
    assert package_history_text(["a", "b c"]) == "\ta\tb c"
    context = [f"t{i}" for i in range(60)]
    turns = package_turns(context, "resp")
    assert len(turns) == 51 and turns[0] == "t10" and turns[-1] == "resp"
    assert package_turns(context, None) == context[10:]
    assert package_turns(["x"], "y", lookback=50) == ["x", "y"]


@pytest.mark.parametrize("lengths,budget,start", [
    ([5, 4, 3], 7, 1), ([5, 4, 3], 6, 2), ([5, 4, 3], 12, 0), ([5, 4, 3], 11, 1), ([5, 4, 3], 2, 2), ([9], 3, 0), ([1, 1, 1], 3, 0),
])
def test_recent_turns_fitting(lengths, budget, start):
    assert recent_turns_fitting(lengths, budget) == start


@given(st.lists(st.integers(1, 50), min_size=1, max_size=30), st.integers(1, 400))
@settings(max_examples=200, deadline=None)
def test_recent_turns_fitting_is_the_longest_fitting_suffix(lengths, budget):
    start = recent_turns_fitting(lengths, budget)
    last = len(lengths) - 1
    assert 0 <= start <= last
    assert sum(lengths[start:]) <= budget or start == last  # the response is kept even when too long
    if start > 0:
        assert sum(lengths[start - 1:]) > budget  # one more (older) turn would not fit


def test_keep_last_tokens():
    assert keep_last_tokens([1, 2, 3, 4, 5], 4, prefix=[0], suffix=[9]) == [0, 4, 5, 9]
    assert keep_last_tokens([1, 2], 10, suffix=[9]) == [1, 2, 9]
    with pytest.raises(ValueError):
        keep_last_tokens([1], 1, prefix=[0], suffix=[9])


def test_nll_and_aggregation_by_hand():
    assert mean_token_nll([math.log(0.5), math.log(0.25)]) == pytest.approx((math.log(2) + math.log(4)) / 2)
    nll = np.array([[1.0, 3.0], [0.0, 2.0]])
    assert aggregate_followups(followup_values(nll)).tolist() == [2.0, 1.0]
    ppl = followup_values(nll, "full-0.0.3")
    assert aggregate_followups(ppl).tolist() == pytest.approx([(math.e + math.e ** 3) / 2, (1 + math.e ** 2) / 2])


def test_follow_up_set_names():
    assert follow_up_set_name(None, None) == "paper5"
    assert follow_up_set_name(None, "full-0.0.3") == "full-0.0.3"
    assert follow_up_set_name(list(FOLLOW_UPS), "full-0.0.3") == "paper5"
    assert follow_up_set_name(["Huh?"], None).startswith("custom:")


# ---------------------------------------------------------------- scorer vs hand-written loops

def _hand_nll(lm, history_ids: list[int], f_ids: list[int]) -> float:
    """One forward pass per (history, follow-up), batch 1, no cache: the reference loop."""
    with torch.no_grad():
        if lm.kind == "seq2seq":
            return lm.model(input_ids=torch.tensor([history_ids]), labels=torch.tensor([f_ids])).loss.item()
        logits = lm.model(torch.tensor([history_ids + f_ids])).logits[0].float()
        logp = torch.log_softmax(logits, -1)
        n = len(history_ids)
        return mean_token_nll([logp[n - 1 + t, tok].item() for t, tok in enumerate(f_ids)])


@pytest.mark.parametrize("name", ["blenderbot", "llama", "gpt2"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_batched_scorer_equals_hand_loop(lms, name, batch_size):
    lm = lms[name]
    scorer = FollowupScorer(lm)
    got = scorer.score(HISTORIES, FOLLOW_UPS, batch_size=batch_size, progress=False)
    f_ids = scorer.encode_follow_ups(FOLLOW_UPS)
    for i, h in enumerate(HISTORIES):
        ids = scorer.encode_history(h, scorer.max_length)
        for k, f in enumerate(f_ids):
            assert got[i, k] == pytest.approx(_hand_nll(lm, ids, f), abs=2e-5), (name, i, k)


def test_causal_history_text_and_follow_up_tokens(lms):
    """Causal default (the formulation study): each turn followed by a newline, at most 1024 tokens, summed
    NLL; an offline model studied on its own gets its own winner (SmolLM2: a space, 512 tokens); seq2seq
    keeps the earlier text."""
    scorer = FollowupScorer(lms["llama"])
    tok = lms["llama"].tokenizer
    ids = scorer.encode_history(["Hi", "Hello there"], 100)
    assert tok.decode(ids) == "Hi\nHello there\n"
    limit = lms["llama"].model.config.max_position_embeddings
    assert scorer.max_length == min(limit, 1024) and FollowupScorer(lms["blenderbot"]).separator == "\n"
    assert default_formulation("causal") == {"separator": "\n", "aggregation": "sum", "max_length": 1024}
    assert default_formulation("causal", offline="smollm2-135m-instruct-gguf") == {
        "separator": " ", "aggregation": "sum", "max_length": 512}
    assert default_formulation("causal", compat="full-0.0.3")["aggregation"] == "mean"
    as_smollm2 = dataclasses.replace(lms["llama"], offline="smollm2-135m-instruct-gguf")
    assert tok.decode(FollowupScorer(as_smollm2).encode_history(["Hi", "Yo"], 100)) == "Hi Yo "
    assert tok.decode(FollowupScorer(as_smollm2, separator="\t").encode_history(["Hi", "Yo"], 100)) == "Hi\tYo\t"
    assert tok.decode(scorer.encode_follow_ups(["You're really boring."])[0]) == "You're really boring."


def test_seq2seq_labels_end_with_eos(lms):
    scorer = FollowupScorer(lms["blenderbot"])
    eos = lms["blenderbot"].tokenizer.eos_token_id
    assert all(f[-1] == eos for f in scorer.encode_follow_ups(FOLLOW_UPS))
    ids = scorer.encode_history(["Hi", "Hello there"], 100)
    assert ids[-1] == eos and lms["blenderbot"].tokenizer.decode(ids[:-1]).strip() == "Hi\nHello there"


def test_history_encoded_once_per_batch(lms):
    """seq2seq: one encoder pass per batch; causal on torch: one token-tree pass per batch (histories and their
    follow-ups together), where the cached route (``tree=False``) takes two (history, then follow-ups)."""
    calls = {"enc": 0, "causal": 0}
    bb, ll = lms["blenderbot"].model, lms["llama"].model
    h1 = bb.get_encoder().register_forward_hook(lambda *a: calls.__setitem__("enc", calls["enc"] + 1))
    h2 = ll.register_forward_hook(lambda *a: calls.__setitem__("causal", calls["causal"] + 1))
    try:
        FollowupScorer(lms["blenderbot"]).score(HISTORIES, FOLLOW_UPS, batch_size=2, progress=False)
        FollowupScorer(lms["llama"]).score(HISTORIES, FOLLOW_UPS, batch_size=2, progress=False)
        trees = calls["causal"]
        FollowupScorer(lms["llama"]).score(HISTORIES, FOLLOW_UPS, batch_size=2, progress=False, tree=False)
    finally:
        h1.remove()
        h2.remove()
    assert calls["enc"] == 2 and trees == 2 and calls["causal"] - trees == 4


# ---------------------------------------------------------------- truncation keeps the response

@pytest.mark.parametrize("name", ["blenderbot", "llama"])
def test_truncation_drops_oldest_turns_and_keeps_response(lms, name):
    lm = lms[name]
    long_history = [f"Turn number {i} : I think that is a great idea ." for i in range(40)] + ["Yes . No . Maybe ."]
    scorer = FollowupScorer(lm, max_length=64)
    budget = 64 if lm.kind == "seq2seq" else 64 - max(len(f) for f in scorer.encode_follow_ups(FOLLOW_UPS))
    ids = scorer.encode_history(long_history, budget)
    assert len(ids) <= budget
    text = lm.tokenizer.decode(ids, skip_special_tokens=True)
    assert "Yes . No . Maybe ." in text and "Turn number 39" in text and "Turn number 0 " not in text
    # the truncated history scores exactly like the history that only holds the kept turns
    kept = [t for t in long_history if t in text]
    a = scorer.score([long_history], FOLLOW_UPS, progress=False)
    b = scorer.score([kept], FOLLOW_UPS, progress=False)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_overlong_response_is_cut_from_the_left(lms):
    lm = lms["blenderbot"]
    scorer = FollowupScorer(lm, max_length=16)
    response = " ".join(f"w{i}" for i in range(40))
    ids = scorer.encode_history(["Hi", response], 16)
    assert len(ids) == 16 and ids[-1] == lm.tokenizer.eos_token_id
    assert lm.tokenizer.decode(ids[:-1]).strip().endswith("w39")


# ---------------------------------------------------------------- the evaluate module

def test_module_turn_and_dialog(tiny_dirs, lms):
    turn = dialeval.load("full_followup", "turn", model=str(tiny_dirs["blenderbot"]), progress=False)
    contexts = [h[:-1] or ["Hello"] for h in HISTORIES]
    preds = [h[-1] for h in HISTORIES]
    res = turn.compute(contexts=contexts, predictions=preds)
    direct = full_scores([c + [p] for c, p in zip(contexts, preds)], level="turn", lm=lms["blenderbot"],
                         progress=False)
    np.testing.assert_allclose(res["scores"], direct["scores"], rtol=1e-6)
    assert res["full_followup"] == pytest.approx(np.mean(res["scores"]))
    assert np.asarray(res["follow_up_scores"]).shape == (3, 5)
    sig = parse_signature(res["signature"])
    assert sig["metric"] == "full_followup" and sig["kind"] == "seq2seq" and sig["level"] == "turn"
    assert sig["fu"] == "paper5" and sig["agg"] == "mean_nll" and sig["dtype"] == "float32"

    dialog = dialeval.load("full_followup", "dialog", model=str(tiny_dirs["llama"]), progress=False)
    res = dialog.compute(dialogues=HISTORIES, follow_ups=["Huh?", "What?"])
    assert res["follow_ups"] == ["Huh?", "What?"] and len(res["scores"]) == 3
    assert parse_signature(res["signature"])["fu"].startswith("custom:")
    assert parse_signature(res["signature"])["kind"] == "causal"


def test_bf16_close_to_fp32(tiny_dirs):
    a = full_scores(HISTORIES, level="dialog", lm=load_lm(str(tiny_dirs["llama"]), device="cpu"), progress=False)
    b = full_scores(HISTORIES, level="dialog", lm=load_lm(str(tiny_dirs["llama"]), device="cpu", dtype="bf16"),
                    progress=False)
    np.testing.assert_allclose(a["scores"], b["scores"], atol=0.05)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("contexts,predictions,exc,match", [
    ([[]], ["ok"], ValueError, r"`contexts\[0\]` is empty"),
    ([["hi"], ["a", ""]], ["x", "y"], ValueError, r"`contexts\[1\]\[1\]` is an empty turn"),
    ([["hi"]], [""], ValueError, r"`predictions\[0\]` is an empty response"),
    ([["hi"], ["a", 3]], ["x", "y"], TypeError, r"`contexts\[1\]\[1\]` is int"),
    ([["hi"]], [None], TypeError, r"`predictions\[0\]` is NoneType"),
    (["hi there"], ["x"], TypeError, r"`contexts\[0\]` is a single string"),
    ([["hi"], ["yo"]], ["x"], ValueError, "must align"),
    ([], [], ValueError, "`contexts` is empty"),
])
def test_bad_turn_input(contexts, predictions, exc, match):
    with pytest.raises(exc, match=match):
        check_turn_inputs(contexts, predictions)


def test_bad_input_through_the_module(tiny_dirs):
    turn = dialeval.load("full_followup", "turn", model=str(tiny_dirs["gpt2"]), progress=False)
    with pytest.raises(ValueError, match=r"`contexts\[1\]` is empty"):
        turn.compute(contexts=[["hi"], []], predictions=["a", "b"])
    with pytest.raises(TypeError, match=r"`contexts\[0\]\[0\]` is int"):
        turn.compute(contexts=[[1]], predictions=["a"])
    with pytest.raises(ValueError, match="takes contexts= and predictions="):
        turn.compute(dialogues=[["hi"]])
    dialog = dialeval.load("full_followup", "dialog", model=str(tiny_dirs["gpt2"]), progress=False)
    with pytest.raises(ValueError, match=r"`dialogues\[0\]` is empty"):
        dialog.compute(dialogues=[[]])
    with pytest.raises(ValueError, match="takes dialogues="):
        dialog.compute(predictions=["x"])
    with pytest.raises(ValueError, match="only runs seq2seq"):
        dialog.compute(dialogues=[["hi"]], compat="full-0.0.3")
    with pytest.raises(ValueError, match=r"`compat`='full-9' is not one of \['full-0.0.3'\]"):
        dialog.compute(dialogues=[["hi"]], compat="full-9")
    with pytest.raises(ValueError, match=r"`follow_ups\[1\]`"):
        dialog.compute(dialogues=[["hi"]], follow_ups=["ok", ""])
    with pytest.raises(ValueError, match="config 'turn' takes contexts="):  # no config name: the first, turn
        dialeval.load("full_followup").compute(dialogues=[["hi"]])
    assert check_dialogues([("a", "b")]) == [["a", "b"]]


# ---------------------------------------------------------------- the loader

def test_detect_kind(lms):
    assert lms["blenderbot"].kind == "seq2seq" and lms["llama"].kind == "causal" and lms["gpt2"].kind == "causal"
    assert detect_kind(type("C", (), {"is_encoder_decoder": True})()) == "seq2seq"


def test_loader_errors(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        load_lm(str(tmp_path / "nope"))
    with pytest.raises(ModelNotAvailableError, match="local directory"):
        load_lm("dialeval-tests/no-such-model")  # a Hub id, offline in tests: a clear error, not a hang
    with pytest.raises(TypeError):
        load_lm(3)


def test_smollm2_gguf_is_found():
    path = find_smollm2_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000


@pytest.mark.slow
def test_default_smollm2_matches_hand_loop():
    """The offline default (GGUF converted once, cached as safetensors) through the shared-cache path."""
    lm = load_lm(None, device="cpu")
    assert lm.kind == "causal" and lm.name.startswith("SmolLM2-135M-Instruct.Q4_1.gguf@sha256:")
    scorer = FollowupScorer(lm)
    assert (scorer.separator, scorer.max_length) == (" ", 512)  # SmolLM2's measured text
    histories = [["User: Hi!", "System: Hi! What's up?"], ["User: Do you like music?"]]
    got = scorer.score(histories, FOLLOW_UPS[:2], batch_size=2, progress=False)
    f_ids = scorer.encode_follow_ups(FOLLOW_UPS[:2])
    for i, h in enumerate(histories):
        ids = scorer.encode_history(h, scorer.max_length)
        for k, f in enumerate(f_ids):
            assert got[i, k] == pytest.approx(_hand_nll(lm, ids, f), abs=1e-4)
    assert np.all((got > 0.5) & (got < 15))


def test_module_passes_formulation_options(tiny_dirs, lms):
    """`aggregation="sum"` scores each follow-up by its total NLL = per-token mean × its token count
    (counted here with the tokenizer); the signature records the formulation."""
    dialog = dialeval.load("full_followup", "dialog", model=str(tiny_dirs["llama"]), progress=False)
    follow_ups = ["Huh?", "That makes no sense at all."]
    mean = dialog.compute(dialogues=HISTORIES, follow_ups=follow_ups, aggregation="mean")
    total = dialog.compute(dialogues=HISTORIES, follow_ups=follow_ups)  # sum: the causal default
    counts = [len(lms["llama"].tokenizer(f, add_special_tokens=False)["input_ids"]) for f in follow_ups]
    np.testing.assert_allclose(np.asarray(total["follow_up_scores"]),
                               np.asarray(mean["follow_up_scores"]) * np.asarray(counts), rtol=1e-5)
    assert parse_signature(total["signature"])["agg"] == "sum_nll"
    assert parse_signature(mean["signature"])["agg"] == "mean_nll"
    assert parse_signature(total["signature"])["sep"] == "\\n" and parse_signature(total["signature"])["max_len"] == str(
        min(lms["llama"].model.config.max_position_embeddings, 1024))
    prefixed = dialog.compute(dialogues=HISTORIES, follow_ups=follow_ups, follow_up_prefix="User: ")
    assert parse_signature(prefixed["signature"])["fu_prefix"] == "User: "
    assert "fu_prefix" not in parse_signature(mean["signature"])
