"""Scale-out of the DialStory metrics on Ray (read through the declarations' ``scale_out`` hooks).

- DialSpk: per-chunk correct/total counts of turns and stories (one Arrow row; chunks add up), and with an
  output, each story's accuracy as a column.
- DialGen: per chunk, the BLEU-1/2 of each turn (rows in input order, so the per-turn lists and their
  ``math.fsum`` means equal one process's) and the Dist-2/3/4 n-gram count table of the generated turns
  (:mod:`dialeval.lexical.ngram_tables`, exact). Coherence needs the classifier and stays single-process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dialeval import registry
from dialeval.dialstory import dialgen as gen
from dialeval.dialstory.dialspk import accuracy_from_counts, dialspk_signature, speaker_accuracy
from dialeval.distributed.workers import column_values, with_columns
from dialeval.lexical.formulas import distinct_scores
from dialeval.lexical.ngram_tables import NgramTable, count_table, merge_tables
from dialeval.models.onnx_backend import check_backend_name
from dialeval.models.runtime import check_device_type

# ----------------------------------------------------------------------------------------- DialSpk

SPEAKER_SCHEMA = pa.schema([(k, pa.int64()) for k in ("correct_turns", "total_turns", "correct_stories",
                                                        "num_stories")])


def speaker_plan(metric: str, options: dict[str, Any], config: str | None = None,
                 columns: dict[str, str] | None = None) -> dict[str, Any]:
    if options.get("candidates") is not None:
        raise ValueError("on Ray, pass DialSpk candidates as a column (--column candidates=NAME), one list per story.")
    return {"columns": dict(columns or {})}


def _speaker_inputs(batch: pa.Table, columns: dict[str, str]) -> dict[str, Any]:
    return speaker_accuracy(column_values(batch, columns["predictions"]), column_values(batch, columns["references"]),
                            column_values(batch, columns["candidates"]) if "candidates" in columns else None)


def speaker_scores(batch: pa.Table, *, columns: dict[str, str], output: str) -> pa.Table:
    """Per-story accuracy (correct turns / turns of the story) as the column ``output``."""
    return with_columns(batch, {output: pa.array(_speaker_inputs(batch, columns)["story_scores"], pa.float64())})


def speaker_state(batch: pa.Table, *, columns: dict[str, str]) -> pa.Table:
    """One row of exact counts (recovered from the ratios of small integers)."""
    out = _speaker_inputs(batch, columns)
    return pa.table({"correct_turns": [round(out["dac"] * out["num_turns"])], "total_turns": [out["num_turns"]],
                     "correct_stories": [round(out["sac"] * out["num_stories"])],
                     "num_stories": [out["num_stories"]]}, schema=SPEAKER_SCHEMA)


def merge_speakers(tables: Sequence[pa.Table]) -> pa.Table:
    table = pa.concat_tables(tables)
    return pa.table({k: [pc.sum(table.column(k)).as_py()] for k in SPEAKER_SCHEMA.names}, schema=SPEAKER_SCHEMA)


def speaker_finish(table: pa.Table, p: dict[str, Any]) -> dict[str, Any]:
    row = {k: table.column(k)[0].as_py() for k in SPEAKER_SCHEMA.names}
    out = accuracy_from_counts(row["correct_turns"], row["total_turns"], row["correct_stories"], row["num_stories"])
    out["signature"] = dialspk_signature("candidates" in p["columns"])
    return out


def speaker_scorer(p: dict[str, Any], columns: dict[str, str], output: str, info_dir: str | None) -> tuple[Any, dict]:
    return speaker_scores, {"columns": columns, "output": output}


def speaker_state_kwargs(p: dict[str, Any], columns: dict[str, str], item_column: str) -> dict[str, Any]:
    return {"columns": columns}


def dialspk_scale_out() -> dict[str, Any]:
    """The DialSpk ``scale_out`` hook: counts per chunk; per-story scores only when an output is written."""
    return {"kind": "items", "plan": speaker_plan, "scorer": speaker_scorer, "actors": False, "score": "output",
            "state": speaker_state, "state_kwargs": speaker_state_kwargs, "merge": merge_speakers,
            "finish": speaker_finish, "options": ("candidates",)}  # refused as an option: a column on Ray


# ----------------------------------------------------------------------------------------- DialGen

GEN_SCHEMA = pa.schema([("order", pa.int8()), ("gram", pa.string()), ("count", pa.int64()),
                        *[(f"bleu_{n}", pa.float64()) for n in gen.BLEU_ORDERS]])
_TURN, _STORIES = -1, -2  # ``order`` of the per-turn BLEU rows and of the story count row


#: The DialGen options the Ray plan reads; the coherence ones (``stories``, ``coherence_model``) are refused by
#: the plan, and ``device``/``batch_size``/``backend`` are checked as one process checks them without a classifier.
GEN_OPTIONS = ("tokenization", "smooth", "quotes", "stories", "coherence_model", "device", "batch_size", "backend")


@dataclass(frozen=True)
class GenPlan:
    tokenization: str
    smooth: str
    quotes: str = "keep"

    @property
    def share_key(self) -> tuple[str, str, str, str]:
        return ("story_turns", self.tokenization, self.smooth, self.quotes)


def gen_plan(metric: str, options: dict[str, Any]) -> GenPlan:
    if options.get("coherence_model") is not None or options.get("stories") is not None:
        raise ValueError(f"{metric} coherence needs the classifier on every story; on Ray only BLEU and Dist are "
                         "computed. Drop coherence_model/stories, or run it in one process.")
    check_device_type(options.get("device"))  # unused without a classifier, checked as compute_dialgen does
    check_backend_name(options.get("backend"))
    tokenization, smooth = options.get("tokenization", "char"), options.get("smooth", "none")
    gen.get_tokenization(tokenization)
    choices = registry.get(metric).option("smooth").choices
    if smooth not in choices:
        raise ValueError(f"{metric}: `smooth`={smooth!r} is not one of {list(choices)}.")
    return GenPlan(tokenization, smooth, gen.check_quotes(options.get("quotes", "keep")))


def gen_state_kwargs(plans: Sequence[GenPlan]) -> dict[str, Any]:
    return {"tokenization": plans[0].tokenization, "smooth": plans[0].smooth, "quotes": plans[0].quotes}


def gen_state(batch: pa.Table, *, columns: dict[str, str], tokenization: str, smooth: str,
              quotes: str = "keep") -> pa.Table:
    """Per-turn BLEU rows (in order), the story count and the Dist n-gram counts of one chunk (turns as
    :func:`~dialeval.dialstory.dialgen.quoted_turns` gives them, as one process scores them)."""
    preds, refs = gen.quoted_turns(*gen.check_turn_lists(column_values(batch, columns["predictions"]),
                                                         column_values(batch, columns["references"])), quotes)
    tokenize = gen.get_tokenization(tokenization)
    bleu = gen.bleu_scores(preds, refs, tokenize, gen.BLEU_ORDERS, smooth)["turn_bleu"]
    turns = len(bleu[f"bleu_{gen.BLEU_ORDERS[0]}"])
    rows = pa.table({"order": [_TURN] * turns + [_STORIES], "gram": [None] * (turns + 1),
                     "count": [None] * turns + [len(preds)],
                     **{k: v + [None] for k, v in bleu.items()}}, schema=GEN_SCHEMA)
    counts = count_table(pa.array([t for story in preds for t in story], pa.string()), gen.DIST_ORDERS, tokenize)
    nulls = {f"bleu_{n}": pa.nulls(counts.num_rows, pa.float64()) for n in gen.BLEU_ORDERS}
    return pa.concat_tables([rows, pa.table({**{c: counts.column(c) for c in counts.column_names}, **nulls},
                                            schema=GEN_SCHEMA)])


def gen_merge(tables: Sequence[pa.Table]) -> pa.Table:
    """Turn rows concatenated in input order, story counts summed, n-gram counts merged."""
    table = pa.concat_tables(tables)
    order = table.column("order")
    turns = table.filter(pc.equal(order, _TURN))
    stories = pc.sum(table.filter(pc.equal(order, _STORIES)).column("count")).as_py() or 0
    story_row = pa.table({"order": [_STORIES], "gram": [None], "count": [stories],
                          **{f"bleu_{n}": [None] for n in gen.BLEU_ORDERS}}, schema=GEN_SCHEMA)
    merged = merge_tables([t.filter(pc.greater_equal(t.column("order"), 0)).select(["order", "gram", "count"])
                           for t in tables])
    nulls = {f"bleu_{n}": pa.nulls(merged.num_rows, pa.float64()) for n in gen.BLEU_ORDERS}
    return pa.concat_tables([turns, story_row, pa.table({**{c: merged.column(c) for c in merged.column_names},
                                                         **nulls}, schema=GEN_SCHEMA)])


def gen_finish(table: pa.Table, p: GenPlan) -> dict[str, Any]:
    """The one-process result of :func:`dialeval.dialstory.dialgen.dialgen_scores` (without coherence)."""
    order = table.column("order")
    turns = table.filter(pc.equal(order, _TURN))
    per_turn = {f"bleu_{n}": turns.column(f"bleu_{n}").to_pylist() for n in gen.BLEU_ORDERS}
    if not turns.num_rows:
        raise ValueError("DialGen needs at least one generated turn.")
    out: dict[str, Any] = {k: math.fsum(v) / len(v) for k, v in per_turn.items()}
    out["turn_bleu"] = per_turn
    grams = table.filter(pc.greater_equal(order, 0)).select(["order", "gram", "count"])
    out.update(distinct_scores(NgramTable(grams, gen.DIST_ORDERS, gen.get_tokenization(p.tokenization))))
    out["num_stories"] = pc.sum(table.filter(pc.equal(order, _STORIES)).column("count")).as_py()
    out["num_turns"] = turns.num_rows
    out["signature"] = gen.dialgen_signature(p.tokenization, p.smooth, None, p.quotes)
    return out


def dialgen_scale_out() -> dict[str, Any]:
    """The DialGen ``scale_out`` hook: a corpus metric with mergeable Arrow states."""
    return {"kind": "corpus", "plan": gen_plan, "state_kwargs": gen_state_kwargs, "state": gen_state,
            "merge": gen_merge, "finish": gen_finish, "options": GEN_OPTIONS}
