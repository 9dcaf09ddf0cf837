"""NLI Diversity: label mapping, the three variants on hand-made probability tables, pair dedup,
the batched transformers classifier on tiny offline RoBERTa models, and the evaluate module."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialeval.models.runtime import ModelNotAvailableError
from dialeval.nli.core import (
    CANONICAL,
    NLIClassifier,
    NLISetScorer,
    baseline_score,
    canonical_label_order,
    class_counts,
    compute_nli_diversity,
    confidence_score,
    dedup_pairs,
    neutral_score,
    ordered_pairs,
    to_canonical,
)
from dialeval.testing.roberta import CNE, ENC, tiny_nli_model


class ScriptedClassifier:
    """Returns chosen (C, N, E) rows per (premise, hypothesis) pair, laid out in ``label_order``;
    counts calls and the pairs it was asked about."""

    def __init__(self, table: dict[tuple[str, str], tuple[float, float, float]], label_order=CNE,
                 default=(1 / 3, 1 / 3, 1 / 3)) -> None:
        self.table = table
        self.default = default
        self.id2label = {i: name.upper() for i, name in enumerate(label_order)}
        self.columns = [CANONICAL.index(name) for name in label_order]
        self.calls = 0
        self.seen: list[tuple[str, str]] = []

    def __call__(self, pairs):
        self.calls += 1
        self.seen.extend(pairs)
        rows = [self.table.get(tuple(p), self.default) for p in pairs]
        return np.array([[row[c] for c in self.columns] for row in rows])


# Set 1: a, b, c (6 ordered pairs); set 2: x, y (2 pairs). Rows are (P(c), P(n), P(e)).
TABLE = {
    ("a", "b"): (0.7, 0.2, 0.1),  # contradiction, +0.7
    ("a", "c"): (0.1, 0.3, 0.6),  # entailment,    -0.6
    ("b", "a"): (0.2, 0.5, 0.3),  # neutral,        0
    ("b", "c"): (0.5, 0.4, 0.1),  # contradiction, +0.5
    ("c", "a"): (0.3, 0.3, 0.4),  # entailment,    -0.4
    ("c", "b"): (0.1, 0.8, 0.1),  # neutral,        0
    ("x", "y"): (0.9, 0.05, 0.05),  # contradiction, +0.9
    ("y", "x"): (0.2, 0.2, 0.6),  # entailment,    -0.6
}
SETS = [["a", "b", "c"], ["x", "y"]]


# ----------------------------------------------------------------------------- labels


def test_label_order_found_by_name_any_case():
    assert canonical_label_order({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}) == [0, 1, 2]
    assert canonical_label_order({0: "entailment", 1: "neutral", 2: "contradiction"}) == [2, 1, 0]
    assert canonical_label_order({"0": "Neutral", "1": "Entailment", "2": "Contradiction"}) == [2, 0, 1]


@pytest.mark.parametrize("id2label", [
    {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"},
    {0: "entailment", 1: "not_entailment"},
    {0: "contradiction", 1: "neutral", 2: "entailment", 3: "other"},
    {},
])
def test_non_nli_labels_are_an_error(id2label):
    with pytest.raises(ValueError, match="contradiction|id2label"):
        canonical_label_order(id2label)


# ----------------------------------------------------------------------------- algebra


def test_variants_on_hand_made_table():
    rows = np.array([TABLE[("a", "b")], TABLE[("a", "c")], TABLE[("b", "a")],
                     TABLE[("b", "c")], TABLE[("c", "a")], TABLE[("c", "b")]])
    assert class_counts(rows) == {"contradiction": 2, "neutral": 2, "entailment": 2}
    assert baseline_score(rows) == 0.0          # 2 - 2
    assert neutral_score(rows) == 2.0           # 2 + 2 - 2
    assert confidence_score(rows) == pytest.approx(0.7 - 0.6 + 0.5 - 0.4, abs=1e-15)


def test_argmax_ties_go_to_the_earlier_class():
    assert class_counts([[0.4, 0.4, 0.2]]) == {"contradiction": 1, "neutral": 0, "entailment": 0}
    assert class_counts([[0.2, 0.4, 0.4]]) == {"contradiction": 0, "neutral": 1, "entailment": 0}


def test_compute_with_scripted_classifier():
    clf = ScriptedClassifier(TABLE)
    out = compute_nli_diversity(SETS, clf, "confidence", return_probabilities=True)
    assert out["scores_by_variant"]["baseline"] == [0.0, 0.0]
    assert out["scores_by_variant"]["neutral"] == [2.0, 0.0]
    assert out["scores"] == pytest.approx([0.2, 0.3], abs=1e-12)
    assert out["nli_diversity"] == pytest.approx(0.25, abs=1e-12)
    assert out["counts"] == {"contradiction": [2, 1], "neutral": [2, 0], "entailment": [2, 1]}
    assert out["num_pairs"] == 8 and out["num_distinct_pairs"] == 8
    probs = out["probabilities"][0]
    assert probs["contradiction"][0][1] == 0.7 and probs["entailment"][2][0] == 0.4  # premise row, hypothesis col
    assert probs["neutral"][1][1] is None  # no self pairs
    assert compute_nli_diversity(SETS, clf, "baseline")["nli_diversity"] == 0.0
    assert compute_nli_diversity(SETS, clf, "neutral")["nli_diversity"] == 1.0


def test_label_order_independence_scripted():
    a = compute_nli_diversity(SETS, ScriptedClassifier(TABLE, CNE), "confidence")
    b = compute_nli_diversity(SETS, ScriptedClassifier(TABLE, ENC), "confidence")
    c = compute_nli_diversity(SETS, ScriptedClassifier(TABLE, ("neutral", "entailment", "contradiction")),
                              "confidence")
    assert a == b == c


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.floats(0.01, 1.0)] * 3), min_size=1, max_size=12), st.permutations([0, 1, 2]))
def test_variants_invariant_under_label_permutation(raw_rows, perm):
    probs = np.array(raw_rows) / np.array(raw_rows).sum(axis=1, keepdims=True)  # canonical C, N, E
    order = [CANONICAL[k] for k in perm]
    model_out = probs[:, perm]  # what a model with id2label in `order` returns
    back = to_canonical(model_out, dict(enumerate(order)))
    np.testing.assert_array_equal(back, probs)
    c = class_counts(probs)
    assert baseline_score(back) == c["contradiction"] - c["entailment"]
    assert neutral_score(back) == baseline_score(back) + c["neutral"]
    assert sum(c.values()) == len(raw_rows)
    assert confidence_score(back) == confidence_score(probs)
    assert abs(confidence_score(probs)) <= c["contradiction"] + c["entailment"]


def test_every_ordered_pair_is_classified_with_premise_first():
    assert ordered_pairs(3) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    clf = ScriptedClassifier({})
    compute_nli_diversity([["p", "q", "r", "s"]], clf)
    assert len(clf.seen) == 12 == 4 * 3
    assert set(clf.seen) == {(x, y) for x in "pqrs" for y in "pqrs" if x != y}


def test_duplicate_pairs_scored_once():
    sets = [["a", "b"], ["a", "b"], ["b", "a", "a"]]
    distinct, per_set = dedup_pairs(sets)
    assert distinct == [("a", "b"), ("b", "a"), ("a", "a")]
    assert per_set == [[0, 1], [0, 1], [1, 1, 0, 2, 0, 2]]
    clf = ScriptedClassifier({("a", "b"): (0.9, 0.05, 0.05), ("b", "a"): (0.1, 0.1, 0.8),
                              ("a", "a"): (0.1, 0.8, 0.1)})
    out = compute_nli_diversity(sets, clf, "baseline")
    assert clf.calls == 1 and len(clf.seen) == 3
    assert out["num_pairs"] == 10 and out["num_distinct_pairs"] == 3
    # set 3: (b,a) E, (b,a) E, (a,b) C, (a,a) N, (a,b) C, (a,a) N → 2 − 2 = 0
    assert out["scores"] == [0.0, 0.0, 0.0]
    assert out["counts"]["neutral"] == [0, 0, 2]


def test_set_scorer_caches_pairs_across_calls():
    clf = ScriptedClassifier(TABLE)
    scorer = NLISetScorer(clf, "contradictions")
    assert scorer(["a", "b", "c"]) == 2.0
    assert scorer(["a", "b"]) == 1.0 and scorer(["c", "b", "a"]) == 2.0
    assert clf.calls == 1 and len(clf.seen) == 6
    assert NLISetScorer(clf, "confidence")(["x", "y"]) == pytest.approx(0.3)


@pytest.mark.parametrize("bad, match", [
    ([["a", "b"], ["c"]], r"predictions\[1\]` has 1 responses"),
    ([], "empty"),
    (["a", "b"], r"predictions\[0\]"),
])
def test_bad_input_is_a_clear_error(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        compute_nli_diversity(bad, ScriptedClassifier({}))


def test_unknown_variant_is_an_error():
    with pytest.raises(ValueError, match="variant"):
        compute_nli_diversity(SETS, ScriptedClassifier(TABLE), "contradiction")


# ----------------------------------------------------------------------------- tiny transformers models


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("nli")
    return {"cne": tiny_nli_model(root / "cne", CNE), "enc": tiny_nli_model(root / "enc", ENC, label_case="lower")}


RESPONSES = [
    ["Hello , how are you today ?", "I am fine , thank you .", "You're really boring .",
     "Let's go to the movies tonight !", "Yes . No . Maybe . Okay ."],
    ["Sure , what do you need ?", "I don't know what you mean .", "Sure , what do you need ?"],
    ["The weather is nice , isn't it ?", "We should eat dinner at seven ."],
]


def test_tiny_models_agree_across_label_orders(tiny_models):
    a = NLIClassifier.from_pretrained(tiny_models["cne"], progress=False)
    b = NLIClassifier.from_pretrained(tiny_models["enc"], progress=False)
    assert a.id2label[0] == "CONTRADICTION" and b.id2label[0] == "entailment"
    ra = compute_nli_diversity(RESPONSES, a, "confidence")
    rb = compute_nli_diversity(RESPONSES, b, "confidence")
    assert ra["counts"] == rb["counts"]
    assert ra["scores_by_variant"]["baseline"] == rb["scores_by_variant"]["baseline"]
    np.testing.assert_allclose(ra["scores"], rb["scores"], rtol=1e-5)
    # the tiny model predicts more than one class, so the mapping is actually exercised
    assert sum(1 for c in CANONICAL if sum(ra["counts"][c]) > 0) >= 2


def test_classifier_matches_a_direct_forward_pass(tiny_models):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(tiny_models["cne"]).eval()
    tok = AutoTokenizer.from_pretrained(tiny_models["cne"])
    pairs = [("Hello , how are you today ?", "You're really boring ."), ("Yes .", "Thank you very much for your help .")]
    with torch.no_grad():
        expected = [torch.softmax(model(**tok(p, h, return_tensors="pt")).logits[0], -1).numpy() for p, h in pairs]
    clf = NLIClassifier(model, tok, batch_size=2, progress=False)
    np.testing.assert_allclose(clf(pairs), np.stack(expected), atol=1e-5)


def test_batched_equals_one_by_one_and_duplicates_run_once(tiny_models):
    a = NLIClassifier.from_pretrained(tiny_models["cne"], batch_size=4, progress=False)
    one = NLIClassifier.from_pretrained(tiny_models["cne"], batch_size=1, progress=False)
    ra = compute_nli_diversity(RESPONSES, a, "confidence", return_probabilities=True)
    r1 = compute_nli_diversity(RESPONSES, one, "confidence", return_probabilities=True)
    # set 2 is [S, D, S]: (S,D) (S,S) (D,S) (D,S) (S,S) (S,D) → 3 distinct; 20 + 3 + 2 = 25 distinct of 28
    assert ra["num_pairs"] == 28 and ra["num_distinct_pairs"] == 25
    assert a.pairs_classified == 25 and a.forward_calls == 7 and one.forward_calls == 25
    assert ra["counts"] == r1["counts"]
    np.testing.assert_allclose(ra["scores"], r1["scores"], atol=1e-5)
    m_a = np.array(ra["probabilities"][0]["contradiction"], dtype=float)
    m_1 = np.array(r1["probabilities"][0]["contradiction"], dtype=float)
    np.testing.assert_allclose(m_a, m_1, atol=1e-5)


def test_long_pairs_truncated_longest_first(tiny_models):
    clf = NLIClassifier.from_pretrained(tiny_models["cne"], progress=False)
    assert clf.max_length == 64
    long = " ".join(["The quick brown fox jumps over the lazy dog ."] * 20)
    short = "Yes ."
    enc = clf.encode([(long, short), (long, long)])
    assert [len(e["input_ids"]) for e in enc] == [64, 64]
    short_ids = clf.tokenizer(short, add_special_tokens=False)["input_ids"]
    # longest-first keeps the short hypothesis whole: ... </s></s> Yes . </s>
    assert enc[0]["input_ids"][-len(short_ids) - 1:-1] == short_ids
    out = compute_nli_diversity([[long, short, long + " again"]], clf)
    assert out["num_pairs"] == 6


def test_module_via_dialeval_load(tiny_models):
    import dialeval

    metric = dialeval.load("nli_diversity", model=str(tiny_models["cne"]), progress=False)
    out = metric.compute(predictions=RESPONSES, variant="neutral")
    direct = compute_nli_diversity(RESPONSES, NLIClassifier.from_pretrained(tiny_models["cne"], progress=False),
                                   "neutral")
    assert out["scores"] == direct["scores"]
    assert out["nli_diversity"] == pytest.approx(math.fsum(direct["scores"]) / 3)
    sig = out["signature"]
    assert sig.startswith("nli_diversity|model:") and str(tiny_models["cne"]) in sig
    assert "variant:neutral" in sig and "dtype:float32" in sig and "trunc:longest_first@64" in sig


def test_module_accepts_a_classifier_object_and_bf16(tiny_models):
    from dialeval.nli.nli_diversity import compute

    out = compute(SETS, model=ScriptedClassifier(TABLE), variant="confidence")
    assert out["nli_diversity"] == pytest.approx(0.25)
    assert out["signature"].startswith("nli_diversity|model:ScriptedClassifier|variant:confidence")
    bf16 = compute(RESPONSES[:1], model=str(tiny_models["cne"]), dtype="bf16", progress=False)
    assert "dtype:bfloat16" in bf16["signature"] and math.isfinite(bf16["nli_diversity"])
    assert sum(bf16["counts"][c][0] for c in CANONICAL) == 20


def test_missing_model_errors_say_how_to_pass_a_path(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        NLIClassifier.from_pretrained(str(tmp_path / "nope"))
    with pytest.raises(ModelNotAvailableError, match="local directory"):
        NLIClassifier.from_pretrained("roberta-large-mnli")


def test_model_without_nli_labels_is_rejected(tiny_models):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(tiny_models["cne"])
    model.config.id2label = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    with pytest.raises(ValueError, match="not the three NLI classes"):
        NLIClassifier(model, AutoTokenizer.from_pretrained(tiny_models["cne"]))


# ----------------------------------------------------------------------------- meta-evaluation harness


def test_meta_eval_contest_end_to_end_with_tiny_model(tiny_models, shared_data, tmp_path):
    from scipy.stats import spearmanr

    from dialeval import datasets as dd
    from dialeval.meta.evaluation import meta_evaluate

    config = "con_test_200_resp_gen"
    ds = dd.load("contest", config, data_dir=shared_data / "diversity_eval", cache_dir=str(tmp_path / "cache"))
    rows = ds["test"].to_list()
    few = [r for r in rows if r["label_value"] == 0.0][:3] + [r for r in rows if r["label_value"] == 1.0][:3]
    report = meta_evaluate("contest", "nli_diversity", rows={config: few}, n_resamples=100,
                           metric_args={"model": str(tiny_models["cne"]), "variant": "confidence",
                                        "progress": False})
    result = report["configs"][config]
    assert result["num_rows"] == 6
    clf = NLIClassifier.from_pretrained(tiny_models["cne"], progress=False)
    direct = compute_nli_diversity([r["responses"] for r in few], clf, "confidence")["scores"]
    assert result["scores"] == [round(x, 3) for x in direct]  # the harness keeps Tevet's 3 decimals
    by_target = {(r["target"], r["statistic"]): r["value"] for r in result["results"]}
    expected = spearmanr(result["scores"], [r["label_value"] for r in few]).statistic
    if math.isnan(expected):
        assert math.isnan(by_target[("label_value", "spearman")])
    else:
        assert by_target[("label_value", "spearman")] == pytest.approx(expected)
    assert "nli_diversity" in report["signature"] and "variant=confidence" in report["signature"]


def test_non_finite_probabilities_are_an_error_not_contradictions():
    from dialeval.nli.core import classify_distinct as classify

    nan = float("nan")
    clf = ScriptedClassifier({("a", "b"): (nan, nan, nan)})
    with pytest.raises(RuntimeError, match="non-finite probabilities for pair 0"):
        classify(clf, [("a", "b"), ("b", "a")])
