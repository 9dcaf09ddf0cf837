"""``evaluate`` modules for the lexical metrics: distinct_n, ent_n, low_frequency. They only adapt: inputs,
options and aggregation are checked and computed by :mod:`dialeval.lexical_metrics`."""

from __future__ import annotations

from typing import Any

import datasets
import evaluate

from ..lexical_metrics import compute_distinct, compute_ent, compute_low_frequency
from ..metrics.distinct_n import METRIC as DISTINCT_N
from ..metrics.ent_n import METRIC as ENT_N
from ..metrics.low_frequency import METRIC as LOW_FREQUENCY
from .base import DialevalMetric

__all__ = ["DistinctNModule", "EntNModule", "LowFrequencyModule", "compute_distinct", "compute_ent",
           "compute_low_frequency"]

_CORPUS = datasets.Features({"predictions": datasets.Value("string")})
_SETS = datasets.Features({"predictions": datasets.Sequence(datasets.Value("string"))})

_LI_2016 = """@inproceedings{li-etal-2016-diversity,
  title = {A Diversity-Promoting Objective Function for Neural Conversation Models},
  author = {Li, Jiwei and Galley, Michel and Brockett, Chris and Gao, Jianfeng and Dolan, Bill},
  booktitle = {NAACL-HLT}, year = {2016}, pages = {110--119}}
@inproceedings{liu-etal-2022-rethinking,
  title = {Rethinking and Refining the Distinct Metric},
  author = {Liu, Siyang and Sabour, Sahand and Zheng, Yinhe and Ke, Pei and Zhu, Xiaoyan and Huang, Minlie},
  booktitle = {ACL}, year = {2022}}
@inproceedings{tevet-berant-2021-evaluating,
  title = {Evaluating the Evaluation of Diversity in Natural Language Generation},
  author = {Tevet, Guy and Berant, Jonathan}, booktitle = {EACL}, year = {2021}}
"""
_HAN_2022 = """@inproceedings{han-etal-2022-measuring,
  title = {Measuring and Improving Semantic Diversity of Dialogue Generation},
  author = {Han, Seungju and Kim, Beomsu and Chang, Buru},
  booktitle = {Findings of EMNLP}, year = {2022}}
"""


class DistinctNModule(DialevalMetric):
    """Dist-n = distinct n-grams / total n-grams (Li et al. 2016); EAD-n with ``vocab_size``."""

    DECLARATION = DISTINCT_N

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description="Dist-n: distinct n-grams / total n-grams; EAD-n with vocab_size; level='set' averages within response sets.",
            citation=_LI_2016,
            inputs_description="predictions: list of responses (level='corpus') or list of response sets (level='set').",
            features=[_CORPUS, _SETS],
            reference_urls=["https://aclanthology.org/N16-1014/", "https://aclanthology.org/2022.acl-long.86/"],
        )

    def _compute(self, predictions: Any = None, **kwargs: Any) -> dict[str, Any]:
        return compute_distinct(predictions, **self.options(kwargs))


class EntNModule(DialevalMetric):
    """Ent-n = −Σ p(g) log_base p(g) over the corpus n-gram distribution (base 2 by default)."""

    DECLARATION = ENT_N

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description="Ent-n: entropy of the corpus n-gram frequency distribution.",
            citation=_HAN_2022,
            inputs_description="predictions: list of responses.",
            features=_CORPUS,
            reference_urls=["https://aclanthology.org/2022.findings-emnlp.100/"],
        )

    def _compute(self, predictions: Any = None, **kwargs: Any) -> dict[str, Any]:
        return compute_ent(predictions, **self.options(kwargs))


class LowFrequencyModule(DialevalMetric):
    """LF = share of unigram tokens whose count is ≤ threshold (Li et al. 2020; Sem-Ent reference)."""

    DECLARATION = LOW_FREQUENCY

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description="LF: share of tokens whose frequency is at most `threshold`.",
            citation=_HAN_2022,
            inputs_description="predictions: list of responses; optional reference_texts or reference_counts.",
            features=_CORPUS,
            reference_urls=["https://openreview.net/forum?id=S1efxTVYDr"],
        )

    def _compute(self, predictions: Any = None, **kwargs: Any) -> dict[str, Any]:
        return compute_low_frequency(predictions, **self.options(kwargs))
