"""Sem-Ent assignment memory against corpus size: peak RSS above the model's footprint.

    python benchmarks/sem_ent_memory.py                  # 10k / 50k / 200k responses, tiny GPT-2 encoder
    python benchmarks/sem_ent_memory.py --sizes 10000 50000 --encoder minilm

Each size runs in a fresh subprocess: load the encoder and a space fitted on 1,000 DailyDialog responses,
embed 64 texts (warm-up), record RSS (the model's footprint), build the N responses (every response two
random DailyDialog turns joined, so practically all distinct), record RSS again (the input list itself),
then ``space.assign`` them and record the peak. The table shows the assignment's peak above the input
list, which streaming keeps flat (model + one chunk), and the bytes per response it grows by.

Run it against another checkout (e.g. the code before streaming) with ``PYTHONPATH=<that>/src``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "DIALEVAL_PROGRESS": "0"}.items():
    os.environ.setdefault(_k, _v)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "dailydialog"


def turns() -> list[str]:
    out = []
    for split in ("validation.json", "test.json"):
        for d in json.loads((DATA / split).read_text(encoding="utf-8")):
            out.extend(t["text"].strip() for t in d["dialogue"] if t["text"].strip())
    return out


def corpus(n: int, seed: int = 0) -> list[str]:
    pool, rnd = turns(), random.Random(seed)
    return [f"{pool[rnd.randrange(len(pool))]} {pool[rnd.randrange(len(pool))]}" for _ in range(n)]


def rss_mib() -> float:
    """Current resident set size (Linux /proc)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_encoder(kind: str, work: Path):
    from dialeval.models.encoders import LastTokenEncoder, get_encoder

    if kind == "minilm":
        return get_encoder(None)
    from dialeval.testing.gpt2 import build_tiny_gpt2

    path = work / "tiny_gpt2"
    if not path.exists():
        build_tiny_gpt2(path)
    return LastTokenEncoder(str(path), max_length=64)  # the tiny model has 64 positions


def child(n: int, kind: str, work: Path) -> None:
    import torch

    from dialeval.semantic.space import SemanticSpace

    torch.set_num_threads(1)
    enc = make_encoder(kind, work)
    space = SemanticSpace.load(work / f"space_{kind}")
    space.encoder = enc
    space.assign(corpus(64, seed=1))  # warm-up: allocator pools, lazy imports
    model_mib = rss_mib()
    texts = corpus(n)
    input_mib = rss_mib()
    start = time.perf_counter()
    labels = space.assign(texts)
    seconds = time.perf_counter() - start
    print(json.dumps({"n": n, "model_mib": model_mib, "input_mib": input_mib, "peak_mib": peak_mib(),
                      "seconds": seconds, "labels_head": [int(x) for x in labels[:5]]}))


def fit_space(kind: str, work: Path) -> None:
    from dialeval.semantic.space import SemanticSpace

    out = work / f"space_{kind}"
    if not out.exists():
        space = SemanticSpace.fit(turns()[:1000], encoder=make_encoder(kind, work), k=20)
        space.save(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 200_000])
    p.add_argument("--encoder", choices=["tiny", "minilm"], default="tiny")
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "dialeval_sem_ent_memory")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.child:
        child(args.child, args.encoder, args.work)
        return
    fit_space(args.encoder, args.work)
    rows = []
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--child", str(n), "--encoder", args.encoder, "--work", str(args.work)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ.copy())
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    import dialeval

    print(f"dialeval from {Path(dialeval.__file__).parent}; encoder {args.encoder}; 1 torch thread; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'responses':>10} {'model MiB':>10} {'input list MiB':>15} {'assign peak above input MiB':>28} "
          f"{'resp/s':>8}")
    for r in rows:
        print(f"{r['n']:>10,} {r['model_mib']:>10.0f} {r['input_mib'] - r['model_mib']:>15.0f} "
              f"{r['peak_mib'] - r['input_mib']:>28.0f} {r['n'] / r['seconds']:>8.0f}")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        growth = ((b["peak_mib"] - b["input_mib"]) - (a["peak_mib"] - a["input_mib"])) * 2**20 / (b["n"] - a["n"])
        print(f"growth of the assignment peak: {growth:,.0f} bytes per response between {a['n']:,} and {b['n']:,}")


if __name__ == "__main__":
    main()
