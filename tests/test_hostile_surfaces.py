"""Hostile inputs on the newest surfaces (Vendi, the quality-weighted Vendi Score, the LLM judge, the LightEval and
Inspect adapters, MCP, ``hub build``, the Ray engine's default cluster): each gives the right number or one clear
line, never a traceback, a hang or a silent wrong number."""

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "DIALEVAL_PROGRESS": "0"}


def processes_mentioning(text: str) -> list[str]:
    """The command lines of running processes (this one aside) that contain ``text``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmd:
            found.append(cmd.replace(b"\0", b" ").decode(errors="replace")[:200])
    return found


def test_ray_engine_default_starts_a_local_cluster_and_leaves_nothing_running(tmp_path):
    """No --address and no RAY_ADDRESS: a new local cluster runs the job, the numbers are one process's, and no
    process of that cluster is left (Ray's files go to a private RAY_TMPDIR, which names them)."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"response": "a b c"}\n{"response": "a b d"}\n', encoding="utf-8")
    ray_tmp = tempfile.mkdtemp(prefix="dlr", dir="/tmp")  # Ray's socket paths must stay short
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | RAY_ENV | {"RAY_TMPDIR": ray_tmp}
    proc = subprocess.run([sys.executable, "-m", "dialeval", "score", "--engine", "ray", "--input", str(src),
                           "--metric", "distinct_n", "--column", "predictions=response", "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-800:]
    got = json.loads(proc.stdout[proc.stdout.index("{"):])["distinct_n"]
    # by hand: unigrams a b c a b d (4 distinct of 6), bigrams ab bc ab bd (3 of 4), trigrams abc abd (2 of 2)
    assert (got["distinct_1"], got["distinct_2"], got["distinct_3"]) == (4 / 6, 3 / 4, 1.0)
    assert processes_mentioning(ray_tmp) == []


# -- Vendi, signatures, quality_vendi ---------------------------------------------------------------------------------
SHORT = ["Yes .", "ok", "no"]  # shorter than the n-gram kernel's largest order (4); no token in common


@pytest.mark.parametrize("q", [0, 0.999999, 1, 1.000001, 1.001, 2, "inf"])
def test_vendi_ngram_on_short_responses_stays_in_one_to_n(q):
    """Three responses with no n-gram in common are three distinct ones (K = I), two equal ones are one, for every
    q; the reference's kernel had K_ii < 1 there (48 at q=2, 0 near q=1, an overflow at q=1.001)."""
    from dialeval.similarity.vendi import compute_vendi

    got = compute_vendi([SHORT, ["ok", "ok"]], kernel="ngram", q=q)["scores"]
    assert got == pytest.approx([3.0, 1.0], abs=1e-9)


def test_vendi_signature_names_every_q():
    """q=0.9999999 and q=1 are two computations: their signatures differ, and each reads back as its q."""
    from dialeval.io.signature import parse_signature
    from dialeval.similarity.vendi import compute_vendi

    sigs = {q: compute_vendi([SHORT], kernel="ngram", q=q)["signature"] for q in (0.9999999, 1.0, 0.5)}
    assert len(set(sigs.values())) == 3
    assert [float(parse_signature(s)["q"]) for s in sigs.values()] == [0.9999999, 1.0, 0.5]
    assert "|q:1|" in sigs[1.0] and "|q:0.5|" in sigs[0.5]  # exact values keep their short form


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"qualities": [[1e308, 1e308, 1.0]]}, ValueError, "qualities[0][0]"),
    ({"qualities": [[1.0, 1.0, 1.0]], "contexts": [{"a": "b"}]}, TypeError, "`contexts[0]` is a dict"),
    ({"qualities": [[1.0, 1.0, 1.0]], "contexts": [None]}, TypeError, "`contexts[0]` must be a list of turns"),
    ({"qualities": [[1.0, 1.0, 1.0]], "contexts": [["hi", 3]]}, TypeError, "`contexts[0][1]` is int"),
])
def test_quality_vendi_refuses_bad_qualities_and_contexts_in_one_line(kwargs, error, words):
    from dialeval.similarity.quality_vendi import compute_quality_vendi

    with pytest.raises(error) as info:
        compute_quality_vendi([SHORT], kernel="ngram", **kwargs)
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("surfaces_lm"), seed=3))


def test_quality_vendi_documented_quality_options_example_runs(tiny_lm):
    """The option help's example, {'quality': 'informative'}, runs without contexts (each response rated alone)."""
    from dialeval import registry
    from dialeval.similarity.quality_vendi import compute_quality_vendi

    assert "{'quality': 'informative'}" in registry.get("quality_vendi").option("quality_options").help
    got = compute_quality_vendi([SHORT], kernel="ngram", quality_model=tiny_lm,
                                quality_options={"quality": "informative", "backend": "torch"})
    assert "/quality:informative/" in got["signature"] and 0 <= got["mean_qualities"][0] <= 1
    assert got["scores"][0] == pytest.approx(got["mean_qualities"][0] * 3.0, abs=1e-9)


# -- the LLM judge ----------------------------------------------------------------------------------------------------
def test_pairwise_identical_responses_are_a_tie_at_every_batch_size(tiny_lm):
    from dialeval.judge.llm_judge import compare

    contexts = [[f"turn {i} of the talk", "how are you ?"] for i in range(12)]
    responses = [f"I am fine {i} ." + " yes" * (i % 4) for i in range(12)]
    for batch_size in (5, 3):
        got = compare(contexts, responses, responses, model=tiny_lm, backend="torch", batch_size=batch_size)
        assert got["win_rate_a"] == 0.5 and got["p_a_better"] == [0.5] * 12


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"contexts": [{"a": "b"}], "predictions": ["x"]}, TypeError, "`contexts[0]` is a dict"),
    ({"contexts": [["a\ud800b"]], "predictions": ["x"]}, ValueError, "lone surrogate"),
    ({"contexts": [["a"]], "predictions": ["x\udfff"]}, ValueError, "lone surrogate"),
    ({"contexts": [["a"] * 100_001], "predictions": ["x"]}, ValueError, "at most 100,000"),
])
def test_judge_refuses_bad_contexts_before_loading_a_model(kwargs, error, words):
    from dialeval.judge.llm_judge import compute_llm_judge

    with pytest.raises(error) as info:
        compute_llm_judge(**kwargs, model="/nonexistent-model-folder")
    assert words in str(info.value) and "\n" not in str(info.value)


class ChatStub:
    """A tokenizer with a chat template: one token per character."""

    chat_template = "stub"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return f"<user>{messages[0]['content']}</user><assistant>"

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}


def test_a_rubric_holding_the_item_mark_is_split_at_the_item():
    from dialeval.judge.llm_judge import ITEM_MARK, prompt_frame

    head = f"Rubric: rate {ITEM_MARK} well\n\n"
    before, after, answer = prompt_frame(ChatStub(), head, "\n\nHow?", "Rating:", chat=True)
    assert "".join(map(chr, before)) == "<user>" + head and after == "\n\nHow?</user><assistant>"


def test_a_long_history_is_truncated_in_a_few_tokenisations(tiny_lm):
    """5,000 turns: the kept turns are the longest run of latest turns that fits (found here by growing it from the
    newest turn), with at most 20 tokenisations instead of thousands."""
    from transformers import AutoTokenizer

    from dialeval.judge.llm_judge import item_ids
    from dialeval.judge.rubrics import item_text

    tok = AutoTokenizer.from_pretrained(tiny_lm)
    calls = []

    def counting(text, add_special_tokens=False):
        calls.append(1)
        return tok(text, add_special_tokens=add_special_tokens)

    turns = [f"turn number {i} says hello" for i in range(5000)]
    render = lambda t: item_text("turn", t, "fine .")  # noqa: E731
    got = item_ids(counting, render, turns, "\nRating:", 300)
    assert len(calls) <= 20
    kept = 1  # the longest run of latest turns that fits, grown one turn at a time from the newest
    while len(tok(render(turns[-(kept + 1):]) + "\nRating:", add_special_tokens=False)["input_ids"]) <= 300:
        kept += 1
    kept = turns[-kept:]
    assert 1 < len(kept) < 100
    assert got == tok(render(kept) + "\nRating:", add_special_tokens=False)["input_ids"][-300:]


# -- the LightEval and Inspect adapters -------------------------------------------------------------------------------
BAD_OPTIONS = [
    ("distinct_n", {"n": "abc"}, TypeError, "`n` must be an integer or a list of integers"),
    ("vendi_score", {"q": -1}, ValueError, "`q`=-1 is out of range"),
    ("vendi_score", {"kernel": "rbf"}, ValueError, "`kernel`='rbf' is not one of"),
    ("llm_judge_turn", {"rubric": 5}, TypeError, "`rubric` must be text"),
    ("llm_judge_turn", {"model": 5}, TypeError, "`model` must be a model"),
    ("quality_vendi", {"q": "abc"}, TypeError, "`q` must be a number"),
]


@pytest.mark.parametrize(("name", "options", "error", "words"), BAD_OPTIONS)
def test_adapters_refuse_wrong_options_at_creation(name, options, error, words):
    from dialeval.integrations import inspect as di
    from dialeval.integrations import lighteval as dl

    for make in (dl.metric, di.scorer):
        with pytest.raises(error) as info:
            make(name, **options)
        assert words in str(info.value) and "\n" not in str(info.value)


def test_lighteval_marks_an_empty_generation_and_scores_the_others(tiny_lm):
    """One empty generation in a batch: that doc scores NaN (left out of the mean), the others score as alone."""
    from lighteval.models.model_output import ModelResponse

    from dialeval.integrations import lighteval as dl
    from dialeval.judge.llm_judge import compute_llm_judge

    options = {"model": tiny_lm, "backend": "torch"}
    fn = dl.metric("llm_judge_turn", **options).sample_level_fn
    docs = [dl.dialogue_doc(["Hi there .", "How are you ?"], "t"), dl.dialogue_doc(["What now ?"], "t"),
            dl.dialogue_doc(["Bye ."], "t")]
    responses = [ModelResponse(text=["Fine , thanks ."]), ModelResponse(text=["  "]), ModelResponse(text=["See you ."])]
    got = fn.compute(responses, docs)
    alone = compute_llm_judge([["Hi there .", "How are you ?"], ["Bye ."]], ["Fine , thanks .", "See you ."],
                              **options)["scores"]
    assert math.isnan(got[1]) and [got[0], got[2]] == pytest.approx(alone, abs=1e-9)
    assert dl.metric("llm_judge_turn", **options).corpus_level_fn(got) == pytest.approx(np.mean(alone), abs=1e-12)
    with pytest.raises(ValueError, match=r"^llm_judge_turn: 2 model responses for 3 items; each item needs"):
        fn.compute(responses[:2], docs)


def test_inspect_corpus_scorer_reads_every_epoch(tmp_path):
    """Two epochs with different generations: distinct_1 is over all four generations, not epoch 1's two."""
    from inspect_ai import Epochs, Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        ModelOutput,
        ModelUsage,
        get_model,
    )
    from inspect_ai.solver import generate

    from dialeval.integrations import inspect as di

    answers = {("one", 1): "a b", ("one", 2): "c d", ("two", 1): "a b", ("two", 2): "e f"}
    seen: dict[str, int] = {}

    def respond(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        seen[prompt] = seen.get(prompt, 0) + 1
        return ModelOutput(model="mockllm/model", choices=[ChatCompletionChoice(message=ChatMessageAssistant(
            content=answers[(prompt, seen[prompt])], model="mockllm/model"))],
            usage=ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2))

    task = Task(dataset=MemoryDataset([Sample(input="one", id=1), Sample(input="two", id=2)]), solver=generate(),
                scorer=[di.scorer("distinct_n", n=[1])], epochs=Epochs(2))
    (log,) = eval(task, model=get_model("mockllm/model", custom_outputs=respond), log_dir=str(tmp_path),
                  display="none", max_connections=1)
    assert log.status == "success", log.error
    got = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    assert got["distinct_n/distinct_1"] == pytest.approx(6 / 8)  # a b c d a b e f: 6 distinct of 8


# -- hub build --------------------------------------------------------------------------------------------------------
def leaderboard_folder(root: Path, metrics=("column:x",)) -> Path:
    folder = root / "lb"
    folder.mkdir()
    rows = [{"metric": m, "dataset": "fed", "config": "turn", "target": "overall", "statistic": "spearman",
             "value": 0.5, "ci_low": 0.1, "ci_high": 0.7, "n": 10, "level": "item"} for m in metrics]
    (folder / "leaderboard.json").write_text(json.dumps({"generator": "dialeval leaderboard", "rows": rows,
                                                         "pairs": []}), encoding="utf-8")
    return folder


def hub_build(*args: str) -> tuple[int, str]:
    import contextlib
    import io

    from dialeval.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["hub", "build", "--org", "me", "--no-datasets", "--only", "distinct_n", *args])
    return rc, err.getvalue()


def test_hub_build_refuses_a_symlinked_leaderboard_plot(tmp_path):
    folder = leaderboard_folder(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("private", encoding="utf-8")
    (folder / "leaderboard.png").symlink_to(secret)
    rc, err = hub_build("--from-index", "--out", str(tmp_path / "out"), "--leaderboard", str(folder))
    assert rc == 2 and "leaderboard.png' is a symlink" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_hub_build_refuses_a_wheel_that_is_not_a_dialeval_wheel(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("private", encoding="utf-8")
    fake = tmp_path / "dialeval-0.1.0-py3-none-any.whl"
    fake.write_text("not a zip", encoding="utf-8")
    for wheel in (secret, fake):
        rc, err = hub_build("--out", str(tmp_path / "out"), "--wheel", str(wheel))
        assert rc == 2 and "is not a" in err and "wheel" in err and err.count("\n") == 1
        assert not (tmp_path / "out").exists()


def test_leaderboard_names_that_would_share_a_yaml_file_are_refused(tmp_path):
    from dialeval.meta.publish import write_hub_dataset

    folder = leaderboard_folder(tmp_path, ("column:x", "column-x"))
    with pytest.raises(ValueError, match=r"'column:x' and 'column-x' would both be written as eval_results/column-x"):
        write_hub_dataset(folder, tmp_path / "hub", "me")
    assert not (tmp_path / "hub").exists()


@pytest.mark.parametrize("change", [{"dataset": "bogus"}, {"statistic": "bogus"}])
def test_a_malformed_leaderboard_report_is_one_line(tmp_path, change):
    from dialeval.meta.publish import write_hub_dataset

    folder = leaderboard_folder(tmp_path)
    report = json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
    report["rows"][0].update(change)
    report["clusters"] = ["not an object"]
    (folder / "leaderboard.json").write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        write_hub_dataset(folder, tmp_path / "hub", "me")
    assert "leaderboard.json" in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "hub").exists()


# -- MCP --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["skipped", "unavailable", "error"])
def test_an_mcp_call_whose_metric_did_not_run_is_a_tool_error(status):
    """An empty box, a one-response set, an absent model: the tool raises the one line (MCP's isError)."""
    import asyncio

    import gradio as gr

    from dialeval import registry
    from dialeval.ui.mcp import metric_tool

    async def score(progress, request, texts, selected):
        return {"vendi_score": {"status": status, "reason": "Responses: give at least 2 responses."}}

    tool = metric_tool(registry.get("vendi_score"), score)
    with pytest.raises(gr.Error) as info:
        asyncio.run(tool(None, "a", ""))
    assert str(info.value.message) == f"vendi_score {status}: Responses: give at least 2 responses."

    async def ok(progress, request, texts, selected):
        return {"vendi_score": {"vendi_score": 1.0}}

    assert json.loads(asyncio.run(metric_tool(registry.get("vendi_score"), ok)(None, "a\nb", ""))) == \
        {"vendi_score": {"vendi_score": 1.0}}
