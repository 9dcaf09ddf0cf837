"""Attention in query blocks (dialeval.models.block_attention): the exactness check by hand; the blocks equal
transformers' SDPA attention to fp32 rounding on a token-tree mask with a cached prefix, and fall back to it,
bit for bit, wherever a block could see a later key, without a mask, within one block, or under a tracer (an
export); a loaded causal LM runs them on its tree passes, with the same logits as SDPA."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from tolerances import FP32_EPS, TINY_LM_RTOL
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from dialeval.models import block_attention
from dialeval.models.block_attention import BLOCK, NAME, sees_no_later_key
from dialeval.models.lm import load_lm, tree_logits
from dialeval.models.token_tree import ancestor_mask, tree_rows
from dialeval.testing.blenderbot import build_tiny_causal_lm

MIN = torch.finfo(torch.float32).min


def _additive(sees: np.ndarray, past: int) -> torch.Tensor:
    """``[rows, 1, width, past + width]`` additive mask: the prefix seen by all, ``sees`` among the new tokens."""
    full = np.ones((sees.shape[0], sees.shape[1], past + sees.shape[2]), dtype=bool)
    full[:, :, past:] = sees
    return torch.zeros(full.shape).masked_fill_(~torch.from_numpy(full), MIN)[:, None]


def test_the_check_by_hand():
    causal = np.tril(np.ones((3, 3), dtype=bool))[None]
    assert sees_no_later_key(_additive(causal, 2), 2)
    assert sees_no_later_key(torch.from_numpy(np.concatenate([np.ones((1, 3, 2), bool), causal], -1))[:, None], 2)
    later = causal.copy()
    later[0, 0, 2] = True  # the first token sees the third
    assert not sees_no_later_key(_additive(later, 2), 2)
    assert not sees_no_later_key(torch.zeros(1, 1, 3, 5), 2)  # an all-visible (e.g. cross-attention) mask
    # fewer visible cells than causal (a tree: node 2 does not see node 1) still qualifies
    tree = ancestor_mask([-1, 0, 0], 3)[None]
    assert sees_no_later_key(_additive(tree, 0), 0)
    # a row that sees nothing: SDPA spreads it over every key, blocks over fewer
    empty = causal.copy()
    empty[0, 1] = False
    assert not sees_no_later_key(_additive(empty, 0), 0)


def _inputs(width: int, past: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    parents = [-1] + [int(torch.randint(0, i, (1,), generator=g)) if i % 5 == 0 else i - 1 for i in range(1, width)]
    sees = ancestor_mask(parents, width)[None].repeat(2, 0)
    q = torch.randn(2, 4, width, 16, generator=g)
    k, v = (torch.randn(2, 2, past + width, 16, generator=g) for _ in range(2))
    return q, k, v, _additive(sees, past)


MODULE = SimpleNamespace(num_key_value_groups=2, is_causal=True, training=False)


def _counting_sdpa(monkeypatch) -> list[int]:
    """Counts the calls of torch's fused attention (one per block; one for the fallback)."""
    calls = []
    real = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    return calls


@pytest.mark.parametrize("width,past", [(3 * BLOCK + 5, 40), (2 * BLOCK, 0)])
def test_blocks_equal_sdpa_on_a_tree_mask(width, past, monkeypatch):
    q, k, v, mask = _inputs(width, past)
    want, _ = sdpa_attention_forward(MODULE, q, k, v, mask, scaling=0.25)
    calls = _counting_sdpa(monkeypatch)
    got, _ = block_attention.block_attention(MODULE, q, k, v, mask, scaling=0.25)
    assert len(calls) == math.ceil(width / BLOCK) and got.shape == want.shape == (2, width, 4, 16)
    # each output is a softmax-weighted mean of at most past + width unit-scale values summed in another order
    assert torch.allclose(got, want, rtol=0, atol=4 * FP32_EPS * math.sqrt(past + width))


def test_boolean_and_per_head_masks_take_the_blocks(monkeypatch):
    q, k, v, mask = _inputs(2 * BLOCK + 9, 20, seed=2)
    for variant in (mask != MIN, (mask == 0).expand(-1, 4, -1, -1).clone()):  # boolean; one mask per head
        want, _ = sdpa_attention_forward(MODULE, q, k, v, variant, scaling=0.25)
        calls = _counting_sdpa(monkeypatch)
        got, _ = block_attention.block_attention(MODULE, q, k, v, variant, scaling=0.25)
        assert len(calls) == 3 and torch.allclose(got, want, rtol=0, atol=4 * FP32_EPS * math.sqrt(k.shape[2]))
        monkeypatch.undo()


def test_a_mask_edited_in_place_is_checked_again_at_the_next_pass(tiny_lm):
    q, k, v, mask = _inputs(2 * BLOCK + 3, 10, seed=3)
    block_attention.block_attention(MODULE, q, k, v, mask, scaling=0.25)  # passes the check
    assert block_attention._VERDICTS
    with torch.inference_mode():  # the next forward pass of a model running the blocks empties the verdicts
        tiny_lm.model(input_ids=torch.tensor([[5, 6, 7]]))
        assert not block_attention._VERDICTS
        block_attention.block_attention(MODULE, q, k, v, mask, scaling=0.25)
        tiny_lm.model.get_decoder()(input_ids=torch.tensor([[5, 6, 7]]))  # so does a pass of its decoder alone
    assert not block_attention._VERDICTS
    mask[0, 0, 0, -1] = 0.0  # now the first new token sees the last
    got, _ = block_attention.block_attention(MODULE, q, k, v, mask, scaling=0.25)
    want, _ = sdpa_attention_forward(MODULE, q, k, v, mask, scaling=0.25)
    assert torch.equal(got, want)


def test_soft_capping_is_refused_as_sdpa_refuses_it():
    q, k, v, mask = _inputs(2 * BLOCK + 3, 10, seed=4)
    with pytest.raises(ValueError, match="softcap"):
        block_attention.block_attention(MODULE, q, k, v, mask, scaling=0.25, softcap=30.0)


@pytest.mark.parametrize("case", ["later key", "no mask", "one block", "tracing", "position bias", "broadcast mask",
                                  "empty row"])
def test_falls_back_to_sdpa_bit_for_bit(case, monkeypatch):
    q, k, v, mask = _inputs(2 * BLOCK + 3, 10, seed=1)
    extra = {}
    if case == "later key":
        mask = mask.clone()
        mask[0, 0, 0, -1] = 0.0  # the first new token sees the last: skipping keys would change it
    elif case == "no mask":
        mask = None
    elif case == "one block":
        q, k, v, mask = _inputs(BLOCK, 10, seed=1)
    elif case == "tracing":
        monkeypatch.setattr(block_attention, "_TRACING", lambda: True)
    elif case == "position bias":  # a bias the blocks would have to slice too: SDPA adds it to the mask
        extra["position_bias"] = torch.randn(1, 4, q.shape[2], k.shape[2])
    elif case == "broadcast mask":  # one row of key masks for every query
        mask = torch.zeros(2, 1, 1, k.shape[2])
    else:
        mask = mask.clone()
        mask[1, 0, 5] = MIN
    want, _ = sdpa_attention_forward(MODULE, q, k, v, mask, scaling=0.25, **extra)
    calls = _counting_sdpa(monkeypatch)
    got, _ = block_attention.block_attention(MODULE, q, k, v, mask, scaling=0.25, **extra)
    assert torch.equal(got, want) and len(calls) == 1


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return load_lm(str(build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_llama"))), backend="torch")


def test_a_loaded_causal_lm_runs_blocks_on_its_tree_rows_with_sdpas_logits(tiny_lm, monkeypatch):
    assert tiny_lm.model.config._attn_implementation == NAME
    seqs = [[5 + j * 7 % 300 for j in range(150)] + [9 + i, 11 + i] for i in range(6)]  # one shared context
    (row,) = tree_rows(seqs, [], [], [], min_shared=0)
    keeps = [sorted({end for _, end, _ in row.ends})]
    past = [torch.randn(1, 2, 7, 8) for _ in range(4)]  # a 7-token cached prefix: 2 layers × (keys, values)
    ran = []
    real = block_attention._fits
    monkeypatch.setattr(block_attention, "_fits", lambda *a: ran.append(real(*a)) or ran[-1])
    with torch.inference_mode():
        got = tree_logits(tiny_lm, [row], keeps, tiny_lm.model.device, past)
        tiny_lm.model.set_attn_implementation("sdpa")
        try:
            want = tree_logits(tiny_lm, [row], keeps, tiny_lm.model.device, past)
        finally:
            tiny_lm.model.set_attn_implementation(NAME)
    assert len(row.tokens) > 2 * BLOCK and ran and all(ran)  # both layers took the blocks
    assert torch.allclose(got, want, rtol=TINY_LM_RTOL, atol=TINY_LM_RTOL * float(want.abs().max()))


def test_models_without_sdpa_are_left_alone():
    model = SimpleNamespace(config=SimpleNamespace(_attn_implementation="eager"))
    assert block_attention.with_block_attention(model) is model and model.config._attn_implementation == "eager"
