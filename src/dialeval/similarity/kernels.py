"""Kernels of response sets as explicit feature maps, so that ``K = Z Zᵀ`` and the n×n or d×d form can be used.

- **n-gram kernel** (the Vendi Score's text kernel, Friedman & Dieng 2023, ``vendi_score.text_utils``): for
  each order n, the L2-normalised vector of n-gram counts of a response; ``K = (1/|N|) Σ_n X_n X_nᵀ``, the mean
  cosine similarity over orders. As features: ``Z = [X_1 … X_|N|] / √|N|``. A response shorter than the largest
  order (``"ok"``, ``"Yes ."``) has no n-gram of that order: its row is the mean over the orders it has
  (``Z_i / ‖Z_i‖``), so that K_ii = 1 and scores stay in [1, n]. Here dialeval departs from the reference, whose
  zero block leaves K_ii < 1 (scores outside [1, n]); for responses with n-grams of every order both agree.
- **embedding kernel**: cosine similarity of sentence embeddings, ``Z`` = L2-normalised embeddings.

Embeddings come from :mod:`dialeval.models.encoders` (the offline MiniLM by default), each distinct text encoded once
for all sets; the last few encodings are kept per process, so Vendi, Sent-BERT and Sem-Ent's per-set adapter
share one pass over the same texts.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.io.text import get_tokenizer
from dialeval.io.validation import check_positive_ints, check_text_sets, is_int
from dialeval.lexical.ngrams import iter_ngrams
from dialeval.models.encoders import BATCH_SIZE, get_encoder
from dialeval.models.runtime import ModelCache
from dialeval.registry import MAX_BATCH

KERNELS = ("embedding", "ngram")
MAX_ORDER = 10
DEFAULT_ORDERS = (1, 2, 3, 4)  # vendi_score.text_utils.ngram_vendi_score's default
_EMBEDDINGS = ModelCache(max_size=2)  # (encoder, dtype, texts) -> embeddings of the texts
CACHE_MAX_TEXTS = 200_000  # larger inputs are not kept (≈ 300 MB of float32 at 384 dimensions)


def check_kernel(kernel: Any) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"`kernel`={kernel!r} is not known; use 'embedding' (sentence embeddings, cosine) or "
                         "'ngram' (n-gram counts, cosine).")
    return kernel


def check_orders(n: Any) -> tuple[int, ...]:
    """n-gram orders: positive ints up to :data:`MAX_ORDER` (``None`` = 1..4)."""
    orders = DEFAULT_ORDERS if n is None else check_positive_ints(n, "n")
    if max(orders) > MAX_ORDER:
        raise ValueError(f"`n`={list(orders)}: n-gram orders go from 1 to {MAX_ORDER}.")
    return orders


def check_batch_size(batch_size: Any) -> int:
    if not is_int(batch_size) or not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"`batch_size` must be an int from 1 to {MAX_BATCH}, got {batch_size!r}.")
    return int(batch_size)


def check_sets(predictions: Any, min_size: int) -> list[list[str]]:
    """Response sets, each with at least ``min_size`` non-empty responses."""
    sets = check_text_sets(predictions, "predictions", min_size=min_size)
    for i, s in enumerate(sets):
        for j, t in enumerate(s):
            if not t.strip():
                raise ValueError(f"`predictions[{i}][{j}]` is an empty string; it has no n-gram or embedding to "
                                 "compare. Drop it or replace it (e.g. with '...') before scoring.")
    return sets


def ngram_features(texts: Sequence[str], orders: Sequence[int], tokenizer: Any = "casual") -> np.ndarray:
    """``Z`` (len(texts) × distinct n-grams of all orders): per order, L2-normalised count rows, the blocks
    concatenated and scaled by ``1/√|orders|`` so that ``Z Zᵀ`` is the mean cosine kernel over orders; each row
    has unit norm (a short text's over the orders it has, see the module)."""
    tok = get_tokenizer(tokenizer)
    tokens = [tok(t) for t in texts]
    blocks = []
    for n in orders:
        counts = [Counter(iter_ngrams(t, n)) for t in tokens]
        vocab: dict[Any, int] = {}
        for c in counts:
            for g in c:
                vocab.setdefault(g, len(vocab))
        x = np.zeros((len(texts), len(vocab)), dtype=np.float64)
        for i, c in enumerate(counts):
            for g, k in c.items():
                x[i, vocab[g]] = k
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        blocks.append(np.divide(x, norms, out=np.zeros_like(x), where=norms > 0))
    z = np.concatenate(blocks, axis=1) / math.sqrt(len(orders))
    norms = np.linalg.norm(z, axis=1, keepdims=True)  # √(orders present / |N|): 1 unless the text is short
    empty = np.flatnonzero(norms[:, 0] == 0)
    if empty.size:
        raise ValueError(f"response {texts[int(empty[0])]!r:.60} has no token under the {tokenizer!r} tokenizer, so "
                         "no n-gram to compare; drop it or use another tokenizer.")
    return z / norms


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (float64); a zero row is an error (no direction to compare)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"embedding row {int(np.flatnonzero(norms[:, 0] == 0)[0])} is all zeros; its cosine "
                         "similarity is undefined.")
    return x / norms


def _fingerprint(texts: Sequence[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def set_embeddings(sets: Sequence[Sequence[str]], *, encoder: Any = None, device: Any = None, dtype: Any = None,
                   batch_size: int = BATCH_SIZE, progress: bool | None = None) -> tuple[list[np.ndarray], Any]:
    """The embeddings of each set (one float32 matrix per set) and the encoder; every distinct text of all
    sets is encoded once, and the last two encodings (of up to :data:`CACHE_MAX_TEXTS` texts) are reused when
    the same texts come again."""
    enc = get_encoder(encoder, device=device, dtype=dtype)
    flat = [t for s in sets for t in s]
    key = (enc.name, enc.revision, enc.dtype_name, getattr(enc, "backend", "torch"), str(getattr(enc, "device", "")),
           _fingerprint(flat))
    def encode() -> np.ndarray:
        return enc.encode(flat, field="predictions", batch_size=batch_size, progress=progress)

    emb = _EMBEDDINGS.get(key, encode) if len(flat) <= CACHE_MAX_TEXTS else encode()
    bounds = np.cumsum([0] + [len(s) for s in sets])
    return [emb[a:b] for a, b in zip(bounds[:-1], bounds[1:])], enc
