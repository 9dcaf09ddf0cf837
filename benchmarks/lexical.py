"""Lexical metrics at scale: dialeval vs a plain nltk + collections.Counter baseline, interleaved.

Builds N responses by seeded resampling of DailyDialog's validation+test turns (../shared/data): the
``repeated`` corpus resamples single turns (dialogue corpora repeat "I don't know." a lot; dialeval
tokenizes each distinct response once), the ``distinct`` corpus joins two random turns per response (all
distinct: the tokenizer-bound worst case). Each measurement runs in a fresh subprocess (wall time and peak
RSS of the metric work only), rounds interleave the implementations, medians are reported, and every
number is checked against the baseline. Two tasks: Dist-n alone (``compute_distinct`` vs a Dist-1..3
Counter loop) and Dist-n + Ent-n + LF (one ``dialeval.lexical.compute_many`` call: one tokenization, one
count, as ``dialeval score --metric distinct_n --metric ent_n --metric low_frequency`` runs them, vs the same
loop finishing all three). dialeval runs in-process (``--workers 0``, the default) or tokenizes in worker
processes (``--workers 0 1 2``; identical tokens).

    python benchmarks/lexical.py --quick                     # 50k responses, both corpora, 2 rounds
    OMP_NUM_THREADS=1 python benchmarks/lexical.py --n 200000 --repeats 3   # the README numbers
    python benchmarks/lexical.py --n 1000000 --corpus repeated

Every run writes docs/results/benchmarks/lexical.<CPU kind>.json (``--result PATH``, or ``-`` for none).
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
import warnings
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


def run_baseline(texts: list[str], metrics: int) -> dict:
    """The reference style: casual_tokenize each response, a Counter per order, then the formulas: Dist-1..3
    (``metrics=1``), or Dist-1..3, Ent-1..3 and LF(100) from the same counts (``metrics=3``)."""
    from nltk.tokenize.casual import casual_tokenize
    from nltk.util import ngrams

    counters = {k: Counter() for k in ORDERS}
    totals = dict.fromkeys(ORDERS, 0)
    for text in texts:
        tokens = casual_tokenize(text)
        for k in ORDERS:
            grams = list(ngrams(tokens, k))
            totals[k] += len(grams)
            counters[k].update(grams)
    out = {f"distinct_{k}": len(counters[k]) / totals[k] for k in ORDERS}
    if metrics == 1:
        return out
    for k in ORDERS:
        ent = 0.0
        for v in counters[k].values():
            p = v / totals[k]
            ent -= p * math.log2(p)
        out[f"ent_{k}"] = ent
    low = sum(v for v in counters[1].values() if v <= 100)
    out["low_frequency"] = low / totals[1]
    return out


def run_dialeval(texts: list[str], metrics: int, workers: int = 0) -> dict:
    """dialeval's public calls: ``compute_distinct`` (``metrics=1``), or the three metrics in one
    ``dialeval.lexical.compute_many`` call (one tokenization, one count), validation and signatures included."""
    from dialeval.lexical import compute_many
    from dialeval.lexical.core import compute_distinct

    if metrics == 1:
        res = compute_distinct(texts, num_workers=workers)
        return {f"distinct_{k}": res[f"distinct_{k}"] for k in ORDERS}
    res = compute_many(texts, {name: {"num_workers": workers} for name in ("distinct_n", "ent_n", "low_frequency")})
    out = {f"distinct_{k}": res["distinct_n"][f"distinct_{k}"] for k in ORDERS}
    out.update({f"ent_{k}": res["ent_n"][f"ent_{k}"] for k in ORDERS})
    out["low_frequency"] = res["low_frequency"]["low_frequency"]
    return out


def child(which: str, n: int, unique: bool, metrics: int) -> None:
    # Loading the data pool and importing nltk (about 4 s) cost the same in both: time only the metric work.
    texts = list(responses(n, unique))
    import nltk.tokenize.casual  # noqa: F401
    import nltk.util  # noqa: F401

    warnings.simplefilter("ignore")  # LF's note on a corpus without a reference
    start = time.perf_counter()
    result = run_baseline(texts, metrics) if which == "baseline" else run_dialeval(texts, metrics,
                                                                                   int(which.split(":")[1]))
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"which": which, "seconds": seconds, "peak_mib": peak_mib, "result": result}))


def measure(which: str, n: int, unique: bool, metrics: int) -> dict:
    cmd = [sys.executable, __file__, "--child", which, "--n", str(n), "--metrics", str(metrics)]
    proc = subprocess.run(cmd + (["--unique"] if unique else []), capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def label(which: str, metrics: int) -> str:
    what = "Dist-n" if metrics == 1 else "Dist-n + Ent-n + LF"
    if which == "baseline":
        return f"{what}: nltk + collections.Counter"
    call = "compute_distinct" if metrics == 1 else "compute_many (one call)"
    return f"{what}: dialeval {call}, num_workers={which.split(':')[1]}"


def run_corpus(n: int, unique: bool, workers: list[int], repeats: int, metrics: int) -> list[list[str]]:
    names = [f"dialeval:{w}" for w in workers] + ["baseline"]
    runs: dict[str, list[dict]] = {k: [] for k in names}
    for r in range(repeats):
        for which in names[r % len(names):] + names[:r % len(names)]:
            runs[which].append(measure(which, n, unique, metrics))
    base = runs["baseline"][-1]["result"]
    ours_s = statistics.median(x["seconds"] for x in runs[names[0]])
    distinct_share = len(set(responses(n, unique))) / n
    rows = []
    for which in names:
        secs = statistics.median(x["seconds"] for x in runs[which])
        res = runs[which][-1]["result"]
        worst = max(abs(res[k] - base[k]) for k in base)
        rows.append([f"{'distinct' if unique else 'repeated'} ({distinct_share:.1%} distinct)", label(which, metrics),
                     f"{secs:.2f}", f"{n / secs:,.0f}", f"{max(x['peak_mib'] for x in runs[which]):.0f}",
                     f"{secs / ours_s:.2f}x", f"{worst:.1e}"])
    return rows


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import result_file, table, write_result

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--corpus", choices=["repeated", "distinct", "both"], default="both")
    parser.add_argument("--workers", type=int, nargs="+", default=[0],
                        help="dialeval num_workers values (0: tokenize in the counting process)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (median reported)")
    parser.add_argument("--quick", action="store_true", help="--n 50000 --repeats 2")
    parser.add_argument("--metrics", type=int, choices=[1, 3], nargs="+", default=[1, 3],
                        help="1: Dist-n alone; 3: Dist-n, Ent-n and LF in one call")
    parser.add_argument("--result", default=None,
                        help="result file to write (default docs/results/benchmarks/lexical.<CPU kind>.json; '-': none)")
    parser.add_argument("--unique", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n, args.unique, args.metrics[0])
        return
    if args.quick:
        args.n, args.repeats = 50_000, 2
    args.result = args.result or str(result_file("lexical"))
    machine = (f"{os.cpu_count()} CPUs shared with other jobs (load average "
               f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}); medians of {args.repeats} interleaved rounds, "
               "each run in a fresh process")
    corpora = {"repeated": [False], "distinct": [True], "both": [False, True]}[args.corpus]
    rows = [row for unique in corpora for metrics in args.metrics
            for row in run_corpus(args.n, unique, args.workers, args.repeats, metrics)]
    print(f"\n{args.n:,} responses; Dist-1..3 (+ Ent-1..3 + LF(100)), casual tokenizer; {machine}\n")
    header = ["corpus", "route", "seconds", "responses/s", "peak RSS MiB",
              f"time vs dialeval (num_workers={args.workers[0]})", "max |Δ| vs baseline"]
    print(table(header, rows))
    if args.result != "-":
        command = "python benchmarks/lexical.py " + " ".join(sys.argv[1:])
        if os.environ.get("OMP_NUM_THREADS"):
            command = f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} {command}"
        peer = [r for r in rows if "dialeval" not in r[1]]
        summary = ("time of the only peer (nltk + collections.Counter) over dialeval's: "
                   + ", ".join(f"{r[1].split(':')[0]} on the {r[0].split(' ')[0]} corpus {r[5].rstrip('x')}×"
                               for r in peer)
                   + f"; max |Δ| of any score {max(float(r[6]) for r in rows):.1e} (Dist-n and LF identical, "
                   "Ent-n up to float summation order)")
        write_result(args.result, script="benchmarks/lexical.py", title="Lexical metrics (Dist-n, Ent-n, LF)",
                     command=command, threads=int(os.environ.get("OMP_NUM_THREADS", 0)) or None, summary=summary,
                     machine_text=machine, note=f"{args.n:,} responses; medians of {args.repeats} interleaved rounds, "
                     "each in a fresh process. Dist-n and LF are identical to the baseline; Ent-n differs only by "
                     "float summation order (dialeval sums exactly with math.fsum).",
                     rows=[dict(zip(header, row)) for row in rows])
    print("\nDist-n and LF are identical to the baseline; Ent-n differs only by float summation order "
          "(dialeval sums exactly with math.fsum).")


if __name__ == "__main__":
    main()
