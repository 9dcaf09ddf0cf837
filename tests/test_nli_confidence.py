"""Confidence NLI Diversity as the paper defines it (Stasaski & Hearst 2022, §3.3: the probability mass
of the *predicted* class) against the other reading ``confidence_soft`` (Σ P(c) − P(e) over all pairs),
on hand-made tables; and the label-order guard on tiny RoBERTa models with permuted ``id2label``."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.nli.core import (
    CANONICAL,
    VARIANTS,
    compute_nli_diversity,
    confidence_score,
    confidence_soft_score,
    get_classifier,
)
from dialeval.testing.roberta import CNE, tiny_nli_model

NEC = ("neutral", "entailment", "contradiction")

# rows (P(c), P(n), P(e)); set [a, b, c] has 6 ordered pairs, set [x, y] 2
TABLE = {
    ("a", "b"): (0.7, 0.2, 0.1), ("a", "c"): (0.1, 0.3, 0.6), ("b", "a"): (0.2, 0.5, 0.3),
    ("b", "c"): (0.5, 0.4, 0.1), ("c", "a"): (0.3, 0.3, 0.4), ("c", "b"): (0.1, 0.8, 0.1),
    ("x", "y"): (0.9, 0.05, 0.05), ("y", "x"): (0.2, 0.2, 0.6),
}


class Scripted:
    def __init__(self, order=CNE):
        self.id2label = {i: n for i, n in enumerate(order)}
        self.cols = [CANONICAL.index(n) for n in order]

    def __call__(self, pairs):
        return np.array([[TABLE[p][c] for c in self.cols] for p in pairs])


def test_paper_confidence_and_soft_reading_by_hand():
    out = compute_nli_diversity([["a", "b", "c"], ["x", "y"]], Scripted(), "confidence")
    # paper (§3.3), predicted class only: +0.7 − 0.6 + 0 + 0.5 − 0.4 + 0 = 0.2 ; +0.9 − 0.6 = 0.3
    assert out["scores_by_variant"]["confidence"] == pytest.approx([0.2, 0.3], abs=1e-15)
    # soft: ΣP(c) − ΣP(e) = (0.7+0.1+0.2+0.5+0.3+0.1) − (0.1+0.6+0.3+0.1+0.4+0.1) = 1.9 − 1.6 = 0.3 ;
    #       (0.9 + 0.2) − (0.05 + 0.6) = 0.45
    assert out["scores_by_variant"]["confidence_soft"] == pytest.approx([0.3, 0.45], abs=1e-15)
    soft = compute_nli_diversity([["a", "b", "c"], ["x", "y"]], Scripted(), "confidence_soft")
    assert soft["nli_diversity"] == pytest.approx(0.375, abs=1e-15)
    assert set(out["scores_by_variant"]) == set(VARIANTS)


def test_the_two_readings_can_disagree_in_sign():
    rows = [(0.3, 0.2, 0.5),   # entailment predicted: paper −0.5, soft 0.3 − 0.5 = −0.2
            (0.4, 0.45, 0.15)]  # neutral predicted:   paper 0,    soft 0.4 − 0.15 = +0.25
    assert confidence_score(rows) == pytest.approx(-0.5, abs=1e-15)
    assert confidence_soft_score(rows) == pytest.approx(0.05, abs=1e-15)


def test_signature_records_the_variant():
    from dialeval.nli.nli_diversity import compute

    out = compute([["a", "b", "c"]], model=Scripted(), variant="confidence_soft")
    assert "|variant:confidence_soft|" in out["signature"]
    assert out["nli_diversity"] == pytest.approx(0.3, abs=1e-15)
    with pytest.raises(ValueError, match="variant"):
        compute([["a", "b"]], model=Scripted(), variant="soft")


@pytest.fixture(scope="module")
def permuted_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("nli_perm")
    return tiny_nli_model(root / "cne", CNE), tiny_nli_model(root / "nec", NEC, label_case="lower")


RESPONSES = [["Hello , how are you today ?", "I am fine , thank you .", "You're really boring .",
              "Let's go to the movies tonight !", "Yes . No . Maybe . Okay ."]]


def test_permuted_label_order_is_remapped_at_load(permuted_models):
    cne, nec = permuted_models
    a = get_classifier(str(cne), progress=False)
    b = get_classifier(str(nec), progress=False)
    assert b.id2label == {0: "neutral", 1: "entailment", 2: "contradiction"}
    ra = compute_nli_diversity(RESPONSES, a, "confidence")
    rb = compute_nli_diversity(RESPONSES, b, "confidence")
    assert ra["counts"] == rb["counts"]
    for v in VARIANTS:
        np.testing.assert_allclose(ra["scores_by_variant"][v], rb["scores_by_variant"][v], rtol=1e-5, atol=1e-6)
    assert sum(1 for c in CANONICAL if ra["counts"][c][0] > 0) >= 2  # the mapping is exercised


def test_unnamed_labels_are_refused_at_load_in_one_line(permuted_models, tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    cne, _ = permuted_models
    model = AutoModelForSequenceClassification.from_pretrained(cne)
    model.config.id2label = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.save_pretrained(tmp_path / "generic")
    AutoTokenizer.from_pretrained(cne).save_pretrained(tmp_path / "generic")
    with pytest.raises(ValueError, match="not the three NLI classes") as err:
        get_classifier(str(tmp_path / "generic"), progress=False)
    assert "\n" not in str(err.value)
