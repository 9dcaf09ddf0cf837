"""The engine's own mergeable state: the mean of a per-item score column (pure functions, no Ray).

Metrics bring their states through their declarations' ``scale_out`` hooks (Arrow tables, never JSON or
pickle); a per-item metric that declares none is reduced here: the sum (``math.fsum`` of exactly rounded
partial sums) and count of its score column, plus the settings (:data:`~dialeval.distributed.workers.TAG`) its
workers scored with, which must agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from dialeval.distributed.workers import column_values, tags

MEAN_SCHEMA = pa.schema([("total", pa.float64()), ("count", pa.int64()), ("signatures", pa.list_(pa.string()))])


def mean_state(batch: pa.Table, *, column: str) -> pa.Table:
    """One row: the fsum and count of ``column`` in this chunk, and the signature(s) in its tags."""
    values = column_values(batch, column)
    return pa.table({"total": [math.fsum(values)], "count": [len(values)], "signatures": [tags(batch)]},
                    schema=MEAN_SCHEMA)


def merge_means(tables: Sequence[pa.Table]) -> pa.Table:
    table = pa.concat_tables(tables)
    signatures = sorted({s for row in table.column("signatures").to_pylist() for s in row})
    return pa.table({"total": [math.fsum(table.column("total").to_pylist())],
                     "count": [sum(table.column("count").to_pylist())], "signatures": [signatures]},
                    schema=MEAN_SCHEMA)


def finish_mean(table: pa.Table, name: str, config: str | None = None) -> dict[str, Any]:
    """``{name: mean, "num_items", "signature"}`` (and ``config``) of a merged mean state."""
    count = table.column("count")[0].as_py()
    if count == 0:
        raise ValueError("no rows were scored.")
    signatures = table.column("signatures")[0].as_py()
    if len(signatures) > 1:
        raise ValueError(f"workers scored with different settings: {signatures}; give every worker the same "
                         "model, dtype and options.")
    out: dict[str, Any] = {name: table.column("total")[0].as_py() / count, "num_items": count,
                           "signature": signatures[0] if signatures else None}
    if config:
        out["config"] = config
    return out
