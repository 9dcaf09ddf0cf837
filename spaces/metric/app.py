"""Hugging Face Space for the `__METRIC__` metric of dialeval (written by `dialeval hub build`).

The widget comes from dialeval's shared UI helper; the module script `__METRIC__.py` and this card sit
beside it, so `evaluate.load("__REPO_ID__")` loads the same metric this Space computes.
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESOURCES: dict[str, str] = {}  # option -> folder shipped beside this file (e.g. Sem-Ent's fitted space)
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
for option, folder in RESOURCES.items():  # the widget uses them when no references are pasted
    if (HERE / folder).is_dir():
        os.environ.setdefault(f"DIALEVAL___METRIC___{option}".upper(), str(HERE / folder))

try:  # ZeroGPU: `spaces` is imported before anything initialises CUDA
    import spaces  # noqa: F401
except ImportError:
    pass

from dialeval.demo import launch_options  # noqa: E402
from dialeval.ui import metric_widget  # noqa: E402
from dialeval.ui.scoring import place_models_on_cuda  # noqa: E402
from dialeval.ui.serving import ServerPolicy  # noqa: E402

# 0.0.0.0 on a Hugging Face Space, loopback (or $DIALEVAL_HOST) elsewhere; the same server policy as the full demo
# (offered models only when public, the per-client gate, Gradio's cache bounded, results removed on exit/SIGTERM).
HOST = "0.0.0.0" if os.environ.get("SPACE_ID") else os.environ.get("DIALEVAL_HOST", "127.0.0.1")
place_models_on_cuda(["__METRIC__"])  # with CUDA (ZeroGPU too): its default model goes to the GPU at import
demo = metric_widget("__METRIC__", policy=ServerPolicy.from_env(HOST))

if __name__ == "__main__":
    demo.launch(**launch_options(host=HOST))  # system fonts, errors shown, the upload cap, MCP when installed
