"""Every committed result file holds what the code now writes: the metric signatures it records are the ones the
code gives for the recorded options (scored again on the first rows only, never the whole run), and its fields
are the ones the code writes. A stale file (e.g. a signature written before a field was added) fails here; the
fix is the command the file records."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dialeval
from dialeval.io.signature import parse_signature
from dialeval.meta import leaderboard, sources
from dialeval.meta.evaluation import protocol_rows, raw_rows, score_rows

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
sys.path.insert(0, str(REPO / "scripts"))
import reproduce_usr_baselines as usr  # noqa: E402

FEW = 3  #: rows scored again per unit: enough for a signature, far from the run itself


def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def usr_now(shared_data, tmp_path_factory):
    """What ``scripts/reproduce_usr_baselines.py`` writes, run on the first rows of each dataset."""
    real = usr.usr_rows
    usr.usr_rows = lambda name, data_dir: real(name, data_dir)[:12]
    try:
        return usr.reproduce(shared_data, log=lambda _: None)
    finally:
        usr.usr_rows = real


def test_usr_baselines_signatures_and_fields_are_what_the_code_writes(usr_now):
    stored = _load("usr_baselines.json")
    assert set(stored) == set(usr_now) | {"source", "command", "date", "machine", "wall_seconds"}
    for name, data in stored["datasets"].items():
        now = {(r["row"], json.dumps(r["options"], sort_keys=True)): r for r in usr_now["datasets"][name]["rows"]}
        assert set(now) == {(r["row"], json.dumps(r["options"], sort_keys=True)) for r in data["rows"]}, name
        for r in data["rows"]:
            fresh = now[(r["row"], json.dumps(r["options"], sort_keys=True))]
            assert set(r) == set(fresh), (name, r["row"])
            assert r["signature"] == fresh["signature"], (name, r["row"], "rerun: " + stored["command"])


def _units(board: dict) -> dict[tuple[str, str], dict[str, dict]]:
    """``{(dataset, config): {metric: a stored row}}`` of the leaderboard's item-level rows."""
    out: dict[tuple[str, str], dict[str, dict]] = {}
    for r in board["rows"]:
        out.setdefault((r["dataset"], r["config"]), {}).setdefault(r["metric"], r)
    return out


def _rows(dataset: str, config: str, shared_data: Path) -> list[dict]:
    decl = sources.get(dataset)
    return protocol_rows(decl, raw_rows(decl, config, data_dir=shared_data / decl.folder))


BOARDS = ("leaderboard.json", "quality_leaderboard.json", "judge_leaderboard.json")  # headline, quality, LLM judge


@pytest.mark.parametrize("name", BOARDS)
def test_leaderboard_signatures_are_what_the_code_writes(name, shared_data):
    board = _load(name)
    for (dataset, config), metrics in _units(board).items():
        rows = _rows(dataset, config, shared_data)[:FEW]
        for metric, r in metrics.items():
            if metric.startswith(("column:", "scores:")) or r["signature"].startswith("scores:"):
                assert r["signature"] == metric, (dataset, config, metric)
                continue
            fresh = score_rows(metric, dataset, config, rows)["signature"]
            assert r["signature"] == fresh, (dataset, config, metric, "rerun: dialeval leaderboard (the lead's page)")
    assert parse_signature(board["signature"])["version"] == dialeval.__version__


@pytest.mark.parametrize("name", BOARDS)
def test_leaderboard_fields_are_what_the_code_writes(name, shared_data):
    board = _load(name)
    empty = {"rows": [], "pairs": [], "left_out": [], "units": {}}
    b = board["bootstrap"]
    report = leaderboard._report(empty, {}, {}, [], None, b["n_resamples"], b["fraction"], b["seed"],
                                 b["confidence"], time.perf_counter())
    assert set(board) == set(report) | {"signature"}
    assert board["bootstrap"] == report["bootstrap"], "rerun the leaderboard: its intervals are described otherwise"
    optional = {"undefined", "interval_note", "copies"}
    for dataset, config in _units(board):
        decl = sources.get(dataset)
        rows = _rows(dataset, config, shared_data)
        acc = {"rows": [], "pairs": [], "left_out": [], "units": {}}
        group = {"notes": []}
        fake = {"m": {"scores": list(np.random.default_rng(0).normal(size=len(rows))), "signature": "s"}}
        leaderboard._analyse_group(decl, config, rows, fake, acc, group, n_resamples=100, fraction=0.5, seed=0,
                                   confidence=0.95)
        written = {(r["target"], r["statistic"], r.get("level")): set(r) - optional for r in acc["rows"]}
        for r in board["rows"]:
            if (r["dataset"], r["config"]) != (dataset, config):
                continue
            key = (r["target"], r["statistic"], r.get("level"))
            assert key in written, (dataset, config, key)
            assert set(r) - optional == written[key], (dataset, config, r["metric"], key)


def test_the_sem_ent_card_shows_the_dailydialog_result_file():
    """Each number of the Sem-Ent card's DailyDialog table, read back from the page, is the result file's."""
    result = _load("sem_ent_dailydialog.json")
    page = (REPO / "metrics" / "sem_ent" / "README.md").read_text(encoding="utf-8")
    wanted = [f"| validation, the reference itself | {result['n_reference']:,} | {result['reference_sem_ent']:.4f} |",
              f"| test, human | {result['n_test']:,} | **{result['test_human_sem_ent']:.4f}** |",
              f"| {result['n_test']:,} | **{result['generic_top20_sem_ent']:.4f}** |",
              f"| maximum (ln {result['k']}) | | {result['max_sem_ent']:.4f} |",
              f"PCA kept {result['kept_components']} of {result['dim']} dimensions",
              f"Re-embedding {result['bf16_agreement_n']:,} test responses with `dtype=\"bf16\"` put "
              f"{100 * result['bf16_vs_fp32_assignment_agreement']:.2f}% of",
              f"`{result['command']}`"]
    for text in wanted:
        assert text in page, f"metrics/sem_ent/README.md lacks {text!r}: rerun {result['command']}"
