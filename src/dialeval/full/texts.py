"""FULL: dialogue evaluation by the likelihood of negative follow-ups (De Bruyn et al. 2022).

For a dialogue history ``h`` (turn level: the context with the rated response appended) and each negative
follow-up ``f`` ("You're really boring." …), a language model gives ``NLL(f | h) = -(1/|f|) Σ_t log p(f_t |
h, f_<t)``. The default score is ``mean_f NLL(f | h)``: the less likely the complaints, the better the
conversation (higher = better).

``compat="full-0.0.3"`` reproduces the reference package ``full`` 0.0.3.1 exactly, warts included: last 50
turns, text ``"\\t" + "\\t".join(turns)``, right-side truncation at the tokenizer maximum (so a long history
loses its most recent turns), labels with ``</s>``, per-follow-up perplexity ``exp(NLL)`` and its four
follow-ups (a missing comma fuses two of the paper's five).

This module holds the pure functions (inputs, texts, truncation, aggregation); the model side
(:class:`~dialeval.full.scorer.FollowupScorer`, :func:`~dialeval.full.scorer.full_scores`) is in
:mod:`dialeval.full.scorer`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.io.validation import check_list

#: The paper's final five follow-ups (De Bruyn et al. 2022, Table 2).
FOLLOW_UPS: tuple[str, ...] = (
    "Not really relevant here.",
    "You're really confusing.",
    "You're really boring.",
    "What are you trying to say?",
    "You don't seem interested.",
)
#: What ``full`` 0.0.3.1 actually scores: a missing comma fuses the 2nd and 3rd follow-ups.
FULL_0_0_3_FOLLOW_UPS: tuple[str, ...] = (
    "Not really relevant here.",
    "You're really confusing.You're really boring.",
    "What are you trying to say?",
    "You don't seem interested.",
)
COMPAT_MODES = ("full-0.0.3",)
#: ``full`` 0.0.3.1 keeps the last ``lookback`` turns (turn level: those plus the response).
PACKAGE_LOOKBACK = 50
PACKAGE_SEPARATOR = "\t"

CITATION = """@inproceedings{debruyn-etal-2022-full,
  title = {Open-Domain Dialog Evaluation Using Follow-Ups Likelihood},
  author = {De Bruyn, Maxime and Lotfi, Ehsan and Buhmann, Jeska and Daelemans, Walter},
  booktitle = {Proceedings of the 29th International Conference on Computational Linguistics (COLING)},
  year = {2022}}
"""


def check_follow_ups(follow_ups: Any) -> tuple[str, ...]:
    out = check_list(follow_ups, "follow_ups")
    for i, f in enumerate(out):
        if not isinstance(f, str) or not f.strip():
            raise ValueError(f"`follow_ups[{i}]` must be a non-empty string, got {f!r:.40}.")
    return tuple(out)


# --------------------------------------------------------------------------------------------------
# Pure functions: texts, truncation, aggregation
# --------------------------------------------------------------------------------------------------

def package_history_text(turns: Sequence[str], lookback: int = PACKAGE_LOOKBACK, sep: str = PACKAGE_SEPARATOR) -> str:
    """``full`` 0.0.3.1's encoder text: ``sep + sep.join(turns[-lookback:])``.

    Turn level passes ``context[-lookback:] + [response]`` (the package keeps 50 context turns *plus* the
    response), so call it as ``package_history_text(context[-50:] + [response], lookback=51)``.
    """
    return sep + sep.join(list(turns)[-lookback:])


def package_turns(context: Sequence[str], response: str | None, lookback: int = PACKAGE_LOOKBACK) -> list[str]:
    """The turns ``full`` 0.0.3.1 keeps: the last ``lookback`` context turns, plus the response at turn level."""
    kept = list(context)[-lookback:]
    return kept + [response] if response is not None else kept


def recent_turns_fitting(turn_lengths: Sequence[int], budget: int) -> int:
    """Index of the oldest turn to keep so that the kept turns' lengths sum to at most ``budget``.

    Turns are dropped from the left (oldest first); the last turn (the response being rated) is always
    kept, even when it alone exceeds the budget (the caller then cuts its oldest tokens).

    >>> recent_turns_fitting([5, 4, 3], 6)
    2
    >>> recent_turns_fitting([5, 4, 3], 12)
    0
    """
    if not turn_lengths:
        raise ValueError("no turns to fit")
    total = 0
    for i in range(len(turn_lengths) - 1, -1, -1):
        total += turn_lengths[i]
        if total > budget:
            return min(i + 1, len(turn_lengths) - 1)
    return 0


def keep_last_tokens(ids: Sequence[int], budget: int, prefix: Sequence[int] = (), suffix: Sequence[int] = ()) -> list[int]:
    """``prefix + ids + suffix`` cut from the left of ``ids`` so the result has at most ``budget`` tokens."""
    room = budget - len(prefix) - len(suffix)
    if room < 1:
        raise ValueError(f"a budget of {budget} tokens leaves no room for the history.")
    return list(prefix) + list(ids)[-room:] + list(suffix)


def mean_token_nll(token_logprobs: Sequence[float]) -> float:
    """``-(1/T) Σ_t log p_t``: a follow-up's mean per-token negative log-likelihood (nats)."""
    if len(token_logprobs) == 0:
        raise ValueError("a follow-up with no tokens has no likelihood")
    return -math.fsum(token_logprobs) / len(token_logprobs)


def followup_values(nll: np.ndarray, compat: str | None = None) -> np.ndarray:
    """Per-follow-up values from mean NLLs: the NLL itself, or ``exp(NLL)`` (perplexity) in compat mode."""
    nll = np.asarray(nll, dtype=np.float64)
    return np.exp(nll) if compat else nll


def aggregate_followups(values: np.ndarray) -> np.ndarray:
    """FULL score per item = arithmetic mean over follow-ups (rows = items, columns = follow-ups)."""
    values = np.asarray(values, dtype=np.float64)
    return values.mean(axis=-1)
