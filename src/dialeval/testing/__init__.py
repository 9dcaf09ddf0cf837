"""Tiny offline models for tests and benchmarks: a locally trained byte-level BPE tokenizer plus
random-weight models built from a config. Nothing here touches the network.

Family-specific builders live beside this file (one module per model family).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# A small English corpus (dialogue-like) to train tokenizers on; deterministic.
TRAINING_TEXTS = [
    "Hello , how are you today ?", "I am fine , thank you . And you ?", "Not really relevant here .",
    "You're really confusing .", "You're really boring .", "What are you trying to say ?",
    "You don't seem interested .", "I don't know what you mean .", "Let's go to the movies tonight !",
    "The weather is nice , isn't it ?", "Do you like music ? I love jazz and rock .",
    "Could you help me with my homework please ?", "Sure , what do you need ?",
    "I think that is a great idea .", "Where are you from ? I am from Beijing .",
    "We should eat dinner at seven .", "My favourite food is pizza with cheese .",
    "Thank you very much for your help .", "Good morning , sir . Can I help you ?",
    "The quick brown fox jumps over the lazy dog .", "Yes . No . Maybe . Okay .",
    "0123456789 !?,.;:'\"()[]{}-_/\\@#$%^&*+=<>|~`",
]


def train_bpe_tokenizer(
    out_dir: str | Path,
    tokenizer_class: Any = None,
    vocab_size: int = 400,
    special_tokens: dict[str, str] | None = None,
    texts: list[str] | None = None,
    model_max_length: int = 512,
    **init_kwargs: Any,
) -> Any:
    """Train a byte-level BPE tokenizer offline, wrap it in ``tokenizer_class`` (a transformers fast
    tokenizer class, default ``PreTrainedTokenizerFast``), save it to ``out_dir`` and return it.

    ``special_tokens`` maps role to token, e.g. ``{"bos_token": "<s>", "eos_token": "</s>",
    "pad_token": "<pad>", "unk_token": "<unk>"}``; the tokens are added to the vocabulary first.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special_tokens = special_tokens or {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
                                        "unk_token": "<unk>"}
    specials = list(dict.fromkeys(special_tokens.values()))
    tok = Tokenizer(models.BPE(unk_token=special_tokens.get("unk_token")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts or TRAINING_TEXTS, trainer=trainer)
    cls = tokenizer_class or PreTrainedTokenizerFast
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if cls is PreTrainedTokenizerFast:
        wrapped = cls(tokenizer_object=tok, model_max_length=model_max_length, **special_tokens, **init_kwargs)
    else:
        # Model-specific classes (transformers 5) take the trained vocabulary and merges directly.
        import json
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            vocab_file, merges_file = sorted(tok.model.save(tmp), key=lambda f: not f.endswith("vocab.json"))
            vocab = json.loads(Path(vocab_file).read_text(encoding="utf-8"))
            merges = [tuple(line.split()) for line in Path(merges_file).read_text(encoding="utf-8").splitlines()
                      if line.strip() and not line.startswith("#version")]
        wrapped = cls(vocab=vocab, merges=merges, model_max_length=model_max_length, **special_tokens, **init_kwargs)
    wrapped.save_pretrained(out_dir)
    return wrapped
