"""Shared benchmark helpers: offline environment, this machine's matmul peak, interleaved timing with
medians, FLOP formulas for transformer forwards, and a plain-text table.

Every model benchmark times dialeval and its peers *interleaved* in one process (A, B, C, A, B, C, ...),
so a load change on a shared machine hits all of them alike, and reports the median of each.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "DIALEVAL_PROGRESS": "0"}


def offline() -> None:
    for key, value in OFFLINE.items():
        os.environ.setdefault(key, value)


def matmul_peak(dtype: Any, n: int = 2048, seconds: float = 2.0, device: str = "cpu") -> float:
    """Best FLOP/s of ``torch.matmul`` on n×n matrices over ~``seconds`` at the current thread count
    (on ``device``; CUDA is synchronised around each product and uses n = 8192)."""
    import torch

    cuda = str(device).startswith("cuda")
    n = 8192 if cuda else n
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    a, b = torch.randn(n, n, dtype=dtype, device=device), torch.randn(n, n, dtype=dtype, device=device)
    torch.matmul(a, b)
    sync()
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        torch.matmul(a, b)
        sync()
        best = max(best, 2 * n**3 / (time.perf_counter() - t))
    return best


def interleaved(candidates: dict[str, Callable[[], Any]], repeats: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Run every candidate once per round, ``repeats`` rounds, in rotating order; return the median seconds
    per candidate and each candidate's last output."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    outputs: dict[str, Any] = {}
    names = list(candidates)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            gc.collect()
            t = time.perf_counter()
            outputs[name] = candidates[name]()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(v) for name, v in times.items()}, outputs


def forward_flops(params: int, layers: int, hidden: int, length: int) -> int:
    """FLOPs of one transformer forward over one sequence of ``length`` tokens: 2 × non-embedding
    parameters × tokens (the linear layers) + 4 × layers × hidden × length² (attention scores and context)."""
    return 2 * params * length + 4 * layers * hidden * length * length


def batched_flops(lengths: Sequence[int], batches: Sequence[Sequence[int]], params: int, layers: int,
                  hidden: int) -> tuple[int, int]:
    """(useful, executed) FLOPs of running ``batches`` (lists of indices into ``lengths``) right-padded to
    each batch's longest: useful counts real tokens only, executed counts the padding too."""
    useful = sum(forward_flops(params, layers, hidden, n) for n in lengths)
    executed = sum(len(b) * forward_flops(params, layers, hidden, max(lengths[i] for i in b)) for b in batches)
    return useful, executed


def fixed_batches(order: Sequence[int], size: int) -> list[list[int]]:
    order = list(order)
    return [order[i:i + size] for i in range(0, len(order), size)]


def non_embedding_params(model: Any) -> int:
    skip = {"wte", "wpe", "word_embeddings", "position_embeddings", "token_type_embeddings", "embed_tokens",
            "embed_positions", "shared", "lm_head"}
    return sum(p.numel() for n, p in model.named_parameters() if not any(s in n.split(".") for s in skip))


def machine_line(threads: int) -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} CPUs shared with other jobs (load average {load}); torch threads {threads}; "
            "times are medians of interleaved runs")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
