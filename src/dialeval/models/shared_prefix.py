"""Items that share a leading run of tokens share its key/value cache: the grouping, as pure functions.

Several texts scored by one causal LM often begin with the same tokens: responses to one context
(DailyDialog++: 15 per context, USR: 6, DailyDialog-Zhao: 9), or every turn of one conversation.
:func:`prefix_groups` finds, among items with equal keys, their longest common token prefix, so a scorer
can run that prefix once and each member's own tokens on a copy of its cache
(:func:`dialeval.models.lm.shared_history_pass`); :func:`pack_groups` packs the groups into passes under a row
and token budget; :func:`nested_hosts` finds the items whose tokens begin another item's, so they can run
inside it; :func:`prefix_hosts` finds, whatever the keys, the item each item shares most leading tokens with
among those that run whole (the LLM judge's turn-level prompts: item k's context lines begin item k + 2's).
FULL and the LLM judge both use them. The grouping is by tokens, not by text, so truncation or a
token merged across a boundary only shortens the shared part; it never changes what a member conditions on.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Hashable, Sequence

from dialeval.models.batching import greedy_batches

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


def prefix_hosts(items: Sequence[Sequence[int]], *,
                 min_shared: int = MIN_SHARED) -> tuple[list[int], list[int]]:
    """``(host, shared)`` per item: a *host* (``host[i] == i``, ``shared[i] == 0``) runs whole; a *guest* runs only
    its tokens after the first ``shared[i]`` of its host, which equal its own (``s ≤ len(item) − 1``, so its last
    position is its own). Longest items first, an item becomes the guest of the host already chosen that shares
    the most leading tokens with it when that saves work, ``s ≥ min_shared`` and ``s ≥ len(item) − s`` (at least
    as many shared tokens as own ones); otherwise it is a host. Among the hosts, the one sharing most with an
    item is a neighbour of it in lexicographic order (the common prefix of two sorted items is the least over
    the neighbouring pairs between them), found by bisection."""
    order = sorted(range(len(items)), key=lambda i: (list(items[i]), i))
    rank = {i: k for k, i in enumerate(order)}
    chosen: list[int] = []  # the hosts' ranks, sorted
    host, shared = list(range(len(items))), [0] * len(items)
    for i in sorted(range(len(items)), key=lambda i: (-len(items[i]), i)):
        k = bisect_left(chosen, rank[i])
        for h in (order[chosen[j]] for j in (k - 1, k) if 0 <= j < len(chosen)):
            s = min(common_prefix_length([items[i], items[h]]), len(items[i]) - 1)
            if s > shared[i]:
                host[i], shared[i] = h, s
        if shared[i] < min_shared or 2 * shared[i] < len(items[i]):
            host[i], shared[i] = i, 0
            insort(chosen, rank[i])
    return host, shared


Group = tuple[int, list[int]]  #: (shared prefix length, member indices)


def pack_cost(pack: Sequence[Group], lengths: Sequence[int]) -> int:
    """Padded tokens a pack's rows hold: members × (longest shared prefix + longest own suffix), an item's own
    tokens being its length in ``lengths`` less its part's shared length. That is the width of the members' pass
    (its attention mask and key/value cache), the same count :func:`dialeval.models.batching.length_sorted_batches`
    gives a batch of whole items (rows × longest)."""
    longest_own = max(lengths[i] - shared for shared, members in pack for i in members)
    n_members = sum(len(members) for _, members in pack)
    return n_members * (max(shared for shared, _ in pack) + longest_own)


def pack_groups(groups: Sequence[Group], rows_per_pack: int, max_tokens: int | None = None,
                lengths: Sequence[int] | None = None, *, whole_groups: bool = False) -> list[list[Group]]:
    """Groups packed, longest shared prefix first, so a pack holds at most ``rows_per_pack`` members; a
    larger group is split into parts of that size, each part running the prefix again. With ``max_tokens``
    (and ``lengths[i]``, item i's tokens) a pack also stays within that :func:`pack_cost`: a part over it is
    split into smaller chunks, down to one member, which runs alone however long it is. Both cuts are
    :func:`dialeval.models.batching.greedy_batches`. ``whole_groups=True`` never splits a group: one over either
    bound forms a pack alone, for a caller that runs its prefix once and its members in passes within the
    bounds (:func:`member_chunks`)."""
    if max_tokens is not None and lengths is None:
        raise ValueError("`max_tokens` needs `lengths` (every item's token count).")
    if whole_groups:
        parts = [(shared, list(members)) for shared, members in groups]
    else:
        parts = [(shared, members[k:k + rows_per_pack]) for shared, members in groups
                 for k in range(0, len(members), rows_per_pack)]
    if max_tokens is not None and not whole_groups:
        parts = [(shared, chunk) for shared, members in parts
                 for chunk in greedy_batches(members, lambda c, s=shared: pack_cost([(s, c)], lengths), max_tokens)]
    parts.sort(key=lambda g: (-g[0], g[1][0]))
    return greedy_batches(parts, lambda pack: pack_cost(pack, lengths), max_tokens, max_rows=rows_per_pack,
                          rows=lambda part: len(part[1]))


def member_chunks(pack: Sequence[Group], lengths: Sequence[int], rows_per_pass: int,
                  max_tokens: int | None = None) -> list[list[tuple[int, int, int]]]:
    """A pack's members ``(group index, item, shared)`` cut into passes after its groups' prefix cache: at most
    ``rows_per_pass`` rows and ``max_tokens`` padded tokens a pass, rows × (longest shared prefix in the pack +
    longest own suffix in the pass), the width of that pass's mask (one member alone always fits)."""
    width = max(shared for shared, _ in pack)
    members = [(g, i, shared) for g, (shared, ms) in enumerate(pack) for i in ms]
    return greedy_batches(members, lambda c: len(c) * (width + max(lengths[i] - s for _, i, s in c)), max_tokens,
                          max_rows=rows_per_pass)
