"""The demo's ``/evaluate`` timed on this machine's device (for ``benchmarks/gpu_check.sh`` on a lent GPU).

Starts the demo on 127.0.0.1 (offline, the models placed on CUDA first as the Space does), then calls
``/evaluate`` through ``gradio_client`` with every model metric that can run here ticked on one request of
``--items`` responses, sets and dialogue turns: the first call (kernels warm up) and ``--repeats`` more, each
beside the ZeroGPU slot the request would ask for (:func:`dialeval.ui.devices.gpu_duration`).

    python benchmarks/demo_gpu.py [--items 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "DIALEVAL_PROGRESS": "0"}.items():
    os.environ.setdefault(_k, _v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from gradio_client import Client

    from dialeval import registry
    from dialeval.demo import launch
    from dialeval.ui import availability
    from dialeval.ui.devices import gpu_duration
    from dialeval.ui.scoring import place_models_on_cuda

    t0 = time.perf_counter()
    placed = place_models_on_cuda()
    print(f"placed on CUDA at import: {placed} ({time.perf_counter() - t0:.1f} s)")
    demo = launch(port=None, block=False, examples_dir=None)
    words = ["tea", "coffee", "milk", "water", "juice", "bread"]
    lines = [f"i would like some {words[i % 6]} and {words[(i * 5) % 6]} please" for i in range(args.items)]
    texts = {"responses": "\n".join(lines), "sets": "\n\n".join("\n".join(lines[i:i + 4]) for i in range(0, len(lines), 4)),
             "dialogue": "\n".join(f"{'User' if i % 2 == 0 else 'System'}: {t}" for i, t in enumerate(lines[:16]))}
    ticked = [d.name for d in registry.declarations().values() if d.needs_model and availability(d.name)[0]]
    slot = gpu_duration(texts, dict.fromkeys(ticked))
    try:
        client = Client(demo.local_url, verbose=False)
        for i in range(args.repeats + 1):
            start = time.perf_counter()
            status, *_, download = client.predict(**texts, **{f"use_{n}": True for n in ticked}, draw_plots=False,
                                                  api_name="/evaluate")
            took = time.perf_counter() - start
            meta = json.loads(Path(download).read_text(encoding="utf-8"))["dialeval"]
            print(f"{'first' if i == 0 else f'call {i}'}: {took:.2f} s on {meta['device']} ({meta['dtype']}), "
                  f"ZeroGPU slot asked {slot} s; {status.splitlines()[0]}")
    finally:
        demo.close()


if __name__ == "__main__":
    main()
