"""``evaluate`` module for DialSpk speaker recognition (DAC / SAC)."""

from __future__ import annotations

from typing import Any

import datasets
import evaluate

from ..dialspk import speaker_accuracy
from ..metrics.dialspk import METRIC
from ..signature import make_signature
from .base import DialevalMetric

_CITATION = """@article{yao2022dialstory,
  title = {A Benchmark for Understanding and Generating Dialogue between Characters in Stories},
  author = {Yao, Jianzhu and Liu, Ziqi and Guan, Jian and Huang, Minlie},
  journal = {arXiv preprint arXiv:2209.08524}, year = {2022}}
"""


class DialSpkModule(DialevalMetric):
    """DAC = correct turns / turns; SAC = fully correct stories / stories."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description="DialStory speaker recognition: DAC (turn accuracy) and SAC (story accuracy).",
            citation=_CITATION,
            inputs_description="predictions, references: one list of speaker names per story.",
            features=datasets.Features({
                "predictions": datasets.Sequence(datasets.Value("string")),
                "references": datasets.Sequence(datasets.Value("string")),
            }),
        )

    def _compute(self, predictions: Any = None, references: Any = None, **kwargs: Any) -> dict[str, Any]:
        opts = self.options(kwargs)
        out = speaker_accuracy(predictions, references, opts["candidates"])
        out["signature"] = dialspk_signature(opts["candidates"] is not None)
        return out


def dialspk_signature(candidates_given: bool) -> str:
    return make_signature("dialspk", candidates="given" if candidates_given else "none", level="story")
