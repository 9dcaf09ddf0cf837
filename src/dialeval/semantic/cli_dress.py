"""``dialeval dress-weights``: DRESS training weights and negative-training flags from a saved space."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from dialeval.io.files import atomic_write_lines, check_output_path, is_stdout
from dialeval.io.readers import read_texts
from dialeval.models.encoders import BATCH_SIZE
from dialeval.semantic.dress import HEAD_RULE, check_head


def register(sub: Any) -> None:
    p = sub.add_parser("dress-weights", help="DRESS weights (1 - p_ref(c))^gamma and head-cluster flags",
                       description="Per-example training weights w(r) = (1 - p_ref(c(r)))^gamma for training "
                                   "responses, and -1 flags for generated responses in the head clusters of the "
                                   "generated set (--head). Writes JSONL, one row per response.")
    p.add_argument("--space", required=True, help="directory of a space saved by `dialeval fit-space`")
    p.add_argument("--train", default=None,
                   help="training responses to weight (default: the space's own reference responses, by index)")
    p.add_argument("--generated", default=None, help="generated responses to flag")
    p.add_argument("--field", default=None, help="record field holding the response (JSONL/CSV)")
    p.add_argument("--gamma", type=float, default=30.0)
    head = p.add_mutually_exclusive_group()
    head.add_argument("--head", default=HEAD_RULE,
                      help="head clusters of the generated set: top5 (default; the paper's text, the five most "
                           "frequent clusters), share>0.1 (the reference code: clusters above 10 %%), or another "
                           "top<N> / share><T>")
    head.add_argument("--threshold", type=float, default=None, help="the same as --head 'share>T'")
    p.add_argument("--out", required=True, help="JSONL file to write (- for stdout)")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                   help=f"encoder batch size in texts (default {BATCH_SIZE}; on CPU also at most 1,024 padded tokens)")
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None)
    ray = p.add_argument_group("Ray engine (pip install 'dialeval[distributed]')",
                               "--engine ray reads --train/--generated as Parquet/JSONL/CSV (column --field, "
                               "default text) and writes --out as a Parquet folder per split: OUT/train/, "
                               "OUT/generated/ (the input columns plus cluster and weight)")
    ray.add_argument("--engine", choices=("local", "ray"), default="local", help="where to run (default: local)")
    ray.add_argument("--address", default=None, help="Ray cluster: auto, HOST:PORT or ray://HOST:10001")
    ray.add_argument("--concurrency", type=int, default=None, help="encoder actors (default: one per GPU, else CPUs/2)")
    ray.add_argument("--rows-per-batch", type=int, default=None, help="rows per Ray batch")
    p.set_defaults(func=run)


def _rows(res: dict[str, Any], train: list[str] | None, gen: list[str] | None) -> Iterator[dict[str, Any]]:
    for i, (label, w) in enumerate(zip(res["training_labels"], res["training_weights"])):
        row = {"split": "train", "index": i, "cluster": label, "weight": w}
        if train is not None:
            row["text"] = train[i]
        yield row
    for i, (label, w) in enumerate(zip(res.get("generated_labels", []), res.get("generated_weights", []))):
        yield {"split": "generated", "index": i, "cluster": label, "weight": w, "text": gen[i] if gen else None}


def head_rule(args: argparse.Namespace) -> str:
    """The rule from ``--head`` or its alias ``--threshold`` (checked here, before any model loads)."""
    if args.threshold is not None:
        if isinstance(args.threshold, bool) or not 0 <= args.threshold < 1:
            raise ValueError(f"--threshold {args.threshold!r}: use a share in [0, 1) (or --head top5 / share>0.1).")
        args.head = "share>" + format(args.threshold, ".12f").rstrip("0").rstrip(".")
        if float(args.head[6:]) != args.threshold:
            raise ValueError(f"--threshold {args.threshold!r}: give a share with at most 12 decimals (e.g. 0.1).")
    check_head(args.head)
    return args.head


def _head_line(res: dict[str, Any], flagged: int, total: int) -> str:
    return (f"head clusters ({res['head']}): {res['head_clusters']}; {flagged} of {total} generated responses "
            "flagged -1")


def run(args: argparse.Namespace) -> int:
    from dialeval.semantic.dress import dress_from_space
    from dialeval.semantic.space import SemanticSpace

    head_rule(args)
    if args.engine == "ray":
        return run_ray(args)
    out = check_output_path(args.out, inputs=[args.space, args.train, args.generated], option="--out")
    space = SemanticSpace.load(args.space)
    if args.device is not None or args.dtype is not None:
        space.use_encoder(None, device=args.device, dtype=args.dtype)
    train = read_texts(args.train, args.field) if args.train else None
    gen = read_texts(args.generated, args.field) if args.generated else None
    res = dress_from_space(space, train, gen, gamma=args.gamma, head=args.head, batch_size=args.batch_size)
    atomic_write_lines(out, _rows(res, train, gen))
    log = sys.stderr if is_stdout(out) else sys.stdout
    n_train = len(res["training_weights"])
    print(f"gamma={res['gamma']:g}: weighted {n_train} training responses "
          f"(min {min(res['training_weights']):.4g}, max {max(res['training_weights']):.4g})", file=log)
    if gen is not None:
        print(_head_line(res, sum(1 for w in res["generated_weights"] if w < 0), len(gen)), file=log)
    print(f"wrote {out}", file=log)
    return 0


def run_ray(args: argparse.Namespace) -> int:
    """Both splits through :func:`dialeval.distributed.dress_weights` (labels on an actor pool)."""
    from dialeval.distributed import dress_weights

    if args.train is None and args.generated is None:
        raise ValueError("--engine ray weights files: give --train and/or --generated (the space's own reference "
                         "responses are weighted without Ray: drop --engine).")
    out = check_output_path(args.out, inputs=[args.space, args.train, args.generated], kind="dir", option="--out")
    for split, path in (("train", args.train), ("generated", args.generated)):
        if path is None:
            continue
        res = dress_weights(path, args.space, split=split, output=str(out / split), column=args.field or "text",
                            gamma=args.gamma, head=args.head, address=args.address,
                            concurrency=args.concurrency, rows_per_batch=args.rows_per_batch, device=args.device,
                            dtype=args.dtype, batch_size=args.batch_size)
        if split == "generated":
            print(_head_line(res, res["flagged"], res["num_rows"]))
        print(f"wrote {res['output']}")
    return 0
