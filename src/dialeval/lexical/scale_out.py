"""Scale-out of the lexical metrics (Dist-n/EAD-n, Ent-n, LF): plan, per-chunk state, merge, finish.

The Ray engine (:mod:`dialeval.distributed`) reads these through the declarations' ``scale_out`` hook and
knows no metric by name. A corpus over chunks = finish(merge(state(chunk) for every chunk)): the states are
Arrow n-gram count tables (:mod:`dialeval.lexical.ngram_tables`), exact, so the result equals one process's. Plans
that count the same way (same tokenizer) share one pass: one read and one tokenization of each chunk count
the union of their orders, and each metric finishes from the shared table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from dialeval.lexical import core as lexm
from dialeval.lexical.ngram_tables import NgramTable, count_table, merge_tables
from dialeval.text import get_tokenizer, tokenizer_name


@dataclass(frozen=True)
class LexicalPlan:
    """Validated options of one lexical metric: which n-grams to count and how to finish."""

    metric: str
    orders: tuple[int, ...]
    tokenizer: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def share_key(self) -> tuple[str, str]:
        """Plans with equal keys are counted in one pass (the union of their orders)."""
        return ("ngrams", tokenizer_name(self.tokenizer))


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


def state_kwargs(plans: Sequence[LexicalPlan]) -> dict[str, Any]:
    """What a worker needs to count a chunk for all ``plans`` (which share a :attr:`LexicalPlan.share_key`)."""
    return {"orders": joint_orders(plans), "tokenizer": plans[0].tokenizer}


def chunk_state(batch: pa.Table, *, columns: dict[str, str], orders: tuple[int, ...], tokenizer: Any) -> pa.Table:
    """The count table of one chunk's responses (a bad row names the column and its index in the chunk)."""
    column = columns["predictions"]
    return count_table(batch.column(column), orders, tokenizer, f"{column} (chunk of {batch.num_rows} rows)")


def merge_states(tables: Sequence[pa.Table]) -> pa.Table:
    """Sum chunk count tables (associative and commutative: any tree of merges gives the same table)."""
    return merge_tables(tables)


def finish(table: pa.Table | Any, plan: LexicalPlan) -> dict[str, Any]:
    """The result single-process ``compute`` gives for the same texts (same numbers, same signature): the
    core's own ``*_result`` functions on the merged counts (a count table, or an ``NgramCounts``)."""
    state = NgramTable(table, plan.orders, plan.tokenizer) if isinstance(table, pa.Table) else table
    opts = plan.options
    lexm.check_counted(state)
    if plan.metric == "distinct_n":
        return lexm.distinct_result(state, opts.get("vocab_size"))
    if plan.metric == "ent_n":
        return lexm.ent_result(state, opts.get("base", 2.0))
    reference, source = lexm.low_frequency_reference(plan.tokenizer, opts.get("reference_counts"),
                                                   opts.get("reference_texts"))
    return lexm.low_frequency_result(state, opts["threshold"], reference, source)


lexical_result = finish  # the name tests and older callers use


#: The options each lexical plan reads (``num_workers``: local processes, the same numbers; not used on Ray).
PLAN_OPTIONS = {
    "distinct_n": ("n", "tokenizer", "level", "vocab_size", "num_workers"),
    "ent_n": ("n", "tokenizer", "base", "num_workers"),
    "low_frequency": ("threshold", "tokenizer", "reference_counts", "reference_texts", "num_workers"),
}


def scale_out() -> dict[str, Any]:
    """The ``scale_out`` hook of the lexical declarations: how the Ray engine runs them."""
    return {"kind": "corpus", "plan": lexical_plan, "state_kwargs": state_kwargs, "state": chunk_state,
            "merge": merge_states, "finish": finish, "options": PLAN_OPTIONS}
