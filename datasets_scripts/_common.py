"""Shared pieces of the dataset builders: field type checks with errors naming the file and line, skipped-row
accounting, and locating input files under ``data_dir``. Reading files (JSON, JSON Lines, CSV limits, UTF-8
and surrogate errors, :class:`~dialeval.io.MalformedDataError`) is :mod:`dialeval.io`'s, the one reader stack."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets

from dialeval.io import MalformedDataError, check_unicode

logger = logging.getLogger("dialeval.datasets")

#: Where the real corpora live beside a source checkout (``../shared/data`` from the repo root).
DATA_ENV = "DIALEVAL_DATA_DIR"


def require_keys(obj: dict[str, Any], keys: Sequence[str], loc: str) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        raise MalformedDataError(f"{loc}: missing field(s) {missing} (present: {sorted(obj)}).")


def require_str(value: Any, field: str, loc: str) -> str:
    if not isinstance(value, str):
        raise MalformedDataError(f"{loc}: field {field!r} must be a string, got {type(value).__name__} ({value!r:.40}).")
    return check_unicode(value, f"{loc}: field {field!r}")  # a lone surrogate is not text any format can store


def require_str_list(value: Any, field: str, loc: str, *, min_len: int = 0) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list):
        raise MalformedDataError(f"{loc}: field {field!r} must be a list of strings, got {type(value).__name__}.")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise MalformedDataError(f"{loc}: {field}[{i}] must be a string, got {type(v).__name__} ({v!r:.40}).")
        check_unicode(v, f"{loc}: field {field}[{i}]")
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
