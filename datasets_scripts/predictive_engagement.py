"""PredictiveEngagement human engagement scores (Ghazarian et al., AAAI 2020) of DailyDialog replies.

``Eng_Scores_queries_gen_gtruth_replies.csv``: 1,800 rows ``query, response, human_score, …`` = 600
(query, reply) pairs × 3 AMT raters (a pair's three rows are not adjacent). Rows are grouped per (query,
reply) in order of first appearance: one record per pair, ``annotations["engagement"]`` the 3 scores (1-5).
The file's automatic-metric columns (RUBER, CTX, the paper's engagement scores) are not human labels and are
not kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval.datasets._common import (
    QualityBuilder,
    parse_score,
    quality_configs,
    quality_row,
    read_csv_table,
)
from dialeval.io import MalformedDataError, where

CITATION = """@inproceedings{ghazarian2020predictive,
  title = {Predictive Engagement: An Efficient Metric for Automatic Evaluation of Open-Domain Dialogue Systems},
  author = {Ghazarian, Sarik and Weischedel, Ralph and Galstyan, Aram and Peng, Nanyun},
  booktitle = {Proceedings of AAAI}, year = {2020}, pages = {7789--7796}}
"""
QUALITY = "engagement"
COLUMNS = ("query", "response", "human_score")


def engagement_records(table: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """One record per (query, response): its raters' ``human_score`` values in file order."""
    if not table:
        raise MalformedDataError(f"{path}: no data rows.")
    missing = [c for c in COLUMNS if c not in table[0]]
    if missing:
        raise MalformedDataError(f"{path}: missing column(s) {missing} in the header {list(table[0])[:8]}.")
    pairs: dict[tuple[str, str], list[float | None]] = {}
    for i, rec in enumerate(table, 1):
        loc = where(path, i, unit="row")
        if not rec["query"].strip() or not rec["response"].strip():
            raise MalformedDataError(f"{loc}: column 'query' or 'response' is empty.")
        score = parse_score(rec["human_score"], "column 'human_score'", loc)
        pairs.setdefault((rec["query"].strip(), rec["response"].strip()), []).append(score)
    return [quality_row(str(k), [query], {QUALITY: scores}, response=response)
            for k, ((query, response), scores) in enumerate(pairs.items())]


class PredictiveEngagementBuilder(QualityBuilder):
    """PredictiveEngagement builder; ``data_dir`` holds ``Eng_Scores_queries_gen_gtruth_replies.csv``."""

    FOLDER = "predictive_engagement"
    LEVELS = {"turn": "turn"}
    QUALITIES = {"turn": (QUALITY,)}
    FILES = {"turn": ("Eng_Scores_queries_gen_gtruth_replies.csv",)}
    BUILDER_CONFIGS = quality_configs(LEVELS)
    DEFAULT_CONFIG_NAME = "turn"
    DESCRIPTION = "PredictiveEngagement: 600 DailyDialog query-reply pairs, engagement rated by 3 AMT workers."
    CITATION = CITATION
    HOMEPAGE = "https://github.com/PlusLabNLP/PredictiveEngagement"
    LICENSE = ('PlusLabNLP/PredictiveEngagement: MIT (Copyright 2019 sarikghazarian). No separate data license '
               'stated.')

    def records(self, paths: list[Path]) -> Any:
        return engagement_records(read_csv_table(paths[0]), paths[0])
