"""``dialeval dialspk-baseline``: the nearest-mention speaker baseline on DialSpk data, scored by DAC/SAC."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dialeval.dialstory.dialspk import baseline_predictions, speaker_accuracy
from dialeval.io.files import atomic_write_lines, check_output_path, is_stdout
from dialeval.io.readers import read_jsonl, where
from dialeval.io.signature import make_signature


def register(sub: Any) -> None:
    p = sub.add_parser("dialspk-baseline",
                       help="DialSpk floor: predict the candidate mentioned nearest before each [MASK]")
    p.add_argument("--data", required=True, help="a DialSpk JSON Lines file or a folder holding dialspk/<split>.jsonl")
    p.add_argument("--split", default="test", help="split when --data is a folder (default test)")
    p.add_argument("--out", default=None, help="write {id, predictions} JSON Lines here (- for stdout)")
    p.set_defaults(func=run)


def read_dialspk(data: str | Path, split: str = "test") -> list[dict[str, Any]]:
    """Validated DialSpk records of a file or of ``<folder>/dialspk/<split>.jsonl``."""
    from dialeval.datasets.dialstory import check_dialspk
    from dialeval.io.readers import check_duplicate_rows

    path = Path(data)
    if path.is_dir():
        path = path / "dialspk" / f"{split}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"DialSpk file {str(path)!r} does not exist; pass a .jsonl file or a folder "
                                "holding dialspk/<split>.jsonl.")
    rows = [check_dialspk(obj, where(path, lineno)) for lineno, obj in read_jsonl(path)]
    if not rows:
        raise ValueError(f"{path}: no stories (the file is empty); one DialSpk record per line.")
    check_duplicate_rows(rows, str(path), override=None)  # a repeated story would be scored twice
    return rows


def run(args: argparse.Namespace) -> int:
    target = check_output_path(args.out, inputs=[args.data], option="--out") if args.out else None
    rows = read_dialspk(args.data, args.split)
    preds = baseline_predictions([r["story"] for r in rows], [r["candidates"] for r in rows])
    out = speaker_accuracy(preds, [r["speakers"] for r in rows], [r["candidates"] for r in rows])
    out["signature"] = make_signature("dialspk", candidates="given", level="story", predictor="nearest-mention")
    if target is not None:
        atomic_write_lines(target, ({"id": r["id"], "predictions": p} for r, p in zip(rows, preds)))
    summary = json.dumps({k: v for k, v in out.items() if k != "story_scores"}, indent=2, ensure_ascii=False)
    print(summary, file=sys.stderr if is_stdout(target) else sys.stdout)
    return 0
