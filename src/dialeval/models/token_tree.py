"""Sequences packed as token trees: every distinct token prefix of a set of sequences once per row, each token
attending only to its ancestors, at the position it has in its own sequence (tree attention, as in SpecInfer,
Miao et al. 2024). A row needs no key/value cache, so responses to one context, or the turns of one
conversation, run their common tokens once in one pass, as pure layout:

- :func:`tree_rows` packs sequences, each followed by a common *tail* tree (FULL's follow-up trie), into rows:
  sequences that share a context go in one row, others in rows of their own;
- :func:`tree_passes` batches rows into passes under row, token and scored-position budgets;
- :func:`ancestor_mask` is a row's ``[T, T]`` mask: node i sees node j when j is i or one of its ancestors.

Each node computes exactly what it computes in its own sequence (the same tokens before it, at the same
positions), so the scores equal a one-sequence-at-a-time pass to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dialeval.models.batching import greedy_batches, least_padding_cuts
from dialeval.models.shared_prefix import common_prefix_length

#: a sequence joins the row before it only when they share at least this many leading tokens (a context,
#: earlier turns), so unrelated sequences run in rows of their own, batched
SHARED_TOKENS = 8
#: ... and when its shared tokens save more than joining costs: a shared token saves its linear layers (2·P FLOPs,
#: P the non-embedding parameters), while ``added`` new tokens in a row of S cost about 2·S·added more attention
#: pairs (4·layers·d_attn FLOPs each, masked or not). For SmolLM2-135M P / (4·layers·d_attn) ≈ 1536, so a
#: sequence joins when shared ≥ S · added / 1536
JOIN_RATIO = 1536
#: a row never holds more tokens than this (unless one sequence and its tail alone do): attention over a row of
#: T tokens costs T², while its linear layers cost T
ROW_LIMIT = 1024
#: the most scored nodes (logit rows) one pass may hold: 512 × 49,152 floats ≈ 100 MB for SmolLM2
MAX_SCORED = 512
#: the most padded tokens (rows × widest row) one pass runs when the caller sets no ``max_tokens``
PASS_TOKENS = 4096


@dataclass
class TreeRow:
    """One packed row: node ``tokens``, ``parents`` (−1: a root) and ``positions``; ``ends`` holds, per sequence
    it carries, ``(sequence index, its last token's node, its tail's first node)``."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    ends: list[tuple[int, int, int]] = field(default_factory=list)


def tree_rows(seqs: Sequence[Sequence[int]], tail_parents: Sequence[int], tail_depths: Sequence[int],
              tail_tokens: Sequence[int], *, row_limit: int = ROW_LIMIT, max_ends: int | None = None,
              min_shared: int = SHARED_TOKENS) -> list[TreeRow]:
    """Rows holding every sequence of ``seqs`` (each at least one token) followed by a copy of the tail tree
    (node k: token ``tail_tokens[k]``, parent ``tail_parents[k]``, −1 being the sequence's last token, at
    position ``len(seq) + tail_depths[k]``). Sequences go in sorted token order, so each shares most with the
    one before it; equal sequences share one tail. The next sequence starts a new row when it shares fewer than
    ``min_shared`` tokens with the row's last, or too few to pay for the attention it adds (:data:`JOIN_RATIO`),
    when the row would exceed ``row_limit`` tokens, or when the row holds ``max_ends`` sequences."""
    n_tail = len(tail_tokens)
    rows: list[TreeRow] = []
    row: TreeRow | None = None
    path: list[int] = []  # the nodes of the row's last sequence
    last: Sequence[int] = ()
    for i in sorted(range(len(seqs)), key=lambda k: list(seqs[k])):
        seq = seqs[i]
        shared = common_prefix_length([last, seq]) if row is not None else 0
        if (row is not None and shared == len(seq) == len(last)
                and (max_ends is None or len(row.ends) < max_ends)):  # the same tokens again: the same end and tail
            row.ends.append((i, *row.ends[-1][1:]))
            continue
        added = len(seq) - shared + n_tail
        size = len(row.tokens) + added if row is not None else 0
        if (row is None or shared < max(min_shared, len(row.tokens) * added / JOIN_RATIO) or size > row_limit
                or (max_ends is not None and len(row.ends) >= max_ends)):
            row, shared = TreeRow(), 0
            rows.append(row)
        path = path[:shared]
        for p in range(shared, len(seq)):
            row.tokens.append(int(seq[p]))
            row.parents.append(path[-1] if path else -1)
            row.positions.append(p)
            path.append(len(row.tokens) - 1)
        end, base = path[-1], len(row.tokens)
        for k in range(n_tail):
            row.tokens.append(int(tail_tokens[k]))
            row.parents.append(base + tail_parents[k] if tail_parents[k] >= 0 else end)
            row.positions.append(len(seq) + int(tail_depths[k]))
        row.ends.append((i, end, base))
        last = seq
    return rows


def shares(rows: Sequence[TreeRow]) -> bool:
    """Whether any row holds more than one sequence: otherwise every row is one plain sequence, which a cached
    route can run instead (the LLM judge's does; FULL's only on ONNX Runtime)."""
    return any(len(row.ends) > 1 for row in rows)


def tree_passes(widths: Sequence[int], scored: Sequence[int], *, batch_size: int, max_tokens: int | None = None,
                max_scored: int = MAX_SCORED, call_cost: int = 0) -> list[list[int]]:
    """Rows (their token counts ``widths``, their scored nodes ``scored``) batched into passes, widest first, cut
    where padding plus ``call_cost`` (a pass's fixed cost in padded tokens) is least
    (:func:`dialeval.models.batching.least_padding_cuts`): at most ``batch_size`` rows and ``max_tokens`` padded
    tokens (rows × widest; :data:`PASS_TOKENS` when ``None``) a pass, then split where a pass would score more than
    ``max_scored`` nodes; a row over a budget runs alone."""
    budget = PASS_TOKENS if max_tokens is None else max_tokens
    order = sorted(range(len(widths)), key=lambda r: (-widths[r], r))
    passes = least_padding_cuts(order, widths, batch_size, budget, call_cost)
    return [part for batch in passes
            for part in greedy_batches(batch, lambda b: sum(scored[r] for r in b), max_scored)]


def ancestor_mask(parents: Sequence[int], width: int) -> np.ndarray:
    """``[width, width]`` booleans: node i sees node j when j is i or an ancestor of i (parents come before their
    children); columns past ``len(parents)`` are padding, each seeing only itself."""
    sees = np.zeros((width, width), dtype=bool)
    for i, parent in enumerate(parents):
        if parent >= 0:
            sees[i, : i] = sees[parent, : i]
        sees[i, i] = True
    idle = np.arange(len(parents), width)
    sees[idle, idle] = True
    return sees
