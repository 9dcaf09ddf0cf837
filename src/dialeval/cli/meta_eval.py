"""``dialeval meta-eval``: correlate a metric with human judgements on a known dataset or on your own file."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dialeval import registry
from dialeval.cli.leaderboard import add_data_options, metric_args
from dialeval.io.files import atomic_write_json, check_output_path, is_stdout
from dialeval.io.validation import MAX_RESAMPLES, MIN_RESAMPLES, check_fraction, check_resamples
from dialeval.meta.evaluation import format_report, meta_evaluate, parse_metric_args, plot_report


def register(sub: Any) -> None:
    p = sub.add_parser("meta-eval", help="reproduce a paper's correlation table for a metric, or score your own file")
    p.add_argument("dataset", nargs="?", default=None,
                   help="a built-in or plugin dataset (`dialeval datasets list`); leave it out with --data FILE")
    p.add_argument("--metric", action="append", default=None,
                   help=f"the one metric to score ({', '.join(registry.meta_rows())}), or column:NAME for a stored "
                        "column; with --scores NAME=FILE, leave it out (the leaderboard takes several)")
    add_data_options(p, several=False)
    p.add_argument("--config", action="append", default=None,
                   help="config (repeatable, or 'all'); default: the dataset's declared defaults")
    p.add_argument("--data-dir", default=None, help="folder of the original files (default: $DIALEVAL_DATA_DIR/<folder>)")
    p.add_argument("--metric-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="metric load option (repeatable), e.g. model=/path/to/model or n=[1,2], or METRIC:KEY=VALUE "
                        "as the leaderboard takes it (METRIC: the --metric scored); fed follows the FULL paper's "
                        "protocol (speaker tags stripped), speaker_prefix=true restores 'User: '/'System: '")
    p.add_argument("--resamples", type=int, default=1000,
                   help=f"bootstrap resamples (default 1000, from {MIN_RESAMPLES} to {MAX_RESAMPLES:,})")
    p.add_argument("--fraction", type=float, default=0.5, help="share of rows in each resample (default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--round", default="auto",
                   help="round computed scores to N decimals; 'auto' = as the dataset declares (3 on contest), 'none' = never")
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


def _source(args: argparse.Namespace) -> tuple[Any, dict[str, Any] | None, list[str]]:
    """(dataset, rows or None, notes): a known dataset by name, or the one ``--data`` file."""
    if args.data is None:
        if args.dataset is None:
            raise ValueError("name a dataset (e.g. fed) or give --data FILE with your own annotations.")
        return args.dataset, None, []
    if args.dataset is not None or len(args.data) != 1:
        raise ValueError("meta-eval takes one source: a dataset name or one --data FILE (the leaderboard takes several).")
    from dialeval.meta.own_data import parse_mapping, read

    metric = args.metric[0] if args.metric else None
    columns = [metric[len("column:"):]] if metric and metric.startswith("column:") else []
    own = read(args.data[0], fields=parse_mapping(args.field), qualities=args.quality, overall=args.overall,
               columns=columns, copies=args.reference_copies)
    return own.declaration, {own.config: own.rows}, [f"{own.declaration.name}: {n}" for n in own.notes]


def _metric(args: argparse.Namespace) -> tuple[str, dict[str, float] | None]:
    from dialeval.meta.own_data import parse_scores_options, read_scores

    metrics = [m for m in args.metric or [] if m != "none"]  # --metric none: only your --scores (as the leaderboard)
    if len(metrics) > 1:
        raise ValueError(f"meta-eval scores one metric, got --metric {' --metric '.join(metrics)}; give one (the "
                         "leaderboard scores several: dialeval leaderboard --metric A --metric B).")
    scores = parse_scores_options(args.scores)
    if len(scores) > 1 or (scores and metrics):
        raise ValueError("meta-eval scores one metric: give --metric NAME or one --scores NAME=FILE.")
    if scores:
        name, path = next(iter(scores.items()))
        return name, read_scores(path)
    if not metrics:
        raise ValueError("give --metric NAME (or column:NAME), or --scores NAME=FILE.")
    return metrics[0], None


def metric_options(pairs: list[str], metric: str) -> dict[str, Any]:
    """``--metric-arg`` options of ``metric``: each ``KEY=VALUE``, or ``METRIC:KEY=VALUE`` (the leaderboard's form,
    :func:`dialeval.cli.leaderboard.metric_args`) whose METRIC is ``metric``; one naming another metric is refused."""
    if any("=" not in pair for pair in pairs):
        return parse_metric_args(pairs)  # its one-line error names the pair
    options = metric_args(pairs, default=metric)
    for other in set(options) - {metric}:
        pair = next(p for p in pairs if p.partition("=")[0].rpartition(":")[0] == other)
        raise ValueError(f"--metric-arg {pair!r} is an option of {other!r}, but meta-eval scores {metric!r}; "
                         f"give KEY=VALUE or {metric}:KEY=VALUE.")
    return options.get(metric, {})


def run(args: argparse.Namespace) -> int:
    out, plot = (check_output_path(getattr(args, option), inputs=[args.data_dir, args.cache_dir, *(args.data or [])],
                                   option=f"--{option}") if getattr(args, option) else None for option in ("out", "plot"))
    check_resamples(args.resamples)
    check_fraction(args.fraction)
    config: Any = args.config
    if config and len(config) == 1:
        config = config[0]
    metric, own_scores = _metric(args)
    dataset, rows, notes = _source(args)
    report = meta_evaluate(
        dataset, metric, config=config, data_dir=args.data_dir, rows=rows, own_scores=own_scores,
        metric_args=metric_options(args.metric_arg, metric), n_resamples=args.resamples, fraction=args.fraction,
        seed=args.seed, round_decimals=_parse_round(args.round), cache_dir=args.cache_dir,
    )
    report["notes"] = [*notes, *report.get("notes", [])]
    print(format_report(report), file=sys.stderr if is_stdout(out) else sys.stdout)
    if out is not None:
        atomic_write_json(out, report)  # strict JSON: NaN as null
    if plot is not None:
        plot_report(report, plot)
    return 0
