"""NLI Diversity throughput: dialeval's batched, deduplicated classifier vs a transformers ``pipeline``
classifying pair by pair, on the same roberta-base-shaped random model, in one run.

Input: the first ``--sets`` response sets of conTest resp_gen (../shared/data/diversity_eval), i.e. real
response lengths; each set of 5 gives 20 ordered pairs. Both sides truncate to the model's 512 tokens.
Reported: ordered pairs per second of input (dialeval also classifies each distinct pair only once),
the speed-up, and the largest probability difference between the two (they must agree).

    python benchmarks/nli_diversity.py                       # CPU, 8 sets = 160 pairs
    python benchmarks/nli_diversity.py --sets 200 --device cuda --dtype bf16
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DIALEVAL_PROGRESS", "0")

REPO = Path(__file__).resolve().parents[1]
CONTEST = REPO.parent / "shared" / "data" / "diversity_eval" / "raw" / "conTest" / "con_test_200_with_hds_resp_gen.csv"


def load_sets(n: int) -> list[list[str]]:
    with CONTEST.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))[:n]
    return [[row[k] for k in sorted(row) if k.startswith("resp_")] for row in rows]


def run_pipeline(model, tokenizer, pairs, device) -> tuple[float, list[list[float]]]:
    """The naive way: one pipeline call per (premise, hypothesis) pair."""
    from transformers import pipeline

    pipe = pipeline("text-classification", model=model, tokenizer=tokenizer, device=device, top_k=None)
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    start = time.perf_counter()
    rows = []
    for premise, hypothesis in pairs:
        out = pipe({"text": premise, "text_pair": hypothesis}, truncation=True)
        by_label = {d["label"]: d["score"] for d in out}
        rows.append([by_label[name] for name in labels])
    return time.perf_counter() - start, rows


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from dialeval.nli import NLIClassifier, compute_nli_diversity, ordered_pairs
    from dialeval.testing.roberta import roberta_base_shaped_nli

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", type=int, default=8, help="conTest response sets to score (20 pairs each)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None, help="dialeval side only: fp32 (default) or bf16")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)

    sets = load_sets(args.sets)
    pairs = [(s[i], s[j]) for s in sets for i, j in ordered_pairs(len(s))]
    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer = roberta_base_shaped_nli(tmp)
    model = model.to(args.device).eval()
    print(f"{len(sets)} conTest sets, {len(pairs)} ordered pairs, roberta-base-shaped random model "
          f"({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M params), device={args.device}, "
          f"torch threads={torch.get_num_threads()}", flush=True)

    base_s, base_rows = run_pipeline(model, tokenizer, pairs, torch.device(args.device))

    clf = NLIClassifier(model, tokenizer, device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                        progress=False)
    start = time.perf_counter()
    result = compute_nli_diversity(sets, clf, "confidence", return_probabilities=True)
    ours_s = time.perf_counter() - start

    ours_rows = []
    for matrices, s in zip(result["probabilities"], sets):
        for i, j in ordered_pairs(len(s)):
            ours_rows.append([matrices[name][i][j] for name in ("contradiction", "neutral", "entailment")])
    diff = float(np.abs(np.array(ours_rows) - np.array(base_rows)).max())  # model is C,N,E: same columns

    table = [("implementation", "seconds", "pairs/s", "forward passes"),
             ("transformers pipeline, pair by pair", f"{base_s:.2f}", f"{len(pairs) / base_s:.1f}", str(len(pairs))),
             (f"dialeval NLIClassifier (batch {args.batch_size}, {clf.dtype})".replace("torch.", ""),
              f"{ours_s:.2f}", f"{len(pairs) / ours_s:.1f}", str(clf.forward_calls))]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for k, row in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print(f"speed-up: {base_s / ours_s:.2f}x   distinct pairs classified: {result['num_distinct_pairs']} of "
          f"{result['num_pairs']}   max |Δprob| vs pipeline: {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
