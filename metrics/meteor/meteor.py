"""METEOR as an ``evaluate`` module: METEOR = F_mean · (1 − γ (chunks / matches)^β), by nltk with WordNet 3.0.

The core (validation, scoring, signature) is :func:`dialeval.reference.core.compute_meteor`."""

from typing import Any

import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.meteor import METRIC
from dialeval.reference.core import compute_meteor


class Meteor(evaluate_module.DialevalMetric):
    """METEOR = F_mean · (1 − γ (chunks / matches)^β), by nltk with WordNet 3.0."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.reference_info()

    def _compute(self, predictions: Any, references: Any, alpha: float, beta: float, gamma: float,
                 implementation: str) -> dict[str, Any]:
        return compute_meteor(predictions, references, alpha=alpha, beta=beta, gamma=gamma, implementation=implementation)
