"""What a meta-evaluation row correlates a metric with (:class:`Target`), by which statistic (:data:`STATISTICS`,
pure functions of two arrays: Spearman ρ, Pearson r, Kendall τ-b over complete pairs; OCA; ROC AUC) and how its
value reads (:func:`row_state`). Shared by the per-dataset harness (:mod:`dialeval.meta.evaluation`) and the
system-level rows (:mod:`dialeval.meta.quality`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dialeval.meta.stats import (
    auc,
    best_threshold_accuracy,
    complete_pairs,
    kendall,
    pearson,
    spearman,
)

#: What each quality is correlated by, on rated datasets.
QUALITY_STATISTICS = ("spearman", "pearson", "kendall")
#: Statistics whose "no agreement" value is 0 (an interval above 0 is a positive agreement).
CORRELATIONS = QUALITY_STATISTICS


@dataclass
class Target:
    name: str
    values: list[float]
    statistic: str  # "spearman", "pearson", "kendall", "oca" or "auc"


def _oca(scores: np.ndarray, labels: np.ndarray) -> float:
    return best_threshold_accuracy(scores, labels)[0] if len(np.unique(labels)) == 2 else float("nan")


def _labelled_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUC of the rows labelled 1 against those labelled 0 (NaN labels left out; NaN when a class is absent)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    return auc(pos, neg) if len(pos) and len(neg) else float("nan")


STATISTICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "spearman": complete_pairs(spearman), "oca": _oca, "auc": _labelled_auc, "pearson": complete_pairs(pearson),
    "kendall": complete_pairs(kendall)}


def row_state(statistic: str, value: float, low: float, high: float) -> str:
    """``undefined`` (no value), and for correlations ``positive`` (interval above 0), ``negative`` (interval
    below 0) or ``includes 0``; other statistics ``defined``."""
    if not math.isfinite(value):
        return "undefined"
    if statistic not in CORRELATIONS or not (math.isfinite(low) and math.isfinite(high)):
        return "defined"
    return "positive" if low > 0 else "negative" if high < 0 else "includes 0"
