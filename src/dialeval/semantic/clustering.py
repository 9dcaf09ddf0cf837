"""Sem-Ent's clustering math as pure functions (Han, Kim & Chang, Findings of EMNLP 2022, as the reference
code computes it): L2 normalisation, PCA keeping components up to 90 % explained variance
(``random_state=26``), faiss k-means (k = 20, ``niter=500, nredo=5, seed=27``, at most 256 training
points per centroid), nearest-centroid assignment, the cluster distribution p̃ and its entropy
−Σ_j p̃(j) ln p̃(j) in nats. Arrays in, arrays out; the fitted object and its files live in
:mod:`dialeval.semantic.space`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

K = 20
VARIANCE = 0.9
PCA_SEED = 26
KMEANS_SEED = 27
NITER = 500
NREDO = 5
MAX_POINTS_PER_CENTROID = 256


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (rows of zeros stay zero), as ``sklearn.preprocessing.normalize``."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (n, dim), got shape {x.shape}.")
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    norms[norms == 0] = 1
    return x / norms[:, None]


def components_for_variance(explained_variance_ratio: Sequence[float], threshold: float = VARIANCE) -> int:
    """Number of leading PCA components kept: ``idx + 1`` with ``idx`` the first index where the
    cumulative explained variance ratio reaches ``threshold`` (all components if it never does)."""
    if not 0 < threshold <= 1:
        raise ValueError(f"`variance` must be in (0, 1], got {threshold!r}.")
    cum = np.cumsum(np.asarray(explained_variance_ratio, dtype=np.float64))
    if cum.size == 0:
        raise ValueError("PCA produced no components.")
    hits = np.flatnonzero(cum >= threshold)
    return int(hits[0]) + 1 if hits.size else int(cum.size)


@dataclass(frozen=True)
class PCAProjection:
    """A fitted PCA truncated to its kept components: ``project(x) = (x − mean) · componentsᵀ``."""

    mean: np.ndarray  # (dim,)
    components: np.ndarray  # (kept, dim)
    explained_variance_ratio: np.ndarray  # (all components,)

    def project(self, x: np.ndarray) -> np.ndarray:
        return project(x, self.mean, self.components)


def fit_pca(x: np.ndarray, variance: float = VARIANCE, seed: int = PCA_SEED) -> PCAProjection:
    """sklearn ``PCA(n_components=None, whiten=False, random_state=seed)`` fitted on ``x`` (the
    reference's PCA), truncated by :func:`components_for_variance`."""
    from sklearn.decomposition import PCA

    pca = PCA(n_components=None, whiten=False, random_state=seed)
    pca.fit(x)
    kept = components_for_variance(pca.explained_variance_ratio_, variance)
    return PCAProjection(mean=np.asarray(pca.mean_, dtype=np.float32),
                         components=np.ascontiguousarray(pca.components_[:kept], dtype=np.float32),
                         explained_variance_ratio=np.asarray(pca.explained_variance_ratio_, dtype=np.float64))


def project(x: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """``(x − mean) · componentsᵀ`` in float32 (what faiss consumes)."""
    x = np.asarray(x, dtype=np.float32)
    return np.ascontiguousarray((x - mean.astype(np.float32)) @ components.astype(np.float32).T, dtype=np.float32)


def fit_kmeans(x: np.ndarray, k: int = K, *, niter: int = NITER, nredo: int = NREDO, seed: int = KMEANS_SEED,
               max_points_per_centroid: int = MAX_POINTS_PER_CENTROID) -> np.ndarray:
    """Centroids ``(k, dim)`` from faiss ``Kmeans(dim, k, niter, nredo, seed, update_index=True)``, the
    reference's call; faiss samples at most ``max_points_per_centroid · k`` training points (seeded)."""
    import faiss

    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.shape[0] < k:
        raise ValueError(f"k-means with k={k} needs at least {k} points, got {x.shape[0]}.")
    km = faiss.Kmeans(x.shape[1], k, niter=niter, nredo=nredo, seed=seed, verbose=False, update_index=True,
                      max_points_per_centroid=max_points_per_centroid)
    km.train(x)
    return np.ascontiguousarray(km.centroids, dtype=np.float32)


def assign_nearest(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid (squared L2) per row, searched with a faiss ``IndexFlatL2`` as the
    reference does (so near-ties break the same way)."""
    import faiss

    x = np.ascontiguousarray(x, dtype=np.float32)
    c = np.ascontiguousarray(centroids, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] != c.shape[1]:
        raise ValueError(f"points have shape {x.shape} but centroids have dimension {c.shape[1]}.")
    index = faiss.IndexFlatL2(c.shape[1])
    index.add(c)
    _, labels = index.search(x, 1)
    return labels.reshape(-1).astype(np.int64)


def cluster_distribution(labels: Sequence[int] | np.ndarray, k: int) -> np.ndarray:
    """p̃(j) = |{i : labels[i] = j}| / n for j = 0..k−1."""
    labels = np.asarray(labels, dtype=np.int64)
    if labels.size == 0:
        raise ValueError("cannot build a cluster distribution from no responses.")
    if labels.min() < 0 or labels.max() >= k:
        raise ValueError(f"cluster labels must lie in [0, {k}); got {labels.min()}..{labels.max()}.")
    return np.bincount(labels, minlength=k).astype(np.float64) / labels.size


def entropy_nats(p: Sequence[float] | np.ndarray) -> float:
    """H(p) = −Σ p_j ln p_j with 0 ln 0 = 0 (p is renormalised to sum 1, as ``scipy.stats.entropy``)."""
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or (p < 0).any() or not np.isfinite(p).all() or p.sum() <= 0:
        raise ValueError("a distribution must be a non-empty 1-D array of non-negative finite numbers.")
    p = p / p.sum()
    nz = p[p > 0]
    return float(-math.fsum(nz * np.log(nz)))


def agreement(a: Sequence[int], b: Sequence[int]) -> float:
    """Share of positions where two label vectors agree."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("label vectors must be non-empty and of the same length.")
    return float((a == b).mean())


def cluster_examples(texts: Sequence[str], labels: Sequence[int], k: int, per_cluster: int = 3) -> list[list[str]]:
    """Up to ``per_cluster`` distinct texts per cluster, in input order."""
    out: list[list[str]] = [[] for _ in range(k)]
    for text, label in zip(texts, labels):
        bucket = out[int(label)]
        if len(bucket) < per_cluster and text not in bucket:
            bucket.append(text)
    return out


def nearest_examples(texts: Sequence[str], points: np.ndarray, labels: np.ndarray, centroids: np.ndarray,
                     per_cluster: int = 3) -> list[list[str]]:
    """Up to ``per_cluster`` distinct texts per cluster, closest to its centroid first."""
    d = ((points - centroids[labels]) ** 2).sum(1)
    order = np.lexsort((np.arange(len(labels)), d))
    return cluster_examples([texts[i] for i in order], labels[order], centroids.shape[0], per_cluster)


def _check_k(k: Any, n_distinct: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"`k` must be an integer ≥ 2 (the number of semantic clusters), got {k!r}.")
    if k > n_distinct:
        raise ValueError(
            f"`k`={k} clusters need at least {k} distinct reference responses, but there are only {n_distinct}; "
            "pass more reference responses or a smaller k."
        )
    return int(k)
