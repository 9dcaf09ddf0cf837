"""Tiny stand-ins for the Hub models a Space preloads, saved in the Hugging Face cache layout under the
real repo ids, so that the online path (offline package names → Hub ids, ``preload_from_hub``) runs
offline: set ``HF_HUB_CACHE`` to the folder and ``HF_HUB_OFFLINE=1``.

Layout written (what ``huggingface_hub`` reads)::

    <cache>/models--<org>--<name>/refs/main            the commit hash
    <cache>/models--<org>--<name>/snapshots/<commit>/  the model's files
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from dialeval.testing.blenderbot import build_tiny_causal_lm
from dialeval.testing.roberta import roberta_tokenizer, tiny_nli_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # a fake 40-hex commit for refs/main


def save_to_hub_cache(model_dir: str | Path, repo_id: str, cache: str | Path, commit: str = COMMIT) -> Path:
    """Copy the saved model ``model_dir`` into ``cache`` as Hub repo ``repo_id`` at ``commit``; returns the
    snapshot folder."""
    repo = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    shutil.copytree(model_dir, snapshot)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def build_tiny_sentence_encoder(out_dir: str | Path, dim: int = 384, seed: int = 0) -> Path:
    """A random-weight sentence-transformers model (one RoBERTa layer, mean pooling) giving ``dim``-dim
    embeddings, like all-MiniLM-L6-v2's 384."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import RobertaConfig, RobertaModel

    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory(prefix="tiny-st-") as tmp:
        tok = roberta_tokenizer(tmp, model_max_length=128)
        config = RobertaConfig(vocab_size=len(tok), hidden_size=dim, num_hidden_layers=1, num_attention_heads=4,
                               intermediate_size=64, max_position_embeddings=128 + tok.pad_token_id + 1,
                               pad_token_id=tok.pad_token_id, type_vocab_size=1)
        torch.manual_seed(seed)
        RobertaModel(config).eval().save_pretrained(tmp)
        word = Transformer(tmp, max_seq_length=128)
        pool = Pooling(word.get_embedding_dimension(), pooling_mode="mean")
        SentenceTransformer(modules=[word, pool], device="cpu").save(str(out_dir))
    return out_dir


def build_space_hub_cache(cache: str | Path, repos: dict[str, str]) -> dict[str, Path]:
    """Tiny models under the Hub ids of ``repos`` (repo id → kind: ``"sentence-encoder"``, ``"causal-lm"``
    or ``"nli"``) in the cache folder ``cache``; returns repo id → snapshot folder."""
    builders = {"sentence-encoder": build_tiny_sentence_encoder,
                "causal-lm": lambda out: build_tiny_causal_lm(out, arch="llama"),
                "nli": lambda out: tiny_nli_model(out, max_length=128)}
    out: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="tiny-hub-") as tmp:
        for i, (repo_id, kind) in enumerate(repos.items()):
            if kind not in builders:
                raise ValueError(f"{repo_id}: unknown kind {kind!r}; use one of {sorted(builders)}.")
            out[repo_id] = save_to_hub_cache(builders[kind](Path(tmp) / str(i)), repo_id, cache)
    return out
