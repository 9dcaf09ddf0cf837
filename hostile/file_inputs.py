"""Generated hostile input files for ``hostile/tally.py``: every command that reads a file × the file formats
it reads × hostile contents (empty, blank, binary, undecodable, lone surrogate, BOM, CRLF, duplicate ids, an exact
duplicate record, a missing field, NaN/int/list/null/object in a text field, a multi-line record, a truncated or
garbage line, a semicolon or tab CSV, a header-only or ragged CSV, a repeated JSON key or CSV header column, a
5,000-digit integer literal, a null or list record).

Each content says what is due: ``refuse`` (a one-line error; accepted = ``silent``) or ``same`` (refused in one line,
or accepted with the result of the intended records: for ``score`` and the demo upload computed independently through
the Python API, for a builder its stdout and output files compared with a run on the intended records written
cleanly, paths masked; a different result = ``silent``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Runner = Callable[[list[str]], tuple[int, str, str]]
SAMPLE = Path(__file__).resolve().parents[1] / "datasets_scripts" / "cards" / "dialstory" / "sample"


def render(records: list[dict[str, Any]], fmt: str, text_field: str) -> bytes:
    """Records as the bytes of a ``fmt`` file (txt: the text field, one per line)."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    if fmt == "json":
        return json.dumps(records, ensure_ascii=False).encode("utf-8")
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(records[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
        return buf.getvalue().encode("utf-8")
    return "".join(f"{r[text_field]}\n" for r in records).encode("utf-8")


@dataclass
class Content:
    """One hostile content: ``make(records, fmt, field) → bytes or None`` (None: not applicable to this format),
    what is due, and the records it is meant to hold (for ``same``)."""

    name: str
    due: str
    make: Callable[[list[dict[str, Any]], str, str], bytes | None]
    intended: Callable[[list[dict[str, Any]], str], list[dict[str, Any]]] = field(default=lambda rs, fld: rs)


def _set(records: list[dict[str, Any]], fld: str, value: Any, index: int = 1) -> list[dict[str, Any]]:
    out = [dict(r) for r in records]
    out[index][fld] = value
    return out


def _json_only(fn: Callable[..., bytes]) -> Callable[..., bytes | None]:
    return lambda rs, fmt, fld: fn(rs, fmt, fld) if fmt in ("jsonl", "json") else None


def _undecodable(rs: list, fmt: str, fld: str) -> bytes:
    return render(_set(rs, fld, "café au lait"), fmt, fld).replace("é".encode(), b"\xe9")


def _surrogate(rs: list, fmt: str, fld: str) -> bytes:
    if fmt in ("jsonl", "json"):  # the escape \ud800 is valid JSON text holding a lone _surrogate
        return "".join(json.dumps(r) + "\n" for r in _set(rs, fld, "a\ud800b")).encode() if fmt == "jsonl" \
            else json.dumps(_set(rs, fld, "a\ud800b")).encode()
    return render(_set(rs, fld, "aXSURb"), fmt, fld).replace(b"XSUR", b"\xed\xa0\x80")


def _with_ids(rs: list) -> list:
    return [{"id": f"r{i}", **r} for i, r in enumerate(rs)] if "id" not in rs[0] else rs


def _dup_ids(rs: list, fmt: str, fld: str) -> bytes | None:
    if fmt == "txt":
        return None
    ided = _with_ids(rs)
    return render(_set(ided, "id", ided[0]["id"]), fmt, fld)


def _semicolon(rs: list, fmt: str, fld: str) -> bytes | None:
    return render(rs, fmt, fld).replace(b",", b";") if fmt == "csv" and all("," not in str(v) for r in rs
                                                                           for v in r.values()) else None


def _tabs(rs: list, fmt: str, fld: str) -> bytes | None:
    return render(rs, fmt, fld).replace(b",", b"\t") if fmt == "csv" and all("," not in str(v) for r in rs
                                                                            for v in r.values()) else None


def _ragged(rs: list, fmt: str, fld: str) -> bytes | None:
    if fmt != "csv":
        return None
    lines = render(rs, fmt, fld).decode().splitlines(keepends=True)
    lines[2] = lines[2].rstrip("\n") + ",extra,cells\n"
    return "".join(lines).encode()


def _missing(rs: list, fmt: str, fld: str) -> bytes | None:
    if fmt == "txt":
        return None
    out = [dict(r) for r in rs]
    del out[1][fld]
    if fmt == "csv":
        return None  # a CSV row cannot lack a column (an empty cell is text)
    return render(out, fmt, fld)


def _bad_value(value: Any) -> Callable[..., bytes | None]:  # json.dumps writes NaN as the bare token NaN
    return _json_only(lambda rs, fmt, fld: render(_set(rs, fld, value), fmt, fld))


def _multiline(rs: list, fmt: str, fld: str) -> bytes | None:
    return None if fmt == "txt" else render(_set(rs, fld, "two\nlines"), fmt, fld)


def _truncated(rs: list, fmt: str, fld: str) -> bytes | None:
    return render(rs, fmt, fld)[:-12] if fmt in ("jsonl", "json") else None


def _garbage_line(rs: list, fmt: str, fld: str) -> bytes | None:
    return render(rs, fmt, fld) + b"this is not json\n" if fmt == "jsonl" else None


def _header_only(rs: list, fmt: str, fld: str) -> bytes | None:
    return render(rs, fmt, fld).split(b"\n")[0] + b"\n" if fmt == "csv" else None


def _marked(rs: list, fmt: str, fld: str, replacement: Callable[[str], bytes]) -> bytes | None:
    """Record 2's text field replaced in the rendered JSON by raw bytes no encoder writes (JSON only)."""
    if fmt not in ("jsonl", "json"):
        return None
    return render(_set(rs, fld, "XMARKX"), fmt, fld).replace(b'"XMARKX"', replacement(fld), 1)


def _repeated_key(rs: list, fmt: str, fld: str) -> bytes | None:  # json keeps the last value silently
    return _marked(rs, fmt, fld, lambda f: b'"first", "' + f.encode() + b'": "second"')


def _huge_int(rs: list, fmt: str, fld: str) -> bytes | None:  # over Python's 4,300-digit int conversion limit
    return _marked(rs, fmt, fld, lambda f: b"9" * 5000)


def _record(value: Any) -> Callable[..., bytes | None]:
    """A record that is not an object (null, a list) inserted as record 2 (JSON only)."""
    def make(rs: list, fmt: str, fld: str) -> bytes | None:
        return render([rs[0], value, *rs[1:]], fmt, fld) if fmt in ("jsonl", "json") else None

    return make


def _repeated_header(rs: list, fmt: str, fld: str) -> bytes | None:  # a dict reader keeps the last column
    if fmt != "csv" or any("," in str(v) for r in rs for v in r.values()):
        return None
    lines = render(rs, fmt, fld).decode().splitlines()
    return ("\n".join([lines[0] + "," + fld] + [line + ",flipped" for line in lines[1:]]) + "\n").encode()


def contents() -> list[Content]:
    """The hostile contents (each applied where its format allows)."""
    return [
        Content("empty file", "refuse", lambda rs, fmt, fld: b""),
        Content("blank lines only", "refuse", lambda rs, fmt, fld: b"\n \n\t\n"),
        Content("binary bytes", "refuse", lambda rs, fmt, fld: b"\x00\x01\xffPK\x03\x04\x89PNG\r\n" * 16),
        Content("_undecodable byte", "refuse", _undecodable),
        Content("lone _surrogate", "refuse", _surrogate),
        Content("UTF-8 BOM", "same", lambda rs, fmt, fld: b"\xef\xbb\xbf" + render(rs, fmt, fld)),
        Content("CRLF line ends", "same", lambda rs, fmt, fld: render(rs, fmt, fld).replace(b"\n", b"\r\n")),
        Content("duplicate ids", "refuse", _dup_ids),
        Content("exact duplicate record", "refuse", lambda rs, fmt, fld: None if fmt == "txt" or len(rs[0]) < 2
                else render(rs + rs[:1], fmt, fld)),
        Content("_missing field", "refuse", _missing),
        Content("NaN in the text field", "refuse", _bad_value(math.nan)),
        Content("int in the text field", "refuse", _bad_value(5)),
        Content("list in the text field", "refuse", _bad_value(["a", "b"])),
        Content("null in the text field", "refuse", _bad_value(None)),
        Content("object in the text field", "refuse", _bad_value({"text": "a"})),
        Content("multi-line record", "same", _multiline, lambda rs, fld: _set(rs, fld, "two\nlines")),
        Content("_truncated last record", "refuse", _truncated),
        Content("garbage line", "refuse", _garbage_line),
        Content("_semicolon CSV", "same", _semicolon),
        Content("tab-separated .csv", "same", _tabs),
        Content("header-only CSV", "refuse", _header_only),
        Content("_ragged CSV row", "refuse", _ragged),
        Content("repeated JSON key", "refuse", _repeated_key),
        Content("5,000-digit integer literal", "refuse", _huge_int),
        Content("null record", "refuse", _record(None)),
        Content("list record", "refuse", _record([1, 2])),
        Content("repeated CSV header column", "refuse", _repeated_header),
    ]


@dataclass
class Command:
    """A command that reads one file: its formats, clean records, text field, and how to run it on a path."""

    name: str
    formats: tuple[str, ...]
    records: list[dict[str, Any]]
    text_field: str
    argv: Callable[[Path, Path], list[str]] | None = None  # (input, fresh output folder) → CLI argv
    call: Callable[[Path], Any] | None = None  # a library call instead of the CLI
    expected: Callable[[list[dict[str, Any]]], Any] | None = None  # the intended records' result, independently
    layout: Callable[[Path, bytes], Path] | None = None  # write the bytes where the command reads them
    ids: bool = True  # its records may carry an ``id`` (the duplicate-id content adds one)


def _score_expected(metric: str, key: str) -> Callable[[list[dict[str, Any]]], Any]:
    def expected(records: list[dict[str, Any]]) -> Any:
        import dialeval

        out = dialeval.load(metric).compute(predictions=[r[key] for r in records])
        return {k: v for k, v in out.items() if isinstance(v, float)}

    return expected


def commands(data: Path, models: dict[str, str]) -> list[Command]:
    responses = [{"id": f"r{i}", "response": t} for i, t in enumerate(("i like tea", "i like coffee a lot", "no thanks",
                                                                           "sure thing"))]
    stories = [json.loads(line) for line in (SAMPLE / "raw" / "stories.jsonl").read_text(encoding="utf-8").splitlines()]
    spk = [json.loads(line) for line in (SAMPLE / "dialspk" / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    fed = json.loads((data / "fed" / "fed_data.json").read_text(encoding="utf-8"))[:30]
    refs = [{"id": f"r{i}", "response": f"reference reply number {i} about {w}"}
            for i, w in enumerate(["tea", "rain", "maps"] * 8)]

    def in_folder(name: str) -> Callable[[Path, bytes], Path]:
        def layout(folder: Path, raw: bytes) -> Path:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(raw)
            return folder

        return layout

    def upload(path: Path) -> Any:
        from dialeval.ui.uploads import read_upload

        return read_upload(path).responses

    return [
        Command("score distinct_n", ("txt", "jsonl", "csv", "json"), responses, "response",
                argv=lambda p, o: ["score", "--metric", "distinct_n", "--input", str(p), "--json",
                                   *([] if p.suffix == ".txt" else ["--field", "response"])],
                expected=_score_expected("distinct_n", "response")),
        Command("demo upload", ("txt", "jsonl", "csv", "json"), responses, "response", call=upload,
                expected=lambda rs: [r["response"] for r in rs]),
        Command("fit-space --reference", ("txt", "jsonl", "csv"), refs, "response",
                argv=lambda p, o: ["fit-space", "--reference", str(p), "--encoder", models["encoder"], "--k", "2",
                                   "--out", str(o), *([] if p.suffix == ".txt" else ["--field", "response"])]),
        Command("dialspk-baseline --data", ("jsonl",), spk, "story",
                argv=lambda p, o: ["dialspk-baseline", "--data", str(p)]),
        Command("dialstory-make --input", ("jsonl",), stories, "story",
                argv=lambda p, o: ["datasets", "dialstory-make", "--input", str(p), "--out", str(o)]),
        Command("datasets export fed", ("json",), fed, "response", layout=in_folder("fed_data.json"), ids=False,
                argv=lambda p, o: ["datasets", "export", "fed", "--data-dir", str(p), "--out", str(o),
                                   "--cache-dir", str(o.parent / "cache")]),
    ]


def _classify_cli(rc: int, out: str, err: str) -> tuple[str, str]:
    lines = [line for line in err.splitlines() if line.strip()]
    if rc == 2 and len(lines) == 1 and "Traceback" not in err:
        return "one-line", lines[0][:150]
    if rc == 0:
        return "accepted", out[-200:]
    return "crash", f"rc={rc} {err[-150:]}"


def _score_result(stdout: str) -> Any:
    """The float results of ``score --json`` (one metric)."""
    try:
        (result,) = json.loads(stdout).values()
        return {k: v for k, v in result.items() if isinstance(v, float)}
    except (ValueError, TypeError, AttributeError):
        return None


def file_attempts(root: Path, data: Path, models: dict[str, str], runner: Runner) -> list[tuple[str, str, Callable]]:
    """Every command × format × hostile content (inputs written under ``root``)."""
    attempts = []
    for command in commands(data, models):
        for fmt in command.formats:
            for content in contents():
                raw = content.make(command.records, fmt, command.text_field)
                if raw is None or content.name == "duplicate ids" and not command.ids:
                    continue
                slug = f"{command.name.split()[0]}-{len(attempts)}"
                path = root / slug / f"input.{fmt}"
                path.parent.mkdir(parents=True)
                if command.layout is not None:
                    path = command.layout(root / slug / "data", raw)
                else:
                    path.write_bytes(raw)
                name = f"{command.name} .{fmt}: {content.name}"
                attempts.append((f"files: {command.name.split(' --')[0]}", name,
                                 lambda c=command, p=path, ct=content, o=root / slug / "out": _run(c, p, o, ct, runner)))
    return attempts


def _run(command: Command, path: Path, out_dir: Path, content: Content, runner: Runner) -> tuple[str, str]:
    if command.call is not None:
        try:
            got = command.call(path)
        except (ValueError, TypeError) as exc:
            return ("one-line" if "\n" not in str(exc) else "crash"), str(exc)[:150]
        except BaseException as exc:  # noqa: BLE001 - what we count
            return "crash", f"{type(exc).__name__}: {exc}"[:150]
        kind, stdout = "accepted", None
    else:
        rc, stdout, err = runner(command.argv(path, out_dir))
        kind, detail = _classify_cli(rc, stdout, err)
        if kind != "accepted":
            return kind, detail
        got = _score_result(stdout) if command.expected is not None else None
    if content.due == "refuse":
        return "silent", f"accepted: {str(got if got is not None else stdout)[:100]}"
    if command.expected is None:
        return _against_clean(command, path, out_dir, content, stdout, runner)
    want = command.expected(content.intended(command.records, command.text_field))
    return ("accepted", "the intended records' result") if got == want else ("silent", f"got {got}, want {want}")


def _outputs(out_dir: Path, stdout: str, path: Path) -> dict[str, bytes]:
    """What a builder produced (its stdout and every file under ``out_dir``), paths replaced by placeholders."""
    def clean(raw: bytes) -> bytes:
        for old, new in ((str(out_dir), "<OUT>"), (str(path), "<IN>"), (str(path.parent), "<IN-DIR>")):
            raw = raw.replace(old.encode(), new.encode())
        return raw

    if out_dir.is_file():  # an output file rather than a folder
        files = {"<out>": clean(out_dir.read_bytes())}
    else:
        files = {str(f.relative_to(out_dir)): clean(f.read_bytes()) for f in sorted(out_dir.rglob("*")) if f.is_file()}
    return {"<stdout>": clean((stdout or "").encode()), **files}


def _against_clean(command: Command, path: Path, out_dir: Path, content: Content, stdout: str,
                   runner: Runner) -> tuple[str, str]:
    """Run the builder on the intended records written cleanly beside the hostile file; the outputs must match."""
    got = _outputs(out_dir, stdout, path)
    records = content.intended(command.records, command.text_field)
    raw = render(records, path.suffix.lstrip(".") if command.layout is None else "json", command.text_field)
    base = out_dir.parent / "clean"
    clean_path = command.layout(base / "data", raw) if command.layout is not None else base / path.name
    if command.layout is None:
        base.mkdir(parents=True, exist_ok=True)
        clean_path.write_bytes(raw)
    rc, clean_stdout, err = runner(command.argv(clean_path, base / "out"))
    want = _outputs(base / "out", clean_stdout, clean_path)
    for done in (out_dir, base):
        shutil.rmtree(done, ignore_errors=True) if done.is_dir() else done.unlink(missing_ok=True)
    if rc != 0:
        return "unverified", f"accepted; the clean run failed ({err[-80:]})"
    differ = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    if not differ:
        return "accepted", f"outputs equal the clean file's ({len(want)} compared)"
    return "silent", f"outputs differ: {differ[:3]}"
