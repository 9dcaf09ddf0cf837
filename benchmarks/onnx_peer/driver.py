"""Drive the ONNX Runtime peers of worker.py (their own venv) from a dialeval benchmark: one process, one
command per timed run, so its rounds interleave with dialeval's in :func:`_common.interleaved`."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
PYTHON = HERE.parent / "onnx_peer_venv" / "bin" / "python"


def available() -> bool:
    return PYTHON.is_file()


class PeerProcess:
    """``PeerProcess("st", model_dir, texts, threads)``; ``run(batch_size)`` times one encode/predict in the
    worker (the wall time seen here adds one JSON line each way); ``output()`` is the last result."""

    def __init__(self, kind: str, model_dir: str, data: list[Any], threads: int) -> None:
        if not available():
            raise FileNotFoundError(f"{PYTHON} is missing: run benchmarks/onnx_peer/setup_venv.sh first.")
        self.tmp = Path(tempfile.mkdtemp(prefix="onnx-peer-"))
        (self.tmp / "data.json").write_text(json.dumps(data), encoding="utf-8")
        env = {"OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
        self.proc = subprocess.Popen([str(PYTHON), str(HERE / "worker.py"), kind, model_dir,
                                      str(self.tmp / "data.json"), str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        self.info = self._ask(None)

    def _ask(self, cmd: dict[str, Any] | None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if cmd is not None:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the ONNX peer worker exited (code {self.proc.poll()}); run it by hand to see why.")
        return json.loads(line)

    def run(self, batch_size: int) -> float:
        return float(self._ask({"batch_size": batch_size})["seconds"])

    def output(self) -> np.ndarray:
        path = self.tmp / "out.npy"
        self._ask({"save": str(path)})
        return np.load(path)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
