"""FULL speed against the `full` 0.0.3.1 package at the same precision and thread count, same FED turn items.

    python benchmarks/full_followup.py --quick             # 8 items, 2 rounds, fp32 + bf16
    python benchmarks/full_followup.py --limit 24 --repeats 3 [--model /path/to/blenderbot-400M-distill]
    python benchmarks/full_followup.py --both --limit 8 --repeats 2 --dtypes fp32 --threads 1   # the docs' table

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

``--causal``: the offline causal default (SmolLM2-135M-Instruct, default mode, per-token mean NLL) on ONNX
Runtime: dialeval ``backend="torch"``, ``"onnx"`` and ``"onnx-int8"`` (history once per item, follow-ups on
its key/value cache) against a plain transformers loop and optimum's ``ORTModelForCausalLM`` (own venv,
``benchmarks/onnx_peer``), both re-running the history with each follow-up in one batch per item; the same
token ids everywhere, interleaved rounds, max relative difference of the NLLs against dialeval torch.

Every run writes docs/results/benchmarks/full_followup.<CPU kind>.json (``--result PATH``, or ``-`` for none): one row per
timed route, its seconds over dialeval default's and its scores' difference from dialeval's.
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


def item_flops(lm, tokenizer, items: list[dict], follow_ups: list[str]) -> tuple[float, float, float]:
    """(useful, ONNX-executed, package-executed) FLOPs per item. Useful: the encoder over the history and the
    decoder's cross-attention keys/values of it once, the decoder with LM head over each follow-up's tokens.
    dialeval's ONNX decoder graph recomputes those keys/values for every follow-up; the package also re-runs the
    encoder for every follow-up."""
    from _common import forward_flops

    from dialeval.full.texts import package_history_text, package_turns

    model = lm.model
    cfg = model.config
    enc_p = sum(p.numel() for n, p in model.named_parameters() if ".encoder." in n and "embed" not in n)
    cross_kv = sum(p.numel() for n, p in model.named_parameters()
                   if ".decoder." in n and "encoder_attn." in n and ("k_proj" in n or "v_proj" in n))
    dec_p = sum(p.numel() for n, p in model.named_parameters() if ".decoder." in n and "embed" not in n) - cross_kv
    dec_p += cfg.vocab_size * cfg.d_model  # the LM head
    f_lens = [len(tokenizer(f, truncation=True)["input_ids"]) for f in follow_ups]
    useful = onnx = package = 0.0
    for it in items:
        text = package_history_text(package_turns(it["context"], it["response"]), lookback=51)
        h = len(tokenizer(text, truncation=True)["input_ids"])
        enc = forward_flops(enc_p, cfg.encoder_layers, cfg.d_model, h)
        kv = 2 * cross_kv * h  # the decoder's cross-attention keys and values of the history
        dec = sum(forward_flops(dec_p, cfg.decoder_layers, cfg.d_model, f) + 4 * cfg.decoder_layers * cfg.d_model * f * h
                  for f in f_lens)
        useful += enc + kv + dec
        onnx += enc + len(follow_ups) * kv + dec
        package += len(follow_ups) * (enc + kv) + dec
    return useful / len(items), onnx / len(items), package / len(items)


def time_package(model_dir: str, items_path: Path, threads: int, dtype: str) -> dict | None:
    proc = subprocess.run([str(VENV_PY), "-c", _PACKAGE_TIMER, model_dir, str(items_path), str(threads), dtype],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if proc.returncode != 0:
        print("package run failed:", proc.stderr[-2000:])
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="seq2seq model dir or id (default: random 400M-distill architecture)")
    ap.add_argument("--limit", type=int, default=24, help="FED turn-level items (default 24)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--quick", action="store_true", help="--limit 8 --repeats 2")
    ap.add_argument("--causal", action="store_true", help="SmolLM2 on torch / ONNX Runtime (see above)")
    ap.add_argument("--both", action="store_true", help="the --causal table, then the compat one, one result file")
    ap.add_argument("--result", default=None,
                    help="result file to write (default docs/results/benchmarks/full_followup.<CPU kind>.json; '-': none)")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda with --causal (torch routes, first of --dtypes)")
    args = ap.parse_args()
    if args.quick:
        args.limit, args.repeats = 8, 2
    from _common import machine_line, result_file

    args.result = args.result or str(result_file("full_followup"))
    args.machine = machine_line(args.threads)  # the load at the start
    if args.causal or args.both:
        causal_main(args)
    if not args.causal:
        compat_main(args)
    if args.result != "-":
        write_full_result(args)


RECORDS: list[dict] = []  # the result file's rows, one per timed route
SUMMARY: list[str] = []


def relative(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.abs(b)))


def summarize(prefix: str, secs: dict[str, float], ours: str, peers: list[str], rel: dict[str, float],
              what: str) -> None:
    best = min(peers, key=secs.get)
    times = ", ".join(f"{p} {secs[p] / secs[ours]:.2f}×" for p in sorted(peers, key=secs.get))
    SUMMARY.append(f"{prefix}: each peer's time over dialeval default's: {times}; the strongest peer's {what} "
                   f"within {rel[best]:.1e} relative of dialeval's")


def write_full_result(args) -> None:
    import sys

    from _common import write_result

    write_result(args.result, script="benchmarks/full_followup.py", title="FULL follow-up likelihood",
                 command="python benchmarks/full_followup.py " + " ".join(sys.argv[1:]), threads=args.threads,
                 summary="; ".join(SUMMARY), rows=RECORDS, machine_text=args.machine,
                 note=f"{args.limit} FED turn-level items; median of {args.repeats} rounds, dialeval and its peers "
                      "alternating; 'time vs dialeval default' is each route's seconds over dialeval's default route.")


def compat_main(args) -> None:
    import statistics

    import numpy as np
    import torch
    from _common import machine_line, matmul_peak, route_records, table

    from dialeval.full.scorer import _compat_tokenizer, full_scores
    from dialeval.full.texts import FULL_0_0_3_FOLLOW_UPS
    from dialeval.models.lm import load_lm
    from dialeval.models.onnx_backend import resolve_backend
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
            lm = load_lm(model_dir, device="cpu", dtype=dtype)  # the default backend for this CPU kind
            routes = {"dialeval": lm}
            # the other backend, timed too: ONNX Runtime where it would run without the CPU-kind rule
            other = resolve_backend(None, "cpu", dtype) if lm.backend == "torch" else "torch"
            if other != lm.backend:
                routes[other] = load_lm(model_dir, device="cpu", dtype=dtype, backend=other)
            tokenizer = _compat_tokenizer(lm)
            useful, onnx_exec, package_exec = item_flops(lm, tokenizer, items, fus)
            # bf16 runs bf16 products on an fp32 model (lm.model.dtype stays fp32): price them at the bf16 peak
            peak = matmul_peak(torch.bfloat16 if dtype == "bf16" else torch.float32)
            for route in routes.values():
                full_scores(histories[:2], level="turn", lm=route, compat="full-0.0.3", progress=False)  # warm-up
            times: dict[str, list[float]] = {"dialeval": [], other: [], "peer": []}
            scores: dict[str, list[float]] = {}
            peer_name = "full 0.0.3.1 package"
            for _ in range(args.repeats):
                if VENV_PY.exists():
                    res = time_package(model_dir, items_path, args.threads, {"fp32": "float32", "bf16": "bfloat16"}[dtype])
                    if res:
                        times["peer"].append(res["seconds"])
                        scores["peer"] = res["scores"]
                else:
                    peer_name = "package algorithm in-process (no venv)"
                    t = time.perf_counter()
                    scores["peer"] = package_loop(lm, tokenizer, items, fus)
                    times["peer"].append(time.perf_counter() - t)
                for key, route in routes.items():
                    t = time.perf_counter()
                    scores[key] = full_scores(histories, level="turn", lm=route, compat="full-0.0.3",
                                              batch_size=args.batch_size, progress=False)["scores"]
                    times[key].append(time.perf_counter() - t)
            ours = np.asarray(scores["dialeval"])
            scores32.setdefault(dtype, ours)
            med = {k: statistics.median(v) for k, v in times.items() if v}
            for name, key, flops in ((f"dialeval compat, batch {args.batch_size}, backend {lm.backend} (default)",
                                      "dialeval", onnx_exec if lm.backend != "torch" else useful),
                                     (f"dialeval compat, batch {args.batch_size}, backend {other}", other,
                                      onnx_exec if other != "torch" else useful),
                                     (peer_name, "peer", package_exec)):
                if key not in med:
                    continue
                rel = "" if key == "dialeval" or key not in scores else (
                    f"{np.max(np.abs(ours - np.asarray(scores[key])) / np.abs(np.asarray(scores[key]))):.1e}")
                rows.append([f"{dtype}: {name}", f"{len(items) / med[key]:.2f}", f"{med['dialeval'] / med[key]:.2f}",
                             f"{useful / 1e9:.1f}", f"{flops / 1e9:.1f}", f"{peak / 1e9:.0f}",
                             f"{100 * useful * len(items) / med[key] / peak:.0f}%",
                             f"{100 * flops * len(items) / med[key] / peak:.0f}%", rel])
            names = {"dialeval": f"dialeval compat, backend {lm.backend} (default)",
                     other: f"dialeval compat, backend {other}", "peer": peer_name}
            secs = {names[k]: v for k, v in med.items()}
            rel = {names[k]: relative(v, ours) for k, v in scores.items()}
            agree = {names[k]: {"max |Δ score| vs dialeval": float(np.max(np.abs(np.asarray(v) - ours))),
                                "max relative |Δ score|": rel[names[k]]} for k, v in scores.items()}
            RECORDS.extend(route_records(secs, names["dialeval"], len(items), "items/s", agree,
                                         prefix=f"compat (blenderbot-400M-distill shape, random weights) {dtype}: "))
            if "peer" in med:
                summarize(f"compat mode {dtype}", secs, names["dialeval"], [names["peer"]], rel, "scores")
            del lm, routes
    print(f"\nFULL on {len(items)} FED turn-level items, compat mode, model {args.model or 'random blenderbot-400M-distill shape'}")
    print(machine_line(args.threads))
    print(table(["configuration", "items/s", "vs dialeval", "useful GFLOP/item", "executed GFLOP/item",
                 "peak GFLOP/s", "useful % peak", "executed % peak", "max rel diff vs dialeval"], rows))
    if "fp32" in scores32 and "bf16" in scores32:
        from scipy.stats import spearmanr

        rho = spearmanr(scores32["fp32"], scores32["bf16"]).statistic
        print(f"dialeval bf16 vs fp32: Spearman rho of the item scores {rho:.4f}")


def causal_main(args) -> None:
    import sys

    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import interleaved, machine_line, matmul_peak, route_records, table
    from onnx_peer.driver import PeerProcess, available
    from transformers import AutoModelForCausalLM

    from dialeval.full.scorer import FollowupScorer, full_scores
    from dialeval.full.texts import FOLLOW_UPS
    from dialeval.models.lm import load_lm

    torch.set_num_threads(args.threads)
    items = fed_turn_items(args.limit)
    histories = [it["context"] + [it["response"]] for it in items]
    on_cpu = args.device == "cpu"
    dtype = "fp32" if on_cpu else args.dtypes[0]
    lms = {b: load_lm(args.model, device=args.device, dtype=dtype, backend=b)
           for b in (("torch", "onnx", "onnx-int8") if on_cpu else ("torch",))}
    scorer = FollowupScorer(lms["torch"])
    f_ids = scorer.encode_follow_ups(FOLLOW_UPS)
    h_ids = [scorer.encode_history(h, scorer.max_length - max(len(f) for f in f_ids)) for h in histories]
    # the peer loop runs the LM as a user loads it: transformers' own model (SDPA attention, torch's own products)
    model = AutoModelForCausalLM.from_pretrained(lms["torch"].path, dtype=next(lms["torch"].model.parameters()).dtype
                                                 ).to(args.device).eval()
    pad = model.config.pad_token_id if model.config.pad_token_id is not None else model.config.eos_token_id

    def ours(lm):
        return full_scores(histories, level="turn", lm=lm, aggregation="mean", batch_size=args.batch_size,
                           progress=False)["follow_up_scores"]

    def hf_loop():  # transformers, history re-run with every follow-up, one batch per item
        out = []
        with torch.inference_mode():
            for h in h_ids:
                seqs = [h + f for f in f_ids]
                width = max(map(len, seqs))
                ids = torch.full((len(seqs), width), pad, dtype=torch.long)
                mask = torch.zeros_like(ids)
                for i, x in enumerate(seqs):
                    ids[i, :len(x)], mask[i, :len(x)] = torch.tensor(x), 1
                logits = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device)).logits
                logp = torch.log_softmax(logits.float(), -1).cpu()
                out.append([float(-logp[i, torch.arange(len(h) - 1, len(h) - 1 + len(f)), torch.tensor(f)].mean())
                            for i, f in enumerate(f_ids)])
        return out

    default = load_lm(args.model, device=args.device, dtype=dtype).backend  # backend=None: what users get
    label = {b: f"dialeval backend='{b}'" + (" (default)" if b == default else "") for b in lms}
    runs = {label[b]: (lambda lm=lm: ours(lm)) for b, lm in lms.items()}
    runs["transformers loop (history per follow-up)"] = hf_loop
    peer = None
    if available() and on_cpu:
        peer = PeerProcess("causal", lms["torch"].path, {"histories": h_ids, "follow_ups": f_ids, "pad": pad},
                           args.threads)
        runs["optimum ORTModelForCausalLM (history per follow-up)"] = lambda: peer.run(0)
    for fn in runs.values():
        fn()  # warm-up (and the peer's export happened on load)
    peak = matmul_peak(model.dtype, device=args.device)
    secs, outs = interleaved(runs, args.repeats)
    if peer is not None:
        outs["optimum ORTModelForCausalLM (history per follow-up)"] = peer.output()
        peer.close()
    ours_name = label[default]
    peers = [n for n in runs if not n.startswith("dialeval")]
    rel = {n: relative(outs[n], outs[ours_name]) for n in runs}
    agree = {n: {"max |Δ NLL| vs dialeval": float(np.max(np.abs(np.asarray(outs[n]) - np.asarray(outs[ours_name])))),
                 "max relative |Δ score|": rel[n]} for n in runs}
    RECORDS.extend(route_records(secs, ours_name, len(items), "items/s", agree,
                                 prefix=f"default mode ({lms['torch'].name}) {dtype}: "))
    summarize(f"default mode, {lms['torch'].name}", secs, ours_name, peers, rel, "follow-up NLLs")
    if peer is None and on_cpu:  # said in the result, not dropped silently
        SUMMARY[-1] += ("; optimum ORTModelForCausalLM did not run (benchmarks/onnx_peer_venv missing: "
                        "benchmarks/onnx_peer/setup_venv.sh)")
    ref = np.asarray(outs[label["torch"]])
    params = sum(p.numel() for p in model.parameters())
    tokens = sum(len(h) + sum(map(len, f_ids)) for h in h_ids)
    rerun = sum(len(f_ids) * len(h) + sum(map(len, f_ids)) for h in h_ids)
    rows = []
    for name in runs:
        flops = 2 * params * (rerun if "per follow-up" in name else tokens)
        rel = np.max(np.abs(np.asarray(outs[name]) - ref) / np.abs(ref))
        rows.append([name, f"{len(items) / secs[name]:.2f}", f"{secs[name] / secs[next(iter(runs))]:.2f}",
                     f"{2 * params * tokens / len(items) / 1e9:.1f}", f"{flops / len(items) / 1e9:.1f}",
                     f"{peak / 1e9:.0f}", f"{100 * 2 * params * tokens / secs[name] / peak:.0f}%", f"{rel:.1e}"])
    print(f"\nFULL on {len(items)} FED turn-level items, default mode, mean NLL, {lms['torch'].name}, {dtype} on {args.device}")
    print(machine_line(args.threads))
    print(table(["configuration", "items/s", "time vs torch", "useful GFLOP/item", "executed GFLOP/item",
                 "peak GFLOP/s", "useful % peak", "max rel diff vs torch"], rows))


if __name__ == "__main__":
    main()
