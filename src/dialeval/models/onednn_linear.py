"""fp32 on an AMD CPU with AVX-512: linear layers through oneDNN instead of torch's default BLAS.

torch's fp32 ``nn.Linear`` on a CPU calls MKL's sgemm, which picks its fastest kernels by CPU vendor; oneDNN's fp32
kernels, which torch also ships (``torch.ops.mkldnn._linear_pointwise``), pick theirs by the instruction-set flags.
On the AMD EPYC (Zen 4, avx512-bf16) ``benchmarks/fp32_engines.py`` measured, oneDNN's product was faster on most of
SmolLM2's and MiniLM's linear shapes and slower on small 64-row ones, and both LM token-tree routes ran a few per
cent faster whole (``docs/results/benchmarks/fp32_engines.avx512-bf16.json``). On an AVX2-only AMD EPYC (Zen 3) the
same benchmark had oneDNN slower on both routes whole (0.90× and 0.98× MKL's speed, ``fp32_engines.avx2.json``),
so AVX2 keeps torch's product. On an AMD CPU with AVX-512 (the kinds ``avx512``, ``avx512-bf16``) the plain fp32
``nn.Linear``
modules of a model :func:`dialeval.models.bf16_matmul.placed` puts on the CPU (the LM of FULL and the LLM judge,
the NLI classifier, BERTScore's encoder, sentence-transformers and last-token encoders on torch) become
:class:`OneDnnLinear`: the same module and weights, its product
y = x·Wᵀ + b taken by oneDNN. The two engines sum in different orders, so outputs differ by fp32 rounding (a few
units of 1e-6 relative), as between any two BLAS libraries. ``DIALEVAL_FP32_LINEAR=default`` keeps torch's own
product everywhere; ``=onednn`` asks for oneDNN on any CPU that has it.

The oneDNN op has no backward, no ONNX symbol and no autocast rule, so a layer runs ``F.linear`` instead whenever
autograd records for its input, weight or bias, under CPU autocast, for products under 2²⁴ multiply-adds, while a model is traced, scripted, exported or
FX-traced (ONNX Runtime's graphs are exported from the same torch module), and for input that is not fp32 on a
CPU. The switch changes the class of modules in place, like the bf16 conversion beside it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

#: CPU vendors whose fp32 linear layers run through oneDNN by default, and the CPU kinds measured there
ONEDNN_VENDORS = frozenset({"AuthenticAMD"})
ONEDNN_KINDS = frozenset({"avx512", "avx512-bf16"})
#: The variable that overrides the choice: ``auto`` (the default), ``onednn`` or ``default`` (torch's own product).
ENGINE_VARIABLE = "DIALEVAL_FP32_LINEAR"
ENGINES = ("auto", "onednn", "default")
#: products smaller than this many multiply-adds keep ``F.linear``: oneDNN's op costs about 25 µs more a call, a
#: quarter of a 7-million multiply-add product, where the benchmark's 64-row k/v and MiniLM products were slower
MIN_MACS = 1 << 24
_LOCK = threading.Lock()
_CLASS: Any = None


def onednn_available() -> bool:
    """Whether this torch build has oneDNN and its fused linear op."""
    import torch

    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def engine_setting() -> str:
    """``$DIALEVAL_FP32_LINEAR`` (``auto`` when unset); any other value is refused in one line."""
    value = os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() or "auto"
    if value not in ENGINES:
        raise ValueError(f"{ENGINE_VARIABLE}={os.environ.get(ENGINE_VARIABLE)!r}: use one of {', '.join(ENGINES)} "
                         "(auto: oneDNN for fp32 linear layers on an AMD CPU with AVX-512, torch's own product "
                         "elsewhere).")
    return value


def prefers_onednn(vendor: str | None = None, kind: str | None = None) -> bool:
    """Whether fp32 linear layers run through oneDNN on a CPU of ``vendor`` and ``kind`` (default: this machine's
    ``vendor_id`` and :func:`dialeval.models.cpu.cpu_kind`), after ``$DIALEVAL_FP32_LINEAR``."""
    from dialeval.models.cpu import cpu_kind, cpu_vendor

    setting = engine_setting()
    if setting == "default" or not onednn_available():
        return False
    if setting == "onednn":
        return True
    vendor = vendor if vendor is not None else cpu_vendor()
    kind = kind if kind is not None else cpu_kind().name
    return vendor in ONEDNN_VENDORS and kind in ONEDNN_KINDS


def _plain_product_needed(torch: Any, tracing: Any, layer: Any, x: Any) -> bool:
    """Whether ``layer(x)`` must take ``F.linear``: a tracer (asked first, by ``tracing``: a traced input has no real
    dtype), not fp32 on a CPU, a small product (:data:`MIN_MACS`), autograd, or autocast."""
    if tracing():
        return True
    if x.dtype != torch.float32 or x.device.type != "cpu" or layer.weight.dtype != torch.float32:
        return True
    if x.numel() * layer.out_features < MIN_MACS:  # rows × in × out
        return True
    if torch.is_grad_enabled() and (x.requires_grad or layer.weight.requires_grad
                                    or (layer.bias is not None and layer.bias.requires_grad)):
        return True
    return bool(torch.is_autocast_enabled("cpu"))


def tracing_probe(torch: Any) -> Any:
    """One call that says whether FX, TorchScript, torch.compile or the ONNX exporter is tracing, its probes
    looked up once (the check runs on every forward of every switched layer)."""
    from torch.fx import _symbolic_trace

    probes = (getattr(_symbolic_trace, "is_fx_symbolic_tracing", _symbolic_trace.is_fx_tracing), torch.jit.is_tracing,
              torch.jit.is_scripting, torch.compiler.is_compiling, torch.onnx.is_in_onnx_export)
    return lambda: any(probe() for probe in probes)


def onednn_linear_class() -> Any:
    """The :class:`OneDnnLinear` class (built once, on first use, so importing this module does not import torch)."""
    global _CLASS
    with _LOCK:
        if _CLASS is None:
            _CLASS = _build_class()
        return _CLASS


def _build_class() -> Any:
    import torch
    import torch.nn.functional as F  # noqa: N812 - torch's own name

    tracing = tracing_probe(torch)

    class OneDnnLinear(torch.nn.Linear):
        """``nn.Linear`` whose fp32 CPU product y = x·Wᵀ + b runs through oneDNN (``F.linear`` where the module
        docstring says)."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if _plain_product_needed(torch, tracing, self, x):
                return F.linear(x, self.weight, self.bias)
            return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")

    OneDnnLinear.__module__, OneDnnLinear.__qualname__ = __name__, "OneDnnLinear"  # found by name (pickle)
    return OneDnnLinear


def __getattr__(name: str) -> Any:
    if name == "OneDnnLinear":
        return onednn_linear_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def with_onednn_linears(model: Any) -> Any:
    """``model`` (in place) with every plain ``nn.Linear`` switched to :class:`OneDnnLinear` (the module keeps its
    parameters, hooks and tied weights; only its class changes); returns the model."""
    import torch

    linear_class = onednn_linear_class()
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.__class__ = linear_class
    return model
