"""``dialeval leaderboard --dtype bf16``: bf16 reaches exactly the metrics that declare a ``dtype`` option, is
refused on a CPU without native bf16, is named in the signatures, and never reuses cached fp32 scores."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from dialeval.cli import main
from dialeval.meta import cache as score_cache
from dialeval.meta import dtypes, leaderboard
from dialeval.models import cpu

ZEN4 = cpu.kind_from_flags("avx2 avx512f avx512_bf16")
SKYLAKE = cpu.kind_from_flags("avx2 avx512f")
TASKS = [(m, "own", "turn") for m in ("token_f1", "bertscore", "context_relevance", "full_followup", "llm_judge",
                                      "column:mine")]


def _data(tmp_path, n=30):
    rows = [{"id": f"i{i}", "context": ["hi"], "response": "word " * (i % 5 + 1), "reference": "ok",
             "relevance": [1 + i % 5, 1 + (i * 7) % 5], "mine": float(i % 4)} for i in range(n)]
    path = tmp_path / "own.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def cpu_only(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(cpu, "cpu_kind", lambda: ZEN4)


def test_bf16_reaches_the_metrics_with_a_dtype_option_and_no_other(cpu_only):
    got = dtypes.with_dtype({"bertscore": {"idf": True}}, TASKS, "bf16")
    assert got == {"bertscore": {"idf": True, "dtype": "bf16"}, "context_relevance": {"dtype": "bf16"},
                   "full_followup": {"dtype": "bf16"}, "llm_judge": {"dtype": "bf16"}}
    assert dtypes.with_dtype({"bertscore": {"idf": True}}, TASKS, None) == {"bertscore": {"idf": True}}
    assert dtypes.with_dtype(None, TASKS, "fp32") is None  # fp32 is the default: the options (and keys) stay


def test_bf16_is_refused_on_a_cpu_without_native_bf16(monkeypatch, cpu_only):
    monkeypatch.setattr(cpu, "cpu_kind", lambda: SKYLAKE)
    with pytest.raises(ValueError, match=r"^--dtype bf16: this CPU \(avx512\) has neither avx512_bf16 nor AMX"):
        dtypes.with_dtype(None, TASKS, "bf16")
    only_lexical = [("token_f1", "own", "turn")]  # nothing runs in bf16: nothing to refuse
    assert dtypes.with_dtype(None, only_lexical, "bf16") == {}


def test_a_metric_on_a_gpu_is_not_refused_for_the_cpu(monkeypatch, cpu_only):
    monkeypatch.setattr(cpu, "cpu_kind", lambda: SKYLAKE)
    got = dtypes.with_dtype({"bertscore": {"device": "cuda"}}, [("bertscore", "own", "turn")], "bf16")
    assert got == {"bertscore": {"device": "cuda", "dtype": "bf16"}}


def test_conflicting_or_unknown_dtypes_are_refused(cpu_only):
    with pytest.raises(ValueError, match=r"--metric-arg bertscore:dtype=fp32 disagrees with --dtype bf16"):
        dtypes.with_dtype({"bertscore": {"dtype": "fp32"}}, TASKS, "bf16")
    with pytest.raises(ValueError, match=r"^--dtype 'int4' is not supported; use bf16"):
        dtypes.with_dtype(None, TASKS, "int4")


def test_bf16_options_change_the_cache_key():
    assert score_cache.metric_key("bertscore", {"dtype": "bf16"}) != score_cache.metric_key("bertscore", None)


def test_a_bf16_run_never_reuses_cached_fp32_scores(tmp_path, monkeypatch, cpu_only, capsys):
    path, out, calls = _data(tmp_path), tmp_path / "board", []

    def fake(metric, decl, config, rows, options=None):
        dtype = (options or {}).get("dtype") or "fp32"
        calls.append((metric, dtype))
        return {"scores": [float(len(r["response"])) + (0.01 if dtype == "bf16" else 0) for r in rows],
                "signature": f"{metric}|dtype:{dtype}"}

    monkeypatch.setattr(leaderboard, "offline_reason", lambda decl: None)
    monkeypatch.setattr(leaderboard, "score_rows", fake)
    args = ["leaderboard", "--data", str(path), "--metric", "bertscore", "--metric", "token_f1", "--resamples", "100",
            "--out", str(out)]
    assert main(args) == 0
    assert sorted(calls) == [("bertscore", "fp32"), ("token_f1", "fp32")]
    assert main([*args, "--dtype", "bf16"]) == 0
    assert sorted(calls)[1] == ("bertscore", "fp32") and ("bertscore", "bf16") in calls
    assert ("token_f1", "fp32") in calls and len(calls) == 3  # token_f1 has no dtype: its fp32 cache is reused
    report = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert "|dtype:bf16|" in report["signature"]
    assert {r["signature"] for r in report["rows"] if r["metric"] == "bertscore"} == {"bertscore|dtype:bf16"}
    assert main(args) == 0  # back to fp32: the bf16 scores (which replaced the fp32 entry) are not reused either
    assert calls[3:] == [("bertscore", "fp32")]
    report = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert "dtype" not in report["signature"]


def test_the_command_refuses_bf16_on_an_avx512_cpu_with_exit_code_2(tmp_path, monkeypatch, cpu_only, capsys):
    monkeypatch.setattr(cpu, "cpu_kind", lambda: SKYLAKE)
    monkeypatch.setattr(leaderboard, "offline_reason", lambda decl: None)
    args = ["leaderboard", "--data", str(_data(tmp_path)), "--metric", "bertscore", "--resamples", "100",
            "--out", str(tmp_path / "board"), "--dtype", "bf16"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("this CPU (avx512) has neither avx512_bf16 nor AMX, so bf16 runs slower than fp32 here; "
                            "leave the dtype at fp32 (drop the option) or run on a GPU.")
    assert not (tmp_path / "board").exists()


def test_the_llm_judge_signature_names_the_dtype_that_ran():
    import torch

    from dialeval.judge.llm_judge import judge_signature

    lm = SimpleNamespace(name="m", backend="torch", model=SimpleNamespace(dtype=torch.bfloat16))
    assert "|backend:torch|dtype:bfloat16|level:turn|" in judge_signature(lm, "turn", "overall", "rubric", True, 512)
    lm.model.dtype = torch.float32  # fp32 signatures (the committed leaderboard's) stay as they were
    assert "|backend:torch|level:turn|" in judge_signature(lm, "turn", "overall", "rubric", True, 512)
