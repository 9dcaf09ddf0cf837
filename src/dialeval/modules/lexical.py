"""``evaluate`` modules for the lexical metrics: distinct_n, ent_n, low_frequency."""

from __future__ import annotations

import math
from typing import Any

import datasets
import evaluate

from .. import lexical
from ..metrics.distinct_n import METRIC as DISTINCT_N
from ..metrics.ent_n import METRIC as ENT_N
from ..metrics.low_frequency import METRIC as LOW_FREQUENCY
from ..ngrams import count_ngrams
from ..signature import make_signature
from ..text import get_tokenizer, tokenizer_name
from ..validation import check_positive_ints, check_text_sets, check_texts, is_int
from .base import DialevalMetric

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


def _resolve_orders(tokenizer: Any, n: Any) -> tuple[int, ...]:
    """Validate ``tokenizer`` and ``n``; ``n=None`` means 1..5 for the ``tevet`` preset, else 1..3."""
    get_tokenizer(tokenizer)
    if n is None:
        n = (1, 2, 3, 4, 5) if tokenizer == "tevet" else (1, 2, 3)
    return check_positive_ints(n, "n")


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
        opts = self.options(kwargs)
        return compute_distinct(predictions, **opts)


def compute_distinct(predictions: Any, n: Any = None, tokenizer: Any = "casual", level: str = "corpus",
                     vocab_size: int | None = None) -> dict[str, Any]:
    """Dist-n (and EAD-n) at corpus or set level, with a signature. See :mod:`dialeval.lexical`."""
    tok, orders = tokenizer, _resolve_orders(tokenizer, n)
    if vocab_size is not None and (not is_int(vocab_size) or vocab_size < 1):
        raise ValueError(f"`vocab_size` must be a positive int (the generator's vocabulary size), got {vocab_size!r}.")
    vocab_size = None if vocab_size is None else int(vocab_size)
    if level == "corpus":
        if predictions is not None and not isinstance(predictions, str) and len(predictions) \
                and isinstance(predictions[0], (list, tuple)):
            raise TypeError("`predictions` holds lists of responses; pass level='set' to score response sets.")
        texts = check_texts(predictions, "predictions")
        out: dict[str, Any] = lexical.distinct_n(texts, orders, tok, vocab_size)
    elif level == "set":
        sets = check_text_sets(predictions, "predictions")
        per_set = lexical.distinct_n_per_set(sets, orders, tok, vocab_size)
        keys = [k for k in per_set[0] if k != "distinct_mean"] + ["distinct_mean"]
        out = {k: math.fsum(s[k] for s in per_set) / len(per_set) for k in keys}
        out["scores"] = [s["distinct_mean"] for s in per_set]
        out["scores_by_n"] = {k: [s[k] for s in per_set] for k in keys if k != "distinct_mean"}
    else:
        raise ValueError(f"`level`={level!r} is not known; use 'corpus' or 'set'.")
    if level == "corpus":
        out["distinct_mean"] = math.fsum(out[f"distinct_{k}"] for k in orders) / len(orders)
    out["signature"] = make_signature("distinct_n", tok=tokenizer_name(tok), n=orders, level=level, vocab=vocab_size)
    return out


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


def compute_ent(predictions: Any, n: Any = None, tokenizer: Any = "casual", base: float = 2.0) -> dict[str, Any]:
    tok, orders = tokenizer, _resolve_orders(tokenizer, n)
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 0 or base == 1:
        raise ValueError(f"`base` must be a positive number other than 1 (2 for bits, math.e for nats), got {base!r}.")
    texts = check_texts(predictions, "predictions")
    out: dict[str, Any] = lexical.entropy_scores(count_ngrams(texts, orders, tok), float(base))
    out["signature"] = make_signature("ent_n", tok=tokenizer_name(tok), n=orders, base=float(base), level="corpus")
    return out


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


def compute_low_frequency(predictions: Any, threshold: int = 100, tokenizer: Any = "casual",
                          reference_counts: Any = None, reference_texts: Any = None) -> dict[str, Any]:
    get_tokenizer(tokenizer)
    if not is_int(threshold) or threshold < 0:
        raise ValueError(f"`threshold` must be an int ≥ 0, got {threshold!r}.")
    threshold = int(threshold)
    if reference_counts is not None and reference_texts is not None:
        raise ValueError("pass either `reference_counts` or `reference_texts`, not both.")
    texts = check_texts(predictions, "predictions")
    source = "predictions"
    ref = None
    if reference_texts is not None:
        ref = lexical.unigram_counts(check_texts(reference_texts, "reference_texts"), tokenizer)
        source = "reference_texts"
    elif reference_counts is not None:
        if not isinstance(reference_counts, dict):
            raise TypeError("`reference_counts` must be a dict mapping token -> count.")
        bad = [k for k, v in reference_counts.items() if not isinstance(k, str) or not is_int(v) or v < 0]
        if bad:
            raise TypeError(f"`reference_counts` must map token strings to counts ≥ 0; bad entry "
                            f"{bad[0]!r}: {reference_counts[bad[0]]!r}.")
        ref = {k: int(v) for k, v in reference_counts.items()}
        source = "reference_counts"
    value = lexical.low_frequency(texts, threshold, tokenizer, ref)
    return {
        "low_frequency": value,
        "signature": make_signature("low_frequency", tok=tokenizer_name(tokenizer), n=1, threshold=threshold,
                                    counts=source, level="corpus"),
    }
