"""Hub Space widget for the `ent_n` metric (built by dialeval's shared UI helper)."""

import os

from dialeval.demo import launch_options
from dialeval.ui import metric_widget

demo = metric_widget("ent_n")

if __name__ == "__main__":
    # System fonts, errors shown; 0.0.0.0 on a Hugging Face Space, loopback locally.
    demo.launch(**launch_options(host="0.0.0.0" if os.environ.get("SPACE_ID") else "127.0.0.1"))
