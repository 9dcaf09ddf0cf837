"""Our compat="full-0.0.3" mode against the stored outputs of the `full` package (no venv needed).

    python benchmarks/full_compat/compare.py

Rebuilds the tiny BlenderBot from the recipe in tests/data/full_compat_reference.json, checks its
fingerprint, scores every case with dialeval and prints the relative error per case.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REFERENCE = Path(__file__).resolve().parents[2] / "tests" / "data" / "full_compat_reference.json"


def compat_scores(reference: dict, model_dir: Path) -> list[float]:
    """dialeval's compat-mode score for each case of ``reference`` (model already built in ``model_dir``)."""
    from dialeval.full.scorer import full_scores
    from dialeval.models.lm import load_lm

    lm = load_lm(str(model_dir), device="cpu")
    out = []
    for case in reference["cases"]:
        history = case["context"] + [case["response"]] if case["level"] == "turn" else case["context"]
        res = full_scores([history], level=case["level"], lm=lm, follow_ups=case.get("follow_ups"),
                          compat="full-0.0.3", progress=False)
        out.append(res["scores"][0])
    return out


def main() -> int:
    from dialeval.testing.blenderbot import build_tiny_blenderbot, state_fingerprint

    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_blenderbot(Path(tmp) / "m", **reference["builder"]["kwargs"])
        if state_fingerprint(model_dir) != reference["model_fingerprint"]:
            print("rebuilt model differs from the one the reference was computed on", file=sys.stderr)
            return 1
        ours = compat_scores(reference, model_dir)
    worst = 0.0
    print(f"{'case':24s} {'package':>14s} {'dialeval':>14s} {'rel.err':>9s}")
    for case, value in zip(reference["cases"], ours):
        rel = abs(value - case["package_score"]) / abs(case["package_score"])
        worst = max(worst, rel)
        print(f"{case['name']:24s} {case['package_score']:14.6f} {value:14.6f} {rel:9.2e}")
    print(f"max relative error {worst:.2e} (target < 1e-5)")
    return 0 if worst < 1e-5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
