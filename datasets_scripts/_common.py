"""Shared pieces of the dataset builders: malformed-input errors that name the file and line, strict
JSON/JSONL readers, type checks, skipped-row accounting, and locating input files under ``data_dir``."""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import datasets

logger = logging.getLogger("dialeval.datasets")

#: Where the real corpora live beside a source checkout (``../shared/data`` from the repo root).
DATA_ENV = "DIALEVAL_DATA_DIR"
_SURROGATE = re.compile("[\ud800-\udfff]")


class MalformedDataError(ValueError):
    """An input file does not match its documented format; the message names the file and line/row."""


def where(path: str | os.PathLike, line: int | None = None, *, unit: str = "line") -> str:
    """``"<path>, line 3"`` (or ``row 3``) for error messages."""
    return f"{path}, {unit} {line}" if line is not None else str(path)


@contextlib.contextmanager
def csv_limit(limit: int = 16 * 1024 * 1024) -> Iterator[None]:
    """Raise the csv module's cell size limit (128 KiB by default) to ``limit`` for the block."""
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, limit))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _loads(text: str, loc: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"{loc}: invalid JSON ({exc.msg}, column {exc.colno}).") from None
    except RecursionError:
        raise MalformedDataError(f"{loc}: JSON nested too deeply to read.") from None


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a number in standard JSON", name, 0)


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for every non-blank line of a JSON Lines file (split on ``\\n`` only, a BOM
    dropped); a bad line raises :class:`MalformedDataError` naming the file and line."""
    with open(path, encoding="utf-8-sig", newline="\n") as f:
        lineno = 0
        while True:
            try:
                line = f.readline()
            except UnicodeDecodeError as exc:
                raise _not_utf8(path, exc, lineno + 1) from None
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            obj = _loads(line, where(path, lineno))
            if not isinstance(obj, dict):
                raise MalformedDataError(f"{where(path, lineno)}: expected a JSON object, got {type(obj).__name__}.")
            yield lineno, obj


def _not_utf8(path: str | os.PathLike, exc: UnicodeDecodeError, line: int | None = None) -> MalformedDataError:
    at = f"{where(path, line)}: not UTF-8 text ({exc.reason})" if line else \
        f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
    return MalformedDataError(f"{at}; save the file as UTF-8.")


def read_json(path: str | os.PathLike) -> Any:
    """A whole JSON document, with the file and line in the error when it does not parse."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"{where(path, exc.lineno)}: invalid JSON ({exc.msg}, column {exc.colno}).") from None
    except RecursionError:
        raise MalformedDataError(f"{path}: JSON nested too deeply to read.") from None


def require_keys(obj: dict[str, Any], keys: Sequence[str], loc: str) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        raise MalformedDataError(f"{loc}: missing field(s) {missing} (present: {sorted(obj)}).")


def require_str(value: Any, field: str, loc: str) -> str:
    if not isinstance(value, str):
        raise MalformedDataError(f"{loc}: field {field!r} must be a string, got {type(value).__name__} ({value!r:.40}).")
    return _no_surrogate(value, field, loc)


def _no_surrogate(value: str, field: str, loc: str) -> str:
    """A lone surrogate (``"\\ud83d"`` escaped alone in JSON) is not Unicode text: no file format can store it."""
    m = _SURROGATE.search(value)
    if m:
        raise MalformedDataError(f"{loc}: field {field!r} holds a lone surrogate (U+{ord(m.group()):04X}) at character "
                                 f"{m.start()}, which is not valid Unicode; fix the escape (e.g. a broken \\ud83d).")
    return value


def require_str_list(value: Any, field: str, loc: str, *, min_len: int = 0) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list):
        raise MalformedDataError(f"{loc}: field {field!r} must be a list of strings, got {type(value).__name__}.")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise MalformedDataError(f"{loc}: {field}[{i}] must be a string, got {type(v).__name__} ({v!r:.40}).")
        _no_surrogate(v, f"{field}[{i}]", loc)
    if len(value) < min_len:
        raise MalformedDataError(f"{loc}: field {field!r} has {len(value)} item(s); at least {min_len} needed.")
    return list(value)


def require_int(value: Any, field: str, loc: str, *, bits: int = 64) -> int:
    """An integer that fits the signed ``bits``-bit column it is stored in."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedDataError(f"{loc}: field {field!r} must be an integer, got {type(value).__name__} ({value!r:.40}).")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise MalformedDataError(f"{loc}: field {field!r} is {str(value)[:30]}{'…' if len(str(value)) > 30 else ''}, "
                                 f"out of range for a {bits}-bit integer.")
    return value


def parse_float(value: Any, field: str, loc: str, *, allow_empty: bool = False) -> float | None:
    """A CSV cell as a finite float (``None`` for an empty cell when ``allow_empty``)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if allow_empty:
            return None
        raise MalformedDataError(f"{loc}: column {field!r} is empty; a number is required.")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise MalformedDataError(f"{loc}: column {field!r} is {value!r:.40}, not a number.") from None
    if not math.isfinite(out):
        raise MalformedDataError(f"{loc}: column {field!r} is {value!r}, not a finite number.")
    return out


def report_skipped(source: str | os.PathLike, skipped: dict[str, int], total: int) -> None:
    """Log how many rows were skipped and why (nothing is dropped silently)."""
    n = sum(skipped.values())
    if n:
        reasons = ", ".join(f"{count} {reason}" for reason, count in skipped.items() if count)
        logger.warning("%s: skipped %d of %d rows (%s).", source, n, total, reasons)


def resolve_data_dir(data_dir: str | os.PathLike | None, dataset: str) -> Path:
    """``data_dir``, else ``$DIALEVAL_DATA_DIR/<dataset>``; a missing folder is an actionable error."""
    if data_dir is None:
        root = os.environ.get(DATA_ENV)
        if not root:
            raise ValueError(
                f"no data_dir given for {dataset!r}: pass data_dir=<folder holding the original files> "
                f"(see the {dataset} dataset card) or set ${DATA_ENV} to the folder that holds {dataset}/."
            )
        data_dir = Path(root) / dataset
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"data_dir {str(path)!r} for {dataset!r} is not a directory.")
    return path


def find_file(data_dir: Path, candidates: Sequence[str], what: str) -> Path:
    """The first of ``candidates`` (paths relative to ``data_dir``) that exists."""
    for rel in candidates:
        p = data_dir / rel
        if p.is_file():
            return p
    raise FileNotFoundError(f"{what}: none of {list(candidates)} exists under {str(data_dir)!r}.")


def fingerprint_dir(path: str | os.PathLike) -> str:
    """A cache key for a data folder: every file's relative path, size and mtime (edits rebuild the cache)."""
    import hashlib

    h = hashlib.sha256()
    root = Path(path)
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


# Features shared by several builders.
STRINGS = datasets.List(datasets.Value("string"))
