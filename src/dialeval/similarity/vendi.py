"""The Vendi Score (Friedman & Dieng, TMLR 2023): the effective number of distinct responses in a set.

For a set of n responses with a positive semidefinite similarity kernel K (K_ii = 1), let λ_1..λ_n be the
eigenvalues of K/n (they sum to 1). The Vendi Score of order q is the exponential of their Rényi entropy,

    VS_q = exp( ln(Σ_i λ_iᵠ) / (1 − q) ),   VS_1 = exp(−Σ_i λ_i ln λ_i),   VS_∞ = 1 / max_i λ_i,

so it ranges from 1 (all responses identical) to n (all orthogonal). With K = Z Zᵀ (features Z, n × d), the
non-zero eigenvalues of K/n = Z Zᵀ/n equal those of Zᵀ Z/n, so the n×n or the d×d matrix is used, whichever
is smaller. Eigenvalues below ``max(n, d) · ε · λ_max`` are rounding noise of a rank-deficient K and count
as 0 (this matters only for q < 1, and makes q = 0 the numerical rank).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dialeval.io.signature import make_signature
from dialeval.io.text import get_tokenizer, tokenizer_name
from dialeval.models.encoders import BATCH_SIZE
from dialeval.similarity.kernels import (
    check_batch_size,
    check_kernel,
    check_orders,
    check_sets,
    ngram_features,
    set_embeddings,
    unit_rows,
)

MAX_Q = 1000.0


def check_q(q: Any) -> float:
    """The order q: a number in [0, 1000] or infinity (``math.inf``, ``"inf"``); numeric strings are read."""
    value = q
    if isinstance(q, str):
        try:
            value = float(q)
        except ValueError:
            value = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_Q:
        raise ValueError(f"`q` must be a number from 0 to {MAX_Q:g} or 'inf' (1 = Shannon, the default), got {q!r}.")
    return float(value)


def kernel_eigenvalues(z: np.ndarray) -> np.ndarray:
    """Eigenvalues of ``Z Zᵀ / n`` computed through the smaller of ``Z Zᵀ`` (n×n) and ``Zᵀ Z`` (d×d), with
    rounding noise (below ``max(n, d) · ε · λ_max``) set to 0."""
    z = np.asarray(z, dtype=np.float64)
    n, d = z.shape
    gram = z @ z.T if n <= d else z.T @ z
    w = np.linalg.eigvalsh(gram / n)
    tol = max(n, d) * np.finfo(np.float64).eps * max(float(w.max()), 0.0)
    return np.where(w > tol, w, 0.0)


def hill_number(p: np.ndarray, q: float) -> float:
    """``exp(H_q(p))`` of the eigenvalues ``p`` (zeros ignored): Shannon at q = 1, 1/max p at q = ∞.

    Computed stably for every q. With s = Σ p, X = −ln p and r = 1 − q, ln Σ p^q = ln s + ln(Σ p·e^{rX} / s):
    for |r| < 1/2 the second term is ``log1p(Σ p·expm1(rX) / s)`` (no cancellation near q = 1; r = 0 is the
    Shannon limit), else a log-sum-exp of q·ln p (no underflow of p^q at large q). A sum that is 1 up to rounding
    is taken as 1, so ln s / r cannot turn rounding into a wrong number near q = 1. Both kernels have K_ii = 1; for
    other features (rows not of unit norm) the unnormalised formula is kept, and a result beyond float range is a
    ``ValueError``."""
    p = np.asarray(p, dtype=np.float64)
    p = p[p > 0]
    total = math.fsum(p)
    if abs(total - 1.0) <= 64 * len(p) * np.finfo(np.float64).eps:
        p, total = p / total, 1.0
    logp = np.log(p)
    if math.isinf(q):
        return 1.0 / float(p.max())
    r = 1.0 - q
    if r == 0.0:
        return math.exp(-math.fsum(p * logp))
    if abs(r) < 0.5:
        log_sum = math.log(total) + math.log1p(math.fsum(p * np.expm1(-r * logp)) / total)
    else:
        top = float(logp.max())
        log_sum = q * top + math.log(math.fsum(np.exp(q * (logp - top))))
    if log_sum / r > 709.0:
        raise ValueError(f"the Vendi Score of order q={q:g} overflows: the kernel's eigenvalues sum to {total:.6g}, not "
                         "1; give features whose rows have unit norm (K_ii = 1).")
    return math.exp(log_sum / r)


def vendi_from_features(z: np.ndarray, q: float = 1.0) -> float:
    """VS_q of the kernel ``K = Z Zᵀ`` (rows of ``Z`` are the responses' features)."""
    return hill_number(kernel_eigenvalues(z), check_q(q))


def vendi_signature(kernel: str, q: float, *, encoder: Any = None, orders: tuple[int, ...] = (),
                    tokenizer: str = "casual") -> str:
    qs = "inf" if math.isinf(q) else q
    if kernel == "ngram":
        return make_signature("vendi_score", kernel="ngram", q=qs, n=orders, tok=tokenizer)
    return make_signature("vendi_score", kernel="embedding", q=qs, encoder=encoder.revision, dtype=encoder.dtype_name,
                          backend=getattr(encoder, "backend", "torch"))


def compute_vendi(predictions: Any, kernel: str = "embedding", q: Any = 1.0, n: Any = None, tokenizer: Any = "casual",
                  encoder: Any = None, device: Any = None, dtype: Any = None, batch_size: int = BATCH_SIZE,
                  progress: bool | None = None) -> dict[str, Any]:
    """VS_q of each response set in ``predictions`` (``scores``), their mean (``vendi_score``) and a signature."""
    kernel = check_kernel(kernel)
    qv = check_q(q)
    orders = check_orders(n)
    get_tokenizer(tokenizer)  # checked also for the embedding kernel, which does not use it
    check_batch_size(batch_size)
    sets = check_sets(predictions, min_size=1)
    if kernel == "ngram":
        feats = [ngram_features(s, orders, tokenizer) for s in sets]
        signature = vendi_signature(kernel, qv, orders=orders, tokenizer=tokenizer_name(tokenizer))
    else:
        embs, enc = set_embeddings(sets, encoder=encoder, device=device, dtype=dtype, batch_size=batch_size,
                                   progress=progress)
        feats = [unit_rows(e) for e in embs]
        signature = vendi_signature(kernel, qv, encoder=enc)
    scores = [hill_number(kernel_eigenvalues(z), qv) for z in feats]
    return {"vendi_score": math.fsum(scores) / len(scores), "scores": scores, "kernel": kernel,
            "q": "inf" if math.isinf(qv) else qv, "num_sets": len(scores), "signature": signature}
