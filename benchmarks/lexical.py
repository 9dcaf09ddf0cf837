"""Lexical metrics at scale: dialeval vs a plain nltk + collections.Counter baseline, interleaved.

Builds N responses by seeded resampling of DailyDialog's validation+test turns (../shared/data): the
``repeated`` corpus resamples single turns (dialogue corpora repeat "I don't know." a lot; dialeval
tokenizes each distinct response once), the ``distinct`` corpus joins two random turns per response (all
distinct: the tokenizer-bound worst case). Each measurement runs in a fresh subprocess (wall time and peak
RSS of the metric work only), rounds interleave the implementations, medians are reported, and every
number is checked against the baseline. dialeval runs with ``num_workers`` 0 (in-process), 1 and 2
(tokenization in that many worker processes while the main process counts; identical tokens).

    python benchmarks/lexical.py --quick                     # 50k responses, both corpora, 2 rounds
    python benchmarks/lexical.py --n 200000 --repeats 3      # the README numbers
    python benchmarks/lexical.py --n 1000000 --corpus repeated
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import statistics
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


def run_dialeval(n: int, unique: bool, workers: int = 1) -> dict:
    from dialeval.lexical.formulas import distinct_scores, entropy_scores, low_frequency_share
    from dialeval.lexical.ngrams import count_ngrams

    state = count_ngrams(responses(n, unique), ORDERS, "casual", num_workers=workers)
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
    result = run_baseline(n, unique) if which == "baseline" else run_dialeval(n, unique, int(which.split(":")[1]))
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"which": which, "seconds": seconds, "peak_mib": peak_mib, "result": result}))


def measure(which: str, n: int, unique: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", which, "--n", str(n)] + (["--unique"] if unique else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def label(which: str) -> str:
    return "nltk + collections.Counter" if which == "baseline" else f"dialeval, num_workers={which.split(':')[1]}"


def run_corpus(n: int, unique: bool, workers: list[int], repeats: int) -> list[list[str]]:
    names = [f"dialeval:{w}" for w in workers] + ["baseline"]
    runs: dict[str, list[dict]] = {k: [] for k in names}
    for r in range(repeats):
        for which in names[r % len(names):] + names[:r % len(names)]:
            runs[which].append(measure(which, n, unique))
    base = runs["baseline"][-1]["result"]
    base_s = statistics.median(x["seconds"] for x in runs["baseline"])
    distinct_share = len(set(responses(n, unique))) / n
    rows = []
    for which in names:
        secs = statistics.median(x["seconds"] for x in runs[which])
        res = runs[which][-1]["result"]
        worst = max(abs(res[k] - base[k]) for k in base)
        rows.append([f"{'distinct' if unique else 'repeated'} ({distinct_share:.1%} distinct)", label(which),
                     f"{secs:.2f}", f"{n / secs:,.0f}", f"{max(x['peak_mib'] for x in runs[which]):.0f}",
                     f"{base_s / secs:.2f}x", f"{worst:.1e}"])
    return rows


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import table

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--corpus", choices=["repeated", "distinct", "both"], default="both")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2],
                        help="dialeval num_workers values (0: tokenize in the counting process)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (median reported)")
    parser.add_argument("--quick", action="store_true", help="--n 50000 --repeats 2")
    parser.add_argument("--unique", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n, args.unique)
        return
    if args.quick:
        args.n, args.repeats = 50_000, 2
    corpora = {"repeated": [False], "distinct": [True], "both": [False, True]}[args.corpus]
    rows = [row for unique in corpora for row in run_corpus(args.n, unique, args.workers, args.repeats)]
    print(f"\n{args.n:,} responses; Dist-1..3 + Ent-1..3 + LF(100), casual tokenizer; {os.cpu_count()} CPUs shared "
          f"with other jobs (load average {os.getloadavg()[0]:.1f}); medians of {args.repeats} interleaved rounds, "
          "each run in a fresh process\n")
    print(table(["corpus", "implementation", "seconds", "responses/s", "peak RSS MiB", "vs baseline",
                 "max |Δ| vs baseline"], rows))
    print("\nDist-n and LF are identical to the baseline; Ent-n differs only by float summation order "
          "(dialeval sums exactly with math.fsum).")


if __name__ == "__main__":
    main()
