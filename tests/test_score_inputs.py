"""``dialeval score`` without an engine: Parquet, export folders and stdin, every input kind through column
mapping, and one clear error (exit code 2) for a bad column. Expected values come from the metrics'
own ``compute`` on the same rows, or by hand."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dialeval
from dialeval.cli import main

TEXTS = ["I don't know .", "I don't know .", "Sure , let's go to the beach !", "That sounds great , see you ."]


def _json_out(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_parquet_with_column_mapping(tmp_path, capsys):
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3, 4], "response": TEXTS}), path)
    assert main(["score", "--metric", "distinct_n", "--metric", "ent_n", "--input", str(path),
                 "--column", "predictions=response", "--json"]) == 0
    out = _json_out(capsys)
    assert out["distinct_n"] == dialeval.load("distinct_n").compute(predictions=TEXTS)
    assert out["ent_n"] == dialeval.load("ent_n").compute(predictions=TEXTS)
    # the only string column is found without a mapping, as for JSONL
    assert main(["score", "--metric", "low_frequency", "--input", str(path), "--json"]) == 0
    assert _json_out(capsys)["low_frequency"]["low_frequency"] == 1.0  # every token occurs ≤ 100 times


def test_stdin_jsonl_and_text(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps({"r": t}) + "\n" for t in TEXTS)))
    assert main(["score", "--metric", "distinct_n", "--input", "-", "--field", "r", "--tokenizer", "whitespace",
                 "--json"]) == 0
    tokens = [tok for t in TEXTS for tok in t.split()]
    assert _json_out(capsys)["distinct_n"]["distinct_1"] == len(set(tokens)) / len(tokens)
    monkeypatch.setattr("sys.stdin", io.StringIO("a b\nb c\n"))
    assert main(["score", "--metric", "distinct_n", "--input", "-", "--tokenizer", "whitespace", "--json"]) == 0
    assert _json_out(capsys)["distinct_n"]["distinct_1"] == 3 / 4


def test_speaker_lists_from_jsonl(tmp_path, capsys):
    rows = [{"pred": ["A", "B", "A"], "gold": ["A", "B", "B"], "cands": ["A", "B"]},
            {"pred": ["C", "D"], "gold": ["C", "D"], "cands": ["C", "D"]}]
    path = tmp_path / "spk.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["score", "--metric", "dialspk", "--input", str(path), "--column", "predictions=pred",
                 "--column", "references=gold", "--column", "candidates=cands", "--json"]) == 0
    out = _json_out(capsys)["dialspk"]
    assert out["dac"] == 4 / 5 and out["sac"] == 1 / 2 and "candidates:given" in out["signature"]


def test_response_sets_from_an_export_folder(shared_data, tmp_path, capsys):
    from dialeval import datasets as dds
    from dialeval.testing.roberta import tiny_nli_model

    config = "con_test_200_resp_gen"
    folder = tmp_path / "contest"
    dds.export("contest", folder, data_dir=shared_data / "diversity_eval", configs=[config],
               cache_dir=str(tmp_path / "cache"))
    model = str(tiny_nli_model(tmp_path / "nli"))
    assert main(["score", "--metric", "nli_diversity", "--input", str(folder), "--split", "test",
                 "--column", "predictions=responses", "--metric-arg", f"model={model}", "--metric-arg",
                 "progress=false", "--json"]) == 0
    got = _json_out(capsys)["nli_diversity"]
    sets = pq.read_table(folder / config / "test.parquet").column("responses").to_pylist()
    want = dialeval.load("nli_diversity").compute(predictions=sets, model=model, progress=False)
    assert got["scores"] == pytest.approx(want["scores"], abs=1e-9) and len(got["scores"]) == len(sets)
    assert got["signature"] == want["signature"]


def test_dialogues_and_turns_for_full(tmp_path, capsys):
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    lm = str(build_tiny_causal_lm(tmp_path / "lm", arch="gpt2"))
    contexts = [["Hello , how are you today ?"], ["Where are you from ?", "I am from Beijing ."]]
    responses = ["I am fine , thank you .", "Let's go to the movies tonight !"]
    path = tmp_path / "turns.parquet"
    pq.write_table(pa.table({"contexts": contexts, "response": responses,
                             "dialogue": [c + [r] for c, r in zip(contexts, responses)]}), path)
    assert main(["score", "--metric", "full_followup", "--input", str(path), "--column", "predictions=response",
                 "--metric-arg", f"model={lm}", "--metric-arg", "device=cpu", "--json"]) == 0
    turn = _json_out(capsys)["full_followup"]
    want = dialeval.load("full_followup", "turn").compute(contexts=contexts, predictions=responses, model=lm,
                                                          device="cpu")
    assert turn["scores"] == want["scores"] and "level:turn" in turn["signature"]
    assert main(["score", "--metric", "full_followup", "--input", str(path), "--metric-config", "dialog",
                 "--column", "dialogues=dialogue", "--metric-arg", f"model={lm}", "--metric-arg", "device=cpu",
                 "--json"]) == 0
    dialog = _json_out(capsys)["full_followup"]
    assert dialog["scores"] == pytest.approx(turn["scores"], abs=1e-6)  # same histories either way
    assert "level:dialog" in dialog["signature"]


def test_bad_columns_exit_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"id": [1, 2], "response": TEXTS[:2]}), path)
    assert main(["score", "--metric", "ent_n", "--input", str(path), "--column", "predictions=text"]) == 2
    err = capsys.readouterr().err.strip()
    assert "column 'text'" in err and "--column predictions=" in err and "\n" not in err
    assert main(["score", "--metric", "ent_n", "--input", str(path), "--column", "predictions=id"]) == 2
    assert "holds int" in capsys.readouterr().err
    assert main(["score", "--metric", "nli_diversity", "--input", str(path), "--column", "predictions=response"]) == 2
    assert "must be a list of strings" in capsys.readouterr().err
    assert main(["score", "--metric", "ent_n", "--input", str(path), "--column", "dialogues=response"]) == 2
    assert "not an input of the chosen metrics" in capsys.readouterr().err
