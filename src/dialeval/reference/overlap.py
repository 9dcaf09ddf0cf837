"""Word-overlap baselines, each per response against its references (best reference where several).

- token F-1: harmonic mean of unigram precision and recall after SQuAD/ParlAI normalisation (lower case, no
  punctuation, no articles ``a``/``an``/``the``), as the dialogue papers report it (Dinan et al. 2019).
- BLEU-n (Papineni et al. 2002): sacrebleu's sentence BLEU with the cumulative geometric mean up to order n,
  effective order and its ``exp`` smoothing by default (Chen & Cherry 2014), ``13a`` tokenisation; 0–100.
- chrF (Popović 2015): sacrebleu's character n-gram F-score (β = 2, character order 6, word order 0); 0–100.
- METEOR (Banerjee & Lavie 2005): nltk's ``meteor_score`` (exact, Porter-stem and WordNet-synonym matches;
  α = 0.9, β = 3, γ = 0.5) on nltk's Treebank tokens, lower-cased.
- ROUGE-L (Lin 2004): rouge-score's LCS F-measure (its tokenizer: lower case, alphanumeric tokens).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import metadata
from typing import Any

from dialeval.extras import optional

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
SMOOTHING = ("exp", "floor", "add-k", "none")
BLEU_TOKENIZERS = ("13a", "intl", "char", "none")


def normalize_answer(text: str) -> str:
    """SQuAD/ParlAI normalisation: lower case, punctuation removed, articles removed, whitespace collapsed."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def token_f1(prediction: str, reference: str) -> float:
    """Unigram F-1 of the normalised tokens: 2PR / (P + R), with P = overlap / |prediction|, R = overlap /
    |reference|; 0 when nothing overlaps."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    overlap = sum((Counter(pred) & Counter(ref)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_over_references(score: Callable[[str, str], float], prediction: str, references: Sequence[str]) -> float:
    """The best score of ``prediction`` against any of its references."""
    return max(score(prediction, ref) for ref in references)


@lru_cache(maxsize=32)
def sacrebleu_bleu(max_order: int, smooth: str, tokenize: str, lowercase: bool) -> Any:
    BLEU = optional("sacrebleu.metrics", "bleu").BLEU  # noqa: N806 - sacrebleu's class

    # force: no warning about tokenized input (dialogue corpora ship tokenized text, e.g. "do n't")
    return BLEU(max_ngram_order=max_order, smooth_method=smooth, tokenize=tokenize, lowercase=lowercase,
                effective_order=True, force=True)


@lru_cache(maxsize=8)
def sacrebleu_chrf(char_order: int, word_order: int, beta: int) -> Any:
    return optional("sacrebleu.metrics", "chrf").CHRF(char_order=char_order, word_order=word_order, beta=beta)


def sentence_scores(metric: Any, predictions: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """A sacrebleu metric's sentence score of each response against all of its references (sacrebleu's own
    multi-reference rule: n-grams clipped by their count in any reference, the closest reference length)."""
    return [float(metric.sentence_score(p, list(refs)).score) for p, refs in zip(predictions, references)]


def corpus_score(metric: Any, predictions: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """A sacrebleu metric's corpus score: reference stream k holds each response's k-th reference (``None`` where a
    response has fewer)."""
    streams = [[r[k] if k < len(r) else None for r in references] for k in range(max(len(r) for r in references))]
    return float(metric.corpus_score(list(predictions), streams).score)


def treebank_tokens(text: str) -> list[str]:
    """nltk's Treebank word tokens (no downloaded sentence splitter needed)."""
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer().tokenize(text)


def meteor_scores(predictions: Sequence[str], references: Sequence[Sequence[str]], alpha: float, beta: float,
                  gamma: float) -> list[float]:
    """nltk's METEOR of each response against its references (nltk keeps the best reference)."""
    from nltk.translate.meteor_score import meteor_score

    from dialeval.reference.wordnet import load_wordnet

    wordnet = load_wordnet()
    return [float(meteor_score([treebank_tokens(r) for r in refs], treebank_tokens(p), alpha=alpha, beta=beta,
                               gamma=gamma, wordnet=wordnet)) for p, refs in zip(predictions, references)]


def rouge_l_scores(predictions: Sequence[str], references: Sequence[Sequence[str]], use_stemmer: bool) -> list[float]:
    """rouge-score's ROUGE-L F-measure of each response, best over its references (``score_multi``)."""
    scorer = optional("rouge_score.rouge_scorer", "rouge_l").RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    return [float(scorer.score_multi(list(refs), p)["rougeL"].fmeasure) for p, refs in zip(predictions, references)]


def rouge_untokenized(texts: Sequence[str]) -> int:
    """How many of ``texts`` have letters but no token under rouge-score's tokenizer, which keeps only ``[a-z0-9]``
    (Chinese, Russian, Greek text, …): ROUGE-L scores them 0."""
    tokenize = optional("rouge_score.tokenize", "rouge_l").tokenize
    return sum(1 for t in texts if any(c.isalpha() for c in t) and not tokenize(t, None))


def library_version(package: str) -> str:
    """The installed version of ``package`` (it goes into the signature: a new release may move scores)."""
    return metadata.version(package)
