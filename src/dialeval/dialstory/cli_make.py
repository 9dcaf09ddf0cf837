"""``dialeval datasets dialstory-make``: DialStory task examples from raw stories, by the paper's recipe (the
builder is :mod:`dialeval.datasets.dialstory`; this is its command line)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dialeval.io.files import atomic_write_lines, check_output_path, is_stdout


def register_make(cmds: Any) -> None:
    """Add ``dialstory-make`` to the ``dialeval datasets`` sub-commands."""
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


def run_dialstory_make(args: argparse.Namespace) -> int:
    from dialeval.datasets.dialstory import make_dialgen, make_dialspk, read_raw_stories

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
