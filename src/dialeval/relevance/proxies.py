"""The command line shared by the scripts that judge evaluator weights without human ratings
(``scripts/learned_quality_context_proxy.py``, ``scripts/learned_quality_rival_proxy.py``): ``--data-dir``, and
``--weights FOLDER --out FILE`` to check weights other than the shipped ones. Bad input is one line and exit 2;
the result file is written atomically and never over one of the inputs."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dialeval.io.files import atomic_write_json, check_output_path
from dialeval.relevance.evaluator import default_weights, read_delta


def proxy_main(argv: list[str] | None, *, doc: str, out: Path, command: str, data_help: str,
               load: Callable[[str], Any], measure: Callable[[Any, str | None], tuple[dict, list[str]]]) -> int:
    """Parse the options, ``load(data_dir)`` the proxy, ``measure(proxy, weights)`` it into ``(fields, lines)``,
    write ``fields`` with the command, the weights' checksum and the seconds taken to ``out`` (or ``--out``) and
    print ``lines``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help=data_help)
    parser.add_argument("--weights", default=None,
                        help="a folder written by `dialeval train-evaluator` (default: the shipped weights)")
    parser.add_argument("--out", default=None,
                        help=f"result file (default: {out.relative_to(out.parents[2])} for the shipped weights; "
                             "required with --weights)")
    args = parser.parse_args(argv)
    if args.weights and not args.out:
        parser.error("--weights needs --out: the committed result file holds the shipped weights' proxy only")
    began = time.perf_counter()
    try:
        target = check_output_path(args.out, inputs=[args.data_dir, args.weights], option="--out") if args.out else out
        _tensors, meta, digest = read_delta(args.weights or default_weights())
        proxy = load(args.data_dir)
    except (OSError, ValueError) as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")
    fields, lines = measure(proxy, args.weights)
    result = {"command": command if args.weights is None else f"{command} --weights {args.weights} --out {args.out}",
              **fields, "weights": f"learned_quality@{digest[:12]}", "weights_config": meta.get("config"),
              "seconds": round(time.perf_counter() - began, 1)}
    atomic_write_json(target, result)
    print("\n".join([*lines, f"wrote {target}"]))
    return 0
