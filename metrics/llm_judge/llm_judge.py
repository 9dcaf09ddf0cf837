"""The LLM judge as an ``evaluate`` module, configs ``turn`` and ``dialog`` (G-Eval's weighting).

score = E[r] = Σ r·p(r | rubric prompt) / Σ p(r | rubric prompt) over the rating digits 1…5 (no sampling), per
response after its context (``turn``) or per conversation (``dialog``); higher = better. The core is
:func:`dialeval.judge.llm_judge.compute_llm_judge`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.judge.llm_judge import CONFIGS, compute_llm_judge
from dialeval.metrics.llm_judge import METRIC

_FEATURES = {
    "turn": datasets.Features({"contexts": datasets.Sequence(datasets.Value("string")),
                               "predictions": datasets.Value("string")}),
    "dialog": datasets.Features({"dialogues": datasets.Sequence(datasets.Value("string"))}),
}

_DESCRIPTION = """LLM judge (G-Eval weighting): a chat LM reads a rubric prompt and the score is the expected
rating 1-5 over its next-token probabilities of the digits, per response (config `turn`) or per conversation
(config `dialog`). Higher = better."""

_INPUTS = """turn:   contexts (list of lists of turns), predictions (list of responses, one per context)
dialog: dialogues (list of lists of turns)
options: quality, rubric, model (None = offline SmolLM2-135M-Instruct), chat_template, max_length, share_prefix,
batch_size, max_tokens, dtype, device, backend, progress."""


class LlmJudge(evaluate_module.DialevalMetric):
    """Expected 1–5 rating of a rubric prompt (G-Eval weighting); higher = better."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        level = self.config_name if self.config_name in CONFIGS else "turn"
        return self.metric_info(_FEATURES[level], _INPUTS, _DESCRIPTION)

    def _compute(self, quality: str, rubric: Any, model: Any, chat_template: Any, max_length: Any,
                 share_prefix: bool, batch_size: int, max_tokens: Any, dtype: Any, device: Any, backend: Any,
                 progress: Any, contexts: Any = None, predictions: Any = None, dialogues: Any = None) -> dict[str, Any]:
        config = self.config_name if self.config_name in CONFIGS else "turn"
        return compute_llm_judge(contexts, predictions, dialogues, config=config, quality=quality, rubric=rubric,
                                 model=model, chat_template=chat_template, max_length=max_length,
                                 share_prefix=share_prefix, batch_size=batch_size, max_tokens=max_tokens, dtype=dtype,
                                 device=device, backend=backend, progress=progress)
