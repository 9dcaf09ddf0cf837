"""The LLM judge's core (G-Eval, Liu et al. 2023; Prometheus 2, Kim et al. 2024), evaluate-free.

Pointwise: score(item) = E[r] = Σ_{r=1..5} r·p(r | prompt) / Σ p(r | prompt), the next-token probabilities of
the rating digits after a rubric prompt (:mod:`dialeval.judge.rubrics`), with the argmax rating; config ``turn``
rates a response after its context, ``dialog`` a whole conversation. Pairwise (:func:`compare`): responses A
and B to one context judged in both orders, P(A better) averaged over the orders to cancel position bias; the
win rate of A with a bootstrap interval and the position-consistency rate. The LM runtime, its cache and the
ONNX Runtime route are FULL's (:func:`dialeval.models.lm.load_lm`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dialeval.io.signature import make_signature
from dialeval.io.validation import check_dialogues, check_turn_inputs
from dialeval.judge.rubrics import (
    ANSWER_PREFIX,
    PROMPT_VERSION,
    RATINGS,
    item_text,
    prompt_parts,
    resolve_rubric,
    rubric_hash,
)
from dialeval.judge.scorer import JudgeScorer, rating_tokens
from dialeval.meta.stats import mean_interval
from dialeval.models.lm import load_lm, position_limit
from dialeval.models.runtime import loaded_dtype
from dialeval.registry import MAX_LENGTH

CONFIGS = ("turn", "dialog")
ITEM_MARK = "\u0000ITEM\u0000"
DEFAULT_MAX_LENGTH = 2048


def uses_chat_template(tokenizer: Any, chat_template: bool | None) -> bool:
    """``chat_template=None``: the tokenizer's template when it has one (instruction-tuned models)."""
    has = bool(getattr(tokenizer, "chat_template", None))
    if chat_template and not has:
        raise ValueError("chat_template=True but this model's tokenizer has no chat template; use chat_template=None "
                         "(automatic) or False (plain text prompt).")
    return has if chat_template is None else bool(chat_template)


def prompt_frame(tokenizer: Any, head: str, tail: str, answer: str, chat: bool) -> tuple[list[int], str, str]:
    """(prefix token ids, text between the item and the answer, answer text): the user message
    ``head + item + tail`` through the chat template (``chat``) or as plain text, then ``answer``."""
    if chat:
        text = tokenizer.apply_chat_template([{"role": "user", "content": head + ITEM_MARK + tail}], tokenize=False,
                                             add_generation_prompt=True)
        before, after = text.rsplit(ITEM_MARK, 1)  # the item's mark is the last: the rubric may hold the mark too
        return tokenizer(before, add_special_tokens=False)["input_ids"], after, answer
    return tokenizer(head)["input_ids"], tail + "\n", answer


def item_ids(tokenizer: Any, render: Callable[[list[str]], str], context: list[str], after: str,
             budget: int) -> list[int]:
    """Token ids of one item (``render(turns)``) and the text after it, with the fewest oldest turns dropped that
    make them fit ``budget`` (then keeping the last ``budget`` tokens). Each turn is at least one token, so at most
    ``budget`` turns can fit; the number to drop is then found by bisection (a few tokenisations, not one per
    turn: a 5,000-turn history costs about 13)."""
    if budget < 1:
        raise ValueError(f"the rubric prompt leaves {budget} tokens for the item; raise max_length or shorten the rubric.")
    turns = list(context)
    cache: dict[int, list[int]] = {}

    def encoded(drop: int) -> list[int]:
        if drop not in cache:
            cache[drop] = tokenizer(render(turns[drop:]) + after, add_special_tokens=False)["input_ids"]
        return cache[drop]

    low, high = max(0, len(turns) - budget), len(turns) - 1  # the answer lies in [low, high]
    while low < high:
        mid = (low + high) // 2
        if len(encoded(mid)) <= budget:
            high = mid
        else:
            low = mid + 1
    return encoded(low)[-budget:]


def _checked_items(config: str, contexts: Any, predictions: Any, dialogues: Any) -> list[tuple[list[str], str | None]]:
    if config not in CONFIGS:
        raise ValueError(f"llm_judge has configs {CONFIGS}; got {config!r}.")
    if config == "turn":
        if dialogues is not None:
            raise ValueError("config 'turn' takes contexts= and predictions=; for whole conversations use config "
                             "'dialog' with dialogues=.")
        contexts, predictions = check_turn_inputs(contexts, predictions)
        return [(list(c), p) for c, p in zip(contexts, predictions)]
    if contexts is not None or predictions is not None:
        raise ValueError("config 'dialog' takes dialogues=; to rate responses use config 'turn' with contexts= and "
                         "predictions=.")
    return [(list(d), None) for d in check_dialogues(dialogues)]


def _check_max_length(max_length: Any) -> int:
    if max_length is None:
        return DEFAULT_MAX_LENGTH
    if isinstance(max_length, bool) or not isinstance(max_length, int) or not 64 <= max_length <= MAX_LENGTH:
        raise ValueError(f"max_length={max_length!r}: use an integer 64 ≤ max_length ≤ {MAX_LENGTH:,} (prompt tokens).")
    return max_length


def compute_llm_judge(contexts: Any = None, predictions: Any = None, dialogues: Any = None, *, config: str = "turn",
                      quality: str = "overall", rubric: str | None = None, model: Any = None,
                      chat_template: bool | None = None, max_length: int | None = None, share_prefix: bool = True,
                      batch_size: int = 8, max_tokens: int | None = 4096, dtype: Any = None, device: Any = None,
                      backend: str | None = None, progress: bool | None = None) -> dict[str, Any]:
    """Expected 1–5 rating of every item on ``quality`` (G-Eval weighting), their mean, the argmax ratings and the
    rating mass, with a signature. Inputs are checked here, once. ``None`` for an option is its default."""
    items = _checked_items(config, contexts, predictions, dialogues)
    share_prefix = True if share_prefix is None else share_prefix
    label, text = resolve_rubric(config, quality, rubric)
    requested = _check_max_length(max_length)
    lm = load_lm(model, dtype=dtype, device=device, backend=backend)
    scorer = JudgeScorer(lm)
    prompts = judge_prompts(lm.tokenizer, config, items, text, chat_template,
                            min(requested, position_limit(lm.model, lm.tokenizer)))
    expected, argmax, mass = scorer.score(prompts["prefix"], prompts["items"], prompts["rating_ids"],
                                          share_prefix=share_prefix, batch_size=batch_size, max_tokens=max_tokens,
                                          progress=progress, keys=[tuple(c) for c, _ in items])
    return {"llm_judge": float(np.mean(expected)), "scores": expected.tolist(), "ratings": argmax.tolist(),
            "rating_mass_mean": float(np.mean(mass)), "quality": label,
            "signature": judge_signature(lm, config, label, text, prompts["chat"], prompts["max_length"])}


def judge_prompts(tok: Any, config: str, items: list[tuple[list[str], str | None]], rubric: str,
                  chat_template: bool | None, max_length: int) -> dict[str, Any]:
    """The token ids every route scores: ``prefix`` (shared by all items), ``items`` (each item, the text after
    it and the answer prefix), ``rating_ids`` (the tokens of 1…5), ``chat`` and ``max_length``."""
    head, tail = prompt_parts(config, rubric)
    frame = framed(tok, head, tail, chat_template, max_length, "item")
    encoded = [item_ids(tok, lambda turns, r=r: item_text(config, turns, r), c, frame["after"], frame["budget"])
               + frame["answer_ids"] for c, r in items]
    return {"prefix": frame["prefix"], "items": encoded, "rating_ids": frame["label_ids"], "chat": frame["chat"],
            "max_length": max_length}


def framed(tok: Any, head: str, tail: str, chat_template: bool | None, max_length: int, what: str,
           answer_prefix: str = ANSWER_PREFIX, labels: tuple[str, ...] = RATINGS) -> dict[str, Any]:
    """What every prompt of one kind shares: ``chat``, ``label_ids`` (the answer tokens), ``prefix`` ids, the text
    ``after`` each item, ``answer_ids`` and the token ``budget`` left for an item (at least 16, else one line)."""
    chat = uses_chat_template(tok, chat_template)
    answer, label_ids = rating_tokens(tok, answer_prefix, labels)
    prefix, after, answer = prompt_frame(tok, head, tail, answer, chat)
    answer_ids = tok(answer, add_special_tokens=False)["input_ids"]
    budget = max_length - len(prefix) - len(answer_ids)
    if budget < 16:
        raise ValueError(f"max_length={max_length} leaves {budget} tokens for the {what} after the rubric prompt; "
                         "raise max_length or shorten the rubric.")
    return {"chat": chat, "label_ids": label_ids, "prefix": prefix, "after": after, "answer_ids": answer_ids,
            "budget": budget}


def judge_signature(lm: Any, config: str, quality: str, rubric: str, chat: bool, max_length: int,
                    mode: str = "expected-1-5") -> str:
    dtype = str(loaded_dtype(lm.model)).replace("torch.", "")  # what ran, never the option re-resolved
    precision = {} if dtype == "float32" else {"dtype": dtype}  # named where it differs from fp32 (as FULL's fields)
    return make_signature("llm_judge", model=lm.name, backend=lm.backend, **precision, level=config, quality=quality.replace(" ", "_"),
                          rubric=rubric_hash(rubric), prompt=PROMPT_VERSION, chat="yes" if chat else "no",
                          weighting=mode, max_len=max_length)


#: |P(a better) − ½| up to which a pairwise verdict is a tie: float32 logits round at about 1e-7, so two equal
#: responses give ½ only up to rounding.
TIE_TOLERANCE = 1e-6


def both_orders(scorer: JudgeScorer, prefix: list[int], pairs: list[tuple[list[int], list[int]]],
                label_ids: list[int], batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """E over the labels of each item's prompt in the first and in the swapped order. The two prompts of an item
    always share one batch (``batch_size // 2`` items, at least one, per batch, never cut by padding cost nor
    nested in another prompt), so their padding and rounding are the same and two equal responses are a tie
    whatever the batch size."""
    per = max(1, batch_size // 2)
    first, second = [], []
    for start in range(0, len(pairs), per):
        chunk = [ids for pair in pairs[start:start + per] for ids in pair]
        e, _, _ = scorer.score(prefix, chunk, label_ids, batch_size=len(chunk), max_tokens=None, progress=False,
                               nested=False, call_cost=None)
        first += e[0::2].tolist()
        second += e[1::2].tolist()
    return np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)


def compare(contexts: Any, predictions_a: Any, predictions_b: Any, *, quality: str = "overall",
            rubric: str | None = None, model: Any = None, chat_template: bool | None = None,
            max_length: int | None = None, batch_size: int = 8, n_resamples: int = 1000, seed: int = 0,
            backend: str | None = None, progress: bool | None = None) -> dict[str, Any]:
    """Pairwise judgement of ``predictions_a`` against ``predictions_b`` (one each per context), both orders.

    p₁ = P(A | a shown first, b second), p₂ = P(B | b first, a second), each renormalised over {A, B};
    P(a better) = (p₁ + p₂)/2. ``win_rate_a`` = mean over items of 1[P > ½] + ½·1[P = ½] with a seeded
    percentile bootstrap interval over items (a tie: |P − ½| ≤ :data:`TIE_TOLERANCE`); ``position_consistency`` =
    share of items whose two verdicts pick the same response. Both orders of an item run in one batch."""
    ctx_a, preds_a = check_turn_inputs(contexts, predictions_a)
    _, preds_b = check_turn_inputs(contexts, predictions_b)
    label, text = resolve_rubric("turn", quality, rubric)
    lm = load_lm(model, backend=backend)
    scorer, tok = JudgeScorer(lm), lm.tokenizer
    head = (f"You will be shown a conversation and two candidate responses, A and B. Following the rubric, say which "
            f"response is better. Answer with A or B.\n\nRubric: {text}\n\n")
    total = min(_check_max_length(max_length), position_limit(lm.model, tok))
    frame = framed(tok, head, "\n\nWhich response is better, A or B?", chat_template, total, "pair",
                   "Better response:", ("A", "B"))

    def pair(c: list[str], first: str, second: str) -> list[int]:
        def render(turns: list[str]) -> str:
            return item_text("dialog", turns, None) + f"\n\nResponse (A): {first}\nResponse (B): {second}"
        return item_ids(tok, render, c, frame["after"], frame["budget"]) + frame["answer_ids"]

    e_first, e_second = both_orders(scorer, frame["prefix"], [(pair(c, a, b), pair(c, b, a)) for c, a, b in
                                                              zip(ctx_a, preds_a, preds_b)],
                                    frame["label_ids"], batch_size)
    # expected_rating over labels (A=1, B=2): P(A) = 2 − E
    p_a_first = 2.0 - e_first
    p_a_second = e_second - 1.0  # a is B in the swapped order
    prob = (p_a_first + p_a_second) / 2
    tie = np.abs(prob - 0.5) <= TIE_TOLERANCE
    wins = np.where(tie, 0.5, np.where(prob > 0.5, 1.0, 0.0))
    low, high = mean_interval(wins, n_resamples=n_resamples, seed=seed)
    consistent = (p_a_first > 0.5) == (p_a_second > 0.5)
    return {"win_rate_a": float(wins.mean()), "win_rate_a_ci": [low, high],
            "position_consistency": float(consistent.mean()), "p_a_better": prob.tolist(),
            "p_a_first": p_a_first.tolist(), "p_a_second": p_a_second.tolist(), "quality": label,
            "signature": judge_signature(lm, "turn", label, text, frame["chat"], total, mode="pairwise-both-orders")}
