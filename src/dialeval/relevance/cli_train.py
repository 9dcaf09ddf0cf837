"""``dialeval train-evaluator``: train the learned quality evaluator on DailyDialog's training split (no human
rating is read), resumably, and write its weights (a delta over all-MiniLM-L6-v2) to a folder."""

from __future__ import annotations

import argparse
import re
from typing import Any

from dialeval.relevance.training import TrainConfig


def register(sub: Any) -> None:
    d = TrainConfig()
    p = sub.add_parser("train-evaluator",
                       help="train the learned quality evaluator on DailyDialog and DailyDialog++'s written rivals",
                       description="Tune the top layers of all-MiniLM-L6-v2 with valid- and next-utterance heads on "
                                   "DailyDialog's training dialogues (those overlapping validation or test left out) "
                                   "and DailyDialog++'s same-context rivals (--rival-contexts), "
                                   "check it on validation dialogue, and write evaluator.safetensors and "
                                   "evaluator.json to --out. A killed run resumes from --work-dir.")
    p.add_argument("--data-dir", required=True,
                   help="the dailydialog folder or the folder above it: train/dialogues_train.txt (the original "
                        "release's training split) and ParlAI's validation.json and test.json (the held-out "
                        "dialogues, left out of training and used for the proxy); with --rival-contexts, "
                        "dailydialog_plusplus/dev.json beside or under it")
    p.add_argument("--out", required=True, help="folder to write the evaluator to (use it with weights=FOLDER)")
    p.add_argument("--work-dir", default=None, help="checkpoints, to resume a killed run (default: OUT.work)")
    p.add_argument("--seed", type=int, default=d.seed, help=f"batches, perturbations and heads (default {d.seed})")
    p.add_argument("--max-dialogues", type=int, default=d.max_dialogues or 0,
                   help="train on the first N dialogues and at most N rival contexts (default 0: all of them)")
    p.add_argument("--tuned-layers", type=int, default=d.tuned_layers, help=f"top layers tuned (default {d.tuned_layers})")
    p.add_argument("--epochs", type=int, default=d.epochs, help=f"passes over the dialogues (default {d.epochs})")
    p.add_argument("--batch-dialogues", type=int, default=d.batch_dialogues,
                   help=f"dialogues per step (default {d.batch_dialogues})")
    p.add_argument("--context-turns", type=int, default=d.context_turns,
                   help="context turns pooled for the next-utterance signal while training: weight 1 for the last "
                        "turn, 1/2 for the one before, 1/4 for the one before that, as the metric's `turns` option "
                        f"pools them (default {d.context_turns}). The metric reads `turns=3` whatever the weights "
                        "were trained on: score with turns=N to match")
    p.add_argument("--rival-contexts", type=int, default=d.rival_contexts,
                   help="DailyDialog++ contexts per step (from DATA_DIR/dailydialog_plusplus/dev.json, its training "
                        "half) whose five human-written positive responses must score above their five adversarial "
                        f"negatives (default {d.rival_contexts}; 0: DailyDialog alone)")
    p.add_argument("--rival-weight", type=float, default=d.rival_weight,
                   help=f"the rival loss's weight beside the other losses (default {d.rival_weight})")
    p.add_argument("--copy-weight", type=float, default=d.copy_weight,
                   help="weight of a loss that ranks each next utterance above a copy of its context's last turn "
                        f"(repeating what was just said is not a reply; default {d.copy_weight}: off)")
    p.add_argument("--pair-hidden", type=int, default=d.pair_hidden,
                   help="hidden units of a pair head that reads context and response jointly ([c', r, c'*r, |c'-r|], "
                        f"added to their cosine; default {d.pair_hidden}: cosine alone)")
    p.add_argument("--pair-without-context", action="store_true",
                   help="the pair head reads [r, c'*r, |c'-r|] only, so it cannot shift all of one context's "
                        "replies together (needs --pair-hidden)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def config_from(args: argparse.Namespace) -> TrainConfig:
    """The run's configuration; one line per bad value (:class:`TrainConfig` checks them), naming the option."""
    if args.max_dialogues == 0:
        args.max_dialogues = None  # every dialogue
    try:
        return TrainConfig(seed=args.seed, max_dialogues=args.max_dialogues, tuned_layers=args.tuned_layers,
                           epochs=args.epochs, batch_dialogues=args.batch_dialogues,
                           context_turns=args.context_turns, rival_contexts=args.rival_contexts,
                           rival_weight=args.rival_weight, copy_weight=args.copy_weight,
                           pair_hidden=args.pair_hidden, pair_context_block=not args.pair_without_context)
    except ValueError as exc:  # "field (--option) value: ..." reads "--option value: ..." here
        raise ValueError(re.sub(r"\b[a-z_]+(?:=\w+)? \((--[a-z-]+)\)", r"\1", str(exc))) from None


def run(args: argparse.Namespace) -> int:
    from dialeval.relevance.trainer import train_evaluator

    config = config_from(args)
    train_evaluator(args.data_dir, args.out, config=config, work_dir=args.work_dir, progress=not args.no_progress)
    return 0
