"""Scale-out of the semantic family on Ray (read through the declaration's ``scale_out`` hook): cluster labels
on an actor pool, per-chunk cluster histograms as Arrow tables, and DRESS weights.

A chunk's state is one row per cluster: ``cluster``, ``count`` and its first distinct ``examples`` (at most
``keep``). Merging chunks *in input order* keeps the first distinct examples of the whole corpus (a text among
the corpus's first ``m`` distinct ones of a cluster is among its own chunk's first ``m``), and the counts add
up, so the result equals one process's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from dialeval.distributed.workers import (
    TAG,
    Recorder,
    column_values,
    tag_array,
    tags,
    with_columns,
    worker_device,
)
from dialeval.models.encoders import BATCH_SIZE
from dialeval.models.onnx_backend import check_backend_name
from dialeval.semantic.clustering import cluster_examples
from dialeval.semantic.dress import dress_weights
from dialeval.semantic.sem_ent import sem_ent_result
from dialeval.semantic.space import SemanticSpace

STATE_SCHEMA = pa.schema([("cluster", pa.int64()), ("count", pa.int64()), ("examples", pa.list_(pa.string())),
                          ("keep", pa.int64()), ("dtype", pa.string())])
_WORKER_OPTIONS = {"device", "dtype", "backend", "batch_size", "examples_per_cluster", "progress"}
#: The Sem-Ent options the plan reads: the fitting ones (``reference_responses``, ``encoder``, ``k``, ``seeds``)
#: are refused on Ray, in one line.
OPTIONS = ("space", "reference_responses", "encoder", "k", "dtype", "device", "backend", "batch_size",
           "examples_per_cluster", "seeds", "progress")


@dataclass(frozen=True)
class Plan:
    space: str
    k: int
    device: Any = None
    dtype: Any = None
    batch_size: int = BATCH_SIZE
    per_cluster: int = 3
    backend: str | None = None


def plan(metric: str, options: dict[str, Any], config: str | None = None, columns: dict[str, str] | None = None) -> Plan:
    """Sem-Ent on Ray labels with a saved space that every worker reads; fitting one is a single-process step."""
    opts = dict(options)
    space = opts.pop("space", None)
    if not isinstance(space, (str, os.PathLike)):
        raise ValueError(f"{metric} on Ray needs `space=` a saved space folder (`dialeval fit-space`), which every "
                         "worker reads; fitting a space is a single-process step.")
    extra = sorted(k for k, v in opts.items() if v is not None and k not in _WORKER_OPTIONS)
    if extra:
        raise ValueError(f"{metric} on Ray takes space=, device=, dtype=, backend=, batch_size=, "
                         "examples_per_cluster=; "
                         f"{extra[0]!r} is for single-process use.")
    k = SemanticSpace.load(space).k  # arrays only, on the driver
    check_backend_name(opts.get("backend"))
    per_cluster = opts.get("examples_per_cluster")
    return Plan(str(space), k, opts.get("device"), opts.get("dtype"), int(opts.get("batch_size") or BATCH_SIZE),
                3 if per_cluster is None else int(per_cluster), opts.get("backend"))


class SemanticLabeler:
    """Cluster label of each response in a saved semantic space (and, with ``gamma``, its DRESS weight
    ``(1 − p_ref(c))^γ``). Loads the space and its encoder once."""

    def __init__(self, space: str, *, column: str, output: str, weight_output: str | None = None,
                 gamma: float | None = None, device: Any = None, dtype: Any = None, batch_size: int = BATCH_SIZE,
                 info_dir: str | None = None, backend: str | None = None) -> None:
        device, dtype = worker_device(device, dtype)
        self.space = SemanticSpace.load(space)
        self.encoder = self.space.use_encoder(None, device=device, dtype=dtype, backend=backend)
        self.column, self.output, self.weight_output, self.gamma = column, output, weight_output, gamma
        self.batch_size = batch_size
        self.recorder = Recorder(info_dir, device or "cpu")

    def __call__(self, batch: pa.Table) -> pa.Table:
        labels = self.space.assign(column_values(batch, self.column), field=self.column, batch_size=self.batch_size,
                                   progress=False)
        new: dict[str, Any] = {self.output: pa.array(labels.tolist(), pa.int64())}
        if self.weight_output is not None:
            weights = dress_weights(labels, self.space.reference_distribution, self.gamma)
            new[self.weight_output] = pa.array(weights.tolist(), pa.float64())
        # "<dtype> <backend>": what ran, for the signature (workers must agree on both)
        new[TAG] = tag_array(f'{getattr(self.encoder, "dtype_name", "fp32")} {getattr(self.encoder, "backend", "torch")}',
                             batch.num_rows)
        self.recorder.batch_done()
        return with_columns(batch, new)


def labeler(p: Plan, columns: dict[str, str], output: str, info_dir: str | None) -> tuple[type, dict[str, Any]]:
    """The actor class and its arguments that add ``output`` (the cluster label of each response)."""
    return SemanticLabeler, {"space": p.space, "column": columns["predictions"], "output": output,
                             "device": p.device, "dtype": p.dtype, "batch_size": p.batch_size, "info_dir": info_dir,
                             "backend": p.backend}


def cluster_state(batch: pa.Table, *, text_column: str, label_column: str, k: int, per_cluster: int) -> pa.Table:
    """One row per cluster: the chunk's count and first distinct examples (encoder dtype from the tags)."""
    dtypes = tags(batch)
    if len(dtypes) > 1:
        raise ValueError(f"one chunk was encoded in several dtypes {dtypes}; use one dtype per job.")
    labels = column_values(batch, label_column)
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=k) if labels else np.zeros(k, np.int64)
    examples = cluster_examples(column_values(batch, text_column), labels, k, per_cluster)
    return pa.table({"cluster": list(range(k)), "count": counts.tolist(), "examples": examples,
                     "keep": [per_cluster] * k, "dtype": [dtypes[0] if dtypes else None] * k}, schema=STATE_SCHEMA)


def merge_clusters(tables: Sequence[pa.Table]) -> pa.Table:
    """Add chunk states given in input order (counts add; the first distinct examples are kept)."""
    dtypes = {d for t in tables for d in t.column("dtype").to_pylist() if d is not None}
    if len(dtypes) > 1:
        raise ValueError(f"workers encoded in {sorted(dtypes)}; run every worker in one dtype.")
    first = tables[0]
    k, keep = first.num_rows, first.column("keep")[0].as_py()
    counts = np.zeros(k, np.int64)
    examples: list[list[str]] = [[] for _ in range(k)]
    for table in tables:
        if table.num_rows != k:
            raise ValueError(f"cannot merge {table.num_rows} cluster counts into {k}.")
        counts += np.asarray(table.column("count").to_numpy(), np.int64)
        for mine, theirs in zip(examples, table.column("examples").to_pylist()):
            mine.extend(t for t in theirs if len(mine) < keep and t not in mine)
    return pa.table({"cluster": list(range(k)), "count": counts.tolist(), "examples": examples, "keep": [keep] * k,
                     "dtype": [next(iter(dtypes), None)] * k}, schema=STATE_SCHEMA)


def state_kwargs(p: Plan, columns: dict[str, str], item_column: str) -> dict[str, Any]:
    return {"text_column": columns["predictions"], "label_column": item_column, "k": p.k, "per_cluster": p.per_cluster}


def finish(table: pa.Table, p: Plan) -> dict[str, Any]:
    sp = SemanticSpace.load(p.space)
    dtype_name, _, backend = (table.column("dtype")[0].as_py() or "").partition(" ")  # "<dtype> <backend>"
    return sem_ent_result(sp, table.column("count").to_pylist(), table.column("examples").to_pylist(),
                          dtype_name=dtype_name or None, backend=backend or None)


def scale_out() -> dict[str, Any]:
    """The ``scale_out`` hook: labels on actors (always), then cluster histograms merged in input order."""
    return {"kind": "items", "plan": plan, "scorer": labeler, "actors": True, "score": "always",
            "state": cluster_state, "state_kwargs": state_kwargs, "merge": merge_clusters, "finish": finish,
            "options": OPTIONS}


def head_flags(batch: pa.Table, *, label_column: str, heads: list[int], output: str) -> pa.Table:
    """DRESS negative-training flags: −1.0 in a head cluster of the generated set, else 0.0."""
    heads_set = set(heads)
    flags = [-1.0 if lab in heads_set else 0.0 for lab in column_values(batch, label_column)]
    return with_columns(batch, {output: pa.array(flags, pa.float64())})
