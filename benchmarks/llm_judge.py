"""LLM judge speed: the shared-prefix key/value cache against scoring every prompt from scratch, and against a
plain transformers loop, on the same token ids (FED turn items, the offline SmolLM2-135M-Instruct, fp32).

    python benchmarks/llm_judge.py --limit 48 --repeats 3 --threads 1

Rows: dialeval's default (ONNX Runtime, rubric prefix once, items on its cache), the same from scratch
(``share_prefix=False``), both on torch, and a plain transformers loop (one ``model(ids)`` per prompt, the last
position's logits, as a user would write it). Every route scores the same ids (``judge_prompts``); the table
gives items/s, the ratio to the plain loop, the max |Δ| of the expected ratings against the torch from-scratch
route, and the useful share of the measured matmul peak (2 × non-embedding parameters × tokens the route must
run: prefix once plus the items for the cached routes, every full prompt otherwise).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, machine_line, matmul_peak, non_embedding_params, offline, table  # noqa: E402

offline()

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / ".." / "shared" / "data" / "fed").resolve()


def fed_items(limit: int) -> list[tuple[list[str], str]]:
    from dialeval.datasets import load

    rows = load("fed", "turn", data_dir=DATA)["test"]
    return [([t["text"] for t in r["context"]], r["response"]) for r in rows.select(range(min(limit, len(rows))))]


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
    from dialeval.lm import load_lm, position_limit

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=48, help="FED turn items")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    items = fed_items(args.limit)
    torch_lm, onnx_lm = load_lm(None, backend="torch"), load_lm(None, backend="onnx")
    prompts = judge_prompts(torch_lm.tokenizer, "turn", items, RUBRICS["turn"]["overall"], None,
                            min(2048, position_limit(torch_lm.model, torch_lm.tokenizer)))
    prefix, encoded, rating_ids = prompts["prefix"], prompts["items"], prompts["rating_ids"]
    routes = {
        "dialeval default (onnx, shared prefix)": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids)[0],
        "dialeval onnx, from scratch": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids,
                                                                           share_prefix=False)[0],
        "dialeval torch, shared prefix": lambda: JudgeScorer(torch_lm).score(prefix, encoded, rating_ids)[0],
        "dialeval torch, from scratch": lambda: JudgeScorer(torch_lm).score(prefix, encoded, rating_ids,
                                                                             share_prefix=False)[0],
        "plain transformers loop (torch)": lambda: plain_loop(torch_lm.model, prefix, encoded, rating_ids),
    }
    routes["dialeval default (onnx, shared prefix)"]()  # the export (once per weights) is not timed
    seconds, outputs = interleaved(routes, args.repeats)
    peak = matmul_peak(torch.float32)
    params = non_embedding_params(torch_lm.model)
    tokens = {"shared": len(prefix) + sum(map(len, encoded)), "scratch": sum(len(prefix) + len(e) for e in encoded)}
    ref = outputs["dialeval torch, from scratch"]
    plain = seconds["plain transformers loop (torch)"]
    rows = []
    for name, s in seconds.items():
        useful = 2 * params * tokens["shared" if "shared" in name else "scratch"]
        rows.append([name, f"{len(items) / s:.2f}", f"{plain / s:.2f}", f"{np.abs(outputs[name] - ref).max():.1e}",
                     f"{100 * useful / s / peak:.0f} %"])
    print(f"\n{len(items)} FED turn items; prefix {len(prefix)} tokens shared by all, items {min(map(len, encoded))}–"
          f"{max(map(len, encoded))} tokens; {machine_line(args.threads)}")
    print(table(["route", "items/s", "× plain loop", "max |Δ| vs torch scratch", "useful % of peak"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
