"""FULL's follow-up passes (torch or ONNX Runtime), after a history cache (from
:func:`dialeval.models.lm.history_pass` or :func:`dialeval.models.lm.shared_history_pass`).

- :func:`mean_followup_nll` scores every follow-up after each history. ``packed=True`` (default) puts all the
  follow-ups of a history in one row behind a 4-D mask: each follow-up sees the history and its own earlier
  tokens, and takes the positions it would have alone, so the history's cache is used as it is instead of
  being copied once per follow-up; ``packed=False`` is the earlier route (one padded row per follow-up on a
  repeated cache). Both give the same NLLs to float rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def packed_layout(f_ids: list[list[int]]) -> dict[str, np.ndarray]:
    """The packed row of the follow-ups' inputs (each follow-up but its last token, one after the other):
    ``ids``, ``offset`` (position within its follow-up), ``segment`` (which follow-up), ``target`` (the
    next token, scored there) and ``sees`` (``[T, T]``: token i sees token j of the row)."""
    segment = np.concatenate([np.full(len(f) - 1, k) for k, f in enumerate(f_ids)]).astype(np.int64)
    offset = np.concatenate([np.arange(len(f) - 1) for f in f_ids]).astype(np.int64)
    ids = np.concatenate([np.asarray(f[:-1], dtype=np.int64) for f in f_ids])
    target = np.concatenate([np.asarray(f[1:], dtype=np.int64) for f in f_ids])
    sees = (segment[:, None] == segment[None, :]) & (offset[None, :] <= offset[:, None])
    return {"ids": ids, "offset": offset, "segment": segment, "target": target, "sees": sees}


def mean_followup_nll(lm: Any, last: Any, cache: Any, attn: Any, f_ids: list[list[int]], *, packed: bool = True) -> list[list[float]]:
    """Mean NLL of every follow-up after each row of a history cache (``last``: its last logits; ``attn``: its
    2-D mask, whose sum is the next position)."""
    import torch

    first = torch.tensor([f[0] for f in f_ids])
    total = torch.log_softmax(last.float(), dim=-1)[:, first.to(last.device)].cpu().double()  # log p(f_0 | h)
    if max(len(f) for f in f_ids) > 1:
        rest = _packed_rest(lm, cache, attn, f_ids) if packed else _repeated_rest(lm, cache, attn, f_ids)
        total = total + rest
    lengths = torch.tensor([len(f) for f in f_ids], dtype=torch.float64)
    return (-total / lengths).tolist()


def _packed_rest(lm: Any, cache: Any, attn: Any, f_ids: list[list[int]]) -> Any:
    """``[items, F]`` summed log-probs of every follow-up's tokens after its first, all in one row per item."""
    import torch

    layout = packed_layout([f for f in f_ids if len(f) > 1])
    kept = [k for k, f in enumerate(f_ids) if len(f) > 1]
    n_items, t = attn.shape[0], len(layout["ids"])
    ids = torch.from_numpy(layout["ids"]).unsqueeze(0).expand(n_items, t)
    pos = attn.sum(-1, keepdim=True).cpu() + torch.from_numpy(layout["offset"]).unsqueeze(0)
    sees = torch.cat([attn.cpu().bool().unsqueeze(1).expand(n_items, t, attn.shape[1]),
                      torch.from_numpy(layout["sees"]).unsqueeze(0).expand(n_items, t, t)], dim=2)
    mask = torch.zeros(sees.shape, dtype=torch.float32).masked_fill_(~sees, torch.finfo(torch.float32).min)
    mask = mask.unsqueeze(1)  # [items, 1, T, past + T], added to the attention scores
    onnx = getattr(lm, "onnx", None)
    if onnx is not None:
        logits = torch.from_numpy(onnx.run_packed(cache, ids.numpy(), mask.numpy(), pos.numpy()))
    else:
        dev = attn.device
        logits = lm.model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev), cache=cache,
                          use_cache=True).logits
    logp = torch.log_softmax(logits.float(), dim=-1)
    tok = logp.gather(-1, torch.from_numpy(layout["target"]).to(logp.device).expand(n_items, t).unsqueeze(-1))
    out = torch.zeros((n_items, len(f_ids)), dtype=torch.float64)
    seg = torch.tensor(kept)[torch.from_numpy(layout["segment"])]
    return out.index_add_(1, seg, tok.squeeze(-1).cpu().double())


def _repeated_rest(lm: Any, cache: Any, attn: Any, f_ids: list[list[int]]) -> Any:
    """The earlier route of :func:`_packed_rest`: one right-padded row per (item, follow-up), on a cache
    repeated once per follow-up."""
    import torch

    n_items, n_f = attn.shape[0], len(f_ids)
    dev = attn.device
    width = max(len(f) for f in f_ids)
    labels = torch.zeros((n_f, width), dtype=torch.long)
    lmask = torch.zeros((n_f, width), dtype=torch.bool)
    for k, f in enumerate(f_ids):
        labels[k, : len(f)] = torch.tensor(f)
        lmask[k, : len(f)] = True
    labels, lmask = labels.to(dev), lmask.to(dev)
    f_in = labels[:, :-1].repeat(n_items, 1)
    full_mask = torch.cat([attn.repeat_interleave(n_f, dim=0), lmask[:, :-1].repeat(n_items, 1).long()], dim=1)
    f_pos = attn.sum(-1).repeat_interleave(n_f, dim=0).unsqueeze(1) + torch.arange(f_in.shape[1], device=dev).unsqueeze(0)
    onnx = getattr(lm, "onnx", None)
    if onnx is not None:
        logits = torch.from_numpy(onnx.run_continuation(cache, n_f, f_in.numpy(), full_mask.numpy(), f_pos.numpy()))
    else:
        cache.batch_repeat_interleave(n_f)
        logits = lm.model(input_ids=f_in, attention_mask=full_mask, position_ids=f_pos, cache=cache,
                          use_cache=True).logits
    logp = torch.log_softmax(logits.float(), dim=-1)
    rest = logp.gather(-1, labels[:, 1:].repeat(n_items, 1).unsqueeze(-1)).squeeze(-1) * lmask[:, 1:].repeat(n_items, 1)
    return rest.sum(-1).view(n_items, n_f).cpu().double()
