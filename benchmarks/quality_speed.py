"""Reference-free quality speed: responses per second of ``context_relevance`` and ``learned_quality`` against
sentence-transformers' own encode of the same texts (the peer: what a user would write for the cosine) and
against FULL's default route, same threads, fp32, interleaved rounds in one process.

    python benchmarks/quality_speed.py --threads 2 --pairs 512 --full-pairs 64 --repeats 3

Workload: the first ``--pairs`` (context, response) pairs of DailyDialog test (``--data-dir``; the peers embed
the last context turn, as the ten-line cosine does). Routes:

- dialeval ``context_relevance`` and ``learned_quality`` (their default route: ONNX Runtime on CPU);
- peers: ``SentenceTransformer.encode`` (torch, batch 32, normalised) of the contexts and responses, then the
  row-wise cosine in numpy: the ten-line metric a user writes; and the same encode on sentence-transformers'
  ONNX Runtime backend (``backend="onnx"``, batch 32), run from its own venv (``benchmarks/onnx_peer/setup_venv.sh``)
  one command per round; the summary names the faster peer;
- FULL's default (``full_followup`` turn level) on the first ``--full-pairs`` pairs (its rate is per response).

Agreement: the largest |difference| between dialeval's relevance and each peer's cosine. Writes
``docs/results/benchmarks/quality_speed.<CPU kind>.json`` (``--result PATH``, ``-`` for none).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import interleaved, machine_line, offline, result_file, table, write_result
from onnx_peer.driver import PeerProcess, available

TORCH_PEER = "sentence-transformers encode + cosine"
ONNX_PEER = "sentence-transformers backend='onnx' encode + cosine"


def cosines(embeddings: np.ndarray, n: int) -> np.ndarray:
    """Row-wise cosine of the first ``n`` embeddings (contexts) with the next ``n`` (responses)."""
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    return (unit[:n] * unit[n:]).sum(1)


def main(argv: list[str] | None = None) -> int:
    offline()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pairs", type=int, default=512)
    p.add_argument("--full-pairs", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--result", default=str(result_file("quality_speed")))
    args = p.parse_args(argv)
    import torch
    from sentence_transformers import SentenceTransformer

    from dialeval.full.full_followup import compute_full_inputs
    from dialeval.models.encoders import default_encoder_path
    from dialeval.relevance.core import compute_context_relevance
    from dialeval.relevance.corpus import dailydialog_test_pairs
    from dialeval.relevance.evaluator import compute_learned_quality

    torch.set_num_threads(args.threads)
    machine = machine_line(args.threads)
    contexts, responses = dailydialog_test_pairs(args.data_dir, args.pairs)
    fc, fr = contexts[: args.full_pairs], responses[: args.full_pairs]
    st = SentenceTransformer(str(default_encoder_path()), device="cpu")

    def peer() -> np.ndarray:
        c = st.encode([x[-1] for x in contexts], batch_size=32, normalize_embeddings=True)
        r = st.encode(responses, batch_size=32, normalize_embeddings=True)
        return (c * r).sum(1)

    routes = {"dialeval context_relevance": lambda: compute_context_relevance(contexts, responses)["scores"],
              "dialeval learned_quality": lambda: compute_learned_quality(contexts, responses)["scores"],
              TORCH_PEER: peer,
              "FULL default (turn)": lambda: compute_full_inputs(fc, fr, config="turn")["scores"]}
    onnx_peer = PeerProcess("st", str(default_encoder_path()), [x[-1] for x in contexts] + responses,
                            args.threads) if available() else None
    if onnx_peer is not None:
        routes[ONNX_PEER] = lambda: onnx_peer.run(32)
    else:
        print(f"{ONNX_PEER} did not run: benchmarks/onnx_peer_venv is missing (benchmarks/onnx_peer/setup_venv.sh)")
    for fn in routes.values():  # warm: graph exports, model loads
        fn()
    started = time.perf_counter()
    try:
        secs, outs = interleaved(routes, args.repeats)
        if onnx_peer is not None:
            outs[ONNX_PEER] = cosines(onnx_peer.output(), len(responses))
    finally:
        if onnx_peer is not None:
            onnx_peer.close()
    items = {name: (len(fc) if name.startswith("FULL") else len(responses)) for name in routes}
    peers = [name for name in (TORCH_PEER, ONNX_PEER) if name in routes]
    gaps = {name: float(np.max(np.abs(np.asarray(outs["dialeval context_relevance"]) - outs[name]))) for name in peers}
    ours = secs["dialeval context_relevance"]
    rows = [{"route": name, "responses": items[name], "seconds": round(secs[name], 3),
             "responses/s": round(items[name] / secs[name], 1),
             "rate vs context_relevance": round((items[name] / secs[name]) / (len(responses) / ours), 3)}
            for name in routes]
    print(table(list(rows[0]), [list(r.values()) for r in rows]))
    strongest = min(peers, key=lambda name: secs[name])
    peer_rate = len(responses) / secs[strongest]
    summary = (f"context_relevance {len(responses) / ours / peer_rate:.2f}× and learned_quality "
               f"{len(responses) / secs['dialeval learned_quality'] / peer_rate:.2f}× the responses per second of "
               f"the faster peer, {strongest}; largest |relevance − peer cosine| {max(gaps.values()):.1e}"
               + ("" if onnx_peer is not None else f" ({ONNX_PEER} did not run: no benchmarks/onnx_peer_venv)"))
    print(summary, f"({time.perf_counter() - started:.0f} s)")
    if args.result != "-":
        write_result(args.result, script="benchmarks/quality_speed.py", title="reference-free quality speed",
                     command=f"python benchmarks/quality_speed.py --threads {args.threads} --pairs {args.pairs} "
                             f"--full-pairs {args.full_pairs} --repeats {args.repeats}",
                     rows=rows, threads=args.threads, summary=summary, machine_text=machine,
                     note="Consecutive pairs share a text (a response is the next pair's context): dialeval embeds "
                          "each distinct text once, the peers encode every context and response as a user would",
                     max_abs_difference_vs_peer=max(gaps.values()), max_abs_difference_by_peer=gaps,
                     strongest_peer=strongest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
