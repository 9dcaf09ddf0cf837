"""DailyDialog (Li et al., IJCNLP 2017) in ParlAI's JSON format: config ``pairs`` (context/response pairs)
and config ``dialogues`` (one row per dialogue, the Hub's ``daily_dialog`` layout).

Each file is a JSON array of ``{"fold", "topic", "dialogue": [{"emotion", "act", "text"}, ...]}``.
``pairs``: every turn after the first becomes one example, the preceding turns its ``context`` and the turn
its ``response`` (with its emotion and dialogue act); Sem-Ent fits its clusters on such responses.
``dialogues``: ``dialog`` (the turns) with per-turn ``act`` and ``emotion`` lists, as on the Hub.

``emotion`` and ``act`` are ``ClassLabel`` columns with the names and ids of the Hub's ``daily_dialog``
(the original release's numbering): acts 0 ``__dummy__`` (never used), 1 inform, 2 question, 3 directive,
4 commissive; emotions 0 ``no emotion`` (ParlAI's ``no_emotion``), 1 anger … 6 surprise. ``topic`` is
0 ordinary_life … 9 finance (ParlAI's ``culture_and_educastion`` is read as ``culture_and_education``). A
missing label is -1, an unknown one is an error.

Splits: ``validation`` and ``test`` from ParlAI's ``validation.json``/``test.json``; ``train`` from ParlAI's
``train.json`` or, when it is absent, the original release's ``train/`` folder (``dialogues_train.txt``, one dialogue
a line, utterances separated by ``__eou__``, with ``dialogues_act_train.txt`` and ``dialogues_emotion_train.txt``:
11,118 dialogues, 76,053 pairs; the release has no topics there, ``topic`` is -1; one dialogue, 0-based 7851, has
12 utterances but 11 act and emotion labels: its last turn's are -1). Sem-Ent fits its clusters on the training
responses (Han et al. 2022).

Known repeats (:data:`KNOWN_REPEATS`): the release repeats three dialogues exactly (validation 962 = 709; test
203 = 64 and 991 = 769), and 569 of its training dialogues repeat an earlier one exactly (``"train": "exact"``). :func:`dialeval.datasets.load` refuses them unless ``allow_duplicates=True`` (a score
would count them twice); ``dialeval hub build`` publishes them as released, like the Hub's ``daily_dialog``,
when the repeats it finds are exactly these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets._common import STRINGS, find_file, report_skipped, resolve_data_dir
from dialeval.io.readers import MalformedDataError, read_json, require_keys, require_str

CITATION = """@inproceedings{li-etal-2017-dailydialog,
  title = {DailyDialog: A Manually Labelled Multi-turn Dialogue Dataset},
  author = {Li, Yanran and Su, Hui and Shen, Xiaoyu and Li, Wenjie and Cao, Ziqiang and Niu, Shuzi},
  booktitle = {Proceedings of IJCNLP}, year = {2017}, pages = {986--995}}
"""

# The Hub's daily_dialog ClassLabel names, in id order (ParlAI spells the first emotion "no_emotion").
EMOTIONS = ("no emotion", "anger", "disgust", "fear", "happiness", "sadness", "surprise")
ACTS = ("__dummy__", "inform", "question", "directive", "commissive")
TOPICS = ("ordinary_life", "school_life", "culture_and_education", "attitude_and_emotion", "relationship",
          "tourism", "health", "work", "politics", "finance")
ALIASES = {"culture_and_educastion": "culture_and_education", "no_emotion": "no emotion"}  # ParlAI's spellings
FEATURES = datasets.Features({
    "dialogue_id": datasets.Value("int32"),
    "turn": datasets.Value("int32"),
    "topic": datasets.ClassLabel(names=list(TOPICS)),
    "context": STRINGS,
    "response": datasets.Value("string"),
    "emotion": datasets.ClassLabel(names=list(EMOTIONS)),
    "act": datasets.ClassLabel(names=list(ACTS)),
})
DIALOGUE_FEATURES = datasets.Features({
    "dialogue_id": datasets.Value("int32"),
    "topic": datasets.ClassLabel(names=list(TOPICS)),
    "dialog": datasets.Sequence(datasets.Value("string")),
    "act": datasets.Sequence(datasets.ClassLabel(names=list(ACTS))),
    "emotion": datasets.Sequence(datasets.ClassLabel(names=list(EMOTIONS))),
})
#: ``{split: {dialogue_id of the repeat: dialogue_id of the first}}`` in the release (ParlAI's JSON).
KNOWN_REPEATS: dict[str, Any] = {"validation": {962: 709}, "test": {203: 64, 991: 769}, "train": "exact"}
SPLIT_FILES = {"train": ["train.json", "train/dialogues_train.txt"], "validation": ["validation.json", "valid.json"],
               "test": ["test.json"]}
RELEASE_SEPARATOR = "__eou__"


def label(value: Any, names: tuple[str, ...], field: str, loc: str) -> int:
    """The class id of ``value`` among ``names`` (-1 when missing); an unknown label is malformed."""
    if value is None or value == "":
        return -1
    name = ALIASES.get(str(value), str(value))
    if name not in names or name == "__dummy__":
        raise MalformedDataError(f"{loc}: {field} {value!r} is not one of {[n for n in names if n != '__dummy__']}.")
    return names.index(name)


def dialogue_texts(dialog: Any, loc: str) -> list[str]:
    """The turn texts of one ParlAI DailyDialog record (``{"dialogue": [{"text": ...}, ...]}``), checked;
    errors name ``loc`` and the turn."""
    if not isinstance(dialog, dict):
        raise MalformedDataError(f"{loc}: expected an object, got {type(dialog).__name__}.")
    require_keys(dialog, ("dialogue",), loc)
    turns = dialog["dialogue"]
    if not isinstance(turns, list):
        raise MalformedDataError(f"{loc}: 'dialogue' must be a list of turns, got {type(turns).__name__}.")
    texts = []
    for t, turn in enumerate(turns):
        tloc = f"{loc}, turn {t}"
        if not isinstance(turn, dict):
            raise MalformedDataError(f"{tloc}: expected an object with 'text', got {type(turn).__name__}.")
        require_keys(turn, ("text",), tloc)
        texts.append(require_str(turn["text"], "text", tloc))
    return texts


def release_dialogues(path: Path) -> list[dict[str, Any]]:
    """The original release's ``dialogues_train.txt`` (and the act and emotion files beside it) as ParlAI-style
    records ``{"topic": None, "dialogue": [{"text", "act", "emotion"}, ...]}``; a turn without a label gets none."""
    def lines(name: str) -> list[str]:
        found = path.parent / name
        return found.read_text(encoding="utf-8").splitlines() if found.is_file() else []

    texts = path.read_text(encoding="utf-8").splitlines()
    acts, emotions = lines("dialogues_act_train.txt"), lines("dialogues_emotion_train.txt")
    out = []
    for d, line in enumerate(texts):
        turns = [u.strip() for u in line.split(RELEASE_SEPARATOR)]
        turns = turns[:-1] if turns and not turns[-1] else turns
        a = acts[d].split() if d < len(acts) else []
        e = emotions[d].split() if d < len(emotions) else []
        out.append({"topic": None, "dialogue": [
            {"text": text, "act": ACTS[int(a[t])] if t < len(a) and a[t].isdigit() and 0 < int(a[t]) < len(ACTS) else None,
             "emotion": EMOTIONS[int(e[t])] if t < len(e) and e[t].isdigit() and int(e[t]) < len(EMOTIONS) else None}
            for t, text in enumerate(turns)]})
    return out


def dialogue_pairs(dialogues: Any, path: str | Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Context/response pairs of a ParlAI DailyDialog array, and the count of dialogues that gave none."""
    if not isinstance(dialogues, list):
        raise MalformedDataError(f"{path}: expected a JSON array of dialogues, got {type(dialogues).__name__}.")
    pairs, skipped = [], {"dialogues with fewer than 2 turns": 0}
    for d, dialog in enumerate(dialogues):
        loc = f"{path}, dialogue {d} (0-based)"
        texts = dialogue_texts(dialog, loc)
        turns = dialog["dialogue"]
        if len(texts) < 2:
            skipped["dialogues with fewer than 2 turns"] += 1
        topic = label(dialog.get("topic"), TOPICS, "topic", loc)
        for t in range(1, len(texts)):
            tloc = f"{loc}, turn {t}"
            pairs.append({
                "dialogue_id": d, "turn": t, "topic": topic, "context": texts[:t], "response": texts[t],
                "emotion": label(turns[t].get("emotion"), EMOTIONS, "emotion", tloc),
                "act": label(turns[t].get("act"), ACTS, "act", tloc),
            })
    return pairs, skipped


def dialogue_rows(dialogues: Any, path: str | Path) -> list[dict[str, Any]]:
    """One row per dialogue (config ``dialogues``): its turns and per-turn act and emotion ids."""
    if not isinstance(dialogues, list):
        raise MalformedDataError(f"{path}: expected a JSON array of dialogues, got {type(dialogues).__name__}.")
    rows = []
    for d, dialog in enumerate(dialogues):
        loc = f"{path}, dialogue {d} (0-based)"
        texts = dialogue_texts(dialog, loc)
        turns = dialog["dialogue"]
        rows.append({
            "dialogue_id": d, "topic": label(dialog.get("topic"), TOPICS, "topic", loc), "dialog": texts,
            "act": [label(turn.get("act"), ACTS, "act", f"{loc}, turn {t}") for t, turn in enumerate(turns)],
            "emotion": [label(turn.get("emotion"), EMOTIONS, "emotion", f"{loc}, turn {t}")
                        for t, turn in enumerate(turns)],
        })
    return rows


class DailyDialogBuilder(datasets.GeneratorBasedBuilder):
    """DailyDialog context/response pairs (``pairs``) or whole dialogues (``dialogues``); ``data_dir`` holds
    ParlAI's ``train/validation/test.json`` (splits whose file is missing are left out; at least one must
    exist)."""

    VERSION = datasets.Version("1.3.0")  # 1.3: the train split (the release's train/ folder); 1.2: Hub ids, dialogues
    BUILDER_CONFIGS = [
        datasets.BuilderConfig(name="pairs", version=VERSION, description="context/response pairs"),
        datasets.BuilderConfig(name="dialogues", version=VERSION,
                               description="one row per dialogue: dialog, act, emotion (the Hub's daily_dialog)"),
    ]
    DEFAULT_CONFIG_NAME = "pairs"

    def _info(self) -> datasets.DatasetInfo:
        dialogues = self.config.name == "dialogues"
        return datasets.DatasetInfo(
            description="DailyDialog (ParlAI format) as " + ("whole dialogues." if dialogues
                                                             else "context/response pairs."),
            features=DIALOGUE_FEATURES if dialogues else FEATURES, citation=CITATION,
            homepage="http://yanran.li/dailydialog", license="CC BY-NC-SA 4.0",
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        root = resolve_data_dir(self.config.data_dir, "dailydialog")
        found: dict[str, Path] = {}
        for split, names in SPLIT_FILES.items():
            existing = [root / n for n in names if (root / n).is_file()]
            if existing:
                found[split] = existing[0]
        if not found:
            find_file(root, [n for names in SPLIT_FILES.values() for n in names], "DailyDialog split")
        return [datasets.SplitGenerator(name=split, gen_kwargs={"path": path}) for split, path in found.items()]

    def _generate_examples(self, path: Path) -> Any:
        dialogues = release_dialogues(path) if path.suffix == ".txt" else read_json(path)
        if self.config.name == "dialogues":
            yield from enumerate(dialogue_rows(dialogues, path))
            return
        pairs, skipped = dialogue_pairs(dialogues, path)
        report_skipped(path, skipped, len(dialogues))
        yield from enumerate(pairs)
