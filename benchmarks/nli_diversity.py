"""NLI Diversity throughput against the strongest peers at the same precision and thread count.

    python benchmarks/nli_diversity.py --quick                 # 4 sets (80 pairs), 2 rounds, fp32 + bf16
    python benchmarks/nli_diversity.py --sets 8 --repeats 3 --threads 2 [--per-pair]

Input: the first ``--sets`` response sets of conTest resp_gen (../shared/data/diversity_eval): real
response lengths, 20 ordered pairs per set of 5. Model: roberta-base's shape with random weights (speed does
not depend on the weights; the Hub is offline here). Interleaved in one process, per precision:

- dialeval ``compute_nli_diversity`` with ``NLIClassifier`` (tokenize once, token-length-sorted batches
  of 32, each distinct pair once);
  — its default backend (fp32 on CPU: ONNX Runtime when installed), and ``backend="torch"``/``"onnx-int8"``;
- sentence-transformers ``CrossEncoder.predict(pairs, batch_size=32)`` on the same saved model, on torch and
  (fp32) with ``backend="onnx"`` in its own venv (``benchmarks/onnx_peer``; optimum pins transformers<4.58);
- transformers ``pipeline("text-classification")(pairs, batch_size=32)``;
- reference column (``--per-pair``): the same pipeline called pair by pair, as naive reference code does.

Printed: pairs/s, ratio to dialeval, useful and executed GFLOP per pair (see ``_common.forward_flops``),
the matmul peak at that precision and thread count, the share of it reached, and the argmax-class
agreement of every peer with dialeval (and of dialeval bf16 with fp32).

Every run writes docs/results/benchmarks/nli_diversity.<CPU kind>.json (``--result PATH``, or ``-`` for none): one row per timed
route, its seconds over dialeval default's and its scores' difference from dialeval's.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    batched_flops,
    fixed_batches,
    interleaved,
    machine_line,
    matmul_peak,
    non_embedding_params,
    offline,
    peers_line,
    result_file,
    route_records,
    table,
    write_result,
)

offline()

REPO = Path(__file__).resolve().parents[1]
CONTEST = REPO.parent / "shared" / "data" / "diversity_eval" / "raw" / "conTest" / "con_test_200_with_hds_resp_gen.csv"
DIALEVAL = "dialeval NLIClassifier (default backend)"
TORCH = "dialeval NLIClassifier backend='torch'"
INT8 = "dialeval NLIClassifier backend='onnx-int8'"
CROSS = "sentence-transformers CrossEncoder.predict(batch_size=32)"
CROSS_ONNX = "CrossEncoder backend='onnx' (ONNX Runtime), batch_size=32"
PIPE = "transformers pipeline(batch_size=32)"
PER_PAIR = "reference: pipeline pair by pair"


def load_sets(n: int) -> list[list[str]]:
    with CONTEST.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))[:n]
    return [[row[k] for k in sorted(row) if k.startswith("resp_")] for row in rows]


def runners(model_dir: str, model, tokenizer, pairs, sets, dtype, per_pair: bool, threads: int, device: str = "cpu"):
    import numpy as np
    from onnx_peer.driver import PeerProcess, available
    from sentence_transformers import CrossEncoder
    from transformers import pipeline

    from dialeval.nli.core import NLIClassifier, compute_nli_diversity

    backend = None if dtype == "fp32" else "torch"  # the default: ONNX Runtime on CPU in fp32 when installed
    clf = NLIClassifier(model, tokenizer, device=device, dtype=dtype, batch_size=32, progress=False, backend=backend)
    cross = CrossEncoder(model_dir, device=device)
    cross.to(clf.dtype)
    pipe = pipeline("text-classification", model=clf.model, tokenizer=tokenizer, device=device, top_k=None)
    labels = [clf.model.config.id2label[i] for i in range(clf.model.config.num_labels)]
    as_dicts = [{"text": p, "text_pair": h} for p, h in pairs]

    def ours(classifier=clf):
        res = compute_nli_diversity(sets, classifier, "confidence", return_probabilities=True)
        return np.array([[m[c][i][j] for c in ("contradiction", "neutral", "entailment")]
                         for m, s in zip(res["probabilities"], sets) for i in range(len(s)) for j in range(len(s)) if i != j])

    def scores(out):
        return np.array([[{d["label"]: d["score"] for d in o}[name] for name in labels] for o in out])

    runs = {DIALEVAL: ours}
    peer = None
    if clf.backend != "torch":
        for name, be in ((TORCH, "torch"), (INT8, "onnx-int8")):
            other = NLIClassifier(model, tokenizer, device="cpu", batch_size=32, progress=False, backend=be)
            runs[name] = lambda c=other: ours(c)
        if available():
            peer = PeerProcess("cross", model_dir, [list(p) for p in pairs], threads)
            runs[CROSS_ONNX] = lambda: peer.run(32)
    runs[CROSS] = lambda: np.asarray(cross.predict(pairs, batch_size=32, show_progress_bar=False, apply_softmax=True))
    runs[PIPE] = lambda: scores(pipe(as_dicts, batch_size=32, truncation=True))
    if per_pair:
        runs[PER_PAIR] = lambda: scores([pipe(d, truncation=True) for d in as_dicts])
    return runs, clf, peer


def measure(args, dtype: str, sets, pairs, model_dir: str, model, tokenizer) -> tuple[list[list[str]], object]:
    import numpy as np

    from dialeval.models.runtime import length_sorted_batches
    from dialeval.nli.core import PAIR_CALL_COST

    runs, clf, peer = runners(model_dir, model, tokenizer, pairs, sets, dtype, args.per_pair, args.threads,
                              args.device)
    lengths = [len(e["input_ids"]) for e in clf.encode(pairs)]
    cfg = clf.model.config
    shape = (non_embedding_params(clf.model), cfg.num_hidden_layers, cfg.hidden_size)
    by_chars = fixed_batches(np.argsort([-(len(p) + len(h)) for p, h in pairs], kind="stable"), 32)
    ours = length_sorted_batches(lengths, 32, call_cost=PAIR_CALL_COST)
    batches = {DIALEVAL: ours, TORCH: ours, INT8: ours, CROSS: by_chars, CROSS_ONNX: by_chars,
               PIPE: fixed_batches(range(len(pairs)), 32), PER_PAIR: [[i] for i in range(len(pairs))]}
    for fn in runs.values():
        fn()  # warm-up
    peak = matmul_peak(clf.dtype, device=args.device)
    secs, outs = interleaved(runs, args.repeats)
    if peer is not None:
        outs[CROSS_ONNX] = peer.output()
        peer.close()
    ours = outs[DIALEVAL].argmax(1)
    if TORCH in outs:
        print(f"{dtype}: default ({clf.backend}) vs backend='torch': same class on "
              f"{int((outs[TORCH].argmax(1) == ours).sum())}/{len(ours)} pairs, max |Δprob| "
              f"{np.abs(outs[TORCH] - outs[DIALEVAL]).max():.2e}; onnx-int8: same class on "
              f"{int((outs[INT8].argmax(1) == ours).sum())}/{len(ours)}", flush=True)
    rows = []
    for name in runs:
        useful, executed = batched_flops(lengths, batches[name], *shape)
        agree = float((np.asarray(outs[name]).argmax(1) == ours).mean())  # every runner's columns: C, N, E
        rows.append([f"{dtype}: {name}", f"{len(pairs) / secs[name]:.1f}", f"{secs[DIALEVAL] / secs[name]:.2f}",
                     f"{useful / len(pairs) / 1e9:.2f}", f"{executed / len(pairs) / 1e9:.2f}", f"{peak / 1e9:.0f}",
                     f"{100 * useful / secs[name] / peak:.0f}%", f"{100 * executed / secs[name] / peak:.0f}%",
                     f"{100 * agree:.1f}%"])
    fastest = min((n for n in runs if not n.startswith("dialeval")), key=secs.get)
    print(f"{dtype}: dialeval default / fastest peer ({fastest}) = {secs[fastest] / secs[DIALEVAL]:.2f}x", flush=True)
    agree = {}
    for name in runs:
        out = np.asarray(outs[name])
        agree[name] = {"max |Δ prob| vs dialeval": float(np.abs(out - outs[DIALEVAL]).max()),
                       "same class as dialeval": f"{int((out.argmax(1) == ours).sum())}/{len(ours)}"}
    RECORDS.extend(route_records(secs, DIALEVAL, len(pairs), "pairs/s", agree, prefix=f"{dtype}: "))
    return rows, outs[DIALEVAL]


RECORDS: list[dict] = []  # the result file's rows, one per timed route


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from dialeval.nli.core import ordered_pairs
    from dialeval.testing.roberta import roberta_base_shaped_nli

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", type=int, default=8, help="conTest response sets (20 ordered pairs each)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", help="cpu, or cuda (torch routes; --dtypes fp16/bf16/fp32)")
    p.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"])
    p.add_argument("--per-pair", action="store_true", help="also time the per-pair pipeline (reference column)")
    p.add_argument("--quick", action="store_true", help="--sets 4 --repeats 2")
    p.add_argument("--result", default=str(result_file("nli_diversity")),
                   help="result file to write (default docs/results/benchmarks/nli_diversity.<CPU kind>.json; '-': none)")
    args = p.parse_args(argv)
    if args.quick:
        args.sets, args.repeats = 4, 2
    torch.set_num_threads(args.threads)
    machine = machine_line(args.threads)  # the load at the start
    sets = load_sets(args.sets)
    pairs = [(s[i], s[j]) for s in sets for i, j in ordered_pairs(len(s))]
    rows, probs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer = roberta_base_shaped_nli(tmp)
        model.save_pretrained(f"{tmp}/model")
        tokenizer.save_pretrained(f"{tmp}/model")
        for dtype in args.dtypes:
            model32, _ = roberta_base_shaped_nli(tmp)  # a fresh fp32 copy per precision (the classifier casts it)
            r, probs[dtype] = measure(args, dtype, sets, pairs, f"{tmp}/model", model32, tokenizer)
            rows += r
    print(f"\n{len(sets)} conTest sets, {len(pairs)} ordered pairs ({len(set(pairs))} distinct), roberta-base shape "
          f"({sum(x.numel() for x in model.parameters()) / 1e6:.0f}M params, random weights)")
    print(machine_line(args.threads))
    print(table(["configuration", "pairs/s", "vs dialeval", "useful GFLOP/pair", "executed GFLOP/pair",
                 "peak GFLOP/s", "useful % peak", "executed % peak", "same class as dialeval"], rows))
    if "fp32" in probs and "bf16" in probs:
        same = float((probs["fp32"].argmax(1) == probs["bf16"].argmax(1)).mean())
        print(f"dialeval bf16 vs fp32: same NLI class on {100 * same:.1f}% of pairs, max |Δprob| "
              f"{np.abs(probs['fp32'] - probs['bf16']).max():.3f}")
    if args.result != "-":
        parts = []
        for dtype in args.dtypes:
            mine = [r for r in RECORDS if r["route"].startswith(f"{dtype}: ")]
            best = min((r for r in mine if not r["route"].split(": ", 1)[1].startswith("dialeval")),
                       key=lambda r: r["seconds"])
            parts.append(f"{dtype}: each peer's time over dialeval default's: {peers_line(mine)}; the strongest peer "
                         "gives the same class on "
                         f"{best['same class as dialeval']} pairs, max |Δ prob| {best['max |Δ prob| vs dialeval']:.1e}")
        if not any(CROSS_ONNX in r["route"] for r in RECORDS) and "fp32" in args.dtypes:
            parts.append("CrossEncoder backend='onnx' did not run (benchmarks/onnx_peer_venv missing: "
                         "benchmarks/onnx_peer/setup_venv.sh)")
        write_result(args.result, script="benchmarks/nli_diversity.py",
                     title="NLI Diversity (roberta-base shape, random weights)",
                     command="python benchmarks/nli_diversity.py " + " ".join(sys.argv[1:] if argv is None else argv),
                     threads=args.threads, summary="; ".join(parts), rows=RECORDS, machine_text=machine,
                     note=f"{len(pairs)} ordered conTest resp_gen pairs ({len(sets)} sets); median of {args.repeats} "
                          "interleaved rounds; 'time vs dialeval default' is each route's seconds over dialeval's "
                          "default route.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
