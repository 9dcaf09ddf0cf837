"""fp32 linear layers through oneDNN on AMD CPUs (:mod:`dialeval.models.onednn_linear`): which CPUs switch, that a
switched layer gives F.linear's numbers within fp32 rounding, and that training, ONNX export and bf16 conversion
still see a plain linear layer."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from dialeval.models import bf16_matmul, cpu, onednn_linear

FP32_ROUNDOFF = 2.0 ** -24


def _switched(linear: torch.nn.Linear) -> torch.nn.Linear:
    linear.__class__ = onednn_linear.onednn_linear_class()
    return linear


def test_this_torch_build_has_the_onednn_op():
    assert onednn_linear.onednn_available()


@pytest.mark.parametrize(("vendor", "kind", "switch"), [
    ("AuthenticAMD", "avx512-bf16", True), ("AuthenticAMD", "avx512", True), ("AuthenticAMD", "avx2", False),
    ("GenuineIntel", "amx", False), ("GenuineIntel", "avx512-bf16", False), ("", "other", False)])
def test_amd_cpus_with_avx512_switch_by_default(monkeypatch, vendor, kind, switch):
    monkeypatch.delenv(onednn_linear.ENGINE_VARIABLE, raising=False)
    assert onednn_linear.prefers_onednn(vendor, kind) is switch


@pytest.mark.parametrize(("setting", "switch"), [("default", False), ("onednn", True), ("AUTO", False), ("", False)])
def test_the_variable_overrides_the_choice(monkeypatch, setting, switch):
    monkeypatch.setenv(onednn_linear.ENGINE_VARIABLE, setting)
    assert onednn_linear.prefers_onednn("GenuineIntel", "amx") is switch
    assert onednn_linear.prefers_onednn("AuthenticAMD", "avx512-bf16") is (setting != "default")


def test_an_unknown_setting_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(onednn_linear.ENGINE_VARIABLE, "mkl")
    with pytest.raises(ValueError, match=r"^DIALEVAL_FP32_LINEAR='mkl': use one of auto, onednn, default") as err:
        onednn_linear.prefers_onednn("AuthenticAMD", "avx512-bf16")
    assert "\n" not in str(err.value)


def test_the_vendor_is_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2\n\nprocessor\t: 1\n"
                    "vendor_id\t: GenuineIntel\n")
    assert cpu.read_field("vendor_id", str(info)) == "AuthenticAMD"
    assert cpu.read_field("vendor_id", str(tmp_path / "missing")) is None


def test_a_switched_layer_gives_the_plain_product_within_fp32_rounding():  # 98 million multiply-adds: oneDNN
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 37, 576, generator=gen)
    plain = torch.nn.Linear(576, 1536)
    with torch.inference_mode():
        want = torch.nn.functional.linear(x.double(), plain.weight.double(), plain.bias.double())
        got = _switched(plain)(x).double()
        # each of the 576 products and sums rounds once in fp32: |error| ≤ γ_577 · (|x|·|W|ᵀ + |b|)
        bound = 577 * FP32_ROUNDOFF * (x.double().abs() @ plain.weight.double().abs().T + plain.bias.double().abs())
    assert type(plain).__name__ == "OneDnnLinear" and isinstance(plain, torch.nn.Linear)
    assert got.shape == want.shape
    assert bool(((got - want).abs() <= bound).all())


def test_autograd_falls_back_to_the_plain_product():
    gen = torch.Generator().manual_seed(1)
    layer = _switched(torch.nn.Linear(8, 4))
    x = torch.randn(5, 8, generator=gen, requires_grad=True)
    with torch.enable_grad():  # explicitly: an imported library may have switched grad off process-wide
        layer(x).sum().backward()
    assert torch.allclose(x.grad, layer.weight.detach().sum(0).expand(5, 8), atol=1e-6)
    assert layer.weight.grad is not None and torch.allclose(layer.weight.grad, x.detach().sum(0).expand(4, 8), atol=1e-6)


@pytest.mark.onnx
def test_an_onnx_export_holds_plain_matrix_products(tmp_path):
    import onnx
    import onnxruntime as ort

    gen = torch.Generator().manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 3)).eval()
    onednn_linear.with_onednn_linears(model)
    x = torch.randn(4, 16, generator=gen)
    path = tmp_path / "m.onnx"
    with torch.no_grad():
        torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"], opset_version=17,
                          dynamo=False)
        want = model(x).numpy()
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert ops <= {"Gemm", "MatMul", "Add", "Erf", "Div", "Mul", "Constant"}, ops
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("vendor", "switched"), [("AuthenticAMD", True), ("GenuineIntel", False)])
def test_placing_a_model_in_fp32_on_a_cpu_switches_by_vendor(monkeypatch, vendor, switched):
    monkeypatch.delenv(onednn_linear.ENGINE_VARIABLE, raising=False)
    monkeypatch.setattr(cpu, "cpu_vendor", lambda: vendor)
    monkeypatch.setattr(cpu, "cpu_kind", lambda: cpu.CpuKind("avx512-bf16", True))
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    placed = bf16_matmul.placed(model, torch.float32, torch.device("cpu"))
    assert {type(m).__name__ for m in placed} == ({"OneDnnLinear"} if switched else {"Linear"})


def test_placing_in_bf16_switches_nothing_to_onednn(monkeypatch):
    monkeypatch.setenv(onednn_linear.ENGINE_VARIABLE, "onednn")
    model = bf16_matmul.placed(torch.nn.Sequential(torch.nn.Linear(4, 4)), torch.bfloat16, torch.device("cpu"))
    assert {type(m).__name__ for m in model} == {"Bf16Linear"}


def _ops(run) -> set[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    return {event.key for event in prof.key_averages()}


def test_the_onednn_op_runs_for_a_large_product_and_not_where_it_cannot():
    layer = _switched(torch.nn.Linear(576, 1536))
    big, small = torch.randn(64, 576), torch.randn(4, 576)  # 56.6 million and 3.5 million multiply-adds
    with torch.inference_mode():
        assert "mkldnn::_linear_pointwise" in _ops(lambda: layer(big))
        assert "mkldnn::_linear_pointwise" not in _ops(lambda: layer(small))
        wide = copy.deepcopy(layer).double()
        assert type(wide) is type(layer) and "mkldnn::_linear_pointwise" not in _ops(lambda: wide(big.double()))
    with torch.enable_grad():  # autograd records: the weight needs grad
        assert "mkldnn::_linear_pointwise" not in _ops(lambda: layer(big))
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.inference_mode():
        out = layer(big)
    assert out.dtype == torch.bfloat16  # autocast's own rule, as for a plain layer


def test_a_trainable_bias_alone_still_gets_its_gradient():
    layer = _switched(torch.nn.Linear(576, 1536))
    layer.weight.requires_grad_(False)
    with torch.enable_grad():
        layer(torch.randn(64, 576)).sum().backward()
    assert layer.bias.grad is not None and torch.allclose(layer.bias.grad, torch.full((1536,), 64.0))


def test_fx_tracing_sees_a_plain_linear_product():
    import torch.fx

    model = onednn_linear.with_onednn_linears(torch.nn.Sequential(torch.nn.Linear(4, 3)))
    traced = torch.fx.symbolic_trace(model)
    x = torch.randn(2, 4)
    assert torch.allclose(traced(x), model(x))


def test_a_switched_model_still_converts_to_bf16_products():
    model = onednn_linear.with_onednn_linears(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)))
    converted = bf16_matmul.with_bf16_matmuls(model)
    assert {type(m).__name__ for m in converted} >= {"Bf16Linear"}
    assert not any(type(m).__name__ == "OneDnnLinear" for m in converted.modules())


def test_a_switched_layer_pickles_and_copies_by_its_module_path():
    import io

    layer = _switched(torch.nn.Linear(3, 2))
    buffer = io.BytesIO()
    torch.save(layer, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert type(loaded) is type(layer) and torch.equal(loaded.weight, layer.weight)
    assert type(copy.deepcopy(layer)) is type(layer)


def test_a_switched_lm_placed_in_bf16_keeps_its_bf16_head_route(tmp_path):
    from transformers import AutoModelForCausalLM

    from dialeval.models.lm_head import bf16_head_weight
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    model = AutoModelForCausalLM.from_pretrained(build_tiny_causal_lm(tmp_path / "llama", arch="llama"))
    onednn_linear.with_onednn_linears(model)
    assert type(model.get_output_embeddings()).__name__ == "OneDnnLinear"
    converted = bf16_matmul.placed(model, torch.bfloat16, torch.device("cpu"))
    assert bf16_head_weight(converted) is converted.get_output_embeddings().weight
