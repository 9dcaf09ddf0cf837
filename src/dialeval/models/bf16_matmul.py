"""bf16 on a CPU: bf16 matrix products inside an fp32 model.

A model loaded whole in bf16 keeps its residual stream, norms, attention softmax and logits in bf16, so every
layer adds a rounding of relative size up to 2⁻⁸ to what it passes on. Here only the matrix products run in bf16: each
``nn.Linear`` keeps a bf16 copy of its weight, rounds its input to bf16, multiplies with fp32 accumulation
(oneDNN's bf16 kernels on ``avx512_bf16`` and AMX), rounds the product to bf16 once (torch has no bf16 product
with an fp32 result on CPU) and hands it back in fp32, where the residual sum, normalisation, attention and
softmax run. This is close to the precision split of ``torch.autocast`` (Micikevicius et al.
2018, "Mixed precision training"), with the weights cast once at load instead of at every call.

The output heads stay fp32 too (an LM's head, a classifier's ``classifier`` or ``score`` module): a logit between 16 and 32 rounded to bf16 moves by up to 0.06, enough to reorder the LLM
judge's expected ratings, whose spread over items is small. FULL's follow-up likelihoods run the head apart
(:mod:`dialeval.models.lm_head`): a bf16 product with each scored token's logit and each position's largest
logits recomputed in fp32. ``benchmarks/leaderboard_bf16.py`` measures the published board both ways.
"""

from __future__ import annotations

from typing import Any

from dialeval.models.onednn_linear import onednn_linear_class, prefers_onednn, with_onednn_linears

SHORT_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}

#: The attribute a converted model carries: the dtype of its matrix products (see :func:`compute_dtype`).
MARK = "dialeval_matmul_dtype"


def cpu_bf16(dtype: Any, device: Any) -> bool:
    """Whether a model asked for in ``dtype`` on ``device`` (both resolved torch objects) runs this way: bf16 on
    a CPU. A GPU keeps the model in bf16 whole."""
    return str(dtype) == "torch.bfloat16" and getattr(device, "type", str(device)) == "cpu"


class LastCast:
    """The bf16 copy of the last tensor cast, kept while that tensor is alive: q, k and v (and an MLP's gate and
    up) read the same input tensor, which is rounded once instead of three (two) times. The tensor is known by
    identity (inference tensors keep no version counter): a transformer block feeds its projections a fresh
    normalised tensor and never writes into it between them, which the tests check against a cast per call. The
    (tensor, copy) pair is read and replaced as one object, so threads sharing a model never mix two pairs."""

    def __init__(self) -> None:
        self.last: tuple[Any, Any] | None = None

    def __call__(self, x: Any) -> Any:
        import torch

        last = self.last
        if last is None or last[0] is not x:
            last = (x, x.to(torch.bfloat16))
            self.last = last
        return last[1]

    def clear(self) -> None:
        self.last = None


def bf16_linear_class() -> Any:
    import torch
    import torch.nn.functional as F  # noqa: N812 - torch's own name

    class Bf16Linear(torch.nn.Module):
        """y = float32(bf16(x) · bf16(W)ᵀ) + b: an ``nn.Linear`` whose product runs in bf16 and whose input and
        output stay fp32 (the bias is added in fp32). ``cast`` rounds the input (shared by a model's layers)."""

        def __init__(self, linear: torch.nn.Module, cast: LastCast) -> None:
            super().__init__()
            weight = linear.weight.detach()
            if not isinstance(linear, torch.nn.Linear):  # transformers' Conv1D (GPT-2): y = x·W + b, W [in, out]
                weight = weight.t()
            self.out_features, self.in_features = weight.shape
            self.weight = torch.nn.Parameter(weight.to(torch.bfloat16).contiguous(), requires_grad=False)
            bias = linear.bias
            self.bias = None if bias is None else torch.nn.Parameter(bias.detach().float(), requires_grad=False)
            self.cast = cast

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = F.linear(self.cast(x), self.weight).to(x.dtype)
            return y if self.bias is None else y + self.bias

    return Bf16Linear


def output_heads(model: Any) -> set[int]:
    """The ids of the modules whose outputs are the model's answer: an LM's output embeddings, a sequence
    classifier's ``classifier``/``score`` head, and every module inside them."""
    import torch

    heads = [model.get_output_embeddings()] if hasattr(model, "get_output_embeddings") else []
    heads += [getattr(model, name, None) for name in ("classifier", "score")]
    return {id(m) for head in heads if isinstance(head, torch.nn.Module) for m in head.modules()}


def with_bf16_matmuls(model: Any) -> Any:
    """``model`` (fp32, in place) with every ``nn.Linear`` (and transformers' ``Conv1D``) outside its output heads
    (:func:`output_heads`) replaced by a bf16-product one; embeddings, norms, the heads and everything else stay
    fp32. Returns the model, marked with :data:`MARK`; a model with nothing to convert is refused in one line."""
    import torch
    from transformers.pytorch_utils import Conv1D

    if any(p.dtype != torch.float32 for p in model.parameters() if p.is_floating_point()):
        raise ValueError(f"{type(model).__name__} is not all fp32; load it in fp32 before running its products in bf16.")
    linear_class, cast, heads = bf16_linear_class(), LastCast(), output_heads(model)
    converted, plain = 0, (torch.nn.Linear, Conv1D, onednn_linear_class())
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) in plain and id(child) not in heads:
                setattr(parent, name, linear_class(child, cast))
                converted += 1
    if not converted:
        raise ValueError(f"{type(model).__name__} has no linear layers to run in bf16 on this CPU; use dtype='fp32'.")
    for runs in pass_modules(model):
        runs.register_forward_hook(lambda *_: cast.clear())  # the last input is not kept past a forward pass
    setattr(model, MARK, torch.bfloat16)
    return model


def pass_modules(model: Any) -> list[Any]:
    """The modules a forward pass of ``model`` can start at: the model, and its decoder, which the token-tree
    routes call alone (:func:`dialeval.models.lm.tree_logits` with ``states=True``), each once."""
    import torch

    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    return list({id(m): m for m in (model, decoder) if isinstance(m, torch.nn.Module)}.values())


def placed(model: Any, dtype: Any, device: Any, what: str = "model") -> Any:
    """``model`` on ``device`` in ``dtype`` (resolved torch objects): bf16 on a CPU converts an fp32 copy of its
    weights in place, once (:func:`with_bf16_matmuls`); a model already converted that way is refused in one line
    for any other dtype, since casting it would undo the conversion. fp32 on a CPU where oneDNN is preferred (an AMD
    CPU with AVX-512, or as ``$DIALEVAL_FP32_LINEAR`` says) runs its linear layers through oneDNN
    (:mod:`dialeval.models.onednn_linear`)."""
    import torch

    if cpu_bf16(dtype, device):
        if compute_dtype(model) is not None:
            return model
        return with_bf16_matmuls(model.to(device=device, dtype=torch.float32))
    if compute_dtype(model) is not None:
        name = str(dtype).removeprefix("torch.")
        raise ValueError(f"this {what} runs its products in bf16 (loaded with dtype='bf16' on a CPU); load it again "
                         f"for dtype={SHORT_NAMES.get(name, name)!r}.")
    model = model.to(device=device, dtype=dtype)
    if str(dtype) == "torch.float32" and getattr(device, "type", str(device)) == "cpu" and prefers_onednn():
        return with_onednn_linears(model)  # oneDNN's fp32 kernels instead of MKL's
    return model


def compute_dtype(model: Any) -> Any:
    """The dtype a model's matrix products run in: bf16 for a :func:`with_bf16_matmuls` model, else ``None``."""
    return getattr(model, MARK, None)
