"""Which engine runs a causal LM's pass on the ONNX route: ONNX Runtime for short rows, the torch module the graph
was exported from for long ones (``TORCH_ATTENTION_CELLS``). Both give the same logits and caches; FULL and the
LLM judge give the same scores whichever engine runs each pass, and the same as the torch backend."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dialeval.full.full_followup import compute_full
from dialeval.judge.scorer import JudgeScorer
from dialeval.models import onnx_backend, onnx_lm
from dialeval.models.lm import load_lm
from dialeval.testing.blenderbot import build_tiny_causal_lm

pytestmark = pytest.mark.onnx


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("lm_engine"), seed=11))


@pytest.fixture
def engines(monkeypatch):
    """Counts of passes run on ONNX Runtime and on torch."""
    seen = {"onnxruntime": 0, "torch": 0}
    ort_call, torch_call = onnx_backend.OnnxRunner.__call__, onnx_lm.OnnxCausalLM._run_torch

    def ort(self, arrays):
        seen["onnxruntime"] += 1
        return ort_call(self, arrays)

    def on_torch(self, mode, feed):
        seen["torch"] += 1
        return torch_call(self, mode, feed)

    monkeypatch.setattr(onnx_backend.OnnxRunner, "__call__", ort)
    monkeypatch.setattr(onnx_lm.OnnxCausalLM, "_run_torch", on_torch)
    return seen


def _prefix_pass(runner, width):
    ids = np.arange(5, 5 + 2 * width).reshape(2, width) % 300 + 5
    mask = np.ones_like(ids)
    mask[1, :3] = 0  # left padding on the second row
    return runner.run_prefix(ids, mask, np.maximum(mask.cumsum(-1) - 1, 0))


def test_rows_over_the_cell_threshold_run_on_torch(tiny_lm, engines, monkeypatch):
    runner = load_lm(tiny_lm, backend="onnx").onnx
    width = 12  # 12 × 12 = 144 attention cells per row
    monkeypatch.setattr(onnx_lm, "TORCH_ATTENTION_CELLS", 144)
    short = _prefix_pass(runner, width)
    assert engines == {"onnxruntime": 1, "torch": 0}
    monkeypatch.setattr(onnx_lm, "TORCH_ATTENTION_CELLS", 143)
    long = _prefix_pass(runner, width)
    assert engines == {"onnxruntime": 1, "torch": 1}
    np.testing.assert_allclose(long[0], short[0], rtol=1e-5, atol=1e-5)
    assert len(long[1]) == len(short[1])
    real = np.ones((2, width), dtype=bool)
    real[1, :3] = False  # cache entries at padding are masked out of every later pass: their values differ
    for a, b in zip(long[1], short[1]):  # between SDPA (torch) and eager attention (the exported graphs)
        assert a.shape == b.shape and a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a.transpose(0, 2, 1, 3)[real], b.transpose(0, 2, 1, 3)[real], rtol=1e-5, atol=1e-5)
    # a continuation after that cache: past 12 + 4 new tokens → 4 × 16 = 64 cells
    ids, mask = np.array([[7, 8, 9, 10]] * 2), np.ones((2, 16), dtype=np.int64)
    mask[1, :3] = 0
    pos = np.array([[12, 13, 14, 15], [9, 10, 11, 12]])
    monkeypatch.setattr(onnx_lm, "TORCH_ATTENTION_CELLS", 64)
    on_ort = runner.run_last_after_rows(short[1], np.array([0, 1]), ids, mask, pos)
    monkeypatch.setattr(onnx_lm, "TORCH_ATTENTION_CELLS", 63)
    on_torch = runner.run_last_after_rows(short[1], np.array([0, 1]), ids, mask, pos)
    assert engines == {"onnxruntime": 2, "torch": 2}
    assert on_torch.shape == on_ort.shape == (2, on_ort.shape[-1])
    np.testing.assert_allclose(on_torch, on_ort, rtol=1e-5, atol=1e-5)


def test_int8_graphs_never_switch_to_torch(tiny_lm, engines, monkeypatch):
    runner = load_lm(tiny_lm, backend="onnx-int8").onnx
    monkeypatch.setattr(onnx_lm, "TORCH_ATTENTION_CELLS", 0)
    _prefix_pass(runner, 12)
    assert engines == {"onnxruntime": 1, "torch": 0}


HISTORIES = [["hello there , how are you ?", "fine thanks and you"], ["what did you eat today ?"],
             ["we went to the park", "was it nice ?", "yes , very sunny and warm all day long"]]


@pytest.mark.parametrize("threshold", [0, 200])
def test_scores_equal_whichever_engine_runs_each_pass(tiny_lm, engines, monkeypatch, threshold, cached_routes):
    reference_full = compute_full(HISTORIES, level="turn", model=tiny_lm, backend="torch")["scores"]
    judge_items = [list(range(20, 20 + n)) for n in (3, 9, 25, 40)]
    prefix = list(range(50, 70))
    reference_judge = JudgeScorer(load_lm(tiny_lm, backend="torch")).score(prefix, judge_items, [5, 6, 7, 8, 9],
                                                                           progress=False)[0]
    monkeypatch.setattr(onnx_lm, "TORCH_ATTENTION_CELLS", threshold)
    full = compute_full(HISTORIES, level="turn", model=tiny_lm, backend="onnx")["scores"]
    judged = JudgeScorer(load_lm(tiny_lm, backend="onnx")).score(prefix, judge_items, [5, 6, 7, 8, 9],
                                                                 progress=False)[0]
    np.testing.assert_allclose(full, reference_full, rtol=1e-5)
    np.testing.assert_allclose(judged, reference_judge, rtol=1e-5)
    assert engines["torch"] > 0  # threshold 0: every pass; 200: the longer ones
    assert (engines["onnxruntime"] > 0) == (threshold > 0)


def test_export_graphs_exports_what_the_first_request_would(tiny_lm):
    """``dialeval demo`` prepares a causal LM on ONNX Runtime whole: the judge's ``last`` graph and FULL's ``packed``
    one exist before any request (each is otherwise exported at its first use), each in its own cache folder."""
    runner = load_lm(tiny_lm, backend="onnx").onnx
    runner.export_graphs()
    assert {"last", "packed"} <= set(runner._runners)
    kinds = [json.loads((runner._runners[m].path.parent / onnx_backend.SOURCE_FILE).read_text())["kind"]
             for m in ("last", "packed")]
    assert kinds == ["causal-lm-continuation-last", "causal-lm-packed-continuation"]


def test_each_kinds_threshold_sends_every_measured_pass_to_its_faster_engine():
    """Every CPU kind's threshold against its measurement: every pass of each ``lm_attention_route.<kind>.json``
    runs on the engine that was faster there, or on one within 5 % of it (the rounds' noise), under the threshold
    that kind gets (a kind's own entry, else the default)."""
    results = Path(__file__).resolve().parents[1] / "docs" / "results" / "benchmarks"
    files = sorted(results.glob("lm_attention_route.*.json"))
    assert {f.name.split(".")[1] for f in files} >= {"amx", "avx2", "avx512-bf16"}
    for path in files:
        kind = path.name.split(".")[1]
        limit = onnx_lm.torch_attention_cells(kind)
        rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
        assert len(rows) >= 10, kind
        for row in rows:
            on_torch = limit is not None and row["cells per row"] > limit
            speedup = row["torch speed-up"]  # ONNX Runtime seconds / torch seconds
            assert (speedup >= 0.95) if on_torch else (speedup <= 1.05), (kind, limit, row)


def test_the_threshold_follows_the_cpu_kind_at_each_call(monkeypatch):
    from dialeval.models import cpu

    for kind in ("avx2", "avx512-bf16", "amx", "other"):
        monkeypatch.setattr(cpu, "cpu_kind", lambda kind=kind: cpu.CpuKind(kind, False))
        assert onnx_lm.torch_attention_cells() == onnx_lm.torch_attention_cells(kind)
    assert onnx_lm.torch_attention_cells("avx2") > onnx_lm.torch_attention_cells("amx")
    assert onnx_lm.torch_attention_cells("avx512-bf16") is None
