"""``dialeval leaderboard``: every metric that runs here × every human-judged dataset it declares."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dialeval.io.files import first_missing, remove_created, resolve_output
from dialeval.io.validation import MAX_RESAMPLES, check_resamples
from dialeval.registry import META_DATASETS


def register(sub: Any) -> None:
    p = sub.add_parser("leaderboard", help="every metric against human judgements, with intervals and paired tests")
    p.add_argument("--data-dir", required=True,
                   help="folder holding the datasets' folders (diversity_eval/, fed/, usr_topicalchat/, … as in ../shared/data)")
    p.add_argument("--dataset", action="append", default=None, choices=list(META_DATASETS),
                   help="dataset (repeatable; default: every one a metric declares)")
    p.add_argument("--metric", action="append", default=None,
                   help="metric (repeatable; default: every metric that declares a dataset and whose model loads here)")
    p.add_argument("--out", required=True, help="output folder (new, empty, or one an earlier run wrote: it resumes)")
    p.add_argument("--max-rows", action="append", default=[], metavar="DATASET=N",
                   help="score only the first N source rows of DATASET (e.g. dailydialog_plusplus=200 contexts)")
    p.add_argument("--resamples", type=int, default=1000,
                   help=f"bootstrap resamples (default 1000, at most {MAX_RESAMPLES:,})")
    p.add_argument("--fraction", type=float, default=0.5, help="share of rows in each interval resample (default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(func=run)


def _max_rows(pairs: list[str]) -> dict[str, int]:
    out = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not raw.strip().isdigit():
            raise ValueError(f"--max-rows {pair!r} must look like DATASET=N, e.g. dailydialog_plusplus=200.")
        out[name] = int(raw)
    return out


def run(args: argparse.Namespace) -> int:
    from dialeval.meta.leaderboard import build

    check_resamples(args.resamples)
    out = resolve_output(args.out)  # once: `missing/../keep` is `keep`, and no `missing` is made on the way
    created = first_missing(out)
    try:
        report = build(args.data_dir, out, datasets=args.dataset, metrics=args.metric,
                       max_rows=_max_rows(args.max_rows), n_resamples=args.resamples, fraction=args.fraction,
                       seed=args.seed, log=lambda line: print(line, file=sys.stderr))
    except OSError:  # a full disk (or a lost mount) mid-run: a folder this run created is not left half-written
        remove_created(created)  # only the folder this run made, by its resolved path
        raise
    print(f"{len(report['rows'])} rows, {len(report['pairs'])} paired tests, {report['wall_seconds']} s: "
          f"{args.out}/leaderboard.json, leaderboard.md, leaderboard.png")
    for s in report["skipped"]:
        print(f"skipped {s['metric']}: {s['reason']}")
    return 0
