"""``dialeval leaderboard``: every metric that runs here × every dataset it fits (built-in, a dataset package's, or
the user's own files), with intervals, paired tests, clusters and a summary row."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from dialeval.io.files import first_missing, is_stdout, remove_created, resolve_output
from dialeval.io.validation import MAX_RESAMPLES, MIN_RESAMPLES, check_fraction, check_resamples


def add_data_options(p: argparse.ArgumentParser, *, several: bool = True) -> None:
    """``--data``, ``--field``, ``--quality``, ``--overall`` and ``--scores`` (shared with ``meta-eval``, which
    takes one ``--data`` file and one ``--scores`` file: ``several=False``)."""
    count = "repeatable" if several else "one file"
    p.add_argument("--data", action="append", default=None, metavar="FILE",
                   help=f"your own annotations: JSONL/CSV/Parquet in the record schema, or DSTC10 JSON ({count}; "
                        "see docs/own_annotations.md)")
    p.add_argument("--field", action="append", default=[], metavar="NAME=COLUMN",
                   help="map a column of --data onto id, context, response, reference, system or dialogue")
    p.add_argument("--quality", action="append", default=None, metavar="COL",
                   help="a quality column of --data (repeatable; default: every numeric column not otherwise used, "
                        "listed in the report's notes)")
    p.add_argument("--overall", default=None, metavar="COL", help="the quality the summary row uses")
    p.add_argument("--scores", action="append", default=[], metavar="NAME=FILE",
                   help="your own metric: per-item scores (JSONL/CSV with id and score), joined by id (DSTC10 JSON "
                        "items have id DIALOGUE_ID:POSITION)" + (" (repeatable)" if several else
                                                                  " (one file, in place of --metric)"))
    p.add_argument("--reference-copies", choices=("keep", "leave-out"), default="keep",
                   help="items of --data whose response equals their reference (e.g. a ground-truth system): keep "
                        "them (default; counted in the notes) or leave them out")


def register(sub: Any) -> None:
    p = sub.add_parser("leaderboard", help="every metric against human judgements, with intervals and paired tests")
    p.add_argument("--data-dir", default=None,
                   help="folder holding the built-in datasets' folders (diversity_eval/, fed/, … as in ../shared/data)")
    p.add_argument("--dataset", action="append", default=None,
                   help="built-in or plugin dataset (repeatable; default: every one, or none when --data is given)")
    p.add_argument("--metric", action="append", default=None,
                   help="metric or column:NAME (repeatable; default: every metric that fits a dataset and loads here); "
                        "none: no metric, only your --scores and column:NAME")
    p.add_argument("--metric-arg", action="append", default=[], metavar="METRIC:KEY=VALUE",
                   help="an option of one metric (repeatable), e.g. METRIC:n=[1,2]; METRIC names the metric, as "
                        "several run here (meta-eval, scoring one, also takes plain KEY=VALUE)")
    p.add_argument("--dtype", default=None, choices=["fp32", "bf16"],
                   help="precision of every metric with a dtype option (LM and encoder metrics; default fp32); bf16 "
                        "needs a GPU or a CPU with avx512_bf16 or AMX, and is cached apart from fp32")
    add_data_options(p)
    p.add_argument("--out", required=True, help="output folder (new, empty, or one an earlier run wrote: it resumes)")
    p.add_argument("--max-rows", action="append", default=[], metavar="DATASET=N",
                   help="score only the first N source rows of DATASET (e.g. dailydialog_plusplus=200 contexts)")
    p.add_argument("--resamples", type=int, default=1000,
                   help=f"bootstrap resamples (default 1000, from {MIN_RESAMPLES} to {MAX_RESAMPLES:,})")
    p.add_argument("--fraction", type=float, default=0.5, help="share of rows in each interval resample (default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(func=run)


def _max_rows(pairs: list[str]) -> dict[str, int]:
    out = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not raw.strip().isdigit():
            raise ValueError(f"--max-rows {pair!r} must look like DATASET=N, e.g. dailydialog_plusplus=200.")
        out[name] = int(raw)
    return out


def metric_args(pairs: list[str], default: str | None = None) -> dict[str, dict[str, Any]]:
    """``["m:n=[1,2]"]`` → ``{"m": {"n": [1, 2]}}``, in the order given; with ``default`` (meta-eval's one metric), a
    plain ``KEY=VALUE`` is an option of ``default``."""
    from dialeval.registry import parse_metric_args

    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        head, sep, value = pair.partition("=")
        metric, colon, key = head.rpartition(":")
        if not colon and default is not None:
            metric, key = default, head
        if not sep or not metric or not key:
            raise ValueError(f"--metric-arg {pair!r} must look like METRIC:KEY=VALUE, e.g. METRIC:n=[1,2].")
        out.setdefault(metric, {}).update(parse_metric_args([f"{key}={value}"]))
    return out


def _files_in(out: Path) -> set[Path] | None:
    """Every file and folder under ``out`` when it is an existing folder (what a failed run must not remove)."""
    return set(out.rglob("*")) if out.is_dir() and not out.is_symlink() else None


def _cached_new_scores(out: Path, before: set[Path] | None) -> bool:
    """Whether this run cached scores under ``out/cache`` (a rerun resumes from them, so they and the marker stay)."""
    cache = out / "cache"
    return cache.is_dir() and any(p.is_file() and p not in (before or set()) for p in cache.rglob("*"))


def _remove_new(out: Path, before: set[Path] | None) -> None:
    """Remove what this run wrote into an existing folder ``out``: the files and folders that were not there
    before it (its marker, its cache), deepest first; anything that was there stays."""
    if before is None or not out.is_dir():
        return
    for path in sorted(set(out.rglob("*")) - before, key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _rows_in(out: Path) -> set[tuple[str, str, str]]:
    """``(metric, dataset, config)`` of the rows an earlier run wrote to ``out/leaderboard.json`` (none if unreadable)."""
    try:
        rows = json.loads((out / "leaderboard.json").read_text(encoding="utf-8")).get("rows", [])
        return {(str(r["metric"]), str(r["dataset"]), str(r["config"])) for r in rows}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()


def replaced_note(out: str, earlier: set[tuple[str, str, str]], report: dict[str, Any]) -> str | None:
    """One line when this run's ``leaderboard.json`` no longer holds rows an earlier run wrote to the same ``--out``."""
    now = {(str(r["metric"]), str(r["dataset"]), str(r["config"])) for r in report["rows"]}
    gone = sorted(earlier - now)
    if not gone:
        return None
    metrics = " ".join(f"--metric {m}" for m in sorted({m for m, _, _ in gone} | {m for m, _, _ in now}))
    units = ", ".join(f"{m} on {d}/{c}" for m, d, c in gone)
    return (f"note: {out} held rows this run replaced ({units}); its files now show this run's rows only. To see "
            f"them together, run once with the datasets of both runs and {metrics} (scores already computed stay "
            f"cached in {out}/cache).")


def run(args: argparse.Namespace) -> int:
    from dialeval.meta.leaderboard import build
    from dialeval.meta.own_data import parse_mapping, parse_scores_options

    check_resamples(args.resamples)
    check_fraction(args.fraction)
    if is_stdout(args.out) or not str(args.out).strip():
        raise ValueError(f"--out {args.out!r}: the leaderboard writes a folder (leaderboard.json, .md, .png and its "
                         "cache), not standard output; give a folder path, e.g. --out leaderboard/.")
    out = resolve_output(args.out)  # once: `missing/../keep` is `keep`, and no `missing` is made on the way
    created = first_missing(out)
    before = _files_in(out)
    earlier = _rows_in(out)
    try:
        report = build(args.data_dir, out, datasets=args.dataset, metrics=args.metric,
                       max_rows=_max_rows(args.max_rows), n_resamples=args.resamples, fraction=args.fraction,
                       seed=args.seed, log=lambda line: print(line, file=sys.stderr), data=args.data,
                       fields=parse_mapping(args.field), qualities=args.quality, overall=args.overall,
                       scores=parse_scores_options(args.scores), metric_args=metric_args(args.metric_arg),
                       reference_copies=args.reference_copies, dtype=args.dtype)
    except OSError:  # a full disk (or a lost mount) mid-run: a folder this run created is not left half-written
        remove_created(created)  # only the folder this run made, by its resolved path
        _remove_new(out, before)
        raise
    except Exception:
        if not _cached_new_scores(out, before):  # nothing a rerun could resume from: leave no trace
            remove_created(created)
            _remove_new(out, before)
        raise
    print(f"{len(report['rows'])} rows, {len(report['pairs'])} paired tests, {report['wall_seconds']} s: "
          f"{args.out}/leaderboard.json, leaderboard.md, leaderboard.png")
    for s in report["skipped"]:
        print(f"skipped {s['metric']}: {s['reason']}")
    note = replaced_note(args.out, earlier, report)
    if note:
        print(f"dialeval leaderboard: {note}", file=sys.stderr)
    return 0
