"""``evaluate`` module for DialGen (DialStory masked dialogue generation, Yao et al. 2022): BLEU-1/2 per
turn, Dist-2/3/4 and, with a coherence model, the mean ``P(original)`` of the filled-in stories."""

from __future__ import annotations

from typing import Any

import datasets
import evaluate

from ..dialgen import dialgen_scores
from ..metrics.dialgen import METRIC
from ..validation import check_texts
from .base import DialevalMetric

_CITATION = """@article{yao2022dialstory,
  title = {A Benchmark for Understanding and Generating Dialogue between Characters in Stories},
  author = {Yao, Jianzhu and Liu, Ziqi and Guan, Jian and Huang, Minlie},
  journal = {arXiv preprint arXiv:2209.08524}, year = {2022}}
"""

_SCORERS: dict[tuple[str, str], Any] = {}


def coherence_of(stories: Any, predictions: list[list[str]], model: str, device: Any = None,
                 batch_size: int = 16) -> list[float]:
    """``P(original)`` of each story with its ``[MASKk]`` filled by the generated turns."""
    from ..coherence_model import CoherenceScorer
    from ..datasets.dialstory import fill_masks

    texts = check_texts(stories, "stories")
    if len(texts) != len(predictions):
        raise ValueError(f"`stories` has {len(texts)} items but `predictions` has {len(predictions)}; "
                         "pass the masked story of every scored story.")
    filled = []
    for i, (story, turns) in enumerate(zip(texts, predictions)):
        try:
            filled.append(fill_masks(story, turns))
        except ValueError as exc:
            raise ValueError(f"`stories[{i}]`: {exc}") from None
    key = (str(model), str(device))
    if key not in _SCORERS:
        _SCORERS[key] = CoherenceScorer(model, device=device, batch_size=batch_size)
    return _SCORERS[key].score(filled)


class DialGenModule(DialevalMetric):
    """BLEU-n = mean sentence BLEU-n over masked turns; Dist-n over generated turns; coherence = share of
    stories with P(original) > 0.5 (coherence_mean = mean P(original))."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description="DialStory DialGen: BLEU-1/2 averaged over masked turns, Dist-2/3/4 over generated turns, "
                        "and the share of filled-in stories a coherence classifier judges coherent (P(original) > 0.5).",
            citation=_CITATION,
            inputs_description="predictions: per story, the generated turns (one per [MASKk]); references: "
                               "per story, the gold turns; stories (option): the masked stories, for coherence.",
            features=datasets.Features({
                "predictions": datasets.Sequence(datasets.Value("string")),
                "references": datasets.Sequence(datasets.Value("string")),
            }),
            reference_urls=["https://arxiv.org/abs/2209.08524"],
        )

    def _compute(self, predictions: Any = None, references: Any = None, **kwargs: Any) -> dict[str, Any]:
        opts = self.options(kwargs)
        model = opts["coherence_model"]
        coherence = None
        if model is not None:
            if opts["stories"] is None:
                raise ValueError("`coherence_model` needs `stories`: the masked story ([MASK1]…[MASKn]) of every "
                                 "story, so the generated turns can be filled in.")
            coherence = coherence_of(opts["stories"], [list(p) for p in predictions], model, opts["device"],
                                     opts["batch_size"])
        return dialgen_scores(predictions, references, tokenization=opts["tokenization"], smooth=opts["smooth"],
                              quotes=opts["quotes"], coherence=coherence, coherence_model=None if model is None else str(model))
