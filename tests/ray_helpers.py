"""A throwaway Ray cluster on loopback for the Ray tests: started with ``ray start`` in its own processes and
stopped by pid (never ``ray stop``, which would stop every Ray cluster on the machine)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# Ray resolves 127.0.0.1 to the routable address unless this is off (read when ray is imported, so set
# first); off, the cluster and this driver use loopback only.
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "disabled", "DIALEVAL_PROGRESS": "0"}  # a ~/.ray/auth_token would switch auth on


def printed_json(out: str) -> object:
    """The JSON document a CLI call printed (``json.dumps(..., indent=2)``: it starts on a line of its own). A test
    process connected to Ray may also get Ray's log-monitor lines (e.g. "(raylet) WARNING: 8 PYTHON worker
    processes have been started") on its stdout before it; a user's ``dialeval score`` process is not connected."""
    start = re.search(r"^[{\[]", out, re.M)
    assert start is not None, f"no JSON document in the output: {out[:300]!r}"
    return json.loads(out[start.start():])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cluster(num_cpus: int = 2, object_store_mb: int = 400, client_port: int | None = None) -> tuple[str, str]:
    """``(address, temp_dir)`` of a new head node on 127.0.0.1 (with a Ray Client server on ``client_port``)."""
    temp_dir = tempfile.mkdtemp(prefix="dlr", dir="/tmp")  # Ray's socket paths must stay short
    port = free_port()
    cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--num-cpus", str(num_cpus),
           "--include-dashboard", "false", "--temp-dir", temp_dir, "--port", str(port), "--node-ip-address",
           "127.0.0.1", "--object-store-memory", str(object_store_mb * 2**20), "--disable-usage-stats"]
    if client_port is not None:
        cmd += ["--ray-client-server-port", str(client_port)]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **LOOPBACK}, timeout=180)
    _ADDRESSES[temp_dir] = f"127.0.0.1:{port}"
    return f"127.0.0.1:{port}", temp_dir


#: temp dir -> GCS address of each cluster started here: the Ray Client proxy's command line names the address only
_ADDRESSES: dict[str, str] = {}


_SHARED: dict[str, str] = {}


def shared_cluster(config: object) -> str:
    """The address of one 2-CPU cluster for the whole test session, started by the first test that asks
    (``config`` is pytest's, ``request.config``) and stopped by pid after the last test that uses it
    (:func:`stop_shared_cluster`, called from ``conftest.py``) or when the session ends, so the Ray test modules
    share one cluster (a process joins one cluster only) and its daemons do not idle through the rest."""
    if "address" not in _SHARED:
        address, temp_dir = start_cluster(2)
        _SHARED.update(address=address, temp_dir=temp_dir)
        config.add_cleanup(stop_shared_cluster)
    return _SHARED["address"]


def stop_shared_cluster() -> None:
    """Disconnect this process and stop the shared cluster's processes (nothing when none is running)."""
    if "temp_dir" not in _SHARED:
        return
    import ray

    ray.shutdown()
    stop_cluster(_SHARED["temp_dir"], grace=3.0)  # a Ray daemon may sit out SIGTERM; nothing of it is kept
    _SHARED.clear()


def cluster_pids(temp_dir: str) -> set[int]:
    """Processes of the cluster rooted in ``temp_dir`` (their command line names it, or, for the Ray Client proxy,
    the cluster's address) and their children."""
    parents: dict[int, int] = {}
    mine: set[int] = set()
    address = f"--address={_ADDRESSES[temp_dir]} ".encode() if temp_dir in _ADDRESSES else None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        ours = temp_dir.encode() in cmd or (address is not None and address in cmd)
        if ours and int(entry.name) != os.getpid():
            mine.add(int(entry.name))
    grown = True
    while grown:
        kids = {pid for pid, ppid in parents.items() if ppid in mine} - mine
        grown = bool(kids)
        mine |= kids
    return mine


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def stop_cluster(temp_dir: str, grace: float = 10.0) -> None:
    """What ``ray stop`` does, limited to this cluster's processes: SIGTERM, then SIGKILL after ``grace``
    seconds (``grace=0``: SIGKILL at once, as a crashed machine)."""
    steps = ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)) if grace else ((signal.SIGKILL, 5.0),)
    for sig, wait in steps:
        pids = cluster_pids(temp_dir)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + wait
        while time.time() < deadline and any(cmdline(p) for p in pids):
            time.sleep(0.2)


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m dialeval ARGS`` in a child process (stdout and stderr captured apart)."""
    return subprocess.run([sys.executable, "-m", "dialeval", *args], capture_output=True, text=True,
                          env={**os.environ, **LOOPBACK, **(env or {})}, timeout=timeout)


def moto_s3(monkeypatch: object) -> Iterator[tuple[object, dict[str, str]]]:
    """For an ``s3`` fixture: a real S3-compatible server (moto) on 127.0.0.1 in this process, stopped after the
    test; yields a pyarrow filesystem on it (bucket ``bench``) and the environment that points clients at it."""
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    fs = pafs.S3FileSystem(endpoint_override=f"http://{host}:{port}", access_key="testing", secret_key="testing",
                           region="us-east-1", allow_bucket_creation=True)
    fs.create_dir("bench")
    try:
        yield fs, env
    finally:
        server.stop()
