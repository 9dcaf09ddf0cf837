"""The evaluate modules: offline loading, options, combine, add_batch and two-process mode; DialSpk; CLI."""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest

import dialeval
from dialeval.cli import main as cli_main
from dialeval.dialstory.dialspk import speaker_accuracy
from dialeval.lexical.core import compute_distinct, compute_ent

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["I don't know .", "Hello , how are you ?", "I don't know either !", "", "Fine , thanks ."]


def test_load_bare_names_and_paths():
    by_name = dialeval.load("distinct_n")
    by_path = evaluate.load(str(dialeval.declaration("distinct_n").script_dir))  # the packaged script folder
    assert by_name.compute(predictions=TEXTS) == by_path.compute(predictions=TEXTS) == compute_distinct(TEXTS)


def test_unknown_name_lists_known_ones():
    with pytest.raises(ValueError, match="distinct_n.*full_followup"):
        dialeval.load("belu")


def test_load_time_options_and_unknown_options():
    m = dialeval.load("ent_n", tokenizer="whitespace", n=[1])
    out = m.compute(predictions=["a b", "a"])
    assert set(out) == {"ent_1", "signature"}
    # a:2 b:1 -> H = -(2/3 log2 2/3 + 1/3 log2 1/3)
    assert out["ent_1"] == pytest.approx(-(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3)))
    assert m.compute(predictions=["a b", "a"], n=[2])["ent_2"] == 0.0  # per-call override
    with pytest.raises(TypeError, match="unknown option"):
        dialeval.load("ent_n", tokenizr="whitespace")


def test_add_batch_equals_single_compute():
    m = dialeval.load("distinct_n")
    m.add_batch(predictions=TEXTS[:2])
    m.add_batch(predictions=TEXTS[2:])
    assert m.compute() == compute_distinct(TEXTS)


def test_combine_across_modules():
    combined = evaluate.combine([dialeval.load("distinct_n"), dialeval.load("ent_n"), dialeval.load("low_frequency")])
    out = combined.compute(predictions=TEXTS, tokenizer="whitespace")
    assert out["distinct_1"] == compute_distinct(TEXTS, tokenizer="whitespace")["distinct_1"]
    assert out["ent_2"] == compute_ent(TEXTS, tokenizer="whitespace")["ent_2"]
    assert 0.0 <= out["low_frequency"] <= 1.0


def test_set_level_through_module():
    out = dialeval.load("distinct_n", tokenizer="tevet").compute(predictions=[["a b", "a b"], ["a", "b"]], level="set")
    assert len(out["scores"]) == 2


def _worker(process_id: int, cache_dir: str, queue) -> None:
    import os

    os.environ["HF_EVALUATE_OFFLINE"] = "1"
    import dialeval as d

    m = d.load("distinct_n", num_process=2, process_id=process_id, experiment_id="two-proc", cache_dir=cache_dir,
               tokenizer="whitespace")
    half = TEXTS[:3] if process_id == 0 else TEXTS[3:]
    m.add_batch(predictions=half)
    queue.put((process_id, m.compute()))


def test_two_processes_gather_like_one(tmp_path):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(i, str(tmp_path), queue)) for i in range(2)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert results[1] is None  # only process 0 returns the score
    assert results[0] == compute_distinct(TEXTS, tokenizer="whitespace")


# ---------------------------------------------------------------- DialSpk


def test_dialspk_hand_computed():
    preds = [["A", "B", "A"], ["C"], ["D", "D"]]
    refs = [["A", "B", "B"], ["C"], ["D", "D"]]
    out = speaker_accuracy(preds, refs)
    assert out["dac"] == pytest.approx(5 / 6)
    assert out["sac"] == pytest.approx(2 / 3)
    mod = dialeval.load("dialspk").compute(predictions=preds, references=refs)
    assert mod["dac"] == out["dac"] and mod["sac"] == out["sac"] and mod["signature"].startswith("dialspk|")


def test_dialspk_errors():
    with pytest.raises(ValueError, match="story 1"):
        speaker_accuracy([["A"], ["B", "C"]], [["A"], ["B"]])
    with pytest.raises(ValueError, match="not among its candidates"):
        speaker_accuracy([["Z"]], [["A"]], candidates=[["A", "B"]])
    with pytest.raises(ValueError, match="`references` has 1"):
        speaker_accuracy([["A"], ["B"]], [["A"]])
    with pytest.raises(TypeError, match=r"predictions\[0\]\[0\]"):
        speaker_accuracy([[None]], [["A"]])


# ---------------------------------------------------------------- CLI


def test_cli_score_jsonl_table_and_json(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "response": t}) for i, t in enumerate(TEXTS)), encoding="utf-8")
    out_file = tmp_path / "res.json"
    assert cli_main(["score", "--metric", "distinct_n", "--metric", "ent_n", "--input", str(path),
                     "--field", "response", "--output", str(out_file)]) == 0
    table = capsys.readouterr().out
    assert "distinct_1" in table and "ent_3" in table
    saved = json.loads(out_file.read_text())
    assert saved["distinct_n"]["distinct_2"] == compute_distinct(TEXTS)["distinct_2"]
    assert cli_main(["score", "--metric", "ent_n", "--input", str(path), "--field", "response", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ent_n"]["ent_1"] == compute_ent(TEXTS)["ent_1"]


def test_cli_plain_text_and_csv(tmp_path, capsys):
    txt = tmp_path / "r.txt"
    txt.write_text("a b\nb c\n", encoding="utf-8")
    assert cli_main(["score", "--metric", "distinct_n", "--input", str(txt), "--tokenizer", "whitespace", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_n"]["distinct_1"] == 3 / 4
    csv_path = tmp_path / "r.csv"
    csv_path.write_text("id,text\n1,a b\n2,b c\n", encoding="utf-8")
    assert cli_main(["score", "--metric", "distinct_n", "--input", str(csv_path), "--field", "text",
                     "--tokenizer", "whitespace", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_n"]["distinct_1"] == 3 / 4


def test_cli_errors(tmp_path, capsys):
    assert cli_main(["score", "--metric", "distinct_n", "--input", str(tmp_path / "missing.txt")]) == 2
    assert "does not exist" in capsys.readouterr().err
    empty = tmp_path / "e.txt"
    empty.write_text("", encoding="utf-8")
    assert cli_main(["score", "--metric", "distinct_n", "--input", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err
    j = tmp_path / "r.jsonl"
    j.write_text('{"response": "a"}\n{"other": "b"}\n', encoding="utf-8")
    assert cli_main(["score", "--metric", "distinct_n", "--input", str(j), "--field", "response"]) == 2
    assert "record 2" in capsys.readouterr().err
    j.write_text('{"response": "a"}\nnot json\n', encoding="utf-8")
    assert cli_main(["score", "--metric", "distinct_n", "--input", str(j), "--field", "response"]) == 2
    assert "line 2" in capsys.readouterr().err


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "dialeval", "--version"], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == f"dialeval {dialeval.__version__}"


def test_cli_metric_args_reach_the_metric_and_unknown_ones_fail(tmp_path, capsys):
    txt = tmp_path / "r.txt"
    txt.write_text("a b\nb c\n", encoding="utf-8")
    assert cli_main(["score", "--metric", "ent_n", "--input", str(txt), "--metric-arg", "n=[2]",
                     "--metric-arg", "tokenizer=whitespace", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["ent_n"]
    assert set(out) == {"ent_2", "signature"} and out["ent_2"] == 1.0  # bigrams (a b), (b c): log2 2
    assert cli_main(["score", "--metric", "ent_n", "--input", str(txt), "--metric-arg", "space=/x"]) == 2
    assert "not an option" in capsys.readouterr().err


# ---------------------------------------------------------------- input checks before evaluate's casting


@pytest.mark.parametrize("name", ["distinct_n", "ent_n", "low_frequency"])
def test_module_inputs_are_checked_before_arrow_casting(name):
    m = dialeval.load(name)
    with pytest.raises(TypeError, match="single string"):
        m.compute(predictions="hello world")
    with pytest.raises(TypeError, match=r"`predictions\[1\]` is int"):
        m.compute(predictions=["x", 5])
    with pytest.raises(TypeError, match=r"`predictions\[1\]` is list"):
        m.compute(predictions=["x", ["x", "x"]])
    with pytest.raises(ValueError, match="empty"):
        m.compute(predictions=[])
    with pytest.raises(ValueError, match="`predictions` missing or None"):
        m.compute(predictions=None)
    with pytest.raises(TypeError, match=r"`predictions\[0\]` is int"):
        m.add_batch(predictions=[1, 2])


def test_misspelled_option_is_an_error_and_stray_references_warn():
    m = dialeval.load("distinct_n")
    with pytest.raises(TypeError, match="unknown option.*tokeniser"):  # issue 21: never silently ignored
        m.compute(predictions=["a b"], tokeniser="char")
    with pytest.warns(UserWarning, match="references"):
        m.compute(predictions=["a b"], references=["a b"])


def test_bad_config_names_fail_at_load():
    with pytest.raises(ValueError, match="configs"):
        dialeval.load("distinct_n", "foo")
    with pytest.raises(ValueError, match="'turn'"):
        dialeval.load("full_followup", "turns")
    assert dialeval.load("full_followup").config_name == "turn"  # no name: the first declared config


def test_custom_tokenizer_must_return_a_list_of_strings():
    with pytest.raises(TypeError, match="must return a list of strings"):
        compute_distinct(["a b"], tokenizer=lambda s: None)
    with pytest.raises(TypeError, match="must return a list of strings"):
        compute_distinct(["a b"], tokenizer=lambda s: s)
    out = compute_distinct(["a b a"], tokenizer=lambda s: s.split(), n=1)
    assert out["distinct_1"] == pytest.approx(2 / 3) and "tok:custom:" in out["signature"]


def test_numeric_options_accept_numpy_ints_and_reject_non_finite():
    import numpy as np

    from dialeval.lexical.core import compute_low_frequency

    assert compute_distinct(["a b c"], tokenizer="whitespace", n=np.int64(2))["distinct_2"] == 1.0
    assert "ead_1" in compute_distinct(["a"], tokenizer="whitespace", n=1, vocab_size=np.int64(10))
    lf = compute_low_frequency(["x y"], threshold=np.int32(1), tokenizer="whitespace",
                               reference_counts={"x": np.int64(5)})
    assert lf["low_frequency"] == 0.5  # y unseen (count 0 ≤ 1), x seen 5 times
    with pytest.raises(TypeError, match="counts ≥ 0"):
        compute_low_frequency(["x"], reference_counts={"x": -3})
    for base in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="base"):
            compute_ent(["a b"], base=base)


def test_dialspk_gold_outside_candidates_and_empty_names():
    with pytest.raises(ValueError, match="gold speaker 'C'"):
        speaker_accuracy([["A"]], [["C"]], candidates=[["A", "B"]])
    with pytest.raises(ValueError, match="empty speaker name"):
        speaker_accuracy([[""]], [[""]])


def test_cli_score_refuses_metrics_that_need_sets_or_dialogues(tmp_path, capsys):
    txt = tmp_path / "r.txt"
    txt.write_text("a b\n", encoding="utf-8")
    assert cli_main(["score", "--metric", "full_followup", "--input", str(txt)]) == 2
    assert "Python API" in capsys.readouterr().err
