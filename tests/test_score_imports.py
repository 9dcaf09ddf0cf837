"""A local ``dialeval score`` runs each metric's declared core in this process: no ``evaluate``/``datasets``
(and so no ``pyarrow.dataset``), no Ray, and the same numbers and signature as the ``evaluate`` module."""

from __future__ import annotations

import json
import subprocess
import sys

import dialeval

CODE = """
import contextlib, io, json, sys
from dialeval.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main(sys.argv[1:])
heavy = [m for m in ("ray", "pyarrow.dataset", "evaluate", "datasets", "gradio") if m in sys.modules]
print(json.dumps({"rc": rc, "heavy": heavy, "results": json.loads(out.getvalue())}))
"""


def test_local_score_imports_no_engine_and_equals_the_modules(tmp_path):
    responses = ["i like tea .", "i like coffee .", "no thanks", "i like tea ."]
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps({"id": i, "response": r}) + "\n" for i, r in enumerate(responses)),
                   encoding="utf-8")
    args = ["score", "--metric", "distinct_n", "--metric", "ent_n", "--metric", "low_frequency", "--input",
            str(src), "--field", "response", "--json"]
    proc = subprocess.run([sys.executable, "-c", CODE, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0 and got["heavy"] == []
    for name in ("distinct_n", "ent_n", "low_frequency"):
        assert got["results"][name] == dialeval.load(name).compute(predictions=responses)
