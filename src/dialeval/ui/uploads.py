"""Uploaded files → the text boxes: :func:`read_upload` parses JSONL/JSON/CSV/TXT into a
:class:`ParsedUpload`, checked against :class:`~dialeval.ui.inputs.Limits`, with messages that name the
file (never the server's temporary path)."""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dialeval.io.readers import check_unicode
from dialeval.ui.inputs import InputError, Limits, check_chars, check_sets, check_turns, human_bytes


@dataclass
class ParsedUpload:
    """What an uploaded file holds, as text for the input boxes."""

    responses: list[str] = field(default_factory=list)
    sets: list[list[str]] = field(default_factory=list)
    dialogue: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        if self.responses:
            parts.append(f"{len(self.responses)} responses")
        if self.sets:
            parts.append(f"{len(self.sets)} response sets")
        if self.dialogue:
            parts.append(f"a dialogue of {len(self.dialogue)} turns")
        return ", ".join(parts)


UPLOAD_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".txt")
RESPONSE_FIELDS = ("response", "text", "prediction", "hypothesis")
SET_FIELDS = ("responses", "set", "predictions")
SET_ID_FIELDS = ("set_id", "set", "group", "context_id")
DIALOGUE_FIELDS = ("dialogue", "turns", "dialog", "context")


def _check_file(p: Path, limits: Limits) -> None:
    """Present, within the size limit, a known suffix, and not binary."""
    name = p.name
    if not p.is_file():
        raise InputError(f"{name}: the upload did not arrive; try again.")
    size = p.stat().st_size
    if size > limits.max_upload_bytes:
        raise InputError(f"{name} is {human_bytes(size)}; uploads are limited to "
                         f"{human_bytes(limits.max_upload_bytes)}. Upload a sample, or score the whole file "
                         "locally with `dialeval score`.")
    if p.suffix.lower() not in UPLOAD_SUFFIXES:
        raise InputError(f"{name}: unsupported file type {p.suffix or '(none)'!r}; upload "
                         f"{', '.join(UPLOAD_SUFFIXES)}.")
    with p.open("rb") as f:
        head = f.read(8192)
    if b"\x00" in head:
        raise InputError(f"{name} looks like a binary file (it contains NUL bytes); upload UTF-8 JSONL, CSV "
                         "or text.")


def read_upload(path: str | os.PathLike, limits: Limits | None = None) -> ParsedUpload:
    """Parse an uploaded JSONL/JSON/CSV/TXT file into responses, response sets and/or a dialogue.

    Accepted records (JSONL lines, JSON array items, CSV rows):

    - ``{"response": str}`` (also ``text``/``prediction``): one response; with a ``set_id`` (or ``set``,
      ``group``, ``context_id``) field, responses sharing that value form a response set;
    - ``{"responses": [str, ...]}``: one response set;
    - ``{"dialogue": [str, ...]}`` (also ``turns``): a dialogue (the first one is used);
    - a bare string (JSON) or a line (TXT): one response.
    """
    from dialeval.io.readers import check_duplicate_rows, read_records

    limits = limits or Limits()
    p = Path(path)
    name = p.name
    _check_file(p, limits)
    try:
        records = read_records(p)
    except (ValueError, KeyError) as exc:
        raise InputError(str(exc).replace(str(p), name)) from None
    except csv.Error as exc:
        raise InputError(f"{name}: malformed CSV ({exc}).") from None
    if not records:
        raise InputError(f"{name} holds no records; put one response per line or one JSON object per line.")
    try:  # a repeated id would be scored twice (members of a response set may repeat: ids only)
        check_duplicate_rows(records, name, override=None, exact=False)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    out = _records_to_upload(records, name)
    if not (out.responses or out.sets or out.dialogue):
        raise InputError(f"{name}: found no responses. Use a field named one of {list(RESPONSE_FIELDS)}, "
                         f"{list(SET_FIELDS)} or {list(DIALOGUE_FIELDS)}.")
    check_chars(out.responses, f"{name}: response", limits)
    if len(out.responses) > limits.max_responses:
        raise InputError(f"{name}: {len(out.responses)} responses; the limit is {limits.max_responses} per "
                         "request. Upload a sample, or score the whole file locally with `dialeval score`.")
    check_sets(out.sets, name, limits)
    check_turns(out.dialogue, f"{name}, dialogue", limits)
    return out


def _first_key(record: dict[str, Any], keys: Sequence[str]) -> str | None:
    lowered = {k.lower().strip(): k for k in record if isinstance(k, str)}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _records_to_upload(records: list[Any], name: str) -> ParsedUpload:
    out = ParsedUpload()
    groups: dict[str, list[str]] = {}
    for i, rec in enumerate(records, 1):
        if isinstance(rec, str):
            if rec.strip():
                out.responses.append(_one_line(rec.strip(), f"{name}, record {i}"))
            continue
        if not isinstance(rec, dict):
            raise InputError(f"{name}, record {i}: expected a JSON object or a string, got {type(rec).__name__}.")
        where = f"{name}, record {i}"
        dkey = _first_key(rec, DIALOGUE_FIELDS)
        if dkey is not None and isinstance(rec[dkey], list):
            if not out.dialogue:
                out.dialogue = _strings(rec[dkey], f"{where}, field {dkey!r}")
            continue
        skey = _first_key(rec, SET_FIELDS)
        if skey is not None and isinstance(rec[skey], list):
            out.sets.append(_strings(rec[skey], f"{where}, field {skey!r}"))
            continue
        text, group = _response_record(rec, where)
        if group is None:
            out.responses.append(text)
        else:
            groups.setdefault(group, []).append(text)
    out.sets.extend(groups.values())
    return out


def _response_record(rec: dict[str, Any], where: str) -> tuple[str, str | None]:
    """(response text, its set id or ``None``) of a one-response record."""
    rkey = _first_key(rec, RESPONSE_FIELDS)
    if rkey is None:
        raise InputError(f"{where}: no response field; fields are {sorted(map(str, rec))}, "
                         f"expected one of {list(RESPONSE_FIELDS + SET_FIELDS + DIALOGUE_FIELDS)}.")
    value = rec[rkey]
    if not isinstance(value, str):
        raise InputError(f"{where}: field {rkey!r} is {type(value).__name__}, not text.")
    _one_line(value.strip(), f"{where}, field {rkey!r}")
    gkey = _first_key(rec, SET_ID_FIELDS)
    group = rec[gkey] if gkey is not None else None
    return value.strip(), (None if group in (None, "") else str(group))


def _strings(values: list[Any], what: str) -> list[str]:
    bad = [v for v in values if not isinstance(v, str)]
    if bad:
        raise InputError(f"{what}: holds {type(bad[0]).__name__} values; every item must be text.")
    return [_one_line(v.strip(), f"{what}, item {j}") for j, v in enumerate(values, 1) if v.strip()]


def _one_line(text: str, where: str) -> str:
    """``text``, or a refusal when it spans lines (the boxes hold one item per line, so a record with a line
    break would be shown and scored as several: the count would not be what is scored) or is not Unicode."""
    if "\n" in text or "\r" in text:
        raise InputError(f"{where} spans several lines; the demo holds one response per line. Join its lines "
                         "(e.g. with a space), or score the file as is with `dialeval score`.")
    try:
        check_unicode(text, where)  # a lone surrogate could be neither shown nor sent back to the browser
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return text
