"""bf16 on a CPU runs bf16 matrix products inside an fp32 model (:mod:`dialeval.models.bf16_matmul`): each product
matches float64 arithmetic on the bf16-rounded operands, the residual stream and logits stay fp32, the shared
input cast changes no number, and models load this way through ``load_lm`` and the encoders."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dialeval.models import bf16_matmul
from dialeval.models.lm import load_lm
from dialeval.models.runtime import loaded_dtype
from dialeval.testing.blenderbot import build_tiny_causal_lm

UNIT_ROUNDOFF = 2.0 ** -8  #: bf16 keeps 8 significant bits: rounding to nearest moves a value by at most this, relatively
FP32_ROUNDOFF = 2.0 ** -24


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("bf16_models")
    return {arch: build_tiny_causal_lm(root / arch, arch=arch) for arch in ("llama", "gpt2")}


def _rounded(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.bfloat16).double().numpy()


def test_a_product_is_the_exact_product_of_the_rounded_operands_then_one_rounding():
    gen = torch.Generator().manual_seed(0)
    linear = torch.nn.Linear(64, 32)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(32, 64, generator=gen))
        linear.bias.copy_(torch.randn(32, generator=gen))
    x = torch.randn(5, 64, generator=gen)
    layer = bf16_matmul.bf16_linear_class()(linear, bf16_matmul.LastCast())
    got = layer(x).detach()
    assert got.dtype == torch.float32
    exact = _rounded(x) @ _rounded(linear.weight).T  # float64: no rounding of the sum
    # fp32 accumulation of 64 terms (≤ 64·u₃₂·Σ|xᵢwᵢ|), then one rounding of the output to bf16 (≤ u·|y|)
    accumulation = 64 * FP32_ROUNDOFF * (np.abs(_rounded(x)) @ np.abs(_rounded(linear.weight)).T)
    bound = UNIT_ROUNDOFF * (np.abs(exact) + accumulation) + accumulation
    bias = linear.bias.detach().double().numpy()  # added in fp32: one more fp32 rounding
    assert np.all(np.abs(got.double().numpy() - bias - exact) <= bound + FP32_ROUNDOFF * np.abs(exact + bias) * 2)


def test_the_residual_stream_and_logits_stay_fp32_and_closer_to_fp32_than_a_whole_bf16_model(tiny):
    ids = torch.tensor([[1, 5, 9, 14, 3, 7, 2, 11]])
    fp32 = load_lm(str(tiny["llama"]), device="cpu", backend="torch")
    mixed = load_lm(str(tiny["llama"]), device="cpu", dtype="bf16")
    whole = type(fp32.model).from_pretrained(fp32.path, dtype=torch.bfloat16).eval()
    with torch.inference_mode():
        ref = fp32.model(input_ids=ids).logits.double()
        got = mixed.model(input_ids=ids).logits
        plain = whole(input_ids=ids).logits.double()
    assert got.dtype == torch.float32 and mixed.model.model.embed_tokens.weight.dtype == torch.float32
    assert mixed.model.get_output_embeddings().weight.dtype == torch.float32  # the LM head is not converted
    assert (got.double() - ref).abs().max() < (plain - ref).abs().max()
    assert loaded_dtype(mixed.model) == torch.bfloat16  # what the signature names


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_the_shared_input_cast_gives_the_numbers_of_one_cast_per_product(tiny, arch):
    class EveryCall(bf16_matmul.LastCast):
        def __call__(self, x):
            return x.to(torch.bfloat16)

    shared = load_lm(str(tiny[arch]), device="cpu", dtype="bf16").model
    fresh = type(shared).from_pretrained(str(tiny[arch]), dtype=torch.float32).eval()
    bf16_matmul.with_bf16_matmuls(fresh)
    every = EveryCall()
    for module in fresh.modules():
        if hasattr(module, "cast"):
            module.cast = every
    ids = torch.tensor([[4, 8, 15, 16, 23, 42, 6, 1], [2, 3, 5, 7, 11, 13, 17, 19]])
    with torch.inference_mode():
        assert torch.equal(shared(input_ids=ids).logits, fresh(input_ids=ids).logits)
    converted = [m for m in shared.modules() if hasattr(m, "cast")]
    assert converted and all(m.weight.dtype == torch.bfloat16 for m in converted)  # GPT-2's Conv1D too


def test_a_model_without_linear_layers_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^Embedding has no linear layers to run in bf16 on this CPU; use "
                                         r"dtype='fp32'\.$"):
        bf16_matmul.with_bf16_matmuls(torch.nn.Embedding(4, 2))


def test_only_bf16_on_a_cpu_runs_this_way():
    assert bf16_matmul.cpu_bf16(torch.bfloat16, torch.device("cpu"))
    assert not bf16_matmul.cpu_bf16(torch.bfloat16, torch.device("cuda"))
    assert not bf16_matmul.cpu_bf16(torch.float32, torch.device("cpu"))


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_the_default_encoder_in_bf16_keeps_fp32_between_its_products_and_stays_closer_to_fp32():
    """The README's claim: closer to fp32 than sentence-transformers' model cast whole to bf16."""
    from sentence_transformers import SentenceTransformer

    from dialeval.models.encoders import default_encoder_path, get_encoder

    enc = get_encoder(None, device="cpu", dtype="bf16", backend="torch")
    ref = get_encoder(None, device="cpu", backend="torch")
    texts = [f"{a} {b}, and {c}?" for a in ("how are you", "where were you", "what did you eat")
             for b in ("today", "last night", "at the party") for c in ("the weather", "your sister", "work")]
    got, want = enc.encode(texts), ref.encode(texts)
    whole = SentenceTransformer(str(default_encoder_path()), device="cpu").to(torch.bfloat16)
    cast = whole.encode(texts, batch_size=32, convert_to_tensor=True).float().numpy()
    assert enc.dtype_name == "bf16" and bf16_matmul.compute_dtype(enc.model) == torch.bfloat16
    norms = [p.dtype for n, p in enc.model.named_parameters() if "LayerNorm" in n]
    assert norms and set(norms) == {torch.float32}
    assert _cosines(got, want).min() > 0.999  # bf16 rounding of 6 layers' products, not a different embedding
    assert (1 - _cosines(got, want)).max() < (1 - _cosines(cast, want)).max()


def test_an_nli_classifier_keeps_its_head_fp32_and_a_converted_model_is_not_reused_in_fp32(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from dialeval.nli.core import NLIClassifier
    from dialeval.testing.roberta import CNE, tiny_nli_model

    path = tiny_nli_model(tmp_path / "nli", CNE)
    model = AutoModelForSequenceClassification.from_pretrained(str(path))
    tok = AutoTokenizer.from_pretrained(str(path))
    bf16 = NLIClassifier(model, tok, device="cpu", dtype="bf16")
    converted = [m for m in bf16.model.modules() if hasattr(m, "cast")]
    assert converted and all(not hasattr(m, "cast") for m in bf16.model.classifier.modules())
    probs = np.asarray(bf16([("a cat sat", "a cat sat"), ("it rains", "the sun is out")]))
    assert probs.shape == (2, 3) and np.all(np.isfinite(probs))
    with pytest.raises(ValueError, match=r"^this NLI model runs its products in bf16 .*load it again for "
                                         r"dtype='fp32'\.$"):
        NLIClassifier(model, tok, device="cpu")


def test_a_model_not_in_fp32_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^Linear is not all fp32; load it in fp32 before"):
        bf16_matmul.with_bf16_matmuls(torch.nn.Linear(3, 3).to(torch.float16))


def test_the_cast_memo_keeps_no_input_after_a_forward_pass(tiny):
    lm = load_lm(str(tiny["llama"]), device="cpu", dtype="bf16")
    with torch.inference_mode():
        lm.model(input_ids=torch.tensor([[1, 2, 3]]))
    casts = {id(m.cast): m.cast for m in lm.model.modules() if hasattr(m, "cast")}
    assert len(casts) == 1 and next(iter(casts.values())).last is None


def test_the_default_encoder_gives_the_same_numbers_with_one_cast_per_product():
    """The shared cast on BERT (the default encoder): q, k and v read one normalised tensor."""
    from dialeval.models.encoders import get_encoder

    class EveryCall(bf16_matmul.LastCast):
        def __call__(self, x):
            return x.to(torch.bfloat16)

    enc = get_encoder(None, device="cpu", dtype="bf16", backend="torch")
    texts = ["the weather is awful today", "shall we go to the cinema?"]
    shared = enc.encode(texts)
    layers = [m for m in enc.model.modules() if hasattr(m, "cast")]
    kept = layers[0].cast
    try:
        for m in layers:
            m.cast = EveryCall()
        assert np.array_equal(enc.encode(texts), shared)
    finally:
        for m in layers:
            m.cast = kept


def test_a_last_token_encoder_in_bf16_names_bf16_and_runs(tiny):
    from dialeval.models.encoders import LastTokenEncoder

    enc = LastTokenEncoder(str(tiny["llama"]), device="cpu", dtype="bf16")
    out = enc.encode(["hello there", "how are you"])
    assert enc.dtype_name == "bf16" and out.dtype == np.float32 and np.all(np.isfinite(out))
    wrapped = LastTokenEncoder.from_model(enc.model, enc.tokenizer, name="x")
    assert wrapped.dtype_name == "bf16"  # what runs, not the first parameter's fp32
