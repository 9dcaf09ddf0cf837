"""Bounded work (issue 21): every option that sizes work declares a range, and a value outside it (or an
impossible one, or an unknown option or config) is refused before any work, in the library, the CLI and the
Space's compute path."""

from __future__ import annotations

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
    with pytest.raises(ValueError, match="`vocab_size`=2 is impossible: the responses hold 3 distinct 1-grams"):
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
