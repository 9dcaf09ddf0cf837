"""Tiny and roberta-base-shaped random ``RobertaForSequenceClassification`` NLI models, built offline.

The classification head is first built in the canonical order (contradiction, neutral, entailment) and
then its output rows are permuted into ``label_order``, so models that differ only in ``label_order``
make the *same* predictions under different ``id2label`` orders — exactly the situation of
``roberta-large-mnli`` (C,N,E) versus ``ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli`` (E,N,C).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dialeval.testing import train_bpe_tokenizer

CNE = ("contradiction", "neutral", "entailment")
ENC = ("entailment", "neutral", "contradiction")

ROBERTA_SPECIAL_TOKENS = {
    "bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
    "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>",
}

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
ROBERTA_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}


def roberta_tokenizer(out_dir: str | Path, vocab_size: int = 400, model_max_length: int = 512) -> Any:
    """A byte-level BPE ``RobertaTokenizer`` trained offline on the package's small corpus."""
    from transformers import RobertaTokenizer

    return train_bpe_tokenizer(out_dir, RobertaTokenizer, vocab_size=vocab_size,
                               special_tokens=ROBERTA_SPECIAL_TOKENS, model_max_length=model_max_length)


def build_nli_model(
    tokenizer: Any,
    label_order: Sequence[str] = CNE,
    *,
    shape: dict[str, int] | None = None,
    max_length: int = 512,
    seed: int = 0,
    initializer_range: float = 0.5,
    label_case: str = "upper",
) -> Any:
    """Random ``RobertaForSequenceClassification`` with ``id2label`` in ``label_order`` (fixed seed).

    A large ``initializer_range`` (0.5; BERT's is 0.02) makes the random model's [CLS] state depend on
    its input enough that all three classes occur on short texts; ``label_case`` ("upper"/"lower") sets
    how the names are spelled.
    """
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification

    order = [str(name).lower() for name in label_order]
    if sorted(order) != sorted(CNE):
        raise ValueError(f"`label_order` must be a permutation of {CNE}, got {tuple(label_order)}.")
    spell = str.upper if label_case == "upper" else str.lower
    pad = tokenizer.pad_token_id
    config = RobertaConfig(
        vocab_size=len(tokenizer), max_position_embeddings=max_length + pad + 1, pad_token_id=pad,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, type_vocab_size=1,
        num_labels=3, id2label={i: spell(n) for i, n in enumerate(order)},
        label2id={spell(n): i for i, n in enumerate(order)}, initializer_range=initializer_range,
        **(shape or TINY),
    )
    torch.manual_seed(seed)
    model = RobertaForSequenceClassification(config).eval()
    perm = [CNE.index(name) for name in order]
    with torch.no_grad():
        out = model.classifier.out_proj
        out.weight.copy_(out.weight[perm])
        out.bias.copy_(out.bias[perm])
    return model


def tiny_nli_model(out_dir: str | Path, label_order: Sequence[str] = CNE, *, seed: int = 0,
                   max_length: int = 64, label_case: str = "upper") -> Path:
    """Save a tiny NLI model plus its tokenizer to ``out_dir`` (loadable by id-less path) and return it.

    ``max_length`` is small on purpose so truncation is exercised by short test inputs.
    """
    out_dir = Path(out_dir)
    tokenizer = roberta_tokenizer(out_dir, model_max_length=max_length)
    model = build_nli_model(tokenizer, label_order, max_length=max_length, seed=seed, label_case=label_case)
    model.save_pretrained(out_dir)
    return out_dir


def roberta_base_shaped_nli(tokenizer_dir: str | Path, *, seed: int = 0) -> tuple[Any, Any]:
    """(model, tokenizer): roberta-base's shape (12 × 768, 512 positions), random weights, in memory."""
    tokenizer = roberta_tokenizer(tokenizer_dir, vocab_size=1000)
    model = build_nli_model(tokenizer, CNE, shape=ROBERTA_BASE, max_length=512, seed=seed,
                            initializer_range=0.02)
    return model, tokenizer
