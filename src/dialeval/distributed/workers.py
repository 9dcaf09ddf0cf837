"""Helpers for what runs on the workers: batch functions (tasks) and callable classes (actors) over Arrow batches.

A metric's scale-out hook (its declaration's ``scale_out``, in the metric family's core) brings the functions and
classes; they take a ``pyarrow.Table`` batch and return one: the input columns plus new per-item columns (and
:data:`TAG`, the settings that produced them: a signature or the encoder dtype, dropped before writing), or a
chunk's mergeable state as an Arrow table. Actors load their model once, in ``__init__``. Nothing here imports
Ray: the classes are plain Python, so the same code runs in a test, one process or a cluster.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pyarrow as pa

from dialeval.distributed.columns import as_texts

TAG = "__dialeval_tag"


def column_values(batch: pa.Table, name: str) -> list[Any]:
    """A column's values; lists of turn records (``{speaker, text}``) become lists of texts."""
    values = batch.column(name).to_pylist()
    if pa.types.is_list(batch.schema.field(name).type) and pa.types.is_struct(batch.schema.field(name).type.value_type):
        return [as_texts(v) for v in values]
    return values


def tags(batch: pa.Table) -> list[str]:
    """The distinct :data:`TAG` values of a batch (settings that produced its per-item columns)."""
    return sorted(set(column_values(batch, TAG))) if TAG in batch.column_names else []


def with_columns(batch: pa.Table, columns: dict[str, Any]) -> pa.Table:
    """``batch`` with ``columns`` added (or replaced)."""
    for name, values in columns.items():
        if name in batch.column_names:
            batch = batch.drop_columns([name])
        batch = batch.append_column(name, values if isinstance(values, pa.Array) else pa.array(values))
    return batch


def tag_array(value: str, n: int) -> pa.Array:
    """``n`` rows of one :data:`TAG` value (dictionary-encoded: one string per batch)."""
    return pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([value], pa.string()))


def worker_device(device: Any, dtype: Any) -> tuple[Any, Any]:
    """``(device, dtype)`` for a model on this worker: with a GPU assigned (Ray sets
    ``CUDA_VISIBLE_DEVICES``) and no explicit choice, ``cuda`` in bf16 where the GPU runs it natively, else fp16
    (:func:`dialeval.models.runtime.gpu_half_dtype`); otherwise as given."""
    if device is None and os.environ.get("CUDA_VISIBLE_DEVICES", "") not in ("", "-1"):
        import torch

        from dialeval.models.runtime import gpu_half_dtype

        if torch.cuda.is_available():
            return "cuda", dtype if dtype is not None else gpu_half_dtype("cuda")
    return device, dtype


class Recorder:
    """Writes ``<pid>.json`` (host, pid, device, batches done) into ``info_dir`` after each batch, so that an
    operator (or a test) sees which process runs which actor."""

    def __init__(self, info_dir: str | None, device: Any) -> None:
        self.dir = Path(info_dir) if info_dir else None
        self.info = {"pid": os.getpid(), "host": socket.gethostname(), "device": str(device), "batches": 0}
        self._write()

    def batch_done(self) -> None:
        self.info["batches"] += 1
        self._write()

    def _write(self) -> None:
        if self.dir is None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        target = self.dir / f"{self.info['pid']}.json"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.info), encoding="utf-8")
        os.replace(tmp, target)
