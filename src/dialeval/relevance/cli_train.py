"""``dialeval train-evaluator``: train the learned quality evaluator on DailyDialog's training split (no human
rating is read), resumably, and write its weights (a delta over all-MiniLM-L6-v2) to a folder."""

from __future__ import annotations

import argparse
from typing import Any

from dialeval.relevance.training import TrainConfig


def register(sub: Any) -> None:
    d = TrainConfig()
    p = sub.add_parser("train-evaluator", help="train the learned quality evaluator on unlabelled DailyDialog",
                       description="Tune the top layers of all-MiniLM-L6-v2 with valid- and next-utterance heads on "
                                   "DailyDialog's training dialogues (those overlapping validation or test left out), "
                                   "check it on validation dialogue, and write evaluator.safetensors and "
                                   "evaluator.json to --out. A killed run resumes from --work-dir.")
    p.add_argument("--data-dir", required=True,
                   help="the dailydialog folder or the folder above it: train/dialogues_train.txt (the original "
                        "release's training split) and ParlAI's validation.json and test.json (the held-out "
                        "dialogues, left out of training and used for the proxy)")
    p.add_argument("--out", required=True, help="folder to write the evaluator to (use it with weights=FOLDER)")
    p.add_argument("--work-dir", default=None, help="checkpoints, to resume a killed run (default: OUT.work)")
    p.add_argument("--seed", type=int, default=d.seed, help=f"batches, perturbations and heads (default {d.seed})")
    p.add_argument("--max-dialogues", type=int, default=d.max_dialogues,
                   help=f"train on the first N dialogues (default {d.max_dialogues}; 0 = all)")
    p.add_argument("--tuned-layers", type=int, default=d.tuned_layers, help=f"top layers tuned (default {d.tuned_layers})")
    p.add_argument("--epochs", type=int, default=d.epochs, help=f"passes over the dialogues (default {d.epochs})")
    p.add_argument("--batch-dialogues", type=int, default=d.batch_dialogues,
                   help=f"dialogues per step (default {d.batch_dialogues})")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def config_from(args: argparse.Namespace) -> TrainConfig:
    """The run's configuration; one line per bad value."""
    checks = {"--seed": (args.seed, 0), "--max-dialogues": (args.max_dialogues, 0),
              "--tuned-layers": (args.tuned_layers, 1), "--epochs": (args.epochs, 1),
              "--batch-dialogues": (args.batch_dialogues, 2)}
    for option, (value, low) in checks.items():
        if value < low:
            raise ValueError(f"{option} {value}: give an integer of at least {low}.")
    if args.tuned_layers > 6:
        raise ValueError(f"--tuned-layers {args.tuned_layers}: all-MiniLM-L6-v2 has 6 layers; give 1 to 6.")
    return TrainConfig(seed=args.seed, max_dialogues=args.max_dialogues or None, tuned_layers=args.tuned_layers,
                       epochs=args.epochs, batch_dialogues=args.batch_dialogues)


def run(args: argparse.Namespace) -> int:
    from dialeval.relevance.trainer import train_evaluator

    config = config_from(args)
    train_evaluator(args.data_dir, args.out, config=config, work_dir=args.work_dir, progress=not args.no_progress)
    return 0
