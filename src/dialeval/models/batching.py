"""Batches for model passes, as pure functions: one greedy batcher (:func:`greedy_batches`, a cost function and
row/cost bounds) for length-sorted batches and shared-prefix packs, and :func:`least_padding_cuts`, the partition
of a longest-first order where padding plus per-call cost is least."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def greedy_batches(items: Sequence[T], cost: Callable[[list[T]], float], max_cost: float | None = None, *,
                   max_rows: int | None = None, rows: Callable[[T], int] = lambda _: 1) -> list[list[T]]:
    """``items``, in their order, cut into consecutive batches: an item joins the current batch while the batch
    then holds at most ``max_rows`` rows (``rows(item)`` each) and, with ``max_cost``, ``cost(batch) ≤ max_cost``;
    otherwise it starts the next one. An item over either bound alone forms a batch of its own. The one batcher
    of :func:`length_sorted_batches` and the shared-prefix packs (:func:`dialeval.models.shared_prefix.pack_groups`)."""
    batches: list[list[T]] = []
    current: list[T] = []
    held = 0
    for item in items:
        n = rows(item)
        if current and ((max_rows is not None and held + n > max_rows)
                        or (max_cost is not None and cost([*current, item]) > max_cost)):
            batches.append(current)
            current, held = [], 0
        current.append(item)
        held += n
    if current:
        batches.append(current)
    return batches


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int = 32, max_tokens: int | None = None, call_cost: int | None = None
) -> list[list[int]]:
    """Indices grouped into batches of similar length, longest first (less padding, early OOM).

    A batch holds at most ``batch_size`` items and, with ``max_tokens``, at most that many padded tokens
    (``len(batch) * longest``); an item longer than ``max_tokens`` forms a batch of its own. ``None``
    ``call_cost`` fills each batch in turn; with ``call_cost`` (the fixed cost of one call, in padded tokens)
    the longest-first order is cut where Σ (rows × longest + ``call_cost``) is least
    (:func:`least_padding_cuts`), so one long item no longer pads a whole batch of short ones.
    """
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be ≥ 1, got {batch_size}.")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    if call_cost is not None:
        return least_padding_cuts(order, lengths, batch_size, max_tokens, call_cost)
    return greedy_batches(order, lambda batch: len(batch) * lengths[batch[0]], max_tokens, max_rows=batch_size)


def least_padding_cuts(order: list[int], lengths: Sequence[int], batch_size: int, max_tokens: int | None,
                       call_cost: int) -> list[list[int]]:
    """``order`` (longest first) cut into consecutive batches of at most ``batch_size`` rows and ``max_tokens``
    padded tokens (one item alone always fits) minimising Σ (rows × longest + ``call_cost``): a shortest-path
    over the cut points, O(n · ``batch_size``). The padded tokens a batch runs are its rows times its first
    (longest) item's length."""
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[i]: least cost of the first i items
    cut = [0] * (n + 1)
    for i in range(n):  # a batch starting at item i
        if best[i] == float("inf"):
            continue
        width = lengths[order[i]]
        for j in range(i + 1, min(n, i + batch_size) + 1):
            cells = (j - i) * width
            if max_tokens is not None and cells > max_tokens and j > i + 1:
                break
            cost = best[i] + cells + call_cost
            if cost < best[j]:
                best[j], cut[j] = cost, i
    batches: list[list[int]] = []
    j = n
    while j > 0:
        batches.append(order[cut[j]:j])
        j = cut[j]
    return batches[::-1]
