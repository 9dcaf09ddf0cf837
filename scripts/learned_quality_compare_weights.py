"""How close retrained ``learned_quality`` weights are to the shipped ones: tensor by tensor, and in the scores.

    python scripts/learned_quality_compare_weights.py --data-dir ../shared/data --weights out/evaluator/

Reads both ``evaluator.safetensors`` files and reports, per tensor, the largest absolute difference over the
largest absolute value of the shipped tensor (the worst tensors first), then scores the first 1,000 (context,
next turn) pairs of DailyDialog test (unlabelled: no human rating is read) with both weights through the metric
(default options) and reports the largest and mean |Δ score| and the Spearman ρ between the two, with the
retrained run's training seconds and torch version (its ``evaluator.json``). Weights trained with the default
options go to ``docs/results/learned_quality_retrain.<CPU kind>.json``, so a retrain on each CPU kind keeps its
own record; other weights need ``--out``. A file this script did not write is never replaced.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from dialeval.io.files import atomic_write_json, check_output_path
from dialeval.models.cpu import cpu_kind
from dialeval.relevance.corpus import dailydialog_test_pairs
from dialeval.relevance.evaluator import compute_learned_quality, default_weights, read_delta
from dialeval.relevance.proxies import written_by
from dialeval.relevance.training import TrainConfig, config_dict

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "python scripts/learned_quality_compare_weights.py"


def tensor_differences(shipped: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> list[dict[str, object]]:
    """Per tensor: max |a − b|, max |a| and their ratio, worst ratio first (the same names required)."""
    if shipped.keys() != other.keys():
        raise ValueError(f"the weights hold other tensors: {sorted(set(shipped) ^ set(other))[:5]}")
    rows = []
    for name, a in shipped.items():
        a64, b64 = a.astype(np.float64), other[name].astype(np.float64)
        if a64.shape != b64.shape:
            raise ValueError(f"tensor {name}: shape {b64.shape}, shipped {a64.shape}")
        diff, scale = float(np.max(np.abs(a64 - b64), initial=0.0)), float(np.max(np.abs(a64), initial=0.0))
        relative = diff / scale if scale else (float("inf") if diff else 0.0)
        rows.append({"tensor": name, "max_abs_diff": diff, "max_abs_value": scale, "relative": relative,
                     "identical": bool(np.array_equal(a, other[name]))})
    return sorted(rows, key=lambda r: -float(r["relative"]))


def target(ap: argparse.ArgumentParser, args: argparse.Namespace, meta: dict) -> Path:
    """The result file: ``--out``, or for default-option weights the CPU kind's record; refused in one line when it
    lies in an input or holds a file this script did not write."""
    if args.out is None and meta.get("config") != config_dict(TrainConfig()):
        ap.error(f"--weights {args.weights}: trained with other options than the defaults; give --out (the "
                 "default record is the documented command's)")
    out = args.out or ROOT / "docs" / "results" / f"learned_quality_retrain.{cpu_kind().name}.json"
    try:
        out = check_output_path(out, inputs=[args.data_dir, args.weights, default_weights()], option="--out")
    except (OSError, ValueError) as exc:
        ap.error(str(exc))
    if not written_by(out, SCRIPT):
        ap.error(f"--out {out}: the file exists and this script did not write it; remove it or give another path")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="the folder holding dailydialog/test.json")
    ap.add_argument("--weights", type=Path, required=True, help="a folder `dialeval train-evaluator` wrote")
    ap.add_argument("--out", type=Path, default=None, help="result file (default for default-option weights: "
                    "docs/results/learned_quality_retrain.<CPU kind>.json)")
    args = ap.parse_args(argv)
    if not (args.data_dir / "dailydialog" / "test.json").is_file():
        ap.error(f"--data-dir {args.data_dir}: no dailydialog/test.json there; give the shared data folder")
    try:  # read_delta verifies each file's checksum and keeps the read for the scoring below
        shipped_tensors, _, shipped_digest = read_delta(default_weights())
        tensors, meta, digest = read_delta(args.weights)
        rows = tensor_differences(shipped_tensors, tensors)
    except (OSError, ValueError) as exc:
        ap.error(f"--weights {args.weights}: {exc}; pass a folder `dialeval train-evaluator` wrote")
    out = target(ap, args, meta)
    contexts, responses = dailydialog_test_pairs(args.data_dir, 1000)
    shipped = np.array(compute_learned_quality(contexts, responses, progress=False)["scores"])
    retrained = np.array(compute_learned_quality(contexts, responses, weights=str(args.weights), progress=False)["scores"])
    delta = np.abs(shipped - retrained)
    result = {
        "command": f"{SCRIPT} --data-dir {shlex.quote(str(args.data_dir))} --weights DIR"
                   + (f" --out {shlex.quote(str(args.out))}" if args.out else ""),
        "cpu_kind": cpu_kind().name, "train_seconds": meta.get("train_seconds"), "torch": meta.get("torch"),
        "sha256_retrained": digest, "sha256_shipped": shipped_digest,
        "tensors": len(rows), "identical_tensors": sum(bool(r["identical"]) for r in rows),
        "pairs": len(responses), "max_abs_score_diff": float(delta.max()), "mean_abs_score_diff": float(delta.mean()),
        "spearman": float(spearmanr(shipped, retrained)[0]), "worst_tensors": rows[:8],
    }
    atomic_write_json(out, result)
    print(f"{result['identical_tensors']}/{len(rows)} tensors identical; worst {rows[0]['tensor']} "
          f"{rows[0]['relative']:.3g} of its largest value; scores on {len(responses)} pairs: max |Δ| "
          f"{result['max_abs_score_diff']:.3g}, Spearman {result['spearman']:.6f}; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
