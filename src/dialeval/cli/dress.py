"""``dialeval dress-weights``: DRESS training weights and negative-training flags from a saved space."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..io import read_texts


def register(sub: Any) -> None:
    p = sub.add_parser("dress-weights", help="DRESS weights (1 - p_ref(c))^gamma and head-cluster flags",
                       description="Per-example training weights w(r) = (1 - p_ref(c(r)))^gamma for training "
                                   "responses, and -1 flags for generated responses in clusters holding more "
                                   "than --threshold of the generated set. Writes JSONL, one row per response.")
    p.add_argument("--space", required=True, help="directory of a space saved by `dialeval fit-space`")
    p.add_argument("--train", default=None,
                   help="training responses to weight (default: the space's own reference responses, by index)")
    p.add_argument("--generated", default=None, help="generated responses to flag")
    p.add_argument("--field", default=None, help="record field holding the response (JSONL/CSV)")
    p.add_argument("--gamma", type=float, default=30.0)
    p.add_argument("--threshold", type=float, default=0.1)
    p.add_argument("--out", required=True, help="JSONL file to write")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..dress import dress_from_space
    from ..semantic import SemanticSpace

    space = SemanticSpace.load(args.space)
    if args.device is not None or args.dtype is not None:
        space.use_encoder(None, device=args.device, dtype=args.dtype)
    train = read_texts(args.train, args.field) if args.train else None
    gen = read_texts(args.generated, args.field) if args.generated else None
    res = dress_from_space(space, train, gen, gamma=args.gamma, threshold=args.threshold,
                           batch_size=args.batch_size)
    with open(args.out, "w", encoding="utf-8") as f:
        for i, (label, w) in enumerate(zip(res["training_labels"], res["training_weights"])):
            row = {"split": "train", "index": i, "cluster": label, "weight": w}
            if train is not None:
                row["text"] = train[i]
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        for i, (label, w) in enumerate(zip(res.get("generated_labels", []), res.get("generated_weights", []))):
            f.write(json.dumps({"split": "generated", "index": i, "cluster": label, "weight": w,
                                "text": gen[i]}, ensure_ascii=False) + "\n")
    n_train = len(res["training_weights"])
    print(f"gamma={res['gamma']:g}: weighted {n_train} training responses "
          f"(min {min(res['training_weights']):.4g}, max {max(res['training_weights']):.4g})")
    if gen is not None:
        flagged = sum(1 for w in res["generated_weights"] if w < 0)
        print(f"head clusters (share > {res['threshold']:g}): {res['head_clusters']}; "
              f"{flagged} of {len(gen)} generated responses flagged -1")
    print(f"wrote {args.out}")
    return 0
