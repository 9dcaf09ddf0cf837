"""Rubrics and prompts of the LLM judge (G-Eval's rubric prompt, Liu et al. 2023; Prometheus 2's 1–5 scale,
Kim et al. 2024): a default rubric per quality of Mehri & Eskenazi's fine-grained turn and dialogue annotation
schemes (2020) and an ``overall`` one, or any rubric text; a dataset declares the rubric of its own overall
quality (its declaration's ``rubrics``), and the meta-evaluation hands it to the judge.

A prompt is one user message, ``INSTRUCTION`` + the rubric + the item + ``QUESTION``, rendered through the
model's chat template when it has one, and followed by the answer prefix ``Rating:``; the judge then reads the
next-token distribution over the ratings "1"…"5". Everything before the item is the same for every item of a
quality (the shared prefix, run once). :data:`PROMPT_VERSION` names this layout in signatures; the rubric's
SHA-256 names its text.
"""

from __future__ import annotations

import hashlib
from typing import Any

PROMPT_VERSION = "geval2"  # geval1 labelled the last context turn B at turn level
RATINGS = ("1", "2", "3", "4", "5")
INSTRUCTION = ("You will be shown a conversation{what}. Rate it on one quality, from 1 (worst) to 5 (best), "
               "following the rubric. Answer with a single digit.")
QUESTION = "How would you rate the {target} on this quality (1-5)?"
ANSWER_PREFIX = "Rating:"
MAX_RUBRIC_CHARS = 4000

#: Turn-level rubrics: the response given the context.
TURN_RUBRICS = {
    "overall": "Overall impression: how good is the response as the next turn of this conversation?",
    "interesting": "Interesting: is the response interesting, rather than dull or generic?",
    "engaging": "Engaging: does the response make you want to continue the conversation?",
    "specific": "Specific: is the response specific to the conversation, rather than generic?",
    "relevant": "Relevant: is the response relevant to what was said before?",
    "correct": "Correct: is the response correct, free of misunderstanding of the conversation?",
    "semantically appropriate": "Semantically appropriate: is the response appropriate in meaning for the context?",
    "understandable": "Understandable: is the response understandable in the context?",
    "fluent": "Fluent: is the response fluently written?",
    "natural": "Natural: is the response naturally written, as a person would say it?",
    "maintains context": "Maintains context: does the response serve as a valid continuation of the conversation?",
    "uses knowledge": "Uses knowledge: does the response use the given fact or knowledge well?",
}
#: Dialogue-level rubrics: the whole conversation.
DIALOG_RUBRICS = {
    "overall": "Overall impression: how good is the system in this conversation as a whole?",
    "coherent": "Coherent: does the system stay coherent throughout the conversation?",
    "error recovery": "Error recovery: is the system able to recover from errors that it makes?",
    "consistent": "Consistent: is the system consistent in the information it gives?",
    "diverse": "Diverse: does the system produce diverse, not repetitive, responses?",
    "topic depth": "Topic depth: does the system discuss topics in depth?",
    "likeable": "Likeable: does the system display a likeable personality?",
    "understanding": "Understanding: does the system understand the user?",
    "flexible": "Flexible: is the system flexible and adaptable to the user and their interests?",
    "informative": "Informative: is the system informative throughout the conversation?",
    "inquisitive": "Inquisitive: is the system inquisitive throughout the conversation?",
}
RUBRICS = {"turn": TURN_RUBRICS, "dialog": DIALOG_RUBRICS}
#: Annotated quality names that mean a default rubric's quality (overall ratings under other names).
ALIASES = {"overall impression": "overall", "human (overall)": "overall"}


def quality_key(quality: str) -> str:
    """``"Maintains Context"``, ``"maintains_context"`` → ``"maintains context"``."""
    return " ".join(quality.replace("_", " ").split()).lower()


def resolve_rubric(level: str, quality: Any, rubric: Any) -> tuple[str, str]:
    """(quality label, rubric text): the default rubric of ``quality`` at ``level``, or ``rubric`` (a user's own
    text, any quality label). Errors name the option and the known qualities."""
    if not isinstance(quality, str) or not quality.strip():
        raise ValueError(f"quality={quality!r}: give a quality name, e.g. 'overall' (known at level {level!r}: "
                         f"{sorted(RUBRICS[level])}), or your own rubric= text with any name.")
    if rubric is not None:
        if not isinstance(rubric, str) or not rubric.strip():
            raise ValueError(f"rubric={rubric!r:.60}: give the rubric as non-empty text (what a rating of 1 and 5 "
                             "mean), or leave it None for the default rubric of the quality.")
        if len(rubric) > MAX_RUBRIC_CHARS:
            raise ValueError(f"rubric has {len(rubric):,} characters; at most {MAX_RUBRIC_CHARS:,} (it is part of "
                             "every prompt).")
        return quality.strip(), rubric.strip()
    key = quality_key(quality)
    key = ALIASES.get(key, key)
    if key not in RUBRICS[level]:
        raise ValueError(f"quality={quality!r} has no default rubric at level {level!r}; use one of "
                         f"{sorted(RUBRICS[level])}, or pass your own rubric= text.")
    return key, RUBRICS[level][key]


def rubric_hash(text: str) -> str:
    """The first 10 hex digits of the rubric text's SHA-256 (UTF-8), for signatures."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def item_text(level: str, context: list[str], response: str | None) -> str:
    """The conversation as the prompt shows it: one turn a line, ``A:``/``B:`` alternating so that the scored
    speaker is ``B``. Turn level: the last context turn is the other speaker's (A), then ``Response (B):``.
    Dialogue level: the conversation opens with the user (A), so the system is B."""
    turns = list(context)
    first = ("A" if len(turns) % 2 == 1 else "B") if level == "turn" else "A"
    other = "B" if first == "A" else "A"
    lines = [f"{first if i % 2 == 0 else other}: {t}" for i, t in enumerate(turns)]
    if level == "turn":
        return "Conversation:\n" + "\n".join(lines) + f"\n\nResponse (B): {response}"
    return "Conversation:\n" + "\n".join(lines)


def prompt_parts(level: str, rubric: str) -> tuple[str, str]:
    """(the text before the item, the text after it) of the user message."""
    what = " and a candidate response (speaker B)" if level == "turn" else " between a user (A) and a system (B)"
    target = "response" if level == "turn" else "system (B)"
    head = f"{INSTRUCTION.format(what=what)}\n\nRubric: {rubric}\n\n"
    return head, f"\n\n{QUESTION.format(target=target)}"
