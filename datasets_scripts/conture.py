"""ConTurE (Ghazarian et al., Findings of ACL 2022): turn-level "overall impression" labels of DSTC9 dialogues.

``data.json``: an array of 119 dialogues ``{dialog_id, turns, dialog_ratings}``; each turn ``{user, chatbot,
overall impression}`` (``"User: …"``/``"Chatbot: …"``, label 0/1/2: the majority of 3 AMT workers, an
expert breaking ties: only the label is published). Config ``turn``: one record per chatbot turn, its context
the dialogue so far and the user's turn. Config ``dialog``: one record per dialogue with the original DSTC9
11-quality ratings of ``dialog_ratings`` (2-3 raters).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval.datasets._common import (
    QualityBuilder,
    json_objects,
    parse_score,
    quality_configs,
    quality_row,
    rated_dataset,
    rater_lists,
)
from dialeval.datasets.dstc9_interactive import QUALITIES as DIALOG_QUALITIES
from dialeval.datasets.dstc9_interactive import split_turns
from dialeval.io.readers import (
    MalformedDataError,
    read_json,
    require_int,
    require_keys,
    require_str,
)

CITATION = """@inproceedings{ghazarian-etal-2022-wrong,
  title = {What is wrong with you?: Leveraging User Sentiment for Automatic Dialog Evaluation},
  author = {Ghazarian, Sarik and Hedayatnia, Behnam and Papangelis, Alexandros and Liu, Yang and Hakkani-Tur, Dilek},
  booktitle = {Findings of ACL}, year = {2022}, pages = {4194--4204}}
"""
TURN_QUALITY = "overall impression"


def conture_records(data: Any, path: Path, level: str) -> list[dict[str, Any]]:
    """The ``level`` (turn or dialog) records of a parsed ``data.json``."""
    rows = []
    for _, loc, obj in json_objects(data, path, "dialogue", "dialogues"):
        require_keys(obj, ("dialog_id", "turns", "dialog_ratings"), loc)
        did = require_int(obj["dialog_id"], "dialog_id", loc)
        if not isinstance(obj["turns"], list) or not obj["turns"]:
            raise MalformedDataError(f"{loc}: field 'turns' must be a non-empty list.")
        history: list[str] = []
        speakers: list[str] = []
        for t, tloc, turn in json_objects(obj["turns"], loc, "turn"):
            require_keys(turn, ("user", "chatbot", TURN_QUALITY), tloc)
            user, user_speaker = split_turns(require_str(turn["user"], "user", tloc), tloc + " user")
            bot, bot_speaker = split_turns(require_str(turn["chatbot"], "chatbot", tloc), tloc + " chatbot")
            history, speakers = history + user, speakers + user_speaker
            if level == "turn":
                label = parse_score(turn[TURN_QUALITY], repr(TURN_QUALITY), tloc)
                rows.append(quality_row(f"{did}-{t}", list(history), {TURN_QUALITY: [label]},
                                        response="\n".join(bot), speakers=list(speakers)))
            history, speakers = history + bot, speakers + bot_speaker
        if level == "dialog":
            ratings = obj["dialog_ratings"]
            if not isinstance(ratings, list) or not ratings:
                raise MalformedDataError(f"{loc}: field 'dialog_ratings' must be a non-empty list.")
            rows.append(quality_row(str(did), history, rater_lists(ratings, DIALOG_QUALITIES, loc), speakers=speakers))
    return rows


class ContureBuilder(QualityBuilder):
    """ConTurE builder; ``data_dir`` holds ``data.json``. Configs ``turn`` (1,066) and ``dialog`` (119)."""

    FOLDER = "conture"
    LEVELS = {"turn": "turn", "dialog": "dialog"}
    QUALITIES = {"turn": (TURN_QUALITY,), "dialog": DIALOG_QUALITIES}
    FILES = {"turn": ("data.json",), "dialog": ("data.json",)}
    BUILDER_CONFIGS = quality_configs(LEVELS)
    DEFAULT_CONFIG_NAME = "turn"
    DESCRIPTION = "ConTurE: 1,066 chatbot turns of 119 DSTC9 dialogues with an overall-impression label (0-2)."
    CITATION = CITATION
    HOMEPAGE = "https://github.com/alexa/conture"
    LICENSE = ('CC BY 4.0 (DATALICENSE: "Datasets provided in this repository are licensed under Creative '
               'Commons Attribution 4.0 International", Copyright Amazon.com, Inc.).')

    def records(self, paths: list[Path]) -> Any:
        return conture_records(read_json(paths[0]), paths[0], self.config.name)


#: Rated turns (overall impression) and dialogues (overall rating).
DATASET = rated_dataset("conture", ContureBuilder, {"turn": TURN_QUALITY, "dialog": "human (overall)"})
