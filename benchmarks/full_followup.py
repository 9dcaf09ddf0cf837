"""FULL speed against the `full` 0.0.3.1 package at the same precision and thread count, same FED turn items.

    python benchmarks/full_followup.py --quick             # 8 items, 2 rounds, fp32 + bf16
    python benchmarks/full_followup.py --limit 24 --repeats 3 [--model /path/to/blenderbot-400M-distill]

Peer: the real package (benchmarks/full_venv, made by benchmarks/full_compat/setup_venv.sh; it needs
transformers 4.x) timed in a subprocess on the same saved model and items, with its model cast to the same
dtype; rounds alternate package and dialeval (interleaved), medians reported. Without the venv, the
package's algorithm (per item, per follow-up, one batch-1 forward with ``labels=``) is timed in this process
instead. Speed does not depend on the weights, so without Hub access the model is a random BlenderBot with
blenderbot-400M-distill's architecture (built offline). All rows score in compat mode (the package's 4
follow-ups, 128-token right truncation), so the work is identical and the scores are compared too.
FLOPs per item: 2 × parameters × tokens (encoder over the history, decoder + LM head over each follow-up)
plus attention; "useful" encodes each history once (what dialeval runs), the package encodes it once per
follow-up (4 times).
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
scorer.model = scorer.model.to(getattr(torch, sys.argv[4]))
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

    from dialeval.full.texts import package_history_text, package_turns

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


def item_flops(lm, tokenizer, items: list[dict], follow_ups: list[str]) -> tuple[float, float]:
    """(useful, package-executed) FLOPs per item: encoder over the history (once / once per follow-up),
    decoder with LM head over each follow-up's tokens."""
    from _common import forward_flops

    from dialeval.full.texts import package_history_text, package_turns

    model = lm.model
    cfg = model.config
    enc_p = sum(p.numel() for n, p in model.named_parameters() if ".encoder." in n and "embed" not in n)
    dec_p = sum(p.numel() for n, p in model.named_parameters() if ".decoder." in n and "embed" not in n)
    dec_p += cfg.vocab_size * cfg.d_model  # the LM head
    f_lens = [len(tokenizer(f, truncation=True)["input_ids"]) for f in follow_ups]
    useful = package = 0.0
    for it in items:
        text = package_history_text(package_turns(it["context"], it["response"]), lookback=51)
        h = len(tokenizer(text, truncation=True)["input_ids"])
        enc = forward_flops(enc_p, cfg.encoder_layers, cfg.d_model, h)
        dec = sum(forward_flops(dec_p, cfg.decoder_layers, cfg.d_model, f) + 4 * cfg.decoder_layers * cfg.d_model * f * h
                  for f in f_lens)
        useful += enc + dec
        package += len(follow_ups) * enc + dec
    return useful / len(items), package / len(items)


def time_package(model_dir: str, items_path: Path, threads: int, dtype: str) -> dict | None:
    proc = subprocess.run([str(VENV_PY), "-c", _PACKAGE_TIMER, model_dir, str(items_path), str(threads), dtype],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if proc.returncode != 0:
        print("package run failed:", proc.stderr[-2000:])
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    import statistics
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import machine_line, matmul_peak, table

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="seq2seq model dir or id (default: random 400M-distill architecture)")
    ap.add_argument("--limit", type=int, default=24, help="FED turn-level items (default 24)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--quick", action="store_true", help="--limit 8 --repeats 2")
    args = ap.parse_args()
    if args.quick:
        args.limit, args.repeats = 8, 2

    import numpy as np
    import torch

    from dialeval.full.scorer import _compat_tokenizer, full_scores
    from dialeval.full.texts import FULL_0_0_3_FOLLOW_UPS
    from dialeval.lm import load_lm
    from dialeval.testing.blenderbot import (
        BLENDERBOT_400M_DISTILL,
        BLENDERBOT_400M_DISTILL_VOCAB,
        build_tiny_blenderbot,
    )

    torch.set_num_threads(args.threads)
    items = fed_turn_items(args.limit)
    histories = [it["context"] + [it["response"]] for it in items]
    fus = list(FULL_0_0_3_FOLLOW_UPS)
    rows, scores32 = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or str(build_tiny_blenderbot(
            Path(tmp) / "bb400m", init_std=0.02, model_vocab_size=BLENDERBOT_400M_DISTILL_VOCAB, **BLENDERBOT_400M_DISTILL))
        items_path = Path(tmp) / "items.json"
        items_path.write_text(json.dumps(items), encoding="utf-8")
        for dtype in args.dtypes:
            lm = load_lm(model_dir, device="cpu", dtype=dtype)
            tokenizer = _compat_tokenizer(lm)
            useful, package_exec = item_flops(lm, tokenizer, items, fus)
            peak = matmul_peak(lm.model.dtype)
            full_scores(histories[:2], level="turn", lm=lm, compat="full-0.0.3", progress=False)  # warm-up
            times: dict[str, list[float]] = {"dialeval": [], "peer": []}
            peer_name, peer_scores = "full 0.0.3.1 package", None
            for _ in range(args.repeats):
                if VENV_PY.exists():
                    res = time_package(model_dir, items_path, args.threads, {"fp32": "float32", "bf16": "bfloat16"}[dtype])
                    if res:
                        times["peer"].append(res["seconds"])
                        peer_scores = res["scores"]
                else:
                    peer_name = "package algorithm in-process (no venv)"
                    t = time.perf_counter()
                    peer_scores = package_loop(lm, tokenizer, items, fus)
                    times["peer"].append(time.perf_counter() - t)
                t = time.perf_counter()
                ours = full_scores(histories, level="turn", lm=lm, compat="full-0.0.3", batch_size=args.batch_size,
                                   progress=False)["scores"]
                times["dialeval"].append(time.perf_counter() - t)
            scores32.setdefault(dtype, ours)
            med = {k: statistics.median(v) for k, v in times.items() if v}
            for name, key, flops in ((f"dialeval compat, batch {args.batch_size}", "dialeval", useful),
                                     (peer_name, "peer", package_exec)):
                if key not in med:
                    continue
                rel = "" if key == "dialeval" or peer_scores is None else (
                    f"{np.max(np.abs(np.asarray(ours) - np.asarray(peer_scores)) / np.abs(np.asarray(peer_scores))):.1e}")
                rows.append([f"{dtype}: {name}", f"{len(items) / med[key]:.2f}", f"{med['dialeval'] / med[key]:.2f}",
                             f"{useful / 1e9:.1f}", f"{flops / 1e9:.1f}", f"{peak / 1e9:.0f}",
                             f"{100 * useful * len(items) / med[key] / peak:.0f}%",
                             f"{100 * flops * len(items) / med[key] / peak:.0f}%", rel])
            del lm
    print(f"\nFULL on {len(items)} FED turn-level items, compat mode, model {args.model or 'random blenderbot-400M-distill shape'}")
    print(machine_line(args.threads))
    print(table(["configuration", "items/s", "vs dialeval", "useful GFLOP/item", "executed GFLOP/item",
                 "peak GFLOP/s", "useful % peak", "executed % peak", "max rel diff vs dialeval"], rows))
    if "fp32" in scores32 and "bf16" in scores32:
        from scipy.stats import spearmanr

        rho = spearmanr(scores32["fp32"], scores32["bf16"]).statistic
        print(f"dialeval bf16 vs fp32: Spearman rho of the item scores {rho:.4f}")


if __name__ == "__main__":
    main()
