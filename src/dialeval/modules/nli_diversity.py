"""``evaluate`` module for NLI Diversity (Stasaski & Hearst, NAACL 2022); the math lives in :mod:`dialeval.nli`."""

from __future__ import annotations

from typing import Any

import datasets
import evaluate

from ..metrics.nli_diversity import METRIC
from ..nli import DEFAULT_MODEL, check_variant, compute_nli_diversity, get_classifier
from ..signature import make_signature
from .base import DialevalMetric

_CITATION = """@inproceedings{stasaski-hearst-2022-semantic,
  title = {Semantic Diversity in Dialogue with Natural Language Inference},
  author = {Stasaski, Katherine and Hearst, Marti},
  booktitle = {Proceedings of NAACL-HLT}, year = {2022}, pages = {85--98},
  url = {https://aclanthology.org/2022.naacl-main.6/}}
"""

_DESCRIPTION = (
    "NLI Diversity: classify every ordered pair of responses in a set with an NLI model and sum "
    "+1 per contradiction and -1 per entailment (baseline), also +1 per neutral (neutral), or the "
    "predicted class's probability (confidence). Higher = more semantically diverse."
)

def nli_signature(classifier: Any, variant: str) -> str:
    identity = getattr(classifier, "identity", None) or type(classifier).__name__
    dtype = getattr(classifier, "dtype", None)
    max_length = getattr(classifier, "max_length", None)
    return make_signature(
        "nli_diversity", model=identity, variant=variant, pairs="ordered",
        dtype=str(dtype).replace("torch.", "") if dtype is not None else None,
        trunc=f"longest_first@{max_length}" if max_length else None,
    )


def compute(predictions: Any, model: Any = DEFAULT_MODEL, variant: str = "baseline", device: Any = None,
            dtype: Any = None, batch_size: int = 32, max_tokens: int | None = None, max_length: int | None = None,
            return_probabilities: bool = False, progress: bool | None = None) -> dict[str, Any]:
    """NLI Diversity of each response set in ``predictions`` with a signature (see :mod:`dialeval.nli`)."""
    check_variant(variant)
    classifier = get_classifier(model, device=device, dtype=dtype, batch_size=batch_size, max_tokens=max_tokens,
                                max_length=max_length, progress=progress)
    out = compute_nli_diversity(predictions, classifier, variant, bool(return_probabilities))
    out["signature"] = nli_signature(classifier, variant)
    return out


class NLIDiversityModule(DialevalMetric):
    """NLI Diversity of response sets: Σ over ordered pairs of contradiction (+) / entailment (−)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description="predictions: list of response sets (each a list of at least 2 responses).",
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))}),
            reference_urls=["https://aclanthology.org/2022.naacl-main.6/"],
        )

    def _compute(self, predictions: Any = None, **kwargs: Any) -> dict[str, Any]:
        return compute(predictions, **self.options(kwargs))
