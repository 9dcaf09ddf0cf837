"""Encoders: last-token pooling of a tiny GPT-2 against a hand-written forward pass; names; errors."""

import math

import numpy as np
import pytest
import torch

from dialeval.models.encoders import (
    DEFAULT_ENCODER,
    LastTokenEncoder,
    check_responses,
    encoder_name,
    get_encoder,
    parse_encoder_spec,
)
from dialeval.models.runtime import ModelNotAvailableError
from dialeval.testing.gpt2 import build_tiny_gpt2

TEXTS = ["Hello , how are you today ?", "Yes .", "I don't know what you mean .",
         "Where are you from ? I am from Beijing .", "Okay ."]


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return build_tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


def _layer_norm(x, ln):
    w, b = ln.weight.double(), ln.bias.double()
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + ln.eps) * w + b


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def manual_last_token_state(model, ids: list[int]) -> np.ndarray:
    """GPT-2 written out by hand (float64): embeddings, pre-LN blocks with causal attention, final LN;
    returns the state at the last token. Conv1D weights are (in, out)."""
    tr = model.transformer if hasattr(model, "transformer") else model
    n = len(ids)
    x = tr.wte.weight.double()[ids] + tr.wpe.weight.double()[:n]
    heads = model.config.n_head
    hd = x.shape[1] // heads
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    for block in tr.h:
        a = _layer_norm(x, block.ln_1)
        qkv = a @ block.attn.c_attn.weight.double() + block.attn.c_attn.bias.double()
        q, k, v = (t.reshape(n, heads, hd).transpose(0, 1) for t in qkv.split(x.shape[1], dim=1))
        scores = q @ k.transpose(1, 2) / math.sqrt(hd)
        scores = scores.masked_fill(causal, float("-inf"))
        att = torch.softmax(scores, -1) @ v
        att = att.transpose(0, 1).reshape(n, -1)
        x = x + att @ block.attn.c_proj.weight.double() + block.attn.c_proj.bias.double()
        m = _layer_norm(x, block.ln_2)
        m = _gelu_tanh(m @ block.mlp.c_fc.weight.double() + block.mlp.c_fc.bias.double())
        x = x + m @ block.mlp.c_proj.weight.double() + block.mlp.c_proj.bias.double()
    x = _layer_norm(x, tr.ln_f)
    return x[-1].numpy()


def _lm(path):
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(path).eval()


def test_last_token_pooling_matches_hand_written_forward_with_padding(tiny_gpt2):
    enc = LastTokenEncoder(tiny_gpt2)
    assert enc.name == f"hf-last-token:{tiny_gpt2}" and enc.dim == 32
    ids = enc.token_ids(TEXTS)
    # response alone: no BOS/EOS added by the GPT-2 tokenizer
    assert all(enc.tokenizer.eos_token_id not in x for x in ids)
    assert len({len(x) for x in ids}) > 2  # a padded batch: lengths differ
    got = enc.encode(TEXTS, batch_size=8)  # one right-padded batch holding all lengths
    lm = _lm(tiny_gpt2)
    with torch.no_grad():
        want = np.stack([manual_last_token_state(lm, x) for x in ids])
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(got, want, atol=2e-5, rtol=1e-4)
    # batch composition does not change a row (length-sorted batches come back in input order)
    np.testing.assert_allclose(enc.encode(TEXTS, batch_size=1), got, atol=2e-5)
    # each distinct text is embedded once and copied back to every position
    dup = enc.encode([TEXTS[1], TEXTS[0], TEXTS[1]], batch_size=8)
    assert np.array_equal(dup[0], dup[2])
    np.testing.assert_allclose(dup[1], got[0], atol=2e-5)


def test_left_truncation_keeps_the_last_tokens(tiny_gpt2):
    enc = LastTokenEncoder(tiny_gpt2, max_length=4)
    full = LastTokenEncoder(tiny_gpt2).token_ids(TEXTS)
    ids = enc.token_ids(TEXTS)
    assert ids == [x[-4:] for x in full]
    got = enc.encode(TEXTS, batch_size=8)
    lm = _lm(tiny_gpt2)
    with torch.no_grad():
        want = np.stack([manual_last_token_state(lm, x[-4:]) for x in full])
        untruncated = manual_last_token_state(lm, full[0])
    np.testing.assert_allclose(got, want, atol=2e-5, rtol=1e-4)
    assert not np.allclose(got[0], untruncated, atol=1e-3)  # truncation mattered for the long text


def test_bf16_encoder_runs_and_is_close(tiny_gpt2):
    fp32 = LastTokenEncoder(tiny_gpt2).encode(TEXTS)
    bf16 = LastTokenEncoder(tiny_gpt2, dtype="bf16")
    assert bf16.dtype_name == "bf16"
    got = bf16.encode(TEXTS)
    assert got.dtype == np.float32
    cos = (got * fp32).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(fp32, axis=1)
    assert cos.min() > 0.98


def test_empty_and_bad_inputs_are_clear_errors(tiny_gpt2):
    enc = get_encoder(str(tiny_gpt2))
    with pytest.raises(ValueError, match=r"`predictions\[1\]` is an empty string"):
        enc.encode(["fine", ""], field="predictions")
    with pytest.raises(ValueError, match=r"`predictions\[0\]` is an empty string"):
        check_responses(["   "], "predictions")
    with pytest.raises(ValueError, match="`predictions` is empty"):
        enc.encode([], field="predictions")
    with pytest.raises(TypeError, match="single string"):
        enc.encode("hello", field="predictions")
    with pytest.raises(ValueError, match="max_length"):
        LastTokenEncoder(tiny_gpt2, max_length=0)


def test_missing_model_offline_says_how_to_pass_a_local_path(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="pass the local directory"):
        get_encoder("hf-last-token:no-such-org/no-such-dialogpt")
    with pytest.raises(ModelNotAvailableError, match="pass the local directory"):
        get_encoder("sentence-transformers/no-such-model")
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        get_encoder(str(tmp_path / "missing" / "model"))


def test_encoder_names(tiny_gpt2, tmp_path):
    assert parse_encoder_spec("microsoft/DialoGPT-large") == ("hf-last-token", "microsoft/DialoGPT-large")
    assert parse_encoder_spec("sentence-transformers/all-mpnet-base-v2")[0] == "sentence-transformers"
    assert parse_encoder_spec("st:foo/bar") == ("sentence-transformers", "foo/bar")
    assert parse_encoder_spec(str(tiny_gpt2)) == ("hf-last-token", str(tiny_gpt2))
    (tmp_path / "modules.json").write_text("[]")
    assert parse_encoder_spec(str(tmp_path))[0] == "sentence-transformers"
    assert encoder_name("default") == DEFAULT_ENCODER
    assert encoder_name(str(tiny_gpt2)) == f"hf-last-token:{tiny_gpt2}"
    with pytest.raises(ValueError, match="names no model"):
        parse_encoder_spec("hf-last-token:")
    with pytest.raises(TypeError):
        get_encoder(42)
    # cached: the same spec gives the same loaded encoder
    assert get_encoder(str(tiny_gpt2)) is get_encoder(f"hf-last-token:{tiny_gpt2}")
