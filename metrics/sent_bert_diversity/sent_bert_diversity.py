"""Sent-BERT diversity as an ``evaluate`` module (Tevet & Berant, EACL 2021).

div = 1 − mean over the unordered pairs of a response set of the cosine similarity of their sentence
embeddings. The core is :func:`dialeval.similarity.sent_bert.compute_sent_bert_diversity`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.sent_bert_diversity import METRIC
from dialeval.similarity.sent_bert import compute_sent_bert_diversity

_INPUTS = """
Args:
    predictions: list of response sets (each a list of at least 2 non-empty responses).
    encoder: sentence encoder (default the offline MiniLM; Tevet & Berant's model is
        "sentence-transformers/bert-large-nli-stsb-mean-tokens"). device, dtype, batch_size, progress: its settings.
Returns:
    sent_bert_diversity (mean over sets), scores (one per set), num_sets, signature.
"""


class SentBertDiversity(evaluate_module.DialevalMetric):
    """1 − mean_{i<j} cos(e_i, e_j) per response set (Tevet & Berant 2021)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))}),
                                _INPUTS)

    def _compute(self, predictions: Any, encoder: Any, device: Any, dtype: Any, batch_size: int,
                 progress: bool | None) -> dict[str, Any]:
        return compute_sent_bert_diversity(predictions, encoder=encoder, device=device, dtype=dtype,
                                           batch_size=batch_size, progress=progress)
