"""Hugging Face Space: every dialeval metric at once (the app of `dialeval demo`; written by
`dialeval hub build`).

The example excerpts and the default Sem-Ent space (fitted on DailyDialog test responses) are package
data of the dialeval wheel this Space installs. Models are fetched from the Hub on first use, never at
launch; on ZeroGPU hardware the scoring function runs under `spaces.GPU`.
"""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")  # metric scripts ship with the dialeval package

from dialeval.demo import build_demo, launch_options  # noqa: E402

demo = build_demo()

if __name__ == "__main__":
    # 0.0.0.0 on a Hugging Face Space, loopback (or $DIALEVAL_HOST) elsewhere.
    host = "0.0.0.0" if os.environ.get("SPACE_ID") else os.environ.get("DIALEVAL_HOST", "127.0.0.1")
    demo.launch(**launch_options(host=host))
