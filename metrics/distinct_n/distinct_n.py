"""Dist-n / EAD-n as an ``evaluate`` module (Li et al. 2016; Liu et al. 2022; Tevet & Berant 2021).

Dist-n = distinct n-grams / total n-grams; EAD-n = distinct / (V · (1 − ((V−1)/V)^C)) with ``vocab_size``.
The core (validation, counting, signature) is :func:`dialeval.lexical.core.compute_distinct`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.lexical.core import compute_distinct
from dialeval.metrics.distinct_n import METRIC

_INPUTS = """predictions: list of responses (level='corpus') or list of response sets (level='set').
options: n, tokenizer, level, vocab_size, num_workers (see the card)."""


class DistinctN(evaluate_module.DialevalMetric):
    """Dist-n = distinct n-grams / total n-grams (Li et al. 2016); EAD-n with ``vocab_size``."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(
            [datasets.Features({"predictions": datasets.Value("string")}),
             datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))})], _INPUTS)

    def _compute(self, predictions: Any, n: Any, tokenizer: Any, level: str, vocab_size: int | None,
                 num_workers: int) -> dict[str, Any]:
        return compute_distinct(predictions, n=n, tokenizer=tokenizer, level=level, vocab_size=vocab_size,
                                num_workers=num_workers)
