"""Scale-out of the lexical metrics (Dist-n/EAD-n, Ent-n, LF): plan, per-chunk state, merge, finish.

The Ray engine (:mod:`dialeval.distributed`) reads these through the declarations' ``scale_out`` hook and
knows no metric by name. A corpus over chunks = finish(merge(state(chunk) for every chunk)): the states are
Arrow n-gram count tables (:mod:`dialeval.lexical.ngram_tables`), exact, so the result equals one process's. Plans
that count the same way (same tokenizer) share one pass: one read and one tokenization of each chunk count
the union of their orders, and each metric finishes from the shared table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from dialeval.lexical.ngram_tables import NgramTable, count_table, merge_tables
from dialeval.lexical.plans import (
    PLAN_OPTIONS,
    LexicalPlan,
    finish_counts,
    joint_orders,
    lexical_plan,
)

__all__ = ["PLAN_OPTIONS", "LexicalPlan", "chunk_state", "finish", "joint_orders", "lexical_plan", "merge_states",
           "scale_out", "state_kwargs"]


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
    """The result single-process ``compute`` gives for the same texts (same numbers, same signature), from the
    merged count table (or an ``NgramCounts``): :func:`~dialeval.lexical.plans.finish_counts`."""
    state = NgramTable(table, plan.orders, plan.tokenizer) if isinstance(table, pa.Table) else table
    return finish_counts(state, plan)


lexical_result = finish  # the name tests and older callers use


def scale_out() -> dict[str, Any]:
    """The ``scale_out`` hook of the lexical declarations: how the Ray engine runs them."""
    return {"kind": "corpus", "plan": lexical_plan, "state_kwargs": state_kwargs, "state": chunk_state,
            "merge": merge_states, "finish": finish, "options": PLAN_OPTIONS}
