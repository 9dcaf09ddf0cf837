"""FULL formulation options (pure functions): the default text and aggregation per model kind, how the
follow-up's own turn is written (a chat template's message, see :func:`chat_pieces`) and how a follow-up's
token log-probabilities are aggregated (:func:`followup_nll`). ``benchmarks/full_formulations.py`` measures
them on FED and DailyDialog++."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.models.lm import DEFAULT_LM, GEMMA3_LM

AGGREGATIONS = ("mean", "sum")

#: Default mode, per model kind (``benchmarks/full_formulations.py``; the FULL card has the tables). Causal
#: LMs: bare turns each followed by a newline, the summed follow-up NLL, the last 1024 history tokens: the
#: text with the best FED ρ (mean of turn and dialog) averaged over the two offline models studied, and
#: Gemma-3-270M's own winner. Seq2seq models were not measured here (no BlenderBot offline) and keep the
#: earlier text (newline, mean, the model's limit).
DEFAULT_FORMULATION: dict[str, dict[str, Any]] = {
    "causal": {"separator": "\n", "aggregation": "sum", "max_length": 1024},
    "seq2seq": {"separator": "\n", "aggregation": "mean", "max_length": None},
}
#: Each offline model's own study winner (``dialeval.models.lm`` names), overriding its kind's default. SmolLM2:
#: FED turn/dialog ρ 0.352/0.463 against 0.274/0.473 for the earlier newline/mean/1024 text; Gemma-3-270M:
#: 0.333/0.516 against 0.329/0.494.
MODEL_FORMULATIONS: dict[str, dict[str, Any]] = {
    DEFAULT_LM: {"separator": " ", "aggregation": "sum", "max_length": 512},
    GEMMA3_LM: {"separator": "\n", "aggregation": "sum", "max_length": 1024},
}


def default_formulation(kind: str, compat: str | None = None, offline: str | None = None) -> dict[str, Any]:
    """The default ``separator``, ``aggregation`` and ``max_length`` cap for a model ``kind``, or for the
    offline model ``offline`` (compat mode always averages: the package's perplexity)."""
    out = {**DEFAULT_FORMULATION[kind], **MODEL_FORMULATIONS.get(offline or "", {})}
    if compat:
        out["aggregation"] = "mean"
    return out


def followup_nll(mean_nll: np.ndarray, token_counts: Sequence[int], aggregation: str = "mean") -> np.ndarray:
    """Per-follow-up NLL from mean per-token NLLs ``[items, F]``: ``"mean"`` keeps −(1/T_f) Σ_t log p_t;
    ``"sum"`` gives −Σ_t log p_t = T_f · mean (the follow-ups are tokenized alone, so T_f is fixed)."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"`aggregation`={aggregation!r} is not known; use one of {AGGREGATIONS}.")
    nll = np.asarray(mean_nll, dtype=np.float64)
    return nll * np.asarray(token_counts, dtype=np.float64) if aggregation == "sum" else nll


def chat_pieces(render: Any, turns: Sequence[str], follow_up_role: str = "user") -> tuple[list[str], str]:
    """The history written with a chat template: one text piece per turn and the ``cue`` that opens the
    follow-up's message. Roles alternate backwards from the follow-up (``follow_up_role``), so the last
    turn, the one being rated, is the other role. ``render(messages) -> str`` is the template (e.g.
    ``tokenizer.apply_chat_template(..., tokenize=False)``); piece i is what message i adds to the text."""
    other = "assistant" if follow_up_role == "user" else "user"
    roles = [other if (len(turns) - i) % 2 else follow_up_role for i in range(len(turns))]
    messages = [{"role": r, "content": t} for r, t in zip(roles, turns)]
    mark = "\x00FOLLOW-UP\x00"
    texts = [""] + [render(messages[: i + 1]) for i in range(len(messages))]
    opened = render(messages + [{"role": follow_up_role, "content": mark}])
    for a, b in zip(texts, texts[1:] + [opened]):
        if not b.startswith(a):
            raise ValueError("this chat template does not render a conversation as a prefix of its continuation; "
                             "use chat_template=False.")
    return [b[len(a):] for a, b in zip(texts, texts[1:])], opened[len(texts[-1]):].split(mark)[0]


def check_formulation(lm: Any, compat: str | None, follow_up_prefix: str, chat_template: bool) -> None:
    """Follow-up prefixes and chat templates are causal-LM, default-mode options."""
    if not isinstance(follow_up_prefix, str):
        raise TypeError(f"`follow_up_prefix` must be a string, got {type(follow_up_prefix).__name__}.")
    if not isinstance(chat_template, bool):
        raise TypeError(f"`chat_template` must be True or False, got {chat_template!r}.")
    if (follow_up_prefix or chat_template) and (compat or lm.kind != "causal"):
        raise ValueError("`follow_up_prefix` and `chat_template` apply to causal LMs in default mode; "
                         f"{lm.name!r} is {lm.kind}{' in compat mode' if compat else ''}. Leave them unset.")
    if follow_up_prefix and chat_template:
        raise ValueError("`follow_up_prefix` and `chat_template=True` both write the follow-up's turn; use one.")
    if chat_template and not getattr(lm.tokenizer, "chat_template", None):
        raise ValueError(f"`chat_template=True` but the tokenizer of {lm.name!r} has no chat template; "
                         "use chat_template=False.")
