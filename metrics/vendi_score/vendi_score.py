"""Vendi Score as an ``evaluate`` module (Friedman & Dieng, TMLR 2023).

VS_q = exp(H_q(λ)), λ the eigenvalues of K/n for a response set's similarity kernel K (cosine of sentence
embeddings, or of n-gram counts): the effective number of distinct responses, from 1 to n. The core is
:func:`dialeval.similarity.vendi.compute_vendi`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.vendi_score import METRIC
from dialeval.similarity.vendi import compute_vendi

_INPUTS = """
Args:
    predictions: list of response sets (each a list of non-empty responses).
    kernel: "embedding" (default; cosine of the encoder's sentence embeddings) or "ngram".
    q: order of the entropy, 0 to 1000 or "inf" (default 1, Shannon).
    n: n-gram orders of the ngram kernel (default 1,2,3,4). tokenizer: its tokenizer (default "casual").
    encoder, device, dtype, batch_size, progress: the embedding kernel's encoder (default the offline MiniLM).
Returns:
    vendi_score (mean over sets), scores (one per set), kernel, q, num_sets, signature.
"""


class VendiScore(evaluate_module.DialevalMetric):
    """VS_q = exp(H_q(eig(K/n))) per response set (Friedman & Dieng 2023)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))}),
                                _INPUTS)

    def _compute(self, predictions: Any, kernel: str, q: Any, n: Any, tokenizer: Any, encoder: Any, device: Any,
                 dtype: Any, batch_size: int, progress: bool | None) -> dict[str, Any]:
        return compute_vendi(predictions, kernel=kernel, q=q, n=n, tokenizer=tokenizer, encoder=encoder,
                             device=device, dtype=dtype, batch_size=batch_size, progress=progress)
