"""Time the README's install and test commands on a fresh clone and write ``docs/results/test_suite.json``
(the README's suite-time line reads it: ``python tools/sitegen.py readme``).

    python benchmarks/suite_time.py            # clones HEAD beside this checkout, runs `bash .ci/run` there

The clone goes beside the checkout (``../dialeval-suite-<commit>``), because the tests read ``../shared/data``
beside their checkout; it gets a virtual environment with ``--system-site-packages`` (so ``install.sh`` reuses the
packages this machine already has: the time is the tests', not the downloads') and is removed afterwards, as it
was made here. Every 30 s the load average and the busy cores (``/proc/stat``) are sampled: the note in the JSON says
how quiet the machine was. Run it with nothing else running.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dialeval.io.files import atomic_write_text  # noqa: E402
from dialeval.models.cpu import cpu_kind  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "results" / "test_suite.json"
SUMMARY = re.compile(r"=+ (?P<counts>.*?) in (?P<seconds>[\d.]+)s")


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return user + nice + system + irq + softirq + steal, sum(fields)


def sample(stop: threading.Event, loads: list[float], busy: list[float], every: float = 30.0) -> None:
    last = cpu_ticks()
    cores = os.cpu_count() or 1
    while not stop.wait(every):
        now = cpu_ticks()
        loads.append(os.getloadavg()[0])
        busy.append(cores * (now[0] - last[0]) / max(1, now[1] - last[1]))
        last = now


def run_suite(clone: Path, log: Path) -> tuple[int, float]:
    """``bash .ci/run`` in a venv of ``clone``: (exit code, wall seconds)."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(clone / ".venv")], check=True)
    venv_bin = clone / ".venv" / "bin"
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}", "VIRTUAL_ENV": str(clone / ".venv")}
    env.pop("PYTHONPATH", None)
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as sink:
        code = subprocess.run(["bash", ".ci/run"], cwd=clone, env=env, stdout=sink, stderr=subprocess.STDOUT).returncode
    return code, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", default=str(REPO / "artifacts" / "test_suite.log"), help="pytest's output")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    clone = REPO.parent / f"dialeval-suite-{commit}"
    if clone.exists():
        print(f"suite_time: {clone} exists (not made by this run); remove it or move it away.", file=sys.stderr)
        return 2
    log = Path(args.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    stop, loads, busy = threading.Event(), [], []
    sampler = threading.Thread(target=sample, args=(stop, loads, busy), daemon=True)
    sampler.start()
    try:
        code, wall = run_suite(clone, log)
    finally:
        stop.set()
        shutil.rmtree(clone, ignore_errors=True)
    found = SUMMARY.findall(log.read_text(encoding="utf-8"))
    if not found:
        print(f"suite_time: no pytest summary in {log}; see it.", file=sys.stderr)
        return 2
    counts, seconds = found[-1]
    result = {
        "command": "bash .ci/run (bash install.sh, then python -m pytest) from a clean clone",
        "rewrite": "python benchmarks/suite_time.py",
        "minutes": round(float(seconds) / 60, 1),
        "cores": os.cpu_count(),
        "cpu_kind": cpu_kind().name,
        "load": (f"{min(loads):.1f} to {max(loads):.1f} (median {statistics.median(loads):.1f}; "
                 f"busy cores median {statistics.median(busy):.2f})") if loads else "not sampled",
        "tests": counts,
        "exit_code": code,
        "tests_seconds": float(seconds),
        "install_and_tests_seconds": round(wall),
        "commit": commit,
        "measured_on": f"a clean clone on {os.cpu_count()} cores, {date.today().isoformat()}",
    }
    atomic_write_text(OUT, json.dumps(result, indent=2) + "\n")
    print(f"{counts} in {float(seconds):.0f} s (exit {code}); wrote {OUT.relative_to(REPO)}")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
