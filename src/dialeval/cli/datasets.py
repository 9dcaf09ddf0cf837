"""``dialeval datasets``: list the builders, export a corpus in the Hub layout, build DialStory examples."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("datasets", help="benchmark datasets: list, export to the Hub layout, dialstory-make")
    cmds = p.add_subparsers(dest="datasets_command", required=True)

    ls = cmds.add_parser("list", help="list datasets and their configs")
    ls.set_defaults(func=run_list)

    ex = cmds.add_parser("export", help="write NAME as Parquet/JSON Lines per config and split plus a dataset card")
    ex.add_argument("name", help="contest, dailydialog_plusplus, fed, dailydialog or dialstory")
    ex.add_argument("--data-dir", default=None, help="folder holding the original files (default: $DIALEVAL_DATA_DIR/<folder>)")
    ex.add_argument("--out", required=True, help="output folder (datasets.load_dataset(OUT, CONFIG) loads it)")
    ex.add_argument("--config", action="append", default=None, help="config to export (repeatable; default: all)")
    ex.add_argument("--format", choices=("parquet", "jsonl"), default="parquet", help="file format per split")
    ex.add_argument("--cache-dir", default=None, help="datasets cache folder for the intermediate build")
    ex.add_argument("--overwrite", action="store_true", help="replace --out even when it is not an earlier export")
    ex.add_argument("--allow-duplicates", action="store_true",
                    help="keep rows that repeat an id (refused by default: they would be counted twice)")
    ex.set_defaults(func=run_export)

    mk = cmds.add_parser("dialstory-make", help="build DialGen examples from raw stories (paper's recipe)")
    mk.add_argument("--input", required=True, help="JSON Lines of {id, story, characters?} or a folder of .txt stories")
    mk.add_argument("--out", required=True, help="output JSON Lines (e.g. DIR/dialgen/test.jsonl; - for stdout)")
    mk.add_argument("--seed", type=int, default=0, help="random seed (each story is seeded by seed and its id)")
    mk.add_argument("--mask-ratio", type=float, default=0.3, help="share of dialogue turns to mask (default 0.3)")
    mk.add_argument("--head", type=int, default=50, help="never mask inside the first HEAD tokens (default 50)")
    mk.add_argument("--tail", type=int, default=30, help="never mask inside the last TAIL tokens (default 30)")
    mk.add_argument("--min-turns", type=int, default=10, help="skip stories with fewer turns (default 10)")
    mk.add_argument("--min-characters", type=int, default=5,
                    help="skip stories mentioning fewer distinct characters (person names; default 5)")
    mk.add_argument("--min-share", type=float, default=0.3,
                    help="skip stories whose dialogue holds less of the tokens (default 0.3; see the card for the unit)")
    mk.add_argument("--max-share", type=float, default=0.5,
                    help="skip stories whose dialogue holds more of the tokens (default 0.5)")
    mk.add_argument("--characters", choices=("finder", "jieba", "given"), default="finder",
                    help="characters found by the rule-based finder (default: jieba person tags, name patterns, "
                         "role titles, speech subjects), by jieba person tags only, or the input's lists "
                         "(names absent from the story are dropped)")
    mk.add_argument("--dialspk-out", default=None,
                    help="also write DialSpk-style training data (speakers annotated automatically) to this file")
    mk.add_argument("--mask-text", choices=("escape", "skip"), default="escape",
                    help="a story already containing '[MASK': escape it as '[[MASK' (default) or skip the story")
    mk.add_argument("--unit", choices=("auto", "char", "word"), default="auto",
                    help="token unit for head/tail: char (Chinese), word, or auto (char when the text has CJK)")
    mk.set_defaults(func=run_dialstory_make)


def run_list(args: argparse.Namespace) -> int:
    from dialeval.datasets import BUILDERS, config_names

    for name in BUILDERS:
        print(f"{name}: {', '.join(config_names(name))}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from dialeval.datasets import export

    counts = export(args.name, args.out, data_dir=args.data_dir, configs=args.config, file_format=args.format,
                    cache_dir=args.cache_dir, allow_duplicates=args.allow_duplicates,
                    overwrite=args.overwrite)
    for cfg, splits in counts.items():
        print(f"{cfg}: " + ", ".join(f"{split} {n} rows" for split, n in splits.items()))
    out = Path(args.out).expanduser()
    print(f"wrote {out / 'README.md'}; load with datasets.load_dataset({str(out)!r}, CONFIG)")
    return 0


def run_dialstory_make(args: argparse.Namespace) -> int:
    from dialeval.datasets.dialstory import make_dialgen, make_dialspk, read_raw_stories
    from dialeval.files import atomic_write_lines, check_output_path, is_stdout

    target = check_output_path(args.out, inputs=[args.input], option="--out")
    spk_target = (check_output_path(args.dialspk_out, inputs=[args.input, args.out], option="--dialspk-out")
                  if args.dialspk_out else None)
    stories = read_raw_stories(args.input)
    examples, skipped = make_dialgen(stories, characters=args.characters, seed=args.seed,
                                     mask_ratio=args.mask_ratio, head=args.head, tail=args.tail,
                                     min_turns=args.min_turns, min_characters=args.min_characters,
                                     min_share=args.min_share, max_share=args.max_share,
                                     unit=args.unit, mask_text=args.mask_text)
    out = atomic_write_lines(target, examples)
    print(f"{len(examples)} of {len(stories)} stories written to {out}", file=sys.stderr if is_stdout(out) else sys.stdout)
    for reason, n in skipped.items():
        print(f"dropped {n}: {reason}", file=sys.stderr)
    if args.dialspk_out:
        spk, spk_skipped = make_dialspk(stories, characters=args.characters)
        path = atomic_write_lines(spk_target, spk)
        print(f"{len(spk)} of {len(stories)} stories with automatic speakers written to {path}")
        for reason, n in spk_skipped.items():
            print(f"dialspk: dropped {n}: {reason}", file=sys.stderr)
    return 0
