"""FULL's two causal routes on the leaderboard's own items, interleaved in one run, same scores: the token trees
(the default) against the cached route (what runs where the trees cannot run or are not used: int8 graphs,
sliding-window models past their window, histories that share no tokens on ONNX Runtime).

    python benchmarks/full_routes.py [--dataset dailydialog_plusplus=45 --dataset usr_topicalchat=36
                                      --dataset conture=60 --dataset dstc9_interactive=16] [--repeats 2] [--threads 2]

Model: the offline default (SmolLM2-135M-Instruct, its own text: a space after each turn, 512 tokens, summed
NLL) on ONNX Runtime (the CPU default). Routes, both through :func:`dialeval.full.scorer.full_scores`:

- ``cached (nested+trie)`` (``tree=False``): a history whose tokens begin a longer one's (each turn of one
  conversation) scored inside it, the common token prefix of histories with the same context once, and each
  history's follow-ups in one packed row sharing their common first tokens (:mod:`dialeval.full.hosted`), on
  ONNX Runtime;
- ``token trees`` (the default): histories that share tokens packed as token trees, every distinct prefix once,
  no cache (:mod:`dialeval.full.tree`), on the torch module.

Each dataset's slice is its first N rows as the leaderboard reads them (DailyDialog++: 15 rows per context).
Printed per dataset: items/s per route, the token trees' speed-up over the cached route, the max relative
difference of the follow-up NLLs between the two, and % of the measured matmul peak (useful FLOPs: 2 ×
non-embedding parameters per history token and per follow-up token, plus the LM head on follow-up tokens, every
history counted whole: a route that runs nested histories once can exceed 100 %). Writes
docs/results/benchmarks/full_routes.<CPU kind>.json (``--json PATH``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    interleaved,
    machine_line,
    matmul_peak,
    non_embedding_params,
    offline,
    result_file,
    table,
    write_result,
)

offline()

REPO = Path(__file__).resolve().parents[1]
CACHED = "cached (nested+trie)"
ROUTES = {CACHED: False, "token trees": True}  # the route: full_scores(tree=...)
HEADER = ["items", "route", "items/s", "speed-up over the cached route", "max rel d NLL", "% of peak"]


def histories(dataset: str, n: int) -> tuple[list[list[str]], str]:
    from dialeval.datasets import DATA_FOLDERS, QUALITY_CONFIGS
    from dialeval.full.full_followup import full_histories
    from dialeval.meta.evaluation import load_rows

    config = next(iter(QUALITY_CONFIGS.get(dataset, {"default": ("turn", "")})))
    level = QUALITY_CONFIGS[dataset][config][0] if dataset in QUALITY_CONFIGS else "turn"
    rows = load_rows(dataset, config, data_dir=REPO.parent / "shared" / "data" / DATA_FOLDERS[dataset])[:n]
    if level == "dialog":
        return full_histories("dialog", dialogues=[list(r["context"]) for r in rows]), level
    return full_histories("turn", [list(r["context"]) for r in rows], [r["response"] for r in rows]), level


def useful_flops(lm, hs: list[list[str]]) -> float:
    from dialeval.full.scorer import FollowupScorer
    from dialeval.full.texts import FOLLOW_UPS

    scorer = FollowupScorer(lm)
    f_lens = [len(f) for f in scorer.encode_follow_ups(FOLLOW_UPS)]
    budget = scorer.max_length - max(f_lens)
    tokens = sum(len(scorer.encode_history(h, budget)) for h in hs)
    cfg = lm.model.config
    body, head = non_embedding_params(lm.model), cfg.vocab_size * cfg.hidden_size
    return 2.0 * (body * tokens + (body + head) * len(hs) * sum(n - 1 for n in f_lens))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", action="append", help="NAME=ROWS (repeatable)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=str(result_file("full_routes")), help="where the result file is written")
    args = ap.parse_args()
    import torch

    from dialeval.full.scorer import full_scores
    from dialeval.models.lm import load_lm

    torch.set_num_threads(args.threads)
    specs = args.dataset or ["dailydialog_plusplus=45", "usr_topicalchat=36", "conture=60", "dstc9_interactive=16"]
    machine_text = machine_line(args.threads)
    peak = matmul_peak(torch.float32)
    lm = load_lm(None, backend="onnx")
    out_rows, records = [], []
    for spec in specs:
        name, _, n = spec.partition("=")
        hs, level = histories(name, int(n or 30))
        for tree in ROUTES.values():  # warm-up: graphs exported/opened once
            full_scores(hs[:4], level=level, lm=lm, tree=tree, progress=False)
        candidates = {r: (lambda t=t, hs=hs, level=level: full_scores(hs, level=level, lm=lm, tree=t, progress=False))
                      for r, t in ROUTES.items()}
        secs, outs = interleaved(candidates, args.repeats)
        base = np.array(outs[CACHED]["follow_up_scores"])
        flops = useful_flops(lm, hs)
        for route in ROUTES:
            got = np.array(outs[route]["follow_up_scores"])
            rel = float(np.max(np.abs(got - base) / np.abs(base)))
            out_rows.append([f"{name} ({len(hs)} {level})", route, f"{len(hs) / secs[route]:.2f}",
                             f"{secs[CACHED] / secs[route]:.2f}x", f"{rel:.1e}", f"{100 * flops / secs[route] / peak:.0f} %"])
            records.append({"route": f"{name}, first {len(hs)} {level} rows: {route}",
                            "items/s": round(len(hs) / secs[route], 2),
                            "speed-up over the cached route": round(secs[CACHED] / secs[route], 2),
                            "max relative difference of the NLLs": float(f"{rel:.1e}")})
        print(table(HEADER, out_rows[-len(ROUTES):]), flush=True)
    print(machine_text)
    print(table(HEADER, out_rows))
    command = "python benchmarks/full_routes.py " + " ".join(f"--dataset {s}" for s in specs) + \
        f" --repeats {args.repeats} --threads {args.threads}"
    write_result(args.json, script="benchmarks/full_routes.py", title="FULL routes on the leaderboard's own items (SmolLM2)",
                 command=command, rows=records, threads=args.threads, machine_text=machine_text,
                 summary="; ".join(f"{r['route']} {r['speed-up over the cached route']}x over the cached route"
                                   for r in records if r["route"].endswith(": token trees")))


if __name__ == "__main__":
    main()
