"""FULL's default causal route: histories and the follow-up trie packed as token trees
(:mod:`dialeval.models.token_tree`), one pass per row and no key/value cache.

Responses to one context run the context's tokens once; a history nested in a longer one (every turn of a
conversation) runs inside it; each history's follow-ups share their common first tokens
(:func:`dialeval.full.hosted.followup_trie`). The logits are computed only where a token is scored: at each
history's last token (log p(f₀ | h)) and at each follow-up trie node. Every scored token sees what it sees
alone, at the position it has alone, so the NLLs equal the one-history-at-a-time route to float rounding
(``tests/test_token_tree.py``). With bf16 products on a CPU, a plain head runs apart on the scored nodes'
hidden states (:mod:`dialeval.models.lm_head`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dialeval.full.hosted import followup_trie
from dialeval.models.lm import LM_CALL_COST, tree_logits, tree_route_fits
from dialeval.models.lm_head import bf16_head_weight, scored_log_probs
from dialeval.models.runtime import run_batched
from dialeval.models.token_tree import MAX_SCORED, ROW_LIMIT, shares, tree_passes, tree_rows


def tree_route_applies(lm: Any, items: list[list[int]], f_ids: list[list[int]]) -> bool:
    """Whether the tree route runs: there are follow-ups, and :func:`dialeval.models.lm.tree_route_fits` holds for
    the histories with the longest follow-up after them."""
    return bool(f_ids) and tree_route_fits(lm, items, max(len(f) for f in f_ids))


def tree_followup_nll(lm: Any, items: list[list[int]], f_ids: list[list[int]], device: Any, *, batch_size: int = 16,
                      max_tokens: int | None = None, progress: bool | None = None) -> np.ndarray | None:
    """``[len(items), len(f_ids)]`` mean per-token NLLs of every follow-up after every history (token ids), in
    passes of at most ``batch_size`` token-tree rows and ``max_tokens`` padded tokens (a row holding one history
    and its follow-ups alone may exceed it); ``None`` when no two histories share a row and ``lm`` runs on ONNX
    Runtime, where the cached route (:mod:`dialeval.full.hosted`) runs them on the exported graphs instead of the
    torch module. On torch the trees run anyway: one pass a batch, where the cached route takes two (the
    histories, then their follow-ups on the cache)."""
    import torch

    trie = followup_trie(f_ids)
    per_end = 1 + len(trie["token"])  # scored nodes per history: its last token, then every trie node
    rows = tree_rows(items, trie["parent"], trie["depth"], trie["token"],
                     row_limit=ROW_LIMIT if max_tokens is None else min(ROW_LIMIT, max_tokens),
                     max_ends=max(1, MAX_SCORED // per_end))
    if not shares(rows) and getattr(lm, "onnx", None) is not None:
        return None
    keeps = [sorted({n for _, end, base in row.ends for n in (end, *range(base, base + per_end - 1))}) for row in rows]
    passes = tree_passes([len(row.tokens) for row in rows], [len(k) for k in keeps], batch_size=batch_size,
                         max_tokens=max_tokens, call_cost=LM_CALL_COST)
    lengths = np.asarray([len(f) for f in f_ids], dtype=np.float64)
    target = torch.from_numpy(trie["target"])
    out = np.empty((len(items), len(f_ids)))
    bf16_head = bf16_head_weight(lm.model) is not None

    def score_pass(batch: list[list[int]]) -> list[None]:
        chosen, offset, scored = batch[0], 0, []
        for r in chosen:
            at = {node: offset + k for k, node in enumerate(keeps[r])}
            scored += [(i, np.where(trie["node"] < 0, at[end], at.get(base, 0) + trie["node"]))
                       for i, end, base in rows[r].ends]
            offset += len(keeps[r])
        q = torch.from_numpy(np.concatenate([at_nodes for _, at_nodes in scored]))
        tokens = target.repeat(len(scored))
        picked = [rows[r] for r in chosen], [keeps[r] for r in chosen]
        if bf16_head:  # the head apart, in bf16 with its largest logits exact (dialeval.models.lm_head)
            logp = scored_log_probs(lm.model, tree_logits(lm, *picked, device, states=True), q, tokens)
        else:  # one fused pass over the vocabulary (logsumexp takes four)
            logp = torch.log_softmax(tree_logits(lm, *picked, device).float(), dim=-1)[q, tokens].double()
        for (i, _), tok in zip(scored, logp.cpu().numpy().reshape(len(scored), -1)):
            out[i] = -np.bincount(trie["follow_up"], weights=tok, minlength=len(f_ids)) / lengths
        return [None]

    run_batched(passes, score_pass, lengths=[1] * len(passes), batch_size=1, desc="FULL", progress=progress)
    return out
