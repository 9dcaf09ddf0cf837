"""Lexical metrics at scale: dialeval vs a plain nltk + collections.Counter baseline, one run.

Builds N responses by seeded resampling of DailyDialog's validation+test turns (../shared/data),
streams them (the input list is never materialised), and for each implementation measures wall
time and peak resident memory in a fresh subprocess, then checks that every number agrees.

    python benchmarks/lexical.py                 # 1M resampled responses
    python benchmarks/lexical.py --n 200000 --unique   # worst case: every response distinct
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "dailydialog"
ORDERS = (1, 2, 3)


def pool() -> list[str]:
    turns = []
    for split in ("validation.json", "test.json"):
        for dialogue in json.loads((DATA / split).read_text(encoding="utf-8")):
            turns.extend(t["text"] for t in dialogue["dialogue"])
    return turns


def responses(n: int, unique: bool, seed: int = 0) -> Iterator[str]:
    """Seeded resample of DailyDialog turns; with ``unique`` each response joins two random turns
    (15k² pairs, so practically every response is distinct; the table reports the distinct share)."""
    turns = pool()
    rnd = random.Random(seed)
    for _ in range(n):
        a = turns[rnd.randrange(len(turns))]
        yield f"{a} {turns[rnd.randrange(len(turns))]}" if unique else a


def run_baseline(n: int, unique: bool) -> dict:
    """The reference style: casual_tokenize each response, Counter per order, then the formulas."""
    from nltk.tokenize.casual import casual_tokenize
    from nltk.util import ngrams

    counters = {k: Counter() for k in ORDERS}
    totals = dict.fromkeys(ORDERS, 0)
    for text in responses(n, unique):
        tokens = casual_tokenize(text)
        for k in ORDERS:
            grams = list(ngrams(tokens, k))
            totals[k] += len(grams)
            counters[k].update(grams)
    out = {}
    for k in ORDERS:
        out[f"distinct_{k}"] = len(counters[k]) / totals[k]
        ent = 0.0
        for v in counters[k].values():
            p = v / totals[k]
            ent -= p * math.log2(p)
        out[f"ent_{k}"] = ent
    low = sum(v for v in counters[1].values() if v <= 100)
    out["low_frequency"] = low / totals[1]
    return out


def run_dialeval(n: int, unique: bool) -> dict:
    from dialeval.lexical import distinct_scores, entropy_scores, low_frequency_share
    from dialeval.ngrams import count_ngrams

    state = count_ngrams(responses(n, unique), ORDERS, "casual")
    out = {k: v for k, v in distinct_scores(state).items()}
    out.update(entropy_scores(state, 2.0))
    out["low_frequency"] = low_frequency_share(state.counts[1], 100)
    return out


def child(which: str, n: int, unique: bool) -> None:
    # Loading the data pool and importing nltk (about 4 s) cost the same in both: time only the metric work.
    pool()
    import nltk.tokenize.casual  # noqa: F401
    import nltk.util  # noqa: F401
    start = time.perf_counter()
    result = run_baseline(n, unique) if which == "baseline" else run_dialeval(n, unique)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"which": which, "seconds": seconds, "peak_mib": peak_mib, "result": result}))


def measure(which: str, n: int, unique: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", which, "--n", str(n)] + (["--unique"] if unique else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--unique", action="store_true", help="make every response distinct (no dedup gain)")
    parser.add_argument("--child", choices=["baseline", "dialeval"], help=argparse.SUPPRESS)
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n, args.unique)
        return
    distinct_share = len(set(responses(args.n, args.unique))) / args.n
    rows = [measure("dialeval", args.n, args.unique)]
    if not args.skip_baseline:
        rows.append(measure("baseline", args.n, args.unique))
    print(f"\n{args.n:,} responses ({'all distinct' if args.unique else 'resampled DailyDialog turns'}), "
          f"{distinct_share:.1%} distinct; Dist-1..3 + Ent-1..3 + LF(100), casual tokenizer\n")
    print(f"{'implementation':<28}{'seconds':>10}{'responses/s':>14}{'peak RSS MiB':>14}")
    for r in rows:
        name = "dialeval (count_ngrams)" if r["which"] == "dialeval" else "nltk + collections.Counter"
        print(f"{name:<28}{r['seconds']:>10.2f}{args.n / r['seconds']:>14,.0f}{r['peak_mib']:>14.0f}")
    if len(rows) == 2:
        ours, base = rows[0], rows[1]
        print(f"\nspeed-up: {base['seconds'] / ours['seconds']:.1f}x")
        worst = max(abs(ours["result"][k] - base["result"][k]) for k in base["result"])
        exact = sum(ours["result"][k] == base["result"][k] for k in base["result"])
        print(f"numbers: max |dialeval - baseline| = {worst:.3g} over {len(base['result'])} values "
              f"({exact} bit-identical; entropies differ only by float summation order)")
        for k in base["result"]:
            print(f"  {k:<16}{ours['result'][k]:.15f}  {base['result'][k]:.15f}")


if __name__ == "__main__":
    main()
