"""Mergeable per-chunk states and the results built from them (pure functions, no Ray).

A corpus metric over chunks = fold(merge, map(state_of_chunk)) then finish(state): the same numbers as
one pass over the whole corpus, because every state holds exact counts (n-gram counts, cluster
histograms, correct/total counts). States travel as JSON strings (never pickle).

- lexical metrics: :class:`dialeval.lexical.ngrams.NgramCounts` (``to_dict``/``from_dict``/``merge``);
- Sem-Ent / DRESS: :class:`ClusterState` (per-cluster counts plus the first distinct examples);
- DialSpk: :class:`SpeakerState` (correct turns, turns, correct stories, stories);
- per-item model metrics: :class:`MeanState` (the mean of a score column; and the signature seen).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dialeval.lexical import core as lexm
from dialeval.lexical.ngrams import NgramCounts
from dialeval.text import get_tokenizer
from dialeval.validation import check_texts

# ----------------------------------------------------------------------------------------- lexical


@dataclass(frozen=True)
class LexicalPlan:
    """Validated options of a lexical metric: which n-grams to count and how to finish."""

    metric: str
    orders: tuple[int, ...]
    tokenizer: str
    options: dict[str, Any] = field(default_factory=dict)


def lexical_plan(metric: str, options: dict[str, Any]) -> LexicalPlan:
    """Check the options of ``distinct_n``, ``ent_n`` or ``low_frequency`` with the validators single-process
    compute uses (:mod:`dialeval.lexical.core`); ``num_workers`` (local processes) does not apply on Ray."""
    opts = {k: v for k, v in options.items() if k != "num_workers"}
    tok = opts.pop("tokenizer", "casual")
    if metric == "low_frequency":
        get_tokenizer(tok)
        opts["threshold"] = lexm.check_threshold(opts.get("threshold", 100))
        opts["reference_counts"] = lexm.check_low_frequency_reference(opts.get("reference_counts"),
                                                                    opts.get("reference_texts"))
        return LexicalPlan(metric, (1,), tok, opts)
    orders = lexm.resolve_orders(tok, opts.pop("n", None))
    if lexm.check_level(opts.get("level", "corpus")) != "corpus":
        raise ValueError(f"{metric} level='set' scores each response set on its own, which the Ray engine does "
                         "not do yet; run it in one process (no --engine), or score sets with nli_diversity.")
    if metric == "distinct_n":
        opts["vocab_size"] = lexm.check_vocab_size(opts.get("vocab_size"))
    if metric == "ent_n":
        opts["base"] = lexm.check_base(opts.get("base", 2.0))
    return LexicalPlan(metric, orders, tok, opts)


def ngram_state(texts: Sequence[str], plan: LexicalPlan, field_name: str = "predictions") -> str:
    """The n-gram counts of one chunk, as JSON."""
    state = NgramCounts(plan.orders, plan.tokenizer).update(check_texts(list(texts), field_name))
    return json.dumps(state.to_dict(), ensure_ascii=False)


def merge_ngram_states(states: Iterable[str], plan: LexicalPlan) -> NgramCounts:
    total = NgramCounts(plan.orders, plan.tokenizer)
    for s in states:
        total.merge(NgramCounts.from_dict(json.loads(s)))
    return total


def lexical_result(state: NgramCounts, plan: LexicalPlan) -> dict[str, Any]:
    """The result single-process ``compute`` gives for the same texts (same numbers, same signature): the
    core's own ``*_result`` functions on the merged counts."""
    opts = plan.options
    lexm.check_counted(state)
    if plan.metric == "distinct_n":
        return lexm.distinct_result(state, opts.get("vocab_size"))
    if plan.metric == "ent_n":
        return lexm.ent_result(state, opts.get("base", 2.0))
    reference, source = lexm.low_frequency_reference(plan.tokenizer, opts.get("reference_counts"),
                                                   opts.get("reference_texts"))
    return lexm.low_frequency_result(state, opts["threshold"], reference, source)


# ----------------------------------------------------------------------------------------- clusters


@dataclass
class ClusterState:
    """Per-cluster counts of a chunk's labels plus its first ``per_cluster`` distinct texts per cluster.

    Merging chunks *in input order* keeps the first distinct examples of the whole corpus: a text among
    the corpus's first ``m`` distinct ones of a cluster is among its own chunk's first ``m``.
    """

    counts: list[int]
    examples: list[list[str]]
    per_cluster: int = 3
    dtype: str | None = None

    @classmethod
    def of(cls, labels: Sequence[int], texts: Sequence[str], k: int, per_cluster: int = 3,
           dtype: str | None = None) -> ClusterState:
        from dialeval.semantic.space import cluster_examples

        counts = [0] * k
        for label in labels:
            counts[int(label)] += 1
        return cls(counts, cluster_examples(texts, labels, k, per_cluster), per_cluster, dtype)

    def merge(self, other: ClusterState) -> ClusterState:
        """Add ``other`` (a later chunk) into ``self``. Returns ``self``."""
        if len(other.counts) != len(self.counts):
            raise ValueError(f"cannot merge {len(other.counts)} cluster counts into {len(self.counts)}.")
        if other.dtype is not None and self.dtype is not None and other.dtype != self.dtype:
            raise ValueError(f"workers encoded in {self.dtype} and {other.dtype}; run every worker in one dtype.")
        self.dtype = self.dtype or other.dtype
        self.counts = [a + b for a, b in zip(self.counts, other.counts)]
        for mine, theirs in zip(self.examples, other.examples):
            for text in theirs:
                if len(mine) < self.per_cluster and text not in mine:
                    mine.append(text)
        return self

    def to_json(self) -> str:
        return json.dumps({"counts": self.counts, "examples": self.examples, "per_cluster": self.per_cluster,
                           "dtype": self.dtype}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        d = json.loads(text)
        return cls([int(c) for c in d["counts"]], d["examples"], int(d["per_cluster"]), d.get("dtype"))


# ----------------------------------------------------------------------------------------- DialSpk


@dataclass
class SpeakerState:
    correct_turns: int = 0
    total_turns: int = 0
    correct_stories: int = 0
    num_stories: int = 0

    @classmethod
    def of(cls, predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
           candidates: Sequence[Sequence[str]] | None = None) -> tuple[SpeakerState, list[float]]:
        """Counts of a chunk of stories (checked by :func:`dialeval.dialstory.dialspk.speaker_accuracy`) and its
        per-story accuracies."""
        from dialeval.dialstory.dialspk import speaker_accuracy

        out = speaker_accuracy(predictions, references, candidates)
        # exact integer counts back from the ratios (each is correct / total of small integers)
        state = cls(round(out["dac"] * out["num_turns"]), out["num_turns"],
                    round(out["sac"] * out["num_stories"]), out["num_stories"])
        return state, out["story_scores"]

    def merge(self, other: SpeakerState) -> SpeakerState:
        self.correct_turns += other.correct_turns
        self.total_turns += other.total_turns
        self.correct_stories += other.correct_stories
        self.num_stories += other.num_stories
        return self

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> SpeakerState:
        return cls(**{k: int(v) for k, v in json.loads(text).items()})


# ----------------------------------------------------------------------------------------- means


@dataclass
class MeanState:
    """Sum (exactly rounded partial sums) and count of a per-item score, plus the signature(s) seen."""

    total: float = 0.0
    count: int = 0
    signatures: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, values: Sequence[float], signature: str | None = None) -> MeanState:
        return cls(math.fsum(values), len(values), [signature] if signature else [])

    def merge(self, other: MeanState) -> MeanState:
        self.total = math.fsum([self.total, other.total])
        self.count += other.count
        self.signatures = sorted(set(self.signatures) | set(other.signatures))
        return self

    @property
    def mean(self) -> float:
        if self.count == 0:
            raise ValueError("no rows were scored.")
        return self.total / self.count

    @property
    def signature(self) -> str | None:
        if len(self.signatures) > 1:
            raise ValueError(f"workers scored with different settings: {self.signatures}; give every worker "
                             "the same model, dtype and options.")
        return self.signatures[0] if self.signatures else None

    def to_json(self) -> str:
        return json.dumps({"total": self.total, "count": self.count, "signatures": self.signatures})

    @classmethod
    def from_json(cls, text: str) -> MeanState:
        d = json.loads(text)
        return cls(float(d["total"]), int(d["count"]), list(d["signatures"]))
