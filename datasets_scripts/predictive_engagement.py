"""PredictiveEngagement human engagement scores (Ghazarian et al., AAAI 2020) of DailyDialog replies.

``Eng_Scores_queries_gen_gtruth_replies.csv``: 1,800 rows ``query, response, human_score, …`` = 600
(query, reply) pairs × 3 AMT raters (a pair's three rows are not adjacent). Rows are grouped per (query,
reply) in order of first appearance: one record per pair, ``annotations["engagement"]`` the 3 scores (1-5).
The file's automatic-metric columns (the paper's outputs of RUBER's unreferenced score, CTX and its engagement
classifier with mean and max pooling; one value per pair) are kept in ``metrics``: they are not human labels,
and the leaderboard scores them as reference rows (``column:metrics.NAME``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets._common import (
    QualityBuilder,
    parse_score,
    quality_configs,
    quality_row,
    rated_dataset,
    read_csv_table,
)
from dialeval.io.readers import MalformedDataError, where

CITATION = """@inproceedings{ghazarian2020predictive,
  title = {Predictive Engagement: An Efficient Metric for Automatic Evaluation of Open-Domain Dialogue Systems},
  author = {Ghazarian, Sarik and Weischedel, Ralph and Galstyan, Aram and Peng, Nanyun},
  booktitle = {Proceedings of AAAI}, year = {2020}, pages = {7789--7796}}
"""
QUALITY = "engagement"
COLUMNS = ("query", "response", "human_score")
METRIC_COLUMNS = ("Ruber_Unref_Score", "CTX_Unref_Score", "Eng_Score_MeanPooling", "Eng_Score_MaxPooling")


def engagement_records(table: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """One record per (query, response): its raters' ``human_score`` values in file order."""
    if not table:
        raise MalformedDataError(f"{path}: no data rows.")
    missing = [c for c in (*COLUMNS, *METRIC_COLUMNS) if c not in table[0]]
    if missing:
        raise MalformedDataError(f"{path}: missing column(s) {missing} in the header {list(table[0])[:8]}.")
    pairs: dict[tuple[str, str], list[float | None]] = {}
    metrics: dict[tuple[str, str], dict[str, float | None]] = {}
    for i, rec in enumerate(table, 1):
        loc = where(path, i, unit="row")
        if not rec["query"].strip() or not rec["response"].strip():
            raise MalformedDataError(f"{loc}: column 'query' or 'response' is empty.")
        score = parse_score(rec["human_score"], "column 'human_score'", loc)
        key = (rec["query"].strip(), rec["response"].strip())
        pairs.setdefault(key, []).append(score)
        values = {c: parse_score(rec[c].strip(), f"column {c!r}", loc) for c in METRIC_COLUMNS}
        if metrics.setdefault(key, values) != values:
            raise MalformedDataError(f"{loc}: the metric columns differ from an earlier row of the same (query, "
                                     "response); each pair has one value per metric.")
    rows = []
    for k, ((query, response), scores) in enumerate(pairs.items()):
        rows.append(quality_row(str(k), [query], {QUALITY: scores}, response=response))
        rows[-1]["metrics"] = metrics[(query, response)]
    return rows


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

    def _info(self) -> datasets.DatasetInfo:
        info = super()._info()
        info.features["metrics"] = {c: datasets.Value("float64") for c in METRIC_COLUMNS}
        return info

    def records(self, paths: list[Path]) -> Any:
        return engagement_records(read_csv_table(paths[0]), paths[0])


#: Rated query-reply pairs (engagement); the paper's own metric values are stored columns, rows of their own.
DATASET = rated_dataset(
    "predictive_engagement", PredictiveEngagementBuilder, QUALITY,
    columns=tuple(f"metrics.{c}" for c in METRIC_COLUMNS),
    rubrics={QUALITY: "Engagement: would a person find the response engaging, wanting to reply to it?"},
    published={("turn", "annotation_means.engagement", "spearman"): ("best of 23: USL-H 0.699 (Yeh et al. 2021, DialEvalMetrics Table 7)", "FED metric 0.159 (Yeh et al. 2021, DialEvalMetrics Table 7)")})
