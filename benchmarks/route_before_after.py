"""One leaderboard unit's default route under two source trees, interleaved: time, ratio to the unit's compute
floor (:mod:`leaderboard_floor`) and the largest relative score difference between them.

    git archive REV src | tar -x -C /tmp/before
    python benchmarks/route_before_after.py --before /tmp/before/src --data-dir ../shared/data \\
        --unit full_followup/dailydialog_plusplus/default --unit llm_judge/dstc9_interactive/dialog --sample 20

Each round runs the route once per tree, in a fresh process per tree (``PYTHONPATH`` puts the tree first; a
warm-up on the first rows keeps model loads out of the time); rounds alternate which tree goes first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, matmul_peak, offline, table  # noqa: E402

offline()

WORKER = """
import json, sys, time, torch
torch.set_num_threads(int(sys.argv[5]))
from dialeval.datasets import DATA_FOLDERS
from dialeval.meta.evaluation import load_rows, score_rows
metric, dataset, config, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = load_rows(dataset, config, data_dir=sys.argv[6] + "/" + DATA_FOLDERS[dataset])[:n]
score_rows(metric, dataset, config, rows[:4], round_decimals=None)
start = time.perf_counter()
scores = score_rows(metric, dataset, config, rows, round_decimals=None)["scores"]
print(json.dumps({"s": time.perf_counter() - start, "scores": scores, "where": __import__("dialeval").__file__}))
"""


def run_side(src: str, unit: list[str], args: argparse.Namespace) -> dict:
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", WORKER, *unit, str(args.sample), str(args.threads),
                          str(Path(args.data_dir).resolve())], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def max_rel_diff(a: list[float], b: list[float]) -> float:
    return max((abs(x - y) / max(abs(x), abs(y), 1e-12) for x, y in zip(a, b)), default=0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the src folder of the earlier tree")
    ap.add_argument("--after", default=str(Path(__file__).resolve().parents[1] / "src"))
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--unit", action="append", required=True, help="metric/dataset/config (repeatable)")
    ap.add_argument("--sample", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    import leaderboard_floor as lf

    from dialeval.datasets import DATA_FOLDERS
    from dialeval.meta.evaluation import load_rows

    print(machine_line(args.threads), flush=True)
    peak = matmul_peak(torch.float32)
    shape = lf.model_shape()
    rows: list[list] = []
    found = []
    for spec in args.unit:
        unit = spec.split("/")
        data = load_rows(unit[1], unit[2], data_dir=Path(args.data_dir) / DATA_FOLDERS[unit[1]])[:args.sample]
        floor = lf.floor_of(*unit, data, shape)
        times: dict[str, list[float]] = {"before": [], "after": []}
        scores = {}
        for r in range(args.rounds):
            for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                got = run_side(getattr(args, side), unit, args)
                times[side].append(got["s"])
                scores[side] = got["scores"]
        found.append((spec, len(data), floor, statistics.median(times["before"]), statistics.median(times["after"]),
                      max_rel_diff(scores["before"], scores["after"])))
        print(f"  {spec}: before {times['before']}, after {times['after']}", flush=True)
    peak = max(peak, matmul_peak(torch.float32))
    for spec, n, floor, before, after, diff in found:
        floor_s = floor["flops"] / peak + floor["other_s"]
        rows.append([spec, n, f"{floor_s:.2f}", f"{before:.2f} ({before / floor_s:.2f}x)",
                     f"{after:.2f} ({after / floor_s:.2f}x)", f"{before / after:.2f}x", f"{diff:.1e}"])
    print(table(["unit", "rows", "floor s", "before s (/floor)", "after s (/floor)", "speed-up", "max rel diff"], rows))
    print(f"floor at {peak / 1e9:.0f} GFLOP/s, the best GEMM peak measured at the start and end; "
          f"load at the end {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
