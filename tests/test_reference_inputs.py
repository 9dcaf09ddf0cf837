"""The reference-based metrics as a new user calls them: malformed ``references`` are one error naming the argument
and the record, through the Python core and through the ``evaluate`` module alike; ROUGE-L says when text in
another script scores 0 under rouge-score's tokenizer; BERTScore returns bert-score's ``precision``/``recall``/
``f1``."""

from __future__ import annotations

import warnings

import pytest

import dialeval
from dialeval import registry
from dialeval.io.validation import ResultNote
from dialeval.reference import core
from dialeval.reference.bertscore import compute_bertscore

METRICS = ("token_f1", "bleu", "chrf", "meteor", "rouge_l", "bertscore")

# (references, what the error names) for predictions ["a cat", "a dog"]; both routes name the same argument/record
BAD = [
    (None, "`references` is None"),
    (5, "`references` must be a list"),
    ("a cat", "`references` is a single string"),
    ({"a cat", "a dog"}, "`references`"),
    (["a cat", 3], "`references[1]` is int"),
    (["a cat", None], "`references[1]` is NoneType"),
    ([["a cat", None], ["a dog"]], "`references[0][1]` is NoneType"),
    ([["a cat", 7], ["a dog"]], "`references[0][1]` is int"),
    ([["a cat"], ["a dog", ["nested"]]], "`references[1][1]` is list"),
]


def _core(name):
    return registry.get(name).core_function()


@pytest.mark.parametrize("name", METRICS)
@pytest.mark.parametrize("references, names", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_references_name_the_argument_and_record_in_both_routes(name, references, names):
    preds = ["a cat", "a dog"]
    for route in (lambda: _core(name)(preds, references),
                  lambda: dialeval.load(name).compute(predictions=preds, references=references)):
        with pytest.raises((TypeError, ValueError)) as err:
            route()
        assert names in str(err.value) and "\n" not in str(err.value), (name, str(err.value))


@pytest.mark.parametrize("name", METRICS)
def test_mixed_strings_and_lists(name):
    preds, refs = ["a cat sat", "a dog ran"], ["a cat sat", ["a dog ran", "the dog"]]
    if name != "bertscore":  # the core takes a string or a list per response
        assert _core(name)(preds, refs)["scores"] == _core(name)(preds, [[refs[0]], refs[1]])["scores"]
    with pytest.raises(TypeError) as err:  # Arrow takes one kind per column: the module says which items differ
        dialeval.load(name).compute(predictions=preds, references=refs)
    assert str(err.value) == ("`references[1]` is list (['a dog ran', 'the dog']), a list of strings, but "
                              "`references[0]` is a string; give every item the same kind (all strings, or all lists "
                              "of strings).")


def test_predictions_given_and_references_none_is_one_line_in_the_module():
    with pytest.raises(ValueError) as err:
        dialeval.load("bleu").compute(predictions=["a"])
    assert str(err.value) == ("`references` is None while `predictions` is given; pass `references` too, a list with "
                              "one item per item of `predictions`.")


# ----------------------------------------------------------------------------------------------
# ROUGE-L on text its tokenizer cannot read
# ----------------------------------------------------------------------------------------------


def test_rouge_l_warns_once_when_text_has_letters_but_no_token():
    preds = ["这是一个测试", "hello there", "Привет, как дела?", "!!!"]
    refs = [["这是一个测试"], ["hello there"], ["Привет, как дела?", "привет"], ["ok"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = core.compute_rouge_l(preds, refs)
    notes = [w for w in caught if issubclass(w.category, ResultNote)]  # a UserWarning
    # 2 of 4 predictions (Chinese, Russian; "!!!" has no letters), 3 of 5 references have letters and no token
    expected = ("2 of 4 predictions and 3 of 5 references have letters but no token under rouge-score's tokenizer "
                "(it keeps a-z and 0-9 only), so they score 0: ROUGE-L here is English-only; use chrf for other "
                "scripts.")
    assert [str(w.message) for w in notes] == [f"rouge_l: {expected}"] and issubclass(ResultNote, UserWarning)
    assert out["note"] == expected and out["scores"] == [0.0, 1.0, 0.0, 0.0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert "note" not in core.compute_rouge_l(["a cat sat", "café au lait"], ["a cat sat", "café"])
    assert not [w for w in caught if issubclass(w.category, ResultNote)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module_out = dialeval.load("rouge_l").compute(predictions=preds, references=refs)
    assert sum(issubclass(w.category, ResultNote) for w in caught) == 1 and module_out["note"] == expected


def test_rouge_l_note_reaches_the_meta_eval_report(tmp_path):
    import json

    from dialeval.meta import own_data
    from dialeval.meta.evaluation import meta_evaluate

    rows = [{"id": str(i), "context": ["你好"], "response": "我很好" * (i % 3 + 1), "reference": "我很好，谢谢",
             "q": i % 5} for i in range(12)]
    path = tmp_path / "zh.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    mine = own_data.read(path)
    report = meta_evaluate(mine.declaration, "rouge_l", rows={mine.config: mine.rows}, n_resamples=100)
    assert report["configs"]["turn"]["scores"] == [0.0] * 12
    assert ("turn: rouge_l: 12 of 12 predictions and 12 of 12 references have letters but no token under "
            "rouge-score's tokenizer") in " ".join(report["notes"])


# ----------------------------------------------------------------------------------------------
# BERTScore's keys
# ----------------------------------------------------------------------------------------------


def test_bertscore_returns_precision_recall_and_f1_as_bert_score_does():
    from bert_score import BERTScorer

    from dialeval.models.encoders import default_encoder_path

    preds = ["I went hiking in the mountains .", "No idea ."]
    refs = [["We spent the weekend hiking ."], ["I don't know ."]]
    out = compute_bertscore(preds, refs)
    p, r, f = BERTScorer(model_type=str(default_encoder_path()), num_layers=6).score(preds, refs)
    for key, expected in (("precision", p), ("recall", r), ("f1", f)):
        assert out[key] == pytest.approx([float(v) for v in expected], abs=1e-5), key
    assert out["scores"] == out["f1"] and out["bertscore"] == pytest.approx(sum(out["f1"]) / 2)
    empty = compute_bertscore([""], ["hi"])
    assert (empty["precision"], empty["recall"], empty["f1"], empty["scores"]) == ([0.0], [0.0], [0.0], [0.0])
