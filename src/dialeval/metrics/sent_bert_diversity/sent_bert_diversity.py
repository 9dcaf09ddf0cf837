"""Sent-BERT diversity (Tevet & Berant, EACL 2021) as an `evaluate` module; the core is
`dialeval.similarity.sent_bert`."""

from typing import Any

import datasets
import evaluate

import dialeval.modules.base as base  # a module, not the class: evaluate takes the first module class it finds
from dialeval.metrics.sent_bert_diversity import METRIC
from dialeval.similarity.sent_bert import compute_sent_bert_diversity

_CITATION = """@inproceedings{tevet-berant-2021-evaluating,
  title = {Evaluating the Evaluation of Diversity in Natural Language Generation},
  author = {Tevet, Guy and Berant, Jonathan},
  booktitle = {Proceedings of EACL}, year = {2021}, pages = {326--346},
  url = {https://aclanthology.org/2021.eacl-main.25/}}
"""

_DESCRIPTION = (
    "Sent-BERT diversity: for each response set, one minus the mean cosine similarity of the sentence "
    "embeddings over all unordered pairs of responses. Higher is more diverse."
)

_INPUTS = """
Args:
    predictions: list of response sets (each a list of at least 2 non-empty responses).
    encoder: sentence encoder (default the offline MiniLM; Tevet & Berant's model is
        "sentence-transformers/bert-large-nli-stsb-mean-tokens"). device, dtype, batch_size: its settings.
Returns:
    sent_bert_diversity (mean over sets), scores (one per set), num_sets, signature.
"""


class SentBertDiversity(base.DialevalMetric):
    """1 − mean_{i<j} cos(e_i, e_j) per response set (Tevet & Berant 2021)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=_CITATION, inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))}),
            reference_urls=list(METRIC.urls),
        )

    def _compute(self, predictions: Any = None, **kwargs: Any) -> dict[str, Any]:
        return compute_sent_bert_diversity(predictions, **self.options(kwargs))
