"""Items that share a context share its key/value cache: the grouping, as pure functions.

Several responses to one context (DailyDialog++: 15 per context, USR: 6, DailyDialog-Zhao: 9) give token
sequences with a long common prefix. :func:`prefix_groups` finds, among items with the same context turns,
their longest common token prefix; the scorer then runs that prefix once, each member's own tokens on a copy
of its cache, and the follow-ups on those (:meth:`dialeval.full.scorer.FollowupScorer.score`). Before that,
:func:`nested_hosts` finds the items whose tokens begin another item's (every turn of one conversation): they
run inside it (:mod:`dialeval.full.hosted`). The grouping
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


def nested_hosts(items: Sequence[Sequence[int]]) -> list[int]:
    """For every item, the index of its *host*: an item whose tokens begin with all of the item's but its last
    (``host[:L − 1] == item[:L − 1]``, L the item's length), itself when no other item qualifies. Every turn of
    one conversation is hosted by its longest history; a repeated item by its twin.

    In lexicographic order the items beginning with a given prefix are contiguous, so a right-to-left pass
    hands each item its successor's host when the two share L − 1 tokens, and a left-to-right pass the last
    host's when the common prefix since it is long enough; each host is then checked outright."""
    order = sorted(range(len(items)), key=lambda i: list(items[i]))
    seqs = [list(items[i]) for i in order]
    lcp = [common_prefix_length([a, b]) for a, b in zip(seqs, seqs[1:])]  # lcp[k]: sorted items k and k + 1
    host = list(range(len(seqs)))  # in sorted positions
    for k in range(len(seqs) - 2, -1, -1):
        if lcp[k] >= len(seqs[k]) - 1:
            host[k] = host[k + 1]
    last, shared = None, 0
    for k in range(len(seqs)):
        shared = min(shared, lcp[k - 1]) if k else 0
        if host[k] == k:
            if last is not None and shared >= len(seqs[k]) - 1:
                host[k] = last
            else:
                last, shared = k, len(seqs[k])
    out = list(range(len(items)))
    for k, i in enumerate(order):
        h = host[k]
        while host[h] != h:
            h = host[h]
        n = len(seqs[k]) - 1
        if len(seqs[h]) >= n and seqs[h][:n] == seqs[k][:n]:
            out[i] = order[h]
    return out


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
