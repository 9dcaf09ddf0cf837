"""Lexical metrics: hand-computed values, properties, bad input, Tevet reproduction."""

from __future__ import annotations

import csv
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialeval.io.text import get_tokenizer
from dialeval.lexical import formulas as lexical
from dialeval.lexical.core import compute_distinct, compute_ent, compute_low_frequency
from dialeval.lexical.ngrams import NgramCounts, count_ngrams

# ---------------------------------------------------------------- hand-computed values


def test_distinct_hand_computed_whitespace():
    # unigrams: a b c a b d -> 4 distinct / 6; bigrams: ab bc ab bd -> 3/4; trigrams: abc abd -> 2/2
    out = compute_distinct(["a b c", "a b d", ""], tokenizer="whitespace")
    assert out["distinct_1"] == pytest.approx(4 / 6)
    assert out["distinct_2"] == pytest.approx(3 / 4)
    assert out["distinct_3"] == pytest.approx(1.0)
    assert out["distinct_mean"] == pytest.approx((4 / 6 + 3 / 4 + 1) / 3)


def test_distinct_empty_strings_give_zero_ngrams():
    out = compute_distinct(["", "   "], tokenizer="whitespace")
    assert out["distinct_1"] == 0.0 and out["distinct_3"] == 0.0


def test_casual_tokenizer_keeps_case_and_punctuation():
    assert get_tokenizer("casual")("Hello, World!") == ["Hello", ",", "World", "!"]


def test_char_tokenizer_for_chinese():
    out = compute_distinct(["你好 你好", "好的"], tokenizer="char", n=1)
    # tokens: 你 好 你 好 好 的 -> distinct {你, 好, 的} = 3 of 6
    assert out["distinct_1"] == pytest.approx(0.5)


def test_ead_formula():
    # V = 10, C = 6 unigrams, N = 4 distinct
    out = compute_distinct(["a b c", "a b d"], tokenizer="whitespace", n=1, vocab_size=10)
    expected = 4 / (10 * (1 - (9 / 10) ** 6))
    assert out["ead_1"] == pytest.approx(expected, rel=1e-12)


def test_entropy_sem_ent_reference_example():
    # The Sem-Ent reference's own check: Hello, Hello World, World Hi -> -(4/5 log2 2/5 + 1/5 log2 1/5)
    out = compute_ent(["Hello", "Hello World", "World Hi"], n=1)
    assert out["ent_1"] == pytest.approx(-(4 / 5 * math.log2(2 / 5) + 1 / 5 * math.log2(1 / 5)), abs=1e-15)


def test_entropy_base_e_and_uniform():
    out = compute_ent(["a b c d"], tokenizer="whitespace", n=[1, 2], base=math.e)
    assert out["ent_1"] == pytest.approx(math.log(4))
    assert out["ent_2"] == pytest.approx(math.log(3))


def test_low_frequency_self_counts():
    # tokens: x x x y -> counts x:3, y:1; threshold 1 -> only y is low-frequency: 1/4
    assert compute_low_frequency(["x x", "x y"], threshold=1, tokenizer="whitespace")["low_frequency"] == 0.25
    assert compute_low_frequency(["x x", "x y"], threshold=3, tokenizer="whitespace")["low_frequency"] == 1.0


def test_low_frequency_reference_counts_and_texts():
    preds = ["x y z"]
    # reference: x seen 5 times, y once, z never -> threshold 1: y and z are low -> 2/3
    by_counts = compute_low_frequency(preds, threshold=1, tokenizer="whitespace", reference_counts={"x": 5, "y": 1})
    by_texts = compute_low_frequency(preds, threshold=1, tokenizer="whitespace", reference_texts=["x x x x x y"])
    assert by_counts["low_frequency"] == pytest.approx(2 / 3)
    assert by_texts["low_frequency"] == pytest.approx(2 / 3)
    assert "counts:reference_texts" in by_texts["signature"]


def test_set_level_averages_within_sets():
    sets = [["a b", "a b"], ["a b", "c d"]]
    out = compute_distinct(sets, tokenizer="whitespace", n=[1, 2], level="set")
    # set 1: unigrams 2/4, bigrams 1/2; set 2: 4/4, 2/2
    assert out["scores_by_n"]["distinct_1"] == [0.5, 1.0]
    assert out["distinct_1"] == pytest.approx(0.75)
    assert out["scores"] == [pytest.approx(0.5), pytest.approx(1.0)]


def test_tevet_example_by_hand():
    # Tevet's diversity_metrics.py example set, n=1..5, "." removed, split on single spaces.
    s = ["i am going.", "i am going", "lets go i i"]
    # tokens: [i am going] [i am going] [lets go i i]
    d1 = 5 / 10  # i am going lets go
    d2 = 5 / 7  # (i am)(am going)x2 (lets go)(go i)(i i) -> 5 distinct of 7
    d3 = 3 / 4  # (i am going)x2 (lets go i)(go i i)
    d4 = 1 / 1
    d5 = 0.0
    out = compute_distinct([s], tokenizer="tevet", level="set")
    assert out["scores"][0] == pytest.approx((d1 + d2 + d3 + d4 + d5) / 5)


def test_signature_names_configuration():
    sig = compute_ent(["a"], tokenizer="whitespace", n=2, base=2)["signature"]
    assert sig.startswith("ent_n|tok:whitespace|n:2|base:2|level:corpus|version:")


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad, exc, words",
    [
        (None, ValueError, "None"),
        ([], ValueError, "empty"),
        ("a single string", TypeError, "single string"),
        (["ok", None], TypeError, "predictions[1]"),
        (["ok", 3], TypeError, "predictions[1]"),
    ],
)
def test_bad_predictions(bad, exc, words):
    for fn in (compute_distinct, compute_ent, compute_low_frequency):
        with pytest.raises(exc, match=words.replace("[", r"\[").replace("]", r"\]")):
            fn(bad)


def test_bad_options():
    with pytest.raises(ValueError, match="tokenizer"):
        compute_distinct(["a"], tokenizer="nope")
    with pytest.raises(ValueError, match="n"):
        compute_distinct(["a"], n=[0])
    with pytest.raises(ValueError, match="level"):
        compute_distinct(["a"], level="doc")
    with pytest.raises(ValueError, match="vocab_size"):
        compute_distinct(["a"], vocab_size=0)
    with pytest.raises(ValueError, match="base"):
        compute_ent(["a"], base=1)
    with pytest.raises(ValueError, match="threshold"):
        compute_low_frequency(["a"], threshold=-1)
    with pytest.raises(ValueError, match="not both"):
        compute_low_frequency(["a"], reference_counts={"a": 1}, reference_texts=["a"])
    with pytest.raises(TypeError, match="level='set'"):
        compute_distinct([["a", "b"]])
    with pytest.raises(ValueError, match=r"predictions\[0\]"):
        compute_distinct([[]], level="set")


# ---------------------------------------------------------------- properties

words = st.sampled_from(["a", "b", "c", "hello", "world", "!", "I", "don't", "know", "."])
texts = st.lists(st.lists(words, max_size=8).map(" ".join), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(texts)
def test_values_in_range(ts):
    d = compute_distinct(ts)
    e = compute_ent(ts)
    lf = compute_low_frequency(ts, threshold=1)["low_frequency"]
    state = count_ngrams(ts, (1, 2, 3), "casual")
    for n in (1, 2, 3):
        assert 0.0 <= d[f"distinct_{n}"] <= 1.0
        distinct = state.distinct(n)
        assert 0.0 <= e[f"ent_{n}"] <= math.log2(distinct) + 1e-12 if distinct else e[f"ent_{n}"] == 0.0
    assert 0.0 <= lf <= 1.0


@settings(max_examples=60, deadline=None)
@given(texts, st.integers(min_value=1, max_value=24), st.randoms(use_true_random=False))
def test_chunked_merge_equals_whole_and_order_invariance(ts, cut, rnd):
    whole = count_ngrams(ts, (1, 2, 3), "casual")
    parts = NgramCounts((1, 2, 3)).update(ts[:cut]).merge(NgramCounts((1, 2, 3)).update(ts[cut:]))
    assert parts.counts == whole.counts and parts.totals == whole.totals and parts.num_texts == whole.num_texts
    shuffled = list(ts)
    rnd.shuffle(shuffled)
    assert compute_distinct(shuffled) == compute_distinct(ts)
    a, b = compute_ent(shuffled), compute_ent(ts)
    for key in ("ent_1", "ent_2", "ent_3"):
        assert a[key] == pytest.approx(b[key], abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(texts)
def test_state_json_round_trip(ts):
    state = count_ngrams(ts, (1, 2), "whitespace")
    again = NgramCounts.from_dict(state.to_dict())
    assert again.counts == state.counts and again.totals == state.totals


def test_merge_rejects_different_configuration():
    with pytest.raises(ValueError, match="cannot merge"):
        NgramCounts((1, 2)).merge(NgramCounts((1,)))


def test_dedup_counting_equals_naive_counter():
    from collections import Counter

    ts = ["I don't know .", "I don't know .", "hello world", "", "I don't know ."] * 7
    naive = Counter()
    tok = get_tokenizer("casual")
    for t in ts:
        toks = tok(t)
        naive.update(zip(toks, toks[1:]))
    assert count_ngrams(ts, (2,)).counts[2] == naive


# ---------------------------------------------------------------- Tevet & Berant reproduction


def test_tevet_preset_reproduces_stored_averaged_distinct_ngrams(shared_data):
    path = shared_data / "diversity_eval" / "with_metrics" / "conTest" / "con_test_200_with_hds_resp_gen.csv"
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 220
    resp_keys = sorted((k for k in rows[0] if k.startswith("resp_")), key=lambda k: int(k.split("_")[1]))
    sets = [[r[k] for k in resp_keys] for r in rows]
    ours = compute_distinct(sets, tokenizer="tevet", level="set")["scores"]
    stored = [float(r["metric_AveragedDistinctNgrams"]) for r in rows]
    worst = max(abs(a - b) for a, b in zip(ours, stored))
    assert worst <= 0.0005, worst


def test_library_functions_match_module_functions():
    ts = ["a b a", "b c"]
    assert lexical.corpus_distinct(ts, (1,), "whitespace") == {"distinct_1": 3 / 5}
    # counts a:2 b:2 c:1 -> only c (1 of 5 tokens) is at most 1
    assert lexical.low_frequency(ts, 1, "whitespace") == pytest.approx(1 / 5)


def test_casual_equals_nltk_casual_tokenize_on_real_turns(shared_data):
    import json

    from nltk.tokenize.casual import casual_tokenize

    dialogues = json.loads((shared_data / "dailydialog" / "test.json").read_text(encoding="utf-8"))
    turns = [t["text"] for d in dialogues[:150] for t in d["dialogue"]]
    turns += ["call me at 555-123-4567 :-) http://x.co/a?b=1 #tag @user", "Wait . . . what ?!", "&amp; <3"]
    tok = get_tokenizer("casual")
    assert [tok(t) for t in turns] == [casual_tokenize(t) for t in turns]


_ALPHABET = list("aZé 你 .,!?'-_:;()[]<>@#&/\\*=+~\t\n\r") + ["  ", ". .", "...", ":-)", "<3", "http://a.co/x",
                                                            "www.x.org", "&amp;", "😀", "👍🏽", "\u00a0", "\x1c", "5"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ALPHABET), max_size=30).map("".join))
def test_casual_equals_nltk_on_generated_text(text):
    from nltk.tokenize.casual import casual_tokenize

    assert get_tokenizer("casual")(text) == casual_tokenize(text)


def test_low_frequency_checks_predictions_before_the_reference():
    """The predictions are named first when both are bad, in one process and when finishing merged counts."""
    from dialeval.lexical.core import compute_low_frequency
    from dialeval.lexical.ngrams import NgramCounts
    from dialeval.lexical.scale_out import lexical_plan, lexical_result

    with pytest.raises(ValueError, match="`predictions`"):
        compute_low_frequency(None, reference_counts=[1])
    with pytest.raises(ValueError, match="not both"):
        compute_low_frequency(["a"], reference_counts={"a": 1}, reference_texts=["a"])
    plan = lexical_plan("low_frequency", {"reference_texts": [1]})
    with pytest.raises(ValueError, match="`predictions` is empty"):
        lexical_result(NgramCounts((1,), "casual"), plan)
    plan = lexical_plan("low_frequency", {"reference_counts": {"a": 3}, "threshold": 2})
    state = NgramCounts((1,), "casual").update(["a b", "a"])
    assert lexical_result(state, plan) == compute_low_frequency(["a b", "a"], threshold=2, reference_counts={"a": 3})
    assert lexical_result(state, plan)["low_frequency"] == pytest.approx(1 / 3)  # only "b" (unseen: 0 ≤ 2)


def test_low_frequency_says_when_it_is_one_by_construction():
    """No reference and no token above the threshold: LF = 1.0 says so (note + warning); a reference or a
    token above the threshold gives a plain number (hand-counted)."""
    import warnings

    from dialeval.io.validation import ResultNote
    from dialeval.lexical.core import compute_low_frequency

    with pytest.warns(ResultNote, match=r"no token occurs more than threshold=100 times in these 4 tokens"):
        out = compute_low_frequency(["a b", "a c"], tokenizer="whitespace")
    assert out["low_frequency"] == 1.0 and "reference_texts=" in out["note"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = compute_low_frequency(["a b", "a c"], tokenizer="whitespace", threshold=1)  # a occurs twice
        ref = compute_low_frequency(["a b", "a c"], tokenizer="whitespace", reference_texts=["a " * 101])
    assert plain["low_frequency"] == 0.5 and "note" not in plain  # b, c of a, b, a, c
    assert ref["low_frequency"] == 0.5 and "note" not in ref  # a occurs 101 times in the reference
