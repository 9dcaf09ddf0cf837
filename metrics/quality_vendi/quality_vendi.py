"""Quality-weighted Vendi Score as an ``evaluate`` module (Nguyen & Dieng, ICML 2024).

qVS_q = ((1/n) Σ_i s(x_i)) · VS_q per response set: the mean quality s ≥ 0 of its responses (higher = better; an
LLM judge's (E[r] − 1)/4, FULL in nats, or your own scores) times its Vendi Score. The core is
:func:`dialeval.similarity.quality_vendi.compute_quality_vendi`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.quality_vendi import METRIC
from dialeval.similarity.quality_vendi import compute_quality_vendi

_INPUTS = """
Args:
    predictions: list of response sets (each a list of non-empty responses).
    contexts: one context per set (a string or a list of turns) the quality metric rates each response after
        (None: each response rated alone).
    qualities: your own per-response qualities (one list per set, each >= 0); None: from quality_metric.
    quality_metric: "llm_judge" (default; (E[rating] - 1) / 4) or "full_followup" (FULL, nats).
    quality_model, quality_options: the quality metric's model and a dict of its other options.
    kernel, q, n, tokenizer, encoder, device, dtype, batch_size, progress: the Vendi Score's (see vendi_score).
Returns:
    quality_vendi (mean over sets), scores (one per set), vendi_scores, mean_qualities, kernel, q, num_sets,
    signature.
"""


class QualityVendi(evaluate_module.DialevalMetric):
    """qVS_q = mean quality × VS_q per response set (Nguyen & Dieng 2024)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))}),
                                _INPUTS)

    def _compute(self, predictions: Any, contexts: Any, qualities: Any, quality_metric: str, quality_model: Any,
                 quality_options: Any, kernel: str, q: Any, n: Any, tokenizer: Any, encoder: Any, device: Any,
                 dtype: Any, batch_size: int, progress: bool | None) -> dict[str, Any]:
        return compute_quality_vendi(predictions, contexts=contexts, qualities=qualities,
                                     quality_metric=quality_metric, quality_model=quality_model,
                                     quality_options=quality_options, kernel=kernel, q=q, n=n, tokenizer=tokenizer,
                                     encoder=encoder, device=device, dtype=dtype, batch_size=batch_size,
                                     progress=progress)
