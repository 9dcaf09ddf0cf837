"""The rows a metric scores: a dataset's stored rows (a built-in builder's, or a plugin's ``loader``) through its
protocol (:func:`protocol_rows`), and what the protocol leaves out of them, counted (:func:`left_out_rows`)."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from dialeval.meta import sources
from dialeval.meta.sources import DatasetDeclaration


def protocol_rows(dataset: str | DatasetDeclaration, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a metric scores: a pairs dataset's source rows become one row per (context, response), labelled
    as declared; a rated dataset's as :func:`quality_protocol_rows` says (unless it keeps its rows); set rows as
    they are."""
    decl = sources.get(dataset)
    rows = _split_left_out_systems(decl, rows)[0]
    if decl.protocol == "rated":
        return rows if decl.keep_rows else quality_protocol_rows(rows)
    if decl.protocol == "sets":
        return rows
    return [{"id": r["id"], "context": list(r["context"]), "response": text, "label": label}
            for r in rows for field, label in decl.pairs for text in r[field]]


def quality_protocol_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A rated dataset's rows as a metric scores them: empty turns (a user who sent nothing) left out of the
    context, a turn-level row whose rated response is empty left out (there is no text to score; see
    :func:`left_out_rows`), and every reference of a row that has several (``references``) as its ``reference``."""
    out = []
    for r in rows:
        if "response" in r and not (r["response"] or "").strip():
            continue
        keep = [i for i, t in enumerate(r["context"]) if t.strip()]
        speakers = r.get("speakers") or []
        row = {**r, "context": [r["context"][i] for i in keep],
               "speakers": [speakers[i] for i in keep] if len(speakers) == len(r["context"]) else speakers}
        if len(r.get("references") or ()) > 1:
            row["reference"] = list(r["references"])
        out.append(row)
    return out


def _split_left_out_systems(decl: DatasetDeclaration, rows: list[dict[str, Any]]
                            ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``(rows kept, {left-out system: rows})``: the dataset's protocol leaves out its ``left_out_systems``."""
    kept: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for r in rows:
        system = r.get(decl.system_field or "system")
        if system in decl.left_out_systems:
            dropped[system] += 1
        else:
            kept.append(r)
    return kept, dict(dropped)


def left_out_rows(dataset: str | DatasetDeclaration, rows: list[dict[str, Any]]) -> dict[str, int]:
    """What :func:`protocol_rows` leaves out of ``rows`` and why (``{reason: count}``, empty when nothing)."""
    decl = sources.get(dataset)
    kept, dropped = _split_left_out_systems(decl, rows)
    out = {f"system {system!r}: {decl.left_out_systems[system]}": count for system, count in dropped.items()}
    if decl.protocol != "rated" or decl.keep_rows:
        return out
    empty = sum(1 for r in kept if "response" in r and not (r["response"] or "").strip())
    return {**out, "empty response": empty} if empty else out


def raw_rows(dataset: str | DatasetDeclaration, config: str, *, data_dir: str | os.PathLike | None = None,
             cache_dir: str | None = None) -> list[dict[str, Any]]:
    """The stored rows of ``dataset``/``config`` (its test split, the first split when it has none), before the
    protocol: a built-in builder's, or a plugin's ``loader``."""
    decl = sources.get(dataset)
    decl.level(config)
    loader = sources.loader_function(decl)
    if loader is not None:
        return list(loader(config, data_dir))
    from dialeval import datasets as dd

    ds = dd.load(decl.builder or decl.name, config, data_dir=data_dir, cache_dir=cache_dir)
    split = "test" if "test" in ds else next(iter(ds))
    return ds[split].to_list()


def load_rows(dataset: str | DatasetDeclaration, config: str, *, data_dir: str | os.PathLike | None = None,
              cache_dir: str | None = None) -> list[dict[str, Any]]:
    """The scored rows of ``dataset``/``config`` (:func:`raw_rows` through :func:`protocol_rows`)."""
    return protocol_rows(dataset, raw_rows(dataset, config, data_dir=data_dir, cache_dir=cache_dir))
