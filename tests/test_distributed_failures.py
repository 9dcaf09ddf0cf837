"""Failures of the Ray engine speak: a wrong address and a cluster lost mid-job each end `dialeval score` with one
line on stderr and exit 2, and nothing on stdout (so ``--json`` output is never half a document)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ray_helpers import LOOPBACK, cli, cluster_pids, cmdline, start_cluster, stop_cluster

pytestmark = pytest.mark.slow


def test_wrong_address_fails_fast_with_one_line(tmp_path):
    """A port that accepts connections but never answers (the hang of a wrong address) and a closed port."""
    src = tmp_path / "one.parquet"
    pq.write_table(pa.table({"response": ["hello there ."]}), src)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        for port in (silent.getsockname()[1], closed.getsockname()[1]):
            address = f"127.0.0.1:{port}"
            start = time.monotonic()
            out = cli("score", "--engine", "ray", "--address", address, "--connect-timeout", "5", "--input", str(src),
                      "--metric", "ent_n", "--field", "response", "--json", timeout=120)
            assert time.monotonic() - start < 60
            assert out.returncode == 2 and out.stdout == ""
            lines = out.stderr.strip().splitlines()
            assert len(lines) == 1 and address in lines[0] and "within 5 s" in lines[0], out.stderr
        closed.close()


def test_lost_cluster_ends_with_one_line_and_exit_2(tmp_path):
    """SIGKILL every process of the cluster while a job runs: one line and exit 2 within the timeout."""
    src = tmp_path / "big.parquet"
    words = [f"w{i}" for i in range(500)]
    texts = [" ".join(words[(i * k) % 500] for k in range(1, 12)) for i in range(200_000)]
    pq.write_table(pa.table({"response": texts}), src, row_group_size=5_000)
    address, temp_dir = start_cluster(2, object_store_mb=200)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "dialeval", "score", "--engine", "ray", "--address", address,
                                 "--connect-timeout", "5", "--input", str(src), "--metric", "distinct_n",
                                 "--field", "response", "--rows-per-batch", "2000", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **LOOPBACK})
        busy = False
        deadline = time.time() + 180
        while not busy and time.time() < deadline and proc.poll() is None:
            # a worker runs a task once its title is ray::<task> instead of ray::IDLE
            busy = any(cmdline(p).startswith(b"ray::") and not cmdline(p).startswith(b"ray::IDLE")
                       for p in cluster_pids(temp_dir))
            time.sleep(0.02)
        assert busy, "the job never ran a task"
        stop_cluster(temp_dir, grace=0)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        stop_cluster(temp_dir, grace=0)
    assert proc.returncode == 2 and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dialeval score: error:") and address in lines[0], stderr
