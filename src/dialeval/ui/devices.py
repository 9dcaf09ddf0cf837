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
    ≥ 8.0), fp16 on older GPUs such as the T4 (:func:`dialeval.models.runtime.gpu_half_dtype`), when a GPU is visible;
    else CPU in fp32 (``None``). ``DIALEVAL_DEVICE`` / ``DIALEVAL_DTYPE`` override."""
    device = os.environ.get("DIALEVAL_DEVICE")
    dtype = os.environ.get("DIALEVAL_DTYPE")
    try:
        import torch
    except ImportError:  # pragma: no cover - the space extra installs torch
        return device or "cpu", dtype
    from dialeval.models.runtime import gpu_half_dtype, resolve_device

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
        sys.modules["spaces"] = real  # its own `from .zero import ...` must find it, not the templates
        try:
            spec.loader.exec_module(real)
        except BaseException:
            sys.modules["spaces"] = module  # a broken install: the templates stay what `spaces` names
            raise
        if not getattr(real, "DIALEVAL_SPACE_TEMPLATES", False):
            return real
        sys.modules["spaces"] = module
    return None


#: ZeroGPU slot sizing (:func:`gpu_duration`): seconds per input line per selected model metric, the floor
#: (the worker's start and the first CUDA kernels) and the cap (the longest slot a request may ask for).
GPU_SECONDS_PER_ITEM = 0.5
GPU_FLOOR_S = 20
GPU_CAP_S = 120


def gpu_seconds(items: dict[str, int]) -> int:
    """The ZeroGPU slot, in seconds, for ``items`` (metric → input lines it reads): each metric that runs a model
    adds :data:`GPU_SECONDS_PER_ITEM` per line (model-free metrics run in milliseconds on the CPU and add
    nothing), on top of :data:`GPU_FLOOR_S`, and the slot is at most :data:`GPU_CAP_S`."""
    from dialeval import registry

    seconds = sum(GPU_SECONDS_PER_ITEM * n for name, n in items.items() if registry.get(name).needs_model)
    return int(min(GPU_CAP_S, GPU_FLOOR_S + seconds))


def _boxes(name: str) -> tuple[str, ...]:
    from dialeval import registry
    from dialeval.ui.inputs import boxes_for

    decl = registry.get(name)
    return boxes_for(decl.inputs, decl.references_option is not None)


def gpu_duration(texts: dict[str, str], selected: dict[str, Any], *args: Any, **kwargs: Any) -> int:
    """The slot for the demo's ``evaluate_texts(texts, selected, ...)`` (``spaces.GPU`` calls it with the same
    arguments): :func:`gpu_seconds` of the non-blank lines of the boxes each selected metric reads."""
    def lines(box: str) -> int:
        return sum(1 for line in str(texts.get(box) or "").splitlines() if line.strip())

    return gpu_seconds({name: sum(lines(box) for box in _boxes(name)) for name in selected})


def metric_gpu_duration(name: str, inputs: Any, *args: Any, **kwargs: Any) -> int:
    """The slot for a metric Space's ``run_metric(name, inputs, ...)``: :func:`gpu_seconds` of the parsed items
    (responses, turns, speakers) of the boxes the metric reads."""
    def count(values: Any) -> int:
        return sum(len(v) if isinstance(v, list) else 1 for v in values or [])

    return gpu_seconds({name: sum(count(getattr(inputs, box, [])) for box in _boxes(name))})


def gpu_decorator(duration: Callable[..., int] | int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``spaces.GPU(duration=duration)`` when the Hugging Face ``spaces`` package is installed (ZeroGPU; a
    callable ``duration`` is called with the decorated function's arguments: the demo's :func:`gpu_duration`, a
    metric Space's :func:`metric_gpu_duration`),
    else the identity (also for a folder named ``spaces`` without ``GPU``). Off ZeroGPU ``spaces.GPU`` itself
    returns the function unchanged."""
    gpu = getattr(_zerogpu_module(), "GPU", None)
    if not callable(gpu):
        return lambda fn: fn
    return gpu(duration=duration)


def concurrency() -> int:
    """Requests served at once: ``$DIALEVAL_CONCURRENCY`` (default 2)."""
    from dialeval.ui.inputs import env_int

    return env_int("DIALEVAL_CONCURRENCY", 2)
