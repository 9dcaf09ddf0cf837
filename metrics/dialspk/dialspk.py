"""DialSpk speaker recognition as an ``evaluate`` module (Yao et al. 2022, DialStory).

DAC = correctly attributed dialogue turns / turns; SAC = stories with every turn correct / stories. The core
is :func:`dialeval.dialstory.dialspk.speaker_accuracy`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.dialstory.dialspk import compute_dialspk
from dialeval.metrics.dialspk import METRIC

_INPUTS = """predictions, references: one list of speaker names per story (one name per dialogue turn).
options: candidates (per story, the candidate speaker names)."""


class DialSpk(evaluate_module.DialevalMetric):
    """DAC = correct turns / turns; SAC = fully correct stories / stories."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({
            "predictions": datasets.Sequence(datasets.Value("string")),
            "references": datasets.Sequence(datasets.Value("string")),
        }), _INPUTS)

    def _compute(self, predictions: Any, references: Any, candidates: Any) -> dict[str, Any]:
        return compute_dialspk(predictions, references, candidates)
