"""Where the Space's models run: the device and precision it picks, the ZeroGPU decorator, and the
number of requests served at once."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def pick_precision() -> tuple[str, str | None]:
    """(device, dtype) for model metrics: CUDA with bf16 (fp16 on GPUs without bf16) when a GPU is
    visible, else CPU in fp32 (``None``). ``DIALEVAL_DEVICE`` / ``DIALEVAL_DTYPE`` override."""
    device = os.environ.get("DIALEVAL_DEVICE")
    dtype = os.environ.get("DIALEVAL_DTYPE")
    try:
        import torch
    except ImportError:  # pragma: no cover - the space extra installs torch
        return device or "cpu", dtype
    if device is None:
        from ..runtime import resolve_device

        device = resolve_device(None).type
    if dtype is None and device.startswith("cuda"):
        dtype = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return device, dtype


def gpu_decorator(duration: int = 120) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``spaces.GPU(duration=...)`` when the Hugging Face ``spaces`` package is installed (ZeroGPU),
    else the identity. A local folder named ``spaces`` (a namespace package without ``GPU``) is ignored."""
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return lambda fn: fn
    gpu = getattr(spaces, "GPU", None)
    if not callable(gpu):
        return lambda fn: fn
    return gpu(duration=duration)


def concurrency() -> int:
    """Requests served at once: ``$DIALEVAL_CONCURRENCY`` (default 2)."""
    from .inputs import env_int

    return env_int("DIALEVAL_CONCURRENCY", 2)
