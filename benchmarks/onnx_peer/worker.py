"""The ONNX Runtime peers, run in their own venv (benchmarks/onnx_peer_venv: transformers 4.57 + optimum-onnx,
which pins transformers<4.58) and driven line by line from a dialeval benchmark, so rounds interleave.

    onnx_peer_venv/bin/python benchmarks/onnx_peer/worker.py KIND MODEL_DIR TEXTS_JSON THREADS

KIND: ``st`` (``SentenceTransformer(path, backend="onnx")``), ``cross`` (``CrossEncoder(path, backend="onnx")``)
or ``causal`` (optimum ``ORTModelForCausalLM``, exported on load; per item, the history re-run with each
follow-up in one right-padded batch, mean NLL of the follow-up tokens; TEXTS_JSON holds token ids).
stdin: one JSON command per line (``{"batch_size": 32}``, or ``{"save": PATH}`` to write the last output as
.npy); stdout: ``{"seconds": ...}`` per run. The ORT session gets ``THREADS`` intra-op threads.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np


def transformers4_copy(path: str) -> str:
    """``path`` itself, or, when its config.json is in transformers 5's format (``rope_parameters``), a temporary
    copy whose config also carries the 4.x keys (``rope_theta``, ``rope_scaling``) — else transformers 4.57
    would silently use its default RoPE base and the peer would score another model. Weights are linked."""
    import tempfile
    from pathlib import Path

    src = Path(path)
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    rope = config.get("rope_parameters")
    if not isinstance(rope, dict) or "rope_theta" in config:
        return path
    config["rope_theta"] = rope["rope_theta"]
    if rope.get("rope_type", "default") != "default":
        config["rope_scaling"] = {k: v for k, v in rope.items() if k != "rope_theta"}
    dst = Path(tempfile.mkdtemp(prefix="peer-model-"))
    for f in src.iterdir():
        if f.is_file() and f.name != "config.json":
            (dst / f.name).symlink_to(f.resolve())
    (dst / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return str(dst)


def causal_scorer(path: str, data: dict, kwargs: dict):
    """``run(_)`` → [items, follow-ups] mean NLL of each follow-up after its history (ids from dialeval)."""
    import torch
    from optimum.onnxruntime import ORTModelForCausalLM

    model = ORTModelForCausalLM.from_pretrained(transformers4_copy(path), export=True, use_cache=False, **kwargs)
    fus, pad = data["follow_ups"], int(data["pad"])

    def run(_batch_size: int) -> list[list[float]]:
        out = []
        for hist in data["histories"]:
            seqs = [hist + f for f in fus]
            width = max(len(x) for x in seqs)
            ids = torch.full((len(seqs), width), pad, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for i, x in enumerate(seqs):
                ids[i, :len(x)], mask[i, :len(x)] = torch.tensor(x), 1
            logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float(), -1)
            row = []
            for i, f in enumerate(fus):
                pos = torch.arange(len(hist) - 1, len(hist) - 1 + len(f))
                row.append(float(-logp[i, pos, torch.tensor(f)].mean()))
            out.append(row)
        return out

    return run


def main() -> int:
    kind, path, texts_file, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    import onnxruntime as ort
    import torch

    torch.set_num_threads(threads)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    kwargs = {"provider": "CPUExecutionProvider", "session_options": opts}
    data = json.loads(open(texts_file, encoding="utf-8").read())
    if kind == "st":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(path, backend="onnx", device="cpu", model_kwargs=kwargs)
        run = lambda bs: model.encode(data, batch_size=bs, convert_to_numpy=True)  # noqa: E731
    elif kind == "causal":
        run = causal_scorer(path, data, kwargs)
    else:
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(path, backend="onnx", device="cpu", model_kwargs=kwargs)
        pairs = [tuple(p) for p in data]
        run = lambda bs: model.predict(pairs, batch_size=bs, apply_softmax=True, convert_to_numpy=True)  # noqa: E731
    last = None
    print(json.dumps({"ready": True, "ort": ort.__version__}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if "save" in cmd:
            np.save(cmd["save"], np.asarray(last, dtype=np.float32))
            print(json.dumps({"saved": cmd["save"]}), flush=True)
            continue
        start = time.perf_counter()
        last = run(int(cmd["batch_size"]))
        print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
