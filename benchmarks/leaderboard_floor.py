"""The whole leaderboard's compute floor: the least time any exact route needs for the default table's
language-model work at this machine's measured matmul peak, against a 60-minute target for the whole table.

    python benchmarks/leaderboard_floor.py --data-dir ../shared/data --threads 2
    python benchmarks/leaderboard_floor.py --data-dir ../shared/data --threads 2 --sample 100   # + the routes

Every unit of ``dialeval leaderboard`` (metric × dataset × config, all rows) is run with the two LM scorers
replaced by recorders (:class:`dialeval.full.scorer.FollowupScorer`'s causal route and
:meth:`dialeval.judge.scorer.JudgeScorer.score`), so the exact token ids each metric scores are collected
without a forward pass; everything else (tokenizing, the non-LM metrics, qVS's embeddings) runs and is timed.

The floor of a unit is the FLOPs of its *distinct* token prefixes, every common prefix of every prompt and
history counted once (a token trie over the whole unit, far more sharing than any batch can use), at
fp32 (this CPU has AVX2 only: no bf16 or int8 matmul units) and at the best n×n GEMM rate any library here
reaches (:func:`_common.matmul_peak`):

    FLOPs = Σ_nodes [2·P + 4·L·d_attn·(depth + 1)] + 2·d·V·(scored positions)

with P the non-embedding parameters, L layers, d_attn = heads × head dim, d the hidden size and V the vocabulary.
Norms, softmax, rotary and the judge's rating softmax are left out, so this is a lower bound: no exact route
at this precision can finish the unit faster. ``--sample N`` also runs each metric's real default route on the
first N rows of its largest unit and prints the useful FLOP rate (the same count) and the route / floor ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, matmul_peak, non_embedding_params, offline, table  # noqa: E402

offline()

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dialeval.datasets import DATA_FOLDERS  # noqa: E402
from dialeval.full.scorer import FollowupScorer  # noqa: E402
from dialeval.judge.scorer import JudgeScorer  # noqa: E402
from dialeval.meta.evaluation import load_rows, score_rows  # noqa: E402
from dialeval.meta.leaderboard import plan  # noqa: E402
from dialeval.models.lm import load_lm  # noqa: E402
from dialeval.models.shared_prefix import common_prefix_length  # noqa: E402

TARGET_SECONDS = 3600


def trie_cost(seqs: list[tuple[int, ...]]) -> tuple[int, int]:
    """(distinct prefixes, Σ (depth + 1) over them) of ``seqs``: each node of their token trie once."""
    nodes = depth_sum = 0
    prev: tuple[int, ...] = ()
    for s in sorted(set(seqs)):
        lcp = common_prefix_length([prev, s])
        nodes += len(s) - lcp  # nodes at depths lcp .. len(s) - 1
        depth_sum += (len(s) * (len(s) + 1) - lcp * (lcp + 1)) // 2
        prev = s
    return nodes, depth_sum


def full_sequences(items: list[list[int]], f_ids: list[list[int]]) -> tuple[list[tuple[int, ...]], int]:
    """FULL: every history followed by every follow-up but its last token, and the scored positions (per
    distinct history: its last position, then the follow-ups' distinct proper prefixes)."""
    seqs = [tuple(h) + tuple(f[:-1]) for h in items for f in f_ids]
    follow_nodes = trie_cost([tuple(f[:-1]) for f in f_ids if len(f) > 1])[0]
    return seqs, len({tuple(h) for h in items}) * (1 + follow_nodes)


def judge_sequences(prefix: list[int], items: list[list[int]]) -> tuple[list[tuple[int, ...]], int]:
    """The judge: every prompt (rubric prefix + item); one scored position per distinct prompt."""
    seqs = [tuple(prefix) + tuple(i) for i in items]
    return seqs, len(set(seqs))


@contextmanager
def recording(calls: list[tuple[list[tuple[int, ...]], int]]):
    """Both LM scorers record their token ids and return placeholder scores instead of running the model."""
    hosted, judged = FollowupScorer._score_hosted, JudgeScorer.score

    def record_full(self, items, keys, f_ids, *args, **kwargs):
        calls.append(full_sequences(items, f_ids))
        return np.ones((len(items), len(f_ids)))

    def record_judge(self, prefix, items, rating_ids, **kwargs):
        calls.append(judge_sequences(prefix, items))
        n = len(items)
        return np.full(n, 3.0), np.full(n, 3), np.ones(n)

    FollowupScorer._score_hosted, JudgeScorer.score = record_full, record_judge
    try:
        yield
    finally:
        FollowupScorer._score_hosted, JudgeScorer.score = hosted, judged


def model_shape() -> dict[str, int]:
    """The offline default causal LM's FLOP constants (FULL, the judge and qVS's quality all use it)."""
    model = load_lm(None).model
    cfg = model.config
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return {"params": non_embedding_params(model), "layers": cfg.num_hidden_layers, "d_attn": heads * head_dim,
            "hidden": cfg.hidden_size, "vocab": cfg.vocab_size}


def unit_flops(calls: list[tuple[list[tuple[int, ...]], int]], shape: dict[str, int]) -> tuple[int, float]:
    """(distinct tokens, floor FLOPs) of one unit's recorded calls."""
    tokens, flops = 0, 0.0
    for seqs, scored in calls:
        nodes, depths = trie_cost(seqs)
        tokens += nodes
        flops += (2 * shape["params"] * nodes + 4 * shape["layers"] * shape["d_attn"] * depths
                  + 2 * shape["hidden"] * shape["vocab"] * scored)
    return tokens, flops


def floor_of(metric: str, dataset: str, config: str, rows: list[dict[str, Any]],
             shape: dict[str, int]) -> dict[str, Any]:
    calls: list[tuple[list[tuple[int, ...]], int]] = []
    start = time.perf_counter()
    with recording(calls):
        score_rows(metric, dataset, config, rows)
    other = time.perf_counter() - start
    tokens, flops = unit_flops(calls, shape)
    return {"metric": metric, "dataset": dataset, "config": config, "rows": len(rows), "tokens": tokens,
            "flops": flops, "other_s": other}


def measured_route(unit: dict[str, Any], rows: list[dict[str, Any]], n: int, shape: dict[str, int]) -> dict[str, Any]:
    """The real default route on the first ``n`` rows of ``unit``, with the floor of the same rows."""
    head = rows[:n]
    floor = floor_of(unit["metric"], unit["dataset"], unit["config"], head, shape)
    start = time.perf_counter()
    score_rows(unit["metric"], unit["dataset"], unit["config"], head)
    return {**floor, "route_s": time.perf_counter() - start}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=int, default=0, help="also run each LM metric's route on N rows of its largest unit")
    args = ap.parse_args()
    root = Path(args.data_dir).expanduser()
    if not root.is_dir():
        ap.error(f"--data-dir {str(root)!r} is not a folder; give ../shared/data.")
    if args.threads < 1 or args.sample < 0:
        ap.error("--threads must be ≥ 1 and --sample ≥ 0.")
    torch.set_num_threads(args.threads)
    print(machine_line(args.threads), flush=True)
    peak = matmul_peak(torch.float32)
    shape = model_shape()
    tasks, skipped = plan()
    units, rows_of = [], {}
    for metric, dataset, config in sorted(tasks, key=lambda t: (t[1], t[2], t[0])):
        if (dataset, config) not in rows_of:
            rows_of[(dataset, config)] = load_rows(dataset, config, data_dir=root / DATA_FOLDERS[dataset])
        unit = floor_of(metric, dataset, config, rows_of[(dataset, config)], shape)
        units.append(unit)
        print(f"  {metric} / {dataset} / {config}: {unit['tokens']:,} distinct tokens, "
              f"{unit['flops'] / peak:.0f} s at peak", flush=True)
    print_table(units, peak, skipped)
    if args.sample:
        print_sample(units, rows_of, args.sample, peak, shape)
    return 0


def print_table(units: list[dict[str, Any]], peak: float, skipped: list[dict[str, str]]) -> None:
    lm = [u for u in units if u["tokens"]]
    rows = [[u["metric"], f"{u['dataset']}/{u['config']}", f"{u['rows']:,}", f"{u['tokens']:,}",
             f"{u['flops'] / 1e12:.1f}", f"{u['flops'] / peak:.0f}"] for u in sorted(lm, key=lambda u: -u["flops"])]
    total_flops = sum(u["flops"] for u in lm)
    other = sum(u["other_s"] for u in units)
    print("\n" + table(["metric", "unit", "rows", "distinct tokens", "TFLOP", "floor s"], rows))
    by_metric: dict[str, float] = {}
    for u in lm:
        by_metric[u["metric"]] = by_metric.get(u["metric"], 0.0) + u["flops"] / peak
    print("\nfloor by metric: " + ", ".join(f"{m} {s:,.0f} s" for m, s in sorted(by_metric.items(), key=lambda x: -x[1])))
    floor = total_flops / peak + other
    print(f"whole table: {len(units)} units; LM floor {total_flops / peak:,.0f} s at {peak / 1e9:.0f} GFLOP/s "
          f"+ everything else as measured here {other:,.0f} s = {floor:,.0f} s ({floor / 60:.0f} min), "
          f"{floor / TARGET_SECONDS:.2f}x the {TARGET_SECONDS // 60}-minute target")
    if skipped:
        print("skipped by the plan: " + "; ".join(f"{s['metric']}: {s['reason']}" for s in skipped))


def print_sample(units: list[dict[str, Any]], rows_of: dict[tuple[str, str], list[dict[str, Any]]], n: int,
                 peak: float, shape: dict[str, int]) -> None:
    largest: dict[str, dict[str, Any]] = {}
    for u in units:
        if u["tokens"] and u["flops"] > largest.get(u["metric"], {"flops": -1})["flops"]:
            largest[u["metric"]] = u
    rows = []
    for metric, unit in largest.items():
        m = measured_route(unit, rows_of[(unit["dataset"], unit["config"])], n, shape)
        rate = m["flops"] / max(m["route_s"] - m["other_s"], 1e-9)
        rows.append([metric, f"{unit['dataset']}/{unit['config']}", m["rows"], f"{m['route_s']:.1f}",
                     f"{m['flops'] / peak + m['other_s']:.1f}", f"{rate / 1e9:.0f}", f"{rate / peak:.0%}",
                     f"{m['route_s'] / (m['flops'] / peak + m['other_s']):.2f}"])
    print(f"\nthe default routes on the first {n} rows of each LM metric's largest unit (one process):")
    print(table(["metric", "unit", "rows", "route s", "floor s", "useful GFLOP/s", "% of peak", "route / floor"], rows))


if __name__ == "__main__":
    raise SystemExit(main())
