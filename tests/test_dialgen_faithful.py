"""DialGen as the paper defines it (Yao et al. 2022, §6): coherence = share of stories judged coherent
(P > 0.5) with the mean as a second field; the classifier's training defaults are the paper's recipe
(4 epochs, lr 2e-5, batch 16, Adam) and every setting lands in coherence.json; the quote convention is
an option recorded in the signature. Expected values are hand-computed."""

from __future__ import annotations

import json

import pytest

from dialeval.cli import main
from dialeval.dialstory.coherence import PAPER_RECIPE, TrainConfig, recipe_name
from dialeval.dialstory.dialgen import coherence_summary, dialgen_scores, strip_quotes


def test_coherence_is_the_share_above_one_half():
    out = coherence_summary([0.9, 0.5, 0.2, 0.7])
    # 0.9 and 0.7 exceed 0.5 (0.5 itself does not): 2/4; mean (0.9 + 0.5 + 0.2 + 0.7)/4 = 0.575
    assert out["coherence"] == 0.5 and out["coherence_mean"] == pytest.approx(0.575, abs=1e-15)
    assert out["story_coherence"] == [0.9, 0.5, 0.2, 0.7]


def test_scores_with_given_probabilities_report_both_fields():
    res = dialgen_scores([["好的"]], [["好的"]], coherence=[0.4], coherence_model="m")
    assert res["coherence"] == 0.0 and res["coherence_mean"] == pytest.approx(0.4)
    assert "|coherence:m|coh:P>0.5|" in res["signature"]


def test_strip_quotes():
    assert strip_quotes("“好的”") == "好的" and strip_quotes(" 「走吧」 ") == "走吧"
    assert strip_quotes('"ok"') == "ok" and strip_quotes("“半个") == "“半个" and strip_quotes("好") == "好"


def test_quote_convention_changes_bleu_and_is_signed():
    # char tokens: “ 好 的 ” vs 好 的 → p1 = 2/4, BP = 1 (hypothesis longer): BLEU-1 = 0.5; stripped: 1.0
    keep = dialgen_scores([["“好的”"]], [["好的"]])
    strip = dialgen_scores([["“好的”"]], [["好的"]], quotes="strip")
    assert keep["bleu_1"] == pytest.approx(0.5, abs=1e-12) and strip["bleu_1"] == pytest.approx(1.0, abs=1e-12)
    assert "|quotes:keep|" in keep["signature"] and "|quotes:strip|" in strip["signature"]
    with pytest.raises(ValueError, match="quotes"):
        dialgen_scores([["a"]], [["a"]], quotes="drop")


def test_training_defaults_are_the_papers_recipe():
    cfg = TrainConfig()
    assert (cfg.epochs, cfg.lr, cfg.batch_size, cfg.optimizer) == (4, 2e-5, 16, "adam")
    assert PAPER_RECIPE == {"epochs": 4, "lr": 2e-5, "batch_size": 16, "optimizer": "adam"}
    assert cfg.schedule == "constant" and cfg.patience == 0 and cfg.select == "last" and cfg.weight_decay == 0
    assert recipe_name(cfg) == "paper"
    assert recipe_name(TrainConfig(optimizer="adamw")) == "custom"
    assert recipe_name(TrainConfig(patience=3)) == "custom"
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(optimizer="sgd")


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    from transformers import RobertaConfig, RobertaModel

    from dialeval.testing.roberta import TINY, roberta_tokenizer

    out = tmp_path_factory.mktemp("tiny_encoder_dg")
    tok = roberta_tokenizer(out)
    cfg = RobertaConfig(vocab_size=len(tok), max_position_embeddings=70, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **TINY)
    RobertaModel(cfg).save_pretrained(out)
    return out


def test_saved_metadata_records_every_training_setting(tiny_encoder, tmp_path, capsys):
    rows = [{"turns": [f"Hi {i} .", "Hello .", f"Bye {i} ."]} for i in range(8)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "coh"
    assert main(["train-coherence", "--data", str(data), "--encoder", str(tiny_encoder), "--out", str(out),
                 "--epochs", "1", "--max-length", "32", "--val-fraction", "0.25", "--no-progress",
                 "--optimizer", "adamw", "--schedule", "linear", "--warmup", "0.1", "--select", "best"]) == 0
    capsys.readouterr()
    meta = json.loads((out / "coherence.json").read_text(encoding="utf-8"))
    t = meta["train"]
    assert (t["optimizer"], t["schedule"], t["warmup"], t["select"], t["lr"], t["batch_size"]) == \
        ("adamw", "linear", 0.1, "best", 2e-5, 16)
    assert meta["recipe"] == "custom" and meta["kept"] == "best"
    assert "|opt:adamw|" in meta["signature"] and "|recipe:custom|" in meta["signature"]
