"""Reading responses from JSONL, CSV or plain-text files, with errors that name the file and line.

- CSV/TSV is parsed as a stream by the csv module with its own newline handling (``newline=""``), so a quoted
  field may span lines; an unterminated quote is an error, not silently merged rows. A UTF-8 BOM is dropped.
- JSON Lines are split on ``\\n`` only (U+2028, U+0085, form feeds … inside a line are text).
- A text file holds one response per ``\\n`` (or ``\\r\\n``) line; other Unicode line breaks are text.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Largest CSV cell accepted (the csv module's default limit is 128 KiB).
CSV_FIELD_LIMIT = 16 * 1024 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start}); is it a binary file?") from exc


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only, a trailing ``\\r`` removed (``str.splitlines`` also splits on U+2028,
    U+0085, ``\\x0c`` … which are ordinary characters inside a response)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` with one-line errors naming ``where`` (invalid JSON, nesting too deep)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).") from None
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply to read; records must be flat objects or strings.") from None


def read_jsonl_text(text: str, name: str) -> list[Any]:
    """Records of a JSON Lines document (blank lines skipped)."""
    rows = []
    for i, line in enumerate(split_lines(text), 1):
        if line.strip():
            rows.append(parse_json(line, f"{name}, line {i}"))
    return rows


def read_csv_text(text: str, name: str, delimiter: str = ",") -> list[dict[str, Any]]:
    """Rows of a CSV/TSV document held in memory (see :func:`read_csv_stream`); a BOM is dropped."""
    return read_csv_stream(io.StringIO(text.removeprefix("\ufeff"), newline=""), name, delimiter)


def read_csv_file(path: str | Path, delimiter: str = ",") -> list[dict[str, Any]]:
    """Rows of a CSV/TSV file, streamed (``newline=""``, BOM dropped)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return read_csv_stream(f, str(path), delimiter)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); is it a binary file?") from None


def read_csv_stream(stream: Iterable[str], name: str, delimiter: str = ",") -> list[dict[str, Any]]:
    """Rows of a CSV/TSV stream as dicts, parsed by the csv module with its own newline handling (quoted cells
    may span lines); a row with more or fewer cells than the header, an unterminated quote or an oversized
    cell is an error naming the line."""
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, min(CSV_FIELD_LIMIT, sys.maxsize)))
    try:
        reader = csv.reader(stream, delimiter=delimiter, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                return []
            rows = []
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise ValueError(f"{name}, line {reader.line_num}: {len(row)} cells, but the header has "
                                     f"{len(header)} columns ({header[:6]}); quote cells holding a "
                                     f"{'tab' if delimiter == chr(9) else 'comma'}.")
                rows.append(dict(zip(header, row)))
        except csv.Error as exc:
            msg = str(exc)
            if "field larger than field limit" in msg:
                msg = f"a cell is longer than {CSV_FIELD_LIMIT:,} characters (often an unterminated quote)"
            elif "unexpected end of data" in msg:
                msg = "a quoted cell is never closed (unterminated quote)"
            raise ValueError(f"{name}, line {reader.line_num}: malformed CSV: {msg}.") from None
    finally:
        csv.field_size_limit(old_limit)
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise ValueError(f"{name}: the header repeats column(s) {dup}; give each column its own name.")
    return rows


def read_records(path: str | Path) -> list[dict[str, Any]] | list[str]:
    """JSONL/JSON → list of records; CSV/TSV → list of dicts; anything else → list of lines (one response each)."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(f"input {str(p)!r} is a directory; pass a JSONL, CSV or text file.")
    if not p.is_file():
        raise FileNotFoundError(f"input file {str(p)!r} does not exist.")
    suffix = p.suffix.lower()
    if suffix in {".csv", ".tsv"}:
        return read_csv_file(p, delimiter="\t" if suffix == ".tsv" else ",")
    text = _read_text(p)
    if suffix in {".jsonl", ".ndjson"}:
        return read_jsonl_text(text, str(p))
    if suffix == ".json":
        data = parse_json(text, str(p))
        if not isinstance(data, list):
            raise ValueError(f"{p}: expected a JSON array of records or strings, got a JSON {type(data).__name__}.")
        return data
    return split_lines(text)


def check_unicode(value: str, where: str) -> str:
    """``value``, or a clear error when it holds a lone surrogate (not valid Unicode; cannot be written)."""
    m = _SURROGATE.search(value)
    if m:
        raise ValueError(f"{where} holds a lone surrogate (U+{ord(m.group()):04X}) at character {m.start()}, "
                         "which is not valid Unicode text; fix the file's encoding (e.g. a broken \\ud83d escape).")
    return value


def _pick_field(rec: dict[str, Any], path: str | Path) -> str:
    text_fields = [k for k, v in rec.items() if isinstance(v, str)]
    if len(text_fields) != 1:
        raise ValueError(f"{path}: records have fields {sorted(map(str, rec))}; choose the response field with --field.")
    return text_fields[0]


def read_texts(path: str | Path, field: str | None = None) -> list[str]:
    """Responses from ``path``: the ``field`` of each record for JSONL/CSV, or each line of a text file."""
    records = read_records(path)
    if not records:
        raise ValueError(f"{path}: no responses found (the file is empty).")
    out = []
    for i, rec in enumerate(records, 1):
        if isinstance(rec, str):
            out.append(check_unicode(rec, f"{path}, record {i}"))
            continue
        if not isinstance(rec, dict):
            raise ValueError(f"{path}, record {i}: expected an object or a string, got {type(rec).__name__}.")
        if field is None:
            field = _pick_field(rec, path)
        if field not in rec:
            raise ValueError(f"{path}, record {i}: no field {field!r} (fields: {sorted(map(str, rec))}).")
        value = rec[field]
        if not isinstance(value, str):
            raise ValueError(f"{path}, record {i}: field {field!r} is {type(value).__name__}, not a string.")
        out.append(check_unicode(value, f"{path}, record {i}, field {field!r}"))
    return out
