"""``dialeval hub build``: ready-to-push folders for every Hub repo (metric Spaces, demo, datasets)."""

from __future__ import annotations

import argparse
from typing import Any

from dialeval.hub.repos import build


def register(sub: Any) -> None:
    p = sub.add_parser("hub", help="Hugging Face Hub: build ready-to-push Space and dataset folders")
    cmds = p.add_subparsers(dest="hub_command", required=True)
    b = cmds.add_parser("build", help="write one folder per Hub repo and print the upload commands")
    b.add_argument("--org", required=True, help="Hub user or organisation the repos will live under")
    b.add_argument("--out", required=True, help="output folder (new, empty or an earlier build; replaced atomically)")
    b.add_argument("--allow-duplicates", action="store_true",
                   help="export datasets whose source repeats records as published (e.g. DailyDialog)")
    b.add_argument("--overwrite", action="store_true", help="replace --out even when it holds files no build wrote")
    b.add_argument("--from-index", action="store_true",
                   help="requirements.txt asks for dialeval==VERSION from the package index instead of "
                        "vendoring the wheel into each Space")
    b.add_argument("--wheel-url", default="", metavar="URL",
                   help="absolute URL requirements.txt installs the vendored wheel from (a URL ending in / gets "
                        "the wheel's file name appended; default: each Space repo's own file URL, "
                        "https://huggingface.co/spaces/ORG/NAME/resolve/main/WHEEL, where `hf upload` puts it)")
    b.add_argument("--wheel", default=None, help="vendor this dialeval wheel (default: build one from the checkout)")
    b.add_argument("--data-dir", default=None,
                   help="folder holding the datasets' original files (default: $DIALEVAL_DATA_DIR); "
                        "required when dataset repos are built")
    b.add_argument("--no-datasets", action="store_true", help="write the Spaces only (no dataset repos)")
    b.add_argument("--only", nargs="+", default=None, metavar="NAME",
                   help="only these repos (metric names, dialeval-demo, dataset names)")
    b.add_argument("--cache-dir", default=None, help="datasets cache folder for the dataset exports")
    b.add_argument("--leaderboard", default=None, metavar="DIR",
                   help="also write datasets/dialeval-leaderboard from this `dialeval leaderboard --out` folder")
    b.add_argument("--torch", default="cpu", choices=("cpu", "cu126", "image"),
                   help="the torch build the model Spaces install: cpu (default, for the free CPU hardware), cu126 "
                        "(T4/L4/A10G/A100), image (ZeroGPU: the Space image's own torch)")
    b.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    repos = build(args.org, args.out, from_index=args.from_index, wheel=args.wheel, wheel_url=args.wheel_url,
                  data_dir=args.data_dir, only=args.only, datasets=not args.no_datasets, cache_dir=args.cache_dir,
                  overwrite=args.overwrite, allow_duplicates=args.allow_duplicates,
                  leaderboard=args.leaderboard, torch=args.torch)
    print(f"wrote {len(repos)} folders under {args.out}; publish them with (also in upload.sh):")
    for repo in repos:
        print(repo.upload_command())
    return 0
