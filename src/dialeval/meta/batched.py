"""Correlations of many resamples at once: each function takes ``(resamples, items)`` matrices and returns one
value per row, the same value as the one-row functions of :mod:`dialeval.meta.stats` (average ranks, Pearson r,
Spearman ρ, Kendall τ-b as ``scipy.stats.kendalltau`` computes it). Rows are assumed finite unless a mask says
which entries to use (:func:`masked_rows`); no I/O, no randomness."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

RowStatistic = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: ``(x_base, x_index, y_base, y_index[, valid])`` → one value per row of the index matrices.
IndexedStatistic = Callable[..., np.ndarray]
#: An indexed form that may decline (``None``: compute row by row).
IndexedForm = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], "np.ndarray | None"]

#: Elements of one resample block (rows × items); a block's temporaries stay near 8 bytes × this × ~12.
BLOCK_ELEMENTS = 1_000_000


def block_rows(n_items: int, n_resamples: int) -> int:
    """How many resamples of ``n_items`` items to process at once (at least 1, at most ``n_resamples``)."""
    return max(1, min(n_resamples, BLOCK_ELEMENTS // max(1, n_items)))


def blocks(n_resamples: int, n_items: int) -> Iterator[int]:
    """The sizes of consecutive blocks of resamples (:func:`block_rows` each, the last one smaller)."""
    step = block_rows(n_items, n_resamples)
    for start in range(0, n_resamples, step):
        yield min(step, n_resamples - start)


def _run_starts(sorted_rows: np.ndarray) -> np.ndarray:
    """For each position of row-sorted values, the position where its run of equal values starts."""
    m = sorted_rows.shape[1]
    new_run = np.ones(sorted_rows.shape, dtype=bool)
    new_run[:, 1:] = sorted_rows[:, 1:] != sorted_rows[:, :-1]
    return np.maximum.accumulate(np.where(new_run, np.arange(m), 0), axis=1)


def average_ranks_rows(a: np.ndarray) -> np.ndarray:
    """1-based average ranks within each row (ties share the mean of their positions), as
    :func:`dialeval.meta.stats.average_ranks` of each row."""
    m = a.shape[1]
    order = np.argsort(a, axis=1)  # the order within a tie does not change its average rank
    start = _run_starts(np.take_along_axis(a, order, axis=1))
    is_end = np.ones(a.shape, dtype=bool)  # a run ends where the next one starts
    is_end[:, :-1] = start[:, 1:] != start[:, :-1]
    end = np.minimum.accumulate(np.where(is_end, np.arange(1, m + 1), m)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(a.shape, dtype=float)
    np.put_along_axis(ranks, order, (start + end + 1) / 2.0, axis=1)
    return ranks


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r = Σ dx dy / √(Σ dx² Σ dy²) per row (d = deviation from the row mean); NaN where a row is
    constant; clipped to [−1, 1]."""
    dx = x - x.mean(axis=1, keepdims=True)
    dy = y - y.mean(axis=1, keepdims=True)
    denom = np.sqrt(np.vecdot(dx, dx) * np.vecdot(dy, dy))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.clip(np.vecdot(dx, dy) / denom, -1.0, 1.0)
    return np.where(denom == 0.0, np.nan, r)


def dense_codes(base: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's 0-based rank among the distinct values of ``base``, and how many distinct values there are."""
    values, codes = np.unique(base, return_inverse=True)
    return codes.reshape(-1), len(values)


def ranks_from_codes(codes: np.ndarray, n_codes: int, valid: np.ndarray | None = None) -> np.ndarray:
    """Average ranks within each row of ``codes`` (dense codes of the values, :func:`dense_codes`), counting only
    the ``valid`` entries: rank = (values below) + (ties + 1)/2, from one ``bincount`` of all rows (no sort)."""
    r, m = codes.shape
    flat = (codes + (np.arange(r) * n_codes)[:, None]).ravel()
    count = np.bincount(flat, weights=None if valid is None else valid.ravel(), minlength=r * n_codes)
    total = np.cumsum(count)
    row_start = np.repeat(np.concatenate(([0], total[n_codes - 1::n_codes][:-1])), n_codes)
    twice = 2 * (total - row_start) - count + 1  # 2·(values below) + ties + 1
    return (twice[flat] / 2.0).reshape(r, m)


def _pearson_of_ranks(rx: np.ndarray, ry: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Pearson r of ranks over the valid entries of each row. Ranks are multiples of ½, so every sum here is
    exact and the value does not depend on the order of summation."""
    if valid is None:
        return pearson_rows(rx, ry)
    k = valid.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        dx = np.where(valid, rx - np.where(valid, rx, 0.0).sum(axis=1, keepdims=True) / k, 0.0)
        dy = np.where(valid, ry - np.where(valid, ry, 0.0).sum(axis=1, keepdims=True) / k, 0.0)
        denom = np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
        r = np.clip((dx * dy).sum(axis=1) / denom, -1.0, 1.0)
    return np.where(denom == 0.0, np.nan, r)


def spearman_indexed(xb: np.ndarray, xi: np.ndarray, yb: np.ndarray, yi: np.ndarray,
                     valid: np.ndarray | None = None) -> np.ndarray:
    """Spearman ρ of ``xb[xi]`` against ``yb[yi]`` per row (over its ``valid`` entries)."""
    return _pearson_of_ranks(_ranks(xb, xi, valid), _ranks(yb, yi, valid), valid)


def _ranks(base: np.ndarray, idx: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Average ranks of ``base[idx]`` per row: counted from the codes of ``base`` (linear in the rows × codes),
    or sorted row by row when the codes far outnumber a row's entries (the same ranks either way)."""
    codes, n_codes = dense_codes(base)
    if valid is None and n_codes > 4 * idx.shape[1]:
        return average_ranks_rows(base[idx])
    return ranks_from_codes(codes[idx], n_codes, valid)


def pearson_indexed(xb: np.ndarray, xi: np.ndarray, yb: np.ndarray, yi: np.ndarray,
                    valid: np.ndarray | None = None) -> np.ndarray:
    """Pearson r of ``xb[xi]`` against ``yb[yi]`` per row (over its ``valid`` entries, compacted; NaN for a row
    with fewer than 3 of them)."""
    if valid is None:
        return pearson_rows(xb[xi], yb[yi])
    return masked_rows(pearson_rows, xb[xi], yb[yi], valid, min_count=3)


def _tied_pairs(sorted_rows: np.ndarray) -> np.ndarray:
    """Σ c(c−1)/2 over the runs of equal values of each sorted row: the pairs tied with each other."""
    return (np.arange(sorted_rows.shape[1]) - _run_starts(sorted_rows)).sum(axis=1)


def inversions_rows(a: np.ndarray) -> np.ndarray:
    """Per row of non-negative integers, the pairs i < j with a[i] > a[j]. A pair is counted at the highest bit
    where its two values differ: there both share the higher bits (one group after a stable sort by them) and
    the earlier one has the bit set and the later one not."""
    total = np.zeros(a.shape[0], dtype=np.int64)
    top = int(a.max()).bit_length() if a.size else 0
    narrow = np.uint16 if (int(a.max()) >> 1 if a.size else 0) < 2 ** 16 else np.int64
    for b in range(top - 1, -1, -1):
        if b == top - 1:  # no higher bits: the whole row is one group, in its order
            seq, first = a, np.zeros(a.shape, dtype=bool)
        else:
            seq = np.take_along_axis(a, np.argsort((a >> (b + 1)).astype(narrow), axis=1, kind="stable"), axis=1)
            group = seq >> (b + 1)
            first = np.zeros(a.shape, dtype=bool)
            first[:, 1:] = group[:, 1:] != group[:, :-1]
        first[:, 0] = True
        bit = (seq >> b) & 1
        before = np.cumsum(bit, axis=1) - bit  # ones strictly before, over the whole row
        base = np.maximum.accumulate(np.where(first, before, 0), axis=1)  # ones before the group
        total += np.where(bit == 0, before - base, 0).sum(axis=1)
    return total


def kendall_indexed(xb: np.ndarray, xi: np.ndarray, yb: np.ndarray, yi: np.ndarray,
                    valid: np.ndarray | None = None) -> np.ndarray:
    """Kendall's τ-b of ``xb[xi]`` against ``yb[yi]`` per row, in ``scipy.stats.kendalltau``'s arithmetic: with
    D discordant pairs, T = n(n−1)/2, X and Y the pairs tied in x and in y and J those tied in both,
    τ = (T − X − Y + J − 2D) / √(T − X) / √(T − Y); NaN when x or y is constant. Entries that are not
    ``valid`` get a code above every value in both (last after sorting, never discordant) and their own ties
    are taken back out."""
    (cx, nx), (cy, ny) = dense_codes(xb), dense_codes(yb)
    xc, yc = cx[xi], cy[yi]
    n = np.full(xc.shape[0], xc.shape[1], dtype=np.int64)
    if valid is not None:
        xc, yc, n = np.where(valid, xc, nx), np.where(valid, yc, ny), valid.sum(axis=1)
    order = np.argsort(xc * (ny + 1) + yc, axis=1)  # by x, then y: a pair tied in x is never discordant
    xs, ys = np.take_along_axis(xc, order, axis=1), np.take_along_axis(yc, order, axis=1)
    dis = inversions_rows(ys)
    left = xc.shape[1] - n
    own = left * (left - 1) // 2  # ties among the entries left out
    xtie, ytie = _tied_pairs(xs) - own, _tied_pairs(np.sort(yc, axis=1)) - own
    ntie = _tied_pairs(xs * (ny + 1) + ys) - own
    tot = n * (n - 1) // 2
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (tot - xtie - ytie + ntie - 2 * dis) / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    tau = np.minimum(1.0, np.maximum(-1.0, tau))
    return np.where((xtie == tot) | (ytie == tot), np.nan, tau)


def masked_rows(statistic: RowStatistic, x: np.ndarray, y: np.ndarray, valid: np.ndarray, *,
                min_count: int) -> np.ndarray:
    """``statistic`` of each row on its ``valid`` entries only (kept in order); NaN for a row with fewer than
    ``min_count`` of them unless every entry is valid. Rows are grouped by their count of valid entries, so
    each group is one block of equal-length rows."""
    out = np.full(x.shape[0], np.nan)
    counts = valid.sum(axis=1)
    full = counts == x.shape[1]
    if full.any():
        out[full] = statistic(x[full], y[full])
    rest = np.flatnonzero(~full & (counts >= min_count))
    if rest.size:
        order = np.argsort(~valid[rest], axis=1, kind="stable")  # valid entries first, in their order
        xc, yc = np.take_along_axis(x[rest], order, axis=1), np.take_along_axis(y[rest], order, axis=1)
        for k in np.unique(counts[rest]):
            pick = counts[rest] == k
            out[rest[pick]] = statistic(xc[pick, :k], yc[pick, :k])
    return out


def complete_indexed(statistic: IndexedStatistic, xb: np.ndarray, xi: np.ndarray, yb: np.ndarray,
                     yi: np.ndarray) -> np.ndarray | None:
    """Row-wise :func:`dialeval.meta.stats.complete_pairs`: ``statistic`` of ``xb[xi]`` against ``yb[yi]`` on the
    entries whose ``y`` is defined (all of a row when none is NaN; NaN for a row with fewer than 3 otherwise).
    ``None`` when ``xb`` is not finite or ``yb`` holds an infinity (the caller then computes row by row)."""
    if not np.isfinite(xb).all() or np.isinf(yb).any():
        return None
    valid = ~np.isnan(yb)[yi]
    if valid.all():
        return statistic(xb, xi, yb, yi)
    out = statistic(xb, xi, yb, yi, valid)
    count = valid.sum(axis=1)
    return np.where((count < 3) & (count < xi.shape[1]), np.nan, out)


def plain_indexed(statistic: IndexedStatistic, xb: np.ndarray, xi: np.ndarray, yb: np.ndarray,
                  yi: np.ndarray) -> np.ndarray | None:
    """``statistic`` of ``xb[xi]`` against ``yb[yi]`` per row, for finite values only (else ``None``)."""
    if not (np.isfinite(xb).all() and np.isfinite(yb).all()):
        return None
    return statistic(xb, xi, yb, yi)


def on_values(statistic: IndexedForm, x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """An indexed form applied to two ``(rows, items)`` value matrices."""
    idx = np.arange(x.size).reshape(x.shape)
    return statistic(x.reshape(-1), idx, y.reshape(-1), idx)


def masked_means(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the means of ``x`` and of ``y`` over the entries where ``y`` is defined (NaN where none is)."""
    valid = ~np.isnan(y)
    return (masked_rows(lambda a, b: a.mean(axis=1), x, y, valid, min_count=1),
            masked_rows(lambda a, b: b.mean(axis=1), x, y, valid, min_count=1))
