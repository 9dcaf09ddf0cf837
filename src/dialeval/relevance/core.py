"""Context relevance: the cosine between a sentence encoder's embedding of the context and of the response,

    relevance(c, r) = cos(Σ_k w_k e(c_k) / Σ_k w_k, e(r)),

over the last ``turns`` context turns ``c_k`` (``k = 1`` the last), with weights ``w_k = 1`` (``pooling="mean"``)
or ``w_k = 2^{1-k}`` (``pooling="decay"``), or the embedding of those turns joined by spaces
(``pooling="concat"``). This is the unreferenced half of BERT-RUBER (Ghazarian et al. 2019) without its trained
head, and an embedding-average metric of Liu et al. (2016) taken against the context instead of a reference.
A response with no context is compared with the empty text (the encoder's embedding of nothing).

Dialogue level: the mean relevance of the replies, each against the turns before it. With speakers, the replies
are the turns of every speaker but the one who opened the conversation (the system's turns in a user-opened
chat); without, every turn after the first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.io.signature import make_signature
from dialeval.io.validation import check_dialogues, check_turn_inputs
from dialeval.models.encoders import BATCH_SIZE, get_encoder
from dialeval.registry import MAX_TURNS

CONFIGS = ("turn", "dialog")
POOLINGS = ("mean", "decay", "concat")


def resolve_config(config: Any, dialogues: Any) -> Any:
    """``config`` as given, or for ``None`` the level the inputs are at."""
    return ("dialog" if dialogues is not None else "turn") if config is None else config


def check_options(turns: Any, pooling: Any, config: Any) -> None:
    """One line per bad option, before any model loads."""
    if config not in CONFIGS:
        raise ValueError(f"config={config!r}: use one of {list(CONFIGS)}.")
    if isinstance(turns, bool) or not isinstance(turns, int) or not 1 <= turns <= MAX_TURNS:
        raise ValueError(f"turns={turns!r}: give the number of last context turns to embed, an integer from 1 to "
                         f"{MAX_TURNS}.")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling={pooling!r}: use one of {list(POOLINGS)}.")


def decay_weights(k: int) -> np.ndarray:
    """``w_j = 2^{-j}`` for ``k`` turns, oldest first: 1 for the last turn, 1/2 for the one before, …"""
    return 0.5 ** np.arange(k - 1, -1, -1, dtype=np.float64)


def context_weights(n_turns: int, turns: int, pooling: str) -> np.ndarray:
    """Weights of the last ``min(n_turns, turns)`` turns, oldest first (they sum to 1)."""
    k = max(0, min(n_turns, turns))
    if k == 0:
        return np.ones(1)
    w = np.ones(k) if pooling == "mean" else decay_weights(k)
    return w / w.sum()


def context_texts(context: Sequence[str], turns: int, pooling: str) -> list[str]:
    """The texts embedded for one context: its last ``turns`` turns, one text when joined, ``[""]`` when empty."""
    window = list(context[-turns:]) if context else []
    if not window:
        return [""]
    return [" ".join(window)] if pooling == "concat" else window


def pooled_contexts(contexts: Sequence[Sequence[str]], lookup: dict[str, np.ndarray], turns: int,
                    pooling: str) -> np.ndarray:
    """``(n, dim)`` pooled context embeddings (float64) from the embeddings of each distinct text."""
    rows = []
    for context in contexts:
        texts = context_texts(context, turns, pooling)
        w = np.ones(1) if len(texts) == 1 else context_weights(len(texts), turns, pooling)
        rows.append(np.einsum("k,kd->d", w, np.stack([lookup[t] for t in texts]).astype(np.float64)))
    return np.stack(rows)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine in float64, clipped to [-1, 1] (a value past ±1 is rounding)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.clip(np.einsum("ij,ij->i", a, b) / np.maximum(norms, 1e-300), -1.0, 1.0)


def reply_positions(dialogue: Sequence[str], speakers: Sequence[str] | None) -> list[int]:
    """Indices of the turns scored at dialogue level: not the opener's turns (with speakers), else all but the first."""
    if speakers and len(speakers) == len(dialogue):
        return [i for i in range(1, len(dialogue)) if speakers[i] != speakers[0]]
    return list(range(1, len(dialogue)))


def dialog_items(dialogues: Sequence[Sequence[str]], speakers: Sequence[Sequence[str]] | None
                 ) -> tuple[list[list[str]], list[str], list[int]]:
    """Flatten dialogues into (contexts, responses, owner dialogue index) of their replies."""
    contexts, responses, owner = [], [], []
    for d, dialogue in enumerate(dialogues):
        for i in reply_positions(dialogue, speakers[d] if speakers else None):
            contexts.append(list(dialogue[:i]))
            responses.append(dialogue[i])
            owner.append(d)
    return contexts, responses, owner


def dialog_means(item_scores: np.ndarray, owner: Sequence[int], n: int) -> list[float]:
    """Per dialogue, the mean of its replies' scores (NaN for a dialogue with no reply)."""
    out = []
    owner_arr = np.asarray(owner, dtype=np.int64)
    for d in range(n):
        vals = item_scores[owner_arr == d]
        out.append(math.fsum(vals.tolist()) / len(vals) if len(vals) else math.nan)
    return out


def check_speakers(speakers: Any, dialogues: Sequence[Sequence[str]]) -> None:
    """One list of speaker names per dialogue, a name per turn: a shorter or longer list would score other turns."""
    if not isinstance(speakers, (list, tuple)) or len(speakers) != len(dialogues):
        got = f"{len(speakers)} lists" if isinstance(speakers, (list, tuple)) else type(speakers).__name__
        raise ValueError(f"`speakers` must hold one list of speaker names per dialogue ({len(dialogues)}), got "
                         f"{got}.")
    for d, (names, dialogue) in enumerate(zip(speakers, dialogues)):
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"`speakers[{d}]` must be a list of names (strings), got {names!r:.60}.")
        if len(names) != len(dialogue):
            raise ValueError(f"`speakers[{d}]` names {len(names)} speakers for {len(dialogue)} turns; give one "
                             "name per turn.")


def check_inputs(config: str, contexts: Any, predictions: Any, dialogues: Any, speakers: Any
                 ) -> tuple[list[list[str]], list[str], list[int] | None, int]:
    """Validated ``(contexts, responses, owner, n_items)``: turn inputs as given (an empty context allowed),
    dialogues flattened into their replies (``owner`` maps each reply to its dialogue)."""
    if config == "turn":
        if dialogues is not None:
            raise ValueError("config 'turn' takes contexts and predictions; pass dialogues with config 'dialog'.")
        empty = [i for i, c in enumerate(contexts or []) if isinstance(c, (list, tuple)) and not c]
        filled = [c if c else ["."] for c in (contexts or [])] if empty else contexts
        ctxs, preds = check_turn_inputs(filled, predictions)
        for i in empty:
            ctxs[i] = []
        return ctxs, preds, None, len(preds)
    if contexts is not None or predictions is not None:
        raise ValueError("config 'dialog' takes dialogues; pass contexts and predictions with config 'turn'.")
    dials = check_dialogues(dialogues)
    if speakers is not None:
        check_speakers(speakers, dials)
    ctxs, resps, owner = dialog_items(dials, speakers)
    empty = sorted(set(range(len(dials))) - set(owner))
    if empty:
        raise ValueError(f"dialogues[{empty[0]}] has no reply to score (one turn, or only its opener speaks; "
                         f"{len(empty)} such dialogue(s)); give each conversation a reply, or score it at turn level.")
    return ctxs, resps, owner, len(dials)


def embed_lookup(encoder: Any, texts: Sequence[str], batch_size: int, progress: bool | None) -> dict[str, np.ndarray]:
    """Each distinct text's embedding; the empty text (a missing context) is embedded as the encoder's input with
    no word (a sentence encoder's special tokens alone)."""
    unique = [t for t in dict.fromkeys(texts) if t]
    emb = encoder.encode(unique, field="texts", batch_size=batch_size, progress=progress) if unique else []
    lookup = dict(zip(unique, emb))
    if "" in texts:
        if not hasattr(encoder, "embed_chunk") or getattr(encoder, "kind", "") != "sentence-transformers":
            raise ValueError("a response has no context, and this encoder cannot embed an empty text; give every "
                             "response at least one context turn, or use a sentence-transformers encoder.")
        lookup[""] = encoder.embed_chunk([""])[0]
    return lookup


def compute_context_relevance(contexts: Any = None, predictions: Any = None, dialogues: Any = None, *,
                              speakers: Any = None, config: str | None = None, turns: int = 1, pooling: str = "mean",
                              encoder: Any = None, batch_size: int = BATCH_SIZE, dtype: Any = None,
                              device: Any = None, backend: Any = None, progress: bool | None = None) -> dict[str, Any]:
    """Context relevance per response (``turn``) or per conversation (``dialog``; ``config=None``: ``dialog`` when
    ``dialogues`` are given), their mean and a signature."""
    config = resolve_config(config, dialogues)
    check_options(turns, pooling, config)
    ctxs, resps, owner, n = check_inputs(config, contexts, predictions, dialogues, speakers)
    enc = get_encoder(encoder, device=device, dtype=dtype, backend=backend)
    texts = [t for c in ctxs for t in context_texts(c, turns, pooling)] + list(resps)
    lookup = embed_lookup(enc, texts, batch_size, progress)
    if resps:
        item = cosine_rows(pooled_contexts(ctxs, lookup, turns, pooling), np.stack([lookup[r] for r in resps]))
    else:
        item = np.zeros(0)
    scores = item.tolist() if owner is None else dialog_means(item, owner, n)
    finite = [s for s in scores if not math.isnan(s)]
    return {"context_relevance": math.fsum(finite) / len(finite) if finite else math.nan, "scores": scores,
            "signature": make_signature("context_relevance", level=config, turns=turns, pooling=pooling,
                                        encoder=enc.revision, dtype=enc.dtype_name,
                                        backend=getattr(enc, "backend", "torch"), sim="cosine")}
