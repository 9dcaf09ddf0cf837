"""Attention on a CPU in blocks of query rows, each over the keys it can see: the masked cells past a block's last
row are never computed.

softmax(q·kᵀ/√d + m)·v for a pass whose new tokens see only tokens before them (a causal pass with a cached prefix
or padding, or a token-tree row, whose nodes see only their ancestors, :mod:`dialeval.models.token_tree`) is, row
block by row block, the same attention over the keys up to that block's last token: every key after it is masked
for the whole block, so its softmax weight is exactly 0. A block of :data:`BLOCK` rows then costs (past + its end)
key cells instead of (past + width): over a row of T new tokens the cells fall from T·(P + T) to about
T·(P + T/2). The key/value heads are shared by their query heads (``enable_gqa``) instead of repeated. Each block
is torch's fused kernel, so the sums run in another order than one call over all keys: outputs differ by fp32
rounding (``benchmarks/lm_attention_kernels.py``: largest |Δ| 4e-7 on unit-scale inputs; 0.77× the attention
time of the LLM judge's token-tree passes on an AMD EPYC of kind avx512-bf16).

The blocks are taken only where they are exact: on a CPU, with a 4-D mask (boolean or additive) of the pass's
full shape that masks every cell above the new tokens' diagonal and leaves every row at least one key (checked once
per forward pass of the model, whose layers share the mask; a mask edited in place is checked again at the next
pass), more new tokens than one block, no attention term
beyond the mask (:data:`EXTRA_TERMS`), no dropout, and while nothing traces or exports the model (an exported
graph must not bake in a block count). Everywhere else transformers' own SDPA attention runs, unchanged.
"""

from __future__ import annotations

from typing import Any

from dialeval.models.bf16_matmul import pass_modules
from dialeval.models.onednn_linear import tracing_probe

NAME = "dialeval_blocks"  #: the attention implementation's name in transformers' registry
BLOCK = 64  #: query rows per block
#: attention terms beyond the mask (a position bias, logit soft-capping, attention sinks): where a model passes one,
#: transformers' SDPA attention runs (or refuses it) as before
EXTRA_TERMS = ("position_bias", "softcap", "s_aux", "sinks")
_TRACING: Any = None
#: verdicts of :func:`sees_no_later_key` in the current forward pass: id(mask) → (mask, past, verdict); emptied
#: when a model running these blocks, or its decoder alone, starts a forward pass (a mask edited between passes is
#: checked again, and no pass's masks outlive the next pass)
_VERDICTS: dict[int, tuple[Any, int, bool]] = {}


def sees_no_later_key(mask: Any, past: int) -> bool:
    """Whether ``mask`` ``[rows, 1 or heads, width, past + width]`` (boolean: True = attend; or additive: the
    dtype's minimum = masked) masks every key after each query's own position among the new tokens and leaves
    every query at least one key (a row masked whole is spread over all keys by SDPA, over fewer by blocks)."""
    import torch

    width = mask.shape[-2]
    later = torch.ones(width, width, dtype=torch.bool, device=mask.device).triu_(1)
    blocked = ~mask if mask.dtype == torch.bool else mask == torch.finfo(mask.dtype).min
    return bool((blocked[..., past:] | ~later).all()) and not bool(blocked.all(dim=-1).any())


def _fits(query: Any, key: Any, mask: Any) -> bool:
    global _TRACING
    import torch

    if _TRACING is None:
        _TRACING = tracing_probe(torch)
    if _TRACING() or mask is None or mask.dim() != 4 or query.device.type != "cpu":
        return False
    width, keys = query.shape[2], key.shape[2]
    if width <= BLOCK or tuple(mask.shape[-2:]) != (width, keys):
        return False
    past = keys - width
    kept = _VERDICTS.get(id(mask))
    if kept is None or kept[0] is not mask or kept[1] != past:
        kept = (mask, past, sees_no_later_key(mask, past))
        _VERDICTS[id(mask)] = kept
    return kept[2]


def block_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
                    scaling: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers' attention interface: ``query`` ``[rows, heads, width, dim]``, ``key``/``value``
    ``[rows, kv heads, past + width, dim]``; returns ``([rows, width, heads, dim], None)``. Blocks where the module
    docstring says, transformers' SDPA attention elsewhere."""
    import torch
    import torch.nn.functional as F  # noqa: N812 - torch's own name
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if dropout or any(kwargs.get(k) is not None for k in EXTRA_TERMS) or not _fits(query, key, attention_mask):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    past, width = key.shape[2] - query.shape[2], query.shape[2]
    gqa = {"enable_gqa": True} if query.shape[1] != key.shape[1] else {}
    blocks = [F.scaled_dot_product_attention(query[:, :, a:a + BLOCK], key[:, :, :past + a + BLOCK],
                                             value[:, :, :past + a + BLOCK],
                                             attn_mask=attention_mask[:, :, a:a + BLOCK, :past + a + BLOCK],
                                             scale=scaling, **gqa)
              for a in range(0, width, BLOCK)]
    return torch.cat(blocks, dim=2).transpose(1, 2).contiguous(), None


def with_block_attention(model: Any) -> Any:
    """``model`` (in place) running :func:`block_attention` where it ran transformers' SDPA attention on a CPU;
    other implementations (eager, flash) and models on other devices are left alone. Returns the model."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa" or getattr(model, "device", None) is None \
            or model.device.type != "cpu":
        return model
    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, block_attention)
        ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
    model.set_attn_implementation(NAME)
    for runs in pass_modules(model):  # a pass that starts at the decoder empties them too
        runs.register_forward_pre_hook(lambda *_: _VERDICTS.clear())
    return model
