"""Context relevance as an ``evaluate`` module, configs ``turn`` and ``dialog``.

relevance(c, r) = cos(pooled e(last turns of c), e(r)) per response after its context (``turn``), or the mean
over a conversation's replies (``dialog``); higher = more related. The core is
:func:`dialeval.relevance.core.compute_context_relevance`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.context_relevance import METRIC
from dialeval.relevance.core import CONFIGS, compute_context_relevance

_FEATURES = {
    "turn": datasets.Features({"contexts": datasets.Sequence(datasets.Value("string")),
                               "predictions": datasets.Value("string")}),
    "dialog": datasets.Features({"dialogues": datasets.Sequence(datasets.Value("string"))}),
}

_DESCRIPTION = """Context relevance: the cosine between a sentence encoder's embedding of the last context
turn(s) and of the response, per response (config `turn`) or averaged over a conversation's replies (config
`dialog`). Reference-free; higher = more related."""

_INPUTS = """turn:   contexts (list of lists of turns; an empty list is compared with the empty text), predictions
dialog: dialogues (list of lists of turns); speakers (optional, to compute(): one list of names per dialogue,
        a name per turn; the opener's turns are then not scored)
options: turns, pooling, encoder (None = offline all-MiniLM-L6-v2), batch_size, dtype, device, backend, progress."""


class ContextRelevance(evaluate_module.DialevalMetric):
    """cos(e(context), e(response)); higher = more related."""

    DECLARATION = METRIC
    CALL_INPUTS = ("speakers",)

    def _info(self) -> evaluate.MetricInfo:
        level = self.config_name if self.config_name in CONFIGS else "turn"
        return self.metric_info(_FEATURES[level], _INPUTS, _DESCRIPTION)

    def _compute(self, turns: int, pooling: str, encoder: Any, batch_size: int, dtype: Any, device: Any,
                 backend: Any, progress: Any, contexts: Any = None, predictions: Any = None,
                 dialogues: Any = None, speakers: Any = None) -> dict[str, Any]:
        config = self.config_name if self.config_name in CONFIGS else "turn"
        return compute_context_relevance(contexts, predictions, dialogues, speakers=speakers, config=config, turns=turns,
                                         pooling=pooling, encoder=encoder, batch_size=batch_size, dtype=dtype,
                                         device=device, backend=backend, progress=progress)
