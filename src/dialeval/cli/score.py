"""``dialeval score``: metrics that take one list of responses (lexical, Sem-Ent) over a file."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import registry
from ..files import atomic_write_json, check_output_path
from ..io import read_texts


def register(sub: Any) -> None:
    decls = registry.declarations()
    listing = "; ".join(f"{d.name}: {d.summary} [{d.inputs}]" for d in decls.values())
    p = sub.add_parser("score", help="score a file of responses with one or more metrics",
                       description=f"Metrics: {listing}.")
    p.add_argument("--metric", action="append", required=True, choices=list(decls), metavar="METRIC",
                   help=f"metric name (repeatable): {', '.join(decls)}")
    p.add_argument("--input", required=True, help="JSONL, CSV or plain text (one response per line)")
    p.add_argument("--field", default=None, help="record field holding the response (JSONL/CSV)")
    p.add_argument("--tokenizer", default=None, help="tokenizer for lexical metrics: casual, whitespace, char, tevet")
    p.add_argument("--metric-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="load option for the metrics that know it (repeatable), e.g. space=DIR or model=PATH")
    p.add_argument("--output", default=None, help="write the results as JSON to this file")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def format_table(results: dict[str, dict[str, Any]]) -> str:
    rows = [("metric", "key", "value")]
    for metric, res in results.items():
        for key, value in res.items():
            if isinstance(value, float):
                rows.append((metric, key, f"{value:.6f}"))
            elif key == "signature":
                rows.append((metric, key, str(value)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..loading import load
    from ..metaeval import parse_metric_args

    scorable = [d.name for d in registry.by_input("responses")]
    other = [m for m in args.metric if m not in scorable]
    if other:
        raise ValueError(f"`dialeval score` scores one list of responses, which {other} do not take "
                         f"(scorable here: {', '.join(scorable)}). Use the Python API (dialeval.load) or "
                         "`dialeval meta-eval` for response sets, dialogues and speaker lists.")
    if args.output:  # before any work: not the input, not a folder, writable
        check_output_path(args.output, inputs=[args.input])
    texts = read_texts(args.input, args.field)
    extra = parse_metric_args(args.metric_arg)
    modules = {name: load(name) for name in args.metric}
    unused = sorted(set(extra) - {k for m in modules.values() for k in m.OPTIONS})
    if unused:
        raise ValueError(f"--metric-arg {unused} is not an option of {args.metric}.")
    results: dict[str, dict[str, Any]] = {}
    for name, module in modules.items():
        options = {k: v for k, v in extra.items() if k in module.OPTIONS}
        if args.tokenizer and "tokenizer" in module.OPTIONS:
            options["tokenizer"] = args.tokenizer
        results[name] = module.compute(predictions=texts, **options)
    if args.output:
        atomic_write_json(args.output, results)
    print(json.dumps(results, indent=2, ensure_ascii=False) if args.json else format_table(results))
    return 0
