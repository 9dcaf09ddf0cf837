"""Several lexical metrics in one local call share one tokenization and one n-gram count (issue 35.5):
``dialeval.lexical.compute_many`` and ``dialeval score --metric distinct_n --metric ent_n --metric
low_frequency``; every result equals the metric's own ``compute``."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from dialeval.cli import main
from dialeval.io import text as dtext
from dialeval.lexical import compute_many
from dialeval.lexical.core import compute_distinct, compute_ent, compute_low_frequency

ALONE = {"distinct_n": compute_distinct, "ent_n": compute_ent, "low_frequency": compute_low_frequency}


@pytest.fixture(scope="module")
def turns(shared_data):
    dialogues = json.loads((shared_data / "dailydialog" / "test.json").read_text(encoding="utf-8"))
    return [t["text"].strip() for d in dialogues[:80] for t in d["dialogue"] if t["text"].strip()]


@pytest.mark.parametrize("options", [
    {"distinct_n": {}, "ent_n": {}, "low_frequency": {}},
    {"distinct_n": {"n": [1, 4], "vocab_size": 50_000}, "ent_n": {"n": [2], "base": math.e},
     "low_frequency": {"threshold": 3}},
    {"distinct_n": {"tokenizer": "whitespace"}, "ent_n": {"tokenizer": "char"}, "low_frequency": {"tokenizer": "tevet"}},
], ids=["defaults", "orders-and-options", "three-tokenizers"])
def test_compute_many_equals_each_metric_alone(turns, options):
    got = compute_many(turns, options)
    assert list(got) == list(options)
    for name, opts in options.items():
        assert got[name] == ALONE[name](turns, **opts), name


def test_compute_many_by_hand():
    texts = ["a b a", "b c", "a b a"]
    got = compute_many(texts, {"distinct_n": {"n": [1, 2], "tokenizer": "whitespace"},
                               "low_frequency": {"threshold": 2, "tokenizer": "whitespace"}})
    # unigrams a,b,a,b,c,a,b,a: 3 distinct of 8; bigrams ab,ba,bc,ab,ba: 3 distinct of 5; a=4, b=3 > 2, c=1 ≤ 2
    assert got["distinct_n"]["distinct_1"] == 3 / 8 and got["distinct_n"]["distinct_2"] == 3 / 5
    assert got["low_frequency"]["low_frequency"] == 1 / 8


def counting(monkeypatch) -> Counter:
    """Replace the whitespace tokenizer by one that counts its calls per text."""
    calls: Counter = Counter()
    real = dtext.TOKENIZERS["whitespace"]

    def whitespace(text: str) -> list[str]:
        calls[text] += 1
        return real(text)

    monkeypatch.setitem(dtext.TOKENIZERS, "whitespace", whitespace)
    return calls


def test_compute_many_tokenizes_each_distinct_response_once(turns, monkeypatch):
    calls = counting(monkeypatch)
    compute_many(turns, {name: {"tokenizer": "whitespace"} for name in ALONE})
    assert set(calls.values()) == {1} and sum(calls.values()) == len(set(turns))


def test_score_cli_tokenizes_once_for_three_lexical_metrics(turns, monkeypatch, tmp_path, capsys):
    src = tmp_path / "turns.jsonl"
    src.write_text("".join(json.dumps({"response": t}) + "\n" for t in turns), encoding="utf-8")
    calls = counting(monkeypatch)
    assert main(["score", "--input", str(src), "--field", "response", "--metric", "distinct_n", "--metric", "ent_n",
                 "--metric", "low_frequency", "--tokenizer", "whitespace", "--allow-duplicates", "--json"]) == 0
    assert set(calls.values()) == {1} and sum(calls.values()) == len(set(turns))  # was 3 per text
    printed = json.loads(capsys.readouterr().out)
    monkeypatch.undo()
    assert printed == {name: fn(turns, tokenizer="whitespace") for name, fn in ALONE.items()}


def test_compute_many_refuses_what_it_cannot_share():
    with pytest.raises(ValueError, match=r"compute 'distinct_n' with these options on its own"):
        compute_many(["a b"], {"distinct_n": {"level": "set"}, "ent_n": {}})
    with pytest.raises(ValueError, match=r"compute 'sem_ent'"):
        compute_many(["a b"], {"sem_ent": {}})
    with pytest.raises(TypeError, match=r"unknown option.*tokeniser"):
        compute_many(["a b"], {"ent_n": {"tokeniser": "char"}})


def test_two_custom_tokenizers_with_one_name_are_counted_apart():
    first = lambda text: text.split()  # noqa: E731
    second = lambda text: list(text.replace(" ", ""))  # noqa: E731
    got = compute_many(["ab cd", "ab"], {"distinct_n": {"tokenizer": first, "n": [1]},
                                         "ent_n": {"tokenizer": second, "n": [1]}})
    assert got["distinct_n"]["distinct_1"] == 2 / 3  # ab, cd, ab
    assert got["ent_n"] == compute_ent(["ab cd", "ab"], tokenizer=second, n=[1])


def test_casual_chunks_equal_nltk_on_texts_with_digits():
    """The casual tokenizer splits at spaces unless a pattern may span one; with fewer than 7 digits nltk's
    phone-number pattern (3 + 4 digits) cannot match, so such texts are split too: token-for-token equal."""
    import random

    from nltk.tokenize.casual import casual_tokenize

    rnd = random.Random(0)
    pieces = ["5", "12", "555", "1234", "-", "(", ")", "+1", "at", "pm", ".", "3.5", "10:30", "7/8", "#", ":)", " "]
    tokenize = dtext.get_tokenizer("casual")
    for _ in range(3000):
        text = " ".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 8)))
        assert tokenize(text) == casual_tokenize(text), text
