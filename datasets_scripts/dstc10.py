"""The DSTC10 Track 5 evaluation format (Zhang et al. 2021): any file in it, e.g. DailyDialog-Zhao, JSALT, ESL.

A file is a JSON array of items ``{dialogue_id, model, context, response, reference, annotations}``:
``context`` holds ``\\n``-separated turns, ``reference`` a list of reference responses, ``annotations``
``{quality: [scores]}`` (one score per annotator, or one aggregated score). The qualities are read from the
file (the first annotated item's; every annotated item must carry the same ones), so a file with another quality
set builds without code changes. ``system`` is ``model``; ``reference`` the first reference (all in ``references``).
Items without annotations (no ``annotations`` field, or an empty one; the DSTC10 test files hold some) are left out
and counted (:func:`unannotated_note`), as ``dialeval meta-eval --data`` leaves them out of the same file.

``data_files`` (``--file F``) names the file; otherwise ``data_dir`` must hold exactly one ``*.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets._common import (
    STRINGS,
    QualityBuilder,
    json_objects,
    parse_scores,
    quality_features,
    quality_row,
    rated_dataset,
)
from dialeval.io.readers import (
    MalformedDataError,
    read_json,
    require_keys,
    require_str,
    require_str_list,
)

CITATION = """@article{zhang2021automatic,
  title = {Automatic Evaluation and Moderation of Open-domain Dialogue Systems},
  author = {Zhang, Chen and Sedoc, Jo{\\~a}o and D'Haro, Luis Fernando and Banchs, Rafael and Rudnicky, Alexander},
  journal = {arXiv preprint arXiv:2111.02110}, year = {2021}}
"""
FIELDS = ("dialogue_id", "model", "context", "response", "reference", "annotations")


def annotated(obj: Any) -> bool:
    """Whether a DSTC10 item carries annotations (a non-empty object); the others are left out and counted."""
    return not isinstance(obj, dict) or (isinstance(obj.get("annotations"), dict) and bool(obj["annotations"]))


def item_qualities(data: Any, path: str | os.PathLike) -> list[str]:
    """The quality names of a parsed DSTC10 file (its first annotated item's ``annotations`` keys)."""
    if not isinstance(data, list) or not data:
        raise MalformedDataError(f"{path}: expected a non-empty JSON array of items, got {type(data).__name__}.")
    i = next((i for i, obj in enumerate(data) if isinstance(obj, dict) and annotated(obj)), None)
    if i is None:
        raise MalformedDataError(f"{path}: no item has a non-empty 'annotations' object {{quality: [scores]}}; "
                                 "nothing to build.")
    ann = data[i]["annotations"]
    if not all(isinstance(q, str) and q for q in ann):
        raise MalformedDataError(f"{path}, item {i} (0-based): field 'annotations' must map quality names to "
                                 "scores.")
    return list(ann)


def unannotated_note(path: str | os.PathLike) -> str | None:
    """``"N of M items have no annotations; left out."`` for a DSTC10 file with such items, else ``None``."""
    data = read_json(Path(path))
    if not isinstance(data, list):
        return None
    left = sum(not annotated(obj) for obj in data)
    return f"{path}: {left:,} of {len(data):,} items have no annotations; left out." if left else None


def dstc10_records(data: Any, path: Path) -> list[dict[str, Any]]:
    """The records of a parsed DSTC10-format file."""
    qualities = item_qualities(data, path)
    rows = []
    for i, loc, obj in json_objects(data, path, "item", "items"):
        if not annotated(obj):
            continue  # counted by unannotated_note
        require_keys(obj, FIELDS, loc)
        ann = obj["annotations"]
        if not isinstance(ann, dict) or sorted(ann) != sorted(qualities):
            got = sorted(ann) if isinstance(ann, dict) else type(ann).__name__
            raise MalformedDataError(f"{loc}: field 'annotations' has qualities {got}; the file's first item has "
                                     f"{sorted(qualities)} (every item must rate the same qualities).")
        refs = require_str_list(obj["reference"], "reference", loc)
        turns = [t.strip() for t in require_str(obj["context"], "context", loc).strip("\n").split("\n")]
        row = quality_row(f"{require_str(obj['dialogue_id'], 'dialogue_id', loc)}:{i}", turns,
                          {q: parse_scores(ann[q], f"annotations[{q!r}]", loc) for q in qualities},
                          response=require_str(obj["response"], "response", loc).strip(),
                          reference=refs[0].strip() if refs else None, system=require_str(obj["model"], "model", loc))
        row["references"] = [r.strip() for r in refs]
        rows.append(row)
    return rows


class Dstc10Builder(QualityBuilder):
    """Any DSTC10 Track 5 file: ``data_files`` (one file) or a ``data_dir`` holding one ``*.json``. Config ``turn``."""

    LEVELS = {"turn": "turn"}
    BUILDER_CONFIGS = [datasets.BuilderConfig(name="turn", version=datasets.Version("1.0.0"), description="turn level")]
    DEFAULT_CONFIG_NAME = "turn"
    DESCRIPTION = "A DSTC10 Track 5 evaluation file: responses with per-annotator quality scores."
    CITATION = CITATION
    HOMEPAGE = "https://chateval.org/dstc10"
    LICENSE = "unknown"

    def input_paths(self) -> list[Path]:
        if self.config.data_files:
            files = [Path(p) for paths in self.config.data_files.values() for p in paths]
            if len(files) != 1:
                raise ValueError(f"dstc10 builds one file at a time; got {len(files)} ({[str(f) for f in files][:3]}).")
            return files
        root = Path(self.config.data_dir or "")
        found = sorted(root.glob("*.json")) if root.is_dir() else []
        if len(found) != 1:
            raise FileNotFoundError(f"dstc10: {str(root)!r} must hold exactly one *.json file in the DSTC10 format "
                                    f"(found {len(found)}); or name the file with --file.")
        return found

    def _info(self) -> datasets.DatasetInfo:
        path = self.input_paths()[0]
        feats = quality_features(item_qualities(read_json(path), path), turn=True)
        feats["references"] = STRINGS
        return datasets.DatasetInfo(description=self.DESCRIPTION, features=feats, citation=self.CITATION,
                                    homepage=self.HOMEPAGE, license=self.LICENSE)

    def records(self, paths: list[Path]) -> Any:
        return dstc10_records(read_json(paths[0]), paths[0])


#: The known files in the DSTC10 format, each built by :class:`Dstc10Builder` from its own folder: rated turns with
#: references (all of them as each row's ``reference``; not offered to metrics where the reference is the rated
#: response itself), the judge's appropriateness rubric where that is the overall quality.
APPROPRIATENESS = "Appropriateness: is the response an appropriate reply to the context?"
DATASETS = (
    rated_dataset("dailydialog_zhao", Dstc10Builder, "overall", builder="dailydialog_zhao", fields=("reference",)),
    # every JSALT item is the ground-truth reply rated, and its reference is that same reply: a reference-based
    # metric would compare each response with itself (its correlation is rounding noise), so none is scored here
    rated_dataset("dstc10_jsalt", Dstc10Builder, "appropriateness", builder="dstc10_jsalt",
                  rubrics={"appropriateness": APPROPRIATENESS}),
    rated_dataset("dstc10_esl", Dstc10Builder, "appropriateness", builder="dstc10_esl", fields=("reference",),
                  rubrics={"appropriateness": APPROPRIATENESS}),
)
