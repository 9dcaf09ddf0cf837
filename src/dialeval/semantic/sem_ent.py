"""Sem-Ent's core (Han et al. 2022), evaluate-free: validated inputs → a fitted or saved space → per-cluster
counts (a mergeable state) → result with a signature. The math lives in :mod:`dialeval.semantic.space`."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from dialeval import registry
from dialeval.io.signature import make_signature
from dialeval.io.validation import inputs_checked
from dialeval.models.encoders import BATCH_SIZE, DEFAULT_ENCODER, check_responses, encoder_name
from dialeval.models.runtime import ModelCache
from dialeval.registry import MAX_BATCH, Adapter
from dialeval.resources import semantic_space_dir
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
from dialeval.similarity.kernels import set_embeddings

# Fitted spaces kept per process (fitting embeds every reference response): the same bounded, thread-safe
# LRU policy as the model cache, with its own small bound (a space holds centroids, not weights).
_SPACES = ModelCache(max_size=2)


def _fitted_space(reference_responses: Any, encoder: Any, k: int, device: Any, dtype: Any, batch_size: int,
                  progress: Any, keep_embeddings: bool = False,
                  backend: str | None = None) -> SemanticSpace:
    texts = check_responses(reference_responses, "reference_responses")
    enc_key = encoder_name(encoder) if isinstance(encoder, (str, os.PathLike)) else id(encoder)
    key = (texts_fingerprint(texts), enc_key, k, str(device), str(dtype), keep_embeddings, str(backend))
    return _SPACES.get(key, lambda: SemanticSpace.fit(texts, encoder=encoder, k=k, device=device, dtype=dtype,
                                                      batch_size=batch_size, progress=progress,
                                                      keep_embeddings=keep_embeddings, backend=backend))


def restart_seeds(seeds: Any) -> list[int]:
    """``seeds`` k-means restarts → their seeds: the default seed (27) and the next ``seeds − 1`` integers."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ValueError(f"`seeds` must be an int ≥ 2 (the number of k-means restarts), got {seeds!r}.")
    return [KMEANS_SEED + i for i in range(seeds)]


def seed_spread(sp: SemanticSpace, reference_embeddings: np.ndarray, prediction_embeddings: np.ndarray,
                seeds: list[int]) -> dict[str, Any]:
    """Sem-Ent of the same predictions with k-means refitted under each seed (PCA and every other setting of
    ``sp`` kept): the values, their mean and sample standard deviation (ddof = 1)."""
    cfg = sp.config
    values = []
    for seed in seeds:
        other = SemanticSpace.from_embeddings(
            reference_embeddings, sp.k, variance=cfg["variance"], pca_seed=cfg["pca_seed"], kmeans_seed=seed,
            niter=cfg["niter"], nredo=cfg["nredo"], max_points_per_centroid=cfg["max_points_per_centroid"])
        labels = other.assign_embeddings(prediction_embeddings)
        values.append(entropy_nats(np.bincount(labels, minlength=sp.k) / len(labels)))
    mean = math.fsum(values) / len(values)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return {"seeds": seeds, "values": values, "mean": mean, "sd": sd}


def default_space() -> str:
    """The bundled space (package data: k = 20, fitted on the 76,053 DailyDialog training responses with the default
    encoder, as the paper fits it; ``$DIALEVAL_SEM_ENT_SPACE`` overrides it), used when neither ``space`` nor
    ``reference_responses`` is given. Its fingerprint is in every signature (``space:…``)."""

    folder = registry.get("sem_ent").resource("space")
    if folder is None:
        raise ValueError("Sem-Ent's bundled semantic space is missing from this installation (reinstall dialeval), "
                         "so pass `space=` (a directory saved by `dialeval fit-space`) or `reference_responses=`.")
    return str(folder)


def compute_sem_ent(predictions: Any, space: Any = None, reference_responses: Any = None, references: Any = None,
                    encoder: Any = None, k: int = K, dtype: Any = None, device: Any = None, batch_size: int = BATCH_SIZE,
                    examples_per_cluster: int = 3, progress: bool | None = None,
                    seeds: int | None = None, backend: str | None = None) -> dict[str, Any]:
    """Sem-Ent of ``predictions`` in a saved/given ``space``, one fitted on ``reference_responses``, or
    (neither given) the bundled space :func:`default_space`; with ``seeds`` (fitting only), also
    ``sem_ent_seeds``: mean ± sd over that many k-means restarts."""
    preds = check_responses(predictions, "predictions")
    restarts = None if seeds is None else restart_seeds(seeds)
    if restarts is not None and reference_responses is None:
        raise ValueError("`seeds` needs `reference_responses` (k-means is refitted per seed); a saved `space` has "
                         "one fixed clustering.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"`batch_size`={batch_size!r:.40} must be an integer from 1 to {MAX_BATCH}.")
    if isinstance(examples_per_cluster, bool) or not isinstance(examples_per_cluster, int) or examples_per_cluster < 0:
        raise ValueError(f"`examples_per_cluster` must be an int ≥ 0, got {examples_per_cluster!r}.")
    if space is not None and reference_responses is not None:
        raise ValueError("pass either `space` (a fitted semantic space) or `reference_responses` (to fit one), not both.")
    if space is None and reference_responses is None:
        space = default_space()  # the same default for evaluate.load, dialeval.load, the CLI and the Spaces
    if references is not None:
        references = check_responses(references, "references")
    if space is not None:
        sp = resolve_space(space, encoder=encoder, device=device, dtype=dtype, backend=backend)
        sp.use_encoder()
    else:
        sp = _fitted_space(reference_responses, encoder if encoder is not None else DEFAULT_ENCODER, k, device,
                           dtype, batch_size, progress, keep_embeddings=restarts is not None,
                           backend=backend)
    with inputs_checked():  # checked at this entry; assign's own checks skip the Unicode scan
        labels = sp.assign(preds, field="predictions", batch_size=batch_size, progress=progress)
        human = None
        if references is not None:
            human = sp.sem_ent(references, field="references", batch_size=batch_size, progress=progress)
    spread = None
    if restarts is not None:
        ref_emb = sp.reference_embeddings
        pred_emb = sp.embed(preds, field="predictions", batch_size=batch_size, progress=progress)
        spread = seed_spread(sp, ref_emb, pred_emb, restarts)
    out = sem_ent_result(sp, np.bincount(labels, minlength=sp.k), cluster_examples(preds, labels, sp.k,
                                                                                    examples_per_cluster),
                         human_sem_ent=human, restarts=None if spread is None else len(restarts))
    if spread is not None:
        out["sem_ent_seeds"] = spread
    return out


def sem_ent_signature(sp: SemanticSpace, dtype_name: str | None = None, restarts: int | None = None,
                      backend: str | None = None) -> str:
    """The signature of a Sem-Ent score in ``sp``; ``dtype_name`` and ``backend`` are the encoder's where it
    ran (default: the attached encoder's; torch, onnx or onnx-int8); ``restarts``: k-means restarts reported
    beside the score."""
    cfg = sp.config
    dtype = dtype_name or getattr(sp.encoder, "dtype_name", "fp32")
    backend = backend or getattr(sp.encoder, "backend", "torch")
    return make_signature(
        "sem_ent", encoder=sp.encoder_revision, dtype=dtype, backend=backend, k=sp.k,
        var=cfg.get("variance"), pca_seed=cfg.get("pca_seed", PCA_SEED), km_seed=cfg.get("kmeans_seed", KMEANS_SEED),
        niter=cfg.get("niter"), nredo=cfg.get("nredo"), maxpts=cfg.get("max_points_per_centroid"),
        maxlen=cfg.get("max_length"), space=sp.fingerprint, **({} if restarts is None else {"restarts": restarts}),
    )


def sem_ent_result(sp: SemanticSpace, counts: Any, examples: list[list[str]], *, human_sem_ent: float | None = None,
                   dtype_name: str | None = None, restarts: int | None = None,
                   backend: str | None = None) -> dict[str, Any]:
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
    out["signature"] = sem_ent_signature(sp, dtype_name, restarts, backend)
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
        embs, enc = set_embeddings(registry.response_sets(rows), encoder=sp.encoder_name, **opts)
        scores = [entropy_nats(cluster_distribution(sp.assign_embeddings(e), sp.k)) for e in embs]
        signature = sem_ent_signature(sp, enc.dtype_name).replace("sem_ent|", "sem_ent|level:set|", 1)
        return {"scores": scores, "signature": signature}

    return score
