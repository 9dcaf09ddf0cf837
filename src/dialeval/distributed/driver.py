"""The Ray driver of ``dialeval score --engine ray``, run as its own process.

The CLI writes a request (JSON) and starts ``python -m dialeval.distributed.driver REQUEST`` with the driver's
stdout and stderr going to the CLI's stderr (a terminal) or to a log file, so nothing Ray or its workers print
reaches the CLI's stdout (``--json`` stays valid JSON). The driver writes ``{"results": ...}`` or ``{"error": "one line"}`` to the request's ``result`` path.
When it dies without writing one (the cluster was lost and Ray ended the process), the CLI reports that in one
line and exits 2; :data:`RECONNECT_ENV` bounds how long Ray waits for a lost cluster before ending it.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

#: Ray's own setting: seconds a driver waits for a lost cluster (GCS) before Ray ends the process.
RECONNECT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Score every metric of ``request`` (one read, shared passes) and write the per-item outputs and
    ``results.json`` under ``request["output"]``."""
    from dialeval.distributed import engine
    from dialeval.distributed.api import Settings, score_many, writes_items

    settings = Settings(**request["settings"])
    out = request.get("output")
    outputs: dict[str, str] = {}
    if out:
        engine.check_output(out, overwrite=settings.overwrite, inputs=(request["input"],),
                            timeout=settings.connect_timeout)
        outputs = {name: engine.child_uri(out, name) for name in request["metrics"] if writes_items(name)}
    results = score_many(request["input"], request["metrics"], request["columns"], outputs=outputs,
                         configs=request["configs"], settings=settings)
    if out:
        write_json(out, "results.json", results, settings.connect_timeout)
    return results


def write_json(folder: str, name: str, obj: Any, timeout: float) -> None:
    """``obj`` as ``folder/name``: atomically for a local folder, through pyarrow's filesystem for a URI."""
    from dialeval.distributed.engine import filesystem_of
    from dialeval.io.files import atomic_write_json, json_text

    fs, path = filesystem_of(folder, timeout=timeout)
    if fs is None:
        atomic_write_json(Path(path) / name, obj)
        return
    with fs.open_output_stream(f"{path.rstrip('/')}/{name}") as f:
        f.write(json_text(obj).encode("utf-8"))


def main(request_path: str) -> int:
    from dialeval.cli import error_line, is_user_error

    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    try:
        payload: dict[str, Any] = {"results": run(request)}
        code = 0
    except Exception as exc:  # noqa: BLE001 - user and Ray errors become one line; bugs keep their traceback
        from_ray = type(exc).__module__.startswith("ray")
        if not (is_user_error(exc) or isinstance(exc, ImportError) or from_ray):
            traceback.print_exc()
        where = request["settings"].get("address") or os.environ.get("RAY_ADDRESS") or "a new local cluster"
        line = error_line(exc)
        payload, code = {"error": f"the Ray job on {where} failed: {line}" if from_ray else line}, 2
    Path(request["result"]).write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not ray.shutdown(): after a lost cluster it would wait for it


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
