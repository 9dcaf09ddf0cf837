"""conTest / decTest (Tevet & Berant, EACL 2021): response sets with a diversity label.

CSV format (header row): ``sample_id, context, label_value, label_name, resp_0..resp_{k-1}`` and optional
``metric_*`` columns (``metric_abs_hds_mean``/``_std`` = mean/std of human absolute diversity scores).
Each row becomes ``{sample_id, context, responses, label_value, label_name, human_score_mean,
human_score_std, metrics}``; ``metrics`` keeps every ``metric_*`` column as a dict of float64 (prefix
dropped; its keys are read from the CSV header, and the field is absent when the CSV has no ``metric_*``
column, since Parquet cannot store an empty struct).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from dialeval.datasets._common import STRINGS, find_file, parse_float, resolve_data_dir
from dialeval.io.readers import MalformedDataError, csv_field_limit, refuse_repeated_columns, where
from dialeval.meta.sources import DatasetDeclaration

CITATION = """@inproceedings{tevet-berant-2021-evaluating,
  title = {Evaluating the Evaluation of Diversity in Natural Language Generation},
  author = {Tevet, Guy and Berant, Jonathan},
  booktitle = {Proceedings of EACL}, year = {2021}, pages = {326--346}}
"""

TESTS = {
    # config prefix: (folder, file prefix)
    "con_test_200": ("conTest", "con_test_200_with_hds"),
    "dec_test_200": ("decTest", "dec_test_200_with_hds"),
    "dec_test_1000": ("decTest", "dec_test_1000_no_hds"),
}
TASKS = ("resp_gen", "prompt_gen", "story_gen")
REQUIRED = ("sample_id", "context", "label_value", "label_name")
HUMAN_MEAN, HUMAN_STD = "metric_abs_hds_mean", "metric_abs_hds_std"

BASE_FEATURES = datasets.Features({
    "sample_id": datasets.Value("string"),
    "context": datasets.Value("string"),
    "responses": STRINGS,
    "label_value": datasets.Value("float64"),
    "label_name": datasets.Value("string"),
    "human_score_mean": datasets.Value("float64"),
    "human_score_std": datasets.Value("float64"),
})


def contest_features(metric_columns: list[str]) -> datasets.Features:
    """:data:`BASE_FEATURES` plus ``metrics``: one float64 per ``metric_*`` column (prefix dropped)."""
    features = datasets.Features(dict(BASE_FEATURES))
    if metric_columns:
        features["metrics"] = {c[len("metric_"):]: datasets.Value("float64") for c in metric_columns}
    return features


def read_header(path: str | os.PathLike) -> list[str]:
    with open(path, encoding="utf-8-sig", newline="") as f, csv_field_limit():
        try:
            return next(csv.reader(f))
        except csv.Error as exc:
            raise MalformedDataError(f"{path}, line 1: malformed CSV header ({exc}).") from None
        except StopIteration:
            raise MalformedDataError(f"{path}: empty file (no header row).") from None


@dataclass
class ContestConfig(datasets.BuilderConfig):
    """One Tevet CSV: ``test`` (con_test_200 / dec_test_200 / dec_test_1000) × ``task``."""

    test: str = ""
    task: str = ""

    @property
    def file_name(self) -> str:
        return f"{TESTS[self.test][1]}_{self.task}.csv"


def response_columns(header: list[str], path: str | os.PathLike) -> list[str]:
    """``resp_0..resp_{k-1}`` in order; gaps or none at all are an error naming the file."""
    idx = sorted(int(c[5:]) for c in header if c.startswith("resp_") and c[5:].isdigit())
    if not idx:
        raise MalformedDataError(f"{path}: no resp_0..resp_k columns in the header {header}.")
    if idx != list(range(len(idx))):
        raise MalformedDataError(f"{path}: response columns must be resp_0..resp_{len(idx) - 1} without gaps, got {idx}.")
    return [f"resp_{i}" for i in idx]


def read_contest_csv(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Parse one conTest/decTest CSV into rows of :func:`contest_features`; malformed input raises
    :class:`MalformedDataError` naming the file and the row (1 = first data row) and line."""
    with open(path, encoding="utf-8-sig", newline="") as f, csv_field_limit():
        reader = csv.DictReader(f, strict=True)
        try:
            return _contest_rows(reader, path)
        except csv.Error as exc:
            raise MalformedDataError(f"{path}, line {reader.line_num}: malformed CSV ({exc}); check for an "
                                     "unterminated quote.") from None


def _contest_rows(reader: csv.DictReader, path: str | os.PathLike) -> list[dict[str, Any]]:
    rows = []
    header = list(reader.fieldnames or [])
    refuse_repeated_columns(header, str(path))
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise MalformedDataError(f"{path}: missing column(s) {missing} in the header {header}.")
    resp_cols = response_columns(header, path)
    metric_cols = [c for c in header if c.startswith("metric_")]
    start = reader.line_num + 1  # the line a record starts on (a quoted cell may span lines)
    for i, rec in enumerate(reader, 1):
        lines = f"line {start}" if reader.line_num <= start else f"lines {start}-{reader.line_num}"
        loc, start = f"{where(path, i, unit='row')} ({lines})", reader.line_num + 1
        if None in rec or any(rec[c] is None for c in header):
            cells = sum(rec[c] is not None for c in header) + len(rec.get(None) or [])
            raise MalformedDataError(f"{loc}: has {cells} cells for {len(header)} columns; check quoting and commas.")
        metrics = {c[len("metric_"):]: parse_float(rec[c], c, loc, allow_empty=True) for c in metric_cols}
        row = {
            "sample_id": rec["sample_id"],
            "context": rec["context"],
            "responses": [rec[c] for c in resp_cols],
            "label_value": parse_float(rec["label_value"], "label_value", loc),
            "label_name": rec["label_name"],
            "human_score_mean": metrics.get(HUMAN_MEAN[len("metric_"):]),
            "human_score_std": metrics.get(HUMAN_STD[len("metric_"):]),
        }
        if metrics:
            row["metrics"] = metrics
        rows.append(row)
    if not rows:
        raise MalformedDataError(f"{path}: no data rows.")
    return rows


class ContestBuilder(datasets.GeneratorBasedBuilder):
    """conTest/decTest builder. ``data_dir`` is Tevet's ``data/`` folder (``with_metrics/`` is preferred
    over ``raw/``) or any folder holding the CSV; ``data_files`` (any CSV in this format) overrides it."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = ContestConfig
    BUILDER_CONFIGS = [
        ContestConfig(name=f"{test}_{task}", test=test, task=task, version=datasets.Version("1.0.0"),
                      description=f"Tevet & Berant {test} {task}")
        for test in TESTS for task in TASKS
    ]
    DEFAULT_CONFIG_NAME = "con_test_200_resp_gen"

    def _info(self) -> datasets.DatasetInfo:
        files = [p for paths in self.input_files().values() for p in paths]
        metric_cols = [c for c in read_header(files[0]) if c.startswith("metric_")]
        for p in files[1:]:
            other = [c for c in read_header(p) if c.startswith("metric_")]
            if other != metric_cols:
                raise MalformedDataError(f"{p}: metric columns {other} differ from {metric_cols} in "
                                         f"{files[0]}; build each file separately.")
        return datasets.DatasetInfo(
            description="conTest/decTest response sets with diversity labels (Tevet & Berant 2021).",
            features=contest_features(metric_cols),
            citation=CITATION,
            homepage="https://github.com/GuyTevet/diversity-eval",
            license="unknown (the repository's MIT license covers its code; no data license is stated)",
        )

    def input_files(self) -> dict[str, list[Path]]:
        if self.config.data_files:
            return {split: [Path(p) for p in files] for split, files in self.config.data_files.items()}
        root = resolve_data_dir(self.config.data_dir, "diversity_eval")
        folder = TESTS[self.config.test][0]
        name = self.config.file_name
        path = find_file(root, [f"with_metrics/{folder}/{name}", f"raw/{folder}/{name}", f"{folder}/{name}", name],
                         f"{self.config.name} CSV")
        return {"test": [path]}

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=split, gen_kwargs={"paths": paths})
                for split, paths in self.input_files().items()]

    def _generate_examples(self, paths: list[Path]) -> Any:
        for path in paths:
            for i, row in enumerate(read_contest_csv(path)):
                yield f"{Path(path).name}:{i}", row


#: What the meta-evaluation reads: each row is a response set; ``label_value`` by Spearman ρ (and by OCA on the
#: binary conTest labels), ``human_score_mean`` by Spearman ρ where the file has human scores; scores stored with
#: 3 decimals as Tevet's pipeline does; the authors' own stored values are rows of their own.
DATASET = DatasetDeclaration(
    name="contest", protocol="sets", folder="diversity_eval",
    description="a response set (Tevet & Berant's conTest/decTest, per-set diversity)",
    levels={c.name: "set" for c in ContestBuilder.BUILDER_CONFIGS},
    leaderboard_configs=("con_test_200_resp_gen", "dec_test_200_resp_gen"),
    default_configs=("con_test_200_resp_gen",),
    columns=("metrics.abs_hds_mean", "metrics.SentBert"),
    set_targets={c.name: (("label_value", "spearman"),
                          *((("label_value", "oca"),) if c.name.startswith("con_test") else ()),
                          ("human_score_mean", "spearman")) for c in ContestBuilder.BUILDER_CONFIGS},
    round_decimals=3,
    published={("con_test_200_resp_gen", "label_value", "spearman"): (
        "human absolute scores 0.63, Sent-BERT 0.59 (Tevet & Berant 2021)", "Confidence NLI 0.62 (Stasaski & Hearst 2022)")},
)
