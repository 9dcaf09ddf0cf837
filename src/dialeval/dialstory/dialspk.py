"""DialSpk (DialStory speaker recognition) accuracy.

- DAC (dialogue accuracy) = correctly attributed turns / all specified turns.
- SAC (story accuracy) = stories whose every specified turn is correct / stories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dialeval.io.signature import make_signature


def _check_story(value: Any, field: str, index: int) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"`{field}[{index}]` must be a list of speaker names (one per [MASK]), got {type(value).__name__}.")
    for j, name in enumerate(value):
        if not isinstance(name, str):
            raise TypeError(f"`{field}[{index}][{j}]` is {type(name).__name__}, not a speaker name string.")
        if not name.strip():
            raise ValueError(f"`{field}[{index}][{j}]` is an empty speaker name; every turn needs a name.")
    return list(value)


def speaker_accuracy(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    candidates: Sequence[Sequence[str]] | None = None,
) -> dict[str, Any]:
    """DAC and SAC of predicted speaker lists against gold lists, one list per story."""
    if predictions is None or references is None:
        raise ValueError("`predictions` and `references` are required: one list of speaker names per story.")
    if len(predictions) != len(references):
        raise ValueError(f"`predictions` has {len(predictions)} stories but `references` has {len(references)}.")
    if len(predictions) == 0:
        raise ValueError("`predictions` is empty; pass at least one story.")
    if candidates is not None and len(candidates) != len(references):
        raise ValueError(f"`candidates` has {len(candidates)} stories but `references` has {len(references)}.")
    correct_turns = total_turns = correct_stories = 0
    per_story = []
    for i, (pred, ref) in enumerate(zip(predictions, references)):
        pred = _check_story(pred, "predictions", i)
        ref = _check_story(ref, "references", i)
        if len(pred) != len(ref):
            raise ValueError(
                f"story {i}: {len(pred)} predicted speakers for {len(ref)} gold turns; predict one speaker per [MASK]."
            )
        if not ref:
            raise ValueError(f"story {i} has no specified turns; every DialSpk story needs at least one [MASK].")
        if candidates is not None:
            cands = set(_check_story(candidates[i], "candidates", i))
            gold_outside = [r for r in ref if r not in cands]
            if gold_outside:
                raise ValueError(f"story {i}: gold speaker {gold_outside[0]!r} is not among its candidates {sorted(cands)}.")
            outside = [p for p in pred if p not in cands]
            if outside:
                raise ValueError(f"story {i}: predicted speaker {outside[0]!r} is not among its candidates {sorted(cands)}.")
        hits = sum(p == r for p, r in zip(pred, ref))
        correct_turns += hits
        total_turns += len(ref)
        correct_stories += hits == len(ref)
        per_story.append(hits / len(ref))
    return {**accuracy_from_counts(correct_turns, total_turns, correct_stories, len(references)),
            "story_scores": per_story}


def accuracy_from_counts(correct_turns: int, total_turns: int, correct_stories: int, num_stories: int) -> dict[str, Any]:
    """DAC and SAC from correct/total counts (a mergeable state: counts of chunks add up)."""
    if total_turns <= 0 or num_stories <= 0:
        raise ValueError("DialSpk needs at least one story with one specified turn.")
    return {"dac": correct_turns / total_turns, "sac": correct_stories / num_stories,
            "num_turns": total_turns, "num_stories": num_stories}


def nearest_mention_speakers(story: str, candidates: Sequence[str]) -> list[str]:
    """A floor for DialSpk: for each ``[MASK]``, the candidate whose latest mention ends closest before
    it (ties: the longer name); when no candidate is mentioned before, the story's most mentioned
    candidate (ties: the first listed). Mentions inside earlier quoted turns count too (the baseline
    cannot tell a speaker from an addressee)."""
    from dialeval.datasets.dialstory import SPEAKER_MASK_RE

    names = _check_story(candidates, "candidates", 0)
    if not names:
        raise ValueError("`candidates` is empty; a DialSpk story needs at least one character name.")
    fallback = max(names, key=lambda n: (story.count(n), -names.index(n)))
    out = []
    for m in SPEAKER_MASK_RE.finditer(story):
        before = story[:m.start()]
        ends = {n: before.rfind(n) + len(n) for n in names if n in before}
        out.append(max(ends, key=lambda n: (ends[n], len(n))) if ends else fallback)
    return out


def baseline_predictions(stories: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[str]]:
    """:func:`nearest_mention_speakers` for every story."""
    if len(stories) != len(candidates):
        raise ValueError(f"{len(stories)} stories but {len(candidates)} candidate lists; pass one per story.")
    return [nearest_mention_speakers(s, c) for s, c in zip(stories, candidates)]


def dialspk_signature(candidates_given: bool) -> str:
    """``dialspk|candidates:given|none|level:story|version:…``."""
    return make_signature("dialspk", candidates="given" if candidates_given else "none", level="story")


def compute_dialspk(predictions: Any, references: Any, candidates: Any = None) -> dict[str, Any]:
    """DAC = correct turns / turns and SAC = fully correct stories / stories, with a signature."""
    out = speaker_accuracy(predictions, references, candidates)
    out["signature"] = dialspk_signature(candidates is not None)
    return out
