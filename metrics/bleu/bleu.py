"""BLEU as an ``evaluate`` module: sentence BLEU-n = BP · exp(Σ_{k≤n} log p_k / n), by sacrebleu.

The core (validation, scoring, signature) is :func:`dialeval.reference.core.compute_bleu`."""

from typing import Any

import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.bleu import METRIC
from dialeval.reference.core import compute_bleu


class Bleu(evaluate_module.DialevalMetric):
    """sentence BLEU-n = BP · exp(Σ_{k≤n} log p_k / n), by sacrebleu."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.reference_info()

    def _compute(self, predictions: Any, references: Any, max_order: int, smooth: str, tokenize: str, lowercase: bool,
                 implementation: str) -> dict[str, Any]:
        return compute_bleu(predictions, references, max_order=max_order, smooth=smooth, tokenize=tokenize, lowercase=lowercase,
                           implementation=implementation)
