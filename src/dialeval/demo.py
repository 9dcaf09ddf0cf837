"""The full dialeval demo: every metric at once on pasted or uploaded responses, with plots.

``build_demo()`` returns the ``gr.Blocks``; ``launch()`` serves it (``dialeval demo [--port P]``).
The demo Space written by ``dialeval hub build`` runs this same app. All parsing, limits, model probing,
caching, plotting and the Blocks themselves live in :mod:`dialeval.ui` (built from the metric registry);
this module finds the bundled examples and serves the app.

Endpoints (for ``gradio_client``): see :mod:`dialeval.ui.blocks` (``/evaluate``, ``/load_upload``,
``/load_example``, ``/check_model_<metric>``); no other event runs Python.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dialeval import ui
from dialeval.resources import examples_dir
from dialeval.ui.blocks import INPUT_ORDER, demo_blocks, evaluate_texts, example_texts, output_order
from dialeval.ui.serving import ServerPolicy, prepare

__all__ = ["INPUT_ORDER", "build_demo", "evaluate_texts", "example_texts", "launch", "launch_options", "load_examples",
           "output_order"]


OFFLINE_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
}


def default_examples_dir() -> Path | None:
    """``$DIALEVAL_EXAMPLES_DIR``, else the examples bundled as package data (``dialeval/resources/examples``)."""

    env = os.environ.get("DIALEVAL_EXAMPLES_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(examples_dir())
    for c in candidates:
        if c.is_dir():
            return c
    return None


def load_examples(directory: str | os.PathLike | None) -> dict[str, dict[str, Any]]:
    """Bundled examples: every ``*.json`` in ``directory`` with a ``title`` and any of the input fields
    (:data:`INPUT_ORDER`, lists of strings or of lists). Sorted by file name."""
    if directory is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(directory).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "title" not in data:
            continue
        out[str(data["title"])] = data
    return out


def _theme() -> Any:
    """Gradio's default look with system fonts: the page makes no request to a font CDN."""
    import gradio as gr

    system = ["ui-sans-serif", "system-ui", "sans-serif"]
    mono = ["ui-monospace", "Consolas", "monospace"]
    return gr.themes.Default(font=system, font_mono=mono)


def build_demo(examples_dir: str | os.PathLike | None = "default", limits: ui.Limits | None = None,
               concurrency: int | None = None, policy: ServerPolicy | None = None) -> Any:
    """The full demo as a ``gr.Blocks`` (:func:`dialeval.ui.blocks.demo_blocks`, queued with
    ``concurrency`` workers, default ``$DIALEVAL_CONCURRENCY`` or 2) on the examples of ``examples_dir``,
    under the server ``policy`` (default: :meth:`ServerPolicy.from_env`, public on a Space)."""
    examples = load_examples(default_examples_dir() if examples_dir == "default" else examples_dir)
    return prepare(demo_blocks(examples, limits or ui.Limits.from_env(), concurrency, policy))


def launch(port: int | None = None, host: str = "127.0.0.1", *, share: bool = False, block: bool = True,
           examples_dir: str | os.PathLike | None = "default", limits: ui.Limits | None = None,
           concurrency: int | None = None, offline: bool = True, allow_local_models: bool | None = None,
           prepare: bool = False) -> Any:
    """Serve the demo (``dialeval demo``). ``offline`` sets the Hub/Gradio offline defaults first
    (unless already set), so launching makes no network request. Served beyond this machine (``host``
    not loopback, or on a Space) the model fields accept only the offered models unless
    ``allow_local_models`` (``--allow-local-models``). ``prepare`` loads every model metric's default model
    first, one line each on stderr (:func:`dialeval.ui.scoring.prepare_models`: a cold cache's ONNX conversions
    happen here, said and timed, not in the first request); ``dialeval demo`` does, unless ``--no-prepare``."""
    if offline:
        for key, value in OFFLINE_DEFAULTS.items():
            os.environ.setdefault(key, value)
    limits = limits or ui.Limits.from_env()
    policy = ServerPolicy.from_env(host, allow_local_models)
    if prepare:
        import sys

        from dialeval.ui.scoring import prepare_models

        prepare_models(lambda line: print(f"dialeval demo: {line}", file=sys.stderr, flush=True))
    demo = build_demo(examples_dir, limits, concurrency, policy)
    demo.launch(**launch_options(port, host, limits), share=share, prevent_thread_lock=not block)
    return demo


def launch_options(port: int | None = None, host: str = "127.0.0.1", limits: ui.Limits | None = None) -> dict[str, Any]:
    """``Blocks.launch`` keyword arguments shared by ``dialeval demo`` and the Space: system fonts, no
    server-side rendering process, errors shown, a hard upload cap of 5× the checked limit (files
    between the two get dialeval's own message; larger ones are refused by Gradio before reading), the MCP
    server (``/gradio_api/mcp/``, the tools of :mod:`dialeval.ui.mcp`) when the ``mcp`` package is installed, and a
    bound on the nesting of JSON request bodies (:mod:`dialeval.ui.request_depth`)."""
    from starlette.middleware import Middleware

    from dialeval.ui.mcp import mcp_available
    from dialeval.ui.request_depth import DepthGuard

    limits = limits or ui.Limits.from_env()
    return {"server_name": host, "server_port": port, "show_error": True, "ssr_mode": False, "theme": _theme(),
            "max_file_size": 5 * limits.max_upload_bytes, "footer_links": ["api"], "mcp_server": mcp_available(),
            "app_kwargs": {"middleware": [Middleware(DepthGuard)]}}
