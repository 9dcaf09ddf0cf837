"""Context relevance and the learned evaluator on rated dataset rows (declared as ``meta_adapter``): turn rows
are a context and a response, dialogue rows a conversation; speaker-tagged turns (``{"speaker", "text"}``) are
read as their text, and a row's speakers (its ``speakers`` field, or the turns' tags) mark the replies scored at
dialogue level (:func:`dialeval.relevance.core.reply_positions`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dialeval.registry import Adapter
from dialeval.registry import get as get_declaration


def _texts(turns: list[Any]) -> list[str]:
    return [t if isinstance(t, str) else t["text"] for t in turns]


def _speakers(row: dict[str, Any]) -> list[str] | None:
    turns = row["context"]
    if turns and all(isinstance(t, dict) and "speaker" in t for t in turns):
        return [str(t["speaker"]) for t in turns]
    speakers = row.get("speakers")
    return list(speakers) if speakers and len(speakers) == len(turns) else None


def _rows_adapter(metric: str, compute: Callable[..., dict[str, Any]], options: dict[str, Any],
                  config: str) -> Adapter:
    level = "turn" if config == "default" else config
    known = {o.name for o in get_declaration(metric).options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for {metric}; known: {sorted(known)}.")

    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        if level == "turn":
            res = compute([_texts(r["context"]) for r in rows], [r["response"] for r in rows], config="turn",
                          **options)
        else:
            speakers = [_speakers(r) for r in rows]
            res = compute(dialogues=[_texts(r["context"]) for r in rows], config="dialog",
                          speakers=speakers if all(s is not None for s in speakers) else None, **options)
        return {"scores": list(res["scores"]), "signature": res["signature"]}

    return score


def relevance_adapter(options: dict[str, Any], config: str) -> Adapter:
    """``score(rows) -> {"scores", "signature"}`` of context relevance at ``config`` (the rows' level)."""
    from dialeval.relevance.core import compute_context_relevance

    return _rows_adapter("context_relevance", compute_context_relevance, options, config)


def learned_quality_adapter(options: dict[str, Any], config: str) -> Adapter:
    """``score(rows) -> {"scores", "signature"}`` of the learned evaluator at ``config`` (the rows' level)."""
    from dialeval.relevance.evaluator import compute_learned_quality

    return _rows_adapter("learned_quality", compute_learned_quality, options, config)
