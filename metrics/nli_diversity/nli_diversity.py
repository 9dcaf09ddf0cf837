"""NLI Diversity as an ``evaluate`` module (Stasaski & Hearst, NAACL 2022).

Every ordered pair of responses in a set is classified by an NLI model: +1 per contradiction and −1 per
entailment (baseline), also +1 per neutral (neutral), or the class probabilities (confidence). Higher = more
semantically diverse. The core is :func:`dialeval.nli.nli_diversity.compute`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.nli_diversity import METRIC
from dialeval.nli.nli_diversity import compute

_INPUTS = """predictions: list of response sets (each a list of at least 2 responses).
options: model, variant, device, dtype, batch_size, max_tokens, max_length, return_probabilities, progress."""


class NLIDiversity(evaluate_module.DialevalMetric):
    """NLI Diversity of response sets: Σ over ordered pairs of contradiction (+) / entailment (−)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(
            datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))}), _INPUTS)

    def _compute(self, predictions: Any, model: Any, variant: str, device: Any, dtype: Any, batch_size: int,
                 max_tokens: int | None, max_length: int | None, return_probabilities: bool,
                 progress: bool | None) -> dict[str, Any]:
        return compute(predictions, model=model, variant=variant, device=device, dtype=dtype,
                       batch_size=batch_size, max_tokens=max_tokens, max_length=max_length,
                       return_probabilities=return_probabilities, progress=progress)
