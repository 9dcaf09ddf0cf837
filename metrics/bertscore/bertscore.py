"""BERTScore as an ``evaluate`` module: BERTScore F = 2PR / (P + R) of greedy token matches, by bert-score.

The core (validation, scoring, signature) is :func:`dialeval.reference.bertscore.compute_bertscore`."""

from typing import Any

import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.bertscore import METRIC
from dialeval.reference.bertscore import compute_bertscore


class BertScore(evaluate_module.DialevalMetric):
    """BERTScore F = 2PR / (P + R) of greedy token matches, by bert-score."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.reference_info()

    def _compute(self, predictions: Any, references: Any, model: str, num_layers: int | None, idf: bool, batch_size: int,
                 device: str | None, dtype: str | None) -> dict[str, Any]:
        return compute_bertscore(predictions, references, model=model, num_layers=num_layers, idf=idf, batch_size=batch_size,
                                 device=device, dtype=dtype)
