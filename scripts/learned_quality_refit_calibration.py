"""Refit the learned evaluator's next-utterance calibration to convergence, on unlabelled training dialogue.

``p_N = σ(a·s + a0)``: the trainer fits ``(a, a0)`` by AdamW beside the other losses, at the heads' learning rate,
so in one epoch it barely leaves its start ``[10, −5]``. This script replaces it by the maximum-likelihood logistic
fit (unregularised, to convergence) of "is the true next utterance" on ``--pairs`` DailyDialog training
(context, next utterance) pairs drawn with ``--seed``, each with one utterance of another training dialogue as the
negative, ``s`` computed as the metric computes it (its default ``turns=3`` context). Nothing else changes; no
human rating is read. The model card's run O:

    python scripts/learned_quality_refit_calibration.py --data-dir ../shared/data --out out/i_refit/

writes a new weights folder (refused if ``--out`` exists); ``--weights FOLDER`` refits other weights.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from dialeval.relevance.model import DEFAULT_TURNS


def pair_texts(dialogues: list[list[str]], pairs: int, seed: int, turns: int = DEFAULT_TURNS
               ) -> tuple[list[list[str]], list[str], list[str]]:
    """``pairs`` (context window, next utterance, random utterance of another dialogue) drawn by ``seed``."""
    rng = np.random.default_rng(seed)
    every = [(d, t) for d, dialogue in enumerate(dialogues) for t in range(1, len(dialogue))]
    windows, positives, negatives = [], [], []
    for i in rng.choice(len(every), size=min(pairs, len(every)), replace=False):
        d, t = every[i]
        windows.append(dialogues[d][max(0, t - turns):t])
        positives.append(dialogues[d][t])
        other = int(rng.integers(len(dialogues) - 1))
        other += other >= d  # any dialogue but d
        negatives.append(dialogues[other][int(rng.integers(len(dialogues[other])))])
    return windows, positives, negatives


def logistic_fit(s: np.ndarray, y: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """``(a, a0)`` minimising the mean BCE of ``σ(a·s + a0)`` against ``y``; with the BCE at ``start`` and at the fit,
    and the largest gradient component at the fit (the score equations' residual: 0 at the maximum likelihood)."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    def nll(p: np.ndarray) -> float:
        z = p[0] * s + p[1]
        return float(-np.mean(y * log_expit(z) + (1 - y) * log_expit(-z)))

    def grad(p: np.ndarray) -> np.ndarray:
        r = expit(p[0] * s + p[1]) - y
        return np.array([np.mean(r * s), np.mean(r)])

    fit = minimize(nll, start, jac=grad, method="BFGS", options={"gtol": 1e-12})
    return fit.x, nll(start), nll(fit.x), float(np.abs(grad(fit.x)).max())


def refit(data_dir: str, weights: str | None, tmp: Path, pairs: int, seed: int) -> dict[str, Any]:
    """Fit the calibration of ``weights`` (``None``: the shipped ones) on ``pairs`` training pairs and write the
    weights with it into the folder ``tmp``; return the record stored in its ``evaluator.json``."""
    from safetensors.numpy import load_file, save_file

    from dialeval.io.files import file_sha256
    from dialeval.relevance import core
    from dialeval.relevance.corpus import load_corpus
    from dialeval.relevance.evaluator import (
        DELTA_FILE,
        DELTA_META,
        context_embeddings,
        default_weights,
        load_evaluator,
    )
    from dialeval.relevance.model import next_utterance_similarity

    source = Path(weights) if weights else default_weights()
    windows, positives, negatives = pair_texts(load_corpus(data_dir).train, pairs, seed)
    encoder, heads, name, _ = load_evaluator(source)
    lookup = core.embed_lookup(encoder, [t for w in windows for t in w] + positives + negatives, 64, None)
    ctx = context_embeddings(windows, lookup, DEFAULT_TURNS)
    s = np.concatenate([next_utterance_similarity(heads, ctx, np.stack([lookup[x] for x in texts]))
                        for texts in (positives, negatives)])
    y = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
    start = np.asarray(heads["calibration"], dtype=np.float64)
    fitted, before, after, gradient = logistic_fit(s, y, start)
    if not gradient < 1e-6:
        raise ValueError(f"the logistic fit did not converge (gradient {gradient:.1e}); try another --seed or more --pairs.")
    tensors = load_file(str(source / DELTA_FILE))
    tensors["head.calibration"] = fitted.astype(tensors["head.calibration"].dtype)
    meta = json.loads((source / DELTA_META).read_text(encoding="utf-8"))
    meta["calibration_refit"] = {"from_weights": name, "pairs": len(positives), "pairs_asked": pairs, "seed": seed,
                                 "turns": DEFAULT_TURNS, "calibration_before": start.tolist(),
                                 "calibration_after": fitted.tolist(), "bce_before": round(before, 6),
                                 "bce_after": round(after, 6), "gradient_at_fit": gradient}
    save_file(tensors, str(tmp / DELTA_FILE))
    meta["sha256"] = file_sha256(tmp / DELTA_FILE)
    (tmp / DELTA_META).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta["calibration_refit"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True, help="the folder holding dailydialog/ (DailyDialog's training split)")
    ap.add_argument("--weights", help="the weights folder to refit (default: the shipped weights)")
    ap.add_argument("--out", required=True, help="the new weights folder (must not exist)")
    ap.add_argument("--pairs", type=int, default=10_000, help="training pairs to fit on (default 10,000)")
    ap.add_argument("--seed", type=int, default=0, help="draws the pairs and their negatives (default 0)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        ap.error(f"--out {out} exists; give a new folder (this script writes the refit weights there whole).")
    if not out.parent.is_dir():
        ap.error(f"--out {out}: its parent folder does not exist.")
    if not 100 <= args.pairs <= 1_000_000:
        ap.error(f"--pairs {args.pairs}: give an integer from 100 to 1,000,000.")
    if not 0 <= args.seed < 2**32:
        ap.error(f"--seed {args.seed}: give an integer from 0 to {2**32 - 1:,}.")
    try:  # the folder is made first, so an unwritable --out fails before the embedding work
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    except OSError as exc:
        ap.error(f"--out {out}: cannot write there ({exc.strerror}).")
    try:
        record = refit(args.data_dir, args.weights, tmp, args.pairs, args.seed)
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp's folder is private; the weights folder reads like any other
        if out.exists():
            raise ValueError(f"--out {out} appeared while the fit ran; nothing was written there.")
        tmp.rename(out)
    except (ValueError, OSError) as exc:
        print(f"learned_quality_refit_calibration: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    fewer = f" (all the training pairs there are, not {args.pairs:,})" if record["pairs"] < args.pairs else ""
    print(f"{record['from_weights']}: calibration {np.round(record['calibration_before'], 3).tolist()} → "
          f"{np.round(record['calibration_after'], 3).tolist()}, BCE {record['bce_before']:.4f} → "
          f"{record['bce_after']:.4f} on {record['pairs']:,} pairs{fewer}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
