"""USL-H's third signal, specificity (Phy et al. 2020): how much information a response carries, as its negative
log-likelihood under a language model of the training dialogue, min-max normalised between the training
utterances' first and third quartiles and clipped to [0, 1]:

    L(r) = clip((NLL(r) − q25) / (q75 − q25), 0, 1),     NLL(r) = −Σ_t log p(t)

USL-H takes NLL(r) from a BERT masked LM fine-tuned on DailyDialog. all-MiniLM-L6-v2 ships without an MLM head,
so here p is a unigram model of the same WordPiece tokens (bert-base-uncased's vocabulary, which the encoder
shares) counted on the training utterances, add-one smoothed: p(t) = (count(t) + 1) / (N + V). Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

LOG_PROB = "specificity.log_prob"
QUARTILES = "specificity.quartiles"
MAX_TOKENS = 256  # a longer response is past q75 long before this


def token_ids(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """What specificity counts: each text's WordPiece ids from ``tokenizer``, without special tokens, at most
    :data:`MAX_TOKENS` (the same call in training and at scoring time)."""
    return tokenizer(list(texts), add_special_tokens=False, truncation=True, max_length=MAX_TOKENS)["input_ids"]


def unigram_log_probs(token_ids: Sequence[Sequence[int]], vocab_size: int) -> np.ndarray:
    """``log((count(t) + 1) / (N + V))`` for each of the ``V = vocab_size`` tokens, in float64."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for ids in token_ids:
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1)
    return np.log((counts + 1.0) / (counts.sum() + float(vocab_size)))


def negative_log_likelihoods(token_ids: Sequence[Sequence[int]], log_prob: np.ndarray) -> np.ndarray:
    """``NLL(r) = −Σ_t log p(t)`` per text (0 for a text with no token)."""
    table = np.asarray(log_prob, dtype=np.float64)
    return np.array([-float(np.sum(table[np.asarray(ids, dtype=np.int64)])) if len(ids) else 0.0
                     for ids in token_ids])


def fit(token_ids: Sequence[Sequence[int]], vocab_size: int) -> dict[str, np.ndarray]:
    """The specificity model of the training utterances: the unigram log-probabilities and the quartiles
    ``[q25, q75]`` of the utterances' NLL (the normalisation USL-H computes on its training set)."""
    log_prob = unigram_log_probs(token_ids, vocab_size)
    quartiles = np.quantile(negative_log_likelihoods(token_ids, log_prob), [0.25, 0.75])
    return {LOG_PROB: log_prob, QUARTILES: np.asarray(quartiles, dtype=np.float64)}


def specificity(state: dict[str, np.ndarray], token_ids: Sequence[Sequence[int]]) -> np.ndarray:
    """``L(r)`` per text, from a model :func:`fit` made."""
    low, high = (float(x) for x in np.asarray(state[QUARTILES], dtype=np.float64))
    nll = negative_log_likelihoods(token_ids, state[LOG_PROB])
    return np.clip((nll - low) / (high - low), 0.0, 1.0)
