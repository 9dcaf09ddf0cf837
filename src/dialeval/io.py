"""Reading responses from JSONL, CSV or plain-text files, with errors that name the file and line."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any


def read_records(path: str | Path) -> list[dict[str, Any]] | list[str]:
    """JSONL/JSON → list of dicts; CSV → list of dicts; anything else → list of lines (one response each)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"input file {str(p)!r} does not exist.")
    suffix = p.suffix.lower()
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start}); is it a binary file?") from exc
    if suffix in {".jsonl", ".ndjson"}:
        rows = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{p}, line {i}: invalid JSON ({exc.msg}).") from exc
        return rows
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}: invalid JSON ({exc.msg} at line {exc.lineno}).") from exc
        if not isinstance(data, list):
            raise ValueError(f"{p}: expected a JSON array of records or strings.")
        return data
    if suffix in {".csv", ".tsv"}:
        return list(csv.DictReader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ","))
    return [line for line in text.splitlines()]


def read_texts(path: str | Path, field: str | None = None) -> list[str]:
    """Responses from ``path``: the ``field`` of each record for JSONL/CSV, or each line of a text file."""
    records = read_records(path)
    if not records:
        raise ValueError(f"{path}: no responses found (the file is empty).")
    out = []
    for i, rec in enumerate(records, 1):
        if isinstance(rec, str):
            out.append(rec)
            continue
        if not isinstance(rec, dict):
            raise ValueError(f"{path}, record {i}: expected an object or a string, got {type(rec).__name__}.")
        if field is None:
            text_fields = [k for k, v in rec.items() if isinstance(v, str)]
            if len(text_fields) != 1:
                raise ValueError(f"{path}: records have fields {sorted(rec)}; choose one with --field.")
            field = text_fields[0]
        if field not in rec:
            raise KeyError(f"{path}, record {i}: no field {field!r} (fields: {sorted(rec)}).")
        value = rec[field]
        if not isinstance(value, str):
            raise ValueError(f"{path}, record {i}: field {field!r} is {type(value).__name__}, not a string.")
        out.append(value)
    return out
