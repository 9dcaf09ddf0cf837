"""Pure statistics for meta-evaluation: Pearson r, Spearman ρ (Pearson r of average ranks, as
``scipy.stats.spearmanr``), the optimal classification accuracy (best single threshold, Tevet & Berant
2021), ROC AUC (Mann–Whitney) and seeded bootstrap intervals (subsampling without replacement, percentile
interval), and paired tests of two metrics on the same rows (Williams' test for dependent correlations, a
paired bootstrap). Arrays in, numbers out; no I/O. The resampling functions compute many resamples at once where
the statistic has a row-wise form (:mod:`dialeval.meta.batched`: Pearson, Spearman, Kendall and their
:func:`complete_pairs`), drawing the same indices, block by block, as a resample-by-resample loop would."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from dialeval.meta import batched


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks with ties given their average rank (``scipy.stats.rankdata(method="average")``)."""
    a = np.asarray(values, dtype=float)
    if a.ndim != 1:
        raise ValueError(f"expected a 1-D sequence, got shape {a.shape}.")
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    # start index of each run of equal values
    new_run = np.concatenate(([True], sorted_a[1:] != sorted_a[:-1]))
    run_id = np.cumsum(new_run) - 1
    starts = np.flatnonzero(new_run)
    ends = np.concatenate((starts[1:], [len(a)]))
    avg = (starts + ends + 1) / 2.0  # mean of 1-based positions start+1..end
    ranks = np.empty(len(a), dtype=float)
    ranks[order] = avg[run_id]
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson r = cov(x, y) / (σx σy); NaN when either side is constant."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    dx, dy = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(np.dot(dx, dx)) * float(np.dot(dy, dy)))
    if denom == 0.0:
        return float("nan")
    return max(-1.0, min(1.0, float(np.dot(dx, dy)) / denom))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman ρ = Pearson r of the average ranks (ties averaged, as in ``scipy.stats.spearmanr``)."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} scores but {len(y)} targets.")
    if len(x) < 2:
        raise ValueError("spearman needs at least 2 pairs.")
    return pearson(average_ranks(x), average_ranks(y))


def monotone_function(x: Sequence[float], y: Sequence[float]) -> bool:
    """Whether ``x`` is a non-constant monotone function of ``y`` (either direction) on the pairs where ``y`` is
    defined: equal ``y`` give equal ``x``, and ``x`` never steps against the order of ``y``, so that |ρ| = 1
    (or is as high as ties allow) by construction rather than by measurement."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~np.isnan(b)
    a, b = a[keep], b[keep]
    if len(a) < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return False
    order = np.lexsort((a, b))
    xs, ys = a[order], b[order]
    same = ys[1:] == ys[:-1]
    if np.any(same & (xs[1:] != xs[:-1])):
        return False
    step = np.diff(xs)[~same]
    return bool(np.all(step >= 0) or np.all(step <= 0))


def best_threshold_accuracy(scores: Sequence[float], labels: Sequence[float]) -> tuple[float, float]:
    """Optimal classification accuracy (Tevet & Berant 2021): the best accuracy of a single threshold t
    that puts scores ≤ t in one class and scores > t in the other, either way round. Returns
    ``(accuracy, t)``; ``labels`` must hold exactly two distinct values."""
    s = np.asarray(scores, dtype=float)
    lab = np.asarray(labels)
    classes = np.unique(lab)
    if len(classes) != 2:
        raise ValueError(f"best_threshold_accuracy needs two label values, got {classes.tolist()}.")
    if len(s) != len(lab):
        raise ValueError(f"{len(s)} scores but {len(lab)} labels.")
    positive = lab == classes[1]
    order = np.argsort(s, kind="mergesort")
    s_sorted, pos_sorted = s[order], positive[order]
    # cut after position i (0..n-1): everything ≤ s_sorted[i] is "low"; only cut at the end of a tie run
    cut_ok = np.concatenate((s_sorted[1:] != s_sorted[:-1], [True]))
    pos_low = np.cumsum(pos_sorted)  # positives at or below the cut
    low = np.arange(1, len(s) + 1)
    n_pos = int(positive.sum())
    # rule "high = positive": correct = negatives at/below + positives above
    correct = (low - pos_low) + (n_pos - pos_low)
    acc = correct / len(s)
    acc = np.maximum(acc, 1.0 - acc)
    acc = np.where(cut_ok, acc, -1.0)
    best = int(np.argmax(acc))
    return float(acc[best]), float(s_sorted[best])


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Area under the ROC curve = P(score of a positive > score of a negative) + ½ P(tie), i.e. the
    Mann–Whitney U / (n⁺ n⁻) (Hanley & McNeil 1982). 0.5 = no separation; 1 = every positive above."""
    pos, neg = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError(f"auc needs positives and negatives, got {len(pos)} and {len(neg)}.")
    ranks = average_ranks(np.concatenate([pos, neg]))
    u = ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2.0
    return float(u / (len(pos) * len(neg)))


def subsample_indices(n: int, size: int, n_resamples: int, seed: int) -> np.ndarray:
    """``(n_resamples, size)`` row indices, each row a subsample drawn without replacement (seeded)."""
    if not 2 <= size <= n:
        raise ValueError(f"subsample size must be between 2 and {n}, got {size}.")
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n_resamples, n)), axis=1)[:, :size]


def bootstrap_interval(statistic: Callable[..., float], columns: Sequence[Sequence[float]], *,
                       n_resamples: int = 1000, fraction: float = 0.5, seed: int = 0,
                       confidence: float = 0.95) -> dict[str, Any]:
    """Percentile interval of ``statistic(*columns)`` over ``n_resamples`` subsamples of
    ``floor(fraction · n)`` rows drawn without replacement. Resamples where the statistic is undefined
    (NaN, e.g. a constant subsample) are left out and counted in ``undefined``."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be ≥ 1, got {n_resamples}.")
    arrays = [np.asarray(c) for c in columns]
    n = len(arrays[0])
    size = max(2, int(fraction * n))
    if not 2 <= size <= n:
        raise ValueError(f"subsample size must be between 2 and {n}, got {size}.")
    rng = np.random.default_rng(seed)  # the draws of subsample_indices(n, size, n_resamples, seed), block by block
    values = np.concatenate([resample_values(statistic, arrays, np.argsort(rng.random((rows, n)), axis=1)[:, :size])
                             for rows in batched.blocks(n_resamples, n)])
    return _percentile(values, confidence)


def _percentile(values: np.ndarray, confidence: float) -> dict[str, Any]:
    """The percentile interval of the defined values and the count of undefined (NaN) ones."""
    ok = values[~np.isnan(values)]
    alpha = (1.0 - confidence) / 2.0
    low, high = (np.quantile(ok, [alpha, 1.0 - alpha]) if len(ok) else (float("nan"), float("nan")))
    return {"low": float(low), "high": float(high), "undefined": int(len(values) - len(ok))}


def row_form(statistic: Callable[..., float]) -> batched.IndexedForm | None:
    """The form of ``statistic`` that computes many resamples at once from index matrices
    (:mod:`dialeval.meta.batched`), or ``None`` when it has none (it is then computed resample by resample)."""
    found = getattr(statistic, "rows", None)
    if found is not None:
        return found
    try:
        return _ROW_FORMS.get(statistic)
    except TypeError:  # unhashable
        return None


def indexed_values(statistic: Callable[[np.ndarray, np.ndarray], float], xb: np.ndarray, xi: np.ndarray,
                   yb: np.ndarray, yi: np.ndarray) -> np.ndarray:
    """``statistic(xb[row_x], yb[row_y])`` for each pair of rows of the index matrices ``xi`` and ``yi``: all at
    once where it has a row-wise form (:func:`row_form`), else one by one."""
    fast = row_form(statistic)
    if fast is not None:
        got = fast(np.asarray(xb, dtype=float), xi, np.asarray(yb, dtype=float), yi)
        if got is not None:
            return np.asarray(got, dtype=float)
    return np.array([statistic(xb[rx], yb[ry]) for rx, ry in zip(xi, yi)], dtype=float)


def resample_values(statistic: Callable[..., float], arrays: Sequence[np.ndarray], idx: np.ndarray) -> np.ndarray:
    """``statistic(*(a[row] for a in arrays))`` for each row of ``idx`` (:func:`indexed_values` for two arrays)."""
    if len(arrays) == 2 and row_form(statistic) is not None:
        return indexed_values(statistic, arrays[0], idx, arrays[1], idx)
    return np.array([statistic(*(a[row] for a in arrays)) for row in idx], dtype=float)


# --------------------------------------------------------------------------------------------------
# Paired tests: is metric A's statistic different from metric B's on the same rows?
# --------------------------------------------------------------------------------------------------


def williams_test(r12: float, r13: float, r23: float, n: int) -> dict[str, float]:
    """Williams' test for two dependent correlations sharing variable 1 (Williams 1959; Steiger 1980, eq. 7;
    as WMT uses it, Graham & Baldwin 2014): H0 ρ12 = ρ13, with 1 = the human target, 2 and 3 = two metrics
    scored on the same n rows and r23 their correlation with each other,

        t = (r12 − r13) √((n−1)(1+r23)) / √(2 ((n−1)/(n−3)) |R| + r̄² (1−r23)³),
        |R| = 1 − r12² − r13² − r23² + 2 r12 r13 r23,  r̄ = (r12 + r13)/2,

    t-distributed with n − 3 degrees of freedom. Returns ``t`` and the two-sided ``p_value``."""
    from scipy.stats import t as t_dist

    if n <= 3:
        raise ValueError(f"Williams' test needs more than 3 rows, got {n}.")
    if not all(math.isfinite(r) and -1 <= r <= 1 for r in (r12, r13, r23)):
        raise ValueError(f"Williams' test needs correlations in [-1, 1], got {r12}, {r13}, {r23}.")
    det = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    denom = 2 * det * (n - 1) / (n - 3) + rbar ** 2 * (1 - r23) ** 3
    if denom <= 0:  # identical metrics (r23 = 1, r12 = r13): no evidence of a difference
        return {"t": 0.0, "p_value": 1.0}
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denom)
    return {"t": float(t), "p_value": float(min(1.0, 2 * t_dist.sf(abs(t), n - 3)))}


def paired_bootstrap(statistic: Callable[[np.ndarray, np.ndarray], float], a: Sequence[float], b: Sequence[float],
                     target: Sequence[float], *, n_resamples: int = 1000, seed: int = 0,
                     confidence: float = 0.95) -> dict[str, Any]:
    """Paired bootstrap of ``d = statistic(a, target) − statistic(b, target)`` (Efron & Tibshirani 1993,
    §16.4; Koehn 2004): rows drawn with replacement, the same rows for both metrics. The two-sided p-value
    tests d = 0 by the shifted bootstrap distribution, ``p = (1 + #{|d* − d| ≥ |d|}) / (1 + B)`` over the
    B resamples where both statistics are defined; the percentile interval of d* is returned as well."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be ≥ 1, got {n_resamples}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
    x, y, t = (np.asarray(v, dtype=float) for v in (a, b, target))
    if not len(x) == len(y) == len(t):
        raise ValueError(f"paired_bootstrap: {len(x)}, {len(y)} and {len(t)} values; they must align.")
    observed = statistic(x, t) - statistic(y, t)
    rng, n = np.random.default_rng(seed), len(t)
    parts = []
    for rows in batched.blocks(n_resamples, n):  # the draws of one (n_resamples, n) matrix, block by block
        idx = rng.integers(0, n, size=(rows, n))
        parts.append(resample_values(statistic, [x, t], idx) - resample_values(statistic, [y, t], idx))
    d = np.concatenate(parts)
    d = d[~np.isnan(d)]
    if not len(d) or math.isnan(observed):
        return {"difference": float(observed), "p_value": float("nan"), "ci_low": float("nan"),
                "ci_high": float("nan"), "resamples": int(len(d))}
    p = (1 + int(np.sum(np.abs(d - observed) >= abs(observed)))) / (1 + len(d))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(d, [alpha, 1.0 - alpha])
    return {"difference": float(observed), "p_value": float(p), "ci_low": float(low), "ci_high": float(high),
            "resamples": int(len(d))}


def mean_interval(values: Sequence[float], *, n_resamples: int = 1000, seed: int = 0,
                  confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (rows drawn with replacement, seeded):
    ``scipy.stats.bootstrap``; a constant sample gives its value at both ends."""
    from scipy.stats import bootstrap

    x = np.asarray(values, dtype=float)
    if len(x) < 2 or np.all(x == x[0]):
        return float(x.mean()), float(x.mean())
    res = bootstrap((x,), np.mean, n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                    rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


# --------------------------------------------------------------------------------------------------
# Correlations beyond Spearman, system level, significance clusters, the mean over datasets
# --------------------------------------------------------------------------------------------------


def kendall(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b (ties in either variable corrected; Kendall 1945) = ``scipy.stats.kendalltau``; NaN when
    either side is constant."""
    from scipy.stats import kendalltau

    if len(x) != len(y):
        raise ValueError(f"kendall: {len(x)} scores but {len(y)} targets.")
    return float(kendalltau(np.asarray(x, dtype=float), np.asarray(y, dtype=float)).statistic)


def complete_pairs(statistic: Callable[[np.ndarray, np.ndarray], float]) -> Callable[[np.ndarray, np.ndarray], float]:
    """``statistic`` on the rows whose target is defined (a NaN target, e.g. an item every rater answered "N/A",
    is left out); the same value as ``statistic`` when no target is NaN."""
    def on_complete(x: np.ndarray, y: np.ndarray) -> float:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        keep = ~np.isnan(y)
        if keep.all():
            return statistic(x, y)
        return statistic(x[keep], y[keep]) if keep.sum() >= 3 else float("nan")

    on_complete.__name__ = getattr(statistic, "__name__", "statistic")
    base = _INDEXED.get(statistic)
    if base is not None:
        on_complete.rows = functools.partial(batched.complete_indexed, base)  # type: ignore[attr-defined]
    return on_complete


_INDEXED: dict[Callable[..., float], batched.IndexedStatistic] = {
    pearson: batched.pearson_indexed, spearman: batched.spearman_indexed, kendall: batched.kendall_indexed}
_ROW_FORMS = {fn: functools.partial(batched.plain_indexed, base) for fn, base in _INDEXED.items()}


def system_means(scores: Sequence[float], human: Sequence[float], systems: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per system (sorted names): the mean metric score and the mean human score over its items (items with a
    NaN human score left out of both means)."""
    s, h = np.asarray(scores, dtype=float), np.asarray(human, dtype=float)
    names = sorted(set(systems))
    sys_arr = np.asarray(systems, dtype=object)
    ms, mh = [], []
    for name in names:
        keep = (sys_arr == name) & ~np.isnan(h)
        ms.append(float(s[keep].mean()) if keep.any() else float("nan"))
        mh.append(float(h[keep].mean()) if keep.any() else float("nan"))
    return names, np.array(ms), np.array(mh)


def system_level(statistic: Callable[[np.ndarray, np.ndarray], float], scores: Sequence[float],
                 human: Sequence[float], systems: Sequence[str]) -> float:
    """System-level correlation (as in WMT and mt-metrics-eval): ``statistic`` of the per-system mean metric
    score against the per-system mean human score (:func:`system_means`)."""
    _, ms, mh = system_means(scores, human, systems)
    keep = ~(np.isnan(ms) | np.isnan(mh))
    return statistic(ms[keep], mh[keep]) if keep.sum() >= 3 else float("nan")


SYSTEM_RESAMPLING = ("systems", "systems and items")  #: what a system-level interval resamples


def system_level_interval(statistic: Callable[[np.ndarray, np.ndarray], float], scores: Sequence[float],
                          human: Sequence[float], systems: Sequence[str], *, n_resamples: int = 1000, seed: int = 0,
                          confidence: float = 0.95, resample: str = "systems and items") -> dict[str, Any]:
    """Percentile interval of :func:`system_level` ``(statistic, …)`` over resamples of the *systems*: each
    resample draws k of the k systems with replacement and, with ``resample="systems and items"``, each drawn
    system's items with replacement within it (a two-level bootstrap, Davison & Hinkley 1997, §3.8; mt-metrics-eval
    resamples systems, items or both); ``"systems"`` keeps each system's mean as it is. The statistic is then taken
    over the k drawn systems' means (items with a NaN human score left out of both means). Draws: the
    ``(n_resamples, k)`` system picks first, then for each system (sorted names) one item row per slot that picked
    it, in row-major order of the picks."""
    if resample not in SYSTEM_RESAMPLING:
        raise ValueError(f"resample must be one of {SYSTEM_RESAMPLING}, got {resample!r}.")
    s, h = np.asarray(scores, dtype=float), np.asarray(human, dtype=float)
    g = np.asarray(systems, dtype=object)
    strata = [np.flatnonzero(g == name) for name in sorted(set(systems))]
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(strata), size=(n_resamples, len(strata)))
    ms, mh = np.empty(pick.size), np.empty(pick.size)
    for j, rows in enumerate(strata):
        slots = np.flatnonzero(pick.ravel() == j)
        if resample == "systems":
            ms[slots], mh[slots] = (m[0] for m in batched.masked_means(s[rows][None, :], h[rows][None, :]))
            continue
        done = 0
        for count in batched.blocks(len(slots), len(rows)):
            drawn = rows[rng.integers(0, len(rows), size=(count, len(rows)))]
            ms[slots[done:done + count]], mh[slots[done:done + count]] = batched.masked_means(s[drawn], h[drawn])
            done += count
    ms, mh = ms.reshape(pick.shape), mh.reshape(pick.shape)
    keep = ~(np.isnan(ms) | np.isnan(mh))
    fast = row_form(statistic)
    if len(strata) < 3:
        values = np.full(n_resamples, np.nan)
    elif fast is not None:
        values = batched.masked_rows(lambda a, b: batched.on_values(fast, a, b), ms, mh, keep, min_count=3)
    else:
        values = np.array([statistic(a[k], b[k]) if k.sum() >= 3 else np.nan for a, b, k in zip(ms, mh, keep)])
    return _percentile(values, confidence)


def paired_permutation(statistic: Callable[[np.ndarray, np.ndarray], float], a: Sequence[float], b: Sequence[float],
                       target: Sequence[float], *, n_resamples: int = 1000, seed: int = 0) -> dict[str, float]:
    """Paired permutation test of d = statistic(a, target) − statistic(b, target) over items (as mt-metrics-eval
    compares metrics): each resample swaps the two metrics' scores of every item with probability ½
    (``scipy.stats.permutation_test``, ``permutation_type="samples"``, seeded). Each metric's scores are
    standardised first (z-scores; Deutsch et al. 2021), so that swapping compares like with like; the
    correlations themselves do not change (Pearson, Spearman and Kendall are invariant to it). Returns the
    two-sided ``p_value`` and ``p_one_sided``, the p-value of the alternative in the observed direction
    (d > 0: ``alternative="greater"``, else ``"less"``; scipy's own formula on the same null distribution)."""
    x, y, t = (np.asarray(v, dtype=float) for v in (a, b, target))
    if not len(x) == len(y) == len(t):
        raise ValueError(f"paired_permutation: {len(x)}, {len(y)} and {len(t)} values; they must align.")
    x, y = ((v - v.mean()) / (v.std() or 1.0) for v in (x, y))
    observed = statistic(x, t) - statistic(y, t)
    if math.isnan(observed):
        return {"difference": observed, "p_value": float("nan"), "p_one_sided": float("nan")}
    exact = 2 ** len(t) <= n_resamples  # scipy then enumerates every swap pattern (and adds no +1)
    parts, both, items = [], np.concatenate([x, y]), np.arange(len(t))
    for swap in _swap_patterns(len(t), n_resamples, seed, exact):
        ti = np.broadcast_to(items, swap.shape)
        u, v = np.where(swap, items + len(t), items), np.where(swap, items, items + len(t))  # indices into both
        parts.append(indexed_values(statistic, both, u, t, ti) - indexed_values(statistic, both, v, t, ti))
    null = np.concatenate(parts)
    gamma = abs(np.finfo(float).eps * 100 * observed)  # scipy's tolerance for ties with the observed value
    adjust = 0 if exact else 1
    less, greater = ((int(np.count_nonzero(hit)) + adjust) / (len(null) + adjust)
                     for hit in (null <= observed + gamma, null >= observed - gamma))
    hits = null >= observed - gamma if observed > 0 else null <= observed + gamma
    one_sided = min(1.0, (int(hits.sum()) + 1) / (len(null) + 1))
    return {"difference": float(observed), "p_value": float(np.clip(min(less, greater) * 2, 0.0, 1.0)),
            "p_one_sided": float(one_sided)}


def _swap_patterns(n: int, n_resamples: int, seed: int, exact: bool) -> Iterator[np.ndarray]:
    """Blocks of ``(resamples, n)`` booleans, True where an item's two scores are swapped: every pattern in
    ``itertools.product`` order when ``exact``, else ``scipy.stats.permutation_test``'s draws for an integer
    ``random_state`` (a legacy ``RandomState``; an item is swapped where its second uniform is the smaller)."""
    if exact:
        yield np.array(list(itertools.product((False, True), repeat=n)), dtype=bool).reshape(2 ** n, n)
        return
    rng = np.random.RandomState(seed)
    for rows in batched.blocks(n_resamples, 2 * n):
        u = rng.random_sample((rows, n, 2))
        yield u[..., 1] < u[..., 0]  # scipy's argsort of the pair puts the second first


def significance_ranks(values: Sequence[float], p_values: dict[tuple[int, int], float],
                       alpha: float = 0.05) -> list[int]:
    """Significance clusters (``AssignRanks`` of mt-metrics-eval): metrics sorted best first; each joins the
    current cluster unless a member of that cluster beats it significantly (one-sided p ≤ ``alpha`` for the
    pair), in which case it starts the next rank. ``p_values[(i, j)]`` (either order) is the one-sided paired
    test that the better of metrics i and j is better; returns each metric's rank (1 = top cluster), in the
    input order."""
    order = sorted(range(len(values)), key=lambda i: -values[i] if math.isfinite(values[i]) else math.inf)
    ranks = [0] * len(values)
    rank, members = 1, []
    for i in order:
        if any(p_values.get((j, i), p_values.get((i, j), 1.0)) <= alpha for j in members):
            rank, members = rank + 1, []
        members.append(i)
        ranks[i] = rank
    return ranks


def mean_over_datasets_interval(statistic: Callable[[np.ndarray, np.ndarray], float],
                                per_dataset: Sequence[tuple[Sequence[float], Sequence[float]]], *,
                                n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict[str, Any]:
    """The mean of ``statistic`` over datasets, with a two-level bootstrap interval: each resample draws the
    datasets with replacement and, within each drawn dataset, its items with replacement (Davison & Hinkley
    1997, §3.8), then averages the per-dataset statistics."""
    data = [(np.asarray(s, dtype=float), np.asarray(h, dtype=float)) for s, h in per_dataset]
    if not data:
        raise ValueError("mean_over_datasets_interval needs at least one dataset.")
    value = float(np.mean([statistic(s, h) for s, h in data]))
    rng = np.random.default_rng(seed)
    means: list[float] = []
    for count in batched.blocks(n_resamples, sum(len(s) for s, _ in data)):
        picks = []  # the draws in the order of a resample-by-resample loop: datasets, then each one's items
        rows: list[list[np.ndarray]] = [[] for _ in data]
        for _ in range(count):
            picks.append(rng.integers(0, len(data), size=len(data)))
            for k in picks[-1]:
                rows[k].append(rng.integers(0, len(data[k][0]), size=len(data[k][0])))
        values = [iter(resample_values(statistic, data[k], np.array(r))) if r else iter(()) for k, r in enumerate(rows)]
        for pick in picks:
            vals = [v for v in (next(values[k]) for k in pick) if not math.isnan(v)]
            if vals:
                means.append(float(np.mean(vals)))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha]) if means else (float("nan"), float("nan"))
    return {"value": value, "low": float(low), "high": float(high), "datasets": len(data)}
