"""FULL's follow-ups of every history a cached row holds: histories nested in a longer one, and a follow-up trie.

Scoring every turn of a conversation gives histories that are token prefixes of each other (ConTurE, FED turn
level: h₁ ⊂ h₂ ⊂ … ⊂ hₖ, up to the separator token that ends each, which the next turn's first word absorbs).
The key/value cache of the longest one already holds all of every shorter one's tokens but its last, so
:func:`dialeval.models.shared_prefix.nested_hosts` runs only the longest (the *host*) and this module scores the
follow-ups of each history it holds (its *guests*, itself included) in one packed query row per host, behind a
4-D additive mask:

- an *anchor* per guest: its last history token, at its own position L − 1, seeing the host's first L − 1
  tokens: its logits give log p(f₀ | h) for every follow-up;
- the guest's follow-ups after it, as a trie (:func:`followup_trie`): follow-ups that begin with the same tokens
  ("You're really confusing." / "You're really boring.") share those positions; each trie node sees the host's
  first L − 1 tokens, the anchor and its own ancestors, at position L + depth.

Every scored token sees what it would see alone, at the position it would have alone, so the NLLs equal the
one-history-at-a-time route to float rounding (``tests/test_full_shared.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dialeval.models.lm import cache_of_rows
from dialeval.models.lm_head import bf16_head_weight, scored_log_probs
from dialeval.models.onnx_lm import cache_tensors

#: the most query positions (anchors, trie nodes and padding, over all rows) one follow-up pass runs: it bounds
#: the ``[rows, queries, vocab]`` logits (512 × 49,152 floats ≈ 100 MB for SmolLM2)
QUERY_BUDGET = 512


def followup_trie(f_ids: list[list[int]]) -> dict[str, np.ndarray]:
    """The trie of the follow-ups' inputs (each follow-up but its last token): node ``token``, ``depth`` and
    ``parent`` (−1: none, the history's last token) and ``sees`` (``[N, N]``: node i sees node j, an ancestor or
    itself); and for every scored token, ``node`` (whose
    logits predict it; −1: the anchor), ``target`` (its id) and ``follow_up`` (which follow-up it belongs to)."""
    index: dict[tuple[int, ...], int] = {}
    token: list[int] = []
    depth: list[int] = []
    parent: list[int] = []
    node, target, owner = [], [], []
    for k, f in enumerate(f_ids):
        node.append(-1)
        target.append(f[0])
        owner.append(k)
        for t in range(len(f) - 1):
            key = tuple(f[: t + 1])
            if key not in index:
                index[key] = len(token)
                token.append(f[t])
                depth.append(t)
                parent.append(index.get(key[:-1], -1))
            node.append(index[key])
            target.append(f[t + 1])
            owner.append(k)
    sees = np.eye(len(token), dtype=bool)
    for i in range(len(token)):
        p = parent[i]
        while p >= 0:
            sees[i, p] = True
            p = parent[p]
    return {"token": np.asarray(token, dtype=np.int64), "depth": np.asarray(depth, dtype=np.int64),
            "parent": np.asarray(parent, dtype=np.int64), "sees": sees,
            "node": np.asarray(node, dtype=np.int64), "target": np.asarray(target, dtype=np.int64),
            "follow_up": np.asarray(owner, dtype=np.int64)}


def hosted_layout(attn: np.ndarray, guests: list[list[tuple[int, int]]], trie: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The packed query rows of ``guests[r]`` (``(history length L, last history token)`` per guest of row r)
    after a host cache whose 2-D mask is ``attn`` ``[rows, past]``: ``ids``, ``positions`` and ``sees``
    (``[rows, Q, past + Q]``). Guest g of a row takes queries ``g·(1 + N)`` (its anchor) to ``(g + 1)·(1 + N)``;
    padding queries see only themselves."""
    n_rows, past = attn.shape
    n_nodes = len(trie["token"])
    block = 1 + n_nodes
    width = max(len(g) for g in guests) * block
    ids = np.zeros((n_rows, width), dtype=np.int64)
    positions = np.zeros((n_rows, width), dtype=np.int64)
    sees = np.zeros((n_rows, width, past + width), dtype=bool)
    sees[:, np.arange(width), past + np.arange(width)] = True
    valid = attn.astype(bool)
    rank = np.cumsum(attn, axis=-1)  # how many of the host's tokens up to and including each column
    for r, row in enumerate(guests):
        for g, (length, last) in enumerate(row):
            a = g * block
            ids[r, a], positions[r, a] = last, length - 1
            sees[r, a, :past] = valid[r] & (rank[r] <= length - 1)
            nodes = slice(a + 1, a + block)
            ids[r, nodes], positions[r, nodes] = trie["token"], length + trie["depth"]
            sees[r, nodes, :past] = valid[r] & (rank[r] <= length - 1)
            sees[r, nodes, past + a] = True  # the anchor: the history's last token
            sees[r, nodes, past + a + 1: past + a + block] = trie["sees"]
    return {"ids": ids, "positions": positions, "sees": sees}


def query_chunks(guest_counts: list[int], block: int, budget: int = QUERY_BUDGET) -> list[list[int]]:
    """Rows grouped so that each follow-up pass runs at most ``budget`` query positions (rows × its widest
    row), most guests first, each chunk's rows in their order."""
    order = sorted(range(len(guest_counts)), key=lambda r: -guest_counts[r])
    chunks: list[list[int]] = []
    for r in order:
        if chunks and (len(chunks[-1]) + 1) * guest_counts[chunks[-1][0]] * block <= budget:
            chunks[-1].append(r)
        else:
            chunks.append([r])
    return [sorted(c) for c in chunks]


def guest_queries(guests: list[list[tuple[int, int]]], trie: dict[str, np.ndarray], width: int) -> np.ndarray:
    """``[Σ guests, targets]``: for each guest of each query row (row after row), the flat position
    ``row · width + query`` at which each of its follow-up trie's target tokens is scored (``width``: queries per row)."""
    block = 1 + len(trie["token"])
    query = trie["node"] + 1  # the anchor is query 0 of a guest's block
    at = [r * width + g * block + query for r, row in enumerate(guests) for g in range(len(row))]
    return np.stack(at) if at else np.zeros((0, len(query)), dtype=np.int64)


def guest_nll(scored: np.ndarray, guests: list[list[tuple[int, int]]], trie: dict[str, np.ndarray],
              lengths: np.ndarray) -> list[list[list[float]]]:
    """Mean NLL of every follow-up of every guest from ``scored`` ``[Σ guests, targets]``, the log-probabilities of
    each guest's trie targets in :func:`guest_queries`' order (``lengths``: each follow-up's token count)."""
    out, k = [], 0
    for row in guests:
        per_row = []
        for _ in row:
            total = np.bincount(trie["follow_up"], weights=scored[k], minlength=len(lengths))
            per_row.append((-total / lengths).tolist())
            k += 1
        out.append(per_row)
    return out


def hosted_followup_nll(lm: Any, cache: Any, attn: Any, guests: list[list[tuple[int, int]]],
                        f_ids: list[list[int]]) -> list[list[list[float]]]:
    """``[row][guest][follow-up]`` mean NLLs of every guest's follow-ups after the host cache ``cache`` (its 2-D
    mask ``attn``; torch ``DynamicCache`` or ONNX Runtime arrays), in passes of at most :data:`QUERY_BUDGET`
    queries (a host with more guests than fit is split over passes)."""
    import torch

    trie = followup_trie(f_ids)
    block = 1 + len(trie["token"])
    lengths = np.asarray([len(f) for f in f_ids], dtype=np.float64)
    mask2d = attn.cpu().numpy()
    per_pass = max(1, QUERY_BUDGET // block)
    parts = [(r, g[k:k + per_pass]) for r, g in enumerate(guests) for k in range(0, len(g), per_pass)]
    found: list[Any] = [None] * len(parts)
    onnx = getattr(lm, "onnx", None)
    chunks = query_chunks([len(g) for _, g in parts], block, QUERY_BUDGET)
    bf16_head = onnx is None and bf16_head_weight(lm.model) is not None
    for chunk in chunks:
        rows = [parts[p][0] for p in chunk]
        chunk_guests = [parts[p][1] for p in chunk]
        lay = hosted_layout(mask2d[rows], chunk_guests, trie)
        mask = np.where(lay["sees"], np.float32(0), np.finfo(np.float32).min).astype(np.float32)[:, None]
        # one pass over every row, in order: the cache as it is (torch appends to it, so never with a second pass)
        whole = len(chunks) == 1 and rows == list(range(len(guests)))
        at = guest_queries(chunk_guests, trie, lay["ids"].shape[1])
        if onnx is not None:
            past = cache if whole else [np.take(p, rows, axis=0) for p in cache]
            logits = onnx.run_packed(past, lay["ids"], mask, lay["positions"])
            scored = _logits_scored(torch.from_numpy(logits), at, trie["target"])
        else:
            feed = {k: torch.from_numpy(v).to(attn.device) for k, v in
                    {"input_ids": lay["ids"], "attention_mask": mask, "position_ids": lay["positions"]}.items()}
            feed.update(cache=cache if whole else cache_of_rows(lm.model, cache_tensors(cache), rows), use_cache=True)
            if bf16_head:  # the head apart, in bf16 with its largest logits exact (dialeval.models.lm_head)
                hidden = lm.model.get_decoder()(**feed).last_hidden_state
                scored = scored_log_probs(lm.model, hidden.reshape(-1, hidden.shape[-1]), torch.from_numpy(at.ravel()),
                                          torch.from_numpy(np.tile(trie["target"], len(at)))).numpy().reshape(at.shape)
            else:
                scored = _logits_scored(lm.model(**feed).logits, at, trie["target"])
        for p, nll in zip(chunk, guest_nll(scored, chunk_guests, trie, lengths)):
            found[p] = nll
    out: list[list[list[float]]] = [[] for _ in guests]
    for (r, _), nll in zip(parts, found):
        out[r].extend(nll)
    return out


def _logits_scored(logits: Any, at: np.ndarray, target: np.ndarray) -> np.ndarray:
    """log p = logit − logsumexp at the flat positions ``at`` (:func:`guest_queries`) of ``logits`` ``[rows, Q,
    vocab]``, for the targets of each guest's trie."""
    import torch

    logits = logits.float()
    lse = torch.logsumexp(logits, dim=-1).cpu().numpy().reshape(-1)
    flat = logits.cpu().numpy().reshape(-1, logits.shape[-1])
    return flat[at, target].astype(np.float64) - lse[at].astype(np.float64)
