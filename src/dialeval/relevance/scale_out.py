"""Scale-out of the reference-free quality metrics on Ray (read through each declaration's ``scale_out`` hook):
each actor loads its encoder once and scores its batches' responses in context (``turn``) or conversations
(``dialog``); the engine writes the per-item scores and reduces their mean."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dialeval.distributed.workers import (
    TAG,
    Recorder,
    column_values,
    tag_array,
    with_columns,
    worker_device,
)

SHARED = ("batch_size", "dtype", "device", "backend", "progress")


class QualityScorer:
    """One metric's core per batch: ``contexts`` + ``predictions`` (``turn``) or ``dialogues`` (``dialog``)."""

    def __init__(self, *, metric: str, level: str, columns: dict[str, str], output: str, options: dict[str, Any],
                 info_dir: str | None = None) -> None:
        from dialeval import registry

        opts = dict(options)
        opts["device"], opts["dtype"] = worker_device(opts.get("device"), opts.get("dtype"))
        opts["progress"] = False
        self.compute = registry.get(metric).core_function()
        self.level, self.columns, self.output, self.options = level, columns, output, opts
        self.recorder = Recorder(info_dir, opts["device"] or "cpu")

    def __call__(self, batch: pa.Table) -> pa.Table:
        if self.level == "turn":
            out = self.compute(column_values(batch, self.columns["contexts"]),
                               column_values(batch, self.columns["predictions"]), config="turn", **self.options)
        else:
            out = self.compute(dialogues=column_values(batch, self.columns["dialogues"]), config="dialog",
                               **self.options)
        self.recorder.batch_done()
        return with_columns(batch, {self.output: pa.array(out["scores"], pa.float64()),
                                    TAG: tag_array(out["signature"], batch.num_rows)})


def plan(metric: str, options: dict[str, Any], config: str | None = None,
         columns: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metric": metric, "level": "turn" if config == "turn" else "dialog", "options": dict(options)}


def scorer(p: dict[str, Any], columns: dict[str, str], output: str, info_dir: str | None) -> tuple[type, dict]:
    return QualityScorer, {"metric": p["metric"], "level": p["level"], "columns": columns, "output": output,
                           "options": p["options"], "info_dir": info_dir}


def scale_out() -> dict[str, Any]:
    """The ``scale_out`` hook: per-item scores on encoder actors; the engine reduces their mean."""
    from dialeval.relevance.evaluator import compute_learned_quality  # noqa: F401 - fail here, not on a worker

    return {"kind": "items", "plan": plan, "scorer": scorer, "actors": True, "score": "always",
            "options": {"context_relevance": ("turns", "pooling", "encoder", *SHARED),
                        "learned_quality": ("weights", "turns", "composition", *SHARED)}}
