"""Tiny random BlenderBot (seq2seq) and tiny causal LMs for FULL's tests and benchmarks, built offline.

Every builder is deterministic: the tokenizer is a byte-level BPE trained on
:data:`dialeval.testing.TRAINING_TEXTS` and the weights are drawn under a fixed ``torch`` seed, so two
builds in two processes give bit-identical files (see :func:`state_fingerprint`). The compat reference
in ``tests/data/full_compat_reference.json`` relies on that.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from dialeval.testing import train_bpe_tokenizer

# BlenderBot's special-token layout (facebook/blenderbot-400M-distill): <pad>=0, <s>=1, </s>=2, <unk>=3.
BLENDERBOT_SPECIALS = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                       "mask_token": "<mask>"}
CAUSAL_SPECIALS = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}

# facebook/blenderbot-400M-distill's architecture (for speed benchmarks with random weights).
BLENDERBOT_400M_DISTILL = dict(
    d_model=1280, encoder_layers=2, decoder_layers=12, encoder_attention_heads=32, decoder_attention_heads=32,
    encoder_ffn_dim=5120, decoder_ffn_dim=5120, max_position_embeddings=128, scale_embedding=True,
)
BLENDERBOT_400M_DISTILL_VOCAB = 8008
TINY_BLENDERBOT = dict(
    d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
    encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, scale_embedding=True,
    init_std=0.2,  # peaked, input-dependent predictions (0.02 gives near-uniform ones)
)


def build_tiny_blenderbot(out_dir: str | Path, *, seed: int = 0, vocab_size: int = 400,
                          model_max_length: int = 128, model_vocab_size: int | None = None,
                          **config_overrides: Any) -> Path:
    """Save a random-weight ``BlenderbotForConditionalGeneration`` plus its BPE tokenizer to ``out_dir``.

    ``config_overrides`` replace entries of :data:`TINY_BLENDERBOT` (e.g. ``**BLENDERBOT_400M_DISTILL``
    for a full-size random model). ``vocab_size`` is the BPE tokenizer's target size; ``model_vocab_size``
    (default: the tokenizer's size) the embedding matrix's. ``model_max_length`` is the tokenizer's truncation
    length (128 like blenderbot-400M-distill).
    """
    import torch
    from transformers import (
        BlenderbotConfig,
        BlenderbotForConditionalGeneration,
        BlenderbotTokenizer,
    )

    out_dir = Path(out_dir)
    tok = train_bpe_tokenizer(out_dir, BlenderbotTokenizer, vocab_size=vocab_size,
                              special_tokens=BLENDERBOT_SPECIALS, model_max_length=model_max_length)
    _append_eos_post_processor(out_dir / "tokenizer.json", tok.eos_token, tok.eos_token_id)
    tok = BlenderbotTokenizer.from_pretrained(out_dir)
    params = {**TINY_BLENDERBOT, **config_overrides}
    params["vocab_size"] = max(model_vocab_size or 0, len(tok))
    config = BlenderbotConfig(
        **params, pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.bos_token_id, forced_eos_token_id=tok.eos_token_id, dropout=0.0,
    )
    torch.manual_seed(seed)
    model = BlenderbotForConditionalGeneration(config).eval()
    _randomise_biases(model, seed)
    model.save_pretrained(out_dir)
    return out_dir


def build_tiny_causal_lm(out_dir: str | Path, *, arch: str = "llama", seed: int = 0, vocab_size: int = 400,
                         model_max_length: int = 512) -> Path:
    """Save a random-weight causal LM (``arch`` = ``"llama"`` like SmolLM2, or ``"gpt2"`` like DialoGPT)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    out_dir = Path(out_dir)
    tok = train_bpe_tokenizer(out_dir, vocab_size=vocab_size, special_tokens=CAUSAL_SPECIALS,
                              model_max_length=model_max_length)
    ids = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    if arch == "llama":
        config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=model_max_length,
                             tie_word_embeddings=True, **ids)
        cls = LlamaForCausalLM
    elif arch == "gpt2":
        config = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=model_max_length,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **ids)
        cls = GPT2LMHeadModel
    else:
        raise ValueError(f"`arch`={arch!r} is not known; use 'llama' or 'gpt2'.")
    torch.manual_seed(seed)
    model = cls(config).eval()
    _randomise_biases(model, seed)
    model.save_pretrained(out_dir)
    return out_dir


def _append_eos_post_processor(tokenizer_json: Path, eos: str, eos_id: int) -> None:
    """BlenderBot's tokenizer appends ``</s>`` (``"Hello world"`` → ``[6950, 1085, 2]``): make ours do so too."""
    import json

    data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": eos, "type_id": 1}}],
        "special_tokens": {eos: {"id": eos, "ids": [eos_id], "tokens": [eos]}},
    }
    tokenizer_json.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def _randomise_biases(model: Any, seed: int) -> None:
    """Zero-initialised biases/norms would hide bugs (e.g. a skipped ``final_logits_bias``): perturb them."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, tensor in sorted(model.state_dict().items()):
            if name.endswith("bias") or name.endswith("final_logits_bias"):
                tensor.copy_(torch.randn(tensor.shape, generator=gen) * 0.1)


def state_fingerprint(model_dir: str | Path) -> str:
    """sha256 over the saved weights' names, shapes and bytes plus the tokenizer's vocabulary file."""
    from safetensors.torch import load_file

    model_dir = Path(model_dir)
    digest = hashlib.sha256()
    state = load_file(str(model_dir / "model.safetensors"))
    for name in sorted(state):
        t = state[name].contiguous()
        digest.update(name.encode())
        digest.update(str(tuple(t.shape)).encode())
        digest.update(t.numpy().tobytes())
    tok_file = model_dir / "tokenizer.json"
    if tok_file.is_file():
        import json

        model_part = json.loads(tok_file.read_text(encoding="utf-8"))["model"]
        digest.update(json.dumps(model_part, sort_keys=True).encode())
    return digest.hexdigest()
