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

from dialeval.io import MalformedDataError

logger = logging.getLogger("dialeval.datasets")

#: Where the real corpora live beside a source checkout (``../shared/data`` from the repo root).
DATA_ENV = "DIALEVAL_DATA_DIR"


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
