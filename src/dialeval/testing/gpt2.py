"""Tiny, deterministic GPT-2 (DialoGPT-style causal LM) built offline for tests and benchmarks.

:func:`build_tiny_gpt2` writes a random-weight ``GPT2LMHeadModel`` and a locally trained byte-level BPE
``GPT2Tokenizer`` (``<|endoftext|>`` as BOS/EOS/UNK, no pad token, like DialoGPT) into a directory that
``hf-last-token:<dir>`` loads. :func:`dialogpt_large_config` is the shape of ``microsoft/DialoGPT-large``
for speed measurements with random weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval.testing import train_bpe_tokenizer

EOT = "<|endoftext|>"


def build_tiny_gpt2(out_dir: str | Path, *, n_layer: int = 2, n_embd: int = 32, n_head: int = 4,
                    n_positions: int = 64, vocab_size: int = 300, seed: int = 0,
                    texts: list[str] | None = None) -> Path:
    """Save a tiny random GPT-2 causal LM and its tokenizer to ``out_dir``; return the directory."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    out = Path(out_dir)
    tok = train_bpe_tokenizer(out, GPT2Tokenizer, vocab_size=vocab_size, texts=texts,
                              special_tokens={"bos_token": EOT, "eos_token": EOT, "unk_token": EOT},
                              model_max_length=n_positions)
    config = GPT2Config(vocab_size=len(tok), n_positions=n_positions, n_embd=n_embd, n_layer=n_layer,
                        n_head=n_head, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    # Larger-than-default init so that hidden states differ clearly between texts.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.save_pretrained(out)
    return out


def dialogpt_large_config(vocab_size: int = 50257) -> Any:
    """``GPT2Config`` with the shape of microsoft/DialoGPT-large (36 layers, 1280 wide, 20 heads)."""
    from transformers import GPT2Config

    return GPT2Config(vocab_size=vocab_size, n_positions=1024, n_embd=1280, n_layer=36, n_head=20,
                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
