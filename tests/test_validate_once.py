"""Inputs are validated once: one Unicode scan per input string per ``compute``, whether through the
``evaluate`` module (scanned before Arrow casting, then trusted by the core) or the core called directly."""

from __future__ import annotations

import re
from collections import Counter

import pytest

import dialeval
from dialeval.io import validation

TEXTS = ["café olé", "naïve idea", "déjà vu", "crème brûlée"]  # non-ASCII: every one is scanned


class CountingPattern:
    def __init__(self) -> None:
        self.pattern = re.compile("[\ud800-\udfff]")
        self.calls: Counter[str] = Counter()

    def search(self, text: str):  # noqa: ANN201 - mirrors re.Pattern.search
        self.calls[text] += 1
        return self.pattern.search(text)


@pytest.fixture
def scans(monkeypatch) -> Counter[str]:
    counting = CountingPattern()
    monkeypatch.setattr(validation, "_SURROGATE", counting)
    return counting.calls


def test_lexical_module_scans_each_prediction_once(scans):
    dialeval.load("distinct_n").compute(predictions=TEXTS)
    assert scans == Counter(TEXTS)


def test_add_batch_then_compute_scans_once(scans):
    module = dialeval.load("ent_n")
    module.add_batch(predictions=TEXTS[:2])
    module.add_batch(predictions=TEXTS[2:])
    module.compute()
    assert scans == Counter(TEXTS)


def test_sem_ent_module_and_core_scan_once(scans):
    from dialeval.resources import semantic_space_dir
    from dialeval.semantic.sem_ent import compute_sem_ent

    dialeval.load("sem_ent", space=str(semantic_space_dir())).compute(predictions=TEXTS)
    assert scans == Counter(TEXTS)  # not again in the core, nor in the space's assign
    scans.clear()
    compute_sem_ent(TEXTS, space=str(semantic_space_dir()))
    assert scans == Counter(TEXTS)


def test_full_turn_level_scans_contexts_and_predictions_once(scans, tmp_path):
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    lm = str(build_tiny_causal_lm(tmp_path / "lm"))
    contexts = [[TEXTS[0], TEXTS[1]], [TEXTS[2]]]
    dialeval.load("full_followup", "turn", model=lm, device="cpu").compute(contexts=contexts, predictions=["ça va", "très bien"])
    assert scans == Counter([*TEXTS[:3], "ça va", "très bien"])


def test_a_lone_surrogate_is_still_refused_once_named():
    with pytest.raises(ValueError, match=r"`predictions\[1\]` holds a lone surrogate"):
        dialeval.load("distinct_n").compute(predictions=["ok é", "bad \ud83d"])
