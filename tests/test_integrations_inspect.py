"""dialeval's metrics as Inspect AI scorers: an Inspect eval run offline on Inspect's mock model (``mockllm/model``,
answering each FED context with two of FED's own responses) gives the numbers of ``dialeval.load(...).compute``."""

import json

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.solver import generate

import dialeval
from dialeval.datasets.fed import fed_rows
from dialeval.integrations import adapted
from dialeval.integrations import inspect as di
from dialeval.testing.blenderbot import build_tiny_causal_lm

ITEMS = 5


@pytest.fixture(scope="module")
def fed_turns(shared_data):
    path = shared_data / "fed" / "fed_data.json"
    rows = fed_rows(json.loads(path.read_text(encoding="utf-8")), "turn", path)
    rows = [r for r in rows if r["response"].strip()][: ITEMS + 1]
    return [{"contexts": [t["text"] for t in r["context"]][-3:], "response": r["response"],
             "other": rows[i + 1]["response"]} for i, r in enumerate(rows[:ITEMS])]


def mock_model(turns):
    """``mockllm/model`` answering a FED context with its FED response, and a second choice (the next item's). The
    outputs state their usage: without it mockllm counts tokens with tiktoken, which downloads its table."""
    answers = {"\n".join(t["contexts"]): (t["response"], t["other"]) for t in turns}

    def respond(messages, tools, tool_choice, config):
        texts = answers[messages[-1].text]
        return ModelOutput(model="mockllm/model", choices=[
            ChatCompletionChoice(message=ChatMessageAssistant(content=text, model="mockllm/model"))
            for text in texts], usage=ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2))

    return get_model("mockllm/model", custom_outputs=respond)


def test_one_scorer_factory_per_declared_metric():
    factories = di.scorers()
    assert list(factories) == list(adapted())
    assert callable(factories["vendi_score"]())
    with pytest.raises(ValueError, match=r"vendi_score: `batch_size`=0 is out of range: 1 ≤ batch_size"):
        factories["vendi_score"](batch_size=0)


def test_inspect_eval_equals_direct_compute(tmp_path, fed_turns):
    lm = build_tiny_causal_lm(tmp_path / "lm", arch="llama")
    full = {"model": str(lm), "device": "cpu"}
    samples = [Sample(input="\n".join(t["contexts"]), target="", id=i, metadata={"contexts": t["contexts"]})
               for i, t in enumerate(fed_turns, 1)]
    task = Task(dataset=MemoryDataset(samples), solver=generate(),
                scorer=[di.scorer("distinct_n"), di.scorer("vendi_score"), di.scorer("full_followup_turn", **full),
                        di.scorer("context_relevance_turn"), di.scorer("learned_quality_turn")])
    (log,) = eval(task, model=mock_model(fed_turns), log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    got = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}

    responses = [t["response"] for t in fed_turns]
    distinct = dialeval.load("distinct_n").compute(predictions=responses)
    assert {k: got[f"distinct_n/{k}"] for k in ("distinct_1", "distinct_2", "distinct_3")} == \
        {k: distinct[k] for k in ("distinct_1", "distinct_2", "distinct_3")}
    vendi = dialeval.load("vendi_score").compute(predictions=[[t["response"], t["other"]] for t in fed_turns])
    assert got["vendi_score/vendi_score"] == vendi["vendi_score"]

    contexts = [t["contexts"] for t in fed_turns]
    per_sample = {s.id: s.scores["full_followup_turn"].value for s in log.samples}
    alone = [dialeval.load("full_followup", "turn").compute(contexts=[c], predictions=[r], **full)["scores"][0]
             for c, r in zip(contexts, responses)]
    assert [per_sample[i] for i in range(1, ITEMS + 1)] == alone
    for name in ("context_relevance", "learned_quality"):  # each sample alone, as the scorer ran it
        scored = [s.scores[f"{name}_turn"].value for s in sorted(log.samples, key=lambda s: s.id)]
        direct = [dialeval.load(name, "turn").compute(contexts=[c], predictions=[r])["scores"][0]
                  for c, r in zip(contexts, responses)]
        assert scored == direct, name
    together = dialeval.load("full_followup", "turn").compute(contexts=contexts, predictions=responses, **full)
    # each sample was scored alone, the direct call batches all five (padding): equal up to float rounding
    assert got["full_followup_turn"] == pytest.approx(together["full_followup"], rel=1e-6)


def test_a_corpus_scorer_evaluated_again_reads_only_its_own_run(tmp_path):
    """The same Task twice, 3 epochs then 2: the second run's distinct_1 is over its own 4 generations, without
    the first run's third epoch."""
    from inspect_ai import Epochs

    answers = {"one": ["a b", "c d", "x y", "a b", "e f"], "two": ["a b", "c d", "z w", "a b", "g h"]}
    seen: dict[str, int] = {}

    def respond(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        seen[prompt] = seen.get(prompt, 0) + 1
        return ModelOutput(model="mockllm/model", choices=[ChatCompletionChoice(message=ChatMessageAssistant(
            content=answers[prompt][seen[prompt] - 1], model="mockllm/model"))],
            usage=ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2))

    model = get_model("mockllm/model", custom_outputs=respond)
    task = Task(dataset=MemoryDataset([Sample(input="one", id=1), Sample(input="two", id=2)]), solver=generate(),
                scorer=[di.scorer("distinct_n", n=[1])])
    got = []
    for run, epochs in enumerate((3, 2)):
        (log,) = eval(task, model=model, log_dir=str(tmp_path / str(run)), display="none", max_connections=1,
                      epochs=Epochs(epochs))
        assert log.status == "success", log.error
        got.append({name: m.value for s in log.results.scores for name, m in s.metrics.items()})
    assert got[0]["distinct_n/distinct_1"] == pytest.approx(8 / 12)  # a b c d x y a b c d z w
    assert got[1]["distinct_n/distinct_1"] == pytest.approx(6 / 8)  # a b e f a b g h
