"""Write a synthetic annotation file in the record schema of docs/own_annotations.md (seeded): N rated turns from
a few systems, each with a context, a response, a reference, two qualities (``relevance``, ``fluency``) rated
1-5 by 3 annotators, and a stored metric column ``length_score``; beside it a ``--scores`` file keyed by id.

    python benchmarks/own_annotations.py --turns 10000 --out /tmp/own.jsonl
    dialeval leaderboard --data /tmp/own.jsonl --out /tmp/own_board \
        --metric column:length_score --scores noisy=/tmp/own.scores.jsonl    # cheap rows
    dialeval leaderboard --data /tmp/own.jsonl --out /tmp/own_board_all       # every metric that fits

Each item has a latent quality q ~ N(0, 1) plus a per-system offset; an annotator's rating is q plus noise,
rounded and clipped to 1-5, so both qualities correlate with q (fluency less), and the stored ``length_score``
and the ``noisy`` scores are q plus more noise: every row of the leaderboard has a known positive sign.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from dialeval.io.files import atomic_write_text

WORDS = ("good", "movie", "weather", "coffee", "travel", "music", "book", "game", "city", "dinner", "friend",
         "weekend", "work", "park", "train", "song", "idea", "plan", "team", "story")


def sentence(rng: np.random.Generator, n: int) -> str:
    return " ".join(rng.choice(WORDS, size=n)).capitalize() + "."


def records(turns: int, systems: int, seed: int) -> tuple[list[dict], list[dict]]:
    """The records and the ``--scores`` records (id, score)."""
    rng = np.random.default_rng(seed)
    offsets = rng.normal(scale=0.5, size=systems)
    out, scores = [], []
    for i in range(turns):
        system = int(rng.integers(systems))
        q = float(rng.normal() + offsets[system])

        def ratings(noise: float, q: float = q) -> list[int]:
            return [int(np.clip(round(3 + q + rng.normal(scale=noise)), 1, 5)) for _ in range(3)]

        context = [sentence(rng, int(rng.integers(4, 12))) for _ in range(int(rng.integers(1, 4)))]
        out.append({"id": f"item{i}", "context": context, "response": sentence(rng, int(rng.integers(3, 15))),
                    "reference": sentence(rng, int(rng.integers(3, 15))), "system": f"system_{system}",
                    "relevance": ratings(0.8), "fluency": ratings(1.5),
                    "length_score": round(q + float(rng.normal(scale=1.0)), 4)})
        scores.append({"id": f"item{i}", "score": round(q + float(rng.normal(scale=1.5)), 4)})
    return out, scores


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--turns", type=int, default=10_000, help="rated turns (default 10,000)")
    p.add_argument("--systems", type=int, default=5, help="systems (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="the JSONL file to write; the scores go to <stem>.scores.jsonl")
    args = p.parse_args(argv)
    if args.turns < 10 or args.systems < 1:
        p.error("--turns must be at least 10 and --systems at least 1.")
    out = Path(args.out).expanduser().resolve()
    scores_path = out.with_name(f"{out.stem}.scores.jsonl")
    if not out.parent.is_dir():
        p.error(f"--out {args.out!r}: the folder {str(out.parent)!r} does not exist; create it first.")
    taken = [str(q) for q in (out, scores_path) if q.exists()]
    if taken:
        p.error(f"--out {args.out!r}: {taken[0]} exists; choose a new name (nothing is overwritten).")
    rows, scores = records(args.turns, args.systems, args.seed)
    for path, data in ((out, rows), (scores_path, scores)):
        atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in data))
    print(f"{len(rows):,} turns → {out}; scores → {scores_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
