"""Checks of a saved model folder before and after transformers loads it, so an incomplete or mismatched
folder is one line instead of a traceback or, worse, a model that runs and gives a wrong number: a folder without
tokenizer files (transformers then builds a tokenizer of special tokens only: every text gets the same ids), a
tokenizer that does not belong to the weights, a config.json that does not match the saved tensors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dialeval.models.runtime import ModelNotAvailableError

#: Files any one of which holds a tokenizer's vocabulary (fast, BPE, WordPiece, SentencePiece).
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "vocab.txt", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.model", "vocab.model", "source.spm")


def check_tokenizer_files(name_or_path: str | os.PathLike) -> None:
    """A local encoder folder (or, for sentence-transformers, one of its module subfolders) must hold a tokenizer
    vocabulary file: without one transformers builds a tokenizer of special tokens only, every text becomes the
    same ids and every embedding is equal (a silent 0 diversity)."""
    folder = Path(os.fspath(name_or_path)).expanduser()
    if not folder.is_dir():
        return
    places = [folder, *(p for p in sorted(folder.iterdir()) if p.is_dir())]
    if not any((place / name).is_file() for place in places for name in TOKENIZER_FILES):
        raise ModelNotAvailableError(
            f"encoder folder {str(folder)!r} has no tokenizer files (one of {', '.join(TOKENIZER_FILES[:3])}, ...), so "
            "it is not a complete saved model at that local path: copy the whole folder (tokenizer.save_pretrained(DIR) "
            "as well as the model's).")


def check_tokenizer(tokenizer: Any, model: Any, name_or_path: str | os.PathLike) -> None:
    """Refuse a loaded tokenizer that knows only its special tokens, or whose ids exceed the model's embedding
    table (a tokenizer that does not belong to these weights)."""
    try:
        size = len(tokenizer)
    except TypeError:
        return
    specials = len(set(getattr(tokenizer, "all_special_ids", []) or []))
    if size - specials <= 0:
        raise ModelNotAvailableError(
            f"encoder {str(name_or_path)!r}: its tokenizer knows only its {specials} special tokens (a vocabulary "
            "file is missing), so every text would tokenize alike; pass a complete saved model folder.")
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if isinstance(vocab, int) and size > vocab:
        raise ModelNotAvailableError(
            f"encoder {str(name_or_path)!r}: its tokenizer has {size} tokens but the model's vocabulary has {vocab}; "
            "the tokenizer does not belong to these weights. Pass a folder saved with both from one model.")


def load_matching(load: Any, name_or_path: str | os.PathLike) -> Any:
    """``load()``, with a config that does not match the saved weights (transformers' size-mismatch
    ``RuntimeError``/``ValueError``) turned into one line."""
    try:
        return load()
    except (RuntimeError, ValueError) as exc:
        if isinstance(exc, ModelNotAvailableError):
            raise
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise ModelNotAvailableError(
            f"encoder {str(name_or_path)!r} cannot be loaded: its config.json does not match its weights ({first}). "
            "Pass a folder saved with save_pretrained from one model.") from None


def check_finite_weights(model: Any, name_or_path: str | os.PathLike) -> None:
    """Refuse loaded weights holding NaN or infinities: every score computed with them would be NaN (or a number
    from garbage), with nothing to say so."""
    import torch

    params = getattr(model, "parameters", None)
    if not callable(params):
        return
    with torch.no_grad():
        for tensor in params():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise ModelNotAvailableError(
                    f"model {str(name_or_path)!r} has weights that are NaN or infinite; every score would be NaN. "
                    "Re-download or re-save the model (its safetensors file is damaged or was saved after a "
                    "diverged training run).")
