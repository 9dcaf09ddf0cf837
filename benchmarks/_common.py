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
from pathlib import Path
from typing import Any

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "DIALEVAL_PROGRESS": "0"}


def offline() -> None:
    for key, value in OFFLINE.items():
        os.environ.setdefault(key, value)


def _best_rate(product: Callable[[], Any], flop: float, seconds: float, sync: Callable[[], Any] = lambda: None) -> float:
    product()
    sync()
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        product()
        sync()
        best = max(best, flop / (time.perf_counter() - t))
    return best


def _onnxruntime_matmul(n: int, threads: int) -> Callable[[Any, Any], Any] | None:
    """An ONNX Runtime session computing one n×n fp32 MatMul (MLAS), or None without onnxruntime/onnx."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    spec = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in "ABC"]
    graph = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["C"])], "matmul", spec[:2], spec[2:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return lambda a, b: sess.run(None, {"A": a, "B": b})


def matmul_peaks(dtype: Any, n: int = 2048, seconds: float = 2.0, device: str = "cpu") -> dict[str, float]:
    """Best FLOP/s of an n×n matmul over ~``seconds`` per library at the current thread count: ``torch.matmul``
    (MKL in fp32, which picks slower kernels on AMD CPUs), and in fp32 on CPU also oneDNN (the op behind
    :mod:`dialeval.models.onednn_linear`), numpy (OpenBLAS) and ONNX Runtime (MLAS). On CUDA only torch runs
    (synchronised around each product, n = 8192)."""
    import torch

    cuda = str(device).startswith("cuda")
    n = 8192 if cuda else n
    flop = 2 * n**3
    a, b = torch.randn(n, n, dtype=dtype, device=device), torch.randn(n, n, dtype=dtype, device=device)
    peaks = {"torch": _best_rate(lambda: torch.matmul(a, b), flop, seconds,
                                 torch.cuda.synchronize if cuda else (lambda: None))}
    if not cuda and dtype == torch.float32:
        from threadpoolctl import threadpool_limits

        from dialeval.models.onednn_linear import onednn_available

        if onednn_available():
            bt = b.T.contiguous()  # _linear_pointwise computes x·Wᵀ: the same product as a @ b
            peaks["onednn"] = _best_rate(lambda: torch.ops.mkldnn._linear_pointwise(a, bt, None, "none", [], ""),
                                         flop, seconds)
        an, bn = a.numpy(), b.numpy()
        with threadpool_limits(limits=torch.get_num_threads(), user_api="blas"):
            peaks["numpy"] = _best_rate(lambda: an @ bn, flop, seconds)
        ort_matmul = _onnxruntime_matmul(n, torch.get_num_threads())
        if ort_matmul is not None:
            peaks["onnxruntime"] = _best_rate(lambda: ort_matmul(an, bn), flop, seconds)
    return peaks


def printed_matmul_peaks(dtype: Any, n: int = 2048, seconds: float = 2.0, device: str = "cpu") -> dict[str, float]:
    """:func:`matmul_peaks`, printed on one line."""
    import torch

    peaks = matmul_peaks(dtype, n, seconds, device)
    print(f"matmul peak, {n}x{n} {str(dtype).replace('torch.', '')}, {torch.get_num_threads()} thread(s): "
          + ", ".join(f"{k} {v / 1e9:.0f}" for k, v in peaks.items()) + " GFLOP/s", flush=True)
    return peaks


def matmul_peak(dtype: Any, n: int = 2048, seconds: float = 2.0, device: str = "cpu") -> float:
    """This machine's matmul peak at ``dtype`` and the current thread count: the best of
    :func:`matmul_peaks` (so "% of peak" is against the fastest GEMM any route here can use), each printed."""
    return max(printed_matmul_peaks(dtype, n, seconds, device).values())


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


def machine_line(threads: int | None) -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} CPUs shared with other jobs (load average {load})"
            + (f"; torch threads {threads}" if threads else "") + "; times are medians of interleaved runs")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """What a measurement ran on, read from the machine itself (never typed by hand): CPU model (with its family
    and model numbers where the name gives no model, as a virtual CPU's "AMD EPYC" does), its kind
    (:func:`dialeval.models.cpu.cpu_kind`), the vector/matrix flags that decide kernel speed, and the core count."""
    import platform

    cpu, flags, ids = platform.processor() or platform.machine(), set(), {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    cpu = value.strip()
                elif key.strip() in ("cpu family", "model"):
                    ids.setdefault(key.strip(), value.strip())
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    if len(ids) == 2 and not any(c.isdigit() for c in cpu):  # a virtual CPU's name ("AMD EPYC") hides its generation
        cpu = f"{cpu} (family {ids['cpu family']}, model {ids['model']})"
    from dialeval.models.cpu import cpu_kind

    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8")
    return {"cpu": cpu, "kind": cpu_kind().name, "flags": [f for f in wanted if f in flags], "cores": os.cpu_count()}


def write_result(path: str | os.PathLike, *, script: str, title: str, command: str, rows: list[dict[str, Any]],
                 threads: int | None = None, note: str | None = None, summary: str | None = None,
                 machine_text: str | None = None, **extra: Any) -> None:
    """Write a benchmark's result file (the docs' benchmarks page is generated from these) atomically
    (:func:`dialeval.io.files.atomic_write_text`): the rows, the command that rewrites the file, the date, the
    machine (its CPU and ``machine_text``: :func:`machine_line` taken at the start of the run, or else now), the
    thread count, the load average at the end, a one-line summary, and ``cpu_kind`` (the page labels each table
    with it)."""
    import datetime
    import json

    from dialeval.io.files import atomic_write_text

    m = machine()
    cpu = m["cpu"] + f", CPU kind {m['kind']}" + (f" ({', '.join(m['flags'])})" if m["flags"] else "")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    record = {"script": script, "title": title, "command": command,
              "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "machine": f"{cpu}; {machine_text or machine_line(threads)}", "cpu_kind": m["kind"], "threads": threads,
              "load": f"{load} (1-, 5-, 15-minute, at the end)", **({"summary": summary} if summary else {}),
              **({"note": note} if note else {}), **extra, "rows": rows}
    atomic_write_text(path, json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path}", flush=True)


RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results" / "benchmarks"


def result_file(name: str) -> Path:
    """The result file a benchmark writes by default: ``docs/results/benchmarks/NAME.KIND.json``, KIND this machine's
    CPU kind (:func:`dialeval.models.cpu.cpu_kind`), so a run on one kind never overwrites another kind's numbers."""
    from dialeval.models.cpu import cpu_kind

    return RESULTS / f"{name}.{cpu_kind().name}.json"


def route_records(secs: dict[str, float], ours: str, items: int, unit: str, agreement: dict[str, dict[str, Any]],
                  prefix: str = "") -> list[dict[str, Any]]:
    """A result file's rows: per timed route its median seconds, its throughput, its time over dialeval's
    (``ours``; above 1: dialeval is faster) and how its scores compare with dialeval's (``agreement[route]``)."""
    return [{"route": prefix + name, "seconds": round(secs[name], 4), unit: round(items / secs[name], 2),
             "time vs dialeval default": round(secs[name] / secs[ours], 3), **agreement.get(name, {})}
            for name in secs]


def peers_line(records: list[dict[str, Any]]) -> str:
    """Every peer's (non-dialeval route's) time over dialeval default's, the strongest first."""
    peers = sorted((r for r in records if not r["route"].split(": ", 1)[-1].startswith("dialeval")),
                   key=lambda r: r["seconds"])
    return ", ".join(f"{r['route'].split(': ', 1)[-1]} {r['time vs dialeval default']:.2f}×" for r in peers)
