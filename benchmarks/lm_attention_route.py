"""Which engine runs a language-model pass: ONNX Runtime or torch, by row length, on the offline default LM.

    python benchmarks/lm_attention_route.py --threads 2 --repeats 3

Each case is one pass of SmolLM2-135M-Instruct (fp32) as FULL and the LLM judge run it: ``rows`` rows of
``width`` new tokens after a ``past``-token key/value cache, last-position logits out. The same exported module
runs on ONNX Runtime (its graph) and on torch, interleaved, with the same inputs; the table gives both times, the
torch speed-up, the largest logit difference, and the engine dialeval's ONNX route picks
(:meth:`dialeval.models.onnx_lm.OnnxCausalLM.engine`: more than ``torch_attention_cells()`` =
width × (past + width) attention cells per row runs on torch).
ONNX Runtime's exported attention writes every score out, so its cost grows with that product faster than
torch's fused attention does. Writes docs/results/benchmarks/lm_attention_route.<CPU kind>.json.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, machine_line, offline, result_file, table, write_result  # noqa: E402

offline()

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dialeval.models import onnx_lm  # noqa: E402
from dialeval.models.lm import load_lm  # noqa: E402

CASES = [(1, 1, 91), (1, 30, 91), (16, 32, 38), (9, 40, 200), (8, 128, 0), (2, 128, 93), (8, 60, 300),
         (2, 200, 93), (4, 128, 400), (2, 256, 93), (1, 512, 0), (4, 300, 93), (1, 1000, 93)]


def feed_of(runner: onnx_lm.OnnxCausalLM, rows: int, width: int, past: int) -> tuple[str, dict[str, np.ndarray]]:
    """(graph mode, inputs) of one pass: the prefix graph without a past, else the last-logits continuation."""
    rng = np.random.default_rng(rows * 1000 + width + past)
    ids = rng.integers(100, 40_000, (rows, width))
    feed = {"input_ids": ids, "attention_mask": np.ones((rows, past + width), dtype=np.int64),
            "position_ids": np.broadcast_to(past + np.arange(width), (rows, width)).copy()}
    if not past:
        return "prefix", feed
    head = rng.integers(100, 40_000, (1, past))
    cache = runner.run_prefix(head, np.ones_like(head), np.arange(past)[None])[1]
    feed.update({n: np.repeat(c, rows, axis=0) for n, c in zip(runner.past_names, cache)})
    return "last", feed


def threshold_text(limit: int | None) -> str:
    return "none: every pass on ONNX Runtime" if limit is None else f"{limit:,} attention cells per row"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--result", default=str(result_file("lm_attention_route")))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    start_line = machine_line(args.threads)
    runner = load_lm(None, backend="onnx").onnx
    records, lines = [], []
    for rows, width, past in CASES:
        mode, feed = feed_of(runner, rows, width, past)
        secs, out = interleaved({engine: functools.partial(lambda e, m, f: runner.run(m, f, e)[0], engine, mode, feed)
                                 for engine in ("onnxruntime", "torch")}, args.repeats)
        cells, picked = width * (past + width), runner.engine(width, past)
        diff = float(np.abs(out["onnxruntime"] - out["torch"]).max())
        records.append({"rows": rows, "width": width, "past": past, "cells per row": cells,
                        "onnxruntime s": round(secs["onnxruntime"], 4), "torch s": round(secs["torch"], 4),
                        "torch speed-up": round(secs["onnxruntime"] / secs["torch"], 3),
                        "max logit difference": diff, "dialeval runs": picked})
        lines.append([rows, width, past, cells, f"{secs['onnxruntime']:.3f}", f"{secs['torch']:.3f}",
                      f"{secs['onnxruntime'] / secs['torch']:.2f}x", f"{diff:.1e}", picked])
        print(table(["rows", "width", "past", "cells", "ORT s", "torch s", "torch speed-up", "max diff", "runs"],
                    lines[-1:]).splitlines()[-1], flush=True)
    print(table(["rows", "width", "past", "cells", "ORT s", "torch s", "torch speed-up", "max diff", "runs"], lines))
    picked_ok = sum((r["torch speed-up"] >= 1) == (r["dialeval runs"] == "torch") for r in records)
    summary = (f"the engine dialeval picks is the faster one in {picked_ok} of {len(records)} cases "
               f"(threshold {threshold_text(onnx_lm.torch_attention_cells())})")
    print(summary)
    write_result(args.result, script="lm_attention_route.py", title="Language-model passes: ONNX Runtime or torch",
                 command=f"python benchmarks/lm_attention_route.py --threads {args.threads} --repeats {args.repeats}",
                 rows=records, threads=args.threads, summary=summary, machine_text=start_line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
