"""Scale-out of NLI Diversity on Ray (read through the declaration's ``scale_out`` hook): each actor loads the
classifier once and scores its batches' response sets; the engine writes the per-set scores and reduces
their mean."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dialeval import registry
from dialeval.distributed.workers import (
    TAG,
    Recorder,
    column_values,
    tag_array,
    with_columns,
    worker_device,
)
from dialeval.nli.core import check_variant, compute_nli_diversity, get_classifier
from dialeval.nli.nli_diversity import nli_signature

#: Every NLI Diversity option: the actors read them all (``return_probabilities`` is refused by the plan).
OPTIONS = ("model", "variant", "device", "dtype", "backend", "batch_size", "max_tokens", "max_length",
           "return_probabilities", "progress")


class NLIScorer:
    """NLI Diversity of each response set; the classifier loads once per actor."""

    def __init__(self, *, column: str, output: str, options: dict[str, Any], info_dir: str | None = None) -> None:
        opts = dict(options)
        device, dtype = worker_device(opts.pop("device", None), opts.pop("dtype", None))
        self.variant = check_variant(opts.pop("variant", "baseline"))
        opts.pop("return_probabilities", None)
        opts.pop("progress", None)
        model = opts.pop("model", None)
        self.classifier = get_classifier(model, device=device, dtype=dtype, progress=False, **opts)
        self.column, self.output = column, output
        self.recorder = Recorder(info_dir, device or "cpu")

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = compute_nli_diversity(column_values(batch, self.column), self.classifier, self.variant)
        self.recorder.batch_done()
        return with_columns(batch, {self.output: pa.array(out["scores"], pa.float64()),
                                    TAG: tag_array(nli_signature(self.classifier, self.variant), batch.num_rows)})


def plan(metric: str, options: dict[str, Any], config: str | None = None, columns: dict[str, str] | None = None) -> dict[str, Any]:
    if options.get("return_probabilities"):
        raise ValueError("return_probabilities=True returns n×n matrices per set; on Ray only the per-set "
                         "score is written. Drop the option, or run it in one process.")
    defaults = registry.get(metric).option_defaults()
    return {**{k: defaults[k] for k in ("model", "variant")}, **options}


def scorer(p: dict[str, Any], columns: dict[str, str], output: str, info_dir: str | None) -> tuple[type, dict]:
    return NLIScorer, {"column": columns["predictions"], "output": output, "options": p, "info_dir": info_dir}


def scale_out() -> dict[str, Any]:
    """The ``scale_out`` hook: per-set scores on classifier actors; the engine reduces their mean."""
    return {"kind": "items", "plan": plan, "scorer": scorer, "actors": True, "score": "always",
            "options": OPTIONS}
