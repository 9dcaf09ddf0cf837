"""The unlabelled dialogue the learned evaluator trains on: DailyDialog's original training split, without the
dialogues that overlap its validation or test split, and the perturbed utterances of valid-utterance prediction.

DailyDialog (Li et al. 2017) ships ``train/dialogues_train.txt`` (one dialogue a line, utterances separated by
``__eou__``) and ParlAI-format ``validation.json``/``test.json``. Some training dialogues repeat a validation or
test dialogue; a dialogue is left out of training when its first :data:`OVERLAP_CHARS` characters (utterances
joined by one space, whitespace collapsed) equal those of a validation or test dialogue.

Perturbations follow USL-H's valid-utterance prediction (Phy et al. 2020): a response with words dropped,
repeated or shuffled is not a valid utterance. Every choice is drawn from ``numpy.random.default_rng((seed, i))``,
so utterance ``i``'s perturbation does not depend on which other utterances are perturbed.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TRAIN_FILE = Path("train") / "dialogues_train.txt"
SPLIT_FILES = {"validation": "validation.json", "test": "test.json"}
OVERLAP_CHARS = 300
EOU = "__eou__"
PERTURBATIONS = ("drop", "repeat", "shuffle")
MIN_PERTURB_WORDS = 3  # a shorter utterance has no perturbation that is reliably invalid


@dataclass(frozen=True)
class DialogueCorpus:
    """Training and validation dialogues (each a list of utterances) and how many training dialogues were left
    out for overlapping validation or test."""

    train: list[list[str]]
    validation: list[list[str]]
    left_out: int


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _prefix(dialogue: list[str]) -> str:
    return _clean(" ".join(dialogue))[:OVERLAP_CHARS]


def read_train_file(path: Path) -> list[list[str]]:
    """Dialogues of ``dialogues_train.txt``: one a line, utterances separated by ``__eou__``, empty ones dropped."""
    dialogues = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            turns = [_clean(t) for t in line.split(EOU)]
            turns = [t for t in turns if t]
            if len(turns) >= 2:
                dialogues.append(turns)
    return dialogues


def read_split_file(path: Path) -> list[list[str]]:
    """Dialogues of a ParlAI-format DailyDialog split (``[{"dialogue": [{"text": ...}, ...]}, ...]``)."""
    with open(path, encoding="utf-8") as handle:
        records = json.load(handle)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON array of dialogues, got {type(records).__name__}.")
    out = []
    for i, record in enumerate(records):
        turns = record.get("dialogue") if isinstance(record, dict) else None
        if not isinstance(turns, list):
            raise ValueError(f"{path}: dialogue {i} has no 'dialogue' list of turns.")
        out.append([_clean(str(t.get("text", ""))) for t in turns if isinstance(t, dict)])
    return out


def dailydialog_test_pairs(data_dir: str | os.PathLike, limit: int) -> tuple[list[list[str]], list[str]]:
    """The first ``limit`` (context so far, next turn) pairs of DailyDialog test (``dailydialog/test.json`` under
    ``data_dir``, read by :func:`read_split_file`), dialogue by dialogue: unlabelled text, no rating read."""
    contexts, responses = [], []
    for turns in read_split_file(Path(data_dir) / "dailydialog" / SPLIT_FILES["test"]):
        for i in range(1, len(turns)):
            contexts.append(turns[:i])
            responses.append(turns[i])
    return contexts[:limit], responses[:limit]


def load_corpus(data_dir: str | os.PathLike, *, max_dialogues: int | None = None) -> DialogueCorpus:
    """DailyDialog's training dialogues (without those overlapping validation or test) and its validation
    dialogues, from ``data_dir`` (the ``dailydialog`` folder, or the folder above it)."""
    root = Path(data_dir)
    if not (root / TRAIN_FILE).is_file() and (root / "dailydialog" / TRAIN_FILE).is_file():
        root = root / "dailydialog"
    missing = [str(root / f) for f in (TRAIN_FILE, *SPLIT_FILES.values()) if not (root / f).is_file()]
    if missing:
        raise FileNotFoundError(f"--data-dir {data_dir}: DailyDialog files missing: {missing}; pass the folder "
                                "holding train/dialogues_train.txt, validation.json and test.json.")
    splits = {name: read_split_file(root / f) for name, f in SPLIT_FILES.items()}
    held = {_prefix(d) for dialogues in splits.values() for d in dialogues if d}
    train = read_train_file(root / TRAIN_FILE)
    kept = [d for d in train if _prefix(d) not in held]
    validation = [d for d in splits["validation"] if len(d) >= 2]
    if max_dialogues is not None:  # the first training dialogues (and as many validation dialogues at most)
        kept, validation = kept[:max_dialogues], validation[:max_dialogues]
    return DialogueCorpus(train=kept, validation=validation, left_out=len(train) - len([d for d in train
                                                                                        if _prefix(d) not in held]))


def perturb(text: str, seed: int, index: int) -> str | None:
    """A perturbed copy of ``text`` (USL-H's negatives: words dropped, one word span repeated, or words shuffled),
    or ``None`` when the utterance is too short or the draw left it unchanged."""
    words = text.split()
    if len(words) < MIN_PERTURB_WORDS:
        return None
    rng = np.random.default_rng((seed, index))
    kind = PERTURBATIONS[int(rng.integers(len(PERTURBATIONS)))]
    if kind == "drop":
        keep = rng.random(len(words)) >= 0.3
        keep[int(rng.integers(len(words)))] = False  # at least one word goes
        out = [w for w, k in zip(words, keep) if k] or words[:1]
    elif kind == "repeat":
        start = int(rng.integers(len(words)))
        span = words[start:start + int(rng.integers(1, 4))]
        out = words[:start + len(span)] + span * int(rng.integers(1, 3)) + words[start + len(span):]
    else:
        order = rng.permutation(len(words))
        out = [words[i] for i in order]
    result = " ".join(out)
    return None if result == text else result
