"""Learned quality as an ``evaluate`` module, configs ``turn`` and ``dialog``.

score(c, r) = U·S, the probability that the response is a valid utterance (U) and follows its context (S, read
from the last ``turns`` context turns), or with ``composition="usl_h"`` USL-H's (U + U·S + U·S·L) / 3 with L its
specificity; per response (``turn``) or averaged over a conversation's replies (``dialog``). The core is
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

_DESCRIPTION = """Learned quality: p(valid utterance) U x p(next utterance) S (composition="product"), or USL-H's
(U + U*S + U*S*L) / 3 with specificity L ("usl_h"), from all-MiniLM-L6-v2 with its top two layers tuned on unlabelled
DailyDialog, per response (config `turn`) or averaged over a conversation's replies (config `dialog`).
Reference-free; higher = better."""

_INPUTS = """turn:   contexts (list of lists of turns; an empty list: nothing to follow, S = 1), predictions
dialog: dialogues (list of lists of turns); speakers (optional, to compute(): one list of names per dialogue,
        a name per turn; the opener's turns are then not scored)
options: weights (None = the shipped evaluator), turns (context turns S reads, default 3), composition (product or usl_h), batch_size, dtype, device,
         backend, progress."""


class LearnedQuality(evaluate_module.DialevalMetric):
    """U·S (or USL-H's (U + U·S + U·S·L) / 3 with composition="usl_h"); higher = better."""

    DECLARATION = METRIC
    CALL_INPUTS = ("speakers",)

    def _info(self) -> evaluate.MetricInfo:
        level = self.config_name if self.config_name in CONFIGS else "dialog"
        return self.metric_info(_FEATURES[level], _INPUTS, _DESCRIPTION)

    def _compute(self, weights: Any, turns: int, composition: str, batch_size: int, dtype: Any, device: Any, backend: Any, progress: Any,
                 contexts: Any = None, predictions: Any = None, dialogues: Any = None,
                 speakers: Any = None) -> dict[str, Any]:
        config = self.config_name if self.config_name in CONFIGS else "dialog"
        return compute_learned_quality(contexts, predictions, dialogues, speakers=speakers, config=config, weights=weights,
                                       turns=turns, composition=composition, batch_size=batch_size, dtype=dtype, device=device, backend=backend,
                                       progress=progress)
