"""Measure the caches dialeval and its tests write outside the checkout and write ``docs/results/disk.json`` (the
README's cache table reads it: ``python tools/sitegen.py readme``). Run it right after ``python -m pytest``:

    python -m pytest && python benchmarks/disk_usage.py

Each folder is found as dialeval, pytest and Hugging Face find it (their variables first); a missing folder counts
0 GB. Nothing is deleted.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dialeval.io.files import atomic_write_text  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "results" / "disk.json"


def folder_gb(path: Path) -> float:
    """Bytes of the regular files under ``path`` (links not followed), in GB (10^9), one decimal."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += st.st_size if not os.path.islink(os.path.join(root, name)) else 0
    return round(total / 1e9, 1)


def caches() -> list[dict[str, object]]:
    home = Path.home()
    hf = Path(os.environ.get("HF_HOME") or home / ".cache" / "huggingface")
    dialeval = Path(os.environ.get("DIALEVAL_CACHE") or home / ".cache" / "dialeval")
    pytest_tmp = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
    pip_cache = Path(os.environ.get("PIP_CACHE_DIR") or home / ".cache" / "pip")
    return [
        {"what": "ONNX exports of the embedded models, the unpacked SmolLM2 weights and WordNet, rebuilt on next use in minutes",
         "folder": "~/.cache/dialeval", "variable": "DIALEVAL_CACHE", "gb": folder_gb(dialeval),
         "clear": "rm -rf ~/.cache/dialeval"},
        {"what": "the tests' temporary folders, the last three runs kept; `--basetemp DIR` puts one elsewhere",
         "folder": "/tmp/pytest-of-$USER", "variable": "TMPDIR", "gb": folder_gb(pytest_tmp),
         "clear": "rm -rf /tmp/pytest-of-$USER"},
        {"what": "Hugging Face's datasets builds and evaluate modules",
         "folder": "~/.cache/huggingface", "variable": "HF_HOME", "gb": folder_gb(hf),
         "clear": "rm -rf ~/.cache/huggingface/datasets ~/.cache/huggingface/modules"},
        {"what": "pip's downloads from install.sh", "folder": "~/.cache/pip", "variable": "PIP_CACHE_DIR",
         "gb": folder_gb(pip_cache), "clear": "pip cache purge"},
    ]


def main() -> int:
    result = {"command": "python benchmarks/disk_usage.py", "measured": "right after one full `python -m pytest`",
              "note": f"on {os.cpu_count()} CPUs",
              "date": date.today().isoformat(), "caches": caches()}
    atomic_write_text(OUT, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    for c in result["caches"]:
        print(f"{c['folder']}: {c['gb']} GB")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
