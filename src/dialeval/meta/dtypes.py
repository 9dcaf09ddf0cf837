"""``dialeval leaderboard --dtype bf16``: one precision for every metric that declares a ``dtype`` option (the LM and
encoder metrics), refused on a CPU where bf16 is emulated (:mod:`dialeval.models.cpu`). The dtype is an option
of each metric, so it is part of each cache key and each metric's signature records the dtype that ran: bf16
scores never reuse, or mix with, cached fp32 ones."""

from __future__ import annotations

from typing import Any

from dialeval import registry


def dtype_name(dtype: Any) -> str | None:
    """``"bf16"``, or ``None`` for the default fp32; anything else is refused in one line."""
    if dtype is None or (isinstance(dtype, str) and dtype.lower() in ("fp32", "float32")):
        return None
    if isinstance(dtype, str) and dtype.lower() in ("bf16", "bfloat16"):
        return "bf16"
    raise ValueError(f"--dtype {dtype!r:.40} is not supported; use bf16, or fp32 (the default).")


def _on_cpu(options: dict[str, Any]) -> bool:
    """Whether a metric with these options runs on the CPU (its ``device``, else CUDA when one is visible)."""
    device = options.get("device")
    if device not in (None, "auto"):
        return str(getattr(device, "type", device)).startswith("cpu")
    import torch

    return not torch.cuda.is_available()


def with_dtype(metric_args: dict[str, dict[str, Any]] | None, tasks: list[tuple[str, str, str]],
               dtype: str | None) -> dict[str, dict[str, Any]] | None:
    """``metric_args`` with ``dtype="bf16"`` merged into the options of every scored metric that declares a
    ``dtype`` option (``--dtype bf16``); fp32 (the default) leaves them as they are, so cached fp32 scores keep
    their keys. Refused where a metric runs on a CPU without native bf16 (:func:`dialeval.models.cpu.check_fast_bf16`)
    or where a ``--metric-arg`` asks that metric for another dtype."""
    if dtype_name(dtype) is None:
        return metric_args
    out = {m: dict(o) for m, o in (metric_args or {}).items()}
    for metric in dict.fromkeys(t[0] for t in tasks):
        found = registry.meta_row(metric)
        if found is None or not any(o.name == "dtype" for o in found[0].options):
            continue
        options = out.setdefault(metric, {})
        if options.get("dtype") is not None and dtype_name(options["dtype"]) != "bf16":
            raise ValueError(f"--metric-arg {metric}:dtype={options['dtype']} disagrees with --dtype bf16; drop one.")
        options["dtype"] = "bf16"
        if _on_cpu(options):
            from dialeval.models.cpu import check_fast_bf16

            check_fast_bf16("--dtype bf16")
    return out
