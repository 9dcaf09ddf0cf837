"""``dialeval demo [--port P]``: serve the full Gradio demo locally with the offline defaults."""

from __future__ import annotations

import argparse
import ipaddress
import re
import socket
import threading
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
    p.add_argument("--no-prepare", action="store_true",
                   help="serve at once; each model loads (on a cold cache: converts to ONNX) with the first request "
                        "that needs it (default: every model is prepared first, one line each)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 < args.port < 65536:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}.")
    if args.concurrency is not None and args.concurrency < 1:
        raise ValueError(f"--concurrency must be ≥ 1, got {args.concurrency}.")

    check_host(args.host)
    if args.port is not None:
        _check_port_free(args.host, args.port)
    demo.launch(port=args.port, host=args.host, examples_dir=args.examples, concurrency=args.concurrency,
                offline=not args.online, allow_local_models=args.allow_local_models or None,
                prepare=not args.no_prepare)
    return 0


def _check_port_free(host: str, port: int) -> None:
    """A one-line error before Gradio starts when ``host:port`` is taken (Gradio's own error is a traceback)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise OSError(f"port {port} on {host} is not available ({exc.strerror or exc}); choose another with "
                          "--port, or stop the program using it.") from None


_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
#: Seconds a host name may take to resolve before ``--host`` is refused (a name that never resolves hung the demo).
RESOLVE_TIMEOUT_S = 5.0


def check_host(host: str) -> None:
    """``--host`` must be an IP address or a host name (RFC 1123) that resolves, within seconds, to an address of
    this machine; otherwise one line, before Gradio starts (it retried 'not a host' for minutes)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in host.rstrip(".").split(".")):
            raise ValueError(f"--host {host[:80]!r} is neither an IP address nor a host name; give an interface "
                             "address such as 127.0.0.1 or 0.0.0.0.") from None
    found: list[Any] = []

    def resolve() -> None:
        try:
            found.append(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    worker = threading.Thread(target=resolve, daemon=True)
    worker.start()
    worker.join(RESOLVE_TIMEOUT_S)
    if not found or isinstance(found[0], OSError):
        why = f"({found[0].strerror or found[0]})" if found else f"(no answer within {RESOLVE_TIMEOUT_S:g} s)"
        raise ValueError(f"--host {host!r} does not resolve {why}; give an interface address such as 127.0.0.1.")
    family, _, _, _, address = found[0][0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address[0], 0))
        except OSError as exc:
            raise ValueError(f"--host {host!r} ({address[0]}) is not an address of this machine "
                             f"({exc.strerror or exc}); give 127.0.0.1, 0.0.0.0 or one of its interfaces.") from None
