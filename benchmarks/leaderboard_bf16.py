"""fp32 against bf16 on the published leaderboard: each unit's scoring time in both precisions and how far each of
its correlations moves, set against that correlation's bootstrap interval.

    python benchmarks/leaderboard_bf16.py --data-dir ../shared/data --threads 2 --repeats 2
    python benchmarks/leaderboard_bf16.py --data-dir ../shared/data --dataset fed --metric full_followup --max-rows fed=20 --repeats 1

The board is the one ``docs/results/leaderboard.meta.json`` records (its ``--dataset`` and ``--metric`` flags;
``--dataset``/``--metric``/``--max-rows`` narrow it for a quick slice). It runs through
:func:`dialeval.meta.leaderboard.build` twice, ``dtype=None`` (fp32, the default) and ``dtype="bf16"``
(``dialeval leaderboard --dtype bf16``), into fresh folders this script makes under the system's temporary folder
(so no cached score is reused) and removes at the end, at the same thread count, seed and resamples. The two runs
are interleaved one metric × dataset at a time (the order alternating), so a change of the machine's load hits both
alike, and the whole board runs ``--repeats`` times (default 2), each unit keeping its fastest time in each
precision (the two minima may come from different rounds); each metric is first run once per precision on a few
rows, so model loads and graph exports stay out of the timings; the in-process embedding memo the encoder metrics share is emptied before each build, so no unit's time
depends on what the run before it embedded. A unit's time is the leaderboard's own ``seconds`` (its scoring,
without the statistics).

Per unit (metric × dataset × config): fp32 seconds, bf16 seconds and their ratio. Metrics without a ``dtype``
option (lexical metrics, stored columns) run the same route twice: their times are kept apart, with no speed-up,
and their correlations are checked like the others'. Per correlation row (every statistic the board writes, item
and system level): both values, |Δ|, the fp32 interval's width, and whether |Δ| < 0.005 and |Δ| < width / 10.

Writes ``docs/results/benchmarks/leaderboard_bf16.<CPU kind>.json`` for the whole board (``--json PATH``; a slice writes none
unless given one). Refused in one line on a CPU without native bf16 (neither avx512_bf16 nor AMX).
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import offline, result_file, table, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BOARD_META = REPO / "docs" / "results" / "leaderboard.meta.json"
LM_METRICS = ("full_followup", "llm_judge")  #: the language-model units the speed criterion is about
ABS_LIMIT = 0.005  #: a correlation may move by less than this …
WIDTH_SHARE = 0.1  #: … and by less than this share of its fp32 interval's width
TARGET_SPEEDUP = 1.5  #: bf16 over fp32 for every LM unit
WARM_ROWS = 4  #: rows each metric scores once per precision before the timed runs
SAME = "same route"


# ------------------------------------------------------------------------------------------- pure comparison
def unit_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["metric"], row["dataset"], row["config"]


def row_key(row: dict[str, Any]) -> tuple[str, ...]:
    """A board row's identity: its unit, target, level (``item`` where the board names none) and statistic."""
    return (*unit_key(row), row["target"], row.get("level") or "item", row["statistic"])


def fastest(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The first round's board rows, each unit's ``seconds`` the least of its rounds'. The rounds must hold the
    same rows with the same values (scoring is deterministic); a round that differs is refused."""
    def identity(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:  # NaN (undefined) equals NaN here
        return [(row_key(r), r.get("value") if _finite(r.get("value")) else None) for r in rows]

    first = rounds[0]
    for other in rounds[1:]:
        if identity(other) != identity(first):
            moved = next((row_key(a) for a, b in zip(first, other) if identity([a]) != identity([b])), "a row")
            raise ValueError(f"two rounds of the board gave different rows or values (first at {moved}); scoring is "
                             "not deterministic here, so the timings cannot be merged: rerun with --repeats 1.")
    least: dict[tuple[str, str, str], float] = {}
    for row in (r for rows in rounds for r in rows):
        if _finite(row.get("seconds")):
            key = unit_key(row)
            least[key] = min(least.get(key, math.inf), row["seconds"])
    return [{**r, "seconds": least.get(unit_key(r), r.get("seconds"))} for r in first]


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def compare_correlations(fp32: list[dict[str, Any]], bf16: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per board row of either run: both values, |Δ|, the fp32 interval's width and the two criteria
    (|Δ| < :data:`ABS_LIMIT`, |Δ| < :data:`WIDTH_SHARE` × width). A value that does not move (|Δ| = 0) meets
    both, also where the interval has no width; a row undefined (NaN) in both runs meets both with |Δ| ``None``;
    a row defined in one run only, or missing from one, meets neither."""
    a, b = {row_key(r): r for r in fp32}, {row_key(r): r for r in bf16}
    out = []
    for key in list(dict.fromkeys([*a, *b])):
        ra, rb = a.get(key, {}), b.get(key, {})
        va, vb = ra.get("value"), rb.get("value")
        lo, hi = ra.get("ci_low"), ra.get("ci_high")
        width = hi - lo if _finite(lo) and _finite(hi) else None
        delta = abs(vb - va) if _finite(va) and _finite(vb) else None
        undefined = bool(ra) and bool(rb) and not _finite(va) and not _finite(vb)
        small = undefined or (delta is not None and delta < ABS_LIMIT)
        narrow = undefined or (delta is not None and (delta == 0 or (width is not None and delta < WIDTH_SHARE * width)))
        out.append({"metric": key[0], "dataset": key[1], "config": key[2], "target": key[3], "level": key[4],
                    "statistic": key[5], "fp32": va, "bf16": vb, "abs_delta": delta, "fp32_ci_width": width,
                    f"under {ABS_LIMIT}": small, "under width/10": narrow, "meets both": small and narrow})
    return out


def compare_units(fp32: list[dict[str, Any]], bf16: list[dict[str, Any]], with_dtype: Iterable[str],
                  correlations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per unit: its rows (the board rows' ``unit_rows``), kind (``LM``, ``encoder`` or :data:`SAME` for a metric without a ``dtype``
    option), both times (the board's ``seconds``), fp32 / bf16 (``None`` for :data:`SAME` and for a bf16 time of
    0) and its correlations: how many meet both criteria, the largest |Δ| and the largest |Δ| / width."""
    dtype_metrics = set(with_dtype)
    a, b = {unit_key(r): r for r in fp32}, {unit_key(r): r for r in bf16}
    out = []
    for key in list(dict.fromkeys([*a, *b])):
        metric, dataset, config = key
        kind = "LM" if metric in LM_METRICS else "encoder" if metric in dtype_metrics else SAME
        sa, sb = a.get(key, {}).get("seconds"), b.get(key, {}).get("seconds")
        speedup = sa / sb if kind != SAME and _finite(sa) and _finite(sb) and sb > 0 else None
        mine = [c for c in correlations if (c["metric"], c["dataset"], c["config"]) == key]
        deltas = [c["abs_delta"] for c in mine if c["abs_delta"] is not None]
        shares = [c["abs_delta"] / c["fp32_ci_width"] for c in mine
                  if c["abs_delta"] is not None and c["fp32_ci_width"]]
        out.append({"metric": metric, "unit": f"{dataset}/{config}", "rows": a.get(key, b.get(key, {})).get("unit_rows"),
                    "kind": kind, "fp32 s": sa, "bf16 s": sb, "speed-up": speedup,
                    "correlations within": f"{sum(c['meets both'] for c in mine)} of {len(mine)}",
                    "max abs Δ": max(deltas, default=None), "max abs Δ / width": max(shares, default=None)})
    return out


def _ratio(units: list[dict[str, Any]]) -> float | None:
    fp32, bf16 = sum(u["fp32 s"] or 0 for u in units), sum(u["bf16 s"] or 0 for u in units)
    return fp32 / bf16 if units and bf16 > 0 else None


def by_metric(correlations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per metric whose correlations moved at all (bf16 reaches only metrics with a ``dtype`` option): how many of
    its correlations are within both limits, of how many, and its largest |Δ|."""
    moved = {c["metric"] for c in correlations if c["abs_delta"]}
    out: dict[str, dict[str, Any]] = {}
    for c in correlations:
        if c["metric"] in moved:
            m = out.setdefault(c["metric"], {"within": 0, "of": 0, "worst_abs_delta": 0.0})
            m["within"], m["of"] = m["within"] + bool(c["meets both"]), m["of"] + 1
            m["worst_abs_delta"] = max(m["worst_abs_delta"], c["abs_delta"] or 0.0)
    return out


def summarize(units: list[dict[str, Any]], correlations: list[dict[str, Any]]) -> dict[str, Any]:
    """The LM units' speed-up overall (Σ fp32 s / Σ bf16 s) and per unit (the slowest), the encoder units'
    overall, how many correlations meet both criteria, the worst one (the largest |Δ| over the nearer limit)
    and whether the targets are met: every LM unit ≥ :data:`TARGET_SPEEDUP`× and every correlation within."""
    lm = [u for u in units if u["kind"] == "LM"]
    encoder = [u for u in units if u["kind"] == "encoder"]
    slowest = min((u for u in lm if u["speed-up"] is not None), key=lambda u: u["speed-up"], default=None)
    moved = [c for c in correlations if c["abs_delta"] is not None]

    def badness(c: dict[str, Any]) -> float:  # |Δ| over the nearer of its two limits (above 1: past it)
        delta, width = c["abs_delta"], c["fp32_ci_width"]
        tenth = delta / (WIDTH_SHARE * width) if width else (math.inf if delta else 0.0)
        return max(delta / ABS_LIMIT, tenth)

    worst = max(moved, key=badness, default=None)
    met = sum(c["meets both"] for c in correlations)
    item = [c for c in correlations if c["level"] == "item"]
    shares = [c["abs_delta"] / c["fp32_ci_width"] if c["fp32_ci_width"] else math.inf
              for c in moved if c["abs_delta"]]
    return {"lm_speedup": _ratio(lm), "lm_slowest_unit": slowest and {k: slowest[k] for k in ("metric", "unit", "speed-up")},
            "encoder_speedup": _ratio(encoder), "correlations": len(correlations), "correlations_within": met,
            "item_level": {"within": sum(c["meets both"] for c in item), "of": len(item)}, "by_metric": by_metric(correlations),
            "within_width_count": sum(bool(c["under width/10"]) for c in correlations),
            "largest_width_share": max(shares, default=None),
            "worst_correlation": worst,
            "speed_target_met": bool(lm) and all(u["speed-up"] is not None and u["speed-up"] >= TARGET_SPEEDUP for u in lm),
            "correlation_target_met": met == len(correlations)}


def summary_line(s: dict[str, Any]) -> str:
    """The summary in one sentence (the result file's ``summary``)."""
    def x(v: float | None) -> str:
        return "–" if v is None else f"{v:.2f}×"

    w = s["worst_correlation"]
    worst = ("none moved" if w is None else
             f"the worst is {w['metric']} on {w['dataset']}/{w['config']} ({w['statistic']}, {w['level']} level, "
             f"{w['target']}): |Δ| {w['abs_delta']:.4f} against an interval {w['fp32_ci_width']:.3f} wide"
             if w["fp32_ci_width"] is not None else f"the worst is {w['metric']}: |Δ| {w['abs_delta']:.4f}")
    slow = s["lm_slowest_unit"]
    return (f"LM units (FULL, the LLM judge) {x(s['lm_speedup'])} faster in bf16 overall"
            + (f", slowest unit {slow['metric']} on {slow['unit']} {x(slow['speed-up'])}" if slow else "")
            + f"; encoder units {x(s['encoder_speedup'])}; {s['correlations_within']} of {s['correlations']} "
            f"correlations move by less than {ABS_LIMIT} and less than a tenth of their interval's width "
            f"({s['item_level']['within']} of {s['item_level']['of']} at item level; "
            + ", ".join(f"{name} {m['within']} of {m['of']}" for name, m in s["by_metric"].items())
            + f"); {s['within_width_count']} of {s['correlations']} move by less than a tenth of their interval's "
            "width" + (f" (the largest move is {s['largest_width_share']:.3f} of its interval's width)"
                       if s["largest_width_share"] is not None else "")
            + f"; {worst}")


# ------------------------------------------------------------------------------------------------ the runs
def board_selection(meta_path: Path = BOARD_META) -> tuple[list[str], list[str]]:
    """The ``--dataset`` and ``--metric`` values of the published leaderboard's command."""
    import json

    words = shlex.split(json.loads(meta_path.read_text(encoding="utf-8"))["command"])
    pick = lambda flag: [words[i + 1] for i, w in enumerate(words[:-1]) if w == flag]  # noqa: E731
    return pick("--dataset"), pick("--metric")


def warm_up(tasks: list[tuple[str, str, str]], options: dict[str, dict[str, Any]], root: Path) -> None:
    """Each metric with a ``dtype`` option once per precision on :data:`WARM_ROWS` rows of its first unit."""
    from dialeval.datasets import DATA_FOLDERS
    from dialeval.meta.evaluation import load_rows, score_rows

    seen: set[str] = set()
    for metric, dataset, config in tasks:
        if metric in options and metric not in seen:
            seen.add(metric)
            rows = load_rows(dataset, config, data_dir=root / DATA_FOLDERS[dataset])[:WARM_ROWS]
            for opts in (None, options[metric]):
                score_rows(metric, dataset, config, rows, opts, round_decimals=None)


def run_pairs(pairs: list[tuple[str, str]], root: Path, work: Path, args: argparse.Namespace,
              max_rows: dict[str, int]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, float], list[float]]:
    """Every (metric, dataset) through ``build`` in fp32 and bf16, alternating which goes first, ``--repeats``
    times; returns each precision's board rows (:func:`fastest`), its wall seconds (scoring and statistics, all
    rounds) and the 1-minute load before each build."""
    rounds: dict[str, list[list[dict[str, Any]]]] = {"fp32": [], "bf16": []}
    wall = {"fp32": 0.0, "bf16": 0.0}
    loads: list[float] = []
    for repeat in range(args.repeats):
        rows: dict[str, list[dict[str, Any]]] = {"fp32": [], "bf16": []}
        _board_round(pairs, root, work / f"round{repeat}", args, max_rows, repeat, (rows, wall, loads))
        for dtype in rows:
            rounds[dtype].append(rows[dtype])
    loads.append(os.getloadavg()[0])
    return {dtype: fastest(found) for dtype, found in rounds.items()}, wall, loads


def _board_round(pairs: list[tuple[str, str]], root: Path, work: Path, args: argparse.Namespace,
                 max_rows: dict[str, int], repeat: int, into: tuple[dict[str, list], dict[str, float], list[float]]
                 ) -> None:
    """One round of :func:`run_pairs`: every pair in both precisions, the order alternating (and flipped on odd
    rounds), rows, wall seconds and loads added to ``into``."""
    from dialeval.meta.leaderboard import build
    from dialeval.similarity.kernels import _EMBEDDINGS

    rows, wall, loads = into
    for i, (metric, dataset) in enumerate(pairs):
        for dtype in ("fp32", "bf16") if (i + repeat) % 2 == 0 else ("bf16", "fp32"):
            loads.append(os.getloadavg()[0])
            _EMBEDDINGS.clear()  # each build embeds its own texts: no unit times the other precision's memo
            out = work / dtype / f"{metric.replace(':', '-')}__{dataset}"
            start = time.perf_counter()
            report = build(root, out, datasets=[dataset], metrics=[metric], max_rows=max_rows or None,
                           n_resamples=args.resamples, seed=args.seed, log=lambda _line: None,
                           dtype=None if dtype == "fp32" else "bf16")
            wall[dtype] += time.perf_counter() - start
            sizes = {key: info["rows"] for key, info in report["datasets"].items()}
            rows[dtype] += [{**r, "unit_rows": sizes.get(f"{r['dataset']}/{r['config']}")} for r in report["rows"]]
            secs = sorted({r['seconds'] for r in report['rows'] if r.get('seconds') is not None})
            print(f"  round {repeat + 1}: {metric} / {dataset} {dtype}: {', '.join(f'{s:.2f}' for s in secs) or '–'} "
                  f"s scoring, {time.perf_counter() - start:.1f} s in all", flush=True)


# ------------------------------------------------------------------------------------------------- report
def print_tables(units: list[dict[str, Any]], correlations: list[dict[str, Any]]) -> None:
    """The per-unit table (precision-dependent units, then the same-route ones) and the rows that miss."""
    def cell(v: Any, digits: int = 3) -> str:
        return "–" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)

    keys = ["metric", "unit", "rows", "kind", "fp32 s", "bf16 s", "speed-up", "correlations within", "max abs Δ",
            "max abs Δ / width"]
    print("\n" + table(keys, [[cell(u[k], 4 if k.startswith("max") else 2) for k in keys] for u in units]))
    missed = [c for c in correlations if not c["meets both"]]
    if missed:
        keys = ["metric", "dataset", "config", "target", "level", "statistic", "fp32", "bf16", "abs_delta",
                "fp32_ci_width"]
        print(f"\n{len(missed)} correlation(s) outside the limits:")
        print(table(keys, [[cell(c[k], 4) for k in keys] for c in missed]))


def signatures(rows: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, str]]:
    """Each unit's metric signature in both runs (its dtype and backend: the route that ran)."""
    out: dict[str, dict[str, str]] = {}
    for dtype, found in rows.items():
        for r in found:
            out.setdefault(f"{r['metric']} {r['dataset']}/{r['config']}", {})[dtype] = r.get("signature")
    return out


def command_line(args: argparse.Namespace) -> str:
    extra = [f"--dataset {d}" for d in args.dataset or []] + [f"--metric {m}" for m in args.metric or []]
    extra += [f"--max-rows {m}" for m in args.max_rows]
    if args.resamples != 1000 or args.seed != 0:
        extra += [f"--resamples {args.resamples}", f"--seed {args.seed}"]
    return " ".join(["python benchmarks/leaderboard_bf16.py --data-dir ../shared/data", f"--threads {args.threads}",
                     f"--repeats {args.repeats}", *extra])


def parse_args(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dataset", action="append", help="only these datasets of the board (repeatable)")
    ap.add_argument("--metric", action="append", help="only these metrics of the board (repeatable)")
    ap.add_argument("--max-rows", action="append", default=[], metavar="DATASET=N",
                    help="score only the first N rows of DATASET (a quick slice)")
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (the board's: 1000)")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed (the board's: 0)")
    ap.add_argument("--repeats", type=int, default=2, help="rounds of the whole board; each unit keeps its fastest "
                    "time (default 2)")
    ap.add_argument("--json", default=None, help="result file (default: docs/results/benchmarks/leaderboard_bf16.<CPU kind>.json "
                    "for the whole board, none for a slice; - for none)")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.repeats < 1:
        ap.error("--threads and --repeats must be ≥ 1.")
    return ap, args


def select(ap: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[str], list[str], dict[str, int],
                                                                       list[tuple[str, str, str]]]:
    """The board's datasets and metrics as narrowed by the flags, ``--max-rows`` and the units to score."""
    from dialeval.cli.leaderboard import _max_rows
    from dialeval.meta.leaderboard import plan

    datasets, metrics = board_selection()
    datasets = [d for d in datasets if not args.dataset or d in args.dataset]
    metrics = [m for m in metrics if not args.metric or m in args.metric]
    if not Path(args.data_dir).expanduser().is_dir() or not datasets or not metrics:
        ap.error(f"--data-dir {args.data_dir!r} must be a folder, and --dataset/--metric must name some of the board's.")
    try:
        return datasets, metrics, _max_rows(args.max_rows), plan(datasets, metrics)[0]
    except ValueError as exc:
        ap.error(str(exc))


def publish(path: str, args: argparse.Namespace, found: dict[str, Any]) -> None:
    """Write the result file: the precision-dependent units as its rows, everything else beside them."""
    units, summary, loads = found["units"], found["summary"], found["loads"]
    write_result(path, script="benchmarks/leaderboard_bf16.py", title="the leaderboard in bf16 against fp32",
                 command=command_line(args), threads=args.threads, summary=found["line"],
                 rows=[u for u in units if u["kind"] != SAME],
                 machine_text=(f"{os.cpu_count()} CPUs shared with other jobs (load average {found['load_start']} at "
                               f"the start; {found['load_text']} during the run); torch threads {args.threads}; fp32 "
                               "and bf16 interleaved one metric and dataset at a time, each unit's fastest of "
                               f"{args.repeats} rounds"),
                 note=(f"Every unit of the board scored in fp32 and in bf16 (`dialeval leaderboard --dtype bf16`), "
                       f"fresh caches (the embedding memo emptied before each metric), seed {args.seed}, {args.resamples} resamples; seconds are each unit's scoring; "
                       "|Δ| is a correlation's move, width its fp32 95 % interval's"),
                 board={"command": found["board_command"], "datasets": found["datasets"], "metrics": found["metrics"],
                        "max_rows": found["max_rows"]},
                 targets={"lm_speedup": TARGET_SPEEDUP, "abs_delta": ABS_LIMIT, "width_share": WIDTH_SHARE},
                 results={k: v for k, v in summary.items() if k != "worst_correlation"},
                 worst_correlation=summary["worst_correlation"], wall_seconds=found["wall"],
                 load_during={"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
                 same_route=[u for u in units if u["kind"] == SAME], signatures=signatures(found["rows"]),
                 correlations=found["correlations"])


def main(argv: list[str] | None = None) -> int:
    ap, args = parse_args(argv)
    offline()
    os.environ.setdefault("DIALEVAL_MODEL_CACHE_SIZE", "32")  # both precisions' models stay loaded throughout
    import json

    import torch

    from dialeval.meta.dtypes import with_dtype

    datasets, metrics, max_rows, tasks = select(ap, args)
    try:
        options = with_dtype(None, tasks, "bf16") or {}
    except ValueError as exc:  # a CPU without native bf16: the leaderboard's own one-line refusal
        print(f"leaderboard_bf16.py: {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    root = Path(args.data_dir).expanduser()
    load_start = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{len(tasks)} units, {os.cpu_count()} CPUs, torch threads {args.threads}, load average {load_start}",
          flush=True)
    started = time.perf_counter()
    warm_up(tasks, options, root)
    work = Path(tempfile.mkdtemp(prefix="dialeval-bf16-"))  # made here, removed here
    try:
        rows, wall, loads = run_pairs(list(dict.fromkeys((m, d) for m, d, _ in tasks)), root, work, args, max_rows)
    except ValueError as exc:  # rounds that disagree (fastest): nothing is written
        print(f"leaderboard_bf16.py: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    correlations = compare_correlations(rows["fp32"], rows["bf16"])
    units = compare_units(rows["fp32"], rows["bf16"], options, correlations)
    print_tables([u for u in units if u["kind"] != SAME] + [u for u in units if u["kind"] == SAME], correlations)
    summary = summarize(units, correlations)
    line, total = summary_line(summary), time.perf_counter() - started
    load_text = f"1-minute load {min(loads):.1f} to {max(loads):.1f}, median {statistics.median(loads):.1f}"
    print(f"\n{line}\nwall {total:.0f} s (fp32 builds {wall['fp32']:.0f} s, bf16 builds {wall['bf16']:.0f} s); "
          f"{load_text}", flush=True)
    whole = not (args.dataset or args.metric or args.max_rows)
    path = args.json or (str(result_file("leaderboard_bf16")) if whole else "-")
    if path != "-":
        board_command = json.loads(BOARD_META.read_text(encoding="utf-8"))["command"]
        publish(path, args, {"units": units, "summary": summary, "line": line, "loads": loads, "rows": rows,
                             "load_start": load_start, "load_text": load_text, "correlations": correlations,
                             "board_command": board_command, "datasets": datasets, "metrics": metrics,
                             "max_rows": max_rows, "wall": {"total": round(total, 1), "fp32": round(wall["fp32"], 1),
                                                            "bf16": round(wall["bf16"], 1)}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
