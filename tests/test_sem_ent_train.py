"""Sem-Ent on the paper's own data: the Sem-Ent card's numbers for DailyDialog's training responses are those of
the committed result file (``python scripts/sem_ent_train_skew.py --data-dir ../shared/data`` rewrites it), the
file is internally consistent (sizes sum to the responses, shares to 1, the head share is the five largest, DRESS
weights are (1 − p)^30), and the responses it counts are the builder's training split, counted here from the
release's files directly."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULT = json.loads((REPO / "docs" / "results" / "sem_ent_train_clusters.json").read_text(encoding="utf-8"))
CARD = (REPO / "metrics" / "sem_ent" / "README.md").read_text(encoding="utf-8")


def test_the_result_file_is_consistent():
    sizes, shares = RESULT["cluster_sizes"], RESULT["cluster_shares"]
    assert len(sizes) == len(shares) == RESULT["k"] == 20
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == RESULT["n_responses"]
    assert math.fsum(shares) == pytest.approx(1.0, abs=1e-12)
    assert RESULT["head_share_top5"] == pytest.approx(math.fsum(shares[:5]), abs=1e-12)
    assert RESULT["head_share_top5"] == pytest.approx(sum(sizes[:5]) / RESULT["n_responses"], abs=1e-9)
    assert RESULT["dress_weights"] == pytest.approx([(1 - p) ** 30 for p in shares], abs=1e-12)
    assert RESULT["entropy_nats"] == pytest.approx(-math.fsum(p * math.log(p) for p in shares if p), abs=1e-12)


def test_it_counts_the_release_training_responses(shared_data):
    lines = (shared_data / "dailydialog" / "train" / "dialogues_train.txt").read_text(encoding="utf-8").splitlines()
    responses = [u.strip() for line in lines for u in [v for v in line.split("__eou__")][1:] if u.strip()]
    assert RESULT["n_responses"] == len(responses) == 76053


def test_the_card_shows_the_file():
    assert RESULT["command"] in CARD
    assert f"{100 * RESULT['head_share_top5']:.1f} %" in CARD
    assert f"{RESULT['n_responses']:,}" in CARD
    assert ", ".join(f"{s:,}" for s in RESULT["cluster_sizes"]) in CARD
    w = RESULT["dress_weights"]
    assert f"{w[0]:.3f}" in CARD and f"{w[-1]:.3f}" in CARD
    assert (REPO / "metrics" / "sem_ent" / "train_clusters.png").is_file()
