"""DRESS (Han et al. 2022, §4): cluster-balancing training weights and negative-training flags.

- Training weight of a reference response r in cluster c(r): w(r) = (1 − p_ref(c(r)))^γ, γ = 30 by default,
  where p_ref is the reference cluster distribution of the semantic space. Responses from frequent
  ("head") clusters are down-weighted, those from rare clusters keep a weight near 1.
- Generated responses in a *head* cluster of the generated set are flagged with weight −1 for negative
  training; all others get 0. Two rules for the head, ``head=``:
  ``"top5"`` (default): the five most frequent clusters of the generated set, as the paper's text defines
  them (§4.2, "the top five frequent clusters"); ties at the cut go to the lower cluster index, and an empty
  cluster is never a head. ``"share>0.1"``: clusters holding more than 10 % of the generated set, as the
  authors' reference code does. ``"top<N>"`` and ``"share><T>"`` set other sizes. The default follows the
  paper's text; the share rule depends on k and on the space and can flag nothing (on DailyDialog's training
  reference distribution, the bundled space's, no cluster exceeds 0.1; on its test responses one does: Sem-Ent card).

These are pure functions of cluster labels and distributions; :func:`dress_from_space` runs the encoder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.models.encoders import BATCH_SIZE
from dialeval.semantic.space import SemanticSpace, cluster_distribution

GAMMA = 30.0
HEAD_RULE = "top5"  # the paper's text; "share>0.1" is the reference code's
_HEAD = re.compile(r"(top)([1-9][0-9]{0,3})|(share>)(0|0?\.[0-9]+)")


def _check_distribution(p: Any, field: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or (p < 0).any() or (p > 1).any() or not np.isfinite(p).all():
        raise ValueError(f"`{field}` must be a non-empty 1-D array of probabilities in [0, 1].")
    return p


def _check_gamma(gamma: Any) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not np.isfinite(gamma) or gamma < 0:
        raise ValueError(f"`gamma` must be a finite number ≥ 0 (the paper uses 30), got {gamma!r}.")
    return float(gamma)


def cluster_weights(reference_distribution: Sequence[float] | np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    """Per-cluster weight (1 − p_ref(j))^γ."""
    p = _check_distribution(reference_distribution, "reference_distribution")
    return (1.0 - p) ** _check_gamma(gamma)


def dress_weights(labels: Sequence[int] | np.ndarray, reference_distribution: Sequence[float] | np.ndarray,
                  gamma: float = GAMMA) -> np.ndarray:
    """Per-example training weight w(r) = (1 − p_ref(c(r)))^γ for cluster labels ``labels``."""
    w = cluster_weights(reference_distribution, gamma)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= w.size):
        raise ValueError(f"cluster labels must lie in [0, {w.size}).")
    return w[labels]


def check_head(head: Any) -> tuple[str, float]:
    """``("top", N)`` or ``("share", T)`` from a head rule ``"top<N>"`` (1 ≤ N ≤ 9999) or ``"share><T>"``
    (0 ≤ T < 1); anything else is a one-line ValueError."""
    found = _HEAD.fullmatch(head) if isinstance(head, str) else None
    if found is None:
        raise ValueError(f"head={head!r}: use 'top5' (the paper's text: the five most frequent clusters of the "
                         "generated set) or 'share>0.1' (the reference code: clusters above 10 %), or another "
                         "'top<N>' / 'share><T>' with 0 ≤ T < 1.")
    if found.group(1):
        return "top", float(found.group(2))
    return "share", float(found.group(4))


def head_clusters(distribution: Sequence[float] | np.ndarray, head: str = HEAD_RULE) -> list[int]:
    """Head clusters of ``distribution`` under rule ``head`` (see the module docstring), in index order."""
    p = _check_distribution(distribution, "distribution")
    kind, value = check_head(head)
    if kind == "share":
        return [int(j) for j in np.flatnonzero(p > value)]
    order = sorted(np.flatnonzero(p > 0), key=lambda j: (-p[j], j))  # most frequent first, ties: lower index
    return sorted(int(j) for j in order[:int(value)])


def negative_flags(labels: Sequence[int] | np.ndarray, k: int, head: str = HEAD_RULE) -> np.ndarray:
    """−1.0 for each generated response in a head cluster of the generated distribution, else 0.0."""
    labels = np.asarray(labels, dtype=np.int64)
    heads = head_clusters(cluster_distribution(labels, k), head)
    return np.where(np.isin(labels, heads), -1.0, 0.0)


def dress_from_space(space: SemanticSpace, training_responses: Sequence[str] | None = None,
                     generated_responses: Sequence[str] | None = None, *, gamma: float = GAMMA,
                     head: str = HEAD_RULE, batch_size: int = BATCH_SIZE,
                     progress: bool | None = None) -> dict[str, Any]:
    """Weights for ``training_responses`` and flags for ``generated_responses`` in ``space``.

    Without ``training_responses`` the space's own reference responses (its stored labels) are weighted.
    """
    gamma = _check_gamma(gamma)
    check_head(head)
    p_ref = space.reference_distribution
    if training_responses is None:
        train_labels = space.reference_labels
    else:
        train_labels = space.assign(training_responses, field="training_responses", batch_size=batch_size,
                                    progress=progress)
    out: dict[str, Any] = {
        "gamma": gamma, "head": head, "k": space.k,
        "reference_distribution": p_ref.tolist(),
        "cluster_weights": cluster_weights(p_ref, gamma).tolist(),
        "training_labels": train_labels.tolist(),
        "training_weights": dress_weights(train_labels, p_ref, gamma).tolist(),
    }
    if generated_responses is not None:
        gen_labels = space.assign(generated_responses, field="generated_responses", batch_size=batch_size,
                                  progress=progress)
        gen_dist = cluster_distribution(gen_labels, space.k)
        out.update({
            "generated_labels": gen_labels.tolist(),
            "generated_distribution": gen_dist.tolist(),
            "head_clusters": head_clusters(gen_dist, head),
            "generated_weights": negative_flags(gen_labels, space.k, head).tolist(),
        })
    return out
