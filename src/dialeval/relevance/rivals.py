"""Same-context rivals for the learned evaluator: DailyDialog++ contexts (Sai et al., TACL 2020), each with five
human-written positive responses and five adversarial negatives (responses that share the context's words or
topic yet do not follow it), the signal DEB trains on.

Only the release's ``dev.json`` is read, never ``test.json`` (a leaderboard unit). A record is left out when it
matches DailyDialog validation or test dialogue (compared on lower-cased letters and digits): two consecutive
context turns are two consecutive turns of a held-out dialogue, or its one-turn context is a turn of one; any of
its texts (context turns and responses) of at least 20 letters and digits is a held-out turn; or two or more of its
context turns each share a run of six words with the same held-out dialogue (the same run counts for each turn
that holds it). DailyDialog++ reworded some turns, so exact turns alone miss them. The rule errs towards leaving
out: some long turns it matches are stock lines that DailyDialog's training dialogues hold too ("What seems to be
the problem?"). Of the rest, in file order, the even positions are the training half and the odd
positions the proxy half. Every record must hold at least one positive, adversarial and random response, and as
many of each as the file's first.
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


LONG_TURN = 20  # letters and digits: a matched held-out turn at least this long leaves the record out
SHINGLE = 6  # words: two context turns sharing a run this long with one held-out dialogue leave the record out


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


@dataclass(frozen=True)
class HeldOut:
    """What DailyDialog validation and test hold: their turns and turn pairs (letters only) and, for each run of
    six words, the dialogues it occurs in."""

    turns: set[tuple[str, ...]]
    shingles: dict[tuple[str, ...], set[int]]

    def matches(self, row: Rivals) -> bool:
        """Whether ``row`` matches held-out dialogue, by the three tests of the module docstring."""
        turns = [_letters(t) for t in row.context]
        if not turns:
            return False
        keys = set(zip(turns, turns[1:])) if len(turns) > 1 else {(turns[0],)}
        texts = [_letters(t) for t in [*row.context, *row.positives, *row.adversarial, *row.random]]
        if self.turns.intersection(keys) or any(len(t) >= LONG_TURN and (t,) in self.turns for t in texts):
            return True
        dialogues = [set().union(*(self.shingles.get(s, set()) for s in _shingles(t))) for t in row.context]
        return any(sum(d in found for found in dialogues) >= 2 for d in set().union(*dialogues))


def held_out(dailydialog: Path) -> HeldOut:
    """Every turn (a 1-tuple), every two consecutive turns and every six-word run of DailyDialog validation and
    test."""
    turns: set[tuple[str, ...]] = set()
    shingles: dict[tuple[str, ...], set[int]] = {}
    dialogues = (d for name in SPLIT_FILES.values() for d in read_split_file(dailydialog / name))
    for index, dialogue in enumerate(dialogues):
        letters = [_letters(t) for t in dialogue]
        turns.update((t,) for t in letters)
        turns.update(zip(letters, letters[1:]))
        for text in dialogue:
            for shingle in _shingles(text):
                shingles.setdefault(shingle, set()).add(index)
    return HeldOut(turns, shingles)


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
    """The ``half`` (``"train"`` or ``"proxy"``) of DailyDialog++'s ``dev.json`` records that match no DailyDialog
    validation or test dialogue (:meth:`HeldOut.matches`)."""
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
    held = held_out(dailydialog)
    kept, shape = [], None
    for lineno, obj in read_jsonl(path):
        row = Rivals(*_fields(parse_record(obj, "default", where(path, lineno))))
        sizes = (len(row.positives), len(row.adversarial), len(row.random))
        if not all(sizes):
            raise ValueError(f"{where(path, lineno)}: {sizes[0]} positive, {sizes[1]} adversarial and {sizes[2]} "
                             "random responses; every context needs at least one of each.")
        shape = shape or sizes
        if sizes != shape:
            raise ValueError(f"{where(path, lineno)}: {sizes[0]} positive, {sizes[1]} adversarial and {sizes[2]} "
                             f"random responses where the file's first record has {shape[0]}, {shape[1]} and "
                             f"{shape[2]}; every context needs the same numbers.")
        if not held.matches(row):
            kept.append(row)
    chosen = kept[HALVES.index(half)::2]
    if not chosen:
        raise ValueError(f"{path}: no context is left in its {half} half once those of held-out DailyDialog "
                         "dialogue are left out; give the full DailyDialog++ dev.json.")
    return chosen


def _fields(row: dict) -> tuple[list[str], ...]:
    return (row["context"], row["positive_responses"], row["adversarial_negative_responses"],
            row["random_negative_responses"])
