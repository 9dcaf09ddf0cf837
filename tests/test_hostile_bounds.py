"""Bounded work (issue 21): every option that sizes work declares a range, and a value outside it (or an
impossible one, or an unknown option or config) is refused before any work, in the library, the CLI and the
Space's compute path."""

from __future__ import annotations

import json
import time
import warnings

import evaluate
import pytest

import dialeval
from dialeval import registry
from dialeval.cli import main
from dialeval.ui.inputs import UIInputs
from dialeval.ui.scoring import run_metric

#: Option names that size work (counts, orders, lengths, batches, workers): each must declare a range.
SIZE_OPTIONS = {"n", "k", "vocab_size", "threshold", "batch_size", "max_tokens", "max_length", "lookback",
                "num_workers", "examples_per_cluster"}
HUGE = 99999999999999999999999


def _load(decl: registry.MetricDeclaration):  # noqa: ANN202
    config = decl.ui_config or (decl.configs[0] if decl.configs != ("default",) else None)
    return dialeval.load(decl.name, config) if config else dialeval.load(decl.name)


def test_every_size_option_declares_a_range():
    missing = [f"{d.name}.{o.name}" for d in registry.declarations().values() for o in d.options
               if o.name in SIZE_OPTIONS and (o.minimum is None or o.maximum is None)]
    assert missing == []


@pytest.mark.parametrize("name", ["distinct_n", "ent_n"])
def test_huge_n_is_refused_in_under_a_second_in_the_library(name):
    module = dialeval.load(name)
    for n in (10**22, [1, 10**9], 0):
        start = time.perf_counter()
        with pytest.raises(ValueError, match=r"`n`=.* is out of range: 1 ≤ n ≤ 16"):
            module.compute(predictions=["a b c", "d e"], n=n)
        assert time.perf_counter() - start < 1.0
    with pytest.raises(ValueError, match="out of range"):  # load-time options too
        dialeval.load(name, n=10**22)


def test_every_declared_range_is_enforced_before_any_work():
    for decl in registry.declarations().values():
        module = _load(decl)  # loads no model: models load on the first compute
        for option in decl.options:
            if option.maximum is None:
                continue
            start = time.perf_counter()
            with pytest.raises(ValueError, match=f"{decl.name}: `{option.name}`=.* is out of range"):
                module.compute(**decl.example, **{option.name: int(option.maximum) + 1})
            assert time.perf_counter() - start < 1.0, (decl.name, option.name)


def test_impossible_values():
    with pytest.raises(ValueError, match=r"`vocab_size`=1 is out of range: 2 ≤ vocab_size"):
        dialeval.load("distinct_n").compute(predictions=["a b c", "a b"], vocab_size=1)
    # 3 distinct unigrams cannot come from a vocabulary of 2 (EAD would exceed 1)
    with pytest.raises(ValueError, match="`vocab_size`=2 is too small for the responses: it holds 3 distinct 1-grams"):
        dialeval.load("distinct_n").compute(predictions=["a b c", "a b"], n=1, vocab_size=2)
    out = dialeval.load("distinct_n").compute(predictions=["a b c", "a b"], n=1, vocab_size=3)
    assert out["ead_1"] == pytest.approx(3 / (3 * (1 - (2 / 3) ** 5)))  # N / (V (1 - ((V-1)/V)^C)), C = 5
    for base in (1e-300, 0.5, 1):
        with pytest.raises(ValueError, match=r"`base`=.* is out of range: 1 < base"):
            dialeval.load("ent_n").compute(predictions=["a b c", "a b"], base=base)


def test_unknown_option_is_an_error_alone_and_in_combine():
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['tokeniser'\]"):
        dialeval.load("distinct_n").compute(predictions=["a b"], tokeniser="char")
    combined = evaluate.combine([dialeval.load("distinct_n"), dialeval.load("ent_n")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = combined.compute(predictions=["a b", "a c"], tokenizer="whitespace", base=2)  # shared options
    assert out["distinct_1"] == pytest.approx(3 / 4) and out["ent_1"] == pytest.approx(1.5)  # p = 1/2, 1/4, 1/4
    with pytest.raises(TypeError, match="no module of this evaluate.combine knows them"):
        combined.compute(predictions=["a b"], tokeniser="char")


def test_cli_refuses_huge_n_and_a_bogus_config(tmp_path, capsys):
    data = tmp_path / "r.txt"
    data.write_text("a b\nc d\n", encoding="utf-8")
    start = time.perf_counter()
    assert main(["score", "--metric", "distinct_n", "--input", str(data), "--metric-arg", f"n={HUGE}"]) == 2
    assert time.perf_counter() - start < 1.0
    err = capsys.readouterr().err
    assert "`n`=1.000e+23 is out of range: 1 ≤ n ≤ 16" in err and "Traceback" not in err
    assert main(["score", "--metric", "distinct_n", "--input", str(data), "--metric-config", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "--metric-config 'bogus' is not a config of ['distinct_n']" in err


def test_space_compute_path_refuses_huge_n():
    start = time.perf_counter()
    outcome = run_metric("distinct_n", UIInputs(responses=["a b", "c d"]), options={"n": HUGE})
    assert time.perf_counter() - start < 1.0
    assert outcome.status == "error" and "out of range: 1 ≤ n ≤ 16" in outcome.message


# EAD-n per response set (Liu et al., ACL 2022): N / (V · (1 − ((V−1)/V)^C)), N distinct n-grams among C


def test_ead_refuses_a_set_with_more_distinct_ngrams_than_the_vocabulary_allows():
    module = dialeval.load("distinct_n")
    sets = [["a b", "a c"], ["a b c", "d e"]]  # the second set: 5 distinct unigrams, more than V = 3
    with pytest.raises(ValueError) as info:
        module.compute(predictions=sets, n=1, level="set", vocab_size=3)
    message = str(info.value)
    assert "\n" not in message
    assert "`vocab_size`=3 is too small for response set predictions[1]: it holds 5 distinct 1-grams" in message
    assert "3^1" in message and "EAD-1 would be 1.919" in message  # 5 / (3 (1 − (2/3)^5)) = 5 · 243 / 633
    assert "pass the generator's real vocabulary size (e.g. len(tokenizer)) as vocab_size" in message
    # orders above 1: 7 distinct bigrams cannot come from V = 2 (at most 2^2 = 4)
    with pytest.raises(ValueError, match=r"predictions\[0\]: it holds 7 distinct 2-grams, more than the 2\^2"):
        module.compute(predictions=[["a b c d e f g h"]], n=2, level="set", vocab_size=2)


def test_ead_per_set_hand_computed():
    out = dialeval.load("distinct_n").compute(predictions=[["a b", "a c"], ["x y", "y"]], n=1, level="set",
                                              vocab_size=4)
    # set 0: C = 4 tokens, N = 3: EAD = 3 / (4 (1 − (3/4)^4)) = 3 / (175/64) = 192/175
    # set 1: C = 3 tokens, N = 2: EAD = 2 / (4 (1 − (3/4)^3)) = 2 / (37/16) = 32/37
    assert out["scores_by_n"]["ead_1"] == pytest.approx([192 / 175, 32 / 37], rel=1e-12)
    assert out["ead_1"] == pytest.approx((192 / 175 + 32 / 37) / 2, rel=1e-12)
    assert out["scores_by_n"]["distinct_1"] == [3 / 4, 2 / 3]
    # a set whose tokens all differ at a real vocabulary is scored, not refused (EAD just above 1)
    real = dialeval.load("distinct_n").compute(predictions=[[" ".join(f"w{i}" for i in range(10))]], n=1,
                                               level="set", vocab_size=50257)
    assert real["ead_1"] == pytest.approx(10 / (50257 * (1 - (50256 / 50257) ** 10)), rel=1e-9)


def test_ead_is_checked_on_the_scale_out_path():
    from dialeval.lexical.ngrams import count_ngrams
    from dialeval.lexical.scale_out import finish, lexical_plan

    plan = lexical_plan("distinct_n", {"n": [1], "vocab_size": 3})
    with pytest.raises(ValueError, match="`vocab_size`=3 is too small for the responses: it holds 5 distinct 1-grams"):
        finish(count_ngrams(["a b c", "d e"], (1,), "casual"), plan)
    state = count_ngrams(["a b", "a c"], (1,), "casual")
    assert finish(state, lexical_plan("distinct_n", {"n": [1], "vocab_size": 4}))["ead_1"] == pytest.approx(192 / 175)


# Types every metric reads the same way are checked from the declaration (issue 21's generated tally found options
# that a call does not use accepting nonsense: progress="yes", max_tokens=2.5, stories=[1, 2], tokenizer=5 with the
# embedding kernel, device=[...] without a coherence model)


@pytest.mark.parametrize(("metric", "options", "error", "message"), [
    ("nli_diversity", {"progress": "yes"}, TypeError, "nli_diversity: `progress` must be True or False, got 'yes'."),
    ("nli_diversity", {"return_probabilities": 2}, TypeError, "`return_probabilities` must be True or False, got 2."),
    ("nli_diversity", {"max_tokens": 2.5}, TypeError, "`max_tokens` must be an integer (1 ≤ max_tokens ≤ 1,048,576), "
                                                       "got 2.5."),
    ("full_followup", {"max_tokens": True}, TypeError, "`max_tokens` must be an integer"),
    ("ent_n", {"base": [2]}, TypeError, "ent_n: `base` must be a number (1 < base), got [2]."),
    ("dialgen", {"stories": [1, 2]}, TypeError, "dialgen: `stories`[0] is int (1), not a string"),
    ("dialgen", {"stories": []}, ValueError, "dialgen: `stories` is an empty list"),
    ("dialgen", {"stories": "one story"}, TypeError, "`stories` must be a list of strings, got str"),
    ("dialgen", {"batch_size": "8"}, TypeError, "dialgen: `batch_size` must be an integer"),
    ("dialgen", {"device": ["cpu"]}, TypeError, "`device` must be text, got list ['cpu']"),
    ("vendi_score", {"tokenizer": "bogus"}, ValueError, "bogus"),
])
def test_option_types_are_checked_even_when_the_call_does_not_use_the_option(metric, options, error, message):
    decl = registry.get(metric)
    start = time.perf_counter()
    with pytest.raises(error) as info:  # refused before any model loads (none of these metrics has one here)
        _load(decl).compute(**decl.example, **options)
    assert time.perf_counter() - start < 2.0
    assert message in str(info.value) and "\n" not in str(info.value)


def test_option_types_in_the_cli(tmp_path, capsys):
    data = tmp_path / "r.txt"
    data.write_text("a b\nc d\n", encoding="utf-8")
    before = data.read_bytes()
    assert main(["score", "--metric", "distinct_n", "--input", str(data), "--metric-arg", "num_workers=1.5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "distinct_n: `num_workers` must be an integer (0 ≤ num_workers ≤ 256), got 1.5" in err
    assert main(["score", "--metric", "distinct_n", "--input", str(data), "--metric-arg", "vocab_size=true"]) == 2
    assert "`vocab_size` must be an integer" in capsys.readouterr().err
    assert data.read_bytes() == before
    # the documented values still pass: None is the default, numpy-free ints, a bool for a bool option
    assert main(["score", "--metric", "distinct_n", "--input", str(data), "--metric-arg", "vocab_size=null",
                 "--metric-arg", "num_workers=0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_n"]["distinct_1"] == 1.0  # a, b, c, d: 4 of 4
