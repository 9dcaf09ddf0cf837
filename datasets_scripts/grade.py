"""GRADE human coherence judgements (Huang et al., EMNLP 2020) on ConvAI2, DailyDialog and EmpatheticDialogues.

``human_judgement.json``: an array of 1,200 objects ``{ID, Dataset, DialogModel, Context, Response,
HumanScores}``; ``Context`` joins its turns with ``|||`` and ``HumanScores`` is a JSON list *in a string*
(8-11 raters, coherence 1-5). One config per source dataset; ``system`` is ``DialogModel``. The reference
response comes from ``eval_data/<dataset>/<model>/human_{ctx,hyp,ref}.txt`` (line-aligned) when present.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval.datasets._common import (
    QualityBuilder,
    json_objects,
    parse_scores,
    quality_configs,
    quality_row,
    rated_dataset,
)
from dialeval.io.readers import (
    MalformedDataError,
    parse_json,
    read_json,
    require_int,
    require_keys,
    require_str,
    split_lines,
)

CITATION = """@inproceedings{huang-etal-2020-grade,
  title = {{GRADE}: Automatic Graph-Enhanced Coherence Metric for Evaluating Open-Domain Dialogue Systems},
  author = {Huang, Lishan and Ye, Zheng and Qin, Jinghui and Lin, Liang and Liang, Xiaodan},
  booktitle = {Proceedings of EMNLP}, year = {2020}, pages = {9230--9240}}
"""
#: Config name → the ``Dataset`` value of its items (and its folder under ``eval_data/``).
SOURCES = {"convai2": "convai2", "dailydialog": "dailydialog_EVAL", "empatheticdialogues": "empatheticdialogues"}
QUALITY = "coherence"


def references(root: Path, config: str) -> dict[tuple[str, str, str], str]:
    """``(model, context, response) → reference`` from the line-aligned ``eval_data`` files (empty without them)."""
    out: dict[tuple[str, str, str], str] = {}
    base = root / "eval_data" / config
    for folder in sorted(p for p in base.glob("*") if p.is_dir()):
        ctx, hyp, ref = (split_lines((folder / f"human_{k}.txt").read_text(encoding="utf-8")) for k in ("ctx", "hyp", "ref"))
        if not len(ctx) == len(hyp) == len(ref):
            raise MalformedDataError(f"{folder}: human_ctx/hyp/ref.txt have {len(ctx)}, {len(hyp)} and {len(ref)} "
                                     "lines; they must align.")
        for c, h, r in zip(ctx, hyp, ref):
            out.setdefault((folder.name, c.strip(), h.strip()), r.strip())
    return out


def grade_records(data: Any, path: Path, config: str) -> list[dict[str, Any]]:
    """The records of ``config`` in a parsed ``human_judgement.json``."""
    rows = []
    objects = list(json_objects(data, path, "item", "judged responses"))
    refs = references(path.parent, config)
    for _, loc, obj in objects:
        require_keys(obj, ("ID", "Dataset", "DialogModel", "Context", "Response", "HumanScores"), loc)
        if require_str(obj["Dataset"], "Dataset", loc) != SOURCES[config]:
            continue
        model = require_str(obj["DialogModel"], "DialogModel", loc)
        context = require_str(obj["Context"], "Context", loc)
        response = require_str(obj["Response"], "Response", loc)
        scores = parse_json(require_str(obj["HumanScores"], "HumanScores", loc), f"{loc}: field HumanScores",
                            strict_numbers=True)
        rows.append(quality_row(str(require_int(obj["ID"], "ID", loc)), [t.strip() for t in context.split("|||")],
                                {QUALITY: parse_scores(scores, "HumanScores", loc)}, response=response.strip(),
                                reference=refs.get((model, context.strip(), response.strip())), system=model))
    return rows


class GradeBuilder(QualityBuilder):
    """GRADE builder; ``data_dir`` holds ``human_judgement.json`` (and optionally ``eval_data/``).
    Configs ``convai2`` (600), ``dailydialog`` (300), ``empatheticdialogues`` (300)."""

    FOLDER = "grade"
    LEVELS = {name: "turn" for name in SOURCES}
    QUALITIES = {name: (QUALITY,) for name in SOURCES}
    FILES = {name: ("human_judgement.json",) for name in SOURCES}
    BUILDER_CONFIGS = quality_configs(LEVELS)
    DEFAULT_CONFIG_NAME = "convai2"
    DESCRIPTION = "GRADE: 1,200 responses rated for coherence by 8-11 annotators."
    CITATION = CITATION
    HOMEPAGE = "https://github.com/li3cmz/GRADE"
    LICENSE = ('li3cmz/GRADE: no top-level license file (only texar-pytorch/LICENSE, Apache-2.0, for the '
               'bundled library). Data license: unknown.')

    def records(self, paths: list[Path]) -> Any:
        return grade_records(read_json(paths[0]), paths[0], self.config.name)


#: GRADE's three sets: rated turns (coherence) with a reference on every row; the LLM judge's coherence rubric.
DATASET = rated_dataset(
    "grade", GradeBuilder, QUALITY, fields=("reference",),
    rubrics={QUALITY: "Coherence: does the response follow coherently from the context, on its topic and logic?"},
    published={
        ("convai2", "annotation_means.coherence", "spearman"): ("best of 23: GRADE 0.571 (Yeh et al. 2021, DialEvalMetrics Table 5)", "FED metric -0.072 (Yeh et al. 2021, DialEvalMetrics Table 5)"),
        ("dailydialog", "annotation_means.coherence", "spearman"): ("best of 23: DEB 0.363 (Yeh et al. 2021, DialEvalMetrics Table 5)", "FED metric 0.064 (Yeh et al. 2021, DialEvalMetrics Table 5)"),
        ("empatheticdialogues", "annotation_means.coherence", "spearman"): ("best of 23: DEB 0.395 (Yeh et al. 2021, DialEvalMetrics Table 5)", "FED metric -0.044 (Yeh et al. 2021, DialEvalMetrics Table 5)")})
