"""Training the learned evaluator on unlabelled dialogue (no human rating is read).

One pass: the encoder's bottom layers run once over every utterance and perturbed utterance (frozen features);
each step then runs the tuned top layers over a batch of whole dialogues and minimises
``InfoNCE(next utterance) + BCE(calibration) + BCE(valid utterance)``: every utterance's previous one (or its last
``context_turns`` turns, pooled as at scoring time) is its context, every other response in the batch a negative
(those of the same dialogue are the hard ones). With ``rival_contexts`` > 0 each step also takes that many
DailyDialog++ contexts (:mod:`dialeval.relevance.rivals`) and adds ``rival_weight`` × :func:`rival_loss`: each
human-written positive response against its own context's adversarial negatives (DEB's signal, Sai et al. 2020).
Batches, perturbations and initial weights derive from ``seed``; dropout is off, so a resumed run continues
exactly. A checkpoint (safetensors + JSON) is written every ``checkpoint_every`` steps into ``work_dir``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dialeval.io.validation import is_int
from dialeval.relevance.core import decay_weights
from dialeval.relevance.corpus import DialogueCorpus, perturb
from dialeval.relevance.model import pair_matrix
from dialeval.relevance.rivals import Rivals

CHUNK_TOKENS = 4096  # padded tokens per forward chunk of the top layers


@dataclass(frozen=True)
class TrainConfig:
    """What a training run depends on (the output records it; a resumed run must match it)."""

    seed: int = 0
    max_dialogues: int | None = None  # every training dialogue
    tuned_layers: int = 3
    epochs: int = 1
    batch_dialogues: int = 32
    lr_layers: float = 3e-5
    lr_heads: float = 1e-3
    warmup_steps: int = 50
    perturbed_share: float = 0.3
    max_length: int = 64
    checkpoint_every: int = 25
    context_turns: int = 3  # turns pooled into a response's context (weights 1, 1/2, 1/4, ... from the last back)
    rival_contexts: int = 4  # DailyDialog++ contexts per step whose positives must beat their adversarial negatives
    rival_weight: float = 0.3  # the rival loss's weight beside the next- and valid-utterance losses
    copy_weight: float = 0.0  # the copy loss's weight: each next utterance against a copy of its last context turn
    pair_hidden: int = 0  # hidden units of the pair head h(c', r) added to the cosine (0: no pair head)
    pair_context_block: bool = True  # the pair head also reads c' alone (False: [r, c'⊙r, |c' − r|] only)

    def __post_init__(self) -> None:
        for name, value in check_config(self).items():  # numpy scalars become Python numbers (JSON records)
            object.__setattr__(self, name, value)


#: the integer options' ranges (a step scores every utterance of its dialogues against every other: 1,024 dialogues,
#: ~8,000 utterances, make a 256 MB similarity matrix, the most one step may hold)
INT_RANGES = {"seed": (0, 2**32 - 1), "max_dialogues": (1, 10**7), "tuned_layers": (1, 6), "epochs": (1, 100),
              "batch_dialogues": (2, 1024), "context_turns": (1, 16), "rival_contexts": (0, 64),
              "pair_hidden": (0, 512), "warmup_steps": (0, 10**6), "max_length": (8, 512),
              "checkpoint_every": (1, 10**6)}
#: the number options' ranges: (low, high, whether low itself is allowed)
FLOAT_RANGES = {"rival_weight": (0.0, 100.0, False), "copy_weight": (0.0, 100.0, True),
                "lr_layers": (0.0, 1.0, False), "lr_heads": (0.0, 1.0, False), "perturbed_share": (0.0, 1.0, True)}
#: what to do instead, where a bound has a meaning
RANGE_HINTS = {"rival_weight": " (rival_contexts=0, --rival-contexts 0, trains without rivals)",
               "copy_weight": " (0: off)", "max_dialogues": " (None, or 0 on the CLI: every dialogue)"}
#: the fields ``dialeval train-evaluator`` sets by an option
CLI_OPTIONS = ("seed", "max_dialogues", "tuned_layers", "epochs", "batch_dialogues", "context_turns", "rival_contexts",
               "rival_weight", "copy_weight", "pair_hidden")


def _label(name: str) -> str:
    return f"{name} (--{name.replace('_', '-')})" if name in CLI_OPTIONS else name


def check_config(config: TrainConfig) -> dict[str, Any]:
    """The numeric fields as Python ``int``/``float``; one line per bad value, naming the field (and its option
    where the CLI has one)."""
    clean: dict[str, Any] = {}
    for name, (low, high) in INT_RANGES.items():
        value = getattr(config, name)
        if value is None and name == "max_dialogues":
            continue
        if not is_int(value):
            raise TypeError(f"{_label(name)} must be an integer, got {value!r}.")
        if not low <= value <= high:
            raise ValueError(f"{_label(name)} {value}: give an integer from {low} to {high:,}{RANGE_HINTS.get(name, '')}.")
        clean[name] = int(value)
    for name, (low, high, low_ok) in FLOAT_RANGES.items():
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy's bool is no Real either
            raise TypeError(f"{_label(name)} must be a number, got {value!r}.")
        clean[name] = value = float(value)
        if not (low <= value if low_ok else low < value) or not value <= high:  # also refuses nan
            bound = f"from {low:g} to" if low_ok else f"above {low:g} and at most"
            raise ValueError(f"{_label(name)} {value}: give a number {bound} {high:g}{RANGE_HINTS.get(name, '')}.")
    if config.pair_hidden and config.batch_dialogues > 64:  # the head holds 2 × 384 + 4 × hidden values per pair
        raise ValueError(f"{_label('batch_dialogues')} {config.batch_dialogues} with a pair head: give at most 64 "
                         "dialogues a step (the pair head holds every context-utterance pair's features: at 64 "
                         "dialogues about 1 GB with 64 hidden units, about 3 GB with 512).")
    if not isinstance(config.pair_context_block, bool):
        raise TypeError(f"pair_context_block must be True or False, got {config.pair_context_block!r}.")
    if not config.pair_context_block and not config.pair_hidden:
        raise ValueError("pair_context_block=False (--pair-without-context) shapes a pair head: give pair_hidden "
                         "(--pair-hidden) above 0 as well.")
    return clean


@contextmanager
def bottom_layers_only(model: Any, bottom: int) -> Iterator[None]:
    """``model`` (a BERT-style encoder of the caller's own, not shared with other threads) running its first
    ``bottom`` layers alone, so its ``last_hidden_state`` is their output (the tuned layers above them would be
    computed and thrown away); its layers are restored on the way out, an exception's too."""
    layers = model.encoder.layer
    if not 0 <= bottom <= len(layers):
        raise ValueError(f"bottom {bottom}: give 0 to {len(layers)}, the encoder's layer count.")
    model.encoder.layer = layers[:bottom]
    try:
        yield
    finally:
        model.encoder.layer = layers


@dataclass
class Features:
    """Frozen bottom-layer hidden states of each text (``(length, dim)`` float32 tensors)."""

    states: list[Any]


def frozen_features(model: Any, tokenizer: Any, texts: Sequence[str], tuned_layers: int, max_length: int,
                    progress: Callable[[int], None] | None = None) -> Features:
    """Hidden states after the encoder's bottom ``layers - tuned_layers`` layers, each text on its own length."""
    import torch

    ids = tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    order = np.argsort([len(x) for x in ids], kind="stable")
    states: list[Any] = [None] * len(ids)
    bottom = len(model.encoder.layer) - tuned_layers
    start = 0
    with torch.inference_mode(), bottom_layers_only(model, bottom):
        while start < len(order):
            width = len(ids[order[min(start + 63, len(order) - 1)]])
            stop = min(len(order), start + max(1, CHUNK_TOKENS // max(width, 1)))
            rows = order[start:stop]
            batch = tokenizer.pad({"input_ids": [ids[i] for i in rows]}, return_tensors="pt")
            hidden = model(**batch).last_hidden_state  # the bottom layers' output
            for j, i in enumerate(rows):
                states[i] = hidden[j, : len(ids[i])].clone()
            if progress:
                progress(len(rows))
            start = stop
    return Features(states)


def top_embeddings(layers: Any, states: Sequence[Any]) -> Any:
    """Normalised mean-pooled embeddings of ``states`` through ``layers`` (length-sorted padded chunks)."""
    import torch

    order = sorted(range(len(states)), key=lambda i: states[i].shape[0])
    out: list[Any] = [None] * len(states)
    start = 0
    while start < len(order):
        width = states[order[min(len(order) - 1, start + 31)]].shape[0]
        stop = min(len(order), start + max(1, CHUNK_TOKENS // width))
        rows = order[start:stop]
        width = max(states[i].shape[0] for i in rows)
        hidden = torch.nn.utils.rnn.pad_sequence([states[i] for i in rows], batch_first=True)
        mask = torch.zeros(len(rows), width)
        for j, i in enumerate(rows):
            mask[j, : states[i].shape[0]] = 1
        additive = (1.0 - mask[:, None, None, :]) * torch.finfo(torch.float32).min
        for layer in layers:
            hidden = layer(hidden, attention_mask=additive)
            hidden = hidden[0] if isinstance(hidden, tuple) else hidden
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        pooled = torch.nn.functional.normalize(pooled, dim=-1)
        for j, i in enumerate(rows):
            out[i] = pooled[j]
        start = stop
    return torch.stack(out)


@dataclass
class TrainingData:
    """Texts to encode; per training dialogue, the indices of its utterances and of its perturbed ones; per rival
    context, the indices of its window of turns, its positives and its adversarial negatives."""

    texts: list[str]
    dialogues: list[list[int]]
    perturbed: list[list[int]]
    rivals: list[tuple[list[int], list[int], list[int]]] = field(default_factory=list)


def training_data(corpus: DialogueCorpus, config: TrainConfig, rivals: Sequence[Rivals] = ()) -> TrainingData:
    """Every training utterance, plus a perturbed copy of a ``perturbed_share`` of them (drawn from ``seed``), then
    the texts of ``rivals`` (each context's last ``context_turns`` turns, positives, adversarial negatives)."""
    texts: list[str] = []
    dialogues, perturbed = [], []
    rng = np.random.default_rng(config.seed)
    for dialogue in corpus.train:
        first = len(texts)
        texts.extend(dialogue)
        dialogues.append(list(range(first, len(texts))))
        extra = []
        for i in range(first, first + len(dialogue)):
            if rng.random() < config.perturbed_share:
                bad = perturb(texts[i], config.seed, i)
                if bad is not None:
                    extra.append(bad)
        perturbed.append(list(range(len(texts), len(texts) + len(extra))))
        texts.extend(extra)
    triples = []
    for rival in rivals:
        parts = []
        for group in (rival.context[-config.context_turns:], rival.positives, rival.adversarial):
            parts.append(list(range(len(texts), len(texts) + len(group))))
            texts.extend(group)
        triples.append((parts[0], parts[1], parts[2]))
    return TrainingData(texts, dialogues, perturbed, triples)


def pool_windows(emb: Any, windows: list[list[int]]) -> Any:
    """Per window (rows of ``emb``, oldest first) its context embedding: the row itself for a one-turn window, else
    the unit-length mean of its rows weighted 1, 1/2, 1/4, ... from the last back, as
    :func:`evaluator.context_embeddings` scores."""
    import torch

    if all(len(w) == 1 for w in windows):
        return emb[torch.tensor([w[0] for w in windows])]
    weights = torch.zeros(len(windows), emb.shape[0])
    for row, window in enumerate(windows):
        weights[row, window] = torch.from_numpy(decay_weights(len(window))).float()
    return torch.nn.functional.normalize(weights @ emb, dim=-1)


def context_pool(emb: Any, dialogues: list[list[int]], turns: int) -> tuple[Any, Any]:
    """Per response (turn ``t >= 1`` of each dialogue, rows of ``emb``), its context embedding (the last ``turns``
    turns, :func:`pool_windows`) and a mask of the rows pooled into it."""
    import torch

    windows = [d[max(0, t - turns):t] for d in dialogues for t in range(1, len(d))]
    mask = torch.zeros(len(windows), emb.shape[0], dtype=torch.bool)
    for row, window in enumerate(windows):
        mask[row, window] = True
    return pool_windows(emb, windows), mask


def similarities(heads: Any, mapped: Any, responses: Any) -> Any:
    """``s(c_i, r_j) = c'_i · r_j + h(c'_i, r_j)`` for unit-length mapped contexts and responses (``h`` only when the
    heads have a pair head)."""
    sim = mapped @ responses.T
    return sim + pair_matrix(heads.pair, mapped, responses) if hasattr(heads, "pair") else sim


def step_loss(layers: Any, heads: Any, states: list[Any], dialogues: list[list[int]], perturbed: list[list[int]],
              rng: np.random.Generator, context_turns: int = 1, copy_weight: float = 0.0
              ) -> tuple[Any, dict[str, float]]:
    """The loss of one batch of dialogues (indices into ``states``) and its parts; each response's context is its
    last ``context_turns`` turns (:func:`context_pool`). With ``copy_weight`` > 0 it adds that weight times
    :func:`copy_loss`."""
    import torch
    import torch.nn.functional as F

    real = [i for d in dialogues for i in d]
    bad = [i for p in perturbed for i in p]
    emb = top_embeddings(layers, [states[i] for i in real + bad])
    pos = {i: k for k, i in enumerate(real)}
    rsp = torch.tensor([pos[d[t]] for d in dialogues for t in range(1, len(d))])
    pooled, pooled_turns = context_pool(emb[: len(real)], [[pos[i] for i in d] for d in dialogues], context_turns)
    mapped = F.normalize(heads.context_map(pooled), dim=-1)
    sim = similarities(heads, mapped, emb[: len(real)])  # every real utterance but the context's own turns is a candidate
    last = torch.tensor([pos[d[t - 1]] for d in dialogues for t in range(1, len(d))])
    copy = copy_loss(sim, rsp, last, heads.log_temperature.exp()) if copy_weight > 0 else None
    # a context's own turns are no candidates: below any cosine (-2, as the shipped weights were trained), and far
    # below anything a pair head can add
    sim = sim.masked_fill(pooled_turns, -1e4 if hasattr(heads, "pair") else -2.0)
    nce = F.cross_entropy(sim * heads.log_temperature.exp(), rsp)
    diag = sim[torch.arange(len(rsp)), rsp].detach()
    neg_cols = torch.from_numpy(rng.integers(0, len(real), size=len(rsp)))
    neg_ok = neg_cols != rsp
    negs = sim[torch.arange(len(rsp)), neg_cols].detach()[neg_ok]
    a, a0 = heads.calibration
    calib = F.binary_cross_entropy_with_logits(torch.cat([a * diag + a0, a * negs + a0]),
                                               torch.cat([torch.ones_like(diag), torch.zeros_like(negs)]))
    real_pick = torch.from_numpy(rng.choice(len(real), size=min(len(real), max(len(bad), 1)), replace=False))
    logits = heads.valid(torch.cat([emb[real_pick], emb[len(real):]])).squeeze(-1)
    valid = F.binary_cross_entropy_with_logits(
        logits, torch.cat([torch.ones(len(real_pick)), torch.zeros(len(bad))]))
    loss = nce + calib + valid
    parts = {"nce": nce.item(), "calibration": calib.item(), "valid": valid.item()}
    if copy is not None:
        loss, parts["copy"] = loss + copy_weight * copy, copy.item()
    return loss, parts


def copy_loss(sim: Any, responses: Any, last_turns: Any, scale: Any) -> Any:
    """The pairwise logistic loss ``mean log(1 + exp(τ·(s(c, u) − s(c, r))))`` of each next utterance ``r``
    against a copy of its context's last turn ``u`` (columns ``responses`` and ``last_turns`` of ``sim``): repeating
    what was just said is not a reply. It sits outside the next-utterance InfoNCE, whose candidates leave the
    context's own turns out, so it adds one pair per response rather than a negative that outweighs the batch.
    ``scale`` is the InfoNCE's learned temperature τ, and this loss's gradient reaches it too."""
    import torch
    import torch.nn.functional as F

    rows = torch.arange(len(responses))
    return F.softplus(scale * (sim[rows, last_turns] - sim[rows, responses])).mean()


def rival_loss(layers: Any, heads: Any, states: list[Any], rivals: list[tuple[list[int], list[int], list[int]]]
               ) -> tuple[Any, dict[str, float]]:
    """Each positive ``p`` of a rival context ``c`` against that context's adversarial negatives ``A``:
    ``InfoNCE = −log softmax_p(τ·[s(c, p), s(c, a) for a in A])``, averaged over positives, plus the calibration
    BCE of ``σ(a·s + a0)`` on those pairs (positives 1, adversarial 0; similarities detached, as in
    :func:`step_loss`)."""
    import torch
    import torch.nn.functional as F

    order = sorted({i for window, good, bad in rivals for i in (*window, *good, *bad)})
    row_of = {i: k for k, i in enumerate(order)}
    emb = top_embeddings(layers, [states[i] for i in order])
    ctx = F.normalize(heads.context_map(pool_windows(emb, [[row_of[i] for i in w] for w, _, _ in rivals])), dim=-1)
    good = [similarities(heads, ctx[r:r + 1], emb[[row_of[i] for i in g]])[0] for r, (_, g, _) in enumerate(rivals)]
    bad = [similarities(heads, ctx[r:r + 1], emb[[row_of[i] for i in b]])[0] for r, (_, _, b) in enumerate(rivals)]
    scale = heads.log_temperature.exp()
    logits = torch.cat([torch.cat([g[:, None], b[None, :].expand(len(g), -1)], dim=1) for g, b in zip(good, bad)])
    nce = F.cross_entropy(logits * scale, torch.zeros(logits.shape[0], dtype=torch.long))
    pos, neg = torch.cat(good).detach(), torch.cat(bad).detach()
    a, a0 = heads.calibration
    calib = F.binary_cross_entropy_with_logits(torch.cat([a * pos + a0, a * neg + a0]),
                                               torch.cat([torch.ones_like(pos), torch.zeros_like(neg)]))
    return nce + calib, {"rival_nce": nce.item(), "rival_calibration": calib.item()}


def rival_batch(n_rivals: int, config: TrainConfig, step: int) -> list[int]:
    """The rival contexts of ``step``: ``rival_contexts`` consecutive entries of a permutation drawn from
    ``(seed, 13)``, taken cyclically."""
    order = np.random.default_rng((config.seed, 13)).permutation(n_rivals)
    return [int(order[(step * config.rival_contexts + j) % n_rivals]) for j in range(config.rival_contexts)]


def batches(n_dialogues: int, config: TrainConfig, epoch: int) -> list[np.ndarray]:
    """The dialogue batches of ``epoch`` (a permutation drawn from ``(seed, epoch)``)."""
    order = np.random.default_rng((config.seed, epoch)).permutation(n_dialogues)
    return [order[i:i + config.batch_dialogues] for i in range(0, n_dialogues, config.batch_dialogues)]


def learning_rate_scale(step: int, total: int, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))



def config_dict(config: TrainConfig) -> dict[str, Any]:
    """The configuration as recorded in checkpoints and weights; ``copy_weight``, ``pair_hidden`` and
    ``pair_context_block`` only when not their defaults, so the records of runs made before those options existed
    read the same."""
    record = asdict(config)
    for name in ("copy_weight", "pair_hidden"):
        if not record[name]:
            del record[name]
    if record["pair_context_block"]:
        del record["pair_context_block"]
    return record
