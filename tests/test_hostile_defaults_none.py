"""``None`` for an option means its default on every route (Option.check's rule): the LLM judge's
``share_prefix=None`` ran the unshared route and gave numbers that differ from the default's in the last digits."""

from __future__ import annotations

import pytest

from dialeval.judge.llm_judge import compute_llm_judge
from dialeval.testing.blenderbot import build_tiny_causal_lm


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("judge") / "lm", seed=3))


def test_judge_share_prefix_none_gives_the_default_numbers(tiny_lm):
    contexts = [["hello there", "how are you ?"]] * 3
    responses = ["fine thanks .", "good , you ?", "not bad at all ."]
    default = compute_llm_judge(contexts, responses, model=tiny_lm, backend="torch")
    none = compute_llm_judge(contexts, responses, model=tiny_lm, backend="torch", share_prefix=None)
    assert none["scores"] == default["scores"]
