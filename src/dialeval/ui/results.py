"""Metric outcomes → what people see and download: table rows (scores apart from the declaration's
``settings``), the rounded display of those rows, and the full-precision JSON results file."""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Sequence
from typing import Any

from dialeval import registry
from dialeval.ui.scoring import MetricOutcome

TABLE_HEADERS = ["metric", "score", "value", "unit", "signature", "settings"]
DISPLAY_DECIMALS = 4


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(value).__name__ != "bool_"


def _plain(value: Any) -> int | float:
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def format_value(value: Any) -> str:
    """A number as shown in the table: integers as is, floats rounded to :data:`DISPLAY_DECIMALS`."""
    if value is None:
        return ""
    if not _is_number(value) or isinstance(value, numbers.Integral):
        return str(value)
    value = float(value) + 0.0  # no "-0.0000"
    if value != 0 and abs(value) < 10 ** -DISPLAY_DECIMALS:
        return f"{value:.{DISPLAY_DECIMALS - 1}e}"
    return f"{value:.{DISPLAY_DECIMALS}f}"


def _settings_of(name: str) -> tuple[str, ...]:
    decl = registry.declarations().get(name)
    return decl.settings if decl else ()


def _unit(name: str, key: str) -> str:
    decl = registry.declarations().get(name)
    return decl.unit(key) if decl else ""


def result_rows(outcomes: Sequence[MetricOutcome]) -> list[list[Any]]:
    """One row per scalar score (metric, score, value, unit, signature, settings), values at full precision;
    the declaration's ``settings`` (``k``, ``max_length``…) and the result's ``note`` go in the settings cell,
    not in rows. A
    metric that did not run gets one row with its status and reason in place of the score."""
    rows: list[list[Any]] = []
    for o in outcomes:
        if o.status != "ok" or o.result is None:
            rows.append([o.name, o.status, None, "", o.message, ""])
            continue
        settings = _settings_of(o.name)
        signature = str(o.result.get("signature", ""))
        shown = ", ".join(f"{k}={format_value(o.result[k])}" + (f" {_unit(o.name, k)}" if _unit(o.name, k) else "")
                          for k in settings if o.result.get(k) is not None)
        if o.result.get("note"):  # a caveat the core attached: shown beside the number
            shown = "; ".join(filter(None, [shown, f"note: {o.result['note']}"]))
        for key, value in o.result.items():
            if _is_number(value) and key not in settings:
                rows.append([o.name, key, _plain(value), _unit(o.name, key), signature, shown])
    return rows


def results_table(rows: list[list[Any]]) -> Any:
    """The rows as a pandas Styler: the table shows rounded values, its data (and the API) keep full
    precision."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=TABLE_HEADERS, dtype=object)
    return frame.style.format({"value": format_value})


def to_jsonable(value: Any) -> Any:
    """Results with numpy scalars/arrays turned into plain JSON values (NaN → null)."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if np is not None and isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if np is not None and isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def results_json(outcomes: Sequence[MetricOutcome], **meta: Any) -> dict[str, Any]:
    """The downloadable results: each metric's full result (or its status and reason)."""
    out: dict[str, Any] = {"dialeval": meta} if meta else {}
    for o in outcomes:
        out[o.name] = to_jsonable(o.result) if o.status == "ok" else {"status": o.status, "reason": o.message}
    return out


def write_results_file(data: dict[str, Any], directory: str | os.PathLike | None = None) -> str:
    """Write ``data`` as pretty JSON to a fresh file and return its path (for a download button)."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="dialeval-results-", suffix=".json", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
    return path
