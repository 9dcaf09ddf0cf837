"""Hostile model inputs: one bounded model cache, cancellation, FULL streaming, misleading errors (issue 12)."""

from __future__ import annotations

import os
import threading
import time

import pytest

import dialeval
from dialeval.cli import main
from dialeval.models.runtime import (
    MODELS,
    Cancelled,
    ModelCache,
    ModelNotAvailableError,
    cancellation,
    model_identity,
    run_batched,
)
from dialeval.testing.blenderbot import build_tiny_causal_lm
from dialeval.testing.roberta import tiny_nli_model

CTX = [["Hello there", "Hi"], ["How are you?"], ["Nice weather"], ["Bye now"], ["Where to?"]]
PREDS = ["I am fine", "Good thanks", "Yes indeed", "See you", "Home"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-models")
    return {"lm": build_tiny_causal_lm(root / "gpt2", arch="gpt2"), "nli": tiny_nli_model(root / "nli")}


@pytest.fixture(autouse=True)
def empty_cache():
    MODELS.clear()
    yield
    MODELS.clear()


def spellings(path) -> list[str]:
    p = str(path)
    parent, name = os.path.split(p)
    return [p, p + "/", p + "/./", "/" + p, f"{parent}/../{os.path.basename(parent)}/{name}"]


# ----------------------------------------------------------------------------------------------
# One cache: identity, bound, races
# ----------------------------------------------------------------------------------------------

def test_spellings_of_one_path_are_one_identity(tiny):
    assert {model_identity(s) for s in spellings(tiny["lm"])} == {os.path.realpath(tiny["lm"])}
    assert model_identity("org/hub-model") == "org/hub-model"


def test_five_spellings_load_one_model_of_each_kind(tiny):
    from dialeval.models.encoders import get_encoder
    from dialeval.models.lm import load_lm
    from dialeval.nli.nli_diversity import get_classifier

    loads = MODELS.loads
    lms = [load_lm(s, device="cpu") for s in spellings(tiny["lm"])]
    encoders = [get_encoder(f"hf-last-token:{s}", device="cpu") for s in spellings(tiny["lm"])]
    classifiers = [get_classifier(s, device="cpu") for s in spellings(tiny["nli"])]
    assert all(x is lms[0] for x in lms) and all(x is encoders[0] for x in encoders)
    assert all(c.model is classifiers[0].model for c in classifiers)
    assert len(MODELS) == 3 and MODELS.loads == loads + 3
    assert lms[0].name.startswith(os.path.realpath(tiny["lm"]))


def test_cache_is_bounded_lru(monkeypatch):
    monkeypatch.setenv("DIALEVAL_MODEL_CACHE_SIZE", "2")
    cache = ModelCache()
    for key in ("a", "b", "a", "c"):  # "a" is used again, so "b" is the least recently used
        cache.get(key, lambda k=key: k.upper())
    assert cache.keys() == ["a", "c"] and cache.loads == 3
    monkeypatch.setenv("DIALEVAL_MODEL_CACHE_SIZE", "0")
    assert cache.get("d", lambda: "D") == "D" and len(cache) == 0


def test_racing_requests_load_once():
    cache = ModelCache(max_size=4)
    started = threading.Barrier(8)
    calls = []

    def slow_load():
        calls.append(1)
        time.sleep(0.3)
        return object()

    results = []

    def ask():
        started.wait()
        results.append(cache.get("model", slow_load))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_failed_loads_are_not_cached(tmp_path):
    from dialeval.models.lm import load_lm

    for i in range(5):
        with pytest.raises(ModelNotAvailableError):
            load_lm(str(tmp_path / f"missing-{i}"), device="cpu")
    assert len(MODELS) == 0


# ----------------------------------------------------------------------------------------------
# Cancellation at batch boundaries
# ----------------------------------------------------------------------------------------------

def test_cancelled_token_stops_at_the_next_batch():
    seen = []
    with cancellation() as token:
        def step(batch):
            seen.append(len(batch))
            if len(seen) == 2:
                token.cancel()
            return batch

        with pytest.raises(Cancelled):
            run_batched(list(range(100)), step, lengths=[1] * 100, batch_size=10, progress=False)
    assert len(seen) == 2
    assert run_batched([1, 2], lambda b: b, lengths=[1, 1], progress=False) == [1, 2]  # no token: runs


def test_cancelling_one_thread_leaves_the_others_running():
    outcome = {}

    def job(name, cancel):
        with cancellation() as token:
            if cancel:
                token.cancel()
            try:
                outcome[name] = run_batched([1, 2, 3], lambda b: b, lengths=[1, 1, 1], batch_size=1, progress=False)
            except Cancelled:
                outcome[name] = "cancelled"

    threads = [threading.Thread(target=job, args=(n, n == "a")) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcome == {"a": "cancelled", "b": [1, 2, 3]}


# ----------------------------------------------------------------------------------------------
# FULL: add_batch, num_process, the fp16 signature, encoder-only models
# ----------------------------------------------------------------------------------------------

def test_full_add_batch_equals_one_compute(tiny):
    whole = dialeval.load("full_followup", "turn", model=str(tiny["lm"]), progress=False)
    expected = whole.compute(contexts=CTX, predictions=PREDS)
    streamed = dialeval.load("full_followup", "turn", model=str(tiny["lm"]), progress=False)
    streamed.add_batch(contexts=CTX[:2], predictions=PREDS[:2])
    streamed.add_batch(contexts=CTX[2:], predictions=PREDS[2:])
    got = streamed.compute()
    assert got["scores"] == pytest.approx(expected["scores"], abs=1e-6)
    dialog = dialeval.load("full_followup", "dialog", model=str(tiny["lm"]), progress=False)
    for c, p in zip(CTX, PREDS):
        dialog.add_batch(dialogues=[c + [p]])
    assert dialog.compute()["scores"] == pytest.approx(expected["scores"], abs=1e-6)


def test_full_num_process_returns_scores_in_input_order(tiny, tmp_path):
    expected = dialeval.load("full_followup", "turn", model=str(tiny["lm"]), progress=False).compute(
        contexts=CTX, predictions=PREDS)["scores"]
    results = {}

    def worker(pid):
        m = dialeval.load("full_followup", "turn", model=str(tiny["lm"]), progress=False, num_process=2,
                          process_id=pid, experiment_id="hostile-full", cache_dir=str(tmp_path))
        part = slice(0, 3) if pid == 0 else slice(3, 5)
        m.add_batch(contexts=CTX[part], predictions=PREDS[part])
        results[pid] = m.compute()

    threads = [threading.Thread(target=worker, args=(pid,)) for pid in (1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[1] is None
    assert results[0]["scores"] == pytest.approx(expected, abs=1e-6)


def test_full_add_batch_checks_items(tiny):
    m = dialeval.load("full_followup", "turn", model=str(tiny["lm"]), progress=False)
    with pytest.raises(ValueError, match=r"contexts\[0\]\[0\]"):
        m.add_batch(contexts=[[""]], predictions=["x"])


def test_full_fp16_signature_reads_the_loaded_model(tiny, monkeypatch):
    """On CUDA with dtype='fp16' the signature used to re-resolve the dtype without the device and fail
    after scoring. CI has no GPU: CUDA is reported available and the model is kept on the CPU."""
    import torch

    import dialeval.models.lm as lm_mod

    real_load = lm_mod._load_lm
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(lm_mod, "_load_lm", lambda model, dtype, dev: real_load(model, dtype, torch.device("cpu")))
    m = dialeval.load("full_followup", "dialog", model=str(tiny["lm"]), progress=False)
    out = m.compute(dialogues=[CTX[0] + [PREDS[0]]], dtype="fp16", device="cuda")
    assert "|dtype:float16|" in out["signature"]
    assert len(out["scores"]) == 1


def test_encoder_only_model_given_to_full(tiny):
    m = dialeval.load("full_followup", "turn", model=str(tiny["nli"]), progress=False)
    with pytest.raises(ModelNotAvailableError, match="encoder-only model .*FULL needs a causal or seq2seq"):
        m.compute(contexts=CTX[:1], predictions=PREDS[:1])


def test_garbage_local_folder_gets_a_local_hint(tmp_path):
    from dialeval.models.encoders import get_encoder

    folder = tmp_path / "garbage"
    folder.mkdir()
    (folder / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelNotAvailableError) as info:
        get_encoder(f"hf-last-token:{folder}", device="cpu")
    assert "local path" in str(info.value) and "huggingface-cli download" not in str(info.value)


def test_model_field_that_is_not_a_string():
    from dialeval.models.lm import load_lm

    with pytest.raises(TypeError, match="`model` must be a Hub id, a local path or None"):
        load_lm({"path": "/etc"}, device="cpu")


# ----------------------------------------------------------------------------------------------
# Numbers and shapes that used to give wrong or confusing results
# ----------------------------------------------------------------------------------------------

def test_huge_vocab_size_does_not_divide_by_zero():
    out = dialeval.load("distinct_n").compute(predictions=["a b c", "a b"], n=1, vocab_size=10**16)
    assert out["ead_1"] == pytest.approx(3 / 5, rel=1e-9)  # V(1-(1-1/V)^C) → C as V → ∞


def test_dict_as_predictions():
    with pytest.raises(TypeError, match="`predictions` is a dict; pass a list"):
        dialeval.load("distinct_n").compute(predictions={"a": "x", "b": "y"})


def test_lone_surrogate_in_predictions():
    with pytest.raises(ValueError, match=r"`predictions\[1\]` holds a lone surrogate"):
        dialeval.load("ent_n").compute(predictions=["fine", "broken \ud83d"])


def test_cli_metric_arg_not_a_number(tmp_path, capsys):
    path = tmp_path / "r.txt"
    path.write_text("a b\n", encoding="utf-8")
    assert main(["score", "--metric", "distinct_n", "--input", str(path), "--metric-arg", "n=abc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "got 'abc'" in err


def test_cli_80k_digit_response_is_refused_quickly(tmp_path, capsys):
    path = tmp_path / "digits.txt"
    path.write_text("short one\n" + "7" * 80_000 + "\n", encoding="utf-8")
    start = time.monotonic()
    assert main(["score", "--metric", "distinct_n", "--input", str(path)]) == 2
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "long runs of digits" in err and "tokenizer='whitespace'" in err
