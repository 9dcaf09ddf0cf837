"""``dialeval datasets``: list the builders, export a corpus in the Hub layout; ``dialstory-make`` (DialStory
examples from raw stories) is registered from :mod:`dialeval.dialstory.cli_make`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dialeval.dialstory.cli_make import register_make


def register(sub: Any) -> None:
    p = sub.add_parser("datasets", help="benchmark datasets: list, export to the Hub layout, dialstory-make")
    cmds = p.add_subparsers(dest="datasets_command", required=True)

    ls = cmds.add_parser("list", help="list datasets and their configs")
    ls.set_defaults(func=run_list)

    ex = cmds.add_parser("export", help="write NAME as Parquet/JSON Lines per config and split plus a dataset card")
    ex.add_argument("name", help="a dataset of `dialeval datasets list` (dstc10: any file in the DSTC10 Track 5 format)")
    ex.add_argument("--data-dir", default=None,
                    help="the folder holding the datasets' folders (as for `dialeval leaderboard`), or the dataset's "
                         "own folder (default: $DIALEVAL_DATA_DIR)")
    ex.add_argument("--file", default=None, metavar="F",
                    help="build this one file in the dataset's format (dstc10, contest) instead of --data-dir")
    ex.add_argument("--out", required=True, help="output folder (datasets.load_dataset(OUT, CONFIG) loads it)")
    ex.add_argument("--config", action="append", default=None, help="config to export (repeatable; default: all)")
    ex.add_argument("--format", choices=("parquet", "jsonl"), default="parquet", help="file format per split")
    ex.add_argument("--cache-dir", default=None, help="datasets cache folder for the intermediate build")
    ex.add_argument("--overwrite", action="store_true", help="replace --out even when it is not an earlier export")
    ex.add_argument("--allow-duplicates", action="store_true",
                    help="keep rows that repeat an id (refused by default: they would be counted twice)")
    ex.set_defaults(func=run_export)

    register_make(cmds)  # dialstory-make: the DialStory family's builder command


def run_list(args: argparse.Namespace) -> int:
    from dialeval.datasets import BUILDERS, FILE_BUILDERS, config_names

    for name in BUILDERS:
        print(f"{name}: {', '.join(config_names(name))}")
    for name in FILE_BUILDERS.keys() - BUILDERS.keys():
        print(f"{name}: {', '.join(config_names(name))} (any file in its format: --file F)")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from dialeval.datasets import export, export_notes

    counts = export(args.name, args.out, data_dir=args.data_dir, configs=args.config, file_format=args.format,
                    cache_dir=args.cache_dir, allow_duplicates=args.allow_duplicates,
                    overwrite=args.overwrite, data_files=args.file)
    for cfg, splits in counts.items():
        print(f"{cfg}: " + ", ".join(f"{split} {n} rows" for split, n in splits.items()))
    for note in export_notes(args.name, data_dir=args.data_dir, data_files=args.file):
        print(f"note: {note}")
    out = Path(args.out).expanduser()
    print(f"wrote {out / 'README.md'}; load with datasets.load_dataset({str(out)!r}, CONFIG)")
    return 0
