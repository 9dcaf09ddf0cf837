"""Text normalisation and the one tokenizer registry every lexical metric uses.

Tokenizers (all keep case):

- ``casual``: nltk's ``casual_tokenize`` (what the Sem-Ent reference code uses; default).
- ``whitespace``: ``str.split()``.
- ``char``: every non-space character is a token (for Chinese and other unsegmented text).
- ``tevet``: Tevet & Berant (2021): remove "." and "\\n", split on single spaces, drop empty tokens.
"""

from __future__ import annotations

import multiprocessing
import pickle
import re
import unicodedata
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import chain
from typing import Any

Tokenizer = Callable[[str], list[str]]
PARALLEL_MIN_TEXTS = 20_000  # fewer texts are tokenized here: starting workers costs about a second
PARALLEL_CHUNK = 2_000  # texts per task sent to a worker


def normalize_text(text: str, *, form: str = "NFC", strip: bool = True) -> str:
    """The project's one text normaliser: Unicode normal form ``form`` and outer whitespace stripped."""
    text = unicodedata.normalize(form, text)
    return text.strip() if strip else text


_CASUAL = None
# A space-separated chunk can be tokenised on its own unless a casual pattern may span a space: phone
# numbers (nltk's needs at least 7 digits: 3 + 4), spaced ellipses (". ."), and HTML entities (which can
# decode to digits).
_SPANS_SPACES = re.compile(r"&|\.\s+\.|\d(?:\D*\d){6}")
class _ChunkCache(dict):
    """chunk → its casual tokens; a missing chunk is tokenised on lookup, so a text's chunks are looked up
    (and their tokens chained) in C."""

    def __missing__(self, chunk: str) -> list[str]:
        tokens = self[chunk] = _CASUAL(chunk) if chunk else []
        return tokens


_CHUNK_CACHE = _ChunkCache()
_CHUNK_CACHE_LIMIT = 2_000_000


def _casual(text: str) -> list[str]:
    """nltk's ``casual_tokenize`` (case kept), exactly, with a per-chunk cache.

    No casual pattern crosses a plain space except phone numbers, spaced ellipses and entities, so
    other texts are tokenised chunk by chunk with cached chunk results (tested token-for-token
    against ``casual_tokenize`` on real and generated text).
    """
    global _CASUAL
    if _CASUAL is None:  # nltk's import takes seconds: defer it to the first use
        from nltk.tokenize.casual import TweetTokenizer

        # Exactly what casual_tokenize(text) builds on every call, built once.
        _CASUAL = TweetTokenizer(preserve_case=True, reduce_len=False, strip_handles=False,
                                 match_phone_numbers=True).tokenize
    if _SPANS_SPACES.search(text):
        return _casual_whole(text)
    if len(_CHUNK_CACHE) > _CHUNK_CACHE_LIMIT:
        _CHUNK_CACHE.clear()
    return list(chain.from_iterable(map(_CHUNK_CACHE.__getitem__, text.split(" "))))


_LONG_DIGITS = re.compile(r"\d{20000}")


def _casual_whole(text: str) -> list[str]:
    """``_CASUAL(text)``, with nltk's regex time limit (hit by long digit runs) turned into a clear error."""
    hint = (f"the casual tokenizer cannot split the text starting {text[:30]!r} ({len(text):,} characters): "
            "nltk's phone-number pattern times out on long runs of digits. Shorten that text or score with "
            "tokenizer='whitespace'.")
    if _LONG_DIGITS.search(text):  # would run into the time limit after seconds of CPU: refuse at once
        raise ValueError(hint)
    try:
        return _CASUAL(text)
    except TimeoutError:
        raise ValueError(hint) from None


def _whitespace(text: str) -> list[str]:
    return text.split()


def _char(text: str) -> list[str]:
    return [c for c in text if not c.isspace()]


def _tevet(text: str) -> list[str]:
    return [w for w in text.replace(".", "").replace("\n", "").split(" ") if w]


TOKENIZERS: dict[str, Tokenizer] = {
    "casual": _casual,
    "whitespace": _whitespace,
    "char": _char,
    "tevet": _tevet,
}


def _checked(fn: Tokenizer) -> Tokenizer:
    """Wrap a user tokenizer so that a wrong return type is a clear error, not wrong n-grams."""

    def tokenize(text: str) -> list[str]:
        tokens = fn(text)
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise TypeError(f"the custom tokenizer {tokenizer_name(fn)!r} must return a list of strings; "
                            f"for {text[:30]!r} it returned {type(tokens).__name__} ({tokens!r:.40}).")
        return tokens

    tokenize.__name__ = getattr(fn, "__name__", type(fn).__name__)
    return tokenize


def get_tokenizer(name: str | Tokenizer) -> Tokenizer:
    """Return the tokenizer registered under ``name`` (or ``name`` itself when it is callable)."""
    if callable(name):
        return _checked(name)
    if not isinstance(name, str) or name not in TOKENIZERS:
        raise ValueError(
            f"tokenizer={name!r} is not known; use one of {sorted(TOKENIZERS)} or pass a callable "
            "that maps a string to a list of tokens."
        )
    return TOKENIZERS[name]


def tokenizer_name(tokenizer: str | Tokenizer) -> str:
    """Name used in signatures: the registry key, or ``custom:<function name>``."""
    if isinstance(tokenizer, str):
        return tokenizer
    return f"custom:{getattr(tokenizer, '__name__', type(tokenizer).__name__)}"


def check_num_workers(num_workers: Any) -> int:
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"`num_workers` must be an int ≥ 0 (0 = tokenize in this process), got {num_workers!r}.")
    return num_workers


def _tokenize_chunk(tokenizer: str | Tokenizer, texts: list[str]) -> list[list[str]]:
    """Worker side: the same registry tokenizer (or picklable callable) applied to each text."""
    tokenize = get_tokenizer(tokenizer)
    return [tokenize(t) for t in texts]


class TokenizerPool:
    """Tokenizes texts in order, in ``num_workers`` spawned worker processes for large inputs, while the
    caller consumes (counts) the tokens of earlier chunks (``num_workers`` as torch's ``DataLoader``).

    Tokens are exactly those of ``get_tokenizer(tokenizer)`` here (the workers run the same function);
    inputs of fewer than ``min_texts`` texts, or ``num_workers=0``, are tokenized in this process.
    At most ``2 × num_workers`` chunks are in flight, so memory stays bounded. A custom tokenizer must
    be picklable (a module-level function) to be sent to the workers. Use as a context manager.
    """

    def __init__(self, tokenizer: str | Tokenizer, num_workers: int = 0, *, min_texts: int = PARALLEL_MIN_TEXTS,
                 chunk_size: int = PARALLEL_CHUNK) -> None:
        self.tokenizer = tokenizer
        self._tokenize = get_tokenizer(tokenizer)
        self.num_workers = check_num_workers(num_workers)
        self.min_texts, self.chunk_size = min_texts, chunk_size
        self._executor: ProcessPoolExecutor | None = None
        if self.num_workers > 0 and not isinstance(tokenizer, str):
            try:
                pickle.dumps(tokenizer)
            except Exception as exc:
                raise ValueError(f"num_workers={num_workers} sends the tokenizer to worker processes, but "
                                 f"{tokenizer_name(tokenizer)!r} cannot be pickled; pass a module-level "
                                 "function or use num_workers=0.") from exc

    def __enter__(self) -> TokenizerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)
            self._executor = None

    def map(self, texts: Sequence[str]) -> Iterator[list[str]]:
        """Token list of each text of ``texts``, in order."""
        if self.num_workers == 0 or len(texts) < self.min_texts:
            tokenize = self._tokenize
            return (tokenize(t) for t in texts)
        return self._map_parallel(texts)

    def _map_parallel(self, texts: Sequence[str]) -> Iterator[list[str]]:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.num_workers, mp_context=multiprocessing.get_context("spawn"))
        starts = iter(range(0, len(texts), self.chunk_size))
        pending: deque[Future] = deque()

        def submit() -> None:
            start = next(starts, None)
            if start is not None:
                chunk = list(texts[start:start + self.chunk_size])
                pending.append(self._executor.submit(_tokenize_chunk, self.tokenizer, chunk))

        for _ in range(2 * self.num_workers):
            submit()
        while pending:
            tokens = pending.popleft().result()
            submit()
            yield from tokens


def tokenize_all(texts: Sequence[str], tokenizer: str | Tokenizer = "casual", num_workers: int = 0) -> list[list[str]]:
    """Token lists of ``texts`` (see :class:`TokenizerPool` for ``num_workers``)."""
    with TokenizerPool(tokenizer, num_workers) as pool:
        return list(pool.map(texts))
