"""Recipe drifts found by independent checks: the bundled Sem-Ent space is fitted out of sample (DailyDialog
validation, disjoint from the test split the cards score) and its documented rebuild command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from repo_scripts import load_script

from dialeval.resources import examples_dir, semantic_space_dir

REPO = Path(__file__).resolve().parents[1]


def _responses(path) -> list[str]:
    """Every non-empty turn but each dialogue's first, read straight from the ParlAI JSON."""
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    return [t["text"].strip() for d in dialogues for t in d["dialogue"][1:] if t["text"].strip()]


def test_bundled_space_is_fitted_on_the_training_responses(shared_data):
    """As the Sem-Ent paper fits it: every training response of the release's train/ folder, counted here from
    the release's file directly (all utterances but each dialogue's first)."""
    config = json.loads((semantic_space_dir() / "space.json").read_text(encoding="utf-8"))["config"]
    lines = (shared_data / "dailydialog" / "train" / "dialogues_train.txt").read_text(encoding="utf-8").splitlines()
    train = [u.strip() for line in lines for u in line.split("__eou__")[1:] if u.strip()]
    test = _responses(shared_data / "dailydialog" / "test.json")
    assert (len(train), len(set(train))) == (76053, 63117)
    assert (config["n_reference"], config["n_distinct_reference"]) == (len(train), len(set(train)))
    assert (config["n_reference"], config["n_distinct_reference"]) != (len(test), len(set(test)))
    source = (semantic_space_dir() / "SOURCE.md").read_text(encoding="utf-8")
    assert "76053 DailyDialog train responses" in source and "as the Sem-Ent paper fits it" in source


def test_make_examples_rebuilds_the_bundled_examples_as_documented(shared_data, tmp_path):
    """SOURCE.md names `scripts/make_examples.py`; it runs on the published DailyDialog (whose release repeats
    three dialogues) and writes the bundled examples byte for byte."""
    env = {**os.environ, "DIALEVAL_PROGRESS": "0"}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "make_examples.py"), "--data-dir", str(shared_data),
                           "--skip-space", "--examples-out", str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    bundled = sorted(p.name for p in examples_dir().glob("*.json"))
    assert sorted(p.name for p in tmp_path.glob("*.json")) == bundled and len(bundled) == 3
    for name in bundled:
        assert (tmp_path / name).read_bytes() == (examples_dir() / name).read_bytes(), name


def test_a_refit_equal_up_to_float_rounding_keeps_the_bundled_space():
    """make_examples.py keeps the bundled space (and its fingerprint) when a refit differs only in the last float
    bits (arrays within 1e-5, the same cluster sizes); a real change is written."""

    import numpy as np

    make_examples = load_script("scripts/make_examples.py")
    rng = np.random.default_rng(0)
    old = [rng.normal(size=(8,)), rng.normal(size=(4, 8)), rng.normal(size=(3, 4))]
    dist = np.array([0.5, 0.3, 0.2])
    jitter = [a + rng.uniform(-1e-5, 1e-5, size=a.shape) for a in old]
    worst = make_examples.equivalent(jitter, old, dist, dist.copy())
    assert worst is not None and 0 < worst <= 1e-5
    assert make_examples.equivalent([a + 1e-3 for a in old], old, dist, dist) is None  # arrays moved
    assert make_examples.equivalent(jitter, old, np.array([0.4, 0.4, 0.2]), dist) is None  # cluster sizes moved
    assert make_examples.equivalent(old[:2] + [old[2][:2]], old, dist, dist) is None  # another k
