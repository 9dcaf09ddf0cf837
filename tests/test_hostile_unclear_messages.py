"""Messages of a fourth hostile pass that named too little: each names the option, the value and what would be
accepted (quality_vendi's quality_options, a batch_size given as text on the core and the leaderboard routes,
LightEval/Inspect refusing per-item qualities at creation, hub publishing a row of a unit the report does not have)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dialeval.meta import leaderboard
from dialeval.meta.publish import write_hub_dataset
from dialeval.similarity.quality_vendi import compute_quality_vendi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, write_jsonl  # noqa: E402

SETS = [["Yes .", "ok", "no"]]
JUDGE = "['backend', 'batch_size', 'chat_template', 'dtype', 'max_length', 'max_tokens', 'quality', 'rubric', 'share_prefix']"


@pytest.mark.parametrize("options,error,message", [
    ("fast", TypeError, f"quality_options='fast' is str; give a dict of llm_judge's options (any of {JUDGE})"),
    ({"bogus": 1}, ValueError, f"quality_options['bogus']=1: llm_judge has no option 'bogus'; quality_options takes "
                               f"{JUDGE}."),
    ({"batch_size": 0}, ValueError, "quality_options['batch_size']: llm_judge: `batch_size`=0 is out of range: "
                                    "1 ≤ batch_size ≤ 4,096."),
    ({"model": "x"}, ValueError, "quality_options['model']='x': give it as quality_vendi's quality_model=, not inside "
                                 "quality_options"),
    ({"device": "cuda"}, ValueError, "quality_options['device']='cuda': give it as quality_vendi's device="),
])
def test_quality_options_messages_name_the_option_the_value_and_what_it_takes(options, error, message):
    with pytest.raises(error) as info:
        compute_quality_vendi(SETS, kernel="ngram", quality_options=options)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name,call", [
    ("dialgen", lambda: __import__("dialeval.dialstory.dialgen", fromlist=["x"]).compute_dialgen(
        [["a b"]], [["a b"]], batch_size="8")),
    ("sem_ent", lambda: __import__("dialeval.semantic.sem_ent", fromlist=["x"]).compute_sem_ent(
        ["a b", "c d"], batch_size="8")),
])
def test_batch_size_as_text_on_a_core_names_the_value_and_the_range(name, call):
    with pytest.raises(ValueError, match=r"`batch_size`='8' must be an integer from 1 to 4096"):
        call()


def test_batch_size_as_text_on_the_leaderboard_names_the_metric_and_the_range(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", items(20, varied_words=True))
    with pytest.raises(TypeError, match=r"bertscore: `batch_size` must be an integer \(1 ≤ batch_size ≤ 4,096\), "
                                        r"got '8'"):
        leaderboard.build(None, tmp_path / "lb", data=[data], metrics=["bertscore"], n_resamples=100,
                          metric_args={"bertscore": {"batch_size": "8"}}, log=lambda _: None)


@pytest.mark.parametrize("adapter", ["lighteval", "inspect"])
def test_per_item_qualities_are_refused_when_the_adapter_metric_is_made(adapter):
    if adapter == "lighteval":
        from dialeval.integrations.lighteval import metric as make
    else:
        from dialeval.integrations.inspect import scorer as make
    with pytest.raises(ValueError, match=r"quality_vendi: `qualities`='high' holds one entry per item of a call .*"
                                         r"leave it out"):
        make("quality_vendi", qualities="high")


def test_hub_refuses_a_row_of_a_unit_the_report_does_not_have(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", items(20))
    board = tmp_path / "lb"
    leaderboard.build(None, board, data=[data], metrics=["column:mine"], n_resamples=100, log=lambda _: None)
    report = json.loads((board / "leaderboard.json").read_text(encoding="utf-8"))
    report["rows"][1]["config"] = "dialog"
    (board / "leaderboard.json").write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ValueError, match=r"leaderboard.json: rows\[1\]: dataset/config 'd/dialog' is not among the "
                                         r"report's units \['d/turn'\]"):
        write_hub_dataset(board, tmp_path / "hub", "me")
    assert not (tmp_path / "hub").exists()
