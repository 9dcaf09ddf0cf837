"""Floating-point tolerances derived from the computation, not read off one machine.

Two fp32 results of the same model (a token tree against each prompt from scratch, ONNX Runtime against torch, one
CPU kind against another) differ because their kernels add the same products in another order: AVX2, AVX-512 and
AMX GEMMs block and fuse differently, and a shorter or longer row changes the blocking too. The derivation:

- one fp32 rounding is at most ``eps = 2**-23`` (1.19e-7) relative;
- a dot product of ``terms`` products summed in another order differs by about ``sqrt(terms) * eps`` relative to
  the size of its terms (rounding errors add as a random walk; ``terms * eps`` is the never-reached worst case);
- each of ``layers`` stacked layers adds its own such error on top of what it was given (residual streams carry
  the errors forward, so they add up linearly in the depth);
- a final softmax/log-sum-exp over ``vocab`` logits is one more sum of ``vocab`` terms;
- ``magnitude`` scales it when the result is smaller than the terms it is made of (cancellation).

A tolerance therefore shrinks with a small model and grows with a deep, wide one, and a real bug (a wrong mask, a
dropped token: changes of 1e-2 and more) stays far outside it.
"""

from __future__ import annotations

import math

import numpy as np

FP32_EPS = float(np.finfo(np.float32).eps)  # 2**-23

#: SmolLM2-135M (the offline judge and FULL model): 30 layers, hidden 576, MLP 1536 (its widest sum), vocab 49,152.
SMOLLM2 = {"layers": 30, "terms": 1536, "vocab": 49152}


def fp32_rtol(terms: int, layers: int = 1, vocab: int = 0, magnitude: float = 1.0) -> float:
    """Relative tolerance of an fp32 result of ``layers`` layers whose widest sum has ``terms`` products, with an
    optional final softmax over ``vocab`` logits (see the module's derivation)."""
    return FP32_EPS * (layers * math.sqrt(terms) + math.sqrt(vocab)) * magnitude


#: The two routes of the SmolLM2 judge and FULL: 1.19e-7 × (30 × √1536 + √49152) ≈ 1.7e-4 relative.
SMOLLM2_RTOL = fp32_rtol(**SMOLLM2)
#: The tests' tiny causal LMs (``dialeval.testing.blenderbot.build_tiny_causal_lm``): 2 layers, hidden 32, MLP 64
#: (Llama) or 128 (GPT-2), a vocabulary of at most 400.
TINY_LM = {"layers": 2, "terms": 128, "vocab": 400}
#: 1.19e-7 × (2 × √128 + √400) ≈ 5.1e-6 relative.
TINY_LM_RTOL = fp32_rtol(**TINY_LM)
