"""Items that share a context share its key/value cache: the grouping, as pure functions.

Several responses to one context (DailyDialog++: 15 per context, USR: 6, DailyDialog-Zhao: 9) give token
sequences with a long common prefix. :func:`prefix_groups` finds, among items with the same context turns,
their longest common token prefix; the scorer then runs that prefix once, each member's own tokens on a copy
of its cache, and the follow-ups on those (:meth:`dialeval.full.scorer.FollowupScorer.score`). The grouping
is by tokens, not by text, so truncation or a token merged across the context/response boundary only
shortens the shared part; it never changes what a member conditions on.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

MIN_SHARED = 8  #: a shorter common prefix is not worth a separate pass


def common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    """The length of the longest prefix all ``seqs`` share."""
    first, n = seqs[0], min(len(s) for s in seqs)
    for i in range(n):
        token = first[i]
        if any(s[i] != token for s in seqs):
            return i
    return n


def prefix_groups(items: Sequence[Sequence[int]], keys: Sequence[Hashable | None], *,
                  min_shared: int = MIN_SHARED) -> tuple[list[tuple[int, list[int]]], list[int]]:
    """``([(shared length, member indices)], single indices)``: items with equal non-``None`` ``keys`` form a
    group when they share at least ``min_shared`` leading tokens. Each member keeps at least one token of its
    own (the shared length is at most the shortest member's length − 1), so its last position is its own."""
    by_key: dict[Hashable, list[int]] = {}
    singles: list[int] = []
    for i, key in enumerate(keys):
        if key is None:
            singles.append(i)
        else:
            by_key.setdefault(key, []).append(i)
    groups: list[tuple[int, list[int]]] = []
    for members in by_key.values():
        shared = 0
        if len(members) > 1:
            seqs = [items[i] for i in members]
            shared = min(common_prefix_length(seqs), min(len(s) for s in seqs) - 1)
        if shared >= min_shared:
            groups.append((shared, members))
        else:
            singles.extend(members)
    return groups, sorted(singles)


def pack_groups(groups: Sequence[tuple[int, list[int]]], rows_per_pack: int) -> list[list[tuple[int, list[int]]]]:
    """Groups packed, longest shared prefix first, so a pack holds at most ``rows_per_pack`` members; a
    larger group is split into parts of that size, each part running the prefix again."""
    parts = [(shared, members[k:k + rows_per_pack]) for shared, members in groups
             for k in range(0, len(members), rows_per_pack)]
    parts.sort(key=lambda g: (-g[0], g[1][0]))
    packs: list[list[tuple[int, list[int]]]] = []
    current: list[tuple[int, list[int]]] = []
    for part in parts:
        if current and sum(len(m) for _, m in current) + len(part[1]) > rows_per_pack:
            packs.append(current)
            current = []
        current.append(part)
    if current:
        packs.append(current)
    return packs
