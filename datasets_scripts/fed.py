"""FED (Mehri & Eskenazi, SIGDIAL 2020): human quality annotations of Meena, Mitsuku and human dialogues.

``fed_data.json`` is one array of 500 objects ``{context, response?, system, annotations}``: 375 turn-level
(with ``response``) and 125 dialog-level. Context lines are ``"User: …"`` / ``"System: …"``; each becomes
``{"speaker", "text"}``. Every annotation list is kept (``"N/A (…)"`` answers become ``None`` and their text
goes to ``na_notes``), with its mean over the numeric answers in ``annotation_means``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets._common import find_file, resolve_data_dir
from dialeval.io.readers import (
    MalformedDataError,
    read_json,
    require_int,
    require_keys,
    require_str,
)
from dialeval.meta.sources import DatasetDeclaration

CITATION = """@inproceedings{mehri-eskenazi-2020-unsupervised,
  title = {Unsupervised Evaluation of Interactive Dialog with {D}ialo{GPT}},
  author = {Mehri, Shikib and Eskenazi, Maxine},
  booktitle = {Proceedings of SIGDIAL}, year = {2020}, pages = {225--235}}
"""

QUALITIES = {
    "turn": ("Interesting", "Engaging", "Specific", "Relevant", "Correct", "Semantically appropriate",
             "Understandable", "Fluent", "Overall"),
    "dialog": ("Coherent", "Error recovery", "Consistent", "Diverse", "Depth", "Likeable", "Understanding",
               "Flexible", "Informative", "Inquisitive", "Overall"),
}
SYSTEMS = ("Human", "Meena", "Mitsuku")  # ClassLabel names of the `system` column
SPEAKER_LINE = re.compile(r"^(User|System): ?(.*)$", re.DOTALL)
_TURN = {"speaker": datasets.Value("string"), "text": datasets.Value("string")}
_NOTE = {"quality": datasets.Value("string"), "annotator": datasets.Value("int32"), "text": datasets.Value("string")}


def fed_features(level: str) -> datasets.Features:
    feats: dict[str, Any] = {"id": datasets.Value("int32"), "context": datasets.List(_TURN)}
    if level == "turn":
        feats["response"] = datasets.Value("string")
        feats["response_speaker"] = datasets.Value("string")
    feats["system"] = datasets.ClassLabel(names=list(SYSTEMS))
    feats["annotations"] = {q: datasets.List(datasets.Value("int32")) for q in QUALITIES[level]}
    feats["annotation_means"] = {q: datasets.Value("float64") for q in QUALITIES[level]}
    feats["na_notes"] = datasets.List(_NOTE)
    return datasets.Features(feats)


def split_speaker(line: str, loc: str) -> dict[str, str]:
    """``"User: Hi!"`` → ``{"speaker": "User", "text": "Hi!"}``; other lines are malformed."""
    m = SPEAKER_LINE.match(line)
    if not m:
        raise MalformedDataError(f"{loc}: line {line!r:.60} does not start with 'User: ' or 'System: '.")
    return {"speaker": m.group(1), "text": m.group(2)}


def mean_or_none(values: list[int | None]) -> float | None:
    """Mean of the numeric annotations (``None`` answers excluded); ``None`` when there are none."""
    nums = [v for v in values if v is not None]
    return math.fsum(nums) / len(nums) if nums else None


def parse_fed_entry(obj: Any, index: int, level: str, path: str | Path) -> dict[str, Any]:
    """One object of ``fed_data.json`` as a row of :func:`fed_features` (``level`` = turn or dialog)."""
    loc = f"{path}, entry {index} (0-based)"
    if not isinstance(obj, dict):
        raise MalformedDataError(f"{loc}: expected an object, got {type(obj).__name__}.")
    require_keys(obj, ("context", "system", "annotations") + (("response",) if level == "turn" else ()), loc)
    context = require_str(obj["context"], "context", loc)
    row: dict[str, Any] = {"id": index, "context": [split_speaker(x, loc) for x in context.split("\n")]}
    if level == "turn":
        resp = split_speaker(require_str(obj["response"], "response", loc), loc + " response")
        row["response"], row["response_speaker"] = resp["text"], resp["speaker"]
    row["system"] = require_str(obj["system"], "system", loc)
    if row["system"] not in SYSTEMS:
        raise MalformedDataError(f"{loc}: system {row['system']!r} is not one of {list(SYSTEMS)}.")
    ann = obj["annotations"]
    if not isinstance(ann, dict):
        raise MalformedDataError(f"{loc}: 'annotations' must be an object, got {type(ann).__name__}.")
    missing = [q for q in QUALITIES[level] if q not in ann]
    extra = [q for q in ann if q not in QUALITIES[level]]
    if missing or extra:
        raise MalformedDataError(f"{loc}: {level}-level annotations must be {list(QUALITIES[level])}; "
                                 f"missing {missing}, unexpected {extra}.")
    annotations, notes = {}, []
    for q in QUALITIES[level]:
        values = ann[q]
        if not isinstance(values, list) or not values:
            raise MalformedDataError(f"{loc}: annotations[{q!r}] must be a non-empty list.")
        out: list[int | None] = []
        for a, v in enumerate(values):
            if isinstance(v, int) and not isinstance(v, bool):
                out.append(require_int(v, f"annotations[{q!r}][{a}]", loc, bits=32))
            elif isinstance(v, str) and v.startswith("N/A"):
                out.append(None)
                notes.append({"quality": q, "annotator": a, "text": v})
            else:
                raise MalformedDataError(f"{loc}: annotations[{q!r}][{a}] is {v!r:.40}; expected an integer or 'N/A (…)'.")
        annotations[q] = out
    row["annotations"] = annotations
    row["annotation_means"] = {q: mean_or_none(v) for q, v in annotations.items()}
    row["na_notes"] = notes
    return row


def fed_rows(data: Any, level: str, path: str | Path) -> list[dict[str, Any]]:
    """The ``level`` rows of a parsed ``fed_data.json`` (entries with ``response`` are turn level). Every entry
    is checked, whichever level is asked for: a null or list entry, or a turn-level entry without its
    ``response``, belongs to neither level and would otherwise be dropped silently."""
    if not isinstance(data, list):
        raise MalformedDataError(f"{path}: expected a JSON array of annotated dialogues, got {type(data).__name__}.")
    rows = []
    for i, obj in enumerate(data):
        loc = f"{path}, entry {i} (0-based)"
        if not isinstance(obj, dict):
            raise MalformedDataError(f"{loc}: expected an object, got {type(obj).__name__}; remove the entry.")
        entry_level = "turn" if "response" in obj else "dialog"
        ann = obj.get("annotations")
        if entry_level == "dialog" and isinstance(ann, dict) and ann and \
                set(ann) <= set(QUALITIES["turn"]) and not set(ann) <= set(QUALITIES["dialog"]):
            raise MalformedDataError(f"{loc}: has turn-level annotations but no 'response'; add the response.")
        row = parse_fed_entry(obj, i, entry_level, path)
        if entry_level == level:
            rows.append(row)
    return rows


class FedBuilder(datasets.GeneratorBasedBuilder):
    """FED builder; ``data_dir`` holds ``fed_data.json``. Configs ``turn`` (375) and ``dialog`` (125)."""

    VERSION = datasets.Version("1.1.0")  # 1.1: ClassLabel columns / standard split names
    BUILDER_CONFIGS = [
        datasets.BuilderConfig(name="turn", version=VERSION, description="375 turn-level annotations"),
        datasets.BuilderConfig(name="dialog", version=VERSION, description="125 dialog-level annotations"),
    ]
    DEFAULT_CONFIG_NAME = "turn"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="FED: fine-grained human quality annotations of open-domain dialogue.",
            features=fed_features(self.config.name), citation=CITATION,
            homepage="http://shikib.com/fed_data.json", license="unknown",
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        root = resolve_data_dir(self.config.data_dir, "fed")
        return [datasets.SplitGenerator(name="test", gen_kwargs={"path": find_file(root, ["fed_data.json"], "FED")})]

    def _generate_examples(self, path: Path) -> Any:
        for row in fed_rows(read_json(path), self.config.name, path):
            yield row["id"], row


#: FED as the FULL paper evaluates on it: each rated turn or dialogue scored as stored (speaker tags stripped by
#: the adapters unless asked for), ``meta-eval`` correlating the mean ``Overall`` rating by Spearman ρ.
DATASET = DatasetDeclaration(
    name="fed", protocol="rated", folder="fed", description="a turn or a dialogue (FED, per-turn and per-dialogue quality)",
    levels={"turn": "turn", "dialog": "dialog"}, overall={"turn": "Overall", "dialog": "Overall"},
    system_field="system", overall_only=True, keep_rows=True, speaker_option=True,
    published={
        ("turn", "annotation_means.Overall", "spearman"): (
            "FULL 0.51 (De Bruyn et al. 2022, blenderbot-400M-distill)", "FULL 0.352 (SmolLM2 default, FULL card)",
            "best of 23: DynaEval 0.323, FED metric 0.095 (Yeh et al. 2021, DialEvalMetrics Table 7)"),
        ("dialog", "annotation_means.Overall", "spearman"): (
            "FULL 0.69 (De Bruyn et al. 2022, blenderbot-400M-distill)", "FULL 0.463 (SmolLM2 default, FULL card)",
            "best of 23: DynaEval 0.547, FED metric 0.320 (Yeh et al. 2021, DialEvalMetrics Table 7)")},
)
