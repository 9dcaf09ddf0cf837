"""NLI batching variants: does a padded-token budget (Sem-Ent's default) help the NLI classifier?

    python benchmarks/nli_batching.py [--sets 8] [--repeats 3] [--threads 2]

dialeval's ``NLIClassifier`` with fixed length-sorted batches of 32 pairs (its default) against batches of up
to 256 pairs capped at 1,024 or 2,048 padded tokens, on conTest pairs with a random roberta-base-shaped
model (speed does not depend on the weights), fp32, interleaved rounds, medians; the largest difference of
the set scores against the default is printed too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    import torch
    from nli_diversity import load_sets

    from dialeval.nli.core import NLIClassifier, compute_nli_diversity
    from dialeval.testing.roberta import roberta_base_shaped_nli

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    sets = load_sets(args.sets)
    variants = {"batches of 32 (default)": {"batch_size": 32},
                "≤ 256 pairs, ≤ 1,024 padded tokens": {"batch_size": 256, "max_tokens": 1024},
                "≤ 256 pairs, ≤ 2,048 padded tokens": {"batch_size": 256, "max_tokens": 2048}}
    with tempfile.TemporaryDirectory() as tmp:
        model, tok = roberta_base_shaped_nli(tmp)
        clfs = {k: NLIClassifier(model, tok, device="cpu", dtype=None, progress=False, **v) for k, v in variants.items()}
        scores = {k: compute_nli_diversity(sets, c, "confidence")["scores"] for k, c in clfs.items()}  # + warm-up
        times: dict[str, list[float]] = {k: [] for k in clfs}
        for _ in range(args.repeats):
            for k, c in clfs.items():
                t0 = time.perf_counter()
                compute_nli_diversity(sets, c, "confidence")
                times[k].append(time.perf_counter() - t0)
    ref = next(iter(variants))
    base = statistics.median(times[ref])
    print(f"{len(sets)} conTest sets, roberta-base shape, fp32, {args.threads} threads, medians of {args.repeats}")
    for k in variants:
        med = statistics.median(times[k])
        diff = max(abs(a - b) for a, b in zip(scores[k], scores[ref]))
        print(f"{k:38s} {med:6.2f} s  {base / med:4.2f}x  max |Δ score| {diff:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
