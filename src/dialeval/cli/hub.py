"""``dialeval hub build``: ready-to-push folders for every Hub repo (metric Spaces, demo, datasets)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("hub", help="Hugging Face Hub: build ready-to-push Space and dataset folders")
    cmds = p.add_subparsers(dest="hub_command", required=True)
    b = cmds.add_parser("build", help="write one folder per Hub repo and print the upload commands")
    b.add_argument("--org", required=True, help="Hub user or organisation the repos will live under")
    b.add_argument("--out", required=True, help="output folder (replaced atomically)")
    b.add_argument("--from-index", action="store_true",
                   help="requirements.txt asks for dialeval==VERSION from the package index instead of "
                        "vendoring the wheel into each Space")
    b.add_argument("--wheel-url", action="store_true",
                   help="requirements.txt names the vendored wheel by its Hub URL (.../resolve/main/WHEEL) "
                        "instead of ./WHEEL, for a builder that installs requirements before copying the repo")
    b.add_argument("--wheel", default=None, help="vendor this dialeval wheel (default: build one from the checkout)")
    b.add_argument("--data-dir", default=None,
                   help="folder holding the datasets' original files (default: $DIALEVAL_DATA_DIR); "
                        "datasets whose files are missing are skipped")
    b.add_argument("--only", nargs="+", default=None, metavar="NAME",
                   help="only these repos (metric names, dialeval-demo, dataset names)")
    b.add_argument("--cache-dir", default=None, help="datasets cache folder for the dataset exports")
    b.add_argument("--leaderboard", default=None, metavar="DIR",
                   help="also write datasets/dialeval-leaderboard from this `dialeval leaderboard --out` folder")
    b.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from dialeval.hub import build

    repos, skipped = build(args.org, args.out, from_index=args.from_index, wheel=args.wheel,
                           data_dir=args.data_dir, only=args.only, cache_dir=args.cache_dir,
                           wheel_by_url=args.wheel_url, leaderboard=args.leaderboard)
    for reason in skipped:
        print(f"skipped dataset {reason}")
    print(f"wrote {len(repos)} folders under {args.out}; publish them with (also in upload.sh):")
    for repo in repos:
        print(repo.upload_command())
    return 0
