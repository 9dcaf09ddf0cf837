"""Sem-Ent streams: bounded chunks, each distinct text embedded (and tokenized) once, labels unchanged."""

import zlib

import numpy as np
import pytest

from dialeval.models.encoders import (
    MIN_TAIL,
    chunk_bounds,
    default_encoder_path,
    encode_streamed,
    iter_embeddings,
)
from dialeval.semantic.space import SemanticSpace

DIM = 8


def fake_embedding(text: str) -> np.ndarray:
    """A deterministic pseudo-random vector per text (seeded by its CRC32)."""
    return np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIM).astype(np.float32)


class CountingEncoder:
    """Records every chunk it is asked to embed: what the streaming code holds at once."""

    name, revision, dtype_name = "fake", "fake@1", "fp32"

    def __init__(self) -> None:
        self.chunks: list[int] = []
        self.seen: list[str] = []

    def embed_chunk(self, texts, *, batch_size=32, max_tokens=None):
        self.chunks.append(len(texts))
        self.seen.extend(texts)
        return np.stack([fake_embedding(t) for t in texts])

    def encode(self, texts, **kw):  # never used when embed_chunk exists
        raise AssertionError("encode() should not be called")


def expected_labels(space: SemanticSpace, texts: list[str]) -> np.ndarray:
    """Nearest centroid by brute force in numpy: normalise, centre, project, argmin of squared distance."""
    x = np.stack([fake_embedding(t) for t in texts]).astype(np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    p = (x - space.pca.mean) @ space.pca.components.T.astype(np.float64)
    d = ((p[:, None, :] - space.centroids[None].astype(np.float64)) ** 2).sum(-1)
    return d.argmin(1)


@pytest.fixture(scope="module")
def space():
    refs = [f"reference {i}" for i in range(300)]
    return SemanticSpace.from_embeddings(np.stack([fake_embedding(t) for t in refs]), k=4, texts=refs)


def test_chunk_bounds():
    assert chunk_bounds(10, 4, min_tail=2) == [(0, 4), (4, 8), (8, 10)]
    assert chunk_bounds(10, 4, min_tail=3) == [(0, 4), (4, 10)]  # a 2-item tail joins the previous chunk
    assert chunk_bounds(3, 4) == [(0, 3)]
    assert chunk_bounds(0, 4) == []
    with pytest.raises(ValueError, match="chunk_size"):
        chunk_bounds(10, 0)


def test_assign_holds_at_most_one_chunk_and_embeds_each_distinct_text_once(space):
    texts = [f"response {i % 1500}" for i in range(3000)]  # 1,500 distinct, each twice
    enc = CountingEncoder()
    space.encoder = enc
    labels = space.assign(texts, chunk_size=128)
    assert max(enc.chunks) < 128 + MIN_TAIL
    assert len(enc.chunks) == 12  # 1500 = 11 × 128 + 92 (the 92-item tail stays its own chunk)
    assert sorted(enc.seen) == sorted(set(texts))
    np.testing.assert_array_equal(labels, expected_labels(space, texts))


def test_chunk_size_does_not_change_labels(space):
    texts = [f"item {i}" for i in range(700)]
    space.encoder = CountingEncoder()
    whole = space.assign(texts, chunk_size=10_000)
    space.encoder = CountingEncoder()
    np.testing.assert_array_equal(space.assign(texts, chunk_size=50), whole)
    np.testing.assert_array_equal(whole, expected_labels(space, texts))


def test_encode_streamed_fills_rows_in_input_order():
    texts = ["b", "a", "b", "c", "a"]
    enc = CountingEncoder()
    out = encode_streamed(enc, texts, chunk_size=2)
    np.testing.assert_array_equal(out, np.stack([fake_embedding(t) for t in texts]))
    assert enc.seen == ["b", "a", "c"]


def test_a_text_without_tokens_is_reported_at_its_input_position():
    class NoTokens(CountingEncoder):
        def embed_chunk(self, texts, **kw):
            from dialeval.models.encoders import NoTokensError

            bad = [t for t in texts if t == "\u200b"]
            if bad:
                raise NoTokensError(bad[0])
            return super().embed_chunk(texts, **kw)

    with pytest.raises(ValueError, match=r"`predictions\[3\]` tokenizes to no tokens"):
        list(iter_embeddings(NoTokens(), ["a", "b", "\u200b"], texts=["a", "b", "a", "\u200b"],
                             field="predictions", chunk_size=1))


@pytest.mark.slow
def test_minilm_tokenizes_each_text_once_and_matches_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    from dialeval.models.encoders import SentenceTransformerEncoder

    texts = ["Hello , how are you ?", "Yes .", "Thank you very much for the lovely dinner last night .", "Okay .",
             "Let's go to the movies tonight !", "Yes ."]
    enc = SentenceTransformerEncoder(default_encoder_path())
    calls: list[int] = []
    preprocess = enc.model.preprocess
    enc.model.preprocess = lambda batch, **kw: calls.append(len(batch)) or preprocess(batch, **kw)
    got = enc.encode(texts, batch_size=2, chunk_size=3)
    assert sum(calls) == 5  # five distinct texts, each tokenized once
    want = SentenceTransformer(str(default_encoder_path()), device="cpu").encode(texts)
    np.testing.assert_allclose(got, want, atol=2e-6)
