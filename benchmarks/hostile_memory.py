"""Resident memory of the demo server under a hostile client.

Starts ``dialeval demo`` on 127.0.0.1 in a child process (offline), then prints its resident set size (VmRSS):

1. after start-up,
2. after 3, N/2 and N requests that each name a different bad model path (missing folders, garbage folders,
   files); the first one pays transformers' imports, after that the size should stay flat,
3. after 5 spellings of one real (tiny) model path for FULL and NLI Diversity,
4. after 30 concurrent mixed requests (lexical metrics, NLI Diversity, FULL),
5. during a bounded soak of ``--soak-minutes`` of mixed good and hostile requests (bad paths, multi-line
   uploads' text, long responses, every metric): the peak against the budget "RSS once every model identity is
   loaded + 300 MB", the files and bytes left in Gradio's cache against its bound (age sweep ``delete_cache``, count
   and byte bound :mod:`dialeval.ui.file_cache`) and whether SIGTERM removed the results folder.

    python benchmarks/hostile_memory.py --bad-paths 50 --soak-minutes 30
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "GRADIO_ANALYTICS_ENABLED": "False", "DIALEVAL_PROGRESS": "0", "TOKENIZERS_PARALLELISM": "false"}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def evaluate_args(texts: dict[str, str], use: dict[str, str | None]) -> list:
    """/evaluate's values in the order of its named parameters (dialeval.ui.blocks.api_parameters), no plots."""
    from dialeval import registry
    from dialeval.ui.blocks import INPUT_ORDER, api_parameters

    values: dict = {k: texts.get(k, "") for k in INPUT_ORDER}
    for name in registry.declarations():
        values.update({f"use_{name}": name in use, f"model_{name}": use.get(name) or ""})
    return [*(values.get(p) for p in api_parameters() if p != "draw_plots"), False]


def spellings(path: str) -> list[str]:
    parent, name = os.path.split(path)
    return [path, path + "/", path + "/./", "/" + path, f"{parent}/../{os.path.basename(parent)}/{name}"]


def bad_paths(root: Path, n: int) -> list[str]:
    out = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            out.append(str(root / f"missing-{i}"))
        elif kind == 1:
            d = root / f"garbage-{i}"
            d.mkdir()
            (d / "config.json").write_text("{broken", encoding="utf-8")
            out.append(str(d))
        else:
            f = root / f"file-{i}.bin"
            f.write_bytes(os.urandom(64))
            out.append(str(f))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bad-paths", type=int, default=50, help="distinct bad model paths to send (default 50)")
    parser.add_argument("--concurrent", type=int, default=30, help="concurrent mixed requests (default 30)")
    parser.add_argument("--soak-minutes", type=float, default=0.0, help="bounded soak of mixed requests (default 0)")
    args = parser.parse_args()
    os.environ.update(ENV)
    from gradio_client import Client

    from dialeval.testing.blenderbot import build_tiny_causal_lm
    from dialeval.testing.roberta import tiny_nli_model

    root = Path(tempfile.mkdtemp(prefix="hostile-memory-"))
    lm, nli = str(build_tiny_causal_lm(root / "lm", arch="gpt2")), str(tiny_nli_model(root / "nli"))
    port = free_port()
    os.environ["GRADIO_TEMP_DIR"] = str(root / "gradio")  # Gradio's cache, counted after the soak
    os.environ["TMPDIR"] = str(_made(root / "tmp"))  # the server's results folder, checked after SIGTERM
    server = subprocess.Popen([sys.executable, "-m", "dialeval", "demo", "--port", str(port)], env={**os.environ},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = None
        for _ in range(240):
            try:
                client = Client(f"http://127.0.0.1:{port}/", verbose=False)
                break
            except Exception:  # noqa: BLE001 - still starting
                time.sleep(0.5)
        if client is None:
            raise RuntimeError("the demo did not start")
        dialogue = "hello there\nhi, how are you?\nfine thanks"
        sets = "yes\nno\nmaybe\n\nsure\nsure thing"
        print(f"start-up: {rss_mb(server.pid):.0f} MB")
        for i, path in enumerate(bad_paths(root, args.bad_paths), 1):
            client.predict(*evaluate_args({"dialogue": dialogue}, {"full_followup": path}), api_name="/evaluate")
            if i in (3, args.bad_paths // 2):  # one of each kind: the first garbage folder pays transformers' imports
                print(f"after {i} distinct bad model path(s): {rss_mb(server.pid):.0f} MB")
        print(f"after {args.bad_paths} distinct bad model paths: {rss_mb(server.pid):.0f} MB")
        for spelling in spellings(lm):
            client.predict(*evaluate_args({"dialogue": dialogue}, {"full_followup": spelling}), api_name="/evaluate")
        for spelling in spellings(nli):
            client.predict(*evaluate_args({"sets": sets}, {"nli_diversity": spelling}), api_name="/evaluate")
        print(f"after 5 spellings of one LM and one NLI model: {rss_mb(server.pid):.0f} MB")
        mixes = [{"distinct_n": None, "ent_n": None}, {"nli_diversity": nli}, {"full_followup": lm}]
        texts = {"responses": "i like tea\ni like coffee\nno thanks", "sets": sets, "dialogue": dialogue}
        with ThreadPoolExecutor(args.concurrent) as pool:
            jobs = [pool.submit(client.predict, *evaluate_args(texts, mixes[i % 3]), api_name="/evaluate")
                    for i in range(args.concurrent)]
            done = sum("metrics computed" in j.result(timeout=600)[0] for j in jobs)
        print(f"after {args.concurrent} concurrent mixed requests ({done} answered): {rss_mb(server.pid):.0f} MB")
        if args.soak_minutes > 0:
            soak(client, server.pid, args.soak_minutes, root, {"lm": lm, "nli": nli}, texts)
        client.close()
    finally:
        server.terminate()  # SIGTERM: the server removes its results folder on the way out
        server.wait(30)
    left = sorted(p.name for p in (root / "tmp").glob("dialeval-results-*"))
    print(f"results folders left after SIGTERM: {len(left)} {left[:3]}")
    return 0


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def soak(client: object, pid: int, minutes: float, root: Path, models: dict[str, str], texts: dict[str, str]) -> None:
    """Mixed good and hostile requests for ``minutes``; the peak RSS against one model per identity + 300 MB."""
    budget = rss_mb(pid) + 300  # every model identity (tiny LM, tiny NLI, the encoders) is loaded by now
    hostile = bad_paths(_made(root / "soak"), 12)
    long_text = "word " * 4000
    mixes = [({"distinct_n": None, "ent_n": None, "low_frequency": None}, texts),
             ({"nli_diversity": models["nli"]}, texts), ({"full_followup": models["lm"]}, texts),
             ({"full_followup": hostile[0]}, texts), ({"nli_diversity": hostile[1]}, texts),
             ({"distinct_n": None}, {"responses": long_text + "\n" + long_text}),
             ({"nli_diversity": models["nli"] + "/./"}, texts)]
    end, peak, n, answered = time.monotonic() + minutes * 60, 0.0, 0, 0
    while time.monotonic() < end:
        use, given = mixes[n % len(mixes)]
        result = client.predict(*evaluate_args(given, use), api_name="/evaluate")  # type: ignore[attr-defined]
        answered += bool(result[0])
        n += 1
        peak = max(peak, rss_mb(pid))
    from dialeval.ui.file_cache import GRACE_S, SWEEP_PERIOD_S, CacheBound, directory_usage

    files, nbytes = directory_usage(root / "gradio")
    bound = CacheBound()
    slack = "within" if files <= bound.max_files and nbytes <= bound.max_bytes else \
        f"over: files of the last {GRACE_S + SWEEP_PERIOD_S:g} s are kept"
    print(f"soak: {n} requests in {minutes:g} min ({answered} answered with a status line), peak {peak:.0f} MB, budget "
          f"{budget:.0f} MB ({'within' if peak <= budget else 'OVER'}); Gradio's cache: {files} files, "
          f"{nbytes / 2**20:.1f} MiB (bound {bound.describe()}: {slack})")
    time.sleep(GRACE_S + 2 * SWEEP_PERIOD_S)  # idle: the next sweeps see no young files
    files, nbytes = directory_usage(root / "gradio")
    within = files <= bound.max_files and nbytes <= bound.max_bytes
    print(f"Gradio's cache after {GRACE_S + 2 * SWEEP_PERIOD_S:g} s idle: {files} files, {nbytes / 2**20:.1f} MiB "
          f"({'within' if within else 'OVER'} the bound)")


if __name__ == "__main__":
    raise SystemExit(main())
