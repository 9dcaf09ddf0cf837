"""Same-context rivals for the learned evaluator: DailyDialog++ contexts (Sai et al., TACL 2020), each with five
human-written positive responses and five adversarial negatives (responses that share the context's words or
topic yet do not follow it), the signal DEB trains on.

Only the release's ``dev.json`` is read, never ``test.json`` (a leaderboard unit). A record is left out when two
consecutive turns of its context are two consecutive turns of a DailyDialog validation or test dialogue, or its
one-turn context is a turn of one (compared on lower-cased letters and digits), so neither training nor the proxy
reads the held-out dialogue. Turns are compared exactly, so a context whose turns DailyDialog++ reworded slips
through (9 of the 452 training contexts and 7 of the 451 proxy ones share a turn of 20 or more letters with a
held-out dialogue; the model card says so). Of the rest, in file order, the even positions are the training half
and the odd positions the proxy half. Every record must hold as many positives, adversarial and random negatives
as the file's first.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from dialeval.relevance.corpus import SPLIT_FILES, read_split_file

RIVALS_FOLDER = "dailydialog_plusplus"
RIVALS_FILE = "dev.json"
HALVES = ("train", "proxy")


@dataclass(frozen=True)
class Rivals:
    """One context (its turns, oldest first) with its positive, adversarial and random responses."""

    context: list[str]
    positives: list[str]
    adversarial: list[str]
    random: list[str]


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _held_out_keys(dailydialog: Path) -> set[tuple[str, ...]]:
    """Every turn (a 1-tuple) and every two consecutive turns of DailyDialog validation and test."""
    keys: set[tuple[str, ...]] = set()
    for name in SPLIT_FILES.values():
        for dialogue in read_split_file(dailydialog / name):
            turns = [_letters(t) for t in dialogue]
            keys.update((t,) for t in turns)
            keys.update(zip(turns, turns[1:]))
    return keys


def _context_keys(context: list[str]) -> set[tuple[str, ...]]:
    turns = [_letters(t) for t in context]
    return set(zip(turns, turns[1:])) if len(turns) > 1 else {(turns[0],)}


def rivals_file(data_dir: str | os.PathLike) -> Path:
    """``dailydialog_plusplus/dev.json`` under ``data_dir`` (the folder above ``dailydialog``) or beside it."""
    root = Path(data_dir)
    for candidate in (root / RIVALS_FOLDER / RIVALS_FILE, root.parent / RIVALS_FOLDER / RIVALS_FILE):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"--data-dir {data_dir}: no {RIVALS_FOLDER}/{RIVALS_FILE} in it or beside it; "
                            "same-context rivals need DailyDialog++'s dev.json (train-evaluator: pass "
                            "--rival-contexts 0 to train on DailyDialog alone).")


def load_rivals(data_dir: str | os.PathLike, half: str) -> list[Rivals]:
    """The ``half`` (``"train"`` or ``"proxy"``) of DailyDialog++'s ``dev.json`` records that share no two
    consecutive turns with DailyDialog validation or test."""
    from dialeval.datasets.dailydialog_plusplus import parse_record
    from dialeval.io.readers import read_jsonl, where

    if half not in HALVES:
        raise ValueError(f"half={half!r}: give one of {HALVES}.")
    path = rivals_file(data_dir)
    dailydialog = path.parent.parent / "dailydialog"
    missing = [name for name in SPLIT_FILES.values() if not (dailydialog / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{path}: DailyDialog's {' and '.join(missing)} must sit in {dailydialog} beside it, "
                                "to leave out the contexts of held-out dialogue.")
    held = _held_out_keys(dailydialog)
    kept, shape = [], None
    for lineno, obj in read_jsonl(path):
        row = Rivals(*_fields(parse_record(obj, "default", where(path, lineno))))
        sizes = (len(row.positives), len(row.adversarial), len(row.random))
        shape = shape or sizes
        if sizes != shape:
            raise ValueError(f"{where(path, lineno)}: {sizes[0]} positive, {sizes[1]} adversarial and {sizes[2]} "
                             f"random responses where the file's first record has {shape[0]}, {shape[1]} and "
                             f"{shape[2]}; every context needs the same numbers.")
        if not held.intersection(_context_keys(row.context)):
            kept.append(row)
    chosen = kept[HALVES.index(half)::2]
    if not chosen:
        raise ValueError(f"{path}: no context is left in its {half} half once those of held-out DailyDialog "
                         "dialogue are left out; give the full DailyDialog++ dev.json.")
    return chosen


def _fields(row: dict) -> tuple[list[str], ...]:
    return (row["context"], row["positive_responses"], row["adversarial_negative_responses"],
            row["random_negative_responses"])
