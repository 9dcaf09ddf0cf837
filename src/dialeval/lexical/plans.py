"""The lexical metrics' plans (Dist-n/EAD-n, Ent-n, LF): their options validated by the core's validators,
which n-grams to count, which plans can share one count, and how each finishes from counts. The Ray engine
(:mod:`.scale_out`, per chunk) and one process (:mod:`.shared`, once) both run them. No Arrow import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dialeval.io.text import get_tokenizer, tokenizer_name
from dialeval.lexical import core as lexm


@dataclass(frozen=True)
class LexicalPlan:
    """Validated options of one lexical metric: which n-grams to count and how to finish."""

    metric: str
    orders: tuple[int, ...]
    tokenizer: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def share_key(self) -> tuple[Any, ...]:
        """Plans with equal keys are counted in one pass (the union of their orders): the same registered
        tokenizer, or the very same callable (two functions may share a name)."""
        if isinstance(self.tokenizer, str):
            return ("ngrams", tokenizer_name(self.tokenizer))
        return ("ngrams", tokenizer_name(self.tokenizer), id(self.tokenizer))


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
                         "not do yet; run it in one process (no --engine).")
    if metric == "distinct_n":
        opts["vocab_size"] = lexm.check_vocab_size(opts.get("vocab_size"))
    if metric == "ent_n":
        opts["base"] = lexm.check_base(opts.get("base", 2.0))
    return LexicalPlan(metric, orders, tok, opts)


def joint_orders(plans: Sequence[LexicalPlan]) -> tuple[int, ...]:
    """The orders one shared pass counts for ``plans`` (which share a :attr:`LexicalPlan.share_key`)."""
    return tuple(sorted({n for p in plans for n in p.orders}))


#: The options each lexical plan reads (``num_workers``: local processes, the same numbers; not used on Ray).
PLAN_OPTIONS = {
    "distinct_n": ("n", "tokenizer", "level", "vocab_size", "num_workers"),
    "ent_n": ("n", "tokenizer", "base", "num_workers"),
    "low_frequency": ("threshold", "tokenizer", "reference_counts", "reference_texts", "num_workers"),
}


def finish_counts(state: Any, plan: LexicalPlan) -> dict[str, Any]:
    """The result single-process ``compute`` gives for the same texts (same numbers, same signature): the
    core's own ``*_result`` functions on counts (an ``NgramCounts``, or the Ray engine's merged ``NgramTable``)."""
    opts = plan.options
    lexm.check_counted(state)
    if plan.metric == "distinct_n":
        return lexm.distinct_result(state, opts.get("vocab_size"))
    if plan.metric == "ent_n":
        return lexm.ent_result(state, opts.get("base", 2.0))
    reference, source = lexm.low_frequency_reference(plan.tokenizer, opts.get("reference_counts"),
                                                   opts.get("reference_texts"))
    return lexm.low_frequency_result(state, opts["threshold"], reference, source)
