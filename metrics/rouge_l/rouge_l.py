"""ROUGE-L as an ``evaluate`` module: ROUGE-L F = 2RP / (R + P) over the longest common subsequence, by rouge-score.

The core (validation, scoring, signature) is :func:`dialeval.reference.core.compute_rouge_l`."""

from typing import Any

import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.rouge_l import METRIC
from dialeval.reference.core import compute_rouge_l


class RougeL(evaluate_module.DialevalMetric):
    """ROUGE-L F = 2RP / (R + P) over the longest common subsequence, by rouge-score."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.reference_info()

    def _compute(self, predictions: Any, references: Any, use_stemmer: bool, implementation: str) -> dict[str, Any]:
        return compute_rouge_l(predictions, references, use_stemmer=use_stemmer, implementation=implementation)
