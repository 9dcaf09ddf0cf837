"""Sem-Ent embedding speed against the fastest peer at the same precision and thread count.

    python benchmarks/sem_ent_speed.py --threads 1 --n 1024 --repeats 3   # fp32, + agreement on all of test
    python benchmarks/sem_ent_speed.py --quick --agreement 0 [--dtypes fp32 bf16] [--large 32]

Workload: distinct DailyDialog test responses in a seeded random order (duplicates removed, so dialeval's
de-duplication buys nothing here), all-MiniLM-L6-v2 (the offline default encoder). Interleaved rounds in one
run, at the same precision and threads (torch threads and ONNX Runtime intra-op threads):

- dialeval's default CPU route: ``SentenceTransformerEncoder(backend=None)`` = ONNX Runtime (the whole
  sentence-transformers pipeline exported once, ``ORT_ENABLE_ALL``), tokenize-once chunks, token-length-sorted
  batches of up to 256 texts and 512 padded tokens; also ``backend="onnx-int8"`` and ``backend="torch"``;
- peers: sentence-transformers ``encode(batch_size=32)`` on torch, and with ``backend="onnx"`` (optimum's
  ONNX Runtime model), the latter in its own venv (``benchmarks/onnx_peer/setup_venv.sh``: optimum-onnx pins
  transformers<4.58) driven one command per round (``benchmarks/onnx_peer/worker.py``).

Equality: min cosine of each route against the first, and identical clusters in the bundled space (fitted on
DailyDialog test); ``--agreement`` repeats that on all distinct test responses for onnx and onnx-int8.
``--large N`` adds a random-weight model shaped like microsoft/DialoGPT-large (the paper's encoder; no
ecosystem peer pools the last token, so only the reference scheme is compared). FLOPs per item follow
:func:`_common.forward_flops`; "useful" counts real tokens, "executed" includes each scheme's padding.

Every run writes docs/results/benchmarks/sem_ent_speed.<CPU kind>.json (``--result PATH``, or ``-`` for none): one row per timed
route, its seconds over dialeval default's and its scores' difference from dialeval's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    batched_flops,
    fixed_batches,
    forward_flops,
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

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / ".." / "shared" / "data").resolve()


def sample_texts(n: int) -> list[str]:
    from sem_ent import dailydialog_responses

    texts = list(dict.fromkeys(dailydialog_responses(DATA / "dailydialog" / "test.json")))
    order = np.random.default_rng(0).permutation(len(texts))
    return [texts[i] for i in order[:n]]


def mean_pool_reference(bert, tok, texts: list[str], max_length: int) -> np.ndarray:
    """Fixed batches of 32 in input order, ``output_hidden_states=True``, masked mean of the last layer."""
    out = []
    for s in range(0, len(texts), 32):
        enc = tok(texts[s:s + 32], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        with torch.inference_mode():
            h = bert(**enc, output_hidden_states=True).hidden_states[-1].float()
        m = enc["attention_mask"].unsqueeze(-1).float()
        out.append(((h * m).sum(1) / m.sum(1)).numpy())
    return np.concatenate(out)


def cosine_min(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(1).min())


def routes(texts: list[str], dtype: str, threads: int, all_peers: bool = False) -> tuple[dict, dict, Any, Any, Any]:
    """The timed routes at ``dtype`` (fp32: dialeval's default ONNX Runtime route, its torch and int8 routes,
    sentence-transformers torch and, from its own venv, its ONNX backend), their batch schemes, and the
    torch BERT (for FLOPs), the dialeval encoder (for token lengths) and the peer process (or None)."""
    from onnx_peer.driver import PeerProcess, available
    from sentence_transformers import SentenceTransformer

    from dialeval.models.encoders import (
        BATCH_SIZE,
        CPU_MAX_TOKENS,
        ONNX_CPU_MAX_TOKENS,
        SentenceTransformerEncoder,
        default_encoder_path,
    )
    from dialeval.models.runtime import length_sorted_batches, resolve_dtype

    path = default_encoder_path()
    peer = SentenceTransformer(str(path), device="cpu")
    peer.to(resolve_dtype(dtype))
    ours = SentenceTransformerEncoder(path, dtype=dtype, backend=None if dtype == "fp32" else "torch")
    lengths = ours.token_lengths(texts)
    by_chars = fixed_batches(np.argsort([-len(t) for t in texts], kind="stable"), 32)
    runs, schemes = {}, {}
    if dtype == "fp32":
        assert ours.backend == "onnx", "the default CPU route is ONNX Runtime when onnxruntime is installed"
        runs["dialeval default (ONNX Runtime)"] = lambda: ours.encode(texts, progress=False)
        schemes["dialeval default (ONNX Runtime)"] = length_sorted_batches(lengths, BATCH_SIZE, ONNX_CPU_MAX_TOKENS)
        int8 = SentenceTransformerEncoder(path, backend="onnx-int8")
        runs["dialeval backend='onnx-int8'"] = lambda: int8.encode(texts, progress=False)
        schemes["dialeval backend='onnx-int8'"] = schemes["dialeval default (ONNX Runtime)"]
    torch_enc = SentenceTransformerEncoder(path, dtype=dtype, backend="torch")
    runs[f"dialeval backend='torch' {dtype}"] = lambda: torch_enc.encode(texts, progress=False)
    schemes[f"dialeval backend='torch' {dtype}"] = length_sorted_batches(lengths, BATCH_SIZE, CPU_MAX_TOKENS)
    runs[f"sentence-transformers torch {dtype}, batch_size=32"] = lambda: peer.encode(texts, batch_size=32)
    schemes[f"sentence-transformers torch {dtype}, batch_size=32"] = by_chars
    if all_peers:  # the earlier table's extra columns: batch_size=256 and the reference featurizer's scheme
        runs[f"sentence-transformers torch {dtype}, batch_size=256"] = lambda: peer.encode(texts, batch_size=256)
        schemes[f"sentence-transformers torch {dtype}, batch_size=256"] = fixed_batches(
            np.argsort([-len(t) for t in texts], kind="stable"), 256)
        bert, tok = peer[0].auto_model, peer.tokenizer
        runs["reference scheme (input order, batches of 32)"] = lambda: mean_pool_reference(
            bert, tok, texts, peer.max_seq_length)
        schemes["reference scheme (input order, batches of 32)"] = fixed_batches(range(len(texts)), 32)
    ort_peer = PeerProcess("st", str(path), texts, threads) if dtype == "fp32" and available() else None
    if ort_peer is not None:
        runs[ST_ONNX] = lambda: ort_peer.run(32)
        schemes[ST_ONNX] = by_chars
    return runs, schemes, peer[0].auto_model, ours, ort_peer


ST_ONNX = "sentence-transformers backend='onnx' (ONNX Runtime), batch_size=32"


def minilm_rows(texts: list[str], dtype: str, repeats: int, threads: int, all_peers: bool = False) -> list[list[str]]:
    runs, schemes, bert, ours, ort_peer = routes(texts, dtype, threads, all_peers)
    lengths = ours.token_lengths(texts)
    shape = (non_embedding_params(bert), bert.config.num_hidden_layers, bert.config.hidden_size)
    for fn in runs.values():  # warm-up
        fn()
    peak = matmul_peak(torch.float32 if dtype == "fp32" else torch.bfloat16)
    secs, outs = interleaved(runs, repeats)
    first = next(iter(runs))
    rows = []
    for name in runs:
        useful, executed = batched_flops(lengths, schemes[name], *shape)
        rows.append([name, f"{len(texts) / secs[name]:.1f}", f"{secs[name] / secs[first]:.2f}",
                     f"{useful / len(texts) / 1e9:.3f}", f"{executed / len(texts) / 1e9:.3f}",
                     f"{peak / 1e9:.0f}", f"{100 * useful / secs[name] / peak:.0f}%",
                     f"{100 * executed / secs[name] / peak:.0f}%"])
    if ort_peer is not None:
        outs[ST_ONNX] = ort_peer.output()  # the peer's last embeddings
        ort_peer.close()
    agree = check_equal(outs, first, dtype)
    RECORDS.extend(route_records(secs, first, len(texts), "resp/s", agree, prefix=f"{dtype}: "))
    return rows


def gpu_rows(texts: list[str], dtype: str, repeats: int, device: str) -> list[list[str]]:
    """On CUDA (torch only; SDPA attention, the transformers default): dialeval against sentence-transformers."""
    from sentence_transformers import SentenceTransformer

    from dialeval.models.encoders import SentenceTransformerEncoder, default_encoder_path
    from dialeval.models.runtime import resolve_dtype

    path = default_encoder_path()
    ours = SentenceTransformerEncoder(path, device=device, dtype=dtype)
    peer = SentenceTransformer(str(path), device=device)
    peer.to(resolve_dtype(dtype, device))
    runs = {f"dialeval {dtype} {device}": lambda: ours.encode(texts, progress=False),
            f"sentence-transformers {dtype} {device}, batch_size=32": lambda: peer.encode(texts, batch_size=32),
            f"sentence-transformers {dtype} {device}, batch_size=256": lambda: peer.encode(texts, batch_size=256)}
    for fn in runs.values():
        fn()
    torch.cuda.synchronize()
    peak = matmul_peak(resolve_dtype(dtype, device), device=device)
    secs, outs = interleaved(runs, repeats)
    bert, first = peer[0].auto_model, next(iter(runs))
    lengths = ours.token_lengths(texts)
    useful = sum(forward_flops(non_embedding_params(bert), bert.config.num_hidden_layers, bert.config.hidden_size, n)
                 for n in lengths)
    RECORDS.extend(route_records(secs, first, len(texts), "resp/s", check_equal(outs, first, dtype),
                                 prefix=f"{dtype} {device}: "))
    return [[name, f"{len(texts) / secs[name]:.1f}", f"{secs[name] / secs[first]:.2f}", f"{useful / len(texts) / 1e9:.3f}",
             "", f"{peak / 1e9:.0f}", f"{100 * useful / secs[name] / peak:.1f}%", ""] for name in runs]


def check_equal(outs: dict, first: str, dtype: str) -> dict[str, dict]:
    """Print the minimum cosine of every route against the first, and whether the bundled space (fitted on
    DailyDialog test responses) assigns every text to the same cluster."""
    from dialeval.resources import semantic_space_dir
    from dialeval.semantic.space import SemanticSpace

    space = SemanticSpace.load(semantic_space_dir())
    want = space.assign_embeddings(np.asarray(outs[first]))
    agree = {}
    for name, out in outs.items():
        got = space.assign_embeddings(np.asarray(out))
        cos = cosine_min(np.asarray(out), np.asarray(outs[first]))
        agree[name] = {"max |Δ| of the embeddings": float(np.abs(np.asarray(out) - np.asarray(outs[first])).max()),
                       "min cosine": round(cos, 6), "same cluster": f"{int((got == want).sum())}/{len(want)}"}
        if name != first:
            print(f"{dtype}: {name} vs {first}: min cosine {cos:.6f}, same cluster {agree[name]['same cluster']}",
                  flush=True)
    return agree


RECORDS: list[dict] = []  # the result file's rows, one per timed route


def agreement(n: int | None = None) -> None:
    """All distinct DailyDialog test responses in the bundled space: ONNX (fp32) and int8 against torch —
    identical clusters, cluster agreement, Sem-Ent of the test responses."""
    from sem_ent import dailydialog_responses

    from dialeval.resources import semantic_space_dir
    from dialeval.semantic.clustering import cluster_distribution, entropy_nats
    from dialeval.semantic.space import SemanticSpace

    texts = list(dict.fromkeys(dailydialog_responses(DATA / "dailydialog" / "test.json")))[:n]
    space = SemanticSpace.load(semantic_space_dir())
    emb = {b: space.use_encoder(backend=b).encode(texts, progress=False) for b in ("torch", "onnx", "onnx-int8")}
    labels = {b: space.assign_embeddings(e) for b, e in emb.items()}
    for b in ("onnx", "onnx-int8"):
        same = int((labels[b] == labels["torch"]).sum())
        print(f"agreement on {len(texts)} distinct DailyDialog test responses: backend={b!r} vs 'torch': "
              f"min cosine {cosine_min(emb[b], emb['torch']):.6f}, same cluster {same}/{len(texts)} "
              f"({100 * same / len(texts):.2f}%), Sem-Ent {entropy_nats(cluster_distribution(labels[b], space.k)):.4f} "
              f"vs {entropy_nats(cluster_distribution(labels['torch'], space.k)):.4f}", flush=True)


def large_rows(n: int, repeats: int) -> list[list[str]]:
    from sem_ent import dailydialog_responses, reference_scheme
    from transformers import GPT2Model, GPT2Tokenizer

    from dialeval.models.encoders import LastTokenEncoder
    from dialeval.models.runtime import length_sorted_batches
    from dialeval.testing import train_bpe_tokenizer
    from dialeval.testing.gpt2 import EOT, dialogpt_large_config

    tok_dir = REPO / "artifacts" / "bench_tokenizer"
    train_bpe_tokenizer(tok_dir, GPT2Tokenizer, vocab_size=8000,
                        texts=dailydialog_responses(DATA / "dailydialog" / "validation.json"),
                        special_tokens={"bos_token": EOT, "eos_token": EOT, "unk_token": EOT})
    torch.manual_seed(0)
    model = GPT2Model(dialogpt_large_config()).eval()
    texts = sample_texts(n)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        model.to(dtype)
        enc = LastTokenEncoder.from_model(model, GPT2Tokenizer.from_pretrained(tok_dir), name="dialogpt-large-shape")
        ids = enc.token_ids(texts)
        lengths = [len(x) for x in ids]
        shape = (non_embedding_params(model), model.config.n_layer, model.config.n_embd)
        runs = {"dialeval": lambda e=enc: e.encode(texts, progress=False),
                "reference scheme (input order, batches of 32)": lambda i=ids: reference_scheme(model, i)}
        peak = matmul_peak(dtype)
        secs, _ = interleaved(runs, repeats)
        schemes = {"dialeval": length_sorted_batches(lengths, 32),
                   "reference scheme (input order, batches of 32)": fixed_batches(range(n), 32)}
        for name in runs:
            useful, executed = batched_flops(lengths, schemes[name], *shape)
            rows.append([f"DialoGPT-large shape {str(dtype)[6:]}: {name}", f"{n / secs[name]:.2f}",
                         f"{secs['dialeval'] / secs[name]:.2f}", f"{useful / n / 1e9:.2f}", f"{executed / n / 1e9:.2f}",
                         f"{peak / 1e9:.0f}", f"{100 * useful / secs[name] / peak:.0f}%",
                         f"{100 * executed / secs[name] / peak:.0f}%"])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1024, help="distinct responses (MiniLM)")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds (median reported)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--all-peers", action="store_true",
                   help="also sentence-transformers batch_size=256 and the reference featurizer's scheme")
    p.add_argument("--device", default="cpu", help="cpu (all routes) or cuda (torch routes, --dtypes fp16/bf16)")
    p.add_argument("--dtypes", nargs="+", default=["fp32"], help="fp32 (all routes) and/or bf16 (torch routes)")
    p.add_argument("--large", type=int, default=0, help="also N responses through a DialoGPT-large-shaped model")
    p.add_argument("--quick", action="store_true", help="--n 256 --repeats 3")
    p.add_argument("--result", default=str(result_file("sem_ent_speed")),
                   help="result file to write (default docs/results/benchmarks/sem_ent_speed.<CPU kind>.json; '-': none)")
    p.add_argument("--agreement", type=int, default=-1, metavar="N",
                   help="cluster agreement of onnx / onnx-int8 with torch on N distinct DailyDialog test responses "
                        "(-1: all; 0: skip)")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.repeats = 256, 3
    torch.set_num_threads(args.threads)
    machine = machine_line(args.threads)  # the load at the start
    texts = sample_texts(args.n)
    rows = []
    for dtype in args.dtypes:
        rows += (minilm_rows(texts, dtype, args.repeats, args.threads, args.all_peers) if args.device == "cpu"
                 else gpu_rows(texts, dtype, args.repeats, args.device))
    if args.large:
        rows += large_rows(args.large, max(1, args.repeats // 2))
    if args.agreement:
        agreement(None if args.agreement < 0 else args.agreement)
    print(f"\n{len(texts)} distinct DailyDialog test responses; torch {torch.__version__}; {machine_line(args.threads)}")
    print(table(["configuration", "resp/s", "dialeval default ×", "useful GFLOP/resp", "executed GFLOP/resp",
                 "peak GFLOP/s", "useful % peak", "executed % peak"], rows))
    if args.result != "-":
        peers = [r for r in RECORDS if not r["route"].split(": ", 1)[1].startswith("dialeval")]
        best = min(peers, key=lambda r: r["seconds"])
        onnx_note = "" if any(ST_ONNX in r["route"] for r in RECORDS) else (
            "; sentence-transformers backend='onnx' did not run (benchmarks/onnx_peer_venv missing: "
            "benchmarks/onnx_peer/setup_venv.sh)")
        summary = (f"each peer's time over dialeval default's: {peers_line(RECORDS)}; the strongest peer gives the "
                   f"same cluster for {best['same cluster']} responses, min cosine "
                   f"{best['min cosine']:.6f}" + onnx_note)
        write_result(args.result, script="benchmarks/sem_ent_speed.py", title="Sem-Ent encoder (MiniLM)",
                     command="python benchmarks/sem_ent_speed.py " + " ".join(sys.argv[1:] if argv is None else argv),
                     threads=args.threads, summary=summary, rows=RECORDS, machine_text=machine,
                     note=f"{len(texts):,} distinct DailyDialog test responses; median of {args.repeats} interleaved "
                          "rounds; 'time vs dialeval default' is each route's seconds over dialeval's default route.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
