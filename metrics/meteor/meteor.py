"""METEOR as an ``evaluate`` module: METEOR = F_mean · (1 − γ (chunks / matches)^β), by nltk with WordNet 3.0.

The core (validation, scoring, signature) is :func:`dialeval.reference.core.compute_meteor`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.meteor import METRIC
from dialeval.reference.core import compute_meteor

_INPUTS = """predictions: list of responses; references: one reference per response (a string, or a list of strings).
options: see the card."""


class Meteor(evaluate_module.DialevalMetric):
    """METEOR = F_mean · (1 − γ (chunks / matches)^β), by nltk with WordNet 3.0."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(
            [datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
             datasets.Features({"predictions": datasets.Value("string"),
                                "references": datasets.Sequence(datasets.Value("string"))})], _INPUTS)

    def _compute(self, predictions: Any, references: Any, alpha: float, beta: float, gamma: float) -> dict[str, Any]:
        return compute_meteor(predictions, references, alpha=alpha, beta=beta, gamma=gamma)
