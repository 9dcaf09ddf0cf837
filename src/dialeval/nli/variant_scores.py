"""NLI Diversity's scores as pure functions of one response set's pair table (rows = ordered pairs, columns the
canonical classes contradiction, neutral, entailment: :data:`CANONICAL`): the predicted classes and their counts,
and each variant of :data:`VARIANTS` (the formulas are in :mod:`dialeval.nli.core`, which re-exports every name
here). Numpy only: no model.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

CANONICAL = ("contradiction", "neutral", "entailment")
VARIANTS = ("baseline", "neutral", "confidence", "confidence_soft")


def predicted_classes(probs_cne: Any) -> np.ndarray:
    """Argmax class per pair (0 = contradiction, 1 = neutral, 2 = entailment); ties go to the earlier class."""
    table = np.asarray(probs_cne, dtype=np.float64).reshape(-1, 3)
    return table.argmax(axis=1)


def class_counts(probs_cne: Any) -> dict[str, int]:
    """How many pairs are predicted contradiction / neutral / entailment."""
    pred = predicted_classes(probs_cne)
    return {name: int((pred == k).sum()) for k, name in enumerate(CANONICAL)}


def baseline_score(probs_cne: Any) -> float:
    """Σ_pairs [ŷ=contradiction] − [ŷ=entailment] (neutral counts 0)."""
    c = class_counts(probs_cne)
    return float(c["contradiction"] - c["entailment"])


def neutral_score(probs_cne: Any) -> float:
    """Σ_pairs [ŷ=contradiction] + [ŷ=neutral] − [ŷ=entailment]."""
    c = class_counts(probs_cne)
    return float(c["contradiction"] + c["neutral"] - c["entailment"])


def confidence_score(probs_cne: Any) -> float:
    """Σ_pairs [ŷ=contradiction]·P(contradiction) − [ŷ=entailment]·P(entailment)."""
    table = np.asarray(probs_cne, dtype=np.float64).reshape(-1, 3)
    pred = predicted_classes(table)
    terms = [table[i, 0] if k == 0 else -table[i, 2] for i, k in enumerate(pred) if k != 1]
    return math.fsum(terms)


def confidence_soft_score(probs_cne: Any) -> float:
    """Σ_pairs P(contradiction) − P(entailment), not gated by the argmax (a reading of "confidence" that
    the paper's §3.3 definition does not take; kept as a named variant for comparison)."""
    table = np.asarray(probs_cne, dtype=np.float64).reshape(-1, 3)
    return math.fsum(table[:, 0]) - math.fsum(table[:, 2])


VARIANT_FUNCTIONS = {"baseline": baseline_score, "neutral": neutral_score, "confidence": confidence_score,
                     "confidence_soft": confidence_soft_score}


def variant_score(probs_cne: Any, variant: str) -> float:
    """Score of one set's pair table under ``variant`` (one of :data:`VARIANTS`)."""
    return VARIANT_FUNCTIONS[check_variant(variant)](probs_cne)


def check_variant(variant: Any) -> str:
    """``variant`` itself when it is one of :data:`VARIANTS`; a ``ValueError`` naming them otherwise."""
    if variant not in VARIANT_FUNCTIONS:
        raise ValueError(f"`variant`={variant!r} is not known; use one of {list(VARIANTS)}.")
    return variant
