"""``dialeval meta-eval``: correlate a metric with human judgements on conTest/decTest or FED."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dialeval.io.files import atomic_write_json, check_output_path, is_stdout
from dialeval.io.validation import MAX_RESAMPLES, check_resamples
from dialeval.meta.evaluation import format_report, meta_evaluate, parse_metric_args, plot_report
from dialeval.registry import META_DATASETS, meta_evaluable


def register(sub: Any) -> None:
    p = sub.add_parser("meta-eval", help="reproduce a paper's correlation table for a metric")
    p.add_argument("dataset", choices=list(META_DATASETS),
                   help="; ".join(f"{k}: each row is {v}" for k, v in META_DATASETS.items()))
    usable = ", ".join(f"{n} ({'/'.join(d.meta_datasets)})" for n, d in meta_evaluable().items())
    p.add_argument("--metric", required=True, help=f"{usable}, or column:NAME for a stored column")
    p.add_argument("--config", action="append", default=None,
                   help="config (repeatable, or 'all'); default: con_test_200_resp_gen for contest, turn and dialog for fed, default for dailydialog_plusplus")
    p.add_argument("--data-dir", default=None, help="folder of the original files (default: $DIALEVAL_DATA_DIR/<folder>)")
    p.add_argument("--metric-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="metric load option (repeatable), e.g. model=/path/to/model or n=[1,2]; fed follows the FULL "
                        "paper's protocol (speaker tags stripped), speaker_prefix=true restores 'User: '/'System: '")
    p.add_argument("--resamples", type=int, default=1000,
                   help=f"bootstrap resamples (default 1000, at most {MAX_RESAMPLES:,})")
    p.add_argument("--fraction", type=float, default=0.5, help="share of rows in each resample (default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--round", default="auto",
                   help="round computed scores to N decimals; 'auto' = 3 on contest (Tevet's stored precision), 'none' = never")
    p.add_argument("--cache-dir", default=None, help="datasets cache folder")
    p.add_argument("--out", default=None, help="write the report as JSON to this file (- for stdout)")
    p.add_argument("--plot", default=None, help="write a bar plot with the interval whiskers (PNG)")
    p.set_defaults(func=run)


def _parse_round(value: str) -> int | None | str:
    if value in {"auto", "none"}:
        return None if value == "none" else "auto"
    try:
        out = int(value)
    except ValueError:
        raise ValueError(f"--round {value!r}: use an integer, 'auto' or 'none'.") from None
    if out < 0:
        raise ValueError(f"--round must be ≥ 0, got {out}.")
    return out


def run(args: argparse.Namespace) -> int:
    out, plot = (check_output_path(getattr(args, option), inputs=[args.data_dir, args.cache_dir],
                                   option=f"--{option}") if getattr(args, option) else None for option in ("out", "plot"))
    check_resamples(args.resamples)
    config: Any = args.config
    if config and len(config) == 1:
        config = config[0]
    report = meta_evaluate(
        args.dataset, args.metric, config=config, data_dir=args.data_dir,
        metric_args=parse_metric_args(args.metric_arg), n_resamples=args.resamples, fraction=args.fraction,
        seed=args.seed, round_decimals=_parse_round(args.round), cache_dir=args.cache_dir,
    )
    print(format_report(report), file=sys.stderr if is_stdout(out) else sys.stdout)
    if out is not None:
        atomic_write_json(out, report)  # strict JSON: NaN as null
    if plot is not None:
        plot_report(report, plot)
    return 0
