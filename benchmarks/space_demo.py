"""Request overhead of the Gradio demo against direct ``compute`` (the baseline, measured in the same run).

For N requests of the lexical metrics (Dist-n, Ent-n, LF) and NLI Diversity with a tiny offline model,
times: direct ``dialeval.load(name).compute`` calls; the same work through the running app with
``gradio_client`` one request at a time; and all N requests at once (the queue runs
``--concurrency`` of them in parallel). The app also draws two plots and writes the JSON download per
request, which is most of its overhead.

    python benchmarks/space_demo.py [--requests 20] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "DIALEVAL_PROGRESS": "0"}.items():
    os.environ.setdefault(_k, _v)

WORDS = ["tea", "coffee", "milk", "water", "juice", "soda", "bread", "rice"]


def request_texts(i: int) -> dict[str, str]:
    responses = [f"i would like some {WORDS[(i + k) % 8]} and {WORDS[(i * k) % 8]} please" for k in range(30)]
    sets = [[f"yes {i}", "no", "maybe later"], [f"sure {k}" for k in range(4)]]
    return {"responses": "\n".join(responses), "sets": "\n\n".join("\n".join(s) for s in sets)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    from gradio_client import Client

    import dialeval
    from dialeval import ui
    from dialeval.demo import INPUT_ORDER, launch
    from dialeval.testing.roberta import tiny_nli_model

    model = str(tiny_nli_model(tempfile.mkdtemp(prefix="bench_nli_")))
    use = {"distinct_n": None, "ent_n": None, "low_frequency": None, "nli_diversity": model}
    payloads = [request_texts(i) for i in range(args.requests)]

    def call_args(texts: dict[str, str], plots: bool = True) -> list:
        out: list = [texts.get(k, "") for k in INPUT_ORDER]
        for name, spec in ui.REGISTRY.items():
            out += [name in use, use.get(name) or spec.default_model]
        return [*out, plots]

    modules = {n: dialeval.load(n, **({"model": model} if n == "nli_diversity" else {})) for n in use}

    def direct(texts: dict[str, str]) -> None:
        responses = texts["responses"].split("\n")
        for n in ("distinct_n", "ent_n", "low_frequency"):
            modules[n].compute(predictions=responses)
        modules["nli_diversity"].compute(predictions=[s.split("\n") for s in texts["sets"].split("\n\n")])

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = launch(port=port, block=False, examples_dir=None, concurrency=args.concurrency)
    client = Client(demo.local_url, verbose=False)
    try:
        direct(payloads[0])
        client.predict(*call_args(payloads[0]), api_name="/evaluate")  # warm-up: loads and caches
        t0 = time.perf_counter()
        for p in payloads:
            direct(p)
        t_direct = time.perf_counter() - t0
        t0 = time.perf_counter()
        for p in payloads:
            client.predict(*call_args(p), api_name="/evaluate")
        t_seq = time.perf_counter() - t0
        t0 = time.perf_counter()
        for p in payloads:
            client.predict(*call_args(p, plots=False), api_name="/evaluate")
        t_noplot = time.perf_counter() - t0
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.requests) as pool:
            list(pool.map(lambda p: client.predict(*call_args(p), api_name="/evaluate"), payloads))
        t_conc = time.perf_counter() - t0
    finally:
        demo.close()

    n = args.requests
    rows = [("direct compute (baseline)", t_direct), ("app, one request at a time", t_seq),
            ("app, one at a time, plots off", t_noplot),
            (f"app, {n} at once (concurrency {args.concurrency})", t_conc)]
    print(f"{n} requests: 30 responses (Dist-n, Ent-n, LF) + 2 response sets (NLI Diversity, tiny model), "
          f"{os.cpu_count()} CPUs")
    print(f"{'mode':45s} {'total s':>8s} {'ms/request':>11s} {'× baseline':>11s}")
    for name, t in rows:
        print(f"{name:45s} {t:8.2f} {1000 * t / n:11.1f} {t / t_direct:11.2f}")


if __name__ == "__main__":
    main()
