"""dialeval's Hugging Face Space templates, shipped in the wheel as ``dialeval.spaces``: ``demo/`` (every
metric at once: ``app.py`` and its card) and ``metric/app.py`` (one metric's widget; ``dialeval hub build``
writes one Space per metric from it).

Run from a checkout root, this folder is importable as a top-level ``spaces`` and would shadow Hugging
Face's ZeroGPU ``spaces`` package: :func:`dialeval.ui.devices.gpu_decorator` recognises it by
``DIALEVAL_SPACE_TEMPLATES`` and looks past it.
"""

DIALEVAL_SPACE_TEMPLATES = True
