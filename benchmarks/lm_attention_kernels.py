"""Attention in the LM units' token-tree passes: the kernels a CPU offers, timed on the passes a unit really runs.

    python benchmarks/lm_attention_kernels.py --data-dir ../shared/data --threads 2 --sample 60 --repeats 3

The unit's default route runs once on a row sample while its token-tree passes are recorded (each row's tree and
the cached prefix before it: :func:`dialeval.models.lm.tree_logits`). Every recorded pass's attention is then
rebuilt at the shape of the LM that ran it (its heads, key/value heads and head width; random queries, keys and
values, the pass's own mask) and run through each kernel, interleaved, the time multiplied by the LM's layer
count:

- ``flash fp32``: transformers' SDPA call with the tree mask, torch's fused kernel (the route's attention, in
  fp32 and under dialeval's ``--dtype bf16``, whose attention stays fp32);
- ``flash bf16``: the same call on bf16 queries, keys, values and mask (their casts and the output's timed too);
- ``GEMM fp32`` and ``GEMM bf16``: scores as one matrix product per key/value head, mask, softmax in fp32, then
  the product with the values;
- ``query blocks fp32``: dialeval's own attention (:func:`dialeval.models.block_attention.block_attention`): the
  fused kernel per block of 64 query rows over the keys up to the block's last row (a tree's nodes see only
  earlier nodes), the masked cells past it skipped, with the key/value heads shared by their query heads
  (``enable_gqa``) instead of repeated, so its gain over ``flash fp32`` is both changes'. A pass whose mask the
  route would send to SDPA instead is refused, so the row never times SDPA under this name.

``largest |Δ|`` is each kernel's largest output difference from ``flash fp32`` over real (unpadded) nodes;
``useful share`` the share of the dense cells (rows × width × (prefix + width)) that real nodes attend to: their
ancestors and the prefix (a padding column attends to the prefix and itself, work no score reads). Writes
docs/results/benchmarks/lm_attention_kernels.<CPU kind>.json (``--result PATH``, or ``-`` for none).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, machine_line, offline, result_file, table, write_result  # noqa: E402

offline()

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dialeval.datasets import DATA_FOLDERS  # noqa: E402
from dialeval.meta.evaluation import load_rows, score_rows  # noqa: E402
from dialeval.models import lm as lm_module  # noqa: E402
from dialeval.models.block_attention import block_attention, sees_no_later_key  # noqa: E402
from dialeval.models.token_tree import ancestor_mask  # noqa: E402


def recorded_passes(unit: tuple[str, str, str], rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Any]:
    """Each token-tree pass the unit's default route runs on ``rows`` (the cached prefix's length and each row's
    parents), and the config of the LM that ran them. Modules import ``tree_logits`` by name, so every loaded
    dialeval module's binding is wrapped while the route runs."""
    import dialeval.full.tree  # noqa: F401 - the routes' modules, loaded so their bindings are wrapped
    import dialeval.judge.scorer  # noqa: F401

    passes: list[dict[str, Any]] = []
    configs: list[Any] = []
    real = lm_module.tree_logits

    def recording(lm: Any, tree_rows: list[Any], keeps: list[list[int]], device: Any, past: Any = None,
                  states: bool = False) -> Any:
        passes.append({"past": 0 if past is None else int(past[0].shape[2]), "parents": [r.parents for r in tree_rows]})
        configs.append(lm.model.config)
        return real(lm, tree_rows, keeps, device, past, states)

    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("dialeval.") and getattr(m, "tree_logits", None) is real]
    for module in modules:
        module.tree_logits = recording
    try:
        score_rows(*unit, rows, None, round_decimals=None)
    finally:
        for module in modules:
            module.tree_logits = real
    return passes, configs[0] if configs else None


def pass_tensors(record: dict[str, Any], shape: dict[str, int], seed: int) -> tuple[Any, ...]:
    """(q, k, v, additive mask, real nodes) of one recorded pass at the LM's attention shape."""
    parents, past = record["parents"], record["past"]
    width, rows = max(len(p) for p in parents), len(parents)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(rows, shape["heads"], width, shape["head_dim"], generator=gen)
    k = torch.randn(rows, shape["kv_heads"], past + width, shape["head_dim"], generator=gen)
    v = torch.randn(rows, shape["kv_heads"], past + width, shape["head_dim"], generator=gen)
    sees = np.ones((rows, width, past + width), dtype=bool)
    real = np.zeros((rows, width), dtype=bool)
    for b, p in enumerate(parents):
        sees[b, :, past:] = ancestor_mask(p, width)
        real[b, :len(p)] = True
    mask = torch.zeros(sees.shape).masked_fill_(~torch.from_numpy(sees), torch.finfo(torch.float32).min)[:, None]
    return q, k, v, mask, torch.from_numpy(real)


def flash(q: Any, k: Any, v: Any, mask: Any, dtype: Any = torch.float32) -> Any:
    """The route's call: transformers' SDPA attention (key/value heads repeated for each query head where a mask
    is given on a CPU, then torch's fused kernel), in ``dtype``; ``[rows, heads, width, dim]`` out."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    module = SimpleNamespace(num_key_value_groups=q.shape[1] // k.shape[1], is_causal=True, training=False)
    out, _ = sdpa_attention_forward(module, q.to(dtype), k.to(dtype), v.to(dtype), mask.to(dtype),
                                    scaling=q.shape[-1] ** -0.5)
    return out.transpose(1, 2).float()


def gemm(q: Any, k: Any, v: Any, mask: Any, dtype: Any = torch.float32) -> Any:
    """softmax(q·kᵀ/√d + mask)·v with one product per key/value head (its query heads stacked), softmax in fp32."""
    rows, heads, width, dim = q.shape
    groups = heads // k.shape[1]
    stacked = q.reshape(rows, k.shape[1], groups * width, dim).to(dtype)
    scores = torch.matmul(stacked, k.to(dtype).transpose(-1, -2)).float().view(rows, k.shape[1], groups, width, -1)
    weights = torch.softmax(scores * dim ** -0.5 + mask[:, :, None], dim=-1).view(rows, k.shape[1], groups * width, -1)
    return torch.matmul(weights.to(dtype), v.to(dtype)).float().view(rows, heads, width, dim)


def query_blocks(q: Any, k: Any, v: Any, mask: Any, past: int) -> Any:
    """dialeval's block attention on one pass, ``[rows, heads, width, dim]`` out like :func:`flash`."""
    if not sees_no_later_key(mask, past):
        raise ValueError("a recorded pass lets a node see a later one: the route runs it on SDPA, not in blocks")
    module = SimpleNamespace(num_key_value_groups=q.shape[1] // k.shape[1], is_causal=True, training=False)
    return block_attention(module, q, k, v, mask, scaling=q.shape[-1] ** -0.5)[0].transpose(1, 2)


def kernels_of(q: Any, k: Any, v: Any, mask: Any, past: int) -> dict[str, Any]:
    return {"flash fp32": lambda: flash(q, k, v, mask), "flash bf16": lambda: flash(q, k, v, mask, torch.bfloat16),
            "GEMM fp32": lambda: gemm(q, k, v, mask), "GEMM bf16": lambda: gemm(q, k, v, mask, torch.bfloat16),
            "query blocks fp32": lambda: query_blocks(q, k, v, mask, past)}


def kernel_rows(passes: list[dict[str, Any]], shape: dict[str, int], repeats: int) -> list[dict[str, Any]]:
    seconds: dict[str, float] = {}
    worst: dict[str, float] = {}
    for n, record in enumerate(passes):
        q, k, v, mask, real = pass_tensors(record, shape, n)
        with torch.inference_mode():
            times, outputs = interleaved(kernels_of(q, k, v, mask, record["past"]), repeats)
        reference = outputs["flash fp32"].transpose(1, 2)[real]
        for name, out in outputs.items():
            seconds[name] = seconds.get(name, 0.0) + times[name] * shape["layers"]
            worst[name] = max(worst.get(name, 0.0), float((out.transpose(1, 2)[real] - reference).abs().max()))
    base = seconds["flash fp32"]
    return [{"kernel": name, "seconds": round(s, 3), "time vs flash fp32": round(s / base, 3),
             "largest |Δ|": float(f"{worst[name]:.3g}")} for name, s in seconds.items()]


def lm_shape(cfg: Any) -> dict[str, int]:
    """The attention shape of the LM whose config is ``cfg``."""
    cfg = getattr(cfg, "text_config", cfg)
    heads = cfg.num_attention_heads
    return {"heads": heads, "kv_heads": getattr(cfg, "num_key_value_heads", heads), "layers": cfg.num_hidden_layers,
            "head_dim": getattr(cfg, "head_dim", None) or cfg.hidden_size // heads}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--unit", default="llm_judge/fed/turn", help="metric/dataset/config (default: %(default)s)")
    parser.add_argument("--sample", type=int, default=60, help="rows of the unit (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--result", default=None, help="result file (default: by CPU kind; '-' for none)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    machine_text = machine_line(args.threads)
    unit = tuple(args.unit.split("/"))
    if len(unit) != 3 or unit[1] not in DATA_FOLDERS:
        print(f"lm_attention_kernels: --unit {args.unit!r}: give metric/dataset/config, e.g. llm_judge/fed/turn.",
              file=sys.stderr)
        return 2
    rows = load_rows(unit[1], unit[2], data_dir=Path(args.data_dir) / DATA_FOLDERS[unit[1]])[:args.sample]
    passes, config = recorded_passes(unit, rows)
    if not passes:
        print(f"lm_attention_kernels: {args.unit} ran no token-tree pass on {len(rows)} rows.", file=sys.stderr)
        return 2
    shape = lm_shape(config)
    dense = sum(len(p["parents"]) * max(map(len, p["parents"])) * (p["past"] + max(map(len, p["parents"])))
                for p in passes)
    useful = sum(int(ancestor_mask(parents, len(parents)).sum()) + p["past"] * len(parents)  # ancestors, prefix
                 for p in passes for parents in p["parents"])
    records = kernel_rows(passes, shape, args.repeats)
    print(table(list(records[0]), [list(r.values()) for r in records]))
    secs = {r["kernel"]: r["seconds"] for r in records}
    best = min(records, key=lambda r: r["seconds"])
    summary = (f"{args.unit}, first {len(rows)} rows ({len(passes)} token-tree passes, {useful / dense:.0%} of their "
               f"attention cells useful): flash fp32 {secs['flash fp32']:.2f} s over the LM's "
               f"{shape['layers']} layers, flash bf16 {secs['flash bf16'] / secs['flash fp32']:.2f}×, "
               f"GEMM fp32 {secs['GEMM fp32'] / secs['flash fp32']:.2f}×, GEMM bf16 "
               f"{secs['GEMM bf16'] / secs['flash fp32']:.2f}×, query blocks "
               f"{secs['query blocks fp32'] / secs['flash fp32']:.2f}× its time; fastest: {best['kernel']}")
    print(summary)
    if args.result != "-":
        write_result(args.result or result_file("lm_attention_kernels"), script="benchmarks/lm_attention_kernels.py",
                     title="Attention kernels on the LM units' token-tree passes", machine_text=machine_text,
                     command=f"python benchmarks/lm_attention_kernels.py --data-dir ../shared/data --threads "
                             f"{args.threads} --unit {args.unit} --sample {args.sample} --repeats {args.repeats}",
                     rows=records, threads=args.threads, summary=summary, shape=shape,
                     passes=len(passes), useful_share=round(useful / dense, 4),
                     note="seconds: the median of interleaved rounds per pass, summed over the passes and "
                          "multiplied by the layer count; largest |Δ|: the largest output difference from flash "
                          "fp32 over real nodes (inputs of unit scale)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
