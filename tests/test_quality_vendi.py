"""Quality-weighted Vendi Score (Nguyen & Dieng 2024): qVS = mean quality × VS on fixed scores against the formula
computed by hand here, the quality metrics' terms against their own cores, the signature and bad input."""

from __future__ import annotations

import math

import pytest

import dialeval
from dialeval.full.full_followup import compute_full_inputs
from dialeval.judge.llm_judge import compute_llm_judge
from dialeval.similarity.quality_vendi import compute_quality_vendi, quality_vendi_set_adapter
from dialeval.testing.blenderbot import build_tiny_causal_lm

UNIGRAM = {"kernel": "ngram", "tokenizer": "whitespace", "n": [1]}
CONTEXTS = ["Can we meet at noon?", "Do you like cats?"]
SETS = [["Sure, noon works.", "How about one?", "Sure, noon works."], ["Yes, a lot.", "No."]]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("qvs_lm"), seed=5))


def test_equals_the_formula_on_fixed_scores():
    # orthogonal unigram vectors: VS = n; identical responses: VS = 1
    sets = [["a", "b", "c"], ["a", "a", "a"], ["a b", "a c", "d"]]
    quals = [[0.2, 0.4, 0.6], [1.0, 1.0, 0.5], [0.3, 0.6, 0.9]]
    # third set: cosines K12 = 1/2, K13 = K23 = 0, so eig(K/3) = 1/2, 1/6, 1/3
    lam = (1 / 2, 1 / 6, 1 / 3)
    vs3 = math.exp(-sum(v * math.log(v) for v in lam))
    want = [0.4 * 3, (2.5 / 3) * 1, 0.6 * vs3]
    got = compute_quality_vendi(sets, qualities=quals, **UNIGRAM)
    assert got["scores"] == pytest.approx(want, rel=1e-12)
    assert got["quality_vendi"] == pytest.approx(sum(want) / 3, rel=1e-12)
    assert got["mean_qualities"] == pytest.approx([0.4, 2.5 / 3, 0.6], rel=1e-12)
    # order 2: VS_2 = 1 / Σ λ²
    q2 = compute_quality_vendi(sets[2:], qualities=quals[2:], q=2, **UNIGRAM)
    assert q2["scores"] == pytest.approx([0.6 / sum(v * v for v in lam)], rel=1e-12)
    module = dialeval.load("quality_vendi", **UNIGRAM).compute(predictions=sets, qualities=quals)
    assert module == got
    assert got["signature"].split("|")[1:-1] == ["kernel:ngram", "q:1", "n:1", "tok:whitespace", "quality:given"]


def test_judge_quality_is_the_rescaled_expected_rating(tiny_lm):
    got = compute_quality_vendi(SETS, contexts=CONTEXTS, quality_model=tiny_lm, quality_options={"backend": "torch"},
                                **UNIGRAM)
    judge = compute_llm_judge([[c] for c, s in zip(CONTEXTS, SETS) for _ in s], [r for s in SETS for r in s],
                              model=tiny_lm, backend="torch")
    s = [(r - 1) / 4 for r in judge["scores"]]
    means = [sum(s[:3]) / 3, sum(s[3:]) / 2]
    vs = [math.exp(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))), 2.0]  # two identical + one apart; 2 apart
    assert got["mean_qualities"] == pytest.approx(means, abs=1e-9)
    assert got["scores"] == pytest.approx([m * v for m, v in zip(means, vs)], abs=1e-9)
    sig = got["signature"]
    assert "|quality:llm_judge/model:" in sig and "/level:turn/quality:overall/rubric:" in sig
    assert judge["signature"].split("|")[1] in sig  # the judge's model field


def test_full_quality_is_full_in_nats_and_alone_without_contexts(tiny_lm):
    got = compute_quality_vendi(SETS, quality_metric="full_followup", quality_model=tiny_lm,
                                quality_options={"backend": "torch"}, **UNIGRAM)
    full = compute_full_inputs(dialogues=[[r] for s in SETS for r in s], config="dialog", model=tiny_lm,
                               backend="torch")
    assert got["mean_qualities"] == pytest.approx([sum(full["scores"][:3]) / 3, sum(full["scores"][3:]) / 2])
    assert "|quality:full_followup/model:" in got["signature"] and "/level:dialog/" in got["signature"]
    rows = [{"responses": s, "context": c} for s, c in zip(SETS, CONTEXTS)]
    adapted = quality_vendi_set_adapter({"quality_model": tiny_lm, "quality_options": {"backend": "torch"},
                                         **UNIGRAM}, "con_test_200_resp_gen")(rows)
    direct = compute_quality_vendi(SETS, contexts=CONTEXTS, quality_model=tiny_lm,
                                   quality_options={"backend": "torch"}, **UNIGRAM)
    assert adapted == {"scores": direct["scores"], "signature": direct["signature"]}


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"qualities": [[0.5, -0.1, 1.0], [1.0, 1.0]]}, ValueError, "qualities[0][1]"),
    ({"qualities": [[0.5, float("nan"), 1.0], [1.0, 1.0]]}, ValueError, "finite quality ≥ 0"),
    ({"qualities": [[0.5, 1.0], [1.0, 1.0]]}, ValueError, "one score per response of set 0"),
    ({"qualities": [[0.5, 1.0, 1.0]]}, ValueError, "one list of scores per response set"),
    ({"quality_metric": "bleu"}, ValueError, "quality_metric='bleu'"),
    ({"quality_options": "fast"}, TypeError, "quality_options="),
    ({"contexts": ["only one"]}, ValueError, "one context per response set"),
])
def test_bad_input_is_one_line(kwargs, error, words):
    with pytest.raises(error) as info:
        compute_quality_vendi(SETS, **{**UNIGRAM, **kwargs})
    assert words in str(info.value) and "\n" not in str(info.value)
