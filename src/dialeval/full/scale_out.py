"""Scale-out of FULL on Ray (read through the declaration's ``scale_out`` hook): each actor loads the LM once
and scores its batches' dialogues (``dialog`` config) or responses in context (``turn``); the engine writes the
per-item scores and reduces their mean."""

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
from dialeval.full.full_followup import compute_full
from dialeval.io.validation import check_dialogues, check_turn_inputs
from dialeval.models.lm import load_lm

#: Every FULL option: the actors pass them all to :func:`~dialeval.full.full_followup.compute_full`.
OPTIONS = ("model", "follow_ups", "compat", "separator", "max_length", "lookback", "batch_size", "max_tokens",
           "dtype", "device", "backend", "progress", "follow_up_prefix", "chat_template", "aggregation")


class FullScorer:
    """FULL per dialogue (``level="dialog"``) or per response in context (``"turn"``); the LM loads once."""

    def __init__(self, *, level: str, columns: dict[str, str], output: str, options: dict[str, Any],
                 info_dir: str | None = None) -> None:
        opts = dict(options)
        opts["device"], opts["dtype"] = worker_device(opts.get("device"), opts.get("dtype"))
        opts["progress"] = False
        load_lm(opts.get("model"), dtype=opts["dtype"], device=opts["device"],
                backend=opts.get("backend"))  # load (and cache, exported when on ONNX Runtime) it now
        self.level, self.columns, self.output, self.options = level, columns, output, opts
        self.recorder = Recorder(info_dir, opts["device"] or "cpu")

    def __call__(self, batch: pa.Table) -> pa.Table:
        if self.level == "turn":
            contexts, preds = check_turn_inputs(column_values(batch, self.columns["contexts"]),
                                                column_values(batch, self.columns["predictions"]))
            histories = [c + [p] for c, p in zip(contexts, preds)]
        else:
            histories = check_dialogues(column_values(batch, self.columns["dialogues"]))
        out = compute_full(histories, level=self.level, **self.options)
        self.recorder.batch_done()
        return with_columns(batch, {self.output: pa.array(out["scores"], pa.float64()),
                                    TAG: tag_array(out["signature"], batch.num_rows)})


def plan(metric: str, options: dict[str, Any], config: str | None = None, columns: dict[str, str] | None = None) -> dict[str, Any]:
    return {"level": "turn" if config == "turn" else "dialog", "options": dict(options)}


def scorer(p: dict[str, Any], columns: dict[str, str], output: str, info_dir: str | None) -> tuple[type, dict]:
    return FullScorer, {"level": p["level"], "columns": columns, "output": output, "options": p["options"],
                        "info_dir": info_dir}


def scale_out() -> dict[str, Any]:
    """The ``scale_out`` hook: per-item scores on LM actors; the engine reduces their mean."""
    return {"kind": "items", "plan": plan, "scorer": scorer, "actors": True, "score": "always",
            "options": OPTIONS}
