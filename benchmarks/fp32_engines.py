"""fp32 linear layers on this CPU: torch's default (MKL's sgemm) against oneDNN (what dialeval's torch models use on
an AMD CPU with AVX-512, :mod:`dialeval.models.onednn_linear`) and ONNX Runtime's MatMul, then two of dialeval's
torch routes whole, one engine against the other.

    python benchmarks/fp32_engines.py [--threads 2] [--repeats 15] [--rounds 3]

Products: the linear shapes of SmolLM2-135M (hidden 576, MLP 1536, grouped keys 192, output head 49,152) and of
all-MiniLM-L6-v2 (384, 1536) at 64, 512 and 2,048 rows, GFLOP/s per engine, each the best of ``--repeats``
interleaved timings. Routes, each on the same model with its linear layers switched between the engines
(interleaved, the median of ``--rounds`` rounds of the leaderboard's own scoring seconds): the LLM judge's token trees on FED's first 40 dialogues
and FULL's token trees on ConTurE's first 30 turns (both fp32), with the largest relative difference of their
scores. Writes ``docs/results/benchmarks/fp32_engines.<CPU kind>.json`` (``--json PATH``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, offline, result_file, table, write_result  # noqa: E402

offline()

REPO = Path(__file__).resolve().parents[1]
SHAPES = [("SmolLM2 q/o", 576, 576), ("SmolLM2 k/v", 576, 192), ("SmolLM2 gate/up", 576, 1536),
          ("SmolLM2 down", 1536, 576), ("SmolLM2 head", 576, 49152), ("MiniLM attention", 384, 384),
          ("MiniLM up", 384, 1536), ("MiniLM down", 1536, 384)]
ROWS = (64, 512, 2048)
ENGINES = ("torch default (MKL)", "oneDNN", "ONNX Runtime MatMul")


def ort_matmul(weight: np.ndarray, threads: int):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    k, m = weight.shape
    graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"])], "mm",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, m])],
                              [numpy_helper.from_array(weight, "W")])
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda x: session.run(None, {"X": x})[0]


def product_rows(threads: int, repeats: int) -> list[dict]:
    """GFLOP/s per shape, row count and engine: every product timed once per round, ``repeats`` rounds over all of
    them (so a cell's timings spread over the whole run, not one busy moment of it), the best counting."""
    import torch

    lp = torch.ops.mkldnn._linear_pointwise
    cells = []
    for name, k, m in SHAPES:
        gen = torch.Generator().manual_seed(0)
        weight = torch.randn(m, k, generator=gen)
        ort_run = ort_matmul(weight.T.contiguous().numpy(), threads)
        for n in ROWS if m < 49152 else (64, 512):
            x = torch.randn(n, k, generator=gen)
            runs = {ENGINES[0]: lambda x=x, w=weight: torch.nn.functional.linear(x, w),
                    ENGINES[1]: lambda x=x, w=weight: lp(x, w, None, "none", [], ""),
                    ENGINES[2]: lambda xn=x.numpy(), run=ort_run: run(xn)}
            cells.append((f"{name} ({k} → {m})", n, 2.0 * n * k * m, runs, {e: float("inf") for e in runs}))
    with torch.inference_mode():
        for r in range(repeats + 1):  # round 0 warms every kernel and is not counted
            for _, _, _, runs, best in cells:
                for e in list(runs)[r % 3:] + list(runs)[:r % 3]:
                    t = time.perf_counter()
                    runs[e]()
                    if r:
                        best[e] = min(best[e], time.perf_counter() - t)
    rows = []
    for what, n, flop, runs, best in cells:
        rate = {e: flop / best[e] / 1e9 for e in runs}
        rows.append({"what": what, "rows": n, "unit": "GFLOP/s", **{e: round(rate[e], 1) for e in runs},
                     "oneDNN over MKL": round(rate[ENGINES[1]] / rate[ENGINES[0]], 3)})
        print(f"{what:30s} n={n:5d}  " + "  ".join(f"{e}: {rate[e]:6.1f}" for e in runs), flush=True)
    return rows


def route_rows(rounds: int) -> list[dict]:
    import tempfile

    import torch

    from dialeval.meta import leaderboard
    from dialeval.models.lm import load_lm
    from dialeval.models.onednn_linear import onednn_linear_class
    from dialeval.models.runtime import MODELS

    lm = load_lm(None, backend="torch")  # the module FULL's and the judge's token trees run on (fp32)
    layers = [m for m in lm.model.modules() if isinstance(m, torch.nn.Linear)]
    classes = {"torch default (MKL)": torch.nn.Linear, "oneDNN": onednn_linear_class()}
    data = str(REPO.parent / "shared" / "data")
    rows = []
    for metric, dataset, n in (("llm_judge", "fed", 40), ("full_followup", "conture", 30)):
        def build(engine: str, metric=metric, dataset=dataset, n=n) -> dict:
            for layer in layers:
                layer.__class__ = classes[engine]
            with tempfile.TemporaryDirectory() as out:
                board = leaderboard.build(data, out, datasets=[dataset], metrics=[metric], max_rows={dataset: n},
                                          n_resamples=100, log=lambda *a, **k: None)
                scores = {p.name: np.asarray(json.loads(p.read_text())["scores"], dtype=np.float64)
                          for p in sorted((Path(out) / "cache").glob("*.json"))}
            units = {(r["config"], r["seconds"]) for r in board["rows"] if r.get("seconds")}  # one per unit
            return {"seconds": sum(sec for _, sec in units), "scores": scores}

        build("oneDNN")  # warm: model load, graph export
        loads = MODELS.loads  # every timed build must run the very module whose layers are switched here
        seconds: dict[str, list[float]] = {engine: [] for engine in classes}
        outputs = {}
        for r in range(rounds):  # interleaved, the order alternating; a unit's time is the board's own (scoring)
            for engine in list(classes)[r % 2:] + list(classes)[:r % 2]:
                outputs[engine] = build(engine)
                seconds[engine].append(outputs[engine]["seconds"])
        if MODELS.loads != loads:
            raise SystemExit("a build loaded a fresh model instead of the one switched between engines (is "
                             "DIALEVAL_MODEL_CACHE_SIZE too small?); both columns would time the same engine.")
        times = {engine: statistics.median(v) for engine, v in seconds.items()}
        diff = max((float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-12)))
                    for name, a in outputs["oneDNN"]["scores"].items()
                    for b in [outputs["torch default (MKL)"]["scores"].get(name)] if b is not None and b.shape == a.shape),
                   default=float("nan"))
        rows.append({"what": f"{metric} on {dataset}, first {n} rows (fp32, token trees)", "rows": n,
                     "unit": "seconds", ENGINES[0]: round(times[ENGINES[0]], 2), ENGINES[1]: round(times[ENGINES[1]], 2),
                     ENGINES[2]: None, "oneDNN over MKL": round(times[ENGINES[0]] / times[ENGINES[1]], 3),
                     "max relative score difference": diff})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15, help="timings per product and engine (the best counts)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per route (the median counts)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    start = machine_line(args.threads).removesuffix("; times are medians of interleaved runs") + (
        f"; a product's rate is the best of {args.repeats} timings spread over the run, a route's time the median "
        f"of {args.rounds} interleaved rounds")
    products = product_rows(args.threads, args.repeats)
    routes = route_rows(args.rounds)
    keys = list(routes[0])
    print(table(keys, [[r.get(k) for k in keys] for r in products + routes]))
    gains = sorted(r["oneDNN over MKL"] for r in products)
    summary = (f"oneDNN over torch's default fp32 product (MKL): median {statistics.median(gains):.2f}×, "
               f"{gains[0]:.2f}–{gains[-1]:.2f}× over {len(gains)} linear shapes and row counts; whole routes: "
               + ", ".join(f"{r['what']} {r['oneDNN over MKL']:.2f}×" for r in routes))
    print(summary)
    command = (f"python benchmarks/fp32_engines.py --threads {args.threads} --repeats {args.repeats} "
               f"--rounds {args.rounds}")
    write_result(args.json or result_file("fp32_engines"), script="benchmarks/fp32_engines.py",
                 title="fp32 linear layers: MKL, oneDNN and ONNX Runtime", command=command,
                 rows=products + routes, threads=args.threads, summary=summary, machine_text=start)


if __name__ == "__main__":
    main()
