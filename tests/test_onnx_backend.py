"""The ONNX Runtime backend: backend resolution (and the torch fallback without onnxruntime), export once
into the disk cache, ONNX embeddings equal to torch's (the reference), int8 as an explicit option, and the
signature telling the backends apart. Tiny random models keep exports to well under a second. Tests marked
``onnx`` need onnxruntime (deselected, not skipped, where it is not installed); the fallback tests run in both."""

import json
import sys

import numpy as np
import pytest

from dialeval.io.signature import parse_signature
from dialeval.models import onnx_backend
from dialeval.models.encoders import LastTokenEncoder, SentenceTransformerEncoder, get_encoder
from dialeval.models.runtime import MODELS
from dialeval.testing.gpt2 import build_tiny_gpt2
from dialeval.testing.roberta import roberta_tokenizer

TEXTS = ["Hello , how are you today ?", "Yes .", "I don't know what you mean .",
         "Where are you from ? I am from Beijing .", "Okay .", "Thank you very much for the dinner last night ."]
REFERENCES = TEXTS * 3 + ["What time is it ?", "No , thanks .", "Let's go to the beach !", "Sure ."]


def _cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(1)


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    """A sentence-transformers model (tiny random RoBERTa, mean pooling, normalisation) saved to a folder."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import RobertaConfig, RobertaModel

    root = tmp_path_factory.mktemp("st")
    tok = roberta_tokenizer(root / "base")
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=130, pad_token_id=tok.pad_token_id)
    RobertaModel(cfg).save_pretrained(root / "base")
    first = models.Transformer(str(root / "base"), max_seq_length=64)
    st = SentenceTransformer(modules=[first, models.Pooling(32, "mean"), models.Normalize()], device="cpu")
    st.save(str(root / "st"))
    return root / "st"


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return build_tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "cache"))
    MODELS.clear()
    yield
    MODELS.clear()


@pytest.mark.onnx
def test_resolution_defaults_and_errors(monkeypatch):
    assert onnx_backend.resolve_backend(None, "cpu", "fp32") == "onnx"
    assert onnx_backend.resolve_backend("auto", "cpu", "bf16") == "torch"  # ONNX graphs run fp32 only
    assert onnx_backend.resolve_backend(None, "cuda", "fp32") == "torch"  # torch on an accelerator
    assert onnx_backend.resolve_backend("onnx-int8", "cpu", "fp32") == "onnx-int8"
    with pytest.raises(ValueError, match=r"`backend`='tensorrt' is not known"):
        onnx_backend.resolve_backend("tensorrt")
    with pytest.raises(ValueError, match=r"runs fp32 graphs; use dtype=None/'fp32'"):
        onnx_backend.resolve_backend("onnx", "cpu", "bf16")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails, as when absent
    assert onnx_backend.resolve_backend(None, "cpu", "fp32") == "torch"
    with pytest.raises(ValueError, match=r"needs onnxruntime: `pip install dialeval\[onnx\]`"):
        onnx_backend.resolve_backend("onnx")


@pytest.mark.onnx
def test_sentence_transformer_onnx_equals_torch_and_exports_once(tiny_st, monkeypatch):
    ref = SentenceTransformerEncoder(tiny_st).encode(TEXTS)  # torch, the reference
    enc = get_encoder(str(tiny_st))
    assert enc.backend == "onnx" and enc.runner is not None
    got = enc.encode(TEXTS, batch_size=2)
    assert _cosines(got, ref).min() >= 0.9999
    np.testing.assert_allclose(got, ref, atol=1e-5)
    entries = list((onnx_backend.cache_dir() / "onnx").iterdir())
    assert len(entries) == 1
    meta = json.loads((entries[0] / onnx_backend.SOURCE_FILE).read_text())
    assert meta["kind"] == "sentence-transformers" and meta["quantize"] == "none" and len(meta["weights_sha256"]) == 64
    MODELS.clear()
    monkeypatch.setattr(onnx_backend, "export_module", lambda *a, **k: pytest.fail("exported twice"))
    again = get_encoder(str(tiny_st), backend="onnx").encode(TEXTS, batch_size=2)  # from the disk cache
    np.testing.assert_array_equal(again, got)


def test_without_onnxruntime_everything_runs_on_torch(tiny_st, tiny_gpt2, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    enc = get_encoder(str(tiny_st))
    assert enc.backend == "torch" and enc.runner is None
    np.testing.assert_array_equal(enc.encode(TEXTS), SentenceTransformerEncoder(tiny_st).encode(TEXTS))
    with pytest.raises(ValueError, match="needs onnxruntime"):
        get_encoder(str(tiny_st), backend="onnx")
    from dialeval.models.lm import load_lm

    lm = load_lm(str(tiny_gpt2))  # FULL's LMs fall back alike
    assert lm.backend == "torch" and lm.onnx is None
    assert not (onnx_backend.cache_dir() / "onnx").exists()


@pytest.mark.onnx
def test_last_token_encoder_onnx_equals_torch(tiny_gpt2):
    ref = LastTokenEncoder(tiny_gpt2).encode(TEXTS)
    enc = LastTokenEncoder(tiny_gpt2, backend="onnx")
    got = enc.encode(TEXTS, batch_size=3)
    assert enc.backend == "onnx" and _cosines(got, ref).min() >= 0.9999
    np.testing.assert_allclose(got, ref, atol=1e-4)


@pytest.mark.onnx
def test_int8_is_explicit_quantised_and_cached_apart(tiny_st):
    fp32 = get_encoder(str(tiny_st)).encode(TEXTS)
    enc = get_encoder(str(tiny_st), backend="onnx-int8")
    got = enc.encode(TEXTS)
    assert enc.backend == "onnx-int8" and got.shape == fp32.shape and np.isfinite(got).all()
    assert not np.allclose(got, fp32, atol=1e-6)  # the weights really are int8
    metas = [json.loads((p / onnx_backend.SOURCE_FILE).read_text())
             for p in (onnx_backend.cache_dir() / "onnx").iterdir()]
    assert sorted(m["quantize"] for m in metas) == ["int8", "none"]


@pytest.mark.onnx
def test_cuda_needs_the_cuda_provider_and_int8_stays_on_cpu(monkeypatch):
    class FakeOrt:
        providers = ["CPUExecutionProvider"]

        def get_available_providers(self):
            return self.providers

    fake = FakeOrt()
    monkeypatch.setattr(onnx_backend, "import_onnxruntime", lambda: fake)
    with pytest.raises(ValueError, match="needs onnxruntime-gpu"):
        onnx_backend.resolve_backend("onnx", "cuda", "fp32")
    fake.providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert onnx_backend.resolve_backend("onnx", "cuda", "fp32") == "onnx"
    with pytest.raises(ValueError, match="runs on CPU only"):
        onnx_backend.resolve_backend("onnx-int8", "cuda", "fp32")


@pytest.mark.onnx
def test_signature_tells_backends_apart_and_clusters_agree(tiny_st):
    import dialeval

    metric = dialeval.load("sem_ent")
    out = {b: metric.compute(predictions=TEXTS, reference_responses=REFERENCES, encoder=str(tiny_st), k=3, backend=b)
           for b in ("torch", "onnx", "onnx-int8")}
    default = metric.compute(predictions=TEXTS, reference_responses=REFERENCES, encoder=str(tiny_st), k=3)
    assert {b: parse_signature(o["signature"])["backend"] for b, o in out.items()} == {
        "torch": "torch", "onnx": "onnx", "onnx-int8": "onnx-int8"}
    assert parse_signature(default["signature"])["backend"] == "onnx"
    assert out["onnx"]["cluster_distribution"] == out["torch"]["cluster_distribution"]
    with pytest.raises(ValueError, match="`backend`='gpu' is not one of"):
        metric.compute(predictions=TEXTS, reference_responses=REFERENCES, encoder=str(tiny_st), k=3, backend="gpu")


@pytest.mark.onnx
@pytest.mark.slow
def test_minilm_onnx_assigns_dailydialog_test_like_torch(shared_data):
    """The real MiniLM: ONNX embeddings of 500 DailyDialog test responses are cosine ≥ 0.9999 to torch's
    and fall in the same clusters of the bundled space (benchmarks/sem_ent_speed.py checks all of them)."""
    from dialeval.resources import semantic_space_dir
    from dialeval.semantic.space import SemanticSpace

    test = [t["text"].strip() for d in json.loads((shared_data / "dailydialog" / "test.json").read_text())
            for t in d["dialogue"][1:] if t["text"].strip()][:500]
    space = SemanticSpace.load(semantic_space_dir())
    ref = space.use_encoder(backend="torch").encode(test)
    got = space.use_encoder(backend="onnx").encode(test)
    assert space.encoder.backend == "onnx" and _cosines(got, ref).min() >= 0.9999
    np.testing.assert_array_equal(space.assign_embeddings(got), space.assign_embeddings(ref))


@pytest.mark.onnx
def test_nli_classifier_onnx_equals_torch_and_signature_says_so(tmp_path):
    import dialeval
    from dialeval.nli.core import NLIClassifier, get_classifier, ordered_pairs
    from dialeval.testing.roberta import ENC, tiny_nli_model

    path = tiny_nli_model(tmp_path / "nli", ENC)
    pairs = [(TEXTS[i], TEXTS[j]) for i, j in ordered_pairs(len(TEXTS))]
    ref = NLIClassifier.from_pretrained(path, batch_size=4)(pairs)  # torch, the reference
    clf = get_classifier(str(path), batch_size=4)
    got = clf(pairs)
    assert clf.backend == "onnx" and clf.runner is not None
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(got.argmax(1), ref.argmax(1))
    assert get_classifier(str(path), backend="onnx").runner is clf.runner  # one export and session per model
    metric = dialeval.load("nli_diversity")
    sets = [TEXTS[:3], TEXTS[3:]]
    sigs = {b: parse_signature(metric.compute(predictions=sets, model=str(path), backend=b)["signature"])["backend"]
            for b in ("torch", "onnx", "onnx-int8")}
    assert sigs == {"torch": "torch", "onnx": "onnx", "onnx-int8": "onnx-int8"}


@pytest.mark.onnx
def test_full_causal_lm_on_onnx_runtime_matches_torch(tmp_path):
    import dialeval
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    path = str(build_tiny_causal_lm(tmp_path / "llama"))
    metric = dialeval.load("full_followup", "turn")
    contexts = [["Hello , how are you ?"], ["Where do you live ?", "In Beijing ."], ["What time is it ?"]]
    predictions = ["I am fine , thanks .", "Near the park , with my parents .", "It is five ."]
    out = {b: metric.compute(contexts=contexts, predictions=predictions, model=path, backend=b)
           for b in ("torch", "onnx", "onnx-int8")}
    ref, got = np.array(out["torch"]["follow_up_scores"]), np.array(out["onnx"]["follow_up_scores"])
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=0)
    assert {b: parse_signature(o["signature"])["backend"] for b, o in out.items()} == {
        "torch": "torch", "onnx": "onnx", "onnx-int8": "onnx-int8"}
    assert np.isfinite(out["onnx-int8"]["follow_up_scores"]).all()


@pytest.mark.onnx
def test_full_seq2seq_on_onnx_runtime_matches_torch_and_the_default_is_torch_on_every_cpu_kind(tmp_path, monkeypatch):
    """backend=None: torch for a seq2seq LM on every CPU kind (benchmarks/full_followup.py measured torch ahead on
    avx2, avx512-bf16 and amx), ONNX Runtime for a causal LM; the two backends give the same scores."""
    import dialeval
    from dialeval.models import cpu
    from dialeval.models.lm import load_lm
    from dialeval.models.onnx_backend import seq2seq_prefers_torch
    from dialeval.testing.blenderbot import build_tiny_blenderbot, build_tiny_causal_lm

    for kind in ("avx2", "avx512", "avx512-bf16", "amx", "other"):
        monkeypatch.setattr(cpu, "cpu_kind", lambda kind=kind: cpu.CpuKind(kind, False))
        assert seq2seq_prefers_torch("seq2seq", "cpu") and not seq2seq_prefers_torch("causal", "cpu")
    monkeypatch.undo()
    path = str(build_tiny_blenderbot(tmp_path / "bb"))
    assert load_lm(path).backend == "torch"
    assert load_lm(path, backend="onnx").backend == "onnx"  # a named backend is what runs
    assert load_lm(str(build_tiny_causal_lm(tmp_path / "llama"))).backend == "onnx"
    metric = dialeval.load("full_followup", "dialog")
    dialogues = [["Hello , how are you ?", "I am fine , thanks ."], ["Where do you live ?", "In Beijing .",
                                                                      "Near the park ?"]]
    out = {b: metric.compute(dialogues=dialogues, model=path, backend=b, batch_size=b == "torch" and 1 or 2)
           for b in ("torch", "onnx")}
    ref, got = np.array(out["torch"]["follow_up_scores"]), np.array(out["onnx"]["follow_up_scores"])
    assert ref.shape == (2, 5) and np.isfinite(ref).all() and np.ptp(ref) > 0
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=0)
    assert parse_signature(out["onnx"]["signature"])["backend"] == "onnx"
    assert parse_signature(metric.compute(dialogues=dialogues, model=path)["signature"])["backend"] == "torch"


@pytest.mark.gpu
def test_cuda_runs_torch_by_default_and_matches_cpu(tiny_st, tmp_path):
    import dialeval
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    ref = SentenceTransformerEncoder(tiny_st).encode(TEXTS)
    enc = get_encoder(str(tiny_st), device="cuda")
    assert enc.backend == "torch"
    np.testing.assert_allclose(enc.encode(TEXTS), ref, atol=1e-4)
    assert _cosines(get_encoder(str(tiny_st), device="cuda", dtype="bf16").encode(TEXTS), ref).min() > 0.99
    path = str(build_tiny_causal_lm(tmp_path / "llama"))
    metric = dialeval.load("full_followup", "turn")
    kw = dict(contexts=[["Hello , how are you ?"]], predictions=["I am fine , thanks ."], model=path)
    cpu = np.array(metric.compute(device="cpu", **kw)["follow_up_scores"])
    np.testing.assert_allclose(np.array(metric.compute(device="cuda", **kw)["follow_up_scores"]), cpu, rtol=1e-4)


@pytest.mark.onnx
def test_distributed_sem_ent_signature_names_the_workers_backend(tiny_st, tmp_path):
    import pyarrow as pa

    from dialeval.semantic.scale_out import Plan, SemanticLabeler, cluster_state, finish
    from dialeval.semantic.space import SemanticSpace

    SemanticSpace.fit(REFERENCES, encoder=str(tiny_st), k=3, backend="torch").save(tmp_path / "space")
    labeled = SemanticLabeler(str(tmp_path / "space"), column="text", output="cluster")(pa.table({"text": TEXTS}))
    state = cluster_state(labeled, text_column="text", label_column="cluster", k=3, per_cluster=2)
    assert set(state.column("dtype").to_pylist()) == {"fp32 onnx"}  # a CPU worker runs ONNX Runtime by default
    sig = parse_signature(finish(state, Plan(str(tmp_path / "space"), 3, None, None, 32, 2))["signature"])
    assert (sig["dtype"], sig["backend"]) == ("fp32", "onnx")


@pytest.mark.onnx
def test_read_only_cache_keeps_the_automatic_choice_on_torch(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setenv("DIALEVAL_CACHE", str(ro / "cache"))
    monkeypatch.setattr(onnx_backend.os, "access", lambda path, mode: str(path) != str(ro))
    assert onnx_backend.resolve_backend(None, "cpu", "fp32") == "torch"
    assert onnx_backend.resolve_backend("onnx", "cpu", "fp32") == "onnx"  # explicit: export and fail loudly


@pytest.mark.onnx
def test_lm_that_cannot_be_exported_stays_on_torch_unless_onnx_was_asked_for(tmp_path, monkeypatch):
    """The automatic choice warns and runs torch; an explicit backend="onnx" is a one-line error."""
    from dialeval.models import lm as lm_module
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    path = str(build_tiny_causal_lm(tmp_path / "llama"))

    def broken(*args, **kwargs):
        raise RuntimeError("an operator torch.onnx cannot trace")

    monkeypatch.setattr(lm_module, "OnnxCausalLM", broken)
    with pytest.warns(UserWarning, match="could not be exported to ONNX .RuntimeError.; running it on torch"):
        assert lm_module.load_lm(path).backend == "torch"
    MODELS.clear()
    with pytest.raises(ValueError, match=r"could not be exported to ONNX \(RuntimeError: an operator .*use backend='torch'"):
        lm_module.load_lm(path, backend="onnx")


@pytest.mark.onnx
def test_a_first_export_says_so_in_one_line(tiny_gpt2, capsys, monkeypatch):
    monkeypatch.delenv("DIALEVAL_PROGRESS", raising=False)
    LastTokenEncoder(tiny_gpt2, backend="onnx")
    lines = [x for x in capsys.readouterr().err.splitlines() if "exporting" in x]
    assert len(lines) == 1 and "to ONNX once" in lines[0] and "backend='torch' skips this" in lines[0]
    MODELS.clear()
    LastTokenEncoder(tiny_gpt2, backend="onnx")  # from the disk cache: silent
    assert "exporting" not in capsys.readouterr().err


@pytest.mark.onnx
def test_graphs_export_eager_attention_without_a_nan_guard_and_the_model_keeps_its_attention(tmp_path):
    import onnx

    from dialeval.models import block_attention
    from dialeval.models.lm import load_lm
    from dialeval.testing.blenderbot import build_tiny_causal_lm

    lm = load_lm(str(build_tiny_causal_lm(tmp_path / "llama")), backend="onnx")
    graphs = sorted((tmp_path / "cache" / "onnx").glob("*/model.onnx"))
    assert graphs  # the prefix graph, exported on load
    for path in graphs:
        ops = {node.op_type for node in onnx.load(str(path), load_external_data=False).graph.node}
        assert "IsNaN" not in ops and "Softmax" in ops, path.parent.name  # SDPA's export guards with IsNaN
    # the torch route keeps its attention: SDPA in query blocks (dialeval.models.block_attention)
    assert lm.model.config._attn_implementation == block_attention.NAME
