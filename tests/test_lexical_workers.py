"""Tokenization in worker processes gives exactly the in-process tokens and counts."""

import json

import pytest

from dialeval.io.text import TokenizerPool, tokenize_all
from dialeval.lexical.formulas import corpus_distinct as distinct_n
from dialeval.lexical.ngrams import NgramCounts


def shout(text: str) -> list[str]:  # a picklable custom tokenizer
    return text.upper().split()


@pytest.fixture(scope="module")
def turns(shared_data):
    dialogues = json.loads((shared_data / "dailydialog" / "test.json").read_text(encoding="utf-8"))
    out = [t["text"] for d in dialogues for t in d["dialogue"]]
    return out + ["call me at 555-123-4567 :-) http://x.co/a?b=1 #tag @user", "Wait . . . what ?!", "&amp; <3"]


def test_workers_give_nltk_casual_tokens_on_real_turns(turns):
    from nltk.tokenize.casual import casual_tokenize

    assert len(turns) == 7743
    with TokenizerPool("casual", num_workers=2, min_texts=0, chunk_size=500) as pool:
        got = list(pool.map(turns))
    assert got == [casual_tokenize(t) for t in turns]


def test_workers_give_identical_counts(turns):
    one = NgramCounts((1, 2, 3), "casual").update(turns)
    with TokenizerPool("casual", num_workers=2, min_texts=0, chunk_size=700) as pool:
        two = NgramCounts((1, 2, 3), "casual").update(turns, pool=pool)
    assert two.counts == one.counts and two.totals == one.totals and two.num_texts == 7743


def test_small_inputs_stay_in_process_and_custom_tokenizers_travel():
    assert tokenize_all(["a b", "c"], "whitespace", num_workers=2) == [["a", "b"], ["c"]]
    with TokenizerPool(shout, num_workers=1, min_texts=0, chunk_size=1) as pool:
        assert list(pool.map(["a b", "c d e"])) == [["A", "B"], ["C", "D", "E"]]
    assert distinct_n(["a b", "a c"], (1,), "whitespace", num_workers=2) == {"distinct_1": 3 / 4}


def test_bad_num_workers_and_unpicklable_tokenizer_are_clear_errors():
    with pytest.raises(ValueError, match="num_workers"):
        tokenize_all(["a"], "casual", num_workers=-1)
    with pytest.raises(ValueError, match="num_workers"):
        tokenize_all(["a"], "casual", num_workers=True)
    with pytest.raises(ValueError, match="cannot be pickled"):
        TokenizerPool(lambda s: s.split(), num_workers=1)
