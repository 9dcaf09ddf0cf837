"""The n-gram counter (:mod:`dialeval.lexical.ngrams`) in Arrow form: per-chunk count tables that merge exactly.

A count table has the columns ``order`` (int8), ``gram`` (string) and ``count`` (int64): one row per distinct
n-gram of each order, plus one row ``order=0, gram=""`` whose count is the number of texts. Unigram keys are
the tokens themselves; a longer n-gram's key is its tokens joined by ``"\\x00\\x01"`` (a NUL inside a token is
doubled first, so keys are injective: no two n-grams share one). Merging is concatenate → group by
``(order, gram)`` → sum (Arrow's C++ hash aggregation), so chunk tables reduce in any order or tree to the
counts of the whole corpus; the total of order n is the sum of its counts. No JSON, no pickle.

Counting a chunk: distinct texts with their multiplicities (``value_counts``), each distinct text tokenized once
in Python by the registered tokenizer, then n-gram keys built and summed (weighted by multiplicity) in Arrow.
:class:`NgramTable` gives the lexical finishers the interface of :class:`~dialeval.lexical.ngrams.NgramCounts`
(``orders``, ``tokenizer_id``, ``num_texts``, ``distinct``, ``total``, ``counts``), so one process and a cluster
return the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from dialeval.io.text import Tokenizer, get_tokenizer, tokenizer_name
from dialeval.io.validation import check_texts

SCHEMA = pa.schema([("order", pa.int8()), ("gram", pa.string()), ("count", pa.int64())])
_SEP = "\x00\x01"


def _texts(values: pa.Array | pa.ChunkedArray, field: str) -> pa.ChunkedArray:
    """``values`` as a string column, or the error :func:`~dialeval.io.validation.check_texts` gives for its first
    bad row (a null, a non-string, invalid UTF-8)."""
    col = values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) or col.null_count:
        check_texts(col.to_pylist(), field)
    try:
        col.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ValueError(f"`{field}` holds bytes that are not valid UTF-8 ({exc}); fix the file's encoding.") from None
    return col


def count_table(values: pa.Array | pa.ChunkedArray, orders: Iterable[int], tokenizer: str | Tokenizer = "casual",
                field: str = "predictions") -> pa.Table:
    """The count table of the texts in ``values`` (a string column) for each order in ``orders``."""
    col = _texts(values, field)
    orders = tuple(sorted(set(orders)))
    tokenize = get_tokenizer(tokenizer)
    vc = pc.value_counts(col) if len(col) else pa.StructArray.from_arrays(
        [pa.array([], pa.string()), pa.array([], pa.int64())], ["values", "counts"])
    distinct = vc.field("values").to_pylist()
    lists = pa.array([tokenize(t) for t in distinct], pa.list_(pa.string()))
    flat = pc.list_flatten(lists)
    parent = pc.list_parent_indices(lists)
    weight = pc.take(vc.field("counts").cast(pa.int64()), parent)
    parts = [pa.table({"order": pa.array([0], pa.int8()), "gram": pa.array([""]),
                       "count": pa.array([len(col)], pa.int64())})]
    if any(n > 1 for n in orders) and pc.any(pc.match_substring(flat, "\x00")).as_py():
        flat_keys = pc.replace_substring(flat, "\x00", "\x00\x00")
    else:
        flat_keys = flat
    for n in orders:
        m = len(flat) - n + 1
        if m <= 0:
            continue
        if n == 1:
            grams, w = flat, weight
        else:
            same_text = pc.equal(parent.slice(0, m), parent.slice(n - 1, m))
            keys = pc.binary_join_element_wise(*(flat_keys.slice(i, m) for i in range(n)), _SEP)
            grams, w = keys.filter(same_text), weight.slice(0, m).filter(same_text)
        summed = pa.table({"gram": grams, "count": w}).group_by("gram").aggregate([("count", "sum")])
        parts.append(pa.table({"order": pa.array([n] * summed.num_rows, pa.int8()), "gram": summed.column("gram"),
                               "count": summed.column("count_sum")}))
    return pa.concat_tables([p.cast(SCHEMA) for p in parts])


def merge_tables(tables: Sequence[pa.Table]) -> pa.Table:
    """One count table holding the sums of ``tables`` (any order gives the same counts)."""
    if len(tables) == 1:
        return tables[0]
    summed = pa.concat_tables(tables).group_by(["order", "gram"]).aggregate([("count", "sum")])
    return pa.table({"order": summed.column("order"), "gram": summed.column("gram"),
                     "count": summed.column("count_sum")}).cast(SCHEMA)


class _Counts(Mapping):
    """One order's counts: ``values()`` straight from Arrow; ``gram → count`` lookups built on first use."""

    def __init__(self, grams: pa.ChunkedArray, counts: pa.ChunkedArray) -> None:
        self._grams, self._counts, self._dict = grams, counts, None

    def _as_dict(self) -> dict[str, int]:
        if self._dict is None:
            self._dict = dict(zip(self._grams.to_pylist(), self._counts.to_pylist()))
        return self._dict

    def __getitem__(self, key: str) -> int:
        return self._as_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self._counts)

    def values(self) -> list[int]:  # type: ignore[override]
        return self._counts.to_pylist()


class NgramTable:
    """A merged count table read as :class:`~dialeval.lexical.ngrams.NgramCounts` (what the lexical finishers read)."""

    def __init__(self, table: pa.Table, orders: Iterable[int], tokenizer: str | Tokenizer = "casual") -> None:
        self.orders = tuple(sorted(set(orders)))
        self.tokenizer = tokenizer
        order = table.column("order")
        self.num_texts = int(pc.sum(table.filter(pc.equal(order, 0)).column("count")).as_py() or 0)
        self.counts: dict[int, _Counts] = {}
        for n in self.orders:
            part = table.filter(pc.equal(order, n))
            self.counts[n] = _Counts(part.column("gram"), part.column("count"))

    @property
    def tokenizer_id(self) -> str:
        return tokenizer_name(self.tokenizer)

    def distinct(self, n: int) -> int:
        return len(self.counts[n])

    def total(self, n: int) -> int:
        return int(pc.sum(self.counts[n]._counts).as_py() or 0)
