"""Arrow n-gram count tables (the Ray engine's mergeable lexical state) against the one-process counter."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from dialeval.lexical.core import compute_distinct, compute_ent, compute_low_frequency
from dialeval.lexical.ngram_tables import NgramTable, count_table, merge_tables
from dialeval.lexical.scale_out import finish, lexical_plan

TEXTS = ["I don't know .", "I don't know .", "Sure , let's go to the beach !", "", "Yes", "I know , I know ."]


def _chunks(texts: list[str], sizes: list[int]) -> list[pa.Table]:
    out, i = [], 0
    for size in sizes:
        out.append(count_table(pa.array(texts[i:i + size], pa.string()), (1, 2, 3)))
        i += size
    return out


def test_hand_counts_of_one_chunk():
    table = NgramTable(count_table(pa.array(["a b a", "a b", "a b a"]), (1, 2), "whitespace"), (1, 2))
    assert table.num_texts == 3
    assert dict(table.counts[1]) == {"a": 5, "b": 3}  # a b a, a b, a b a
    assert (table.distinct(1), table.total(1)) == (2, 8)
    assert (table.distinct(2), table.total(2)) == (2, 5)  # "a b" ×3, "b a" ×2
    assert sorted(table.counts[2].values()) == [2, 3]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_any_chunking_and_merge_order_gives_the_one_process_result(shared_data, seed):
    import json

    dialogues = json.loads((shared_data / "dailydialog" / "test.json").read_text(encoding="utf-8"))
    texts = [t["text"] for d in dialogues[:150] for t in d["dialogue"]] + TEXTS
    rng = random.Random(seed)
    sizes, left = [], len(texts)
    while left:
        sizes.append(min(left, rng.randint(1, 300)))
        left -= sizes[-1]
    tables = _chunks(texts, sizes)
    rng.shuffle(tables)
    merged = merge_tables([merge_tables(tables[: len(tables) // 2]), merge_tables(tables[len(tables) // 2:])])
    assert finish(merged, lexical_plan("distinct_n", {})) == compute_distinct(texts)
    assert finish(merged, lexical_plan("ent_n", {"base": 10})) == compute_ent(texts, base=10)
    assert finish(merged, lexical_plan("low_frequency", {"threshold": 3})) == compute_low_frequency(texts, threshold=3)


def test_bad_rows_are_named():
    with pytest.raises(TypeError, match=r"`col\[1\]` is NoneType"):
        count_table(pa.array(["fine", None]), (1,), field="col")
    with pytest.raises(TypeError, match=r"`col\[0\]` is int"):
        count_table(pa.array([3]), (1,), field="col")
