"""DSTC9 Track 3 interactive evaluation (Gunasekara et al. 2020; Mehri et al.): dialogue-level human ratings of
11 systems' conversations with real users.

``chatbot1.json`` … ``chatbot11.json``: one array per system of rater rows ``{context, <11 qualities>}``;
consecutive rows with the same ``context`` are different raters of one dialogue, so rows are grouped per
dialogue (2,200 dialogues, about 3 raters each). ``context`` holds ``User: …``/``System: …`` lines (a line
without a tag continues the turn before it). ``"N/A"`` answers are kept as ``None``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dialeval.datasets._common import (
    QualityBuilder,
    json_objects,
    quality_configs,
    quality_row,
    rated_dataset,
    rater_lists,
)
from dialeval.io.readers import MalformedDataError, read_json, require_keys, require_str

CITATION = """@article{gunasekara2020overview,
  title = {Overview of the Ninth Dialog System Technology Challenge: {DSTC9}},
  author = {Gunasekara, Chulaka and Kim, Seokhwan and D'Haro, Luis Fernando and Rastogi, Abhinav and others},
  journal = {arXiv preprint arXiv:2011.06486}, year = {2020}}
"""
QUALITIES = ("consistent", "likeable", "diverse", "informative", "coherent", "human (overall)", "understanding",
             "flexible", "topic depth", "error recovery", "inquisitive")
TAG = re.compile(r"^(User|System|Chatbot): ?(.*)$", re.DOTALL)


def split_turns(text: str, loc: str) -> tuple[list[str], list[str]]:
    """``"User: hi\\nSystem: hello\\n"`` → ``(["hi", "hello"], ["User", "System"])``; an untagged line continues
    the previous turn, an untagged first line is malformed."""
    turns: list[str] = []
    speakers: list[str] = []
    for line in text.rstrip("\n").split("\n"):
        m = TAG.match(line)
        if m:
            speakers.append(m.group(1))
            turns.append(m.group(2).strip())
        elif turns:
            turns[-1] = f"{turns[-1]}\n{line.strip()}".strip()
        else:
            raise MalformedDataError(f"{loc}: the first line {line!r:.60} does not start with 'User: ' or 'System: '.")
    return turns, speakers


def dialogue_records(data: Any, path: Path) -> list[dict[str, Any]]:
    """The dialogues of one system file: consecutive rows with the same context grouped, one score per rater."""
    groups: list[tuple[int, str, list[dict[str, Any]]]] = []
    for i, loc, obj in json_objects(data, path, "row", "rating rows"):
        require_keys(obj, ("context", *QUALITIES), loc)
        context = require_str(obj["context"], "context", loc)
        if groups and groups[-1][1] == context:
            groups[-1][2].append(obj)
        else:
            groups.append((i, context, [obj]))
    system = path.stem
    rows = []
    for d, (first, context, raters) in enumerate(groups):
        loc = f"{path}, rows {first}-{first + len(raters) - 1} (dialogue {d})"
        turns, speakers = split_turns(context, loc)
        rows.append(quality_row(f"{system}-{d}", turns, rater_lists(raters, QUALITIES, loc), speakers=speakers,
                                system=system))
    return rows


class Dstc9InteractiveBuilder(QualityBuilder):
    """DSTC9 interactive builder; ``data_dir`` holds ``chatbot1.json`` … ``chatbot11.json``. Config ``dialog``."""

    FOLDER = "dstc9_interactive"
    LEVELS = {"dialog": "dialog"}
    QUALITIES = {"dialog": QUALITIES}
    FILES = {"dialog": ("chatbot*.json",)}
    BUILDER_CONFIGS = quality_configs(LEVELS)
    DEFAULT_CONFIG_NAME = "dialog"
    DESCRIPTION = "DSTC9 interactive: 2,200 user-system dialogues rated on 11 qualities by about 3 raters each."
    CITATION = CITATION
    HOMEPAGE = "https://github.com/ictnlp/DialoFlow"
    LICENSE = ('ictnlp/DialoFlow: MIT (repository license, Copyright 2021 ICTNLP); README asks to cite the '
               "DSTC9 overview. DSTC9 organisers' data license: unknown.")

    def records(self, paths: list[Path]) -> Any:
        return [row for path in paths for row in dialogue_records(read_json(path), path)]


#: Rated interactive dialogues, 11 systems.
DATASET = rated_dataset(
    "dstc9_interactive", Dstc9InteractiveBuilder, "human (overall)",
    published={("dialog", "annotation_means.human (overall)", "spearman"): ("best of 23: FlowScore 0.140 (Yeh et al. 2021, DialEvalMetrics Table 7)", "FED metric 0.120 (Yeh et al. 2021, DialEvalMetrics Table 7)")})
