"""Ray Data engine against one process: lexical metrics on up to 1M responses, Sem-Ent labels on 50k.

    python benchmarks/distributed.py                 # lexical 100k and 1M, Sem-Ent 50k (MiniLM)
    python benchmarks/distributed.py --quick         # lexical 20k and 100k, Sem-Ent 5k

Responses are DailyDialog turns (validation + test) resampled with a fixed seed to the corpus size and written
to Parquet (row groups of 20k). A local Ray cluster with ``--workers`` CPUs (default 2) is started with
``ray start`` on loopback and stopped at the end. Each measurement runs in a fresh subprocess so that
``ru_maxrss`` is the peak RSS of that run's driver alone:

- ``local``: ``dialeval.load(metric).compute(predictions=texts)`` (reads the Parquet column into a list);
- ``ray``: ``dialeval.distributed.score(path, metric)`` (the driver holds one n-gram state at a time).

Reported: wall time, rows/s, rows/s per worker (Ray), the driver's peak RSS, and that both give the same
result (exact equality for lexical results; label agreement for Sem-Ent).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "DIALEVAL_PROGRESS": "0"}
os.environ.update(LOOPBACK)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "dailydialog"
SPACE = REPO / "src" / "dialeval" / "resources" / "semantic_space"
LEXICAL = ("distinct_n", "ent_n", "low_frequency")


def turns() -> list[str]:
    out = []
    for split in ("validation.json", "test.json"):
        for d in json.loads((DATA / split).read_text(encoding="utf-8")):
            out.extend(t["text"].strip() for t in d["dialogue"] if t["text"].strip())
    return out


def write_corpus(n: int, path: Path, seed: int = 0) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pool = turns()
    rng = random.Random(seed)
    texts = [pool[rng.randrange(len(pool))] for _ in range(n)]
    pq.write_table(pa.table({"id": list(range(n)), "response": texts}), path, row_group_size=20_000)
    return path


# ------------------------------------------------------------------------------ child: one measurement


def child(mode: str, metric: str, path: str, address: str, rows: int, concurrency: int) -> dict:
    """One run; ``wall_s`` is the metric alone (imports, and for Ray joining the cluster, happen before)."""
    import pyarrow.parquet as pq

    import dialeval
    from dialeval.semantic.space import SemanticSpace

    wall = None
    if mode == "local":
        texts = pq.read_table(path, columns=["response"]).column("response").to_pylist()
        module = None if metric == "sem_ent" else dialeval.load(metric)
        t0 = time.perf_counter()
        if metric == "sem_ent":
            result = {"labels": SemanticSpace.load(SPACE).assign(texts, batch_size=64).tolist()}
        else:
            result = module.compute(predictions=texts)
    else:
        from dialeval.distributed import engine, score

        engine.connect(address)
        t0 = time.perf_counter()
        if metric == "sem_ent":
            out = tempfile.mkdtemp(prefix="bench_labels_")
            os.rmdir(out)
            score(path, "sem_ent", {"predictions": "response"}, space=str(SPACE), output=out, rows_per_batch=rows,
                  concurrency=concurrency, batch_size=64)
            wall = time.perf_counter() - t0
            result = {"labels": pq.read_table(out).sort_by("id").column("sem_ent_cluster").to_pylist()}
        else:
            result = score(path, metric, {"predictions": "response"}, rows_per_batch=rows)
    if wall is None:
        wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"wall_s": wall, "driver_peak_mb": peak_mb, "result": result}


def measure(mode: str, metric: str, path: Path, address: str, rows: int, concurrency: int) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, metric, str(path), address, str(rows), str(concurrency)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **LOOPBACK})
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} {metric} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------ cluster


def start_cluster(workers: int) -> tuple[str, str]:
    temp = tempfile.mkdtemp(prefix="dlb", dir="/tmp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([str(Path(sys.executable).parent / "ray"), "start", "--head", "--num-cpus", str(workers),
                    "--include-dashboard", "false", "--temp-dir", temp, "--port", str(port), "--node-ip-address",
                    "127.0.0.1", "--disable-usage-stats"], check=True, capture_output=True, env=os.environ)
    return f"127.0.0.1:{port}", temp


def stop_cluster(temp: str) -> None:
    """Stop this cluster's processes only (those whose command line names its temp dir, and their children)."""
    import signal

    def pids() -> set[int]:
        mine, parents = set(), {}
        for e in Path("/proc").iterdir():
            if e.name.isdigit():
                try:
                    cmd = (e / "cmdline").read_bytes()
                    parents[int(e.name)] = int((e / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if temp.encode() in cmd:
                    mine.add(int(e.name))
        while True:
            kids = {p for p, pp in parents.items() if pp in mine} - mine
            if not kids:
                return mine
            mine |= kids

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(8)


# ------------------------------------------------------------------------------ main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="lexical 20k/100k, Sem-Ent 5k")
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="lexical corpus sizes")
    ap.add_argument("--sem-ent-size", type=int, default=None, help="Sem-Ent corpus size (0 = skip)")
    ap.add_argument("--workers", type=int, default=2, help="lexical tasks / Sem-Ent actors")
    ap.add_argument("--cluster-cpus", type=int, default=None,
                    help="logical CPUs of the cluster (default --workers; Sem-Ent with 2 actors needs one more for "
                         "reading)")
    ap.add_argument("--metrics", nargs="*", default=list(LEXICAL))
    ap.add_argument("--out", default=None, help="also write the table as JSON here")
    args = ap.parse_args()
    sizes = args.sizes or ([20_000, 100_000] if args.quick else [100_000, 1_000_000])
    sem_n = args.sem_ent_size if args.sem_ent_size is not None else (5_000 if args.quick else 50_000)
    address, temp = start_cluster(args.cluster_cpus or args.workers)
    rows_out = []
    try:
        with tempfile.TemporaryDirectory() as work:
            for n in sizes:
                path = write_corpus(n, Path(work) / f"lex_{n}.parquet")
                for metric in args.metrics:
                    local = measure("local", metric, path, address, 20_000, args.workers)
                    ray = measure("ray", metric, path, address, 20_000, args.workers)
                    rows_out.append(report(metric, n, local, ray, args.workers,
                                           same=local["result"] == ray["result"]))
            if sem_n:
                path = write_corpus(sem_n, Path(work) / f"sem_{sem_n}.parquet")
                local = measure("local", "sem_ent", path, address, 2_000, args.workers)
                ray = measure("ray", "sem_ent", path, address, 2_000, args.workers)
                a, b = local["result"]["labels"], ray["result"]["labels"]
                rows_out.append(report("sem_ent labels", sem_n, local, ray, args.workers,
                                       same=sum(x == y for x, y in zip(a, b)) / len(a)))
    finally:
        stop_cluster(temp)
    if args.out:
        Path(args.out).write_text(json.dumps(rows_out, indent=2) + "\n", encoding="utf-8")


def report(metric: str, n: int, local: dict, ray: dict, workers: int, same: object) -> dict:
    row = {"metric": metric, "rows": n, "local_s": round(local["wall_s"], 2), "ray_s": round(ray["wall_s"], 2),
           "local_rows_per_s": round(n / local["wall_s"]), "ray_rows_per_s_per_worker": round(n / ray["wall_s"] / workers),
           "local_peak_mb": round(local["driver_peak_mb"]), "ray_driver_peak_mb": round(ray["driver_peak_mb"]),
           "same": same}
    print(json.dumps(row), flush=True)
    return row


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        mode, metric, path, address, rows, conc = sys.argv[2:8]
        print(json.dumps(child(mode, metric, path, address, int(rows), int(conc))))
    else:
        main()
