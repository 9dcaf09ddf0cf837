"""Pure statistics for meta-evaluation: Pearson r, Spearman ρ (Pearson r of average ranks, as
``scipy.stats.spearmanr``), the optimal classification accuracy (best single threshold, Tevet & Berant
2021), ROC AUC (Mann–Whitney) and seeded bootstrap intervals (subsampling without replacement, percentile
interval), and paired tests of two metrics on the same rows (Williams' test for dependent correlations, a
paired bootstrap). Arrays in, numbers out; no I/O."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


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
    idx = subsample_indices(n, max(2, int(fraction * n)), n_resamples, seed)
    values = np.array([statistic(*(a[row] for a in arrays)) for row in idx], dtype=float)
    ok = values[~np.isnan(values)]
    alpha = (1.0 - confidence) / 2.0
    low, high = (np.quantile(ok, [alpha, 1.0 - alpha]) if len(ok) else (float("nan"), float("nan")))
    return {"low": float(low), "high": float(high), "undefined": int(len(values) - len(ok))}


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
    idx = np.random.default_rng(seed).integers(0, len(t), size=(n_resamples, len(t)))
    d = np.array([statistic(x[row], t[row]) - statistic(y[row], t[row]) for row in idx], dtype=float)
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
