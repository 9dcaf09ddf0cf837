"""Where an LM unit's time goes: its default route on a row sample under the torch profiler, split into matrix
products, attention, other torch operators and time outside torch (ONNX Runtime passes, Python), each against
the unit's compute floor (``benchmarks/leaderboard_floor.py``: its distinct tokens' FLOPs at the GEMM peak
measured in the same run).

    python benchmarks/lm_op_profile.py --data-dir ../shared/data --threads 2 --sample 100

The floor prices every FLOP at the peak of large square GEMMs; when a unit's matrix products alone take close to
its floor, no exact route on these kernels can come much closer, whatever it does with the rest. Writes
docs/results/benchmarks/lm_op_profile.json (``--result PATH``, or ``-`` for none).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine_line, matmul_peak, offline, table, write_result  # noqa: E402

offline()

import torch  # noqa: E402
from leaderboard_floor import floor_of, model_shape  # noqa: E402

from dialeval.datasets import DATA_FOLDERS  # noqa: E402
from dialeval.meta.evaluation import load_rows, score_rows  # noqa: E402
from dialeval.meta.leaderboard import plan  # noqa: E402

#: the largest unit of each LM metric's kind: FULL on short turns, the judge, qVS's quality (the judge on many
#: responses to one context)
DEFAULT_UNITS = ("full_followup/dailydialog_zhao/turn", "llm_judge/conture/turn", "full_followup/fed/dialog",
                 "quality_vendi/contest/con_test_200_resp_gen")
MATMUL_OPS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"}


def op_seconds(prof: Any) -> dict[str, float]:
    """Self CPU seconds of the profiled torch operators: matrix products, attention, and all the others."""
    out = {"matmul": 0.0, "attention": 0.0, "other torch ops": 0.0}
    for event in prof.key_averages():
        seconds = event.self_cpu_time_total / 1e6
        if event.key in MATMUL_OPS:
            out["matmul"] += seconds
        elif "scaled_dot_product" in event.key:
            out["attention"] += seconds
        else:
            out["other torch ops"] += seconds
    return out


def profiled_unit(unit: tuple[str, str, str], rows: list[dict[str, Any]], shape: dict[str, int],
                  peak: float) -> dict[str, Any]:
    """The unit's route time (unprofiled, best of 2), its floor, and its profiled split against the floor."""
    score_rows(*unit, rows[:4], round_decimals=None)  # model loads and exports stay out of the timings
    floor = floor_of(*unit, rows, shape)
    floor_s = floor["flops"] / peak + floor["other_s"]
    route_s = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        score_rows(*unit, rows, round_decimals=None)
        route_s = min(route_s, time.perf_counter() - start)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        score_rows(*unit, rows, round_decimals=None)
        profiled_s = time.perf_counter() - start
    parts = op_seconds(prof)
    parts["outside torch"] = max(0.0, profiled_s - sum(parts.values()))
    scale = route_s / profiled_s  # the profiler's own overhead, spread over the parts
    record = {"unit": "/".join(unit), "rows": len(rows), "route s": round(route_s, 3), "floor s": round(floor_s, 3),
              "route / floor": round(route_s / floor_s, 2)}
    for name, seconds in parts.items():
        record[f"{name} / floor"] = round(seconds * scale / floor_s, 2)
    return record


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=int, default=100, help="each unit's first N rows")
    ap.add_argument("--unit", action="append", help="metric/dataset/config (repeatable; default: four LM units)")
    ap.add_argument("--result", default=str(RESULTS / "lm_op_profile.json"),
                    help="result file to write (default docs/results/benchmarks/lm_op_profile.json; '-': none)")
    args = ap.parse_args()
    root = Path(args.data_dir).expanduser()
    if not root.is_dir():
        ap.error(f"--data-dir {str(root)!r} is not a folder; give ../shared/data.")
    units = [tuple(u.split("/")) for u in args.unit or DEFAULT_UNITS]
    known = set(plan()[0])  # every leaderboard unit
    for u in units:
        if u not in known:
            ap.error(f"--unit {'/'.join(u)!r} is not a leaderboard unit: give metric/dataset/config, e.g. "
                     f"{DEFAULT_UNITS[0]}.")
    if args.threads < 1 or args.sample < 1:
        ap.error("--threads and --sample must be ≥ 1.")
    torch.set_num_threads(args.threads)
    machine = machine_line(args.threads)
    print(machine, flush=True)
    peak = matmul_peak(torch.float32)
    shape = model_shape()
    records = []
    for unit in units:
        rows = load_rows(unit[1], unit[2], data_dir=root / DATA_FOLDERS[unit[1]])[:args.sample]
        records.append(profiled_unit(unit, rows, shape, peak))
        print(f"  {records[-1]['unit']}: route {records[-1]['route s']:.2f} s", flush=True)
    print(table(list(records[0]), [list(r.values()) for r in records]))
    low, high = min(r["matmul / floor"] for r in records), max(r["matmul / floor"] for r in records)
    summary = (f"the matrix products alone take {low:.2f}–{high:.2f}x these units' floors (GEMM peak "
               f"{peak / 1e9:.0f} GFLOP/s, fp32, {args.threads} threads)")
    print(summary)
    if args.result != "-":
        write_result(args.result, script="benchmarks/lm_op_profile.py", title="Where LM units spend their time",
                     command=" ".join(["python benchmarks/lm_op_profile.py", *sys.argv[1:]]), threads=args.threads,
                     summary=summary, rows=records, machine_text=machine, gemm_peak_gflops=peak / 1e9,
                     note="Each part's seconds (the profiler's overhead spread over the parts) over the unit's floor; "
                          "the parts add up to route / floor.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
