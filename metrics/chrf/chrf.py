"""chrF as an ``evaluate`` module: chrF_β = (1 + β²) chrP chrR / (β² chrP + chrR), by sacrebleu.

The core (validation, scoring, signature) is :func:`dialeval.reference.core.compute_chrf`."""

from typing import Any

import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.chrf import METRIC
from dialeval.reference.core import compute_chrf


class Chrf(evaluate_module.DialevalMetric):
    """chrF_β = (1 + β²) chrP chrR / (β² chrP + chrR), by sacrebleu."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.reference_info()

    def _compute(self, predictions: Any, references: Any, char_order: int, word_order: int, beta: int) -> dict[str, Any]:
        return compute_chrf(predictions, references, char_order=char_order, word_order=word_order, beta=beta)
