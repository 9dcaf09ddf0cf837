"""NLI Diversity's core (Stasaski & Hearst, NAACL 2022), evaluate-free: load the classifier, score every
ordered pair of each response set, attach the signature. The math lives in :mod:`dialeval.nli.core`."""

from __future__ import annotations

from typing import Any

from dialeval.io.signature import make_signature
from dialeval.nli.core import DEFAULT_MODEL, check_variant, compute_nli_diversity, get_classifier


def nli_signature(classifier: Any, variant: str) -> str:
    identity = getattr(classifier, "identity", None) or type(classifier).__name__
    dtype = getattr(classifier, "dtype", None)
    max_length = getattr(classifier, "max_length", None)
    return make_signature(
        "nli_diversity", model=identity, variant=variant, pairs="ordered",
        dtype=str(dtype).replace("torch.", "") if dtype is not None else None,
        backend=getattr(classifier, "backend", None),
        trunc=f"longest_first@{max_length}" if max_length else None,
    )


def compute(predictions: Any, model: Any = DEFAULT_MODEL, variant: str = "baseline", device: Any = None,
            dtype: Any = None, batch_size: int = 32, max_tokens: int | None = None, max_length: int | None = None,
            return_probabilities: bool = False, progress: bool | None = None,
            backend: str | None = None) -> dict[str, Any]:
    """NLI Diversity of each response set in ``predictions`` with a signature (see :mod:`dialeval.nli.core`)."""
    check_variant(variant)
    classifier = get_classifier(model, device=device, dtype=dtype, batch_size=batch_size, max_tokens=max_tokens,
                                max_length=max_length, progress=progress, backend=backend)
    out = compute_nli_diversity(predictions, classifier, variant, bool(return_probabilities))
    out["signature"] = nli_signature(classifier, variant)
    return out
