"""DialGen as an ``evaluate`` module (DialStory masked dialogue generation, Yao et al. 2022).

BLEU-n = mean sentence BLEU-n over masked turns (n = 1, 2); Dist-n over generated turns (n = 2, 3, 4); with a
coherence model, the share of filled-in stories the classifier judges coherent (P(original) > 0.5) and their mean
P(original). The core is
:func:`dialeval.dialstory.dialgen.compute_dialgen`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.dialstory.dialgen import compute_dialgen
from dialeval.metrics.dialgen import METRIC

_INPUTS = """predictions: per story, the generated turns (one per [MASKk]); references: per story, the gold turns.
options: tokenization, smooth, quotes, stories (the masked stories, for coherence), coherence_model, device, batch_size."""


class DialGen(evaluate_module.DialevalMetric):
    """BLEU-n = mean sentence BLEU-n over masked turns; Dist-n over generated turns; coherence = share of stories
    with P(original) > 0.5 (coherence_mean = mean P(original))."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({
            "predictions": datasets.Sequence(datasets.Value("string")),
            "references": datasets.Sequence(datasets.Value("string")),
        }), _INPUTS)

    def _compute(self, predictions: Any, references: Any, tokenization: str, smooth: str, quotes: str,
                 stories: Any, coherence_model: Any, device: Any, batch_size: int,
                 backend: str | None) -> dict[str, Any]:
        return compute_dialgen(predictions, references, tokenization=tokenization, smooth=smooth, quotes=quotes,
                               stories=stories, coherence_model=coherence_model, device=device,
                               batch_size=batch_size, backend=backend)
