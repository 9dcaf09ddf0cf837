"""Hugging Face Space: every dialeval metric at once (the app of `dialeval demo`; written by
`dialeval hub build`).

The example excerpts and the default Sem-Ent space (fitted on DailyDialog test responses) are package
data of the dialeval wheel this Space installs. On CPU, models are loaded on first use; with CUDA the
default models are loaded onto the GPU at import (ZeroGPU's rule: at module level); on ZeroGPU
hardware the scoring runs under `spaces.GPU`, its slot sized from the request (`dialeval.ui.devices.gpu_duration`).
With the `mcp` package installed the app is also an MCP server (`/gradio_api/mcp/`, one tool per metric).
"""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")  # metric scripts ship with the dialeval package

try:  # ZeroGPU: `spaces` is imported before anything initialises CUDA (the Space image ships it)
    import spaces  # noqa: F401
except ImportError:
    pass

from dialeval.demo import build_demo, launch_options  # noqa: E402
from dialeval.ui.scoring import place_models_on_cuda  # noqa: E402

place_models_on_cuda()  # with CUDA (ZeroGPU too): the offered models go to the GPU here, at import
demo = build_demo()

if __name__ == "__main__":
    # 0.0.0.0 on a Hugging Face Space, loopback (or $DIALEVAL_HOST) elsewhere.
    host = "0.0.0.0" if os.environ.get("SPACE_ID") else os.environ.get("DIALEVAL_HOST", "127.0.0.1")
    demo.launch(**launch_options(host=host))
