"""The command line shared by the scripts that judge evaluator weights without human ratings
(``scripts/learned_quality_context_proxy.py``, ``scripts/learned_quality_rival_proxy.py``): ``--data-dir``, and
``--weights FOLDER --out FILE`` to check weights other than the shipped ones. Bad input is one line and exit 2;
the result file is written atomically, never over an input, the shipped weights or a file the script did not
write, and the default result file holds the shipped weights' figures only."""

from __future__ import annotations

import argparse
import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dialeval.io.files import atomic_write_json, check_output_path
from dialeval.relevance.evaluator import default_weights, read_delta


def written_by(path: Path, script: str) -> bool:
    """Whether ``path`` is absent or a result file of ``script`` (its ``command`` starts with it)."""
    if not path.exists():
        return True
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(record, dict) and str(record.get("command", "")).startswith(f"{script} ")


def _target(args: argparse.Namespace, out: Path, script: str) -> Path:
    target = out if args.out is None else check_output_path(
        args.out, inputs=[args.data_dir, args.weights, default_weights()], option="--out")
    if args.weights is not None and target.resolve() == out.resolve():
        raise ValueError(f"--out {args.out}: the default result file holds the shipped weights' figures only; "
                         "give another path for --weights.")
    if not written_by(target, script):
        raise FileExistsError(f"--out {args.out}: the file exists and this script did not write it; remove it or "
                              "give another path.")
    return target


def proxy_main(argv: list[str] | None, *, doc: str, out: Path, script: str, data_help: str,
               load: Callable[[str], Any], measure: Callable[[Any, str | None], tuple[dict, list[str]]]) -> int:
    """Parse the options, ``load(data_dir)`` the proxy, ``measure(proxy, weights)`` it into ``(fields, lines)``,
    write ``fields`` with the command as run (``script`` and its options), the weights' checksum and the seconds
    taken to ``out`` (or ``--out``) and print ``lines``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help=data_help)
    parser.add_argument("--weights", default=None,
                        help="a folder written by `dialeval train-evaluator` (default: the shipped weights)")
    parser.add_argument("--out", default=None,
                        help=f"result file (default: {out.relative_to(out.parents[2])} for the shipped weights; "
                             "required with --weights)")
    args = parser.parse_args(argv)
    if args.weights is not None and args.out is None:
        parser.error("--weights needs --out: the committed result file holds the shipped weights' proxy only")
    began = time.perf_counter()
    try:
        if args.weights is not None and not Path(args.weights).is_dir():
            raise FileNotFoundError(f"--weights {args.weights!r}: no such folder; give one written by "
                                    "`dialeval train-evaluator`.")
        target = _target(args, out, script)
        _tensors, meta, digest = read_delta(args.weights if args.weights is not None else default_weights())
        proxy = load(args.data_dir)
    except (OSError, ValueError) as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")
    fields, lines = measure(proxy, args.weights)
    options = ["--data-dir", args.data_dir, *(["--weights", args.weights] if args.weights is not None else []),
               *(["--out", args.out] if args.out is not None else [])]
    result = {"command": f"{script} {shlex.join(options)}", **fields, "weights": f"learned_quality@{digest[:12]}",
              "weights_config": meta.get("config"), "seconds": round(time.perf_counter() - began, 1)}
    if "calibration_refit" in meta:  # weights whose calibration was refit after training (the model card's run O)
        result["calibration_refit"] = meta["calibration_refit"]
    atomic_write_json(target, result)
    print("\n".join([*lines, f"wrote {target}"]))
    return 0
