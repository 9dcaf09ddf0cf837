"""A user's own annotations as a dataset, and a user's own per-item scores as a metric.

**Record schema** (JSON Lines, CSV or Parquet; one record per rated item):

- ``id``: the item's identity (optional: the record's 1-based position otherwise; unique when given);
- turn level: ``context`` (a list of turns, or one string with a turn per line) and ``response`` (a string);
  dialogue level: ``dialogue`` (a list of turns, or one string with a turn per line) in their place;
- ``reference`` (optional): one reference response, or a list of several (in CSV, a JSON list in the cell);
- ``system`` (optional): the system that produced the item (system-level rows where there are enough);
- one or more quality columns: a number, or a list of per-annotator numbers (in CSV, a JSON list in the
  cell); an empty value or ``null`` is an item without a score for that quality (left out of its statistics).

``fields`` (``--field NAME=COLUMN``) maps other column names onto ``id``, ``context``, ``response``,
``reference``, ``system`` and ``dialogue``. ``qualities`` (``--quality``) picks the quality columns (default:
every column not otherwise used whose values are numbers or lists of numbers, named in the notes); ``overall`` (``--overall``) the
one the summary row uses (default: a quality named ``overall``, any case, else the first).

**DSTC10 Track 5 JSON** (a JSON array of ``{dialogue_id, model, context, response, reference, annotations}``):
any qualities; an item's id is ``<dialogue_id>:<position>`` (its 0-based position in the array, e.g.
``persona_17:512``), which a ``--scores`` file must use; an item without annotations is left out and counted, and
an annotation key whose values are not numeric is ignored and named.

**Responses equal to their reference** (e.g. DSTC10's ground-truth "system"): counted and named by system in the
notes, kept by default, left out with ``copies="leave-out"`` (``--reference-copies leave-out``).

Nothing is dropped silently: :attr:`OwnData.notes` says what was left out or ignored, and why.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dialeval.io.readers import (
    MalformedDataError,
    read_csv_file,
    read_json,
    read_jsonl,
    read_parquet_rows,
)
from dialeval.meta.sources import DatasetDeclaration

FIELDS = ("id", "context", "response", "reference", "system", "dialogue")
CHUNK_ROWS = 200
#: The largest magnitude of a rating or score: a correlation multiplies and sums them, which beyond this overflows.
MAX_MAGNITUDE = 1e100
SUFFIXES = (".jsonl", ".csv", ".parquet", ".json")


@dataclass
class OwnData:
    """A user's file read as a rated dataset: its declaration, its one config's rows and what was left out."""

    declaration: DatasetDeclaration
    config: str
    rows: list[dict[str, Any]]
    path: Path
    notes: list[str] = field(default_factory=list)


def parse_mapping(pairs: list[str] | None, option: str = "--field") -> dict[str, str]:
    """``["context=history", ...]`` → ``{"context": "history"}``; names outside :data:`FIELDS` are refused."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, column = pair.partition("=")
        if not sep or not name or not column:
            raise ValueError(f"{option} {pair!r} must look like NAME=COLUMN, e.g. context=history.")
        if name not in FIELDS:
            raise ValueError(f"{option} {pair!r}: NAME must be one of {list(FIELDS)}.")
        out[name] = column
    return out


def _number(value: Any) -> float | None:
    """A finite number (numeric strings too), ``None`` for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            out = float(value)
        except ValueError:
            return None
        return out if math.isfinite(out) else None
    return None


def bounded(x: float, loc: str, what: str) -> float:
    """``x`` when its magnitude is at most :data:`MAX_MAGNITUDE`; else one line naming where and what to do."""
    if abs(x) > MAX_MAGNITUDE:
        raise MalformedDataError(f"{loc}: {what} is {x:g}, beyond ±{MAX_MAGNITUDE:g}, where the products and sums of "
                                 "a correlation overflow; rescale it (dividing a whole column by a constant changes "
                                 "no correlation).")
    return x


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, float) and math.isnan(value))


def _cell_list(value: Any) -> Any:
    """A CSV cell holding a JSON list, as the list; anything else unchanged."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def scores_of(value: Any) -> list[float | None] | None:
    """A quality value as per-annotator scores (``None`` entries: no score), or ``None`` when not numeric."""
    value = _cell_list(value)
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items:
        return None
    out: list[float | None] = []
    for v in items:
        if _missing(v):
            out.append(None)
            continue
        x = _number(v)
        if x is None:
            return None
        out.append(x)
    return out


def _turns(value: Any, name: str, loc: str) -> list[str]:
    value = _cell_list(value)
    if isinstance(value, str):
        return [t.strip() for t in value.strip("\n").split("\n")]
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        return [t.strip() for t in value]
    raise MalformedDataError(f"{loc}: field {name!r} must be a list of turns or a string with a turn per line, "
                             f"got {type(value).__name__}.")


def _reference(value: Any, loc: str) -> str | list[str] | None:
    value = _cell_list(value)
    if _missing(value):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        refs = [t.strip() for t in value if t.strip()]
        return refs[0] if len(refs) == 1 else (refs or None)
    raise MalformedDataError(f"{loc}: field 'reference' must be a string or a list of strings, got "
                             f"{type(value).__name__}.")


def _records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(location, record)`` of a JSON Lines, CSV or Parquet file."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [(f"{path}, line {n}", obj) for n, obj in read_jsonl(path)]
    if suffix == ".csv":
        return [(f"{path}, row {i}", rec) for i, rec in enumerate(read_csv_file(path), 2)]
    if suffix == ".parquet":
        return [(f"{path}, record {i}", rec) for i, rec in enumerate(read_parquet_rows(path), 1)]
    raise ValueError(f"--data {str(path)!r}: use a .jsonl, .csv or .parquet file in the record schema, or a .json "
                     "file in the DSTC10 format.")


def _pick_qualities(records: list[tuple[str, dict[str, Any]]], used: set[str], asked: list[str] | None,
                    path: Path, notes: list[str]) -> list[str]:
    """The quality columns: ``asked`` (each must hold a number somewhere), or every unused numeric column."""
    columns = list(dict.fromkeys(k for _, rec in records for k in rec))
    if asked:
        missing = [q for q in asked if q not in columns]
        if missing:
            raise ValueError(f"--quality {missing[0]!r} is not a column of {path}; its columns are {columns}.")
        for q in asked:
            if all(_missing(rec.get(q)) for _, rec in records):
                raise ValueError(f"{path}: quality {q!r} has no score in any record; fill it or leave it out.")
        return list(asked)
    picked = []
    for col in columns:
        if col in used:
            continue
        values = [(loc, rec.get(col)) for loc, rec in records if not _missing(rec.get(col))]
        bad = next(((loc, v) for loc, v in values if scores_of(v) is None), None)
        if values and bad is None:
            picked.append(col)
        elif bad is not None:
            notes.append(f"column {col!r} is not a quality (not numeric: {bad[0]} holds {bad[1]!r:.30}); ignored.")
    if not picked:
        raise ValueError(f"{path}: no quality column (numbers or lists of numbers); name one with --quality COL.")
    notes.append(f"qualities: {', '.join(repr(q) for q in picked)} (every numeric column not otherwise used); "
                 "choose them with --quality NAME (repeatable).")
    return picked


def _row(rec: dict[str, Any], loc: str, m: dict[str, str], level: str, qualities: list[str],
         columns: list[str], index: int) -> dict[str, Any]:
    ann: dict[str, list[float | None]] = {}
    for q in qualities:
        value = rec.get(q)
        got = [None] if _missing(value) else scores_of(value)
        if got is None:
            raise MalformedDataError(f"{loc}: quality {q!r} is {value!r:.40}, not a number or a list of numbers.")
        ann[q] = [None if v is None else bounded(v, loc, f"quality {q!r}") for v in got]
    row: dict[str, Any] = {"id": str(rec[m["id"]]) if m["id"] in rec else str(index)}
    if level == "dialog":
        row["context"] = _turns(rec.get(m["dialogue"]), m["dialogue"], loc)
    else:
        for name in (m["context"], m["response"]):  # an empty value is allowed (and counted); an absent field is not
            if name not in rec:
                raise MalformedDataError(f"{loc}: no field {name!r}; a turn-level record needs a context and a "
                                         "response (map other names with --field, e.g. --field response=reply).")
        row["context"] = [] if _missing(rec.get(m["context"])) else _turns(rec[m["context"]], m["context"], loc)
        response = rec.get(m["response"])
        if response is not None and not isinstance(response, str):
            raise MalformedDataError(f"{loc}: field {m['response']!r} must be a string, got {type(response).__name__}.")
        row["response"] = (response or "").strip()
    system = rec.get(m["system"])
    row.update(speakers=[], reference=_reference(rec.get(m["reference"]), loc), knowledge=None,
               system=None if _missing(system) else str(system), annotations=ann,
               annotation_means={q: _mean(v) for q, v in ann.items()})
    for col in columns:
        x = _number(rec.get(col))
        if x is None:
            raise MalformedDataError(f"{loc}: column {col!r} is {rec.get(col)!r:.40}, not a number (--metric column:{col}).")
        row[col] = bounded(x, loc, f"column {col!r}")
    return row


def _mean(values: list[float | None]) -> float | None:
    nums = [v for v in values if v is not None]
    return math.fsum(nums) / len(nums) if nums else None


def _level(records: list[tuple[str, dict[str, Any]]], m: dict[str, str], path: Path) -> str:
    keys = set().union(*(rec for _, rec in records)) if records else set()
    if m["response"] in keys:
        return "turn"
    if m["dialogue"] in keys:
        return "dialog"
    raise ValueError(f"{path}: records need {m['context']!r} and {m['response']!r} (turn level) or {m['dialogue']!r} "
                     "(dialogue level); map other column names with --field response=COLUMN.")


def _overall(qualities: list[str], overall: str | None, path: Path, notes: list[str]) -> str:
    if overall is not None:
        if overall not in qualities:
            raise ValueError(f"--overall {overall!r} is not among the qualities of {path}: {qualities}.")
        return overall
    named = next((q for q in qualities if q.strip().lower() == "overall"), None)
    if named is None:
        notes.append(f"summary quality: {qualities[0]!r} (the first; choose another with --overall).")
    return named or qualities[0]


def _dstc10_records(path: Path, notes: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """A DSTC10 file's items as schema records (``model`` as ``system``, annotations as quality columns); items
    without annotations left out, non-numeric annotation keys ignored, both reported in ``notes``."""
    data = read_json(path)
    if not isinstance(data, list):
        raise MalformedDataError(f"{path}: expected a JSON array of DSTC10 items, got {type(data).__name__}.")
    out, unannotated, ignored = [], 0, {}
    for i, obj in enumerate(data):
        loc = f"{path}, item {i} (0-based)"
        if not isinstance(obj, dict):
            raise MalformedDataError(f"{loc}: expected an object, got {type(obj).__name__}.")
        ann = obj.get("annotations")
        if not isinstance(ann, dict) or not ann:
            unannotated += 1
            continue
        rec = {"id": f"{obj.get('dialogue_id', i)}:{i}", "context": obj.get("context", ""),
               "response": obj.get("response"), "reference": obj.get("reference"), "system": obj.get("model")}
        for key, value in ann.items():
            if key in FIELDS:
                raise MalformedDataError(f"{loc}: annotation {key!r} has the name of a record field; rename it.")
            if _missing(value) or scores_of(value) is not None:
                rec[key] = value
            else:
                ignored.setdefault(key, 0)
                ignored[key] += 1
        out.append((loc, rec))
    if unannotated:
        notes.append(f"{unannotated} of {len(data)} items have no annotations; left out.")
    for key, count in ignored.items():
        notes.append(f"annotation {key!r} is not numeric on {count} item(s); ignored.")
    if not out:
        raise ValueError(f"{path}: no item has annotations; nothing to correlate with.")
    return out


def _fill_missing_qualities(records: list[tuple[str, dict[str, Any]]], qualities: list[str], notes: list[str]) -> None:
    for q in qualities:
        absent = sum(1 for _, rec in records if _missing(rec.get(q)))
        if absent:
            notes.append(f"quality {q!r}: {absent} of {len(records)} items have no score; left out of its statistics.")


REFERENCE_COPIES = ("keep", "leave-out")  #: what ``read`` does with items whose response is their reference


def _same_text(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str) and " ".join(a.split()) == " ".join(b.split())


def reference_copies(rows: list[dict[str, Any]], choice: str, where: str) -> tuple[list[dict[str, Any]], list[str]]:
    """``(rows, notes)``: the items whose response equals one of their references (whitespace aside; typically a
    ground-truth "system"), counted and named by system in a note, and left out when ``choice`` is ``"leave-out"``.
    Such an item scores the reference against itself: overlap metrics give it their maximum, which inflates their
    correlation (USR's and DSTC10's ground-truth rows)."""
    if choice not in REFERENCE_COPIES:
        raise ValueError(f"--reference-copies {choice!r}: use one of {list(REFERENCE_COPIES)}.")
    copies = [r for r in rows if r.get("response") and any(
        _same_text(r["response"], ref) for ref in ([r["reference"]] if isinstance(r.get("reference"), str)
                                                   else r.get("reference") or []))]
    if not copies:
        return rows, []
    by_system: dict[str, int] = {}
    for r in copies:
        by_system[str(r.get("system"))] = by_system.get(str(r.get("system")), 0) + 1
    named = ", ".join(f"{s!r} {k}" for s, k in sorted(by_system.items(), key=lambda x: -x[1])[:5])
    kept = choice == "keep"
    note = (f"{len(copies)} of {len(rows)} items of {where} have a response equal to their reference (by system: "
            f"{named}; e.g. id {copies[0]['id']!r}): " + ("kept, so reference-based metrics score the reference "
            "against itself there; --reference-copies leave-out leaves them out" if kept else
            "left out (--reference-copies leave-out)"))
    return (rows if kept else [r for r in rows if not any(r is c for c in copies)]), [note]


def read(path: str | Path, *, fields: dict[str, str] | None = None, qualities: list[str] | None = None,
         overall: str | None = None, columns: list[str] | None = None, name: str | None = None,
         copies: str = "keep") -> OwnData:
    """Read a user's file (record schema or DSTC10 JSON, see the module docstring) as a rated dataset named
    ``name`` (default: the file's stem). ``columns`` are stored metric columns (``--metric column:NAME``): read as
    numbers and kept out of the qualities. Items whose response equals their reference are counted in the notes
    and kept, or left out with ``copies="leave-out"`` (:func:`reference_copies`)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"--data {str(path)!r} is not a file.")
    notes: list[str] = []
    m = {f: f for f in FIELDS} | dict(fields or {})
    records = _dstc10_records(path, notes) if path.suffix.lower() == ".json" else _records(path)
    if not records:
        raise ValueError(f"{path}: no records.")
    level = _level(records, m, path)
    columns = [c for c in columns or [] if any(c in rec for _, rec in records)]
    used = {m[f] for f in FIELDS} | set(columns)
    picked = _pick_qualities(records, used, qualities, path, notes)
    clash = sorted(set(picked) & used)
    if clash:
        raise ValueError(f"--quality {clash[0]!r} is also a record field or a --metric column; pick another column.")
    _fill_missing_qualities(records, picked, notes)
    summary = _overall(picked, overall, path, notes)
    rows = [_row(rec, loc, m, level, picked, columns, i) for i, (loc, rec) in enumerate(records, 1)]
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))
        raise MalformedDataError(f"{path}: id {dup!r} appears more than once; give each item its own id.")
    rows, said = reference_copies(rows, copies, path.name)
    notes += said
    decl = DatasetDeclaration(
        name=name or dataset_name(path), protocol="rated", levels={level: level}, overall={level: summary},
        description=f"your file {path.name}", system_field="system" if any(r["system"] for r in rows) else None,
        fields=("reference",) if all(r["reference"] for r in rows) else (), columns=tuple(columns),
        chunk_rows=CHUNK_ROWS)
    return OwnData(decl, level, rows, path, notes)


def dataset_name(path: Path) -> str:
    """The file's stem with characters other than letters, digits, ``_``, ``-`` and ``.`` replaced."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem) or "data"


# -- a user's own scores ----------------------------------------------------------------------------------------


def parse_scores_options(pairs: list[str] | None) -> dict[str, Path]:
    """``["mine=scores.jsonl"]`` → ``{"mine": Path("scores.jsonl")}`` (``--scores NAME=FILE``)."""
    out: dict[str, Path] = {}
    for pair in pairs or []:
        name, sep, file = pair.partition("=")
        if not sep or not name or not file or ":" in name:
            raise ValueError(f"--scores {pair!r} must look like NAME=FILE (a JSONL or CSV file with id and score).")
        if name in out:
            raise ValueError(f"--scores {name!r} is given twice; give each its own name.")
        check_scores_name(name)
        out[name] = Path(file).expanduser()
    return out


def check_scores_name(name: Any) -> None:
    """A ``--scores`` name is one line of printable text without ``|`` (it names a row of the Markdown table)."""
    if not isinstance(name, str) or not name.strip() or "|" in name or not name.isprintable():
        raise ValueError(f"--scores name {name!r:.60} must be printable text on one line without '|' (it names a "
                         "row of the report's table), e.g. my_metric.")


def read_scores(path: Path) -> dict[str, float]:
    """``{id: score}`` of a JSONL/CSV/Parquet file whose records hold ``id`` and ``score`` (or ``id`` and one other
    column); errors name the file and record."""
    if not path.is_file():
        raise FileNotFoundError(f"--scores file {str(path)!r} is not a file.")
    records = _records(path)
    out: dict[str, float] = {}
    for loc, rec in records:
        if "id" not in rec or _missing(rec["id"]):
            raise MalformedDataError(f"{loc}: no 'id'; each record needs the id of the item it scores.")
        others = [k for k in rec if k != "id"]
        column = "score" if "score" in rec else (others[0] if len(others) == 1 else None)
        if column is None:
            raise MalformedDataError(f"{loc}: give the score in a column named 'score' (found {others}).")
        x = _number(rec[column])
        if x is None:
            raise MalformedDataError(f"{loc}: score {rec[column]!r:.40} is not a finite number.")
        bounded(x, loc, "score")
        key = str(rec["id"])
        if key in out:
            raise MalformedDataError(f"{loc}: id {key!r} is scored twice.")
        out[key] = x
    if not out:
        raise ValueError(f"--scores file {str(path)!r} holds no scores.")
    return out


def id_hint(scores: dict[str, float], rows: list[dict[str, Any]]) -> str:
    """What the ids of ``rows`` look like beside those of a ``--scores`` file, for the "no id matches" error."""
    theirs = ", ".join(repr(str(r.get("id"))) for r in rows[:2]) or "none"
    mine = ", ".join(repr(k) for k in list(scores)[:2])
    form = (" (items of a DSTC10 JSON file: DIALOGUE_ID:POSITION, the 0-based position in its array)"
            if rows and all(re.fullmatch(r".+:\d+", str(r.get("id"))) for r in rows[:20]) else "")
    return f"its ids are like {mine}; the items' ids are like {theirs}{form}"


def join_scores(scores: dict[str, float], rows: list[dict[str, Any]], name: str, where: str) -> list[float] | None:
    """Each row's score by its ``id`` (``None`` when the file scores none of these rows); a file that scores only
    some of them, or rows whose ids repeat, is an error naming how many and which."""
    ids = [str(r.get("id")) for r in rows]
    hits = [i for i in ids if i in scores]
    if not hits:
        return None
    if len(set(ids)) != len(ids):
        raise ValueError(f"--scores {name}: the rows of {where} do not have unique ids; scores cannot be joined.")
    missing = [i for i in ids if i not in scores]
    if missing:
        raise ValueError(f"--scores {name}: {len(missing)} of {len(ids)} items of {where} have no score (e.g. id "
                         f"{missing[0]!r}); score every item.")
    return [scores[i] for i in ids]
