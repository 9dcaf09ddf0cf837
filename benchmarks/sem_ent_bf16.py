"""bf16 experiments on the Sem-Ent encoder (MiniLM, CPU): what brings bf16 closer to the matmul peak.

    python benchmarks/sem_ent_bf16.py --n 256 --repeats 3 [--compile] [--dtype fp32]

Variants, interleaved in one process, all in bf16 on the same distinct DailyDialog test responses:

- ``batch 32``: dialeval's default (token-length-sorted batches of 32, SDPA attention);
- ``token buckets``: batches capped by padded tokens (``max_tokens``) instead of 32 items, up to 256 items;
- ``eager attention``: the model's attention switched from SDPA to the eager implementation;
- ``torch.compile`` (``--compile``): ``torch.compile(dynamic=True)`` on the transformer's forward.

Each variant reports resp/s, the ratio to ``batch 32``, the share of the bf16 matmul peak (useful FLOPs,
see ``_common.forward_flops``) and the share of responses put in the same cluster as fp32 by the bundled
semantic space (src/dialeval/resources/semantic_space), which must stay ≥ 99 %.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    batched_flops,
    interleaved,
    machine_line,
    matmul_peak,
    non_embedding_params,
    offline,
    table,
)

offline()

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SPACE = REPO / "src" / "dialeval" / "resources" / "semantic_space"


def main(argv: list[str] | None = None) -> int:
    from sem_ent_speed import sample_texts

    from dialeval.models.encoders import SentenceTransformerEncoder, default_encoder_path
    from dialeval.models.runtime import length_sorted_batches
    from dialeval.semantic.space import SemanticSpace

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--compile", action="store_true", help="also try torch.compile(dynamic=True) (slow to compile)")
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16", help="precision of the variants (default bf16)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    texts = sample_texts(args.n)
    space = SemanticSpace.load(SPACE)
    fp32 = SentenceTransformerEncoder(default_encoder_path())
    labels32 = space.assign_embeddings(fp32.encode(texts, progress=False))
    dtype = None if args.dtype == "fp32" else "bf16"
    base = SentenceTransformerEncoder(default_encoder_path(), dtype=dtype)
    eager = SentenceTransformerEncoder(default_encoder_path(), dtype=dtype)
    eager.model[0].auto_model.set_attn_implementation("eager")
    runs = {
        "batch 32 (default)": lambda: base.encode(texts, progress=False),
        f"token buckets (max_tokens={args.max_tokens}, ≤ 256 items)":
            lambda: base.encode(texts, batch_size=256, max_tokens=args.max_tokens, progress=False),
        "eager attention": lambda: eager.encode(texts, progress=False),
    }
    if args.compile:
        comp = SentenceTransformerEncoder(default_encoder_path(), dtype=dtype)
        comp.model[0].auto_model.forward = torch.compile(comp.model[0].auto_model.forward, dynamic=True)
        runs["torch.compile(dynamic=True)"] = lambda: comp.encode(texts, progress=False)
    for fn in runs.values():
        fn()  # warm-up (and compilation)
    peak = matmul_peak(torch.float32 if args.dtype == "fp32" else torch.bfloat16)
    secs, outs = interleaved(runs, args.repeats)
    bert = base.model[0].auto_model
    shape = (non_embedding_params(bert), bert.config.num_hidden_layers, bert.config.hidden_size)
    lengths = base.token_lengths(texts)
    useful, _ = batched_flops(lengths, length_sorted_batches(lengths, 32), *shape)
    ref = "batch 32 (default)"
    rows = []
    for name in runs:
        same = float((space.assign_embeddings(np.asarray(outs[name])) == labels32).mean())
        rows.append([name, f"{args.n / secs[name]:.1f}", f"{secs[ref] / secs[name]:.2f}",
                     f"{100 * useful / secs[name] / peak:.0f}%", f"{100 * same:.1f}%"])
    print(f"\n{args.n} distinct DailyDialog test responses, MiniLM {args.dtype}; {args.dtype} matmul peak "
          f"{peak / 1e9:.0f} GFLOP/s")
    print(machine_line(args.threads))
    print(table(["variant", "resp/s", "vs batch 32", f"useful % {args.dtype} peak", "same cluster as fp32"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
