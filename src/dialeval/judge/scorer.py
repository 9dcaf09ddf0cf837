"""The LLM judge's model side: G-Eval's probability-weighted rating (Liu et al. 2023) from one forward pass.

For a prompt x, p(r | x) is the next-token probability of rating token r ∈ {1…5} after the answer prefix; the
score is the expectation E[r] = Σ r·p(r | x) / Σ p(r | x) (no sampling), with the argmax rating and the mass
Σ p(r | x) the model put on valid ratings. Every prompt of one quality starts with the same tokens (rubric and
instructions): that prefix runs once, and each item runs on a copy of its key/value cache
(``share_prefix=True``, the default); ``share_prefix=False`` runs every prompt from scratch (same numbers to
float rounding, the benchmark's reference). Items that share a long token prefix though their contexts differ
(turn k's context lines begin turn k + 2's) are nested (``nested=True``): a *host* item runs whole and keeps its
cache, and each *guest* runs only its own tokens after the host's first tokens it shares
(:func:`dialeval.models.shared_prefix.prefix_hosts`, :func:`guest_layout`). By default the items that share
tokens run instead as packed token trees after the prefix's cache (:meth:`JudgeScorer._score_tree`,
:mod:`dialeval.models.token_tree`), every distinct token prefix once. Torch and ONNX Runtime
(:mod:`dialeval.models.onnx_backend`) share the batching (:func:`dialeval.models.runtime.run_batched`, left
padding, one logit row per item).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.judge.rubrics import ANSWER_PREFIX, RATINGS
from dialeval.models.lm import (
    LM_CALL_COST,
    cache_of_rows,
    group_prefix_pass,
    left_padded,
    pad_id,
    tree_logits,
    tree_route_fits,
)
from dialeval.models.onnx_lm import cache_tensors
from dialeval.models.runtime import run_batched
from dialeval.models.shared_prefix import member_chunks, pack_groups, prefix_groups, prefix_hosts
from dialeval.models.token_tree import MAX_SCORED, ROW_LIMIT, shares, tree_passes, tree_rows


def expected_rating(logits: np.ndarray, rating_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E[r], argmax r, Σ p(r)) per row of next-token ``logits`` ``[n, vocab]``; ``rating_ids[r-1]`` is the
    token of rating r. The softmax is over the whole vocabulary (in float64), then renormalised over the ratings."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    pr = p[:, list(rating_ids)]
    mass = pr.sum(axis=-1)
    values = np.arange(1, len(rating_ids) + 1, dtype=np.float64)
    return (pr * values).sum(axis=-1) / mass, pr.argmax(axis=-1) + 1, mass


def rating_tokens(tokenizer: Any, prefix: str = ANSWER_PREFIX, labels: Sequence[str] = RATINGS) -> tuple[str, list[int]]:
    """(answer text ending the prompt, token id of each label): ``"Rating:"`` when the tokenizer writes
    ``" 4"`` as one token (GPT-2 style), ``"Rating: "`` when it writes the space apart (SmolLM2, Llama)."""
    def enc(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    for answer, sep in ((prefix, " "), (prefix + " ", "")):
        head = enc(answer)
        ids = []
        for label in labels:
            full = enc(answer + sep + label)
            if full[:len(head)] != head or len(full) != len(head) + 1:
                break
            ids.append(full[-1])
        if len(ids) == len(labels) and len(set(ids)) == len(labels):
            return answer, ids
    raise ValueError(f"this tokenizer does not write each of {list(labels)} as one token after {prefix!r}; the LLM "
                     "judge reads one next-token distribution, so use a model whose tokenizer does (e.g. SmolLM2, "
                     "Llama, Qwen, Gemma).")


def guest_layout(host_mask: np.ndarray, n_prefix: int, rows: Sequence[int], seen: Sequence[int],
                 shared: Sequence[int], suffixes: Sequence[Sequence[int]], pad: int) -> dict[str, np.ndarray]:
    """The pass of guests after rows ``rows`` of a host batch's cache, whose 2-D mask is ``host_mask``
    ``[hosts, n_prefix + W]`` (the prefix, then W left-padded item columns): guest b's own tokens
    ``suffixes[b]``, left-padded (``ids``); its ``mask``, the prefix and the first ``seen[b]`` item columns of its
    row (its host's first ``shared[b]`` tokens after the host's padding) then its own tokens; its ``positions``
    ``n_prefix + shared[b] + j`` for own token j: every token sees what it sees alone, at the same position."""
    width = max(len(s) for s in suffixes)
    ids = np.full((len(suffixes), width), pad, dtype=np.int64)
    own = np.zeros((len(suffixes), width), dtype=np.int64)
    for b, suffix in enumerate(suffixes):
        ids[b, width - len(suffix):] = suffix
        own[b, width - len(suffix):] = 1
    ends = n_prefix + np.asarray(seen, dtype=np.int64)[:, None]
    past = np.asarray(host_mask, dtype=np.int64)[list(rows)] * (np.arange(host_mask.shape[1])[None] < ends)
    positions = n_prefix + np.asarray(shared, dtype=np.int64)[:, None] + np.maximum(own.cumsum(-1) - 1, 0)
    return {"ids": ids, "mask": np.concatenate([past, own], axis=1), "positions": positions}


class JudgeScorer:
    """Scores token-id prompts ``prefix + item`` of a loaded causal LM (:class:`dialeval.models.lm.LoadedLM`)."""

    def __init__(self, lm: Any) -> None:
        if lm.kind != "causal":
            raise ValueError(f"{lm.name!r} is a {lm.kind} model; the LLM judge needs a causal (decoder-only) chat "
                             "LM, e.g. the offline SmolLM2-135M-Instruct (model=None).")
        self.lm, self.model = lm, lm.model
        self.pad = pad_id(self.model)

    def score(self, prefix: list[int], items: list[list[int]], rating_ids: Sequence[int], *, share_prefix: bool = True,
              nested: bool = True, batch_size: int = 8, max_tokens: int | None = 4096, progress: bool | None = None,
              keys: Sequence[Any] | None = None, call_cost: int | None = LM_CALL_COST, tree: bool = True
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``expected_rating`` of ``prefix + item`` for every item. With ``share_prefix``, items with equal
        ``keys`` (their context) also run their common tokens once, after the prefix
        (:func:`dialeval.models.shared_prefix.prefix_groups`), however many of them there are: their own tokens
        then run in passes of at most ``batch_size`` rows on that one cache; with ``nested`` too, an item that
        shares a long token prefix with another (turn k's context lines begin turn k + 2's) runs only its own
        tokens after that other's cache (:meth:`_score_hosted`). ``max_tokens`` caps the padded item tokens of a
        pass, shared-context packs and host caches included; ``call_cost`` is a pass's fixed cost in padded tokens
        (:func:`dialeval.models.batching.least_padding_cuts`), ``None`` fills each batch in turn. With
        ``share_prefix``, ``nested`` and ``tree`` (the default), items that share tokens run as packed token trees
        after the prefix cache instead (:meth:`_score_tree`; not for int8 graphs)."""
        if share_prefix and nested and tree and prefix and tree_route_fits(self.lm, items, len(prefix)):
            logits = self._score_tree(prefix, items, batch_size, max_tokens, progress, call_cost)
            if logits is not None:
                return expected_rating(logits, rating_ids)
        rows: list[Any] = [None] * len(items)
        todo = list(range(len(items)))
        if share_prefix and prefix:
            past = self._prefix_cache(prefix)
            groups, todo = prefix_groups(items, keys) if keys is not None else ([], todo)
            item_lengths = [len(ids) for ids in items]
            packs = pack_groups(groups, batch_size, max_tokens, item_lengths, whole_groups=True)

            def shared(pack: list[tuple[int, list[int]]]) -> np.ndarray:
                return self._shared(past, len(prefix), pack, items, member_chunks(pack, item_lengths, batch_size,
                                                                                  max_tokens))

            for pack, logits in zip(packs, run_batched(packs, lambda ps: [shared(p) for p in ps],
                                                       lengths=[1] * len(packs),
                                                       batch_size=1, desc="llm_judge shared contexts",
                                                       progress=progress if packs else False)):
                for i, row in zip((i for _, members in pack for i in members), logits):
                    rows[i] = row
            if nested:
                todo = self._score_hosted(past, len(prefix), items, todo, rows, batch_size, max_tokens, progress,
                                          call_cost)

            def step(batch: list[list[int]]) -> list[np.ndarray]:
                return list(self._continue(past, len(prefix), batch))
        else:
            def step(batch: list[list[int]]) -> list[np.ndarray]:
                return list(self._from_scratch([prefix + ids for ids in batch]))
        lengths = [len(items[i]) + (0 if share_prefix else len(prefix)) for i in todo]
        for i, row in zip(todo, run_batched([items[i] for i in todo], step, lengths=lengths, batch_size=batch_size,
                                            max_tokens=max_tokens, desc="llm_judge",
                                            progress=progress if todo else False, call_cost=call_cost)):
            rows[i] = row
        return expected_rating(np.stack(rows), rating_ids) if rows else (np.zeros(0),) * 3

    def _score_tree(self, prefix: list[int], items: list[list[int]], batch_size: int, max_tokens: int | None,
                    progress: bool | None, call_cost: int | None = LM_CALL_COST) -> np.ndarray | None:
        """Last-position logits of every item (``None`` when no two items share a row: nothing to share): the
        items as token-tree rows (:mod:`dialeval.models.token_tree`:
        common tokens, a shared context or turn k's lines in turn k + 2's, run once) after the prefix cache, in
        passes of at most ``batch_size`` rows and ``max_tokens`` padded tokens (a row of one item may exceed it)."""
        past = self._prefix_cache(prefix)
        packed = tree_rows(items, [], [], [], row_limit=ROW_LIMIT if max_tokens is None else min(ROW_LIMIT, max_tokens),
                           max_ends=MAX_SCORED)
        if not shares(packed):
            return None
        keeps = [sorted({end for _, end, _ in row.ends}) for row in packed]
        passes = tree_passes([len(row.tokens) for row in packed], [len(k) for k in keeps], batch_size=batch_size,
                             max_tokens=max_tokens, call_cost=call_cost or 0)
        rows: list[Any] = [None] * len(items)

        def score_pass(batch: list[list[int]]) -> list[None]:
            logits = tree_logits(self.lm, [packed[r] for r in batch[0]], [keeps[r] for r in batch[0]],
                                 self.model.device, past).float().cpu().numpy()
            offset = 0
            for r in batch[0]:
                for i, end, _ in packed[r].ends:
                    rows[i] = logits[offset + keeps[r].index(end)]
                offset += len(keeps[r])
            return [None]

        run_batched(passes, score_pass, lengths=[1] * len(passes), batch_size=1, desc="llm_judge", progress=progress)
        return np.stack(rows)

    def _score_hosted(self, past: list[Any], n_prefix: int, items: list[list[int]], todo: list[int],
                      rows: list[Any], batch_size: int, max_tokens: int | None, progress: bool | None,
                      call_cost: int | None) -> list[int]:
        """Fills ``rows`` for the items of ``todo`` that host or are guests
        (:func:`dialeval.models.shared_prefix.prefix_hosts`); returns the others. Hosts run in batches after the
        prefix cache, keeping their grown cache; after each batch its guests run on rows of that cache
        (:meth:`_guests`), at most ``batch_size`` rows and ``max_tokens`` cells (rows × (host width + longest own
        suffix)) a pass."""
        host, shared = prefix_hosts([items[i] for i in todo])
        guests: dict[int, list[tuple[int, int]]] = {}
        for k, (h, s) in enumerate(zip(host, shared)):
            if h != k:
                guests.setdefault(todo[h], []).append((todo[k], s))
        hosts = sorted(guests)

        def step(batch: list[int]) -> list[np.ndarray]:
            last, cache, mask = self._continue(past, n_prefix, [items[h] for h in batch], grow=True)
            width = mask.shape[1] - n_prefix
            members = [(r, g, width - len(items[h]) + s, s) for r, h in enumerate(batch) for g, s in guests[h]]
            found = run_batched(members, lambda ms: list(self._guests(cache, mask, n_prefix, ms, items)),
                                lengths=[width + len(items[g]) - s for _, g, _, s in members], batch_size=batch_size,
                                max_tokens=max_tokens, progress=False, call_cost=call_cost)
            for (_, g, _, _), row in zip(members, found):
                rows[g] = row
            return list(last)

        for h, row in zip(hosts, run_batched(hosts, step, lengths=[len(items[h]) for h in hosts], batch_size=batch_size,
                                             max_tokens=max_tokens, desc="llm_judge hosts",
                                             progress=progress if hosts else False, call_cost=call_cost)):
            rows[h] = row
        return [i for i in todo if rows[i] is None]

    def _guests(self, cache: Any, host_mask: Any, n_prefix: int, members: list[tuple[int, int, int, int]],
                items: list[list[int]]) -> np.ndarray:
        """Last-position logits of guests ``(host row r, item g, seen columns c, shared s)`` on rows of a host
        batch's cache (``host_mask``: its 2-D mask, the prefix included), laid out by :func:`guest_layout`."""
        import torch

        rows = [r for r, _, _, _ in members]
        lay = guest_layout(host_mask.numpy(), n_prefix, rows, [c for _, _, c, _ in members],
                           [s for _, _, _, s in members], [items[g][s:] for _, g, _, s in members], self.pad)
        if self.lm.onnx is not None:
            return self.lm.onnx.run_last_after_rows(cache, np.asarray(rows), lay["ids"], lay["mask"], lay["positions"])
        dev = self.model.device
        ids, attn, positions = (torch.from_numpy(lay[k]).to(dev) for k in ("ids", "mask", "positions"))
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=positions, use_cache=True, logits_to_keep=1,
                         cache=cache_of_rows(self.model, cache_tensors(cache), rows))
        return out.logits[:, -1].float().cpu().numpy()

    def _shared(self, past: list[Any], n_prefix: int, pack: list[tuple[int, list[int]]], items: list[list[int]],
                chunks: list[list[tuple[int, int, int]]]) -> np.ndarray:
        """Last-position logits of a pack's members: each group's common tokens once after the prefix cache
        (:func:`dialeval.models.lm.group_prefix_pass`), then the members' own tokens in passes ``chunks``
        (:func:`dialeval.models.shared_prefix.member_chunks`: ``(group, item, shared)`` each) on rows of it, as
        guests that see all of their group's row (:meth:`_guests`)."""
        cache, mask = group_prefix_pass(self.lm, pack, items, self.pad, self.model.device, past, n_prefix)
        width = mask.shape[1] - n_prefix
        return np.concatenate([self._guests(cache, mask, n_prefix, [(g, i, width, s) for g, i, s in chunk], items)
                               for chunk in chunks])

    def _from_scratch(self, batch: list[list[int]]) -> np.ndarray:
        input_ids, mask = left_padded(batch, self.pad)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        if self.lm.onnx is not None:
            return self.lm.onnx.run_prefix(input_ids.numpy(), mask.numpy(), positions.numpy())[0]
        dev = self.model.device
        out = self.model(input_ids=input_ids.to(dev), attention_mask=mask.to(dev), position_ids=positions.to(dev),
                         logits_to_keep=1)
        return out.logits[:, -1].float().cpu().numpy()

    def _prefix_cache(self, prefix: list[int]) -> list[Any]:
        """The prefix's keys and values (one row), as numpy arrays (ONNX) or tensors (torch)."""
        import torch

        ids = torch.tensor([prefix])
        mask = torch.ones_like(ids)
        positions = torch.arange(len(prefix)).unsqueeze(0)
        if self.lm.onnx is not None:
            return self.lm.onnx.run_prefix(ids.numpy(), mask.numpy(), positions.numpy())[1]
        dev = self.model.device
        with torch.inference_mode():
            out = self.model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=positions.to(dev),
                             use_cache=True, logits_to_keep=1)
        cache = getattr(out, "cache", None) or out.past_key_values
        return cache_tensors(cache)

    def _continue(self, past: list[Any], n_prefix: int, batch: list[list[int]], grow: bool = False) -> Any:
        """Last-position logits of each item after the shared prefix (left-padded between prefix and item); with
        ``grow``, ``(logits, grown cache, its 2-D mask)`` (the prefix's columns included)."""
        import torch

        input_ids, mask = left_padded(batch, self.pad)
        n, width = input_ids.shape
        lengths = mask.sum(-1, keepdim=True)
        positions = (n_prefix + torch.arange(width).unsqueeze(0) - (width - lengths)).clamp(min=n_prefix)
        full_mask = torch.cat([torch.ones((n, n_prefix), dtype=torch.long), mask], dim=1)
        onnx = self.lm.onnx
        if onnx is not None and grow:
            last, cache = onnx.run_extension(past, np.zeros(n, dtype=np.int64), input_ids.numpy(), full_mask.numpy(),
                                             positions.numpy())
            return last, cache, full_mask
        if onnx is not None:
            return onnx.run_last_after_rows(past, np.zeros(n, dtype=np.int64), input_ids.numpy(), full_mask.numpy(),
                                            positions.numpy())
        cache = cache_of_rows(self.model, past, [0] * n)
        dev = self.model.device
        out = self.model(input_ids=input_ids.to(dev), attention_mask=full_mask.to(dev), position_ids=positions.to(dev),
                         cache=cache, use_cache=True, logits_to_keep=1)
        last = out.logits[:, -1].float().cpu().numpy()
        return (last, getattr(out, "cache", None) or out.past_key_values, full_mask) if grow else last
