"""dialeval's metrics as LightEval metrics: a real LightEval custom task, run offline on a tiny random causal LM over
six FED turns, gives the numbers of ``dialeval.load(...).compute(...)`` on the same generations."""

import json
import types

import pytest
from lighteval.logging.evaluation_tracker import EvaluationTracker
from lighteval.models.model_input import GenerationParameters
from lighteval.models.transformers.transformers_model import TransformersModelConfig
from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from transformers import GenerationConfig

import dialeval
from dialeval import registry
from dialeval.datasets.fed import fed_rows
from dialeval.integrations import lighteval as dl
from dialeval.testing.blenderbot import build_tiny_causal_lm

ITEMS = 6


@pytest.fixture(scope="module")
def fed_turns(shared_data):
    path = shared_data / "fed" / "fed_data.json"
    rows = fed_rows(json.loads(path.read_text(encoding="utf-8")), "turn", path)[:ITEMS]
    return [{"contexts": [t["text"] for t in r["context"]][-3:], "response": r["response"]} for r in rows]


def sampling_lm(folder):
    """The tiny random LM, sampling (greedy, a tied-embedding random model repeats its last prompt token)."""
    lm = build_tiny_causal_lm(folder, arch="llama")
    config = GenerationConfig.from_pretrained(lm)
    config.update(do_sample=True, temperature=1.0, top_k=0)
    config.save_pretrained(lm)
    return lm


def run_task(tmp_path, turns, lm, task_metrics):
    """Run one LightEval custom task (the turns as a local JSON-lines dataset) and return the pipeline."""
    data = tmp_path / "fed_turns"
    data.mkdir()
    (data / "test.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    task = LightevalTaskConfig(
        name="fed_turns", prompt_function=lambda line, task_name: dl.dialogue_doc(line["contexts"], task_name, cue="System:"),
        hf_repo=str(data), hf_subset="default", metrics=task_metrics, evaluation_splits=["test"],
        hf_avail_splits=["test"], generation_size=12, stop_sequence=[])
    custom = types.ModuleType("dialeval_fed_tasks")
    custom.TASKS_TABLE = [task]
    with dl.custom_tasks_only():
        pipeline = Pipeline(
            tasks="fed_turns|0",
            pipeline_parameters=PipelineParameters(launcher_type=ParallelismManager.NONE,
                                                   custom_tasks_directory=custom, bootstrap_iters=0),
            evaluation_tracker=EvaluationTracker(output_dir=str(tmp_path / "out"), save_details=False),
            model_config=TransformersModelConfig(model_name=str(lm), device="cpu", batch_size=ITEMS,
                                                 dtype="float32",
                                                 generation_parameters=GenerationParameters(min_new_tokens=4, temperature=1.0)))
    pipeline.evaluate()
    return pipeline


def test_every_declared_metric_is_adapted_at_its_level():
    adapted = dl.metrics()
    for decl in registry.declarations().values():
        names = [decl.name] if decl.configs == ("default",) else [f"{decl.name}_{c}" for c in decl.configs]
        for name in names:
            per_item = (decl.inputs == "dialogues") or name.endswith("_turn")
            assert type(adapted[name]).__name__ == ("SampleLevelMetric" if per_item else "CorpusLevelMetric"), name
    with pytest.raises(TypeError, match="distinct_n: unknown option 'tokeniser'"):
        dl.metric("distinct_n", tokeniser="casual")
    with pytest.raises(ValueError, match="unknown dialeval metric 'dist'; choose one of: distinct_n"):
        dl.metric("dist")
    with pytest.raises(ValueError, match="distinct_n: `samples` sets the size of a response set"):
        dl.metric("distinct_n", samples=3)
    with pytest.raises(ValueError, match="vendi_score: `samples`=1 must be an integer ≥ 2"):
        dl.metric("vendi_score", samples=1)


def test_lighteval_task_equals_direct_compute(tmp_path, fed_turns):
    lm = sampling_lm(tmp_path / "lm")
    full = {"model": str(lm), "device": "cpu"}
    pipeline = run_task(tmp_path, fed_turns, lm, [dl.metric("distinct_n"), dl.metric("ent_n", n=[1, 2]),
                                                  dl.metric("full_followup_turn", **full),
                                                  dl.metric("vendi_score", samples=2),
                                                  dl.metric("context_relevance_turn"), dl.metric("learned_quality_turn")])
    task = "fed_turns|0"
    details = pipeline.evaluation_tracker.details_logger.details[task]
    generations = [d.model_response.final_text[0] for d in details]
    sets = [d.model_response.final_text for d in details]
    assert all(len(s) == 2 for s in sets)
    contexts = [d.doc.specific["contexts"] for d in details]
    assert len(generations) == ITEMS and all(isinstance(g, str) for g in generations)
    got = pipeline.evaluation_tracker.metrics_logger.metric_aggregated[task]

    distinct = dialeval.load("distinct_n").compute(predictions=generations)
    ent = dialeval.load("ent_n").compute(predictions=generations, n=[1, 2])
    for key in ("distinct_1", "distinct_2", "distinct_3", "distinct_mean"):
        assert got[f"distinct_n/{key}"] == distinct[key]
    assert {k: v for k, v in got.items() if k.startswith("ent_n/")} == {"ent_n/ent_1": ent["ent_1"],
                                                                          "ent_n/ent_2": ent["ent_2"]}
    vendi = dialeval.load("vendi_score").compute(predictions=sets)
    assert got["vendi_score/vendi_score"] == vendi["vendi_score"]
    direct = dialeval.load("full_followup", "turn").compute(contexts=contexts, predictions=generations, **full)
    assert [d.metric["full_followup_turn"] for d in details] == direct["scores"]
    assert got["full_followup_turn"] == direct["full_followup"]
    # LightEval hands the encoder metrics its own batches: a text padded beside others goes through other ONNX
    # kernel shapes, so a unit-norm cosine may differ by float32 rounding (~1e-7), never more than 1e-6
    for name in ("context_relevance", "learned_quality"):
        alone = [dialeval.load(name, "turn").compute(contexts=[c], predictions=[g])["scores"][0]
                 for c, g in zip(contexts, generations)]
        assert [d.metric[f"{name}_turn"] for d in details] == pytest.approx(alone, abs=1e-6), name
