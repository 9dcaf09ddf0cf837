"""BLEU as an ``evaluate`` module: sentence BLEU-n = BP · exp(Σ_{k≤n} log p_k / n), by sacrebleu.

The core (validation, scoring, signature) is :func:`dialeval.reference.core.compute_bleu`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.bleu import METRIC
from dialeval.reference.core import compute_bleu

_INPUTS = """predictions: list of responses; references: one reference per response (a string, or a list of strings).
options: see the card."""


class Bleu(evaluate_module.DialevalMetric):
    """sentence BLEU-n = BP · exp(Σ_{k≤n} log p_k / n), by sacrebleu."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(
            [datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
             datasets.Features({"predictions": datasets.Value("string"),
                                "references": datasets.Sequence(datasets.Value("string"))})], _INPUTS)

    def _compute(self, predictions: Any, references: Any, max_order: int, smooth: str, tokenize: str, lowercase: bool) -> dict[str, Any]:
        return compute_bleu(predictions, references, max_order=max_order, smooth=smooth, tokenize=tokenize, lowercase=lowercase)
