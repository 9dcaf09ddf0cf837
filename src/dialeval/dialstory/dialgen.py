"""DialGen (DialStory masked dialogue generation) evaluation, the model-free part (Yao et al. 2022, §6).

Inputs: for each story, the generated turns (one per ``[MASKk]``) and the gold turns, in order.

- BLEU-n (n = 1, 2), "the average word overlap between each generated turn and its ground-truth turn":
  ``BLEU-n = (1/T) Σ_t BP_t · exp(Σ_{k≤n} (1/n) log p_{t,k})`` over all T masked turns, with ``p_{t,k}`` the
  clipped k-gram precision of turn t and ``BP_t = min(1, exp(1 − |ref_t| / |hyp_t|))``. Each turn's score is
  sacrebleu's sentence BLEU (``max_ngram_order=n``) on pre-tokenised text, reported in [0, 1] (×100 for the
  paper's tables). Default smoothing ``none``: a turn's score is then exactly its n-gram overlap, and a
  turn with no matching k-gram scores 0 (smoothing adds pseudo-counts that are not overlap).
- Dist-n (n = 2, 3, 4) = distinct n-grams / n-grams over all generated turns (:mod:`dialeval.lexical.formulas`).

Coherence (§6): ``coherence`` is the share of stories whose filled-in text the classifier judges
coherent, ``P(original) > 0.5`` — the paper's number; ``coherence_mean`` is the mean ``P(original)``.

Quotation marks: the DialStory mask replaces the text *inside* the quotes, so gold turns carry none.
``quotes="keep"`` scores the turns as given; ``quotes="strip"`` removes one pair of enclosing quotation
marks (“…”, 「…」, "…") from every generated and gold turn first, for systems that generate the marks.
The choice moves BLEU by several points and is in the signature.

Tokenisations: ``char`` (sacrebleu's ``zh`` tokenizer: every CJK character a token, other text split as
in ``13a``) and ``jieba`` (word level, jieba's bundled dictionary, offline). The coherence score needs a
model: see :mod:`dialeval.dialstory.coherence`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from dialeval.dialstory.coherence import CoherenceScorer
from dialeval.io.signature import make_signature
from dialeval.io.validation import check_list, check_texts, is_int
from dialeval.lexical import formulas as lexical
from dialeval.models.onnx_backend import check_backend_name, resolve_backend
from dialeval.models.runtime import check_device_type, resolve_device
from dialeval.registry import MAX_BATCH

TOKENIZATIONS = ("char", "jieba")
QUOTES = ("keep", "strip")
QUOTE_PAIRS = (("“", "”"), ("「", "」"), ('"', '"'), ("『", "』"))
#: A story counts as coherent when the classifier's P(original) exceeds this (the paper's reading of a
#: binary classifier's decision).
COHERENT_ABOVE = 0.5
SMOOTHING = ("none", "floor", "add-k", "exp")
BLEU_ORDERS = (1, 2)
DIST_ORDERS = (2, 3, 4)


def _require(module: str) -> Any:
    """Import ``module`` (sacrebleu or jieba) or say how to install it (:mod:`dialeval.extras`)."""
    from dialeval.extras import optional

    return optional(module, "the dialgen metric")


@lru_cache(maxsize=1)
def _zh() -> Callable[[str], str]:
    return _require("sacrebleu.tokenizers.tokenizer_zh").TokenizerZh()


def char_tokens(text: str) -> list[str]:
    """Character-level tokens: sacrebleu's ``zh`` tokenizer (CJK characters split, the rest as ``13a``)."""
    return _zh()(text).split()


def jieba_tokens(text: str) -> list[str]:
    """Word-level tokens by ``jieba.lcut`` (precise mode, HMM on), whitespace tokens dropped."""
    jieba = _require("jieba")
    jieba.setLogLevel(logging.WARNING)
    return [w for w in jieba.lcut(text) if w.strip()]


def get_tokenization(name: str) -> Callable[[str], list[str]]:
    """The tokenizer for ``name`` (``char`` or ``jieba``)."""
    if name == "char":
        return char_tokens
    if name == "jieba":
        return jieba_tokens
    raise ValueError(f"`tokenization`={name!r} is not known; use 'char' (character level) or 'jieba' (word level).")


def tokenization_label(name: str) -> str:
    """``char`` or ``jieba-<version>`` for signatures (jieba's dictionary changes with its version)."""
    if name == "jieba":
        return f"jieba-{_require('jieba').__version__}"
    return name


def check_turn_lists(predictions: Any, references: Any) -> tuple[list[list[str]], list[list[str]]]:
    """Validate one list of generated and one list of gold turns per story, of equal lengths."""
    preds = check_list(predictions, "predictions", item="list of generated turn")
    refs = check_list(references, "references", item="list of gold turn")
    if len(preds) != len(refs):
        raise ValueError(f"`predictions` has {len(preds)} stories but `references` has {len(refs)}; "
                         "pass one list of turns per story in both.")
    out_p, out_r = [], []
    for i, (p, r) in enumerate(zip(preds, refs)):
        p = _turns(p, f"predictions[{i}]")
        r = _turns(r, f"references[{i}]")
        if len(p) != len(r):
            raise ValueError(f"story {i}: {len(p)} generated turn(s) for {len(r)} gold turn(s); "
                             "generate one turn per [MASKk] placeholder.")
        if not r:
            raise ValueError(f"`references[{i}]` is empty; every DialGen story has at least one masked turn.")
        out_p.append(p)
        out_r.append(r)
    return out_p, out_r


def _turns(value: Any, field: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"`{field}` must be a list of turns (strings), one per [MASKk], got {type(value).__name__}.")
    for j, v in enumerate(value):
        if not isinstance(v, str):
            raise TypeError(f"`{field}[{j}]` is {type(v).__name__} ({v!r:.40}), not a string.")
    return list(value)


def sentence_bleu(hypothesis: Sequence[str], reference: Sequence[str], order: int, smooth: str = "none") -> float:
    """sacrebleu sentence BLEU-``order`` of two token lists, in [0, 1] (uniform weights 1/order)."""
    BLEU = _require("sacrebleu.metrics").BLEU  # noqa: N806

    if smooth not in SMOOTHING:
        raise ValueError(f"`smooth`={smooth!r} is not known; use one of {list(SMOOTHING)}.")
    if not reference:
        raise ValueError("a gold turn has no tokens; gold turns must not be empty.")
    if not hypothesis:
        return 0.0
    bleu = _bleu(BLEU, order, smooth)
    return bleu.sentence_score(" ".join(hypothesis), [" ".join(reference)]).score / 100.0


@lru_cache(maxsize=16)
def _bleu(cls: Any, order: int, smooth: str) -> Any:
    # tokenize="none": the text is already tokenised; effective_order: a turn shorter than n tokens is
    # scored on the orders it has (sacrebleu's recommendation for sentence BLEU)
    return cls(tokenize="none", max_ngram_order=order, smooth_method=smooth, effective_order=True)


def bleu_scores(predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
                tokenize: Callable[[str], list[str]], orders: Sequence[int] = BLEU_ORDERS,
                smooth: str = "none") -> dict[str, Any]:
    """BLEU-n averaged over all turns (micro: every masked turn weighs the same), and per-turn scores."""
    per_turn: dict[int, list[float]] = {n: [] for n in orders}
    for gen_turns, gold_turns in zip(predictions, references):
        for gen, gold in zip(gen_turns, gold_turns):
            hyp, ref = tokenize(gen), tokenize(gold)
            for n in orders:
                per_turn[n].append(sentence_bleu(hyp, ref, n, smooth))
    out: dict[str, Any] = {f"bleu_{n}": math.fsum(v) / len(v) for n, v in per_turn.items()}
    out["turn_bleu"] = {f"bleu_{n}": v for n, v in per_turn.items()}
    return out


def strip_quotes(turn: str) -> str:
    """``turn`` without one pair of enclosing quotation marks (surrounding whitespace ignored)."""
    t = turn.strip()
    for left, right in QUOTE_PAIRS:
        if len(t) >= 2 and t.startswith(left) and t.endswith(right):
            return t[len(left):len(t) - len(right)]
    return turn


def check_quotes(quotes: Any) -> str:
    if quotes not in QUOTES:
        raise ValueError(f"`quotes`={quotes!r} is not known; use 'keep' (turns as given) or 'strip'.")
    return quotes


def quoted_turns(preds: list[list[str]], refs: list[list[str]], quotes: str) -> tuple[list[list[str]], list[list[str]]]:
    """The checked turns as scored under ``quotes``: as given (``keep``), or :func:`strip_quotes` of each (``strip``)."""
    if check_quotes(quotes) == "keep":
        return preds, refs
    return [[strip_quotes(t) for t in story] for story in preds], [[strip_quotes(t) for t in story] for story in refs]


def coherence_summary(probs: Sequence[float]) -> dict[str, Any]:
    """``coherence`` = share of stories with P(original) > 0.5 (the paper's); ``coherence_mean`` = mean P."""
    values = [float(p) for p in probs]
    return {"coherence": sum(p > COHERENT_ABOVE for p in values) / len(values),
            "coherence_mean": math.fsum(values) / len(values), "story_coherence": values}


def dialgen_scores(predictions: Any, references: Any, *, tokenization: str = "char", smooth: str = "none",
                   quotes: str = "keep", coherence: Sequence[float] | None = None,
                   coherence_model: str | None = None, coherence_backend: str | None = None,
                   coherence_window: str | None = None) -> dict[str, Any]:
    """BLEU-1/2 (per-turn average), Dist-2/3/4 over the generated turns and, with per-story coherence
    probabilities, :func:`coherence_summary`; with a signature."""
    preds, refs = quoted_turns(*check_turn_lists(predictions, references), quotes)
    tokenize = get_tokenization(tokenization)
    out = bleu_scores(preds, refs, tokenize, BLEU_ORDERS, smooth)
    generated = [t for story in preds for t in story]
    out.update(lexical.corpus_distinct(generated, DIST_ORDERS, tokenize))
    if coherence is not None:
        if len(coherence) != len(preds):
            raise ValueError(f"{len(coherence)} coherence scores for {len(preds)} stories.")
        out.update(coherence_summary(coherence))
    out["num_stories"], out["num_turns"] = len(preds), len(generated)
    out["signature"] = dialgen_signature(tokenization, smooth, coherence_model if coherence is not None else None,
                                         quotes, coherence_backend, coherence_window)
    return out


def dialgen_signature(tokenization: str, smooth: str, coherence_model: str | None, quotes: str = "keep",
                      coherence_backend: str | None = None, coherence_window: str | None = None) -> str:
    version = _require("sacrebleu").__version__
    ran = {"backend": coherence_backend, "window": coherence_window} if coherence_model else {}  # only when a model ran
    return make_signature("dialgen", tok=tokenization_label(tokenization), bleu=f"sacrebleu-{version}",
                          smooth=smooth, quotes=quotes, bleu_n=BLEU_ORDERS, avg="turn", dist_n=DIST_ORDERS,
                          coherence=coherence_model, coh=f"P>{COHERENT_ABOVE:g}" if coherence_model else None, **ran)


_SCORERS: dict[tuple[str, str, str], Any] = {}


def coherence_of(stories: Any, predictions: list[list[str]], model: str, device: Any = None,
                 batch_size: int = 16, backend: str | None = None) -> tuple[list[float], str, str]:
    """``P(original)`` of each story with its ``[MASKk]`` filled by the generated turns, the backend that ran
    the classifier and its input window (``head-512``: the first 512 tokens)."""
    from dialeval.datasets.dialstory import fill_masks

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
    ran = resolve_backend(backend, resolve_device(device), "fp32")  # resolved once: the cache key and the scorer's
    key = (str(model), str(device), ran)
    if key not in _SCORERS:
        _SCORERS[key] = CoherenceScorer(model, device=device, batch_size=batch_size, backend=ran)
    scorer = _SCORERS[key]
    return scorer.score(filled), scorer.backend, scorer.window


def compute_dialgen(predictions: Any, references: Any, *, tokenization: str = "char", smooth: str = "none",
                    quotes: str = "keep", stories: Any = None, coherence_model: Any = None, device: Any = None,
                    batch_size: int = 16, backend: str | None = None) -> dict[str, Any]:
    """BLEU-1/2 per turn, Dist-2/3/4 and (with ``coherence_model`` and ``stories``) coherence (share with
    P > 0.5) and coherence_mean, with a signature."""
    check_device_type(device)  # checked also when no coherence model uses them
    check_backend_name(backend)
    if not is_int(batch_size) or not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"`batch_size`={batch_size!r:.40} must be an integer from 1 to {MAX_BATCH}.")
    coherence, ran, window = None, None, None
    if coherence_model is not None:
        if stories is None:
            raise ValueError("`coherence_model` needs `stories`: the masked story ([MASK1]…[MASKn]) of every "
                             "story, so the generated turns can be filled in.")
        coherence, ran, window = coherence_of(stories, [list(p) for p in predictions], coherence_model, device, batch_size,
                                      backend)
    return dialgen_scores(predictions, references, tokenization=tokenization, smooth=smooth, quotes=quotes,
                          coherence=coherence, coherence_model=None if coherence_model is None else str(coherence_model),
                          coherence_backend=ran, coherence_window=window)
