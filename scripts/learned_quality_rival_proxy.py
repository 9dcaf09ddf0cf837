"""How well ``learned_quality`` ranks a context's own good responses above its rivals, judged without human ratings.

The proxy is the held-out half of DailyDialog++'s ``dev.json`` (:func:`dialeval.relevance.rivals.load_rivals`,
``half="proxy"``; the other half is what ``train-evaluator --rival-contexts`` trains on, and ``test.json`` is read
by neither). Each context has five human-written positive responses, five adversarial negatives (written to share
its words or topic without following it) and five random ones. Every response is scored through the metric itself
(:func:`compute_learned_quality`, default options: the product U·S, ``turns=3``) and each pair of the same
context counts as right when the positive scores higher (a tie counts one half). No human quality rating is read:
the positives and negatives are written replies.

    python scripts/learned_quality_rival_proxy.py --data-dir ../shared/data

writes ``docs/results/learned_quality_rival_proxy.json`` (under a minute on 2 cores); with ``--weights FOLDER
--out FILE`` it checks other weights (the model card's run G: ``docs/results/learned_quality_rival_proxy_g.json``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from dialeval.io.files import atomic_write_json, check_output_path
from dialeval.relevance.evaluator import compute_learned_quality, default_weights, read_delta
from dialeval.relevance.rivals import Rivals, load_rivals

OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "learned_quality_rival_proxy.json"
COMMAND = "python scripts/learned_quality_rival_proxy.py --data-dir ../shared/data"


def pair_accuracy(good: np.ndarray, bad: np.ndarray) -> float:
    """Share of (good, bad) pairs within each row where good > bad, ties one half: rows ``(contexts, k)``."""
    diff = good[:, :, None] - bad[:, None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def rival_accuracies(rivals: list[Rivals], weights: str | None = None) -> dict[str, float]:
    """Positive-vs-adversarial and positive-vs-random pair accuracy of the score and of S (next utterance) alone."""
    groups = [r.positives + r.adversarial + r.random for r in rivals]
    k = len(rivals[0].positives)
    out = compute_learned_quality([r.context for r, g in zip(rivals, groups) for _ in g],
                                  [c for g in groups for c in g], config="turn", weights=weights, progress=False)
    result = {}
    for name, values in (("score", out["scores"]), ("next_utterance", out["next_utterance"])):
        table = np.asarray(values, dtype=float).reshape(len(rivals), 3 * k)
        result[f"{name}_vs_adversarial"] = round(pair_accuracy(table[:, :k], table[:, k:2 * k]), 4)
        result[f"{name}_vs_random"] = round(pair_accuracy(table[:, :k], table[:, 2 * k:]), 4)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="the folder holding dailydialog/ and dailydialog_plusplus/")
    parser.add_argument("--weights", default=None,
                        help="a folder written by `dialeval train-evaluator` (default: the shipped weights)")
    parser.add_argument("--out", default=None,
                        help=f"result file (default: {OUT.relative_to(OUT.parents[2])} for the shipped weights; "
                             "required with --weights)")
    args = parser.parse_args(argv)
    if args.weights and not args.out:
        parser.error("--weights needs --out: the committed result file holds the shipped weights' proxy only")
    began = time.perf_counter()
    try:
        out = check_output_path(args.out, inputs=[args.data_dir, args.weights], option="--out") if args.out else OUT
        _tensors, meta, digest = read_delta(args.weights or default_weights())
        rivals = load_rivals(args.data_dir, "proxy")
    except (OSError, ValueError) as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")
    row = rival_accuracies(rivals, args.weights)
    result = {"command": COMMAND if args.weights is None else f"{COMMAND} --weights {args.weights} --out {args.out}",
              "contexts": len(rivals), "pairs_per_kind": len(rivals) * len(rivals[0].positives) ** 2,
              "weights": f"learned_quality@{digest[:12]}", "weights_config": meta.get("config"), **row,
              "seconds": round(time.perf_counter() - began, 1)}
    atomic_write_json(out, result)
    print(f"{len(rivals)} contexts: positive above adversarial {row['score_vs_adversarial']:.3f} (S alone "
          f"{row['next_utterance_vs_adversarial']:.3f}), above random {row['score_vs_random']:.3f}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
