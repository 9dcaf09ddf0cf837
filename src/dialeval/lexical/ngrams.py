"""The one n-gram counter: a mergeable state (torchmetrics style) behind every lexical metric.

Responses are de-duplicated before tokenisation (dialogue corpora repeat "I don't know." thousands of
times), so each distinct response is tokenised once and its n-grams are added with its multiplicity.
Numbers are identical to counting every response separately; first-occurrence order is preserved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any

from dialeval.io.text import Tokenizer, TokenizerPool, get_tokenizer, tokenizer_name

_COUNT_BATCH = 2048  # tokenized texts counted together


def iter_ngrams(tokens: list[str], n: int) -> Iterable[Any]:
    """n-grams of ``tokens`` as tuples (unigrams as plain strings, which saves memory)."""
    if n == 1:
        return tokens
    return zip(*(tokens[i:] for i in range(n)))


@dataclass
class NgramCounts:
    """Counts of n-grams (for each order in ``orders``) over a stream of texts.

    ``update`` adds texts; ``merge`` adds another state with the same orders and tokenizer, so a
    corpus can be counted in chunks or in several processes and combined exactly.
    """

    orders: tuple[int, ...] = (1, 2, 3)
    tokenizer: str | Tokenizer = "casual"
    counts: dict[int, Counter] = field(default_factory=dict)
    totals: dict[int, int] = field(default_factory=dict)
    num_texts: int = 0

    def __post_init__(self) -> None:
        self.orders = tuple(sorted(set(self.orders)))
        self._tokenize = get_tokenizer(self.tokenizer)
        for n in self.orders:
            self.counts.setdefault(n, Counter())
            self.totals.setdefault(n, 0)

    @property
    def tokenizer_id(self) -> str:
        return tokenizer_name(self.tokenizer)

    def update(self, texts: Iterable[str], *, num_workers: int = 0, pool: TokenizerPool | None = None) -> NgramCounts:
        """Add ``texts`` (already validated strings). Returns ``self``.

        ``num_workers`` > 0 tokenizes large inputs in worker processes (identical tokens, see
        :class:`~dialeval.io.text.TokenizerPool`); ``pool`` reuses an open pool across calls.
        """
        if pool is None:
            with TokenizerPool(self.tokenizer, num_workers) as own:
                return self.update(texts, pool=own)
        distinct = Counter(texts)
        self.num_texts += sum(distinct.values())
        tokenized = zip(distinct.values(), pool.map(list(distinct)))
        while batch := list(islice(tokenized, _COUNT_BATCH)):  # bounded, and overlaps with worker tokenizing
            self._add_batch(batch)
        return self

    def _add_batch(self, batch: list[tuple[int, list[str]]]) -> None:
        """Add (multiplicity, tokens) pairs in input order: every text's n-grams once in one chained
        ``Counter.update`` per order (the counting loop runs in C; first occurrences keep their order), then
        the extra ``multiplicity - 1`` of repeated texts."""
        for n in self.orders:
            counter = self.counts[n]
            counter.update(chain.from_iterable(iter_ngrams(tokens, n) for _, tokens in batch))
            for mult, tokens in batch:
                k = len(tokens) - n + 1
                if k > 0:
                    self.totals[n] += mult * k
                    if mult > 1:
                        for gram in iter_ngrams(tokens, n):
                            counter[gram] += mult - 1

    def merge(self, other: NgramCounts) -> NgramCounts:
        """Add ``other``'s counts into ``self`` (same orders and tokenizer required). Returns ``self``."""
        if other.orders != self.orders or other.tokenizer_id != self.tokenizer_id:
            raise ValueError(
                f"cannot merge n-gram counts with orders={other.orders}, tokenizer={other.tokenizer_id!r} "
                f"into orders={self.orders}, tokenizer={self.tokenizer_id!r}; count both the same way."
            )
        for n in self.orders:
            self.counts[n].update(other.counts[n])
            self.totals[n] += other.totals[n]
        self.num_texts += other.num_texts
        return self

    def restrict(self, orders: Iterable[int]) -> NgramCounts:
        """These counts seen through ``orders`` (some of :attr:`orders`): the counters are shared, not copied,
        so one count of orders 1..3 serves a metric of orders (1,) and one of (1, 2, 3)."""
        wanted = tuple(sorted(set(orders)))
        missing = sorted(set(wanted) - set(self.orders))
        if missing:
            raise ValueError(f"these counts hold orders {self.orders}, not {missing}; count them too.")
        if wanted == self.orders:
            return self
        return NgramCounts(wanted, self.tokenizer, {n: self.counts[n] for n in wanted},
                           {n: self.totals[n] for n in wanted}, self.num_texts)

    def __add__(self, other: NgramCounts) -> NgramCounts:
        out = NgramCounts(self.orders, self.tokenizer)
        return out.merge(self).merge(other)

    def distinct(self, n: int) -> int:
        return len(self.counts[n])

    def total(self, n: int) -> int:
        return self.totals[n]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (n-grams as token lists); no pickle."""
        return {
            "orders": list(self.orders),
            "tokenizer": self.tokenizer_id,
            "num_texts": self.num_texts,
            "totals": {str(n): t for n, t in self.totals.items()},
            "counts": {
                str(n): [[[g] if n == 1 else list(g), c] for g, c in counter.items()]
                for n, counter in self.counts.items()
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NgramCounts:
        state = cls(tuple(data["orders"]), data["tokenizer"])
        state.num_texts = int(data["num_texts"])
        for key, items in data["counts"].items():
            n = int(key)
            state.counts[n] = Counter({(g[0] if n == 1 else tuple(g)): int(c) for g, c in items})
            state.totals[n] = int(data["totals"][key])
        return state


def count_ngrams(
    texts: Iterable[str], orders: Iterable[int] = (1, 2, 3), tokenizer: str | Tokenizer = "casual",
    chunk_size: int = 200_000, num_workers: int = 0,
) -> NgramCounts:
    """Count ``texts`` in chunks of ``chunk_size`` (bounded working memory for streams); ``num_workers`` > 0
    tokenizes in that many worker processes (one pool for all chunks; identical tokens and counts)."""
    state = NgramCounts(tuple(orders), tokenizer)
    with TokenizerPool(tokenizer, num_workers) as pool:
        chunk: list[str] = []
        for text in texts:
            chunk.append(text)
            if len(chunk) >= chunk_size:
                state.update(chunk, pool=pool)
                chunk = []
        if chunk:
            state.update(chunk, pool=pool)
    return state
