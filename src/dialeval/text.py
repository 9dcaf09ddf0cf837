"""Text normalisation and the one tokenizer registry every lexical metric uses.

Tokenizers (all keep case):

- ``casual``: nltk's ``casual_tokenize`` (what the Sem-Ent reference code uses; default).
- ``whitespace``: ``str.split()``.
- ``char``: every non-space character is a token (for Chinese and other unsegmented text).
- ``tevet``: Tevet & Berant (2021): remove "." and "\\n", split on single spaces, drop empty tokens.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

Tokenizer = Callable[[str], list[str]]


def normalize_text(text: str, *, form: str = "NFC", strip: bool = True) -> str:
    """The project's one text normaliser: Unicode normal form ``form`` and outer whitespace stripped."""
    text = unicodedata.normalize(form, text)
    return text.strip() if strip else text


_CASUAL = None
# A space-separated chunk can be tokenised on its own unless a casual pattern may span a space:
# phone numbers (digits), spaced ellipses (". ."), and HTML entities (which can decode to digits).
_SPANS_SPACES = re.compile(r"[\d&]|\.\s+\.")
_CHUNK_CACHE: dict[str, list[str]] = {}
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
        return _CASUAL(text)
    cache = _CHUNK_CACHE
    if len(cache) > _CHUNK_CACHE_LIMIT:
        cache.clear()
    tokens: list[str] = []
    for chunk in text.split(" "):
        if not chunk:
            continue
        hit = cache.get(chunk)
        if hit is None:
            hit = cache[chunk] = _CASUAL(chunk)
        tokens.extend(hit)
    return tokens


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
