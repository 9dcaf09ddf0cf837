"""``dialeval demo [--port P]``: serve the full Gradio demo locally with the offline defaults."""

from __future__ import annotations

import argparse
from typing import Any

from dialeval import demo


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="launch the Gradio demo (every metric at once) on this machine")
    p.add_argument("--port", type=int, default=None, help="port to serve on (default: Gradio's, 7860 or the next free)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (0.0.0.0 to serve the local network)")
    p.add_argument("--examples", default="default", help="folder of example *.json files (default: the bundled dialeval/resources/examples)")
    p.add_argument("--concurrency", type=int, default=None, help="requests computed at once (default 2)")
    p.add_argument("--online", action="store_true",
                   help="allow downloading models from the Hugging Face Hub (default: offline, local models only)")
    p.add_argument("--allow-local-models", action="store_true",
                   help="on a public server (a non-loopback --host, or a Space) also accept model ids and local "
                        "paths beyond each metric's offered models (default: refused)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 < args.port < 65536:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}.")
    if args.concurrency is not None and args.concurrency < 1:
        raise ValueError(f"--concurrency must be ≥ 1, got {args.concurrency}.")

    if args.port is not None:
        _check_port_free(args.host, args.port)
    demo.launch(port=args.port, host=args.host, examples_dir=args.examples, concurrency=args.concurrency,
                offline=not args.online, allow_local_models=args.allow_local_models or None)
    return 0


def _check_port_free(host: str, port: int) -> None:
    """A one-line error before Gradio starts when ``host:port`` is taken (Gradio's own error is a traceback)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise OSError(f"port {port} on {host} is not available ({exc.strerror or exc}); choose another with "
                          "--port, or stop the program using it.") from None
