"""LF as an ``evaluate`` module: the share of unigram tokens whose count is ≤ ``threshold`` (Li et al. 2020,
as in the Sem-Ent reference code). The core is :func:`dialeval.lexical.core.compute_low_frequency`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.lexical.core import compute_low_frequency
from dialeval.metrics.low_frequency import METRIC

_INPUTS = """predictions: list of responses.
options: threshold, tokenizer, reference_counts or reference_texts, num_workers (see the card)."""


class LowFrequency(evaluate_module.DialevalMetric):
    """LF = share of unigram tokens whose count is ≤ threshold (Li et al. 2020; Sem-Ent reference)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({"predictions": datasets.Value("string")}), _INPUTS)

    def _compute(self, predictions: Any, threshold: int, tokenizer: Any, reference_counts: Any,
                 reference_texts: Any, num_workers: int) -> dict[str, Any]:
        return compute_low_frequency(predictions, threshold=threshold, tokenizer=tokenizer,
                                     reference_counts=reference_counts, reference_texts=reference_texts,
                                     num_workers=num_workers)
