"""The shared Gradio UI layer, one file per concern; everything about a metric comes from its
declaration in :mod:`dialeval.registry` (no metric is named here).

- :mod:`.inputs`: :class:`Limits`, :class:`InputError`, the ``parse_*`` functions and :class:`UIInputs`;
- :mod:`.uploads`: :func:`read_upload` (JSONL/JSON/CSV/TXT → the text boxes);
- :mod:`.scoring`: ``compute`` arguments from a declaration's input kind, :func:`availability` through
  its probe, and :func:`run_metric`;
- :mod:`.cache`: :class:`ModuleCache`, one ``evaluate`` module per process shared by requests;
- :mod:`.devices`: device/precision choice, the ZeroGPU decorator, the number of concurrent requests;
- :mod:`.file_cache`: Gradio's file cache bounded by count and bytes (started by :func:`.serving.prepare`);
- :mod:`.serving`: the server policy (offered models only on a public server, per-client limits,
  cancellation at batch boundaries, per-session result files);
- :mod:`.results`: table rows (scores apart from settings, shown rounded) and the full-precision JSON;
- :mod:`.plots`: matplotlib figures of results; :mod:`.widgets`: the per-metric Space widget;
- :mod:`.blocks`: the full demo's Blocks; :mod:`.serving`: server-side policies (admission, models,
  result files).

:mod:`dialeval.demo` finds the examples and serves the Blocks. Gradio is imported only inside the functions that
build Blocks, so parsing and scoring test without it. The names below are re-exported for callers of
the former single-file ``dialeval.ui``.
"""

from __future__ import annotations

from dialeval.models.probes import probe_model
from dialeval.ui.cache import MODULES, ModuleCache
from dialeval.ui.devices import concurrency, gpu_decorator, pick_precision
from dialeval.ui.inputs import (
    BOXES,
    KIND_BOXES,
    InputError,
    Limits,
    UIInputs,
    box_text,
    boxes_for,
    parse_dialogue,
    parse_lines,
    parse_sets,
    parse_speakers,
)
from dialeval.ui.plots import draw, figure, plot_orders, plot_panel
from dialeval.ui.results import (
    TABLE_HEADERS,
    format_value,
    result_rows,
    results_json,
    results_table,
    to_jsonable,
    write_results_file,
)
from dialeval.ui.scoring import (
    INPUT_BUILDERS,
    MetricOutcome,
    availability,
    compute_kwargs,
    default_model,
    device_options,
    module_missing,
    run_metric,
)
from dialeval.ui.uploads import UPLOAD_SUFFIXES, ParsedUpload, read_upload
from dialeval.ui.widgets import example_boxes, metric_widget

__all__ = [
    "BOXES", "INPUT_BUILDERS", "KIND_BOXES", "MODULES", "TABLE_HEADERS", "UPLOAD_SUFFIXES", "InputError", "Limits",
    "MetricOutcome", "ModuleCache", "ParsedUpload", "UIInputs", "availability", "box_text", "boxes_for",
    "compute_kwargs", "concurrency", "default_model", "device_options", "draw", "figure", "example_boxes", "format_value",
    "gpu_decorator", "metric_widget", "module_missing", "parse_dialogue", "parse_lines", "parse_sets",
    "parse_speakers", "pick_precision", "plot_orders", "plot_panel",
    "probe_model", "read_upload", "result_rows", "results_json", "results_table",
    "run_metric", "to_jsonable", "write_results_file",
]
