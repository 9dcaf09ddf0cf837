"""Learned quality as an ``evaluate`` module, configs ``turn`` and ``dialog``.

score(c, r) = p_V(r) · p_N(c, r): the probability that the response is a valid utterance and follows the last
context turn, per response (``turn``) or averaged over a conversation's replies (``dialog``). The core is
:func:`dialeval.relevance.evaluator.compute_learned_quality`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.learned_quality import METRIC
from dialeval.relevance.core import CONFIGS
from dialeval.relevance.evaluator import compute_learned_quality

_FEATURES = {
    "turn": datasets.Features({"contexts": datasets.Sequence(datasets.Value("string")),
                               "predictions": datasets.Value("string")}),
    "dialog": datasets.Features({"dialogues": datasets.Sequence(datasets.Value("string"))}),
}

_DESCRIPTION = """Learned quality: p(valid utterance) x p(next utterance) from all-MiniLM-L6-v2 with its top
layers tuned on unlabelled DailyDialog (USL-H's signals), per response (config `turn`) or averaged over a
conversation's replies (config `dialog`). Reference-free; higher = better."""

_INPUTS = """turn:   contexts (list of lists of turns; an empty list scores p(valid) alone), predictions
dialog: dialogues (list of lists of turns); speakers (optional, to compute(): one list of names per dialogue,
        a name per turn; the opener's turns are then not scored)
options: weights (None = the shipped evaluator), batch_size, dtype, device, backend, progress."""


class LearnedQuality(evaluate_module.DialevalMetric):
    """p_V(response) · p_N(context, response); higher = better."""

    DECLARATION = METRIC
    CALL_INPUTS = ("speakers",)

    def _info(self) -> evaluate.MetricInfo:
        level = self.config_name if self.config_name in CONFIGS else "dialog"
        return self.metric_info(_FEATURES[level], _INPUTS, _DESCRIPTION)

    def _compute(self, weights: Any, batch_size: int, dtype: Any, device: Any, backend: Any, progress: Any,
                 contexts: Any = None, predictions: Any = None, dialogues: Any = None,
                 speakers: Any = None) -> dict[str, Any]:
        config = self.config_name if self.config_name in CONFIGS else "dialog"
        return compute_learned_quality(contexts, predictions, dialogues, speakers=speakers, config=config, weights=weights,
                                       batch_size=batch_size, dtype=dtype, device=device, backend=backend,
                                       progress=progress)
