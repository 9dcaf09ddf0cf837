"""LLM judge speed: dialeval's default route (token trees: the rubric prompt once as a cache, each shared context
once, every response scored in packed rows), the cached routes, scoring every prompt from scratch, and a plain
transformers loop, on the same token ids (the offline SmolLM2-135M-Instruct, fp32).

    python benchmarks/llm_judge.py --dataset usr_personachat --limit 36 --repeats 2 --threads 2  # 6 responses a context

Rows: dialeval's default (ONNX Runtime backend), the cached route (``tree=False``: rubric prefix and each context
once as key/value caches), the rubric prefix only (``keys=None``), from scratch (``share_prefix=False``), the torch
backend's default, and a plain transformers loop (one ``model(ids)`` per prompt, the last position's logits, as a
user would write it). Each row gives items/s, its time over dialeval default's, the max |Δ| of its expected ratings
against dialeval default's, and the useful share of the measured matmul peak (2 × non-embedding parameters × every
prompt's tokens, so a route that runs shared tokens once can pass 100 %). Writes
docs/results/benchmarks/llm_judge.<CPU kind>.json (``--result PATH``, or ``-`` for none).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    interleaved,
    machine_line,
    matmul_peak,
    non_embedding_params,
    offline,
    peers_line,
    result_file,
    route_records,
    table,
    write_result,
)

offline()

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / ".." / "shared" / "data" / "fed").resolve()


def judge_items(dataset: str, limit: int) -> list[tuple[list[str], str]]:
    """The first ``limit`` turn-level items of ``dataset`` (FED: its turns; else the leaderboard's rows)."""
    if dataset == "fed":
        from dialeval.datasets import load

        rows = load("fed", "turn", data_dir=DATA)["test"]
        return [([t["text"] for t in r["context"]], r["response"]) for r in rows.select(range(min(limit, len(rows))))]
    from dialeval.datasets import DATA_FOLDERS
    from dialeval.meta.evaluation import load_rows

    rows = load_rows(dataset, "turn", data_dir=DATA.parent / DATA_FOLDERS[dataset])[:limit]
    return [(list(r["context"]), r["response"]) for r in rows]


@functools.cache
def plain_model(path: str):
    """The LM as a user loads it: transformers' own model (SDPA attention, torch's own products), fp32, eval."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def plain_loop(model, prefix: list[int], items: list[list[int]], rating_ids: list[int]) -> np.ndarray:
    rows = []
    with torch.inference_mode():
        for ids in items:
            rows.append(model(torch.tensor([prefix + ids])).logits[0, -1].float().numpy())
    from dialeval.judge.scorer import expected_rating

    return expected_rating(np.stack(rows), rating_ids)[0]


def main() -> int:
    from dialeval.judge.llm_judge import judge_prompts
    from dialeval.judge.rubrics import RUBRICS
    from dialeval.judge.scorer import JudgeScorer
    from dialeval.models.lm import load_lm, position_limit

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from dialeval.datasets import QUALITY_CONFIGS

    turn_level = [d for d, configs in QUALITY_CONFIGS.items() if configs.get("turn", ("",))[0] == "turn"]
    p.add_argument("--dataset", default="fed", choices=turn_level,
                   help="fed, or a turn-level quality dataset (usr_personachat, ...)")
    p.add_argument("--limit", type=int, default=48, help="items (the first N)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--result", default=str(result_file("llm_judge")),
                   help="result file to write (default docs/results/benchmarks/llm_judge.<CPU kind>.json; '-': none)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    items = judge_items(args.dataset, args.limit)
    keys = [tuple(c) for c, _ in items]
    torch_lm, onnx_lm = load_lm(None, backend="torch"), load_lm(None, backend="onnx")
    prompts = judge_prompts(torch_lm.tokenizer, "turn", items, RUBRICS["turn"]["overall"], None,
                            min(2048, position_limit(torch_lm.model, torch_lm.tokenizer)))
    prefix, encoded, rating_ids = prompts["prefix"], prompts["items"], prompts["rating_ids"]
    machine = machine_line(args.threads)
    default = "dialeval default (token trees)"
    routes = {
        default: lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids, keys=keys)[0],
        "dialeval cached route (tree=False)": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids,
                                                                                 keys=keys, tree=False)[0],
        "dialeval rubric prefix only": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids, tree=False)[0],
        "dialeval from scratch": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids,
                                                                    share_prefix=False)[0],
        "dialeval backend='torch'": lambda: JudgeScorer(torch_lm).score(prefix, encoded, rating_ids, keys=keys)[0],
        "plain transformers loop (one model(ids) per prompt)": lambda: plain_loop(plain_model(torch_lm.path), prefix,
                                                                                  encoded, rating_ids),
    }
    for run in routes.values():  # every graph's export (once per weights, on first use) stays out of the timings
        run()
    seconds, outputs = interleaved(routes, args.repeats)
    peak = matmul_peak(torch.float32)
    useful = 2 * non_embedding_params(torch_lm.model) * sum(len(prefix) + len(e) for e in encoded)
    agreement = {name: {"max |Δ rating| vs dialeval": float(np.abs(outputs[name] - outputs[default]).max()),
                        "useful % of peak": round(100 * useful / s / peak, 1)} for name, s in seconds.items()}
    records = route_records(seconds, default, len(items), "items/s", agreement)
    workload = (f"{len(items)} {args.dataset} turn items ({len(set(keys))} contexts); prefix {len(prefix)} tokens "
                f"shared by all, items {min(map(len, encoded))}–{max(map(len, encoded))} tokens")
    print(f"\n{workload}; {machine}")
    print(table(list(records[0]), [list(r.values()) for r in records]))
    worst = max(a["max |Δ rating| vs dialeval"] for a in agreement.values())
    summary = (f"{workload}: each peer's time over dialeval default's: {peers_line(records)}; every route's expected "
               f"ratings within {worst:.1e} of dialeval default's")
    if args.result != "-":
        write_result(args.result, script="benchmarks/llm_judge.py", title="LLM judge (SmolLM2-135M-Instruct)",
                     command=" ".join(["python benchmarks/llm_judge.py", *sys.argv[1:]]), threads=args.threads,
                     summary=summary, rows=records, machine_text=machine, gemm_peak_gflops=peak / 1e9)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
