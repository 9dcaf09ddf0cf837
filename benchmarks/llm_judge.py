"""LLM judge speed: the shared-prefix key/value cache (the rubric prompt once, and each context once for the
responses that share it) against scoring every prompt from scratch, and against a plain transformers loop, on the
same token ids (the offline SmolLM2-135M-Instruct, fp32).

    python benchmarks/llm_judge.py --limit 48 --repeats 3 --threads 1                         # FED turn items
    python benchmarks/llm_judge.py --dataset usr_personachat --limit 36 --repeats 2 --threads 2  # 6 responses a context

Rows: dialeval's default (ONNX Runtime, rubric prefix once, each shared context once after it, items on those
caches), the same with the rubric prefix only (``keys=None``), the same from scratch (``share_prefix=False``), the
torch routes, and a plain transformers loop (one ``model(ids)`` per prompt, the last position's logits, as a user
would write it). Every route scores the same ids (``judge_prompts``); the table gives items/s, the ratio to the
plain loop, the max |Δ| of the expected ratings against the torch from-scratch route, and the useful share of the
measured matmul peak (2 × non-embedding parameters × every prompt's tokens, so a route that runs shared tokens
once can pass 100 %).
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
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    items = judge_items(args.dataset, args.limit)
    keys = [tuple(c) for c, _ in items]
    torch_lm, onnx_lm = load_lm(None, backend="torch"), load_lm(None, backend="onnx")
    prompts = judge_prompts(torch_lm.tokenizer, "turn", items, RUBRICS["turn"]["overall"], None,
                            min(2048, position_limit(torch_lm.model, torch_lm.tokenizer)))
    prefix, encoded, rating_ids = prompts["prefix"], prompts["items"], prompts["rating_ids"]
    routes = {
        "dialeval default (onnx, shared prefix)": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids,
                                                                                     keys=keys)[0],
        "dialeval onnx, rubric prefix only": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids)[0],
        "dialeval onnx, from scratch": lambda: JudgeScorer(onnx_lm).score(prefix, encoded, rating_ids,
                                                                           share_prefix=False)[0],
        "dialeval torch, shared prefix": lambda: JudgeScorer(torch_lm).score(prefix, encoded, rating_ids,
                                                                              keys=keys)[0],
        "dialeval torch, from scratch": lambda: JudgeScorer(torch_lm).score(prefix, encoded, rating_ids,
                                                                             share_prefix=False)[0],
        "plain transformers loop (torch)": lambda: plain_loop(torch_lm.model, prefix, encoded, rating_ids),
    }
    routes["dialeval default (onnx, shared prefix)"]()  # the export (once per weights) is not timed
    seconds, outputs = interleaved(routes, args.repeats)
    peak = matmul_peak(torch.float32)
    params = non_embedding_params(torch_lm.model)
    tokens = sum(len(prefix) + len(e) for e in encoded)  # every prompt whole: the work a plain loop does
    ref = outputs["dialeval torch, from scratch"]
    plain = seconds["plain transformers loop (torch)"]
    rows = []
    for name, s in seconds.items():
        useful = 2 * params * tokens
        rows.append([name, f"{len(items) / s:.2f}", f"{plain / s:.2f}", f"{np.abs(outputs[name] - ref).max():.1e}",
                     f"{100 * useful / s / peak:.0f} %"])
    print(f"\n{len(items)} {args.dataset} turn items ({len(set(keys))} contexts); prefix {len(prefix)} tokens shared by "
          f"all, items {min(map(len, encoded))}–{max(map(len, encoded))} tokens; {machine_line(args.threads)}")
    print(table(["route", "items/s", "× plain loop", "max |Δ| vs torch scratch", "useful % of peak"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
