"""Stored columns as metrics (``column:NAME``): a number each row already holds (a top-level field, ``a.b`` for a
nested one, or a ``metrics`` entry), read as that row's score. A column that holds a human quality the
meta-evaluation correlates with (``annotation_means.Q``, ``annotations.Q``, or a target's own field) is that target
itself, never a metric's result: :func:`self_targets` names the cells that would correlate it with itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dialeval.registry import Adapter

HUMAN_FIELDS = ("annotations", "annotation_means")  #: where rows hold the human ratings, never a metric's scores


def lookup(row: dict[str, Any], name: str) -> Any:
    """A stored column: a top-level field, ``a.b`` for nested fields, or a ``metrics`` entry (with or
    without the ``metric_`` prefix); ``KeyError`` (the class) when the row has none."""
    if name in row:
        return row[name]
    metrics = row.get("metrics") or {}
    bare = name[len("metric_"):] if name.startswith("metric_") else name
    if bare in metrics:
        return metrics[bare]
    value: Any = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return KeyError
        value = value[part]
    return value


def column_names(row: dict[str, Any]) -> list[str]:
    """The numeric columns ``column:NAME`` can use on rows like ``row``."""
    names = [k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    names += list(row.get("metrics") or {})
    for k, v in row.items():
        if isinstance(v, dict) and k != "metrics" and k not in HUMAN_FIELDS:
            names += [f"{k}.{sub}" for sub, x in v.items() if isinstance(x, (int, float))]
    return names


def column_adapter(name: str) -> Adapter:
    """The adapter reading the stored column ``name`` as each row's score (an error names a row without it)."""
    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        out = []
        for i, row in enumerate(rows):
            value = lookup(row, name)
            if value is KeyError:
                raise ValueError(f"column {name!r} is not in this dataset; available: {column_names(row)}.")
            if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"row {i}: column {name!r} is {value!r}, not a number.")
            out.append(float(value))
        return {"scores": out, "signature": f"column:{name}"}

    return score


def human_target(metric: str) -> str | None:
    """The quality target (``annotation_means.Q``) that ``metric`` reads when it is ``column:`` of a human
    quality Q (``column:annotation_means.Q`` or ``column:annotations.Q``); ``None`` for anything else."""
    if not isinstance(metric, str) or not metric.startswith("column:"):
        return None
    name = metric[len("column:"):]
    for field in HUMAN_FIELDS:
        if name.startswith(f"{field}.") and len(name) > len(field) + 1:
            return f"annotation_means.{name[len(field) + 1:]}"
    return None


def self_targets(metric: str, target_names: Sequence[str]) -> list[str]:
    """The names among ``target_names`` that ``metric`` is itself: ``column:`` of that human quality
    (:func:`human_target`) or of the target's own field (``column:human_score_mean``). A cell correlating them is
    1 by construction, not a result."""
    if not isinstance(metric, str) or not metric.startswith("column:"):
        return []
    own = {human_target(metric), metric[len("column:"):]}
    return [t for t in target_names if t in own]
