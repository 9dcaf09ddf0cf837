"""Sem-Ent's core (Han et al. 2022), evaluate-free: validated inputs → a fitted or saved space → per-cluster
counts (a mergeable state) → result with a signature. The math lives in :mod:`dialeval.semantic.space`."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from dialeval.encoders import BATCH_SIZE, DEFAULT_ENCODER, check_responses, encoder_name
from dialeval.registry import Adapter
from dialeval.resources import semantic_space_dir
from dialeval.runtime import ModelCache
from dialeval.semantic.clustering import cluster_distribution
from dialeval.semantic.space import (
    KMEANS_SEED,
    PCA_SEED,
    K,
    SemanticSpace,
    cluster_examples,
    entropy_nats,
    resolve_space,
    texts_fingerprint,
)
from dialeval.signature import make_signature
from dialeval.similarity.kernels import set_embeddings

# Fitted spaces kept per process (fitting embeds every reference response): the same bounded, thread-safe
# LRU policy as the model cache, with its own small bound (a space holds centroids, not weights).
_SPACES = ModelCache(max_size=2)


def _fitted_space(reference_responses: Any, encoder: Any, k: int, device: Any, dtype: Any, batch_size: int,
                  progress: Any) -> SemanticSpace:
    texts = check_responses(reference_responses, "reference_responses")
    enc_key = encoder_name(encoder) if isinstance(encoder, (str, os.PathLike)) else id(encoder)
    key = (texts_fingerprint(texts), enc_key, k, str(device), str(dtype))
    return _SPACES.get(key, lambda: SemanticSpace.fit(texts, encoder=encoder, k=k, device=device, dtype=dtype,
                                                      batch_size=batch_size, progress=progress))


def compute_sem_ent(predictions: Any, space: Any = None, reference_responses: Any = None, references: Any = None,
                    encoder: Any = None, k: int = K, dtype: Any = None, device: Any = None, batch_size: int = BATCH_SIZE,
                    examples_per_cluster: int = 3, progress: bool | None = None) -> dict[str, Any]:
    """Sem-Ent of ``predictions`` in a saved/given ``space`` or one fitted on ``reference_responses``."""
    preds = check_responses(predictions, "predictions")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"`batch_size` must be a positive int, got {batch_size!r}.")
    if isinstance(examples_per_cluster, bool) or not isinstance(examples_per_cluster, int) or examples_per_cluster < 0:
        raise ValueError(f"`examples_per_cluster` must be an int ≥ 0, got {examples_per_cluster!r}.")
    if space is not None and reference_responses is not None:
        raise ValueError("pass either `space` (a fitted semantic space) or `reference_responses` (to fit one), not both.")
    if space is None and reference_responses is None:
        raise ValueError(
            "Sem-Ent needs a semantic space: pass `space=` (a directory saved by `dialeval fit-space`) or "
            "`reference_responses=` (human training responses to fit one on)."
        )
    if references is not None:
        references = check_responses(references, "references")
    if space is not None:
        sp = resolve_space(space, encoder=encoder, device=device, dtype=dtype)
        sp.use_encoder()
    else:
        sp = _fitted_space(reference_responses, encoder if encoder is not None else DEFAULT_ENCODER, k, device,
                           dtype, batch_size, progress)
    labels = sp.assign(preds, field="predictions", batch_size=batch_size, progress=progress)
    human = None
    if references is not None:
        human = sp.sem_ent(references, field="references", batch_size=batch_size, progress=progress)
    return sem_ent_result(sp, np.bincount(labels, minlength=sp.k), cluster_examples(preds, labels, sp.k,
                                                                                     examples_per_cluster),
                          human_sem_ent=human)


def sem_ent_signature(sp: SemanticSpace, dtype_name: str | None = None) -> str:
    """The signature of a Sem-Ent score in ``sp``; ``dtype_name`` is the encoder's dtype where it ran
    (default: the attached encoder's)."""
    cfg = sp.config
    dtype = dtype_name or getattr(sp.encoder, "dtype_name", "fp32")
    return make_signature(
        "sem_ent", encoder=sp.encoder_revision, dtype=dtype, k=sp.k,
        var=cfg.get("variance"), pca_seed=cfg.get("pca_seed", PCA_SEED), km_seed=cfg.get("kmeans_seed", KMEANS_SEED),
        niter=cfg.get("niter"), nredo=cfg.get("nredo"), maxpts=cfg.get("max_points_per_centroid"),
        maxlen=cfg.get("max_length"), space=sp.fingerprint,
    )


def sem_ent_result(sp: SemanticSpace, counts: Any, examples: list[list[str]], *, human_sem_ent: float | None = None,
                   dtype_name: str | None = None) -> dict[str, Any]:
    """The Sem-Ent result from per-cluster counts of the predictions (a mergeable state: counts from chunks
    or workers add up) and the first distinct predictions per cluster."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape != (sp.k,) or counts.sum() <= 0:
        raise ValueError(f"cluster counts must be {sp.k} non-negative numbers with a positive sum, got {counts!r}.")
    dist = counts.astype(np.float64) / int(counts.sum())
    out: dict[str, Any] = {
        "sem_ent": entropy_nats(dist),
        "max_sem_ent": math.log(sp.k),
        "cluster_distribution": dist.tolist(),
        "reference_distribution": sp.reference_distribution.tolist(),
    }
    if human_sem_ent is not None:
        out["human_sem_ent"] = human_sem_ent
    out["cluster_examples"] = examples
    out["k"] = sp.k
    out["num_predictions"] = int(counts.sum())
    out["signature"] = sem_ent_signature(sp, dtype_name)
    return out


# -- meta-evaluation adapter (declared as ``meta_adapter``): conTest/decTest rows → per-set Sem-Ent --------

def sem_ent_set_adapter(options: dict[str, Any], config: str) -> Adapter:
    """Per-set Sem-Ent: entropy (nats) of each response set's distribution over the clusters of a semantic
    space (default: the packaged DailyDialog space). Embeddings come from the shared per-process encoding
    (:func:`dialeval.similarity.kernels.set_embeddings`), so Vendi and Sent-BERT on the same sets reuse them."""
    allowed = {"space", "device", "dtype", "batch_size", "progress"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for per-set Sem-Ent; known: {sorted(allowed)}.")
    opts = dict(options)
    space = opts.pop("space", None) or semantic_space_dir()
    sp = resolve_space(space)

    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        embs, enc = set_embeddings([list(r["responses"]) for r in rows], encoder=sp.encoder_name, **opts)
        scores = [entropy_nats(cluster_distribution(sp.assign_embeddings(e), sp.k)) for e in embs]
        signature = sem_ent_signature(sp, enc.dtype_name).replace("sem_ent|", "sem_ent|level:set|", 1)
        return {"scores": scores, "signature": signature}

    return score
