"""Input validation shared by every metric: clear errors that name the field and the fix."""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


class ResultNote(UserWarning):
    """A caveat about a computed number (e.g. a value fixed by construction on a tiny input); the result carries it as ``note``
    too, so a caller that shows results (the CLI, the demo) can show it beside the number instead."""


def lone_surrogate(text: str) -> re.Match[str] | None:
    """The first lone surrogate (U+D800–U+DFFF) in ``text``, or ``None``: such a string is not valid Unicode
    text, and no file format can store it."""
    return None if text.isascii() else _SURROGATE.search(text)


def is_int(value: Any) -> bool:
    """True for Python and numpy integers (not bools)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_list(values: Any, field: str, *, item: str = "item", allow_empty: bool = False) -> list[Any]:
    """``values`` as a list, or a clear error naming ``field``: ``None``, a bare string, a mapping, a set (no
    order), a non-iterable, or (unless ``allow_empty``) an empty list."""
    if values is None:
        raise ValueError(f"`{field}` is None; pass a list of {item}s.")
    if isinstance(values, str):
        raise TypeError(f"`{field}` is a single string; pass a list of {item}s, e.g. [{values[:30]!r}].")
    if isinstance(values, Mapping):
        raise TypeError(f"`{field}` is a {type(values).__name__}; pass a list of {item}s (e.g. list(d.values())).")
    if isinstance(values, (set, frozenset)):
        raise TypeError(f"`{field}` is a {type(values).__name__}, which has no order; pass a list of {item}s.")
    if not isinstance(values, Sequence) and not hasattr(values, "__iter__"):
        raise TypeError(f"`{field}` must be a list of {item}s, got {type(values).__name__}.")
    out = list(values)
    if not out and not allow_empty:
        raise ValueError(f"`{field}` is empty; pass at least one {item}.")
    return out


def check_texts(values: Any, field: str, *, allow_empty_list: bool = False) -> list[str]:
    """Return ``values`` as a list of strings or raise a clear error naming ``field``.

    Empty strings are allowed (they contribute zero n-grams); ``None`` and non-strings are not.
    """
    out = check_list(values, field, item="string", allow_empty=allow_empty_list)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise TypeError(
                f"`{field}[{i}]` is {type(v).__name__} ({v!r:.40}), not a string; "
                "convert or drop it before scoring."
            )
    check_valid_unicode(out, field)
    return out


def check_text_sets(values: Any, field: str, *, min_size: int = 1) -> list[list[str]]:
    """Validate a list of response sets (each a list of strings with at least ``min_size`` items)."""
    if values is None:
        raise ValueError(f"`{field}` is None; pass a list of response sets (lists of strings).")
    if isinstance(values, str):
        raise TypeError(f"`{field}` is a string; pass a list of response sets (lists of strings).")
    out = list(values)
    if not out:
        raise ValueError(f"`{field}` is empty; pass at least one response set.")
    sets = []
    for i, s in enumerate(out):
        if isinstance(s, str) or not isinstance(s, Sequence):
            raise TypeError(
                f"`{field}[{i}]` is {type(s).__name__}, not a list of strings; "
                "with level='set' every item is one response set."
            )
        if len(s) < min_size:
            raise ValueError(f"`{field}[{i}]` has {len(s)} responses; each set needs at least {min_size}.")
        sets.append(check_texts(s, f"{field}[{i}]"))
    return sets



#: The most turns one dialogue may have on every route (the demo allows far fewer); a history this long is
#: never one conversation, and each turn costs a line of every prompt built from it.
MAX_DIALOGUE_TURNS = 100_000


def check_turns(turns: Any, field: str) -> list[str]:
    """One dialogue (history): a list of non-empty turns (strings), in order, at most :data:`MAX_DIALOGUE_TURNS`."""
    if isinstance(turns, str):
        raise TypeError(f"`{field}` is a single string; pass the dialogue as a list of turns, e.g. [{turns[:30]!r}].")
    if isinstance(turns, (Mapping, set, frozenset)):  # a dict would silently become its keys
        raise TypeError(f"`{field}` is a {type(turns).__name__}; pass the dialogue as a list of turns (strings), "
                        "in order.")
    if turns is None or not isinstance(turns, Sequence) and not hasattr(turns, "__iter__"):
        raise TypeError(f"`{field}` must be a list of turns (strings), got {type(turns).__name__}.")
    out = list(turns)
    if not out:
        raise ValueError(f"`{field}` is empty; every dialogue history needs at least one turn.")
    if len(out) > MAX_DIALOGUE_TURNS:
        raise ValueError(f"`{field}` has {len(out):,} turns; at most {MAX_DIALOGUE_TURNS:,} (keep the latest turns).")
    for j, turn in enumerate(out):
        if not isinstance(turn, str):
            raise TypeError(f"`{field}[{j}]` is {type(turn).__name__} ({turn!r:.40}), not a string; "
                            "every turn must be text.")
        if not turn.strip():
            raise ValueError(f"`{field}[{j}]` is an empty turn; drop it or give it text.")
    check_valid_unicode(out, field)
    return out


_check_turns = check_turns


def check_turn_inputs(contexts: Any, predictions: Any) -> tuple[list[list[str]], list[str]]:
    """Validate turn-level inputs: ``contexts[i]`` a non-empty list of turns, ``predictions[i]`` a non-empty response."""
    ctxs = check_list(contexts, "contexts")
    preds = check_list(predictions, "predictions")
    if len(ctxs) != len(preds):
        raise ValueError(f"`contexts` has {len(ctxs)} items but `predictions` has {len(preds)}; they must align one to one.")
    out_ctx = [_check_turns(c, f"contexts[{i}]") for i, c in enumerate(ctxs)]
    for i, p in enumerate(preds):
        if not isinstance(p, str):
            raise TypeError(f"`predictions[{i}]` is {type(p).__name__} ({p!r:.40}), not a string.")
        if not p.strip():
            raise ValueError(f"`predictions[{i}]` is an empty response; a turn-level metric rates the response, so give it text.")
    check_valid_unicode(preds, "predictions")
    return out_ctx, preds


def check_dialogues(dialogues: Any) -> list[list[str]]:
    """Validate dialog-level inputs: each dialogue a non-empty list of non-empty turns."""
    return [_check_turns(d, f"dialogues[{i}]") for i, d in enumerate(check_list(dialogues, "dialogues"))]


def check_same_length(a: Sequence, b: Sequence, name_a: str, name_b: str) -> None:
    if len(a) != len(b):
        raise ValueError(f"`{name_a}` has {len(a)} items but `{name_b}` has {len(b)}; they must align one to one.")


def check_positive_ints(values: Any, field: str) -> tuple[int, ...]:
    """Accept an int or a sequence of ints ≥ 1 (e.g. ``n``)."""
    if isinstance(values, bool):
        raise TypeError(f"`{field}` must be a positive int or a list of them, got a bool.")
    if is_int(values):
        values = (values,)
    if isinstance(values, (str, bytes)):
        raise TypeError(f"`{field}` must be a positive int or a list of them, got the string {values!r:.40}.")
    try:
        out = tuple(values)
    except TypeError:
        raise TypeError(f"`{field}` must be a positive int or a list of them, got {type(values).__name__}.") from None
    if not out:
        raise ValueError(f"`{field}` is empty; pass e.g. {field}=[1, 2, 3].")
    for v in out:
        if not is_int(v) or v < 1:
            raise ValueError(f"`{field}` must hold integers ≥ 1, got {v!r}.")
    return tuple(sorted({int(v) for v in out}))


@contextlib.contextmanager
def collected_notes() -> Iterator[list[str]]:
    """The :class:`ResultNote` warnings raised within this block, as their one-line messages in the list it yields
    (filled when the block ends; a caller shows them beside its result). Other warnings are shown as usual."""
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultNote)
        yield notes
    for w in caught:
        if issubclass(w.category, ResultNote):
            notes.append(" ".join(str(w.message).split()))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


#: Set while inputs that were already scanned flow through a core (see :func:`inputs_checked`).
_CHECKED: contextvars.ContextVar[bool] = contextvars.ContextVar("dialeval_inputs_checked", default=False)


@contextlib.contextmanager
def inputs_checked() -> Iterator[None]:
    """Within this block, :func:`check_valid_unicode` trusts its inputs: the caller scanned them already (the
    ``evaluate`` module before Arrow casting, or a core's entry before its inner steps). Validation happens
    once, at the entry; shape and type checks still run (they are cheap)."""
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def scan_unicode(values: Any, field: str) -> None:
    """Raise a clear error when a string in ``values`` (strings or lists of strings) holds a lone surrogate,
    which no encoder, tokenizer or file can take. Always scans (O(characters))."""
    for i, v in enumerate(values):
        items = [v] if isinstance(v, str) else v if isinstance(v, (list, tuple)) else []
        for j, t in enumerate(items):
            if isinstance(t, str) and lone_surrogate(t):
                where = f"{field}[{i}]" if isinstance(v, str) else f"{field}[{i}][{j}]"
                raise ValueError(f"`{where}` holds a lone surrogate (U+D800–U+DFFF), which is not valid Unicode "
                                 "text; fix how it was decoded (e.g. a broken '\\ud83d' escape) before scoring.")


def check_valid_unicode(values: Any, field: str) -> None:
    """:func:`scan_unicode`, unless the inputs were scanned already (inside :func:`inputs_checked`)."""
    if not _CHECKED.get():
        scan_unicode(values, field)


#: The most bootstrap resamples a command accepts: 100,000 keeps the index matrix of a 2,000-row dataset near
#: 1.6 GB at worst (10**8 resamples asked for 164 GiB); intervals are stable to 3 decimals long before.
MAX_RESAMPLES = 100_000


MIN_RESAMPLES = 100  #: fewer resamples leave a 95% percentile interval's tails to 2 or 3 values


def check_resamples(value: Any, option: str = "--resamples") -> int:
    """A bootstrap resample count: an int from :data:`MIN_RESAMPLES` to :data:`MAX_RESAMPLES`."""
    if not is_int(value) or not MIN_RESAMPLES <= value <= MAX_RESAMPLES:
        raise ValueError(f"{option} must be an integer from {MIN_RESAMPLES} to {MAX_RESAMPLES:,} (fewer resamples give "
                         f"an interval whose ends are one or two draws), got {value!r}.")
    return int(value)


def check_fraction(value: Any, option: str = "--fraction") -> float:
    """The share of rows in each subsample of an interval: a number in (0, 1); 1 would draw every row in every
    subsample (a zero-width interval)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{option} must be a number above 0 and below 1 (1 puts every row in every subsample, a "
                         f"zero-width interval; the default is 0.5), got {value!r}.")
    return float(value)
