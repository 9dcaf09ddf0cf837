"""The LLM judge on rated dataset rows (declared as ``meta_adapter``): rows at their level (turn: context +
response; dialog: the conversation), speaker-tagged turns (``{"speaker", "text"}``) read as their text, as FULL's
adapter does, so both metrics read the same texts; a turn-level row without context is rated as a one-turn
conversation. The rubric is that of the dataset's overall quality: the rubric text its declaration gives, else
the judge's default rubric of that quality."""

from __future__ import annotations

from typing import Any

from dialeval.judge.llm_judge import compute_llm_judge
from dialeval.judge.rubrics import resolve_rubric
from dialeval.registry import Adapter
from dialeval.registry import get as get_declaration


def _texts(turns: list[Any]) -> list[str]:
    """Turn texts of a context of speaker-tagged turns (``{"speaker", "text"}``) or of plain strings."""
    return [t if isinstance(t, str) else t["text"] for t in turns]


def _named_rubric(level: str, quality: str) -> str | None:
    """``None`` when the judge has a default rubric for ``quality``; else a rubric made from its name alone (a
    user's own quality column that declares no rubric text)."""
    try:
        resolve_rubric("dialog" if level == "dialog" else "turn", quality, None)
        return None
    except ValueError:
        what = "the system in this conversation" if level == "dialog" else "the response"
        return f"{quality.strip()}: how good is {what} on {quality.strip()}?"


def judge_adapter(options: dict[str, Any], config: str, quality: str | None = None,
                  rubric: str | None = None) -> Adapter:
    """``score(rows) -> {"scores", "signature"}`` for ``config`` (the rows' level, turn or dialog). ``quality``:
    the dataset's overall quality and ``rubric`` the text its declaration gives for it (from the meta-evaluation),
    what the judge rates unless the options name a quality or rubric (``--metric-arg quality=...``)."""
    level = "turn" if config == "default" else config
    known = {o.name for o in get_declaration("llm_judge").options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; known: {sorted(known)}.")
    if quality is not None and "quality" not in options and "rubric" not in options:
        options = {**options, "quality": quality, "rubric": rubric or _named_rubric(level, quality)}

    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        if level == "turn" and rows and all(not r["context"] for r in rows):  # a response rated alone (fluency)
            res = compute_llm_judge(dialogues=[[r["response"]] for r in rows], config="dialog", **options)
        elif level == "turn":
            res = compute_llm_judge([_texts(r["context"]) for r in rows], [r["response"] for r in rows],
                                    config="turn", **options)
        else:
            res = compute_llm_judge(dialogues=[_texts(r["context"]) for r in rows], config="dialog", **options)
        return {"scores": list(res["scores"]), "signature": res["signature"]}

    return score
