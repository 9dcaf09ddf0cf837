"""Vendi Score (Friedman & Dieng, TMLR 2023) as an `evaluate` module; the core is `dialeval.similarity.vendi`."""

from typing import Any

import datasets
import evaluate

import dialeval.modules.base as base  # a module, not the class: evaluate takes the first module class it finds
from dialeval.metrics.vendi_score import METRIC
from dialeval.similarity.vendi import compute_vendi

_CITATION = """@article{friedman2023vendi,
  title = {The Vendi Score: A Diversity Evaluation Metric for Machine Learning},
  author = {Friedman, Dan and Dieng, Adji Bousso},
  journal = {Transactions on Machine Learning Research}, year = {2023},
  url = {https://openreview.net/forum?id=g97OHbQyk1}}
"""

_DESCRIPTION = (
    "Vendi Score: for each response set, exp of the (order-q) entropy of the eigenvalues of K/n, where K is "
    "the cosine kernel of sentence embeddings (default) or of n-gram counts. 1 = all responses alike, n = all "
    "different; the effective number of distinct responses."
)

_INPUTS = """
Args:
    predictions: list of response sets (each a list of non-empty responses).
    kernel: "embedding" (default; cosine of the encoder's sentence embeddings) or "ngram".
    q: order of the entropy, 0 to 1000 or "inf" (default 1, Shannon).
    n: n-gram orders of the ngram kernel (default 1,2,3,4). tokenizer: its tokenizer (default "casual").
    encoder, device, dtype, batch_size: the embedding kernel's encoder (default the offline MiniLM).
Returns:
    vendi_score (mean over sets), scores (one per set), kernel, q, num_sets, signature.
"""


class VendiScore(base.DialevalMetric):
    """VS_q = exp(H_q(eig(K/n))) per response set (Friedman & Dieng 2023)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=_CITATION, inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))}),
            reference_urls=list(METRIC.urls),
        )

    def _compute(self, predictions: Any = None, **kwargs: Any) -> dict[str, Any]:
        return compute_vendi(predictions, **self.options(kwargs))
