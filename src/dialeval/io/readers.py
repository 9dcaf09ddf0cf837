"""Reading responses from JSONL, CSV or plain-text files, with errors that name the file and line.

- CSV/TSV is parsed as a stream by the csv module with its own newline handling (``newline=""``), so a quoted
  field may span lines; an unterminated quote is an error, not silently merged rows. A UTF-8 BOM is dropped.
- JSON Lines are split on ``\\n`` only (U+2028, U+0085, form feeds … inside a line are text).
- A text file holds one response per ``\\n`` (or ``\\r\\n``) line; other Unicode line breaks are text.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dialeval.io.validation import lone_surrogate

#: Largest CSV cell accepted (the csv module's default limit is 128 KiB).
CSV_FIELD_LIMIT = 16 * 1024 * 1024


class MalformedDataError(ValueError):
    """An input file does not match its format; the message names the file and the line, row or record."""


def where(path: str | os.PathLike, line: int | None = None, *, unit: str = "line") -> str:
    """``"<path>, line 3"`` (or ``row 3``) for error messages."""
    return f"{path}, {unit} {line}" if line is not None else str(path)


def not_utf8(path: str | os.PathLike, exc: UnicodeDecodeError, line: int | None = None) -> MalformedDataError:
    """The error for bytes that are not UTF-8, naming the file (and line when reading line by line)."""
    at = f"{where(path, line)}: not UTF-8 text ({exc.reason})" if line else \
        f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
    return MalformedDataError(f"{at}; save the file as UTF-8 (is it a binary file?).")


@contextlib.contextmanager
def csv_field_limit(limit: int = CSV_FIELD_LIMIT) -> Iterator[None]:
    """Raise the csv module's cell size limit (128 KiB by default) to ``limit`` for the block."""
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, min(limit, sys.maxsize)))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8(p, exc) from None


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only, a trailing ``\\r`` removed (``str.splitlines`` also splits on U+2028,
    U+0085, ``\\x0c`` … which are ordinary characters inside a response)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a number in standard JSON", name, 0)


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _RepeatedKey(key)
    return obj


def parse_json(text: str, name: str | os.PathLike, line: int | None = None, *, strict_numbers: bool = False) -> Any:
    """``json.loads`` with one-line errors naming the file and line (``line``: where ``text`` starts in a
    JSON Lines file; ``None``: ``text`` is the whole file). ``strict_numbers`` refuses NaN/Infinity. An object
    naming a key twice (``json`` would keep the last silently) and an integer literal too long for Python's
    int conversion (over 4,300 digits) are refused too."""
    try:
        return json.loads(text, parse_constant=_no_constant if strict_numbers else None,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        loc = where(name, line if line is not None else exc.lineno)
        raise MalformedDataError(f"{loc}: invalid JSON ({exc.msg}, column {exc.colno}).") from None
    except _RepeatedKey as exc:
        raise MalformedDataError(f"{where(name, line)}: a JSON object repeats the key {str(exc)[:60]!r} (a reader "
                                 "would keep only the last); give each key once.") from None
    except RecursionError:
        raise MalformedDataError(f"{where(name, line)}: JSON nested too deeply to read; records must be flat "
                                 "objects or strings.") from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        if "digits" not in str(exc):
            raise
        raise MalformedDataError(f"{where(name, line)}: a JSON number has more than 4,300 digits, which is no "
                                 "valid value here; fix the number.") from None


def read_json(path: str | os.PathLike) -> Any:
    """A whole JSON file (standard JSON: no NaN/Infinity), errors naming the file and line."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc) from None
    return parse_json(text, path, strict_numbers=True)


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for every non-blank line of a JSON Lines file, streamed (split on ``\\n``
    only, a BOM dropped, standard JSON); a bad line raises :class:`MalformedDataError` naming file and line."""
    with open(path, encoding="utf-8-sig", newline="\n") as f:
        lineno = 0
        while True:
            try:
                line = f.readline()
            except UnicodeDecodeError as exc:
                raise not_utf8(path, exc, lineno + 1) from None
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            obj = parse_json(line, path, lineno, strict_numbers=True)
            if not isinstance(obj, dict):
                raise MalformedDataError(f"{where(path, lineno)}: expected a JSON object, got {type(obj).__name__}.")
            yield lineno, obj


def read_jsonl_text(text: str, name: str) -> list[Any]:
    """Records of a JSON Lines document (blank lines skipped)."""
    rows = []
    for i, line in enumerate(split_lines(text), 1):
        if line.strip():
            rows.append(parse_json(line, name, i))
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
        raise not_utf8(path, exc) from None


def read_csv_stream(stream: Iterable[str], name: str, delimiter: str = ",") -> list[dict[str, Any]]:
    """Rows of a CSV/TSV stream as dicts, parsed by the csv module with its own newline handling (quoted cells
    may span lines); a row with more or fewer cells than the header, an unterminated quote or an oversized
    cell is an error naming the line."""
    with csv_field_limit():
        reader = csv.reader(stream, delimiter=delimiter, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                return []
            _refuse_other_delimiter(header, name, delimiter)
            refuse_repeated_columns(header, name)
            rows = []
            start = reader.line_num + 1  # the line a row starts on (a quoted cell may span lines)
            for row in reader:
                first, start = start, reader.line_num + 1
                if not row:
                    continue
                if len(row) != len(header):
                    raise ValueError(f"{name}, line {first}: {len(row)} cells, but the header has "
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
    return rows


def refuse_repeated_columns(header: Sequence[str], name: str) -> None:
    """A CSV header naming a column twice is refused: a dict reader keeps the last one, so a second, different
    column of the same name would silently replace the first (every CSV reader calls this)."""
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise MalformedDataError(f"{name}: the header repeats column(s) {dup}; give each column its own name.")


def _refuse_other_delimiter(header: list[str], name: str, delimiter: str) -> None:
    """A one-column header holding semicolons (or tabs in a .csv): the file uses another separator, and reading
    it with ``delimiter`` would score each whole line as one cell."""
    if len(header) != 1:
        return
    for sep, what in ((";", "semicolon"), ("\t", "tab"), ("|", "pipe"), (",", "comma")):
        if sep != delimiter and sep in header[0]:
            raise ValueError(f"{name}: the header {header[0][:60]!r} is one column holding {what}s; the file looks "
                             f"{what}-separated. Save it comma-separated (.csv) or tab-separated (.tsv).")


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
        data = parse_json(text, p)
        if not isinstance(data, list):
            raise ValueError(f"{p}: expected a JSON array of records or strings, got a JSON {type(data).__name__}.")
        return data
    lines = split_lines(text)
    if lines and not any(line.strip() for line in lines):
        raise ValueError(f"{p}: the file holds only blank lines; write one response per line.")
    return lines


def check_unicode(value: str, where: str) -> str:
    """``value``, or a clear error when it holds a lone surrogate (not valid Unicode; cannot be written)."""
    m = lone_surrogate(value)
    if m:
        raise MalformedDataError(f"{where} holds a lone surrogate (U+{ord(m.group()):04X}) at character {m.start()}, "
                         "which is not valid Unicode text; fix the file's encoding (e.g. a broken \\ud83d escape).")
    return value


# -- record fields (a JSON record read from a file): errors name the file, line and field

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


def describe(value: Any) -> str:
    """What a non-text value is, for an error: ``NaN (a missing value)``, ``null``, ``int``, ``a list`` …"""
    if isinstance(value, float) and value != value:
        return "NaN (a missing value)"
    if value is None:
        return "null (a missing value)"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def no_text_field(rec: dict[str, Any], where: str, fix: str = "--field") -> ValueError:
    """The error for a record with no single text field: which fields hold what, and the fix."""
    text_fields = [k for k, v in rec.items() if isinstance(v, str)]
    if text_fields:
        return ValueError(f"{where}: records have text fields {sorted(map(str, text_fields))}; choose the response "
                          f"field with {fix}.")
    kinds = ", ".join(f"{k!r} is {describe(v)}" for k, v in list(rec.items())[:6])
    return ValueError(f"{where}: no field holds text ({kinds or 'no fields'}); responses must be strings "
                      f"(quote numbers, fill missing values), or choose the field with {fix}.")


def _pick_field(rec: dict[str, Any], path: str | Path) -> str:
    text_fields = [k for k, v in rec.items() if isinstance(v, str)]
    if len(text_fields) != 1:
        raise no_text_field(rec, f"{path}, record 1")
    return text_fields[0]


def read_texts(path: str | Path, field: str | None = None) -> list[str]:
    """Responses from ``path``: the ``field`` of each record for JSONL/CSV, or each line of a text file."""
    records = read_records(path)
    if not records:
        raise ValueError(f"{path}: no responses found (the file is empty).")
    check_duplicate_rows(records, str(path), override=None)
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
            raise ValueError(f"{path}, record {i}: field {field!r} is {describe(value)}, not text; fix the record.")
        out.append(check_unicode(value, f"{path}, record {i}, field {field!r}"))
    return out


def check_duplicate_rows(rows: list[Any], source: str, override: str | None = "--allow-duplicates",
                         exact: bool = True) -> None:
    """Refuse records that repeat an earlier record's ``id``, or repeat a record of two or more fields exactly
    (a context and its response, a set): each would be scored twice. Plain responses (strings or one-field
    records) may repeat: repetition is what the diversity metrics measure. ``override`` is the flag the message
    offers (``None``: the command has none); ``exact=False`` checks ids only (for records that are items of a
    group, such as a response set's members, which may repeat)."""
    also = f", or pass {override} to score both" if override else ""
    seen: dict[str, int] = {}
    ids: dict[Any, int] = {}
    for i, row in enumerate(rows, 1):
        key = json.dumps(row, sort_keys=True, ensure_ascii=True, default=str)
        if not exact or not isinstance(row, dict) or len(row) < 2 or key not in seen:
            rid = row.get("id") if isinstance(row, dict) else None
            if rid is not None and isinstance(rid, (str, int)) and rid in ids:
                raise ValueError(f"{source}, record {i}: id {rid!r} repeats record {ids[rid]}; remove one{also}.")
            if rid is not None and isinstance(rid, (str, int)):
                ids[rid] = i
            seen.setdefault(key, i)
            continue
        raise ValueError(f"{source}, record {i}: an exact duplicate of record {seen[key]}; remove it{also}.")


# ---------------------------------------------------------------------------------------- tables
# (Parquet, `dialeval datasets export` folders and stdin, for `dialeval score` over any input kind)

TABLE_SUFFIXES = (".parquet", ".jsonl")


def export_file(folder: str | Path, config: str | None = None, split: str | None = None) -> Path:
    """The file of ``config``/``split`` in a folder written by ``dialeval datasets export`` (``CONFIG/SPLIT.parquet``
    or ``.jsonl``); either may be left out when the folder holds only one."""
    root = Path(folder)
    configs = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if config is None:
        if len(configs) != 1:
            raise ValueError(f"{root} holds configs {configs}; choose one with --dataset-config.")
        config = configs[0]
    files = sorted(f for f in (root / config).glob("*") if f.suffix in TABLE_SUFFIXES) if config in configs else []
    if not files:
        raise ValueError(f"{root} has no config {config!r} with Parquet/JSONL files; its configs are {configs}.")
    if split is None:
        if len(files) != 1:
            raise ValueError(f"{root / config} holds splits {[f.stem for f in files]}; choose one with --split.")
        return files[0]
    for f in files:
        if f.stem == split:
            return f
    raise ValueError(f"{root / config} has no split {split!r}; its splits are {[f.stem for f in files]}.")


def is_export_folder(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "README.md").is_file() and any(d.is_dir() for d in p.iterdir())


def read_parquet_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a Parquet file, or of every Parquet file in a folder (in name order), as dicts."""
    import pyarrow.parquet as pq

    p = Path(path)
    files = sorted(p.glob("*.parquet")) if p.is_dir() else [p]
    if not files:
        raise ValueError(f"{p}: no .parquet files in this folder.")
    rows: list[dict[str, Any]] = []
    for f in files:
        try:
            rows.extend(pq.read_table(f).to_pylist())
        except Exception as exc:  # pyarrow raises its own error types for a damaged file
            raise ValueError(f"{f}: not a readable Parquet file ({exc}).") from None
    return rows


def _read_stream(stream: Any) -> str:
    """Text of ``stream``; standard input is decoded strictly as UTF-8 (the locale's decoder would turn bad
    bytes into lone surrogates and report them far from their cause)."""
    raw = getattr(stream, "buffer", None)
    if raw is None:
        return stream.read()
    try:
        return raw.read().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"<stdin>: not UTF-8 text ({exc.reason} at byte {exc.start}); pipe UTF-8 text.") from None


def read_stdin_rows(stream: Any = None) -> list[dict[str, Any]] | list[str]:
    """``-``: JSON Lines when the first non-blank line is a JSON object, else one response per line."""
    text = _read_stream(stream or sys.stdin)
    first = next((line for line in split_lines(text) if line.strip()), "")
    if first.lstrip().startswith("{"):
        return read_jsonl_text(text, "<stdin>")
    return split_lines(text)


def read_rows(path: str | Path, *, config: str | None = None, split: str | None = None) -> list[Any]:
    """Records of any input ``dialeval score`` takes: Parquet (a file or a folder of files), a folder from
    ``dialeval datasets export`` (``config``/``split``), ``-`` (stdin), or JSONL/CSV/text (:func:`read_records`)."""
    if str(path) == "-":
        return read_stdin_rows()
    p = Path(path)
    if is_export_folder(p):
        p = export_file(p, config, split)
    if p.suffix.lower() == ".parquet" or p.is_dir() and any(p.glob("*.parquet")):
        return read_parquet_rows(p)
    return read_records(p)
