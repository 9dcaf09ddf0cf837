"""Sent-BERT diversity (Tevet & Berant, EACL 2021, §5 "Sent-BERT"): one minus the mean cosine similarity of
the sentence embeddings over the unordered pairs of a response set,

    div(S) = 1 − (2 / (n(n−1))) Σ_{i<j} cos(e_i, e_j).

Tevet & Berant embed with ``bert-large-nli-stsb-mean-tokens`` (Hub id
``sentence-transformers/bert-large-nli-stsb-mean-tokens``); the offline default here is all-MiniLM-L6-v2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dialeval.io.signature import make_signature
from dialeval.models.encoders import BATCH_SIZE
from dialeval.similarity.kernels import check_batch_size, check_sets, set_embeddings, unit_rows

TEVET_MODEL = "sentence-transformers/bert-large-nli-stsb-mean-tokens"


def pairwise_diversity(embeddings: np.ndarray) -> float:
    """``1 − mean_{i<j} cos(e_i, e_j)`` of one set's embeddings (at least 2 rows). Two equal embeddings have cosine
    exactly 1 and opposite ones −1, whatever the dot product rounds to on this CPU's kernels; a cosine past ±1 is
    rounding and clipped."""
    z = unit_rows(embeddings)
    n = len(z)
    if n < 2:
        raise ValueError("Sent-BERT diversity needs at least 2 responses per set.")
    i, j = np.triu_indices(n, k=1)
    upper = np.clip((z @ z.T)[i, j], -1.0, 1.0)
    e = np.asarray(embeddings)
    ids = np.unique(np.concatenate([e, -e]), axis=0, return_inverse=True)[1].reshape(-1)
    upper[ids[i] == ids[n + j]] = -1.0  # e_j = −e_i
    upper[ids[i] == ids[j]] = 1.0  # e_j = e_i
    return 1.0 - math.fsum(upper.tolist()) / len(upper)


def compute_sent_bert_diversity(predictions: Any, encoder: Any = None, device: Any = None, dtype: Any = None,
                                batch_size: int = BATCH_SIZE, progress: bool | None = None) -> dict[str, Any]:
    """Sent-BERT diversity of each response set (``scores``), their mean and a signature."""
    check_batch_size(batch_size)
    sets = check_sets(predictions, min_size=2)
    embs, enc = set_embeddings(sets, encoder=encoder, device=device, dtype=dtype, batch_size=batch_size,
                               progress=progress)
    scores = [pairwise_diversity(e) for e in embs]
    return {"sent_bert_diversity": math.fsum(scores) / len(scores), "scores": scores, "num_sets": len(scores),
            "signature": make_signature("sent_bert_diversity", encoder=enc.revision, dtype=enc.dtype_name,
                                        backend=getattr(enc, "backend", "torch"), pairs="unordered",
                                        sim="cosine")}
