"""Every unit of the default leaderboard on one device, per precision: rows per second on a fixed row sample and
the score differences between the precisions (for ``benchmarks/gpu_check.sh`` on a lent GPU).

    python benchmarks/leaderboard_gpu.py --data-dir ../shared/data --device cuda --dtypes fp32,bf16 --sample 200
    python benchmarks/leaderboard_gpu.py --device cpu --dtypes fp32 --sample 4 --budget-s 60   # a dry run

Metrics with ``device`` and ``dtype`` options run once per precision on ``--device`` (after a warm-up on a few
rows, so model loads and kernel compilation stay out of the time); the others (lexical, reference-based, stored
columns) run once, on the CPU. Units are taken model metrics first (the LMs first of them); once ``--budget-s`` has passed the rest are
listed as not run. Prints a table and one ``json:`` line with every number.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import offline, table  # noqa: E402

offline()


LM_METRICS = ("full_followup", "llm_judge", "quality_vendi")  #: run first: the units a GPU changes most


def device_metric(metric: str) -> bool:
    """Whether ``metric`` takes ``device`` and ``dtype`` options (a model metric)."""
    from dialeval import registry

    found = None if metric.startswith("column:") else registry.meta_row(metric)
    names = {o.name for o in found[0].options} if found else set()
    return {"device", "dtype"} <= names


def timed(unit: tuple[str, str, str], rows: list[dict[str, Any]], options: dict[str, Any] | None) -> dict[str, Any]:
    from dialeval.meta.evaluation import score_rows

    score_rows(*unit, rows[:4], metric_args=options, round_decimals=None)
    sync()
    start = time.perf_counter()
    scores = score_rows(*unit, rows, metric_args=options, round_decimals=None)["scores"]
    sync()
    seconds = time.perf_counter() - start
    return {"s": seconds, "rows_per_s": len(rows) / max(seconds, 1e-9), "scores": scores}


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def differences(a: list[float], b: list[float]) -> dict[str, float]:
    """Max absolute and relative difference, and the share of scores equal at 3 decimals."""
    pairs = [(x, y) for x, y in zip(a, b) if x == x and y == y]
    return {"max_abs": max((abs(x - y) for x, y in pairs), default=0.0),
            "max_rel": max((abs(x - y) / max(abs(x), abs(y), 1e-12) for x, y in pairs), default=0.0),
            "equal_3dp": sum(round(x, 3) == round(y, 3) for x, y in pairs) / max(len(pairs), 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--sample", type=int, default=200, help="rows per unit (its first N)")
    ap.add_argument("--budget-s", type=float, default=240.0, help="start no unit after this many seconds")
    args = ap.parse_args()
    import torch

    from dialeval.datasets import DATA_FOLDERS
    from dialeval.meta.evaluation import load_rows
    from dialeval.meta.leaderboard import plan

    where = (torch.cuda.get_device_name(0) if args.device.startswith("cuda") else
             f"CPU, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}")
    print(f"device: {where}; sample {args.sample} rows per unit; precisions {args.dtypes}", flush=True)
    dtypes = args.dtypes.split(",")
    tasks, skipped = plan()
    tasks.sort(key=lambda t: (not device_metric(t[0]), t[0] not in LM_METRICS, t[0], t[1], t[2]))
    rows_of: dict[tuple[str, str], list[dict[str, Any]]] = {}
    start, out, table_rows = time.perf_counter(), [], []
    for unit in tasks:
        entry: dict[str, Any] = {"metric": unit[0], "dataset": unit[1], "config": unit[2]}
        out.append(entry)
        if time.perf_counter() - start > args.budget_s:
            entry["not_run"] = "budget"
            continue
        if unit[1:] not in rows_of:
            rows_of[unit[1:]] = load_rows(unit[1], unit[2], data_dir=Path(args.data_dir) / DATA_FOLDERS[unit[1]])[:args.sample]
        rows = rows_of[unit[1:]]
        entry["rows"] = len(rows)
        runs = ({d: timed(unit, rows, {"device": args.device, "dtype": d}) for d in dtypes} if device_metric(unit[0])
                else {"cpu": timed(unit, rows, None)})
        entry["runs"] = {k: {"s": v["s"], "rows_per_s": v["rows_per_s"]} for k, v in runs.items()}
        if len(runs) > 1:
            first, *others = runs
            entry["vs_" + first] = {k: differences(runs[first]["scores"], runs[k]["scores"]) for k in others}
        speeds = " / ".join(f"{k} {v['rows_per_s']:.1f}" for k, v in runs.items())
        diff = entry.get("vs_" + next(iter(runs)), {})
        table_rows.append([unit[0], f"{unit[1]}/{unit[2]}", len(rows), speeds,
                           " ".join(f"{d['max_abs']:.1e} ({d['equal_3dp']:.0%} =3dp)" for d in diff.values()) or "-"])
        print(f"  {' / '.join(unit)}: {speeds} rows/s", flush=True)
    print(table(["metric", "unit", "rows", "rows/s per precision", f"max |Δ| vs {dtypes[0]} (equal at 3 dp)"],
                table_rows))
    not_run = [e for e in out if e.get("not_run")]
    print(f"{len(out) - len(not_run)}/{len(out)} units run in {time.perf_counter() - start:.0f} s"
          + (f"; not run (budget): {len(not_run)}" if not_run else "")
          + (f"; skipped by the plan: {[s['metric'] for s in skipped]}" if skipped else ""))
    print("json: " + json.dumps({"device": where, "sample": args.sample, "dtypes": dtypes, "units": out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
