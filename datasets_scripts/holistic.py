"""Holistic evaluation human annotations (Pang et al., ACL 2020) of DailyDialog responses.

Two header-less CSV files of 200 rows: ``context_data_release.csv`` = ``id, context, response`` and 10
context-coherence scores (config ``context``); ``fluency_data_release.csv`` = ``id, response`` and 10
fluency scores (config ``fluency``, no context). Scores 1-5. Column meaning as DialEvalMetrics reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval.datasets._common import (
    QualityBuilder,
    parse_score,
    quality_configs,
    quality_row,
    rated_dataset,
    read_csv_table,
)
from dialeval.io.readers import MalformedDataError, where

CITATION = """@inproceedings{pang-etal-2020-towards,
  title = {Towards Holistic and Automatic Evaluation of Open-Domain Dialogue Generation},
  author = {Pang, Bo and Nijkamp, Erik and Han, Wenjuan and Zhou, Linqi and Liu, Yixian and Tu, Kewei},
  booktitle = {Proceedings of ACL}, year = {2020}, pages = {3619--3629}}
"""
RATERS = 10
TEXT_COLUMNS = {"context": ("id", "context", "response"), "fluency": ("id", "response")}
QUALITY = {"context": "context coherence", "fluency": "fluency"}


def holistic_records(path: Path, config: str) -> list[dict[str, Any]]:
    """The records of one header-less file (the column names are supplied here)."""
    table = read_csv_table(path, [*TEXT_COLUMNS[config], *(f"score{i}" for i in range(RATERS))])
    rows = []
    for i, rec in enumerate(table, 1):
        loc = where(path, i, unit="row")
        if not rec["response"].strip():
            raise MalformedDataError(f"{loc}: the response column is empty.")
        scores = [parse_score(rec[f"score{k}"], f"score column {k + 1}", loc) for k in range(RATERS)]
        context = [rec["context"].strip()] if config == "context" else []
        rows.append(quality_row(f"{rec['id'].strip()}-{i}", context, {QUALITY[config]: scores},
                                response=rec["response"].strip()))
    if not rows:
        raise MalformedDataError(f"{path}: no data rows.")
    return rows


class HolisticBuilder(QualityBuilder):
    """Holistic (Pang et al. 2020) builder; ``data_dir`` holds ``context_data_release.csv`` and
    ``fluency_data_release.csv``. Configs ``context`` and ``fluency`` (200 rows each)."""

    FOLDER = "holistic_pang2020"
    LEVELS = {"context": "turn", "fluency": "turn"}
    QUALITIES = {cfg: (q,) for cfg, q in QUALITY.items()}
    FILES = {"context": ("context_data_release.csv",), "fluency": ("fluency_data_release.csv",)}
    BUILDER_CONFIGS = quality_configs(LEVELS)
    DEFAULT_CONFIG_NAME = "context"
    DESCRIPTION = "Holistic evaluation: 200 DailyDialog responses rated by 10 workers for context coherence, 200 for fluency."
    CITATION = CITATION
    HOMEPAGE = "https://github.com/alexzhou907/dialogue_evaluation"
    LICENSE = ('alexzhou907/dialogue_evaluation: no license file (roberta_mnli/LICENSE is the bundled HF '
               'transformers Apache-2.0). Data license: unknown.')

    def records(self, paths: list[Path]) -> Any:
        return holistic_records(paths[0], self.config.name)


#: Pang et al.'s two sets; the fluency responses are rated without context (the judge reads them as one-turn
#: conversations, hence the rubric's "text").
DATASET = rated_dataset(
    "holistic_pang2020", HolisticBuilder, dict(QUALITY),
    rubrics={"context coherence": "Context coherence: is the response coherent with and relevant to the context?",
             "fluency": "Fluency: is the text fluent, grammatical and natural English?"},
    published={("context", "annotation_means.context coherence", "spearman"): ("best of 23: HolisticEval 0.764 (Yeh et al. 2021, DialEvalMetrics Table 8)", "FED metric 0.507 (Yeh et al. 2021, DialEvalMetrics Table 8)")})
