"""Token F-1 as an ``evaluate`` module: Token F-1 = 2PR / (P + R) over normalised unigrams, best over references.

The core (validation, scoring, signature) is :func:`dialeval.reference.core.compute_token_f1`."""

from typing import Any

import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.token_f1 import METRIC
from dialeval.reference.core import compute_token_f1


class TokenF1(evaluate_module.DialevalMetric):
    """Token F-1 = 2PR / (P + R) over normalised unigrams, best over references."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.reference_info()

    def _compute(self, predictions: Any, references: Any) -> dict[str, Any]:
        return compute_token_f1(predictions, references)
