"""NLI Diversity (Stasaski & Hearst, NAACL 2022): semantic diversity of a response *set* from an NLI model.

Every ordered pair (i, j), i ≠ j, of a set of n responses is classified with premise rᵢ and hypothesis rⱼ
(n(n−1) pairs). With P(c), P(n), P(e) the pair's class probabilities and ŷ its argmax class:

- ``baseline``:   Σ_pairs  [ŷ=c] − [ŷ=e]
- ``neutral``:    Σ_pairs  [ŷ=c] + [ŷ=n] − [ŷ=e]
- ``confidence``: Σ_pairs  [ŷ=c]·P(c) − [ŷ=e]·P(e)   (the paper's §3.3: "the model's probability mass
  assigned to the predicted NLI class after softmax" — only the predicted class's mass counts)
- ``confidence_soft``: Σ_pairs  P(c) − P(e)   (another reading, every pair's full probabilities; not the paper's)

Layout: pure functions over probability tables (columns always in the canonical order
contradiction, neutral, entailment — :data:`CANONICAL`; the scores in :mod:`dialeval.nli.variant_scores`), pair
construction with deduplication, and :class:`NLIClassifier`, the batched transformers classifier (length-sorted
batches through :func:`dialeval.models.runtime.run_batched`, pairs truncated longest-first to the model's maximum
length).

Any object with an ``id2label`` mapping and ``__call__(pairs) -> (len(pairs), num_labels) probabilities``
(rows in ``id2label`` order) is a classifier; :func:`compute_nli_diversity` scores each distinct
(premise, hypothesis) pair exactly once per call.

Paper: Katherine Stasaski and Marti Hearst. 2022. Semantic Diversity in Dialogue with Natural Language
Inference. NAACL. https://aclanthology.org/2022.naacl-main.6/
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from dialeval.io.validation import check_text_sets
from dialeval.models.bf16_matmul import placed
from dialeval.models.folders import check_finite_weights
from dialeval.models.onnx_backend import logits_module, onnx_runner, resolve_backend
from dialeval.models.runtime import (
    cached_model,
    load_pretrained,
    model_revision,
    resolve_device,
    resolve_dtype,
    run_batched,
)
from dialeval.nli.variant_scores import (  # noqa: F401 - re-exported: the scores of a pair table
    CANONICAL,
    VARIANT_FUNCTIONS,
    VARIANTS,
    baseline_score,
    check_variant,
    class_counts,
    confidence_score,
    confidence_soft_score,
    neutral_score,
    predicted_classes,
    variant_score,
)

DEFAULT_MODEL = "roberta-large-mnli"
#: The fixed cost of one classifier call, in padded tokens: length-sorted pairs are cut into batches where
#: padding plus calls cost least (:func:`dialeval.models.batching.least_padding_cuts`), not filled to
#: ``batch_size`` in turn. On CPU a token costs the same in batches of 8 to 32 rows, so padding is the waste.
PAIR_CALL_COST = 64

Pair = tuple[str, str]


class PairClassifier(Protocol):
    """What NLI Diversity needs from a classifier (a model wrapper or a scripted stand-in)."""

    id2label: Mapping[int, str]

    def __call__(self, pairs: Sequence[Pair]) -> Any:
        """Class probabilities, one row per (premise, hypothesis) pair, columns in ``id2label`` order."""
        ...


# ---------------------------------------------------------------------------------------------------
# Labels


def canonical_label_order(id2label: Mapping[Any, str]) -> list[int]:
    """Column indices of contradiction, neutral, entailment in a model's output, found by label *name*.

    ``roberta-large-mnli`` ({0: CONTRADICTION, 1: NEUTRAL, 2: ENTAILMENT}) gives ``[0, 1, 2]``;
    an E,N,C model gives ``[2, 1, 0]``. Names match case-insensitively; a model whose labels are not
    exactly these three is an error (two-way or generic ``LABEL_0`` heads cannot be mapped safely).
    """
    if not isinstance(id2label, Mapping) or not id2label:
        raise ValueError("the NLI model has no `id2label` in its config; it must name its labels "
                         "contradiction / neutral / entailment.")
    names = {int(k): str(v).strip().lower() for k, v in id2label.items()}
    if sorted(names) != list(range(len(names))):
        raise ValueError(f"`id2label` keys must be 0..{len(names) - 1}, got {sorted(names)}.")
    by_name = {v: k for k, v in names.items()}
    missing = [c for c in CANONICAL if c not in by_name]
    if missing or len(names) != 3:
        raise ValueError(
            f"the model's labels {dict(sorted(id2label.items()))} are not the three NLI classes "
            f"{list(CANONICAL)} (any case); missing {missing or 'none'}. Use a 3-way NLI model such as "
            f"{DEFAULT_MODEL!r}, or set `config.id2label` to name each output."
        )
    return [by_name[c] for c in CANONICAL]


def to_canonical(probs: Any, id2label: Mapping[Any, str]) -> np.ndarray:
    """Reorder probability columns from the model's label order to (contradiction, neutral, entailment)."""
    table = np.asarray(probs, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != len(id2label):
        raise ValueError(f"classifier returned shape {table.shape}; expected (pairs, {len(id2label)}).")
    return table[:, canonical_label_order(id2label)]


# ---------------------------------------------------------------------------------------------------
# Pairs


def ordered_pairs(n: int) -> list[tuple[int, int]]:
    """All ordered index pairs (i, j), i ≠ j, of n responses, row-major: n(n−1) pairs."""
    return [(i, j) for i in range(n) for j in range(n) if i != j]


def dedup_pairs(sets: Sequence[Sequence[str]]) -> tuple[list[Pair], list[list[int]]]:
    """Distinct (premise, hypothesis) pairs over all sets, and for each set the index of each of its
    ordered pairs (in :func:`ordered_pairs` order) into that distinct list."""
    index: dict[Pair, int] = {}
    per_set: list[list[int]] = []
    for responses in sets:
        ids = []
        for i, j in ordered_pairs(len(responses)):
            pair = (responses[i], responses[j])
            ids.append(index.setdefault(pair, len(index)))
        per_set.append(ids)
    return list(index), per_set


def classify_distinct(classifier: PairClassifier, pairs: Sequence[Pair]) -> np.ndarray:
    """Canonical (C, N, E) probabilities for ``pairs`` (assumed distinct), in one classifier call."""
    if not pairs:
        return np.zeros((0, 3))
    order = canonical_label_order(classifier.id2label)
    raw = np.asarray(classifier(list(pairs)), dtype=np.float64)
    if raw.shape != (len(pairs), len(classifier.id2label)):
        raise RuntimeError(f"classifier returned shape {raw.shape} for {len(pairs)} pairs "
                           f"and {len(classifier.id2label)} labels.")
    if not np.isfinite(raw).all():
        bad = int(np.flatnonzero(~np.isfinite(raw).all(axis=1))[0])
        raise RuntimeError(f"classifier returned non-finite probabilities for pair {bad} ({pairs[bad]!r:.80}); "
                           "with dtype='fp16'/'bf16' this is overflow: rerun in fp32.")
    return raw[:, order]


def pair_matrices(n: int, probs_cne: np.ndarray) -> dict[str, list[list[float | None]]]:
    """n×n matrices of P(contradiction), P(neutral), P(entailment) with premise = row, hypothesis = column;
    the diagonal (a response against itself) is ``None``."""
    out: dict[str, list[list[float | None]]] = {}
    pairs = ordered_pairs(n)
    for k, name in enumerate(CANONICAL):
        m: list[list[float | None]] = [[None] * n for _ in range(n)]
        for row, (i, j) in enumerate(pairs):
            m[i][j] = float(probs_cne[row, k])
        out[name] = m
    return out


def compute_nli_diversity(
    predictions: Any,
    classifier: PairClassifier,
    variant: str = "baseline",
    return_probabilities: bool = False,
) -> dict[str, Any]:
    """NLI Diversity of each response set (no signature; see :mod:`dialeval.nli.nli_diversity`).

    Returns ``nli_diversity`` (mean over sets of ``variant``), per-set ``scores``, ``scores_by_variant``
    (every variant from the same predictions), per-set ``counts`` of each predicted class,
    ``num_pairs`` / ``num_distinct_pairs`` and, with ``return_probabilities``, per-set n×n ``probabilities``.
    """
    check_variant(variant)
    sets = check_text_sets(predictions, "predictions", min_size=2)
    distinct, per_set = dedup_pairs(sets)
    table = classify_distinct(classifier, distinct)
    by_variant: dict[str, list[float]] = {v: [] for v in VARIANTS}
    counts: dict[str, list[int]] = {c: [] for c in CANONICAL}
    matrices = []
    for responses, ids in zip(sets, per_set):
        rows = table[ids]
        for v in VARIANTS:
            by_variant[v].append(VARIANT_FUNCTIONS[v](rows))
        for name, value in class_counts(rows).items():
            counts[name].append(value)
        if return_probabilities:
            matrices.append(pair_matrices(len(responses), rows))
    scores = by_variant[variant]
    out: dict[str, Any] = {
        "nli_diversity": math.fsum(scores) / len(scores),
        "scores": scores,
        "scores_by_variant": by_variant,
        "counts": counts,
        "num_pairs": sum(len(ids) for ids in per_set),
        "num_distinct_pairs": len(distinct),
    }
    if return_probabilities:
        out["probabilities"] = matrices
    return out


# ---------------------------------------------------------------------------------------------------
# The transformers classifier


# Position ids start after the padding index in these models, so pad_token_id + 1 rows are unusable.
_PADDING_OFFSET_MODELS = {"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "xmod"}


def model_max_length(tokenizer: Any, model: Any) -> int:
    """Longest input the model accepts: the tokenizer's ``model_max_length`` when set, capped by the
    position table (RoBERTa-style models reserve ``pad_token_id + 1`` positions)."""
    limits = []
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    cfg = getattr(model, "config", None)
    positions = getattr(cfg, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        offset = 0
        if getattr(cfg, "model_type", "") in _PADDING_OFFSET_MODELS:
            offset = int(getattr(cfg, "pad_token_id", 1) or 0) + 1
        limits.append(positions - offset)
    return min(limits) if limits else 512


def _dtype_name(dtype: Any) -> str:
    return "fp32" if str(dtype) == "torch.float32" else str(dtype).replace("torch.", "")


#: Tokens beyond ``max_length`` a cut prefix must still hold, so that the cut (which can split the last word
#: differently) never reaches the tokens truncation keeps.
BOUND_MARGIN_TOKENS = 64


class NLIClassifier:
    """A transformers sequence-classification NLI model as a :class:`PairClassifier`.

    Pairs are tokenized once (``truncation="longest_first"`` to :func:`model_max_length`), run in
    length-sorted batches under ``torch.inference_mode`` on ``device`` in ``dtype``, and returned as
    float64 softmax probabilities in the model's ``id2label`` order. ``forward_calls`` and
    ``pairs_classified`` count the work done (for tests and benchmarks).
    """

    def __init__(self, model: Any, tokenizer: Any, *, device: Any = None, dtype: Any = None,
                 batch_size: int = 32, max_tokens: int | None = None, max_length: int | None = None,
                 progress: bool | None = None, backend: str | None = "torch", runner: Any = None) -> None:

        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.backend = resolve_backend(backend, self.device, _dtype_name(self.dtype))
        self.model = placed(model, self.dtype, self.device, "NLI model").eval()  # bf16 on a CPU: bf16 products
        self.tokenizer = tokenizer
        self.id2label = dict(model.config.id2label)
        canonical_label_order(self.id2label)  # fail early on a non-NLI head
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"`batch_size` must be an int ≥ 1, got {batch_size!r}.")
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        limit = model_max_length(tokenizer, model)
        if max_length is not None:
            if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 8:
                raise ValueError(f"`max_length` must be an int ≥ 8, got {max_length!r}.")
            limit = min(limit, max_length)
        self.max_length = limit
        self.progress = progress
        self.forward_calls = 0
        self.pairs_classified = 0

        self.runner = None if self.backend == "torch" else runner or self.onnx_runner()

    def onnx_runner(self) -> Any:
        """The model's logits as an ONNX graph, exported once (:mod:`dialeval.models.onnx_backend`)."""

        enc = self.tokenizer(["a b", "c"], ["d", "e f"], padding=True, return_tensors="pt")
        sample = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
        return onnx_runner(self.identity, "sequence-classification", logits_module(self.model), sample, ["logits"],
                           backend=self.backend, device=self.device)

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike = DEFAULT_MODEL, **kwargs: Any) -> NLIClassifier:
        """Load model and tokenizer by Hub id or local path (a clear error offline / when missing)."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        model = load_pretrained(AutoModelForSequenceClassification, name_or_path, what="NLI model")
        tokenizer = load_pretrained(AutoTokenizer, name_or_path, what="NLI tokenizer")
        check_finite_weights(model, name_or_path)
        if tokenizer.pad_token is None and tokenizer.eos_token is not None:
            tokenizer.pad_token = tokenizer.eos_token  # batches need padding; the attention mask hides it
        return cls(model, tokenizer, **kwargs)

    @property
    def identity(self) -> str:
        return model_revision(self.model)

    def bounded(self, text: str) -> str:
        """``text`` cut to a prefix that still holds the first ``max_length`` tokens (plus a margin) of the whole
        text, so the pair's truncated ids are unchanged while a 1 MB response costs a few kilobytes of
        tokenizing per pair. The prefix grows ×4 from ``16 · (max_length + margin)`` characters until its own
        tokenization is long enough (text of long tokens, or that the normaliser shrinks, takes more)."""
        need = self.max_length + BOUND_MARGIN_TOKENS
        size = 16 * need
        while size < len(text):
            cut = text[:size]
            if len(self.tokenizer(cut, add_special_tokens=False)["input_ids"]) >= need:
                return cut
            size *= 4
        return text

    def encode(self, pairs: Sequence[Pair]) -> list[dict[str, list[int]]]:
        """Token ids (and type ids / masks) of each pair, truncated longest-first, unpadded; each text is first
        cut by :meth:`bounded` (once per distinct text)."""
        cut = {t: self.bounded(t) for pair in pairs for t in pair if len(t) > 16 * self.max_length}
        pairs = [(cut.get(p, p), cut.get(h, h)) for p, h in pairs]
        enc = self.tokenizer([p for p, _ in pairs], [h for _, h in pairs], truncation="longest_first",
                             max_length=self.max_length, padding=False)
        keys = [k for k in ("input_ids", "token_type_ids", "attention_mask") if k in enc]
        return [{k: enc[k][i] for k in keys} for i in range(len(pairs))]

    def _step(self, batch: list[dict[str, list[int]]]) -> list[np.ndarray]:
        import torch

        padded = self.tokenizer.pad(batch, padding=True, return_tensors="pt")
        if self.runner is not None:
            logits = torch.from_numpy(self.runner({k: v.numpy() for k, v in padded.items()})[0])
        else:
            logits = self.model(**{k: v.to(self.device) for k, v in padded.items()}).logits
        self.forward_calls += 1
        self.pairs_classified += len(batch)
        probs = torch.softmax(logits.float(), dim=-1).double().cpu().numpy()
        return list(probs)

    def __call__(self, pairs: Sequence[Pair]) -> np.ndarray:
        if not pairs:
            return np.zeros((0, len(self.id2label)))
        encoded = self.encode(pairs)
        rows = run_batched(encoded, self._step, lengths=[len(e["input_ids"]) for e in encoded],
                           batch_size=self.batch_size, max_tokens=self.max_tokens, desc="NLI pairs",
                           progress=self.progress, call_cost=PAIR_CALL_COST)
        return np.stack(rows)


class NLISetScorer:
    """Score one response set at a time with a pair cache (for Diversity Threshold Generation, which
    re-scores overlapping subsets): each distinct (premise, hypothesis) pair is classified once over the
    scorer's lifetime.

    ``variant``: ``"contradictions"`` (number of pairs predicted contradiction, the paper's threshold
    criterion) or one of :data:`VARIANTS`.
    """

    def __init__(self, classifier: PairClassifier, variant: str = "contradictions") -> None:
        if variant != "contradictions":
            check_variant(variant)
        self.classifier = classifier
        self.variant = variant
        self.cache: dict[Pair, np.ndarray] = {}

    def table(self, responses: Sequence[str]) -> np.ndarray:
        pairs = [(responses[i], responses[j]) for i, j in ordered_pairs(len(responses))]
        todo = list(dict.fromkeys(p for p in pairs if p not in self.cache))
        if todo:
            for pair, row in zip(todo, classify_distinct(self.classifier, todo)):
                self.cache[pair] = row
        return np.array([self.cache[p] for p in pairs]).reshape(-1, 3)

    def prefetch(self, sets: Iterable[Sequence[str]]) -> None:
        """Classify the uncached pairs of several sets in one batched call."""
        todo: dict[Pair, None] = {}
        for responses in sets:
            for i, j in ordered_pairs(len(responses)):
                pair = (responses[i], responses[j])
                if pair not in self.cache:
                    todo[pair] = None
        if todo:
            for pair, row in zip(todo, classify_distinct(self.classifier, list(todo))):
                self.cache[pair] = row

    def __call__(self, responses: Sequence[str]) -> float:
        table = self.table(list(responses))
        if self.variant == "contradictions":
            return float(class_counts(table)["contradiction"])
        return variant_score(table, self.variant)


def get_classifier(model: Any = DEFAULT_MODEL, *, device: Any = None, dtype: Any = None, batch_size: int = 32,
                   max_tokens: int | None = None, max_length: int | None = None,
                   progress: bool | None = None, backend: str | None = None) -> Any:
    """A ready classifier: ``model`` is a Hub id, a local path, or already a classifier object
    (anything with ``id2label`` and ``__call__(pairs)``, e.g. :class:`dialeval.nli.core.NLIClassifier`).

    The model and tokenizer come from the process-wide cache (:data:`dialeval.models.runtime.MODELS`, keyed by the
    model's real path, device and dtype); each call gets its own light classifier around them, so calls
    with other batch sizes or lengths neither reload the model nor change another call's settings."""

    if not isinstance(model, (str, os.PathLike)):
        if callable(model) and hasattr(model, "id2label"):
            return model
        raise TypeError(f"`model` must be a Hub id, a local path or an NLI classifier, got {type(model).__name__}.")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    base = cached_model("nli", model, lambda path: NLIClassifier.from_pretrained(path, device=dev, dtype=dt),
                        str(dev), str(dt))
    be = resolve_backend(backend, dev, _dtype_name(dt))
    runners = base.__dict__.setdefault("onnx_runners", {})  # one export and session per cached model
    if be != "torch" and be not in runners:
        runners[be] = NLIClassifier(base.model, base.tokenizer, device=dev, dtype=dt, backend=be).runner
    runner = runners.get(be)
    return NLIClassifier(base.model, base.tokenizer, device=dev, dtype=dt, batch_size=batch_size,
                         max_tokens=max_tokens, max_length=max_length, progress=progress, backend=be, runner=runner)
