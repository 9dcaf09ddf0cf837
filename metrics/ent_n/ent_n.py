"""Ent-n as an ``evaluate`` module: −Σ p(g) log_base p(g) over the corpus n-gram distribution (Zhang et al.
2018, as in the Sem-Ent reference code). The core is :func:`dialeval.lexical.core.compute_ent`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.lexical.core import compute_ent
from dialeval.metrics.ent_n import METRIC

_INPUTS = """predictions: list of responses.
options: n, tokenizer, base, num_workers (see the card)."""


class EntN(evaluate_module.DialevalMetric):
    """Ent-n = −Σ p(g) log_base p(g) over the corpus n-gram distribution (base 2 by default)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({"predictions": datasets.Value("string")}), _INPUTS)

    def _compute(self, predictions: Any, n: Any, tokenizer: Any, base: float, num_workers: int) -> dict[str, Any]:
        return compute_ent(predictions, n=n, tokenizer=tokenizer, base=base, num_workers=num_workers)
