"""Embedding a corpus chunk by chunk, behind every encoder of :mod:`dialeval.models.encoders`.

Each distinct text is embedded once (:func:`unique_texts`); the distinct texts are cut in chunks of
:data:`CHUNK_SIZE` (:func:`chunk_bounds`), each tokenized once, embedded in length-sorted batches within the
device's padded-token budget (:func:`default_max_tokens`) and released before the next (:func:`iter_embeddings`),
so the working memory is bounded whatever the corpus size; :func:`encode_streamed` gathers the chunks into one
float32 matrix. Import-light: no torch here (an encoder brings it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from dialeval.io.validation import check_texts
from dialeval.models.runtime import progress_bar

#: Default batching (measured by the bf16/fp32 batching benchmark in ``benchmarks/``): length-sorted batches of up to
#: 256 texts and, on CPU, at most 1,024 padded tokens (8,192 on an accelerator). On MiniLM, 1 CPU thread,
#: 2.07x the throughput of fixed batches of 32 in fp32 and 1.68x in bf16, with the same clusters.
BATCH_SIZE = 256
CPU_MAX_TOKENS = 1024
ACCELERATOR_MAX_TOKENS = 8192
#: ONNX Runtime on CPU runs best on smaller batches (the encoder speed benchmark in ``benchmarks/``): 512 padded tokens.
ONNX_CPU_MAX_TOKENS = 512


def default_max_tokens(device: Any, backend: str = "torch") -> int:
    """The padded-token budget of one batch on ``device`` with ``backend`` (see :data:`BATCH_SIZE`)."""
    if str(getattr(device, "type", device)) != "cpu":
        return ACCELERATOR_MAX_TOKENS
    return CPU_MAX_TOKENS if backend == "torch" else ONNX_CPU_MAX_TOKENS
CHUNK_SIZE = 1024  # distinct texts tokenized, embedded and released at a time (bounded working memory)
MIN_TAIL = 64  # a last chunk smaller than this joins the previous one (faiss searches < 20 rows another way)


def check_responses(values: Any, field: str) -> list[str]:
    """:func:`check_texts` plus: no empty (or whitespace-only) strings, which have no token to embed."""
    texts = check_texts(values, field)
    for i, t in enumerate(texts):
        if not t.strip():
            raise ValueError(
                f"`{field}[{i}]` is an empty string; an encoder has no token to embed for it. "
                "Drop empty responses or replace them (e.g. with a placeholder such as '...') before scoring."
            )
    return texts


def unique_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Distinct texts in first-seen order and, per input, its index among them (each text is embedded once)."""
    index: dict[str, int] = {}
    inverse = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))
    return list(index), inverse


class NoTokensError(ValueError):
    """A text that tokenizes to no tokens (raised by ``embed_chunk``, reported with its input position)."""

    def __init__(self, text: str) -> None:
        super().__init__(f"{text!r} tokenizes to no tokens")
        self.text = text


def chunk_bounds(n: int, chunk_size: int = CHUNK_SIZE, min_tail: int = MIN_TAIL) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive chunks of ``n`` items, ``chunk_size`` each; a last chunk shorter
    than ``min_tail`` is merged into the one before it."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"`chunk_size` must be a positive int, got {chunk_size!r}.")
    starts = list(range(0, n, chunk_size))
    if len(starts) > 1 and n - starts[-1] < min_tail:
        starts.pop()
    return [(a, b) for a, b in zip(starts, starts[1:] + [n])]


def iter_embeddings(encoder: Any, unique: Sequence[str], *, texts: Sequence[str] | None = None,
                    field: str = "texts", batch_size: int = BATCH_SIZE, max_tokens: int | None = None,
                    progress: bool | None = None, chunk_size: int = CHUNK_SIZE) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, embeddings of unique[start:stop])`` chunk by chunk (see :func:`chunk_bounds`).

    Each chunk is tokenized once, embedded in length-sorted batches and released before the next, so the
    working memory is bounded by ``chunk_size`` whatever the corpus size. ``unique`` should hold distinct
    texts (:func:`unique_texts`); ``texts`` (the original list) only locates a bad text in error messages.
    Encoders without an ``embed_chunk`` method get their ``encode`` called per chunk. ``max_tokens=None``
    is the device's default budget (:func:`default_max_tokens`).
    """
    embed = getattr(encoder, "embed_chunk", None)
    if max_tokens is None:
        max_tokens = default_max_tokens(getattr(encoder, "device", "cpu"), getattr(encoder, "backend", "torch"))
    bar = progress_bar(total=len(unique), desc=f"embedding {field}", disable=None if progress is None else not progress)
    try:
        for start, stop in chunk_bounds(len(unique), chunk_size):
            chunk = list(unique[start:stop])
            try:
                emb = (embed(chunk, batch_size=batch_size, max_tokens=max_tokens) if embed is not None
                       else encoder.encode(chunk, field=field, batch_size=batch_size, progress=False))
            except NoTokensError as exc:
                where = (texts if texts is not None else unique).index(exc.text)
                raise ValueError(f"`{field}[{where}]` tokenizes to no tokens; drop or replace it before scoring.") from None
            bar.update(len(chunk))
            yield start, np.asarray(emb, dtype=np.float32)
    finally:
        bar.close()


def encode_streamed(encoder: Any, texts: Sequence[str], *, field: str = "texts", batch_size: int = BATCH_SIZE,
                    progress: bool | None = None, max_tokens: int | None = None,
                    chunk_size: int = CHUNK_SIZE) -> np.ndarray:
    """All embeddings ``(n, dim)`` of ``texts``: each distinct text embedded once, chunk by chunk, into one
    preallocated float32 matrix (no per-row lists, no second copy when all texts are distinct)."""
    texts = check_responses(texts, field)
    unique, inverse = unique_texts(texts)
    out: np.ndarray | None = None
    for start, emb in iter_embeddings(encoder, unique, texts=texts, field=field, batch_size=batch_size,
                                      max_tokens=max_tokens, progress=progress, chunk_size=chunk_size):
        if out is None:
            out = np.empty((len(unique), emb.shape[1]), dtype=np.float32)
        out[start:start + len(emb)] = emb
    assert out is not None  # check_responses rejects an empty list
    return out if len(unique) == len(texts) else out[inverse]
