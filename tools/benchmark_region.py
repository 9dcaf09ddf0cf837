"""The cards' ``benchmark-NAME`` regions and the benchmark pages' machine lines, from the committed result files
``docs/results/benchmarks/NAME.json``. A benchmark measured on several CPU kinds has one file per kind,
``NAME.KIND.json`` (KIND: :func:`dialeval.models.cpu.cpu_kind`'s name, which the scripts write by default), and a
card shows one region per file; every region names its CPU kind and the kinds this benchmark has no file for.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "docs" / "results" / "benchmarks"
#: the CPU kinds a result can be measured on (:data:`dialeval.models.cpu.KINDS` without ``other``), slowest first
CPU_KINDS = ("avx2", "avx512", "avx512-bf16", "amx")
_FLAG = re.compile(r"\b(?:avx2|avx512f|avx512_bf16|amx_bf16|amx_tile)\b")


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def machine_line(meta: dict[str, Any]) -> str:
    """One sentence saying what a measurement ran on (any of cpu, cores, threads, load, note)."""
    m = meta.get("machine", {})
    if isinstance(m, str):  # a script that writes its machine as one sentence
        load = meta.get("load")
        if load and "load average" in m:  # the sentence holds the load at the start; the file's is at the end
            load = "at the end " + re.sub(r"\s*\([^)]*at the end\)", "", str(load))
        return (m + (f"; GEMM peak {meta['gemm_peak_gflops']:.0f} GFLOP/s" if meta.get("gemm_peak_gflops") else "")
                + (f"; load average {load}" if load else ""))
    parts = [m.get("cpu"), f"{m['cores']} cores" if m.get("cores") and "core" not in str(m.get("cpu")) else None,
             f"{meta['threads']} threads" if meta.get("threads") else None,
             f"load average {meta['load']}" if meta.get("load") else None]
    flags = m.get("flags")
    if flags:
        parts.insert(1, "CPU flags: " + ", ".join(flags))
    return "; ".join(p for p in parts if p)


def cpu_kind_of(res: dict[str, Any]) -> str | None:
    """The CPU kind a result file was measured on: its ``cpu_kind``, else the kind its machine line names, else
    the kind of the CPU flags it lists (:func:`dialeval.models.cpu.kind_from_flags`); ``None`` when it lists none."""
    if res.get("cpu_kind"):
        return str(res["cpu_kind"])
    machine = res.get("machine", "")
    text = machine if isinstance(machine, str) else " ".join(map(str, machine.get("flags", [])))
    named = re.search(r"CPU kind ([a-z0-9-]+)", text)
    if named:
        return named.group(1)
    flags = _FLAG.findall(text)
    if not flags:
        return None
    from dialeval.models.cpu import kind_from_flags

    return kind_from_flags(flags).name


def kinds_measured(base: str) -> list[str]:
    """The CPU kinds benchmark ``base`` has a result file for (``base.json`` or ``base.KIND.json``), slowest first."""
    paths = [BENCHMARKS / f"{base}.json", *BENCHMARKS.glob(f"{base}.*.json")]
    found = {cpu_kind_of(load_json(p)) for p in paths if p.exists()}
    return [k for k in CPU_KINDS if k in found]


def kinds_sentence(base: str) -> str:
    """Which CPU kinds benchmark ``base`` is measured on and which not, as one sentence."""
    have = kinds_measured(base)
    if not have:
        return "The CPU kind of this measurement is not recorded."
    missing = [k for k in CPU_KINDS if k not in have]
    text = "Measured on CPU kind" + ("s " if len(have) > 1 else " ") + ", ".join(have)
    return text + ("; not measured on " + ", ".join(missing) if missing else "") + "."


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def _long_date(iso: str) -> str:
    """``2026-12-03`` as ``3 December 2026`` (pages hold no ISO dates: tests/test_docs_history.py reads those as
    work-log entries)."""
    try:
        year, month, day = (int(p) for p in iso.split("-"))
        return f"{day} {_MONTHS[month - 1]} {year}"
    except (ValueError, IndexError):
        return iso


def _sentence(text: Any) -> str:
    text = " ".join(str(text).split())
    return text if text.endswith((".", "!", "?")) else text + "."


def _md_cell(x: Any) -> str:
    """A table cell: integers with thousands separators, floats to 3 significant digits (whole numbers from 100
    up), ``–`` for a missing value, ``|`` escaped."""
    if isinstance(x, bool) or isinstance(x, str):
        return " ".join(str(x).split()).replace("|", "\\|")
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float) and math.isfinite(x):
        return f"{x:.3g}" if abs(x) < 100 else f"{x:,.0f}"
    return "–"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _route_groups(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Rows split by the part of their ``route`` before the first ``": "`` (a precision or a mode, shared by
    the rows it heads), in order of first appearance; one untitled group when some route has no such part."""
    if not rows or not all(isinstance(r.get("route"), str) and ": " in r["route"] for r in rows):
        return [("", rows)]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        head, route = r["route"].split(": ", 1)
        groups.setdefault(head, []).append({**r, "route": route})
    return list(groups.items())


def _route_table(rows: list[dict[str, Any]]) -> list[str]:
    """A markdown table of whatever scalar fields the rows have (``seconds`` left out where a throughput
    column, ``…/s``, says the same); numeric columns right-aligned. One row is written as a two-column table,
    field by field."""
    keys = [k for k in dict.fromkeys(k for r in rows for k in r)
            if not any(isinstance(r.get(k), (dict, list)) for r in rows)]
    if any(k.endswith("/s") for k in keys):
        keys = [k for k in keys if k != "seconds"]
    if len(rows) == 1:
        (first, *rest) = keys
        return ([f"| {_md_cell(first)} | {_md_cell(rows[0][first])} |", "|---|---|"]
                + [f"| {_md_cell(k)} | {_md_cell(rows[0][k])} |" for k in rest])
    align = ["---:" if all(_is_number(r[k]) for r in rows if r.get(k) is not None) else "---" for k in keys]
    return (["| " + " | ".join(_md_cell(k) for k in keys) + " |", "|" + "|".join(align) + "|"]
            + ["| " + " | ".join(_md_cell(r.get(k)) for k in keys) + " |" for r in rows])


def _paragraph(res: dict[str, Any], path: Path, name: str) -> str:
    """The region's paragraph: title and CPU kind, summary, note, date, machine, and the command."""
    title = " ".join(str(res.get("title") or res.get("what") or name).split())
    kind = cpu_kind_of(res)
    text = f"**{title[:1].upper() + title[1:]}" + (f", CPU kind {kind}**" if kind else "**")
    text += " — " + _sentence(res["summary"]) if res.get("summary") else "."
    if res.get("note"):
        text += " " + _sentence(res["note"])
    ran = "Run" + (f" on {_long_date(str(res['date']))}" if res.get("date") else "")
    machine = machine_line(res)
    text += f" {ran}" + (f" on {machine}" if machine else "") + "."
    where = path.relative_to(REPO).as_posix()
    if res.get("transcribed"):  # a script that prints its table: its numbers were copied into the file
        return text + (f" `{res.get('command', '?')}` prints these numbers; they are transcribed into `{where}`, "
                       "the file this table is generated from.")
    on_kind = " on a CPU of this kind" if "." in name else ""
    return text + f" `{res.get('command', '?')}` rewrites `{where}`{on_kind}, the file this table is generated from."


def benchmark_region(name: str) -> str:
    """A card's ``benchmark-NAME`` region, from ``docs/results/benchmarks/NAME.json`` (NAME may end in ``.KIND``):
    one paragraph (title and CPU kind, summary, note, the date, the machine and its load, the command that rewrites
    the file or prints the numbers transcribed into it), which CPU kinds the benchmark is measured on and which not,
    then a table of its routes, one per route group (see :func:`_route_groups`). Fields a file lacks are left out."""
    path = BENCHMARKS / f"{name}.json"
    res = load_json(path)
    rows = res.get("rows") if isinstance(res.get("rows"), list) else res.get("units", [])
    rows = [r for r in rows or [] if isinstance(r, dict)]
    out = ["", _paragraph(res, path, name), "", kinds_sentence(name.split(".", 1)[0]), ""]
    for head, group in _route_groups(rows):
        if head:
            out += [f"Routes, {head}:", ""]
        out += _route_table(group) + [""]
    return "\n".join(out)
