"""compat="full-0.0.3" against outputs of the reference package `full` 0.0.3.1.

tests/data/full_compat_reference.json holds the package's scores, computed in its own transformers-4.x
virtualenv by benchmarks/full_compat/make_reference.py on a tiny random BlenderBot; here the identical model
is rebuilt (seeded builder, deterministic tokenizer) and dialeval's compat mode must match (rel. err < 1e-5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dialeval.full.scorer import full_scores
from dialeval.models.lm import load_lm
from dialeval.testing.blenderbot import build_tiny_blenderbot, state_fingerprint

REFERENCE = json.loads((Path(__file__).parent / "data" / "full_compat_reference.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    assert REFERENCE["builder"]["function"] == "dialeval.testing.blenderbot.build_tiny_blenderbot"
    return build_tiny_blenderbot(tmp_path_factory.mktemp("compat") / "bb", **REFERENCE["builder"]["kwargs"])


def test_rebuild_is_bit_identical(model_dir, tmp_path):
    """Same weights and vocabulary as the model the package ran on, and as a second build."""
    assert state_fingerprint(model_dir) == REFERENCE["model_fingerprint"]
    again = build_tiny_blenderbot(tmp_path / "again", **REFERENCE["builder"]["kwargs"])
    assert state_fingerprint(again) == REFERENCE["model_fingerprint"]


def test_reference_covers_the_warts():
    names = {c["name"]: c for c in REFERENCE["cases"]}
    assert names["turn_long_history"]["untruncated_tokens"] > 128 == names["turn_long_history"]["package_encoder_tokens"]
    assert len(names["turn_over_lookback"]["context"]) > 50
    assert REFERENCE["package"]["full"].startswith("0.0.3") and REFERENCE["package"]["transformers"].startswith("4.")
    assert len(REFERENCE["package"]["follow_ups"]) == 4


@pytest.mark.parametrize("level", ["turn", "dialog"])
def test_compat_equals_package(model_dir, level):
    lm = load_lm(str(model_dir), device="cpu")
    cases = [c for c in REFERENCE["cases"] if c["level"] == level and not c.get("follow_ups")]
    histories = [c["context"] + [c["response"]] if level == "turn" else c["context"] for c in cases]
    # all cases of a level in one padded batch, and one by one
    for batch_size in (len(cases), 1):
        res = full_scores(histories, level=level, lm=lm, compat="full-0.0.3", batch_size=batch_size, progress=False)
        for case, ours in zip(cases, res["scores"]):
            assert ours == pytest.approx(case["package_score"], rel=1e-5), case["name"]
        assert len(res["follow_up_scores"][0]) == 4


def test_compat_custom_follow_ups(model_dir):
    lm = load_lm(str(model_dir), device="cpu")
    (case,) = [c for c in REFERENCE["cases"] if c.get("follow_ups")]
    res = full_scores([case["context"] + [case["response"]]], level="turn", lm=lm, follow_ups=case["follow_ups"],
                      compat="full-0.0.3", progress=False)
    assert res["scores"][0] == pytest.approx(case["package_score"], rel=1e-5)


def test_compat_through_the_module(model_dir):
    import dialeval

    metric = dialeval.load("full_followup", "dialog", model=str(model_dir), compat="full-0.0.3", progress=False)
    cases = [c for c in REFERENCE["cases"] if c["level"] == "dialog"]
    res = metric.compute(dialogues=[c["context"] for c in cases])
    for case, ours in zip(cases, res["scores"]):
        assert ours == pytest.approx(case["package_score"], rel=1e-5), case["name"]
    assert "compat:full-0.0.3" in res["signature"] and "agg:mean_ppl" in res["signature"]
