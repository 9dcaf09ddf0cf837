"""Ray Data engine against one process and against a plain Ray Data floor, on the same cluster in one run.

    python benchmarks/distributed.py                 # lexical 100k and 1M, Sem-Ent 20k (MiniLM)
    python benchmarks/distributed.py --quick         # lexical 20k and 100k, Sem-Ent 2k

Responses are DailyDialog turns (validation + test) resampled with a fixed seed to the corpus size and written
to Parquet (row groups of 20k). A local Ray cluster with ``--workers`` CPUs (default 2) is started with
``ray start`` on loopback and stopped at the end. Each measurement runs in a fresh subprocess (imports and
joining the cluster happen before the clock starts); every mode starts from the same Parquet file:

- ``local``: one process, ``dialeval.load(metric).compute(predictions=texts)`` after reading the column
  (``local_s`` = read + compute; ``compute_s`` = compute alone);
- ``ray``: ``dialeval.distributed.score(path, metric)`` (``lexical`` = Dist-n, Ent-n and LF in one
  ``score_many`` call: one read and one tokenization);
- ``floor``: ``ray.data.read_parquet(path).map_batches(no-op)``, iterated to the end: what any Ray Data job
  over these rows costs on this cluster.

Printed: one table row per (metric, rows) with the three wall times, Ray / one process, and the per-row
cost of dialeval over the floor in µs; ``same`` is exact equality of the results (Sem-Ent: label agreement).
A run of every lexical size and metric (without ``--quick``, ``--sizes`` or ``--metrics``) writes the table to
``docs/results/benchmarks/distributed.<CPU kind>.json`` (``--out PATH``; ``-`` for none; a partial run writes only
to ``--out``) with the machine, its load average before and after, and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import result_file, write_result  # noqa: E402

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "DIALEVAL_PROGRESS": "0"}
os.environ.update(LOOPBACK)

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", REPO.parent / "shared" / "data")) / "dailydialog"
SPACE = REPO / "src" / "dialeval" / "resources" / "semantic_space"
LEXICAL = ("distinct_n", "ent_n", "low_frequency")  # "lexical": the three in one call


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
    """One run; ``wall_s`` excludes imports and joining the cluster."""
    import pyarrow.parquet as pq

    import dialeval
    from dialeval.semantic.space import SemanticSpace

    names = list(LEXICAL) if metric == "lexical" else [metric]
    extra = {}
    if mode == "local":
        if metric != "sem_ent":
            modules = {name: dialeval.load(name) for name in names}
            modules[names[0]].compute(predictions=["warm the tokenizer up ."])
        t0 = time.perf_counter()
        texts = pq.read_table(path, columns=["response"]).column("response").to_pylist()
        t1 = time.perf_counter()
        if metric == "sem_ent":
            result = {"labels": SemanticSpace.load(SPACE).assign(texts, batch_size=64).tolist()}
        else:
            result = {name: modules[name].compute(predictions=texts) for name in names}
        extra["compute_s"] = time.perf_counter() - t1
        return {"wall_s": time.perf_counter() - t0, "result": result, **extra}
    from dialeval.distributed import engine, score, score_many

    ray = engine.connect(address)
    t0 = time.perf_counter()
    if mode == "floor":
        ds = ray.data.read_parquet(path).map_batches(_noop, batch_format="pyarrow", batch_size=rows or 20_000)
        result = {"batches": sum(1 for _ in ds.iter_batches(batch_size=None, batch_format="pyarrow"))}
    elif metric == "sem_ent":
        out = tempfile.mkdtemp(prefix="bench_labels_")
        os.rmdir(out)
        score(path, "sem_ent", {"predictions": "response"}, space=str(SPACE), output=out, rows_per_batch=rows,
              concurrency=concurrency, batch_size=64)
        extra["wall"] = time.perf_counter() - t0
        result = {"labels": pq.read_table(out).sort_by("id").column("sem_ent_cluster").to_pylist()}
    else:
        cols = {name: {"predictions": "response"} for name in names}
        result = score_many(path, {name: {} for name in names}, cols)
    return {"wall_s": extra.get("wall", time.perf_counter() - t0), "result": result}


def _noop(batch):
    return batch.slice(0, 1)


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
    subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--num-cpus", str(workers),
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
    ap.add_argument("--quick", action="store_true", help="lexical 20k/100k, Sem-Ent 2k")
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="lexical corpus sizes")
    ap.add_argument("--sem-ent-size", type=int, default=None, help="Sem-Ent corpus size (0 = skip)")
    ap.add_argument("--workers", type=int, default=2, help="cluster CPUs (lexical tasks / Sem-Ent actors)")
    ap.add_argument("--metrics", nargs="*", default=["distinct_n", "lexical"],
                    help="lexical metrics to time; 'lexical' = all three in one call")
    ap.add_argument("--out", default=None, help="result file (default docs/results/benchmarks/distributed.<CPU "
                    "kind>.json for a full run, none for a partial one; '-': none)")
    args = ap.parse_args()
    sizes = args.sizes or ([20_000, 100_000] if args.quick else [100_000, 1_000_000])
    sem_n = args.sem_ent_size if args.sem_ent_size is not None else (2_000 if args.quick else 20_000)
    address, temp = start_cluster(args.workers)
    rows_out = []
    load_before = ", ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load average before: {load_before}", flush=True)
    print(HEADER, flush=True)
    try:
        with tempfile.TemporaryDirectory() as work:
            for n in sizes:
                path = write_corpus(n, Path(work) / f"lex_{n}.parquet")
                floor = measure("floor", "none", path, address, 0, args.workers)
                for metric in args.metrics:
                    local = measure("local", metric, path, address, 0, args.workers)
                    ray = measure("ray", metric, path, address, 0, args.workers)
                    rows_out.append(report(metric, n, local, ray, floor, same=local["result"] == ray["result"]))
            if sem_n:
                path = write_corpus(sem_n, Path(work) / f"sem_{sem_n}.parquet")
                floor = measure("floor", "none", path, address, 500, args.workers)
                local = measure("local", "sem_ent", path, address, 500, args.workers)
                ray = measure("ray", "sem_ent", path, address, 500, max(1, args.workers - 1))
                a, b = local["result"]["labels"], ray["result"]["labels"]
                rows_out.append(report("sem_ent labels", sem_n, local, ray, floor,
                                       same=sum(x == y for x, y in zip(a, b)) / len(a)))
    finally:
        stop_cluster(temp)
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    full_run = not args.quick and args.sizes is None and args.metrics == ["distinct_n", "lexical"]
    if args.out != "-" and (args.out or full_run):  # a partial run writes only where --out says
        write_table(args.out or str(result_file("distributed")), rows_out, load_before, args.workers)


def write_table(path: str, rows: list[dict], load_before: str, workers: int) -> None:
    """The result file: the rows, Ray / one process at the largest lexical size in the summary."""
    top = max((r["rows"] for r in rows if r["metric"] != "sem_ent labels"), default=None)
    ratios = [f"{r['metric']} {r['ray_over_local']:.2f}×" for r in rows if r["rows"] == top]
    summary = (f"Ray / one process at {top:,} rows: {', '.join(ratios)}" if top else "no lexical rows") + "; " + (
        "every result identical to one process" if all(r["same"] in (True, 1.0) for r in rows)
        else "results differ: see the 'same' column")
    write_result(path, script="benchmarks/distributed.py", title="Ray Data against one process",
                 command=" ".join(["python benchmarks/distributed.py", *sys.argv[1:]]), threads=None,
                 summary=summary, machine_text=f"{workers}-CPU local Ray cluster on loopback; load average "
                 f"{load_before} before", rows=[table_row(r) for r in rows],
                 note="Each time is one run in a fresh process (imports and joining the cluster before the clock). "
                 "The floor is read_parquet(...).map_batches(no-op) on the same cluster: a Ray job's fixed cost. "
                 "Lexical 'same' is exact equality; Sem-Ent's is the share of equal cluster labels.")


def table_row(r: dict) -> dict:
    return {"metric": r["metric"], "rows": r["rows"], "one process s": r["local_s"],
            "one process compute s": r["local_compute_s"], "dialeval on Ray s": r["ray_s"],
            "Ray Data floor s": r["floor_s"], "Ray / one process": r["ray_over_local"],
            "µs per row over the floor": r["us_per_row_over_floor"], "same": r["same"]}


HEADER = (f"{'metric':<16}{'rows':>9}{'one proc s':>12}{'(compute)':>11}{'Ray s':>9}{'floor s':>9}"
          f"{'Ray/one':>9}{'µs/row>floor':>14}  same")


def report(metric: str, n: int, local: dict, ray: dict, floor: dict, same: object) -> dict:
    row = {"metric": metric, "rows": n, "local_s": round(local["wall_s"], 3),
           "local_compute_s": round(local.get("compute_s", local["wall_s"]), 3), "ray_s": round(ray["wall_s"], 3),
           "floor_s": round(floor["wall_s"], 3), "ray_over_local": round(ray["wall_s"] / local["wall_s"], 2),
           "us_per_row_over_floor": round((ray["wall_s"] - floor["wall_s"]) / n * 1e6, 2), "same": same}
    print(f"{metric:<16}{n:>9}{row['local_s']:>12.2f}{row['local_compute_s']:>11.2f}{row['ray_s']:>9.2f}"
          f"{row['floor_s']:>9.2f}{row['ray_over_local']:>9.2f}{row['us_per_row_over_floor']:>14.2f}  {same}",
          flush=True)
    return row


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        mode, metric, path, address, rows, conc = sys.argv[2:8]
        print(json.dumps(child(mode, metric, path, address, int(rows), int(conc))))
    else:
        main()
