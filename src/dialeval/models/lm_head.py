"""Log-probabilities of scored tokens from a causal LM's last hidden states, without a tokens × vocabulary table.

log p(t | h) = l_t − log Σ_v exp(l_v), with l = W h the model's output head (a bias-free linear map of the last
hidden state: the model types of :data:`PLAIN_HEADS`). Only a model whose matrix products run in bf16 on a CPU
(:mod:`dialeval.models.bf16_matmul`) takes this route; there the head, kept fp32, is the largest product left
(vocabulary × hidden per scored token: a fifth of SmolLM2-135M's work per token). Only the scored positions are
normalised, :data:`CHUNK` rows at a time (no table of every position's logits), and the head runs in bf16 too:

- l̃ = bf16(h) · bf16(W)ᵀ, accumulated in fp32 and rounded to bf16 once: each l̃_v is off by some δ_v of up to
  about 2⁻⁷ of Σ_k |h_k W_vk| (both operands rounded) plus 2⁻⁸ of |l_v| (the output rounded);
- the :data:`EXACT_TOP` largest l̃_v of each row are recomputed in fp32 from the fp32 h and W, and so is each
  scored token's own logit l_t in the numerator;
- log Σ_v exp(l_v) is taken over those exact values and l̃ elsewhere, so it is off by at most
  log(1 + Σ_{v ∉ top} p_v (e^{|δ_v|} − 1)) ≈ Σ_{v ∉ top} p_v |δ_v|: the probability left outside the top times
  those tokens' rounding, which vanishes as the distribution peaks, as it does on most tokens of a fluent follow-up.

The bf16 copy of W (vocabulary × hidden × 2 bytes: 57 MB for SmolLM2) is kept on the model beside its fp32 head
and made again if the head's weight changes. ``benchmarks/leaderboard_bf16.py`` measures what this does to every
correlation of the leaderboard.
"""

from __future__ import annotations

from typing import Any

from dialeval.models.bf16_matmul import compute_dtype

#: ``config.model_type`` of the causal LMs whose logits are exactly ``lm_head(last hidden state)``: no soft-capping,
#: scaling or bias (transformers' ``LlamaForCausalLM`` and its kin). Others keep their own head.
PLAIN_HEADS = frozenset({"llama", "mistral", "qwen2", "qwen3"})
CHUNK = 64  #: rows of hidden states per head product (64 × 49,152 logits: 12.6 MB in fp32)
EXACT_TOP = 16  #: logits per row recomputed in fp32 for the normaliser
_BF16_HEAD = "_dialeval_bf16_head"  # (what it was made from, the bf16 copy of the head's weight), kept on the model


def bf16_head_weight(model: Any) -> Any | None:
    """The fp32 output-head weight ``[vocab, hidden]`` of a causal LM whose products run in bf16 on a CPU and whose
    logits are a plain linear map of its last hidden state (:data:`PLAIN_HEADS`, no bias); else ``None`` (the
    model's own head and log-softmax run, as in fp32)."""
    import torch

    if compute_dtype(model) is None or getattr(model.config, "model_type", None) not in PLAIN_HEADS:
        return None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if not isinstance(head, torch.nn.Linear) or head.bias is not None or head.weight.dtype != torch.float32:
        return None
    return head.weight


def scored_log_probs(model: Any, hidden: Any, rows: Any, tokens: Any) -> Any:
    """``log p(tokens[j] | hidden[rows[j]])`` for every j, float64, on the route of this module's docstring.

    ``hidden``: fp32 ``[n, hidden]`` last hidden states; ``rows``, ``tokens``: int64 ``[m]`` (only the rows named
    are normalised: padding and unscored positions cost nothing). ``model`` must pass :func:`bf16_head_weight`."""
    import torch

    weight = bf16_head_weight(model)
    if weight is None:
        raise ValueError(f"{type(model).__name__} has no plain output head running beside bf16 products; "
                         "score it through its own logits.")
    weight, hidden = weight.detach(), hidden.detach()
    made_from = (weight.data_ptr(), _version(weight), tuple(weight.shape))  # a reloaded or edited head: made again
    kept = model.__dict__.get(_BF16_HEAD)
    if kept is None or kept[0] != made_from:
        kept = (made_from, weight.to(torch.bfloat16).contiguous())
        model.__dict__[_BF16_HEAD] = kept
    low = kept[1]
    needed, at = torch.unique(rows, return_inverse=True)  # each scored row's normaliser once
    states = hidden[needed]
    normaliser = torch.empty(states.shape[0], dtype=torch.float64, device=states.device)
    for start in range(0, states.shape[0], CHUNK):
        h = states[start:start + CHUNK]
        approx = torch.nn.functional.linear(h.to(torch.bfloat16), low)
        top = approx.topk(min(EXACT_TOP, approx.shape[-1]), dim=-1).indices
        logits = approx.float().scatter_(1, top, torch.einsum("rh,rkh->rk", h, weight[top]))
        normaliser[start:start + CHUNK] = torch.logsumexp(logits, dim=-1).double()
    target = torch.einsum("mh,mh->m", hidden[rows], weight[tokens]).double()
    return target - normaliser[at]


def _version(tensor: Any) -> int | None:
    """The tensor's in-place version counter (``None`` for an inference tensor, which keeps none)."""
    try:
        return tensor._version
    except RuntimeError:
        return None
