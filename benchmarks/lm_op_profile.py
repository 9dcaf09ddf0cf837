"""Where an LM unit's time goes: its default route on a row sample under the torch profiler, split into matrix
products, attention, other torch operators and time outside torch (ONNX Runtime passes, Python), each against
the unit's compute floor (``benchmarks/leaderboard_floor.py``: its distinct tokens' FLOPs at the GEMM peak
measured in the same run).

    python benchmarks/lm_op_profile.py --data-dir ../shared/data --threads 2 --sample 100
    python benchmarks/lm_op_profile.py --data-dir ../shared/data --threads 2 --sample 100 --dtype bf16 --unit ...

The floor prices every FLOP at the peak of large square GEMMs; when a unit's matrix products alone take close to
its floor, no exact route on these kernels can come much closer, whatever it does with the rest. ``--dtype bf16``
times each unit's leaderboard route in fp32 (its default engine: ONNX Runtime for these LMs on a CPU) and in
``dialeval leaderboard --dtype bf16`` (torch, bf16 products), interleaved, and profiles the bf16 route: fp32 time
over the bf16 route's non-product time bounds the speed-up bf16 products can give the unit. Writes
docs/results/benchmarks/lm_op_profile.json (``lm_op_profile_bf16.json`` for bf16; ``--result PATH``, or ``-``
for none).
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

import leaderboard_floor  # noqa: E402
import torch  # noqa: E402
from leaderboard_floor import floor_of, model_shape  # noqa: E402

from dialeval.datasets import DATA_FOLDERS  # noqa: E402
from dialeval.meta.dtypes import with_dtype  # noqa: E402
from dialeval.meta.evaluation import load_rows, score_rows  # noqa: E402
from dialeval.meta.leaderboard import plan  # noqa: E402

#: the largest unit of each LM metric's kind: FULL on short turns, the judge, qVS's quality (the judge on many
#: responses to one context)
DEFAULT_UNITS = ("full_followup/dailydialog_zhao/turn", "llm_judge/conture/turn", "full_followup/fed/dialog",
                 "quality_vendi/contest/con_test_200_resp_gen")
MATMUL_OPS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "mkldnn::_linear_pointwise"}


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


def route_seconds(unit: tuple[str, str, str], rows: list[dict[str, Any]],
                  options: dict[str, Any] | None) -> tuple[float, str]:
    """The unit's route time, unprofiled, best of 2 (after a warm-up on 4 rows: loads and exports stay out), and
    the engine it runs on, as its signature names it (``backend:onnx``, ``backend:torch``)."""
    signature = score_rows(*unit, rows[:4], options, round_decimals=None)["signature"]
    engine = next((part.split(":", 1)[1] for part in signature.split("|") if part.startswith("backend:")), "torch")
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        score_rows(*unit, rows, options, round_decimals=None)
        best = min(best, time.perf_counter() - start)
    return best, engine


def profiled_parts(unit: tuple[str, str, str], rows: list[dict[str, Any]], options: dict[str, Any] | None,
                   route_s: float) -> dict[str, float]:
    """Seconds per part of one profiled run, the profiler's own overhead spread over the parts (they add up to
    ``route_s``)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        score_rows(*unit, rows, options, round_decimals=None)
        profiled_s = time.perf_counter() - start
    parts = op_seconds(prof)
    parts["outside torch"] = max(0.0, profiled_s - sum(parts.values()))
    return {name: seconds * route_s / profiled_s for name, seconds in parts.items()}


def profiled_unit(unit: tuple[str, str, str], rows: list[dict[str, Any]], shape: dict[str, int],
                  peak: float) -> dict[str, Any]:
    """The unit's route time (unprofiled, best of 2), its floor, and its profiled split against the floor."""
    options = leaderboard_floor.OPTIONS.get(unit[0])  # --dtype bf16: the metric's dtype
    route_s, _engine = route_seconds(unit, rows, options)
    floor = floor_of(*unit, rows, shape)
    floor_s = floor["flops"] / peak + floor["other_s"]
    record = {"unit": "/".join(unit), "rows": len(rows), "route s": round(route_s, 3), "floor s": round(floor_s, 3),
              "route / floor": round(route_s / floor_s, 2)}
    for name, seconds in profiled_parts(unit, rows, options, route_s).items():
        record[f"{name} / floor"] = round(seconds / floor_s, 2)
    return record


def bf16_ceiling(fp32_s: float, bf16_s: float, bf16_products_s: float) -> dict[str, float]:
    """A unit's bf16 speed-up ``fp32_s / bf16_s`` and its ceiling ``fp32_s / (bf16_s - bf16_products_s)``: the
    speed-up bf16 would give if its matrix products took no time at all, the rest of the route unchanged."""
    rest = bf16_s - bf16_products_s
    return {"speed-up": fp32_s / bf16_s, "ceiling": fp32_s / rest if rest > 0 else float("inf")}


def bf16_unit(unit: tuple[str, str, str], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The unit's fp32 and bf16 routes in two interleaved rounds (fp32, bf16, fp32, bf16; each the best of 2 runs
    after a warm-up, so the best of 4 per route), then the bf16 route's profiled split."""
    options = leaderboard_floor.OPTIONS.get(unit[0])
    (fp32_s, fp32_engine), (bf16_s, bf16_engine) = route_seconds(unit, rows, None), route_seconds(unit, rows, options)
    fp32_s = min(fp32_s, route_seconds(unit, rows, None)[0])
    bf16_s = min(bf16_s, route_seconds(unit, rows, options)[0])
    parts = profiled_parts(unit, rows, options, bf16_s)
    ratios = bf16_ceiling(fp32_s, bf16_s, parts["matmul"])
    return {"unit": "/".join(unit), "rows": len(rows), "fp32 engine": fp32_engine,
            "fp32 s": round(fp32_s, 3), "bf16 engine": bf16_engine, "bf16 s": round(bf16_s, 3),
            "bf16: products s": round(parts["matmul"], 3), "bf16: attention s": round(parts["attention"], 3),
            "bf16: other ops s": round(parts["other torch ops"], 3),
            "bf16: outside torch s": round(parts["outside torch"], 3),
            "speed-up": round(ratios["speed-up"], 2), "ceiling": round(ratios["ceiling"], 2)}


TITLES = {"fp32": "Where LM units spend their time",
          "bf16": "Where LM units spend their time in bf16, and the most bf16 could give them"}


def unit_rows(unit: tuple[str, str, str], root: Path, sample: int) -> list[dict[str, Any]]:
    return load_rows(unit[1], unit[2], data_dir=root / DATA_FOLDERS[unit[1]])[:sample]


def profile_fp32(units: list[tuple[str, str, str]], root: Path, sample: int,
                 threads: int) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """Each unit's profiled split against its floor (fp32 GEMM peak)."""
    peak, shape = matmul_peak(torch.float32), model_shape()
    records = []
    for unit in units:
        records.append(profiled_unit(unit, unit_rows(unit, root, sample), shape, peak))
        print(f"  {records[-1]['unit']}: route {records[-1]['route s']:.2f} s", flush=True)
    low, high = min(r["matmul / floor"] for r in records), max(r["matmul / floor"] for r in records)
    summary = (f"the matrix products alone take {low:.2f}–{high:.2f}x these units' floors (GEMM peak "
               f"{peak / 1e9:.0f} GFLOP/s, fp32, {threads} threads)")
    note = ("Each part's seconds (the profiler's overhead spread over the parts) over the unit's floor; the parts add "
            "up to route / floor.")
    return records, summary, {"gemm_peak_gflops": peak / 1e9, "note": note}


def profile_bf16(units: list[tuple[str, str, str]], root: Path, sample: int,
                 threads: int) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """Each unit in fp32 and in bf16, interleaved, the bf16 route profiled: its speed-up and its ceiling."""
    records = []
    for unit in units:
        records.append(bf16_unit(unit, unit_rows(unit, root, sample)))
        print(f"  {records[-1]['unit']}: fp32 {records[-1]['fp32 s']:.2f} s, bf16 {records[-1]['bf16 s']:.2f} s",
              flush=True)
    under = [r for r in records if r["ceiling"] < 1.5]
    summary = (f"bf16 speed-up {min(r['speed-up'] for r in records):.2f}–{max(r['speed-up'] for r in records):.2f}x "
               f"over these units' fp32 routes ({threads} threads); with its matrix products taking no time at all, "
               f"bf16 would reach {min(r['ceiling'] for r in records):.2f}–{max(r['ceiling'] for r in records):.2f}x"
               + (f", under 1.5x on {len(under)} of {len(records)} units" if under else ""))
    note = ("fp32 s and bf16 s: the time of the route `dialeval leaderboard` runs (fp32: its default engine, "
            "ONNX Runtime for these LMs on a CPU; `--dtype bf16`: torch, each linear layer's product in bf16, the "
            "rest fp32; the output head fp32 for the LLM judge, in bf16 with its largest logits exact for FULL), "
            "the best of 4 runs in two interleaved rounds. The bf16 route's "
            "seconds are split by the torch profiler (its overhead spread over the parts) into matrix products "
            "(the layers' and the output head's), attention, other torch operators and time outside "
            "torch. ceiling = fp32 s / (bf16 s − bf16 products s): what bf16 could give if its products took no "
            "time.")
    return records, summary, {"note": note}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=int, default=100, help="each unit's first N rows")
    ap.add_argument("--unit", action="append", help="metric/dataset/config (repeatable; default: four LM units)")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                    help="fp32: profile each unit against its floor; bf16: time each unit in fp32 and in "
                         "`dialeval leaderboard --dtype bf16` and profile the bf16 route (CPUs with avx512_bf16 "
                         "or AMX)")
    ap.add_argument("--result", default=None, help="result file to write (default docs/results/benchmarks/"
                    "lm_op_profile.json, lm_op_profile_bf16.json for --dtype bf16; '-': none)")
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
    args.result = args.result or str(RESULTS / f"lm_op_profile{'_bf16' if args.dtype == 'bf16' else ''}.json")
    try:
        leaderboard_floor.OPTIONS.update(with_dtype(None, units, args.dtype) or {})
    except ValueError as err:
        ap.error(str(err))
    torch.set_num_threads(args.threads)
    machine = machine_line(args.threads)
    if args.dtype == "bf16":  # this mode keeps the best of interleaved runs
        machine = machine.replace("times are medians of interleaved runs", "times are the best of interleaved runs")
    print(machine, flush=True)
    run = profile_bf16 if args.dtype == "bf16" else profile_fp32
    records, summary, extra = run(units, root, args.sample, args.threads)
    print(table(list(records[0]), [list(r.values()) for r in records]))
    print(summary)
    if args.result != "-":
        write_result(args.result, script="benchmarks/lm_op_profile.py", title=TITLES[args.dtype],
                     command=" ".join(["python benchmarks/lm_op_profile.py", *sys.argv[1:]]), threads=args.threads,
                     dtype=args.dtype, summary=summary, rows=records, machine_text=machine, **extra)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
