"""fp32 on an AMD CPU: linear layers through oneDNN instead of torch's default BLAS.

torch's fp32 ``nn.Linear`` on a CPU calls MKL's sgemm. MKL picks its fastest kernels on Intel CPUs; on AMD ones
(``vendor_id`` ``AuthenticAMD``) it reaches 135–190 GFLOP/s on SmolLM2's shapes where oneDNN's fp32 kernels, which
torch also ships and which choose kernels by the CPU's instruction-set flags alone, reach 200–216
(``benchmarks/fp32_engines.py``). On such a CPU every fp32 ``nn.Linear`` of a model that runs on torch (FULL's
token trees, the LLM judge, ``backend="torch"``) is switched to :class:`OneDnnLinear`: the same module and weights,
its product y = x·Wᵀ + b taken by ``torch.ops.mkldnn._linear_pointwise``. The two engines sum in different orders,
so outputs differ by fp32 rounding (a few units of 1e-6 relative), as between any two BLAS libraries.

The oneDNN op has no backward and no ONNX symbol, so a layer falls back to ``F.linear`` whenever autograd records
(training), while a model is traced or exported (ONNX Runtime's graphs are exported from the same torch module),
and for any input that is not fp32 on a CPU. On Intel CPUs nothing changes.
"""

from __future__ import annotations

from typing import Any

#: CPU vendors whose fp32 linear layers run through oneDNN (measured: ``benchmarks/fp32_engines.py``)
ONEDNN_VENDORS = frozenset({"AuthenticAMD"})
#: The attribute a switched model carries: the engine of its fp32 linear layers.
MARK = "dialeval_fp32_engine"


def onednn_available() -> bool:
    """Whether this torch build has oneDNN and its fused linear op."""
    import torch

    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def prefers_onednn(vendor: str | None = None) -> bool:
    """Whether fp32 linear layers run through oneDNN on the CPU of ``vendor`` (default: this machine's
    ``vendor_id``, :func:`dialeval.models.cpu.cpu_vendor`)."""
    from dialeval.models.cpu import cpu_vendor

    return (vendor if vendor is not None else cpu_vendor()) in ONEDNN_VENDORS and onednn_available()


def _exporting() -> bool:
    import torch

    compiler = getattr(torch, "compiler", None)
    return bool(torch.jit.is_tracing() or torch.onnx.is_in_onnx_export()
                or (compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling()))


def onednn_linear_class() -> Any:
    import torch
    import torch.nn.functional as F  # noqa: N812 - torch's own name

    global _CLASS
    if _CLASS is not None:
        return _CLASS

    class OneDnnLinear(torch.nn.Linear):
        """``nn.Linear`` whose fp32 CPU product y = x·Wᵀ + b runs through oneDNN (``F.linear`` when autograd
        records, while tracing or exporting, and for other dtypes or devices)."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if (x.dtype != torch.float32 or x.device.type != "cpu" or self.weight.dtype != torch.float32
                    or (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad)) or _exporting()):
                return F.linear(x, self.weight, self.bias)
            return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")

    OneDnnLinear.__module__, OneDnnLinear.__qualname__ = __name__, "OneDnnLinear"  # found by name (pickle)
    _CLASS = OneDnnLinear
    return _CLASS


_CLASS: Any = None


def __getattr__(name: str) -> Any:
    if name == "OneDnnLinear":  # built on first use, so importing this module does not import torch
        return onednn_linear_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def with_onednn_linears(model: Any) -> Any:
    """``model`` (in place) with every plain ``nn.Linear`` switched to :class:`OneDnnLinear` (the module keeps its
    parameters, hooks and tied weights; only its class changes); returns the model, marked with :data:`MARK`."""
    import torch

    linear_class = onednn_linear_class()
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.__class__ = linear_class
    setattr(model, MARK, "onednn")
    return model


def fp32_engine(model: Any) -> str:
    """The engine of a model's fp32 linear layers: ``"onednn"`` (switched here) or ``"default"``."""
    return getattr(model, MARK, "default")
