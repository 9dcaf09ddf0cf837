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
    monotone_function,
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


#: States of a correlation whose interval says nothing about its sign (never ``positive``, never a lead).
UNINFORMATIVE = "uninformative interval"
COPY = "copy of a human quality"


def _no_information(value: float, low: float, high: float, subsample: int | None) -> str | None:
    if subsample is not None and subsample < 3:
        return f"subsamples of {subsample} items: each correlation is ±1 or undefined"
    if high - low <= 0 and abs(value) < 1:
        return f"zero-width interval [{low:.3f}, {high:.3f}]: every resample gave the same value"
    return None


def interval_note(value: float, low: float, high: float, subsample: int | None = None) -> str | None:
    """What is wrong with the interval ``[low, high]`` of ``value`` (``None``: nothing). It carries no information
    when its subsamples hold fewer than 3 items (``subsample``: each correlation is then ±1) or when every resample
    gave one value short of ±1 (zero width: one resample, or every row in every subsample); it is marked when it
    leaves out its own value (e.g. ρ = 1 whose resamples all fall below 1), its state then read from the interval
    widened to the value (:func:`row_state`)."""
    if not (math.isfinite(value) and math.isfinite(low) and math.isfinite(high)):
        return None
    said = _no_information(value, low, high, subsample)
    if said:
        return said
    tol = 1e-12 * max(1.0, abs(value))
    if not low - tol <= value <= high + tol:
        return (f"the interval [{low:.3f}, {high:.3f}] leaves out its own value {value:.3f}; its state is read "
                f"from [{min(low, value):.3f}, {max(high, value):.3f}]")
    return None


def row_state(statistic: str, value: float, low: float, high: float, subsample: int | None = None) -> str:
    """``undefined`` (no value), and for correlations ``positive`` (interval above 0), ``negative`` (interval
    below 0), ``includes 0``, or :data:`UNINFORMATIVE` (:func:`interval_note`); an interval that leaves out its
    value is widened to it first (never a sign the value itself does not share); other statistics ``defined``."""
    if not math.isfinite(value):
        return "undefined"
    if statistic not in CORRELATIONS or not (math.isfinite(low) and math.isfinite(high)):
        return "defined"
    if _no_information(value, low, high, subsample):
        return UNINFORMATIVE
    low, high = min(low, value), max(high, value)
    return "positive" if low > 0 else "negative" if high < 0 else "includes 0"


def quality_copy(scores: np.ndarray, targets: list[Target]) -> str | None:
    """The first human quality (a correlation target) of which ``scores`` are a monotone function
    (:func:`dialeval.meta.stats.monotone_function`: a copy, a rescaling, a rank of it), or ``None``."""
    for t in targets:
        if t.statistic in CORRELATIONS and monotone_function(scores, np.asarray(t.values, dtype=float)):
            return t.name
    return None


def copy_state(row: dict, copied: str | None) -> dict:
    """``row`` marked as a copy of the human quality ``copied`` (state :data:`COPY`) when there is one."""
    if copied is None or row.get("statistic") not in CORRELATIONS or not math.isfinite(row.get("value", math.nan)):
        return row
    return {**row, "state": COPY, "copies": copied}
