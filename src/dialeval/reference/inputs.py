"""Validation of the inputs every reference-based metric reads: responses and their references."""

from __future__ import annotations

from typing import Any

from dialeval.io.validation import check_list, check_texts, check_valid_unicode


def check_references(predictions: Any, references: Any) -> tuple[list[str], list[list[str]]]:
    """``(responses, reference lists)``: ``predictions`` a list of strings; ``references`` one item per response,
    each a string or a non-empty list of strings (several references: each metric keeps its own multi-reference
    rule, usually the best match)."""
    preds = check_texts(predictions, "predictions")
    refs = check_list(references, "references", item="reference")
    if len(refs) != len(preds):
        raise ValueError(f"`predictions` has {len(preds)} items but `references` has {len(refs)}; give one reference "
                         "(or a list of references) per response.")
    out: list[list[str]] = []
    for i, ref in enumerate(refs):
        group = [ref] if isinstance(ref, str) else ref
        if isinstance(group, dict) or not isinstance(group, (list, tuple)):
            raise TypeError(f"`references[{i}]` is {type(ref).__name__} ({ref!r:.40}); give a string or a list of "
                            "strings.")
        if not group:
            raise ValueError(f"`references[{i}]` is an empty list; every response needs at least one reference.")
        bad = next((j for j, r in enumerate(group) if not isinstance(r, str)), None)
        if bad is not None:
            raise TypeError(f"`references[{i}][{bad}]` is {type(group[bad]).__name__} ({group[bad]!r:.40}), not a "
                            "string.")
        check_valid_unicode(list(group), f"references[{i}]")
        out.append(list(group))
    return preds, out


def row_references(row: dict[str, Any]) -> list[str]:
    """A meta-evaluation row's references (``reference``: a string or a list of strings), empty ones left out."""
    ref = row.get("reference")
    refs = [ref] if isinstance(ref, str) else list(ref or [])
    return [r for r in refs if isinstance(r, str) and r.strip()]
