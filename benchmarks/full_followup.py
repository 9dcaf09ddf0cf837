"""FULL speed: dialeval's batched scorer against the `full` package's loop, same model, same FED turn items.

    python benchmarks/full_followup.py                      # random-weight blenderbot-400M-distill architecture
    python benchmarks/full_followup.py --limit 40 --model /path/to/blenderbot-400M-distill

The baseline is the package's algorithm (full 0.0.3.1 `_evaluate`): per item, per follow-up, one forward
pass at batch 1 with `labels=` (the encoder re-run every time), timed in this process on the same model.
When benchmarks/full_venv exists (benchmarks/full_compat/setup_venv.sh), the real package is also timed
there, on the same saved model and items. Speed does not depend on the weights, so without Hub access the
default model is a random BlenderBot with blenderbot-400M-distill's architecture (built offline).
All rows score in compat mode (the package's 4 follow-ups, 128-token right truncation) so the work is
identical; the scores of both implementations are compared too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DIALEVAL_PROGRESS", "0")

REPO = Path(__file__).resolve().parents[1]
VENV_PY = REPO / "benchmarks" / "full_venv" / "bin" / "python"

_PACKAGE_TIMER = r"""
import json, sys, time
import torch
from full import FULL
model_dir, items_path = sys.argv[1], sys.argv[2]
items = json.load(open(items_path))
torch.set_num_threads(int(sys.argv[3]))
scorer = FULL(model_name=model_dir, device="cpu")
scorer.evaluate_turn(items[0]["context"], items[0]["response"])  # warm-up
t = time.perf_counter()
scores = [scorer.evaluate_turn(it["context"], it["response"]) for it in items]
print(json.dumps({"seconds": time.perf_counter() - t, "scores": scores}))
"""


def fed_turn_items(limit: int) -> list[dict]:
    data = json.loads((REPO.parent / "shared" / "data" / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    items = [{"context": d["context"].split("\n"), "response": d["response"]} for d in data if "response" in d]
    return items[:limit]


def package_loop(lm, tokenizer, items: list[dict], follow_ups: list[str]) -> list[float]:
    """full 0.0.3.1's algorithm: every follow-up a separate batch-1 forward pass with labels."""
    import torch

    from dialeval.full import package_history_text, package_turns

    scores = []
    with torch.no_grad():
        for it in items:
            text = package_history_text(package_turns(it["context"], it["response"]), lookback=51)
            ppl = []
            for f in follow_ups:
                enc = tokenizer(text, truncation=True, return_tensors="pt")
                labels = tokenizer(f, truncation=True, return_tensors="pt")["input_ids"]
                out = lm.model(input_ids=enc["input_ids"], labels=labels, return_dict=True)
                ppl.append(torch.exp(out["loss"]).item())
            scores.append(sum(ppl) / len(ppl))
    return scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="seq2seq model dir or id (default: random 400M-distill architecture)")
    ap.add_argument("--limit", type=int, default=24, help="FED turn-level items (default 24)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true", help="also time dialeval in bf16")
    ap.add_argument("--no-venv", action="store_true", help="skip timing the real package in benchmarks/full_venv")
    args = ap.parse_args()

    import numpy as np
    import torch

    from dialeval.full import FULL_0_0_3_FOLLOW_UPS, full_scores
    from dialeval.lm import load_lm
    from dialeval.testing.blenderbot import (
        BLENDERBOT_400M_DISTILL,
        BLENDERBOT_400M_DISTILL_VOCAB,
        build_tiny_blenderbot,
    )

    torch.set_num_threads(args.threads)
    items = fed_turn_items(args.limit)
    histories = [it["context"] + [it["response"]] for it in items]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model
        if model_dir is None:
            model_dir = str(build_tiny_blenderbot(Path(tmp) / "bb400m", init_std=0.02,
                                                  model_vocab_size=BLENDERBOT_400M_DISTILL_VOCAB,
                                                  **BLENDERBOT_400M_DISTILL))
        lm = load_lm(model_dir, device="cpu")
        from dialeval.full import _compat_tokenizer

        tokenizer = _compat_tokenizer(lm)
        rows = []
        package_loop(lm, tokenizer, items[:1], list(FULL_0_0_3_FOLLOW_UPS))  # warm-up
        t = time.perf_counter()
        base_scores = package_loop(lm, tokenizer, items, list(FULL_0_0_3_FOLLOW_UPS))
        base_s = time.perf_counter() - t
        rows.append(("package loop (in-process, batch 1, 4 passes/item)", base_s, base_scores))

        full_scores(histories[:2], level="turn", lm=lm, compat="full-0.0.3", progress=False)  # warm-up
        t = time.perf_counter()
        ours = full_scores(histories, level="turn", lm=lm, compat="full-0.0.3", batch_size=args.batch_size,
                           progress=False)["scores"]
        rows.append((f"dialeval compat, batch {args.batch_size}", time.perf_counter() - t, ours))
        t = time.perf_counter()
        ours1 = full_scores(histories, level="turn", lm=lm, compat="full-0.0.3", batch_size=1, progress=False)["scores"]
        rows.append(("dialeval compat, batch 1", time.perf_counter() - t, ours1))
        if args.bf16:
            lm16 = load_lm(model_dir, device="cpu", dtype="bf16")
            full_scores(histories[:2], level="turn", lm=lm16, compat="full-0.0.3", progress=False)
            t = time.perf_counter()
            s16 = full_scores(histories, level="turn", lm=lm16, compat="full-0.0.3", batch_size=args.batch_size,
                              progress=False)["scores"]
            rows.append((f"dialeval compat, batch {args.batch_size}, bf16", time.perf_counter() - t, s16))

        if VENV_PY.exists() and not args.no_venv:
            items_path = Path(tmp) / "items.json"
            items_path.write_text(json.dumps(items), encoding="utf-8")
            proc = subprocess.run([str(VENV_PY), "-c", _PACKAGE_TIMER, model_dir, str(items_path), str(args.threads)],
                                  capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            if proc.returncode == 0:
                res = json.loads(proc.stdout.strip().splitlines()[-1])
                rows.insert(1, ("full 0.0.3.1 package (venv, transformers 4.57)", res["seconds"], res["scores"]))
            else:
                print("package run failed:", proc.stderr[-2000:])

    print(f"\nFULL on {len(items)} FED turn-level items, model {lm.name} ({lm.kind}), {args.threads} threads\n")
    package_s = next((secs for name, secs, _ in rows if name.startswith("full 0.0.3.1")), None)
    print(f"{'implementation':52s} {'seconds':>8s} {'items/s':>8s} {'vs loop':>8s} {'vs package':>10s} "
          f"{'max rel diff':>12s}")
    for name, secs, scores in rows:
        rel = np.max(np.abs(np.asarray(scores) - np.asarray(base_scores)) / np.abs(np.asarray(base_scores)))
        vs_pkg = f"{package_s / secs:9.2f}x" if package_s else f"{'n/a':>10s}"
        print(f"{name:52s} {secs:8.2f} {len(items) / secs:8.2f} {base_s / secs:7.2f}x {vs_pkg} {rel:12.2e}")
    print("\n'vs loop'/'vs package': items/s relative to the package's algorithm in this process / the real package "
          "in its venv; 'max rel diff': scores relative to the in-process loop.")


if __name__ == "__main__":
    main()
