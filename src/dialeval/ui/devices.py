"""Where the Space's models run: the device and precision it picks, the ZeroGPU decorator, and the
number of requests served at once."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def pick_precision() -> tuple[str, str | None]:
    """(device, dtype) for model metrics: CUDA with bf16 where the GPU runs it natively (compute capability
    ≥ 8.0), fp16 on older GPUs such as the T4 (:func:`dialeval.runtime.gpu_half_dtype`), when a GPU is visible;
    else CPU in fp32 (``None``). ``DIALEVAL_DEVICE`` / ``DIALEVAL_DTYPE`` override."""
    device = os.environ.get("DIALEVAL_DEVICE")
    dtype = os.environ.get("DIALEVAL_DTYPE")
    try:
        import torch
    except ImportError:  # pragma: no cover - the space extra installs torch
        return device or "cpu", dtype
    from dialeval.runtime import gpu_half_dtype, resolve_device

    if device is None:
        device = resolve_device(None).type
    if dtype is None and device.startswith("cuda") and torch.cuda.is_available():
        dtype = gpu_half_dtype(device)
    return device, dtype


def _zerogpu_module() -> Any:
    """Hugging Face's ZeroGPU ``spaces`` package, or ``None``. Run from a dialeval checkout root, the
    checkout's own ``spaces/`` folder (the Space templates, marked ``DIALEVAL_SPACE_TEMPLATES``) is found
    first as a top-level ``spaces``; look past it on ``sys.path`` for the real package."""
    try:
        module = importlib.import_module("spaces")
    except ImportError:
        return None
    if not getattr(module, "DIALEVAL_SPACE_TEMPLATES", False):
        return module
    own = Path(module.__file__ or "").resolve().parent.parent
    for entry in sys.path:
        if Path(entry or ".").resolve() == own:
            continue
        spec = importlib.machinery.PathFinder.find_spec("spaces", [entry])
        if spec is None or spec.loader is None:
            continue
        real = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(real)
        if not getattr(real, "DIALEVAL_SPACE_TEMPLATES", False):
            return real
    return None


def gpu_decorator(duration: int = 120) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``spaces.GPU(duration=...)`` when the Hugging Face ``spaces`` package is installed (ZeroGPU),
    else the identity (also for a folder named ``spaces`` without ``GPU``)."""
    gpu = getattr(_zerogpu_module(), "GPU", None)
    if not callable(gpu):
        return lambda fn: fn
    return gpu(duration=duration)


def concurrency() -> int:
    """Requests served at once: ``$DIALEVAL_CONCURRENCY`` (default 2)."""
    from dialeval.ui.inputs import env_int

    return env_int("DIALEVAL_CONCURRENCY", 2)
