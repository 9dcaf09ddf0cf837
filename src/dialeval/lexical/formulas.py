"""Lexical diversity: Dist-n, EAD-n, Ent-n and LF as pure functions of n-gram counts.

- Dist-n (Li et al., NAACL 2016) = distinct n-grams / total n-grams (0.0 when there are no n-grams).
- EAD-n (Liu et al., ACL 2022) = distinct / (V · (1 − ((V−1)/V)^C)), C = total n-grams, V = vocab size.
- Ent-n (Zhang et al., NeurIPS 2018; Sem-Ent reference) = −Σ_g p(g) log_b p(g), p(g) = count(g)/C.
- LF (Li et al., ICLR 2020, as in the Sem-Ent reference) = share of unigram tokens whose count is
  ≤ threshold, counts taken from the predictions themselves or from a reference corpus.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from dialeval.io.text import Tokenizer, get_tokenizer
from dialeval.lexical.ngrams import NgramCounts, count_ngrams


def distinct_ratio(num_distinct: int, total: int) -> float:
    """Dist = distinct / total; 0.0 for an empty corpus (documented value)."""
    return num_distinct / total if total > 0 else 0.0


def expectation_adjusted_distinct(num_distinct: int, total: int, vocab_size: int) -> float:
    """EAD = N / (V · (1 − ((V−1)/V)^C)); 0.0 when C = 0."""
    if vocab_size < 1:
        raise ValueError(f"`vocab_size` must be ≥ 1, got {vocab_size}.")
    if total <= 0:
        return 0.0
    v = float(vocab_size)
    # 1 − ((V−1)/V)^C as −expm1(C·log1p(−1/V)): exact for any V (the plain form is 0 for V ≳ 1e16).
    expected = -v * math.expm1(total * math.log1p(-1.0 / v)) if vocab_size > 1 else 1.0
    return num_distinct / expected


def entropy_from_counts(counts: Iterable[int], base: float = 2.0) -> float:
    """−Σ p log_b p over a frequency distribution, summed exactly (``math.fsum``) by count value.

    Grouping equal counts makes the work proportional to the number of distinct count values.
    """
    if base <= 0 or base == 1:
        raise ValueError(f"`base` must be positive and ≠ 1, got {base}.")
    count_of_counts = Counter(counts)
    total = sum(c * m for c, m in count_of_counts.items())
    if total <= 0:
        return 0.0
    log_b = math.log(base)
    terms = []
    for c, m in count_of_counts.items():
        p = c / total
        terms.append(-m * p * (math.log(p) / log_b))
    return math.fsum(terms) + 0.0


def low_frequency_share(
    token_counts: Mapping[str, int], threshold: int, reference_counts: Mapping[str, int] | None = None
) -> float:
    """Share of tokens (with multiplicity) whose count is ≤ ``threshold``.

    Counts come from ``token_counts`` itself unless ``reference_counts`` is given (tokens unseen in the
    reference corpus have count 0 and so are low-frequency).
    """
    total = sum(token_counts.values())
    if total == 0:
        return 0.0
    lookup = token_counts if reference_counts is None else reference_counts
    low = sum(c for tok, c in token_counts.items() if lookup.get(tok, 0) <= threshold)
    return low / total


def distinct_scores(state: NgramCounts, vocab_size: int | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in state.orders:
        out[f"distinct_{n}"] = distinct_ratio(state.distinct(n), state.total(n))
    if vocab_size is not None:
        for n in state.orders:
            out[f"ead_{n}"] = expectation_adjusted_distinct(state.distinct(n), state.total(n), vocab_size)
    return out


def entropy_scores(state: NgramCounts, base: float = 2.0) -> dict[str, float]:
    return {f"ent_{n}": entropy_from_counts(state.counts[n].values(), base) for n in state.orders}


def corpus_distinct(
    texts: Sequence[str], n: Iterable[int] = (1, 2, 3), tokenizer: str | Tokenizer = "casual",
    vocab_size: int | None = None, num_workers: int = 0,
) -> dict[str, float]:
    """Corpus-level Dist-n (and EAD-n with ``vocab_size``) of ``texts``; ``num_workers`` > 0 tokenizes large
    inputs in worker processes (identical tokens)."""
    return distinct_scores(count_ngrams(texts, n, tokenizer, num_workers=num_workers), vocab_size)


def distinct_n_per_set(
    sets: Sequence[Sequence[str]], n: Iterable[int] = (1, 2, 3), tokenizer: str | Tokenizer = "casual",
    vocab_size: int | None = None, check: Callable[[NgramCounts, int], None] | None = None,
) -> list[dict[str, float]]:
    """Dist-n within each response set (n-grams pooled over the set), plus ``distinct_mean`` over n;
    ``check(counts, index)`` sees each set's counts before they are scored (and may refuse them)."""
    orders = tuple(n)
    out = []
    for i, responses in enumerate(sets):
        counts = count_ngrams(responses, orders, tokenizer)
        if check is not None:
            check(counts, i)
        scores = distinct_scores(counts, vocab_size)
        scores["distinct_mean"] = math.fsum(scores[f"distinct_{k}"] for k in orders) / len(orders)
        out.append(scores)
    return out


def ent_n(texts: Sequence[str], n: Iterable[int] = (1, 2, 3), tokenizer: str | Tokenizer = "casual",
          base: float = 2.0, num_workers: int = 0) -> dict[str, float]:
    """Corpus-level Ent-n of ``texts`` (``num_workers`` as in :func:`corpus_distinct`)."""
    return entropy_scores(count_ngrams(texts, n, tokenizer, num_workers=num_workers), base)


def unigram_counts(texts: Iterable[str], tokenizer: str | Tokenizer = "casual", num_workers: int = 0) -> Counter:
    """Token counts of a corpus (the reference side of LF)."""
    return count_ngrams(texts, (1,), tokenizer, num_workers=num_workers).counts[1]


def low_frequency(
    texts: Sequence[str], threshold: int = 100, tokenizer: str | Tokenizer = "casual",
    reference_counts: Mapping[str, int] | None = None, num_workers: int = 0,
) -> float:
    """LF of ``texts``; see :func:`low_frequency_share` (``num_workers`` as in :func:`corpus_distinct`)."""
    get_tokenizer(tokenizer)
    counts = count_ngrams(texts, (1,), tokenizer, num_workers=num_workers).counts[1]
    return low_frequency_share(counts, threshold, reference_counts)
