"""The learned evaluator's trainable parts over a sentence encoder: its top transformer layers and two heads.

Scores, for a context ``c`` (its last ``turns`` turns, pooled) and a response ``r``, with ``e(x)`` the encoder's
normalised mean-pooled embedding (all-MiniLM-L6-v2 by default; the bottom layers are frozen, the top
``tuned_layers`` tuned):

- next-utterance (USL-H's NUP, Phy et al. 2020): ``s = cos(W e(c) + b, e(r)) [+ h(c', r)]`` and
  ``p_N = σ(a·s + a0)``; the optional pair head ``h = w2·GELU(W1 [c', r, c'⊙r, |c' − r|] + b1) + b2`` with
  ``c' = normalise(W e(c) + b)`` (the feature set of InferSent, Conneau et al. 2017, and of BERT-RUBER's
  unreferenced scorer, Ghazarian et al. 2019) reads the pair jointly, or without the ``c'`` block
  ``[r, c'⊙r, |c' − r|]`` (the first layer's width tells which); weights without it have ``h = 0``;
- valid utterance (USL-H's VUP): ``p_V = σ(MLP(e(r)))``, trained against perturbed utterances;
- specificity ``L`` (USL-H's third signal, :mod:`dialeval.relevance.specificity`);
- the score (``composition``): ``product`` = ``U·S`` with ``U = p_V``, ``S = p_N``, the probability that the
  response is a valid utterance *and* follows the context; or ``usl_h`` = USL-H's hierarchy
  ``(U + U·S + U·S·L) / 3``: a response must first be understandable, then sensible; specificity only adds.

State is saved as safetensors (tensors) and JSON (everything else); never pickle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

HEAD_HIDDEN = 128
COMPOSITIONS = ("product", "usl_h")
DEFAULT_TURNS = 3  #: context turns the next-utterance signal reads (chosen on the unlabelled proxy: the model card)


def build_heads(dim: int, pair_hidden: int = 0, pair_context_block: bool = True) -> Any:
    """The trainable heads (``context_map``, ``calibration`` ``[a, a0]``, ``valid`` MLP and, with ``pair_hidden``
    > 0, the ``pair`` MLP, reading ``c'`` alone as well only with ``pair_context_block``, its output layer zero so
    that it starts at ``h = 0``) as a torch module."""
    import torch
    from torch import nn

    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.context_map = nn.Linear(dim, dim)
            nn.init.eye_(self.context_map.weight)
            nn.init.zeros_(self.context_map.bias)
            self.log_temperature = nn.Parameter(torch.tensor(float(np.log(20.0))))
            self.calibration = nn.Parameter(torch.tensor([10.0, -5.0]))
            self.valid = nn.Sequential(nn.Linear(dim, HEAD_HIDDEN), nn.GELU(), nn.Linear(HEAD_HIDDEN, 1))
            if pair_hidden:
                width = (4 if pair_context_block else 3) * dim
                self.pair = nn.Sequential(nn.Linear(width, pair_hidden), nn.GELU(), nn.Linear(pair_hidden, 1))
                nn.init.zeros_(self.pair[2].weight)
                nn.init.zeros_(self.pair[2].bias)

    return Heads()


def reads_context_block(width: int, dim: int) -> bool:
    """Whether a pair head whose first layer reads ``width`` features of ``dim``-wide embeddings has the ``c'``
    block (``4·dim``: ``[c', r, c'⊙r, |c' − r|]``) or not (``3·dim``); any other width is refused."""
    if width not in (3 * dim, 4 * dim):
        raise ValueError(f"the pair head's first layer reads {width} features; with {dim}-wide embeddings it must "
                         f"read {3 * dim} or {4 * dim}: the weights were made for another encoder or are damaged.")
    return width == 4 * dim


def pair_matrix(pair: Any, mapped: Any, responses: Any) -> Any:
    """``h(c'_i, r_j)`` for every row ``i`` of ``mapped`` (unit-length mapped contexts) and ``j`` of ``responses``
    (torch): the first layer's blocks applied to ``c'`` (where the head reads it), ``r``, ``c'⊙r`` and
    ``|c' − r|``, the ``c'`` and ``r`` blocks once per row and column."""
    import torch

    weight, bias = pair[0].weight, pair[0].bias
    with_context = reads_context_block(weight.shape[1], mapped.shape[1])
    blocks = weight.split(mapped.shape[1], dim=1)
    wb, wc, wd = blocks[-3:]
    product = mapped[:, None, :] * responses[None, :, :]
    gap = (mapped[:, None, :] - responses[None, :, :]).abs()
    hidden = (responses @ wb.T)[None, :, :] + product @ wc.T + gap @ wd.T + bias
    if with_context:
        hidden = hidden + (mapped @ blocks[0].T)[:, None, :]
    return (torch.nn.functional.gelu(hidden) @ pair[2].weight[0]) + pair[2].bias[0]


def pair_rows(pair: Any, mapped: Any, responses: Any) -> Any:
    """``h(c'_i, r_i)`` row by row (torch; any leading dimensions, matching in both)."""
    import torch

    blocks = [responses, mapped * responses, (mapped - responses).abs()]
    if reads_context_block(pair[0].weight.shape[1], mapped.shape[-1]):
        blocks.insert(0, mapped)
    return pair(torch.cat(blocks, dim=-1)).squeeze(-1)


def _np(state: dict[str, Any], key: str) -> np.ndarray:
    return np.asarray(state[key], dtype=np.float64)


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # exact σ without overflow warnings


def next_utterance_similarity(state: dict[str, Any], context: np.ndarray, response: np.ndarray) -> np.ndarray:
    """``s = cos(W e(c) + b, e(r)) + h(c', r)`` per row, in float64 (``h = 0`` for weights without a pair head)."""
    from dialeval.relevance.core import cosine_rows

    mapped = context.astype(np.float64) @ _np(state, "context_map.weight").T + _np(state, "context_map.bias")
    similarity = cosine_rows(mapped, response)
    if "pair.0.weight" not in state:
        return similarity
    unit = mapped / np.maximum(np.linalg.norm(mapped, axis=1, keepdims=True), 1e-300)
    r = response.astype(np.float64)
    r = r / np.maximum(np.linalg.norm(r, axis=1, keepdims=True), 1e-300)
    first = _np(state, "pair.0.weight")
    blocks = [r, unit * r, np.abs(unit - r)]
    if reads_context_block(first.shape[1], unit.shape[1]):
        blocks.insert(0, unit)
    hidden = _gelu(np.concatenate(blocks, axis=1) @ first.T + _np(state, "pair.0.bias"))
    return similarity + hidden @ _np(state, "pair.2.weight")[0] + _np(state, "pair.2.bias")[0]


def next_utterance_probability(state: dict[str, Any], context: np.ndarray, response: np.ndarray) -> np.ndarray:
    """``p_N = σ(a·s + a0)``."""
    a, a0 = _np(state, "calibration")
    return _sigmoid(a * next_utterance_similarity(state, context, response) + a0)


def valid_probability(state: dict[str, Any], response: np.ndarray) -> np.ndarray:
    """``p_V = σ(w2·GELU(W1 e(r) + b1) + b2)``."""
    hidden = _gelu(response.astype(np.float64) @ _np(state, "valid.0.weight").T + _np(state, "valid.0.bias"))
    return _sigmoid(hidden @ _np(state, "valid.2.weight")[0] + _np(state, "valid.2.bias")[0])


def combine(composition: str, valid: np.ndarray, follows: np.ndarray, specific: np.ndarray) -> np.ndarray:
    """``product``: ``U·S``; ``usl_h``: USL-H's hierarchy ``(U + U·S + U·S·L) / 3`` (Phy et al. 2020, its equal
    weights); both in [0, 1]."""
    if composition == "product":
        return valid * follows
    return (valid + valid * follows + valid * follows * specific) / 3.0
