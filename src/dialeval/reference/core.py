"""The reference-based metrics' cores: validate once, score each response against its references with the
library that defines the metric (:mod:`dialeval.reference.overlap`), and sign the result.

Each returns ``{"<metric>": mean over responses, "scores": one value per response, "signature": ...}``; BLEU and
chrF also give sacrebleu's corpus score (``corpus_bleu``/``corpus_chrf``), the number MT papers report.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from dialeval.io.signature import make_signature
from dialeval.io.validation import ResultNote, is_int
from dialeval.reference import nlgeval, overlap
from dialeval.reference.inputs import check_references, row_references


def _choice(value: Any, choices: tuple[str, ...], option: str) -> str:
    if value not in choices:
        raise ValueError(f"`{option}`={value!r:.40} is not one of {list(choices)}.")
    return value


def _order(value: Any, option: str, high: int) -> int:
    if not is_int(value) or not 1 <= value <= high:
        raise ValueError(f"`{option}`={value!r:.40} must be an integer from 1 to {high}.")
    return int(value)


def _weight(value: Any, option: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"`{option}`={value!r:.40} must be a number from {low:g} to {high:g}.")
    return float(value)


def _flag(value: Any, option: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"`{option}` must be True or False, got {value!r:.40}.")
    return value


def _result(name: str, scores: list[float], signature: str, **extra: Any) -> dict[str, Any]:
    return {name: math.fsum(scores) / len(scores), **extra, "scores": scores, "signature": signature}


def compute_token_f1(predictions: Any, references: Any) -> dict[str, Any]:
    """Token F-1 = 2PR / (P + R) over normalised unigrams, best over references (Dinan et al. 2019)."""
    preds, refs = check_references(predictions, references)
    scores = [overlap.best_over_references(overlap.token_f1, p, r) for p, r in zip(preds, refs)]
    return _result("token_f1", scores, make_signature("token_f1", norm="squad", multi="max"))


def _nlg_eval(metric: str, implementation: Any, given: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """Whether ``implementation`` is nlg-eval's (:mod:`dialeval.reference.nlgeval`); its scorers have no other
    options, so one set away from its default is refused."""
    if _choice(implementation, nlgeval.IMPLEMENTATIONS, "implementation") == "default":
        return False
    changed = [k for k, v in given.items() if v != defaults[k]]
    if changed:
        raise ValueError(f"{metric}: `{changed[0]}` has no meaning with implementation='nlg-eval' (its scorer fixes "
                         "tokenisation, smoothing and weights); leave it out.")
    return True


def compute_bleu(predictions: Any, references: Any, max_order: int = 4, smooth: str = "exp", tokenize: str = "13a",
                 lowercase: bool = False, implementation: str = "default") -> dict[str, Any]:
    """Sentence BLEU-n = BP · exp(Σ_{k≤n} log p_k / n) per response (Papineni et al. 2002), by sacrebleu (0–100), plus
    its corpus BLEU; ``implementation="nlg-eval"``: pycocoevalcap's BLEU as nlg-eval runs it (0–1, smoothing
    constants 1e-15/1e-9, :mod:`dialeval.reference.nlgeval`)."""
    max_order, smooth = _order(max_order, "max_order", 4), _choice(smooth, overlap.SMOOTHING, "smooth")
    tokenize, lowercase = _choice(tokenize, overlap.BLEU_TOKENIZERS, "tokenize"), _flag(lowercase, "lowercase")
    nlg = _nlg_eval("bleu", implementation, {"smooth": smooth, "tokenize": tokenize, "lowercase": lowercase},
                    {"smooth": "exp", "tokenize": "13a", "lowercase": False})
    preds, refs = check_references(predictions, references)
    if nlg:
        scores, corpus = nlgeval.bleu_scores(preds, refs, max_order)
        sig = make_signature("bleu", n=max_order, impl="nlg-eval", pycocoevalcap=nlgeval.version())
        return _result("bleu", scores, sig, corpus_bleu=corpus)
    metric = overlap.sacrebleu_bleu(max_order, smooth, tokenize, lowercase)
    scores = overlap.sentence_scores(metric, preds, refs)
    corpus = overlap.corpus_score(metric, preds, refs)
    sig = make_signature("bleu", n=max_order, smooth=smooth, tok=tokenize, lc=lowercase,
                         sacrebleu=overlap.library_version("sacrebleu"))
    return _result("bleu", scores, sig, corpus_bleu=corpus)


def compute_chrf(predictions: Any, references: Any, char_order: int = 6, word_order: int = 0,
                 beta: int = 2) -> dict[str, Any]:
    """chrF_β = (1 + β²) · chrP · chrR / (β² · chrP + chrR) over character n-grams up to ``char_order`` (Popović
    2015; ``word_order=2`` is chrF++), by sacrebleu, plus its corpus chrF."""
    char_order, word_order = _order(char_order, "char_order", 10), int(_weight(word_order, "word_order", 0, 4))
    beta = _order(beta, "beta", 10)
    preds, refs = check_references(predictions, references)
    metric = overlap.sacrebleu_chrf(char_order, word_order, beta)
    scores = overlap.sentence_scores(metric, preds, refs)
    corpus = overlap.corpus_score(metric, preds, refs)
    sig = make_signature("chrf", c=char_order, w=word_order, beta=beta, sacrebleu=overlap.library_version("sacrebleu"))
    return _result("chrf", scores, sig, corpus_chrf=corpus)


def compute_meteor(predictions: Any, references: Any, alpha: float = 0.9, beta: float = 3.0,
                   gamma: float = 0.5, implementation: str = "default") -> dict[str, Any]:
    """METEOR = F_mean · (1 − γ · (chunks / matches)^β), F_mean = PR / (αP + (1 − α)R) (Banerjee & Lavie 2005), by
    nltk with WordNet 3.0, best over references; ``implementation="nlg-eval"``: METEOR 1.5 (Denkowski & Lavie 2014,
    Java, paraphrase tables) as nlg-eval runs it."""
    alpha, beta, gamma = _weight(alpha, "alpha", 0, 1), _weight(beta, "beta", 0, 100), _weight(gamma, "gamma", 0, 1)
    nlg = _nlg_eval("meteor", implementation, {"alpha": alpha, "beta": beta, "gamma": gamma},
                    {"alpha": 0.9, "beta": 3.0, "gamma": 0.5})
    preds, refs = check_references(predictions, references)
    if nlg:
        return _result("meteor", nlgeval.meteor_scores(preds, refs), make_signature(
            "meteor", impl="nlg-eval", meteor="1.5", pycocoevalcap=nlgeval.version()))
    scores = overlap.meteor_scores(preds, refs, alpha, beta, gamma)
    sig = make_signature("meteor", alpha=alpha, beta=beta, gamma=gamma, wordnet="3.0",
                         nltk=overlap.library_version("nltk"))
    return _result("meteor", scores, sig)


def compute_rouge_l(predictions: Any, references: Any, use_stemmer: bool = False,
                    implementation: str = "default") -> dict[str, Any]:
    """ROUGE-L F = (1 + β²) R P / (R + β² P) over the longest common subsequence, β = 1 (Lin 2004), by rouge-score,
    best over references; ``implementation="nlg-eval"``: pycocoevalcap's, β = 1.2, whitespace tokens as given."""
    use_stemmer = _flag(use_stemmer, "use_stemmer")
    nlg = _nlg_eval("rouge_l", implementation, {"use_stemmer": use_stemmer}, {"use_stemmer": False})
    preds, refs = check_references(predictions, references)
    if nlg:
        return _result("rouge_l", nlgeval.rouge_l_scores(preds, refs), make_signature(
            "rouge_l", impl="nlg-eval", beta=1.2, pycocoevalcap=nlgeval.version()))
    scores = overlap.rouge_l_scores(preds, refs, use_stemmer)
    sig = make_signature("rouge_l", stem=use_stemmer, rouge_score=overlap.library_version("rouge-score"))
    note = _untokenized_note(preds, refs)
    return _result("rouge_l", scores, sig, **({"note": note} if note else {}))


def _untokenized_note(preds: list[str], refs: list[list[str]]) -> str | None:
    """The caveat (warned once, as :class:`ResultNote`) when texts with letters have no token under rouge-score's
    tokenizer, which keeps only a-z and 0-9: they score 0, silently otherwise."""
    bad_preds = overlap.rouge_untokenized(preds)
    flat = [r for group in refs for r in group]
    bad_refs = overlap.rouge_untokenized(flat)
    if not bad_preds and not bad_refs:
        return None
    note = (f"{bad_preds} of {len(preds)} predictions and {bad_refs} of {len(flat)} references have letters but no "
            "token under rouge-score's tokenizer (it keeps a-z and 0-9 only), so they score 0: ROUGE-L here is "
            "English-only; use chrf for other scripts.")
    warnings.warn(f"rouge_l: {note}", ResultNote, stacklevel=3)
    return note


def reference_adapter(compute: Callable[..., dict[str, Any]], options: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    """A meta-evaluation adapter: each row's ``response`` against its ``reference`` (a string or a list). A row
    without a reference is an error naming it, never a silent zero."""

    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        refs = [row_references(r) for r in rows]
        missing = next((i for i, r in enumerate(refs) if not r), None)
        if missing is not None:
            raise ValueError(f"row {missing} (id {rows[missing].get('id')!r}) has no reference; reference-based "
                             "metrics need one on every row (the dataset declares `reference`).")
        result = compute([r["response"] for r in rows], refs, **options)
        return {"scores": result["scores"], "signature": result["signature"]}

    return score


def adapter_factory(compute: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
    """The declaration's ``meta_adapter``: ``factory(options, config)`` → :func:`reference_adapter` of ``compute``."""
    def factory(options: dict[str, Any], config: str) -> Callable[..., dict[str, Any]]:
        return reference_adapter(compute, options)

    factory.__doc__ = f"The meta-evaluation adapter of :func:`{compute.__name__}` (``config``: the row level)."
    return factory


token_f1_adapter = adapter_factory(compute_token_f1)
bleu_adapter = adapter_factory(compute_bleu)
chrf_adapter = adapter_factory(compute_chrf)
meteor_adapter = adapter_factory(compute_meteor)
rouge_l_adapter = adapter_factory(compute_rouge_l)
