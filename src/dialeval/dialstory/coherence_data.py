"""Coherence-classifier data by DialStory's recipe (Yao et al. 2022, §6), model-free.

The paper scores DialGen outputs with a classifier (BERT-base) fine-tuned to tell an original story
(label 1) from the same story with its dialogue turns randomly reordered and everything else kept in
place (label 0). Each source text gives one positive and one negative; a text whose turns cannot be
reordered into a different text (fewer than two distinct turns) gives neither and is counted.

Sources: DialStory stories (turns = the quoted spans, see :mod:`dialeval.datasets.dialstory`) or plain
dialogues (lists of turns, joined with a separator after shuffling). The model code is in
:mod:`dialeval.dialstory.coherence`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dialeval.io.readers import (
    MalformedDataError,
    read_json,
    read_jsonl,
    require_str,
    require_str_list,
    where,
)

ORIGINAL, SHUFFLED = 1, 0
LABELS = {SHUFFLED: "shuffled", ORIGINAL: "original"}
DIALOGUE_SEP = "\n"


@dataclass(frozen=True)
class Pair:
    """One classifier example: ``text``, ``label`` (1 original, 0 shuffled) and the ``source`` index
    (both examples of a source stay in the same split)."""

    text: str
    label: int
    source: int


def permute(items: Sequence[str], rng: random.Random, tries: int = 100) -> list[str] | None:
    """A random reordering of ``items`` that differs from the original sequence, or ``None`` when all
    items are equal (no reordering changes the text)."""
    items = list(items)
    if len(set(items)) < 2:
        return None
    for _ in range(tries):
        out = items[:]
        rng.shuffle(out)
        if out != items:
            return out
    raise RuntimeError("could not draw a different order in 100 tries")  # probability < 2^-100


def shuffle_story_turns(text: str, rng: random.Random) -> str | None:
    """The story with the contents of its quoted dialogue turns randomly reordered, every other
    character in place; ``None`` when fewer than two distinct turns."""
    from dialeval.datasets.dialstory import dialogue_turns

    spans = dialogue_turns(text)
    order = permute([text[s:e] for s, e in spans], rng)
    if order is None:
        return None
    pieces, pos = [], 0
    for (s, e), turn in zip(spans, order):
        pieces += [text[pos:s], turn]
        pos = e
    pieces.append(text[pos:])
    return "".join(pieces)


def join_dialogue(turns: Sequence[str], sep: str = DIALOGUE_SEP) -> str:
    """A dialogue as one classifier input: turns (stripped) joined by ``sep``."""
    return sep.join(t.strip() for t in turns)


def story_pairs(stories: Sequence[str], seed: int = 0) -> tuple[list[Pair], int]:
    """Positive/negative pairs of DialStory stories and the number of stories that gave none.

    Story ``i`` is shuffled with ``random.Random(f"{seed}:{i}")``.
    """
    pairs, skipped = [], 0
    for i, text in enumerate(stories):
        neg = shuffle_story_turns(text, random.Random(f"{seed}:{i}"))
        if neg is None:
            skipped += 1
            continue
        pairs += [Pair(text, ORIGINAL, i), Pair(neg, SHUFFLED, i)]
    return pairs, skipped


def dialogue_pairs(dialogues: Sequence[Sequence[str]], seed: int = 0,
                   sep: str = DIALOGUE_SEP) -> tuple[list[Pair], int]:
    """Positive/negative pairs of dialogues (turn lists) and the number that gave none."""
    pairs, skipped = [], 0
    for i, turns in enumerate(dialogues):
        order = permute(turns, random.Random(f"{seed}:{i}"))
        if order is None:
            skipped += 1
            continue
        pairs += [Pair(join_dialogue(turns, sep), ORIGINAL, i), Pair(join_dialogue(order, sep), SHUFFLED, i)]
    return pairs, skipped


def split_by_source(pairs: Sequence[Pair], fraction: float, seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """(train, held-out) with ``round(fraction · sources)`` whole sources held out (at least one)."""
    if not 0 < fraction < 1:
        raise ValueError(f"the validation fraction must be in (0, 1), got {fraction}.")
    sources = sorted({p.source for p in pairs})
    if len(sources) < 2:
        raise ValueError(f"only {len(sources)} usable source text(s); at least 2 are needed to hold one out "
                         "for early stopping.")
    k = min(len(sources) - 1, max(1, round(fraction * len(sources))))
    held = set(random.Random(f"{seed}:split").sample(sources, k))
    return [p for p in pairs if p.source not in held], [p for p in pairs if p.source in held]


def majority_accuracy(pairs: Sequence[Pair]) -> float:
    """Accuracy of always predicting the most frequent label (0.5 for balanced pairs)."""
    ones = sum(p.label for p in pairs)
    return max(ones, len(pairs) - ones) / len(pairs)


# -- reading sources -----------------------------------------------------------------------------------
def read_sources(data: str | Path, split: str) -> tuple[str, list[Any]]:
    """``("story", [text, …])`` or ``("dialogue", [[turn, …], …])`` for ``split`` of ``data``.

    ``data`` is a JSON Lines file (records with ``story`` (+ ``targets`` for DialGen, filled back in),
    or ``turns``), a DialStory folder (``dialgen/<split>.jsonl`` or ``raw/<split>.jsonl``), or a
    DailyDialog ParlAI folder (``<split>.json``; ``valid.json`` for validation).
    """
    p = Path(data)
    if p.is_file():
        return _read_jsonl_sources(p)
    if not p.is_dir():
        raise FileNotFoundError(f"--data {str(p)!r} is neither a file nor a folder.")
    candidates = [p / "dialgen" / f"{split}.jsonl", p / "raw" / f"{split}.jsonl", p / f"{split}.jsonl"]
    for c in candidates:
        if c.is_file():
            return _read_jsonl_sources(c)
    names = [f"{split}.json"] + (["valid.json"] if split == "validation" else [])
    for name in names:
        if (p / name).is_file():
            return "dialogue", _read_parlai_dialogues(p / name)
    raise FileNotFoundError(f"no {split!r} split under {str(p)!r}: expected one of "
                            f"{[str(c.relative_to(p)) for c in candidates] + names}.")


def _read_jsonl_sources(path: Path) -> tuple[str, list[Any]]:
    from dialeval.datasets.dialstory import fill_masks

    kind, items = None, []
    for lineno, obj in read_jsonl(path):
        loc = where(path, lineno)
        if "story" in obj:
            this, story = "story", require_str(obj["story"], "story", loc)
            if "targets" in obj:
                story = fill_masks(story, require_str_list(obj["targets"], "targets", loc))
            item: Any = story
        elif "turns" in obj:
            this, item = "dialogue", require_str_list(obj["turns"], "turns", loc)
        else:
            raise MalformedDataError(f"{loc}: expected a 'story' (DialStory) or 'turns' (dialogue) field, "
                                     f"found {sorted(obj)}.")
        if kind not in (None, this):
            raise MalformedDataError(f"{loc}: mixes stories and dialogues; use one kind per file.")
        kind = this
        items.append(item)
    if kind is None:
        raise ValueError(f"{path} holds no records.")
    return kind, items


def _read_parlai_dialogues(path: Path) -> list[list[str]]:
    """The turn texts of a ParlAI DailyDialog file, read by the DailyDialog builder's own rows: every record is
    checked as the builder checks it, its topic/act/emotion labels among the ClassLabel names included."""
    from dialeval.datasets.dailydialog import dialogue_rows

    return [row["dialog"] for row in dialogue_rows(read_json(path), path)]


def build_pairs(kind: str, items: Sequence[Any], seed: int = 0, sep: str = DIALOGUE_SEP) -> tuple[list[Pair], int]:
    """Pairs of ``read_sources`` output."""
    if kind == "story":
        return story_pairs(items, seed)
    if kind == "dialogue":
        return dialogue_pairs(items, seed, sep)
    raise ValueError(f"unknown source kind {kind!r}; use 'story' or 'dialogue'.")
