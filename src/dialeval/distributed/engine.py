"""Ray plumbing: connect, read, run a worker stage, fold mergeable states, write Parquet.

Nothing here computes a metric: the numbers come from :mod:`.workers` (on the workers) and :mod:`.states`
(pure merges and finishers on the driver). The driver only ever holds one chunk state at a time plus the
running merge, never the rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dialeval.distributed.columns import describe_type
from dialeval.distributed.workers import STATE, TAG
from dialeval.files import atomic_directory
from dialeval.io import export_file, is_export_folder

#: Rows per Ray batch: n-gram counting amortises its state over big chunks; model stages keep actors busy.
CORPUS_ROWS = 20_000
MODEL_ROWS = 256
_FILE_KINDS = {".parquet": "parquet", ".jsonl": "json", ".ndjson": "json", ".json": "json", ".csv": "csv"}


def connect(address: str | None = None) -> Any:
    """Join the Ray cluster at ``address`` (``"auto"``, ``"HOST:PORT"``, ``"ray://HOST:10001"``), or the one this
    process already joined; without an address and none running, Ray starts a local one. Returns ``ray``."""
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the Ray engine needs the distributed extra: pip install 'dialeval[distributed]'") from exc
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True  # outputs follow inputs; states fold in input order
    ctx.enable_progress_bars = os.environ.get("DIALEVAL_PROGRESS", "1") != "0"
    return ray


def cluster_gpus() -> int:
    import ray

    return int(ray.cluster_resources().get("GPU", 0))


def cluster_cpus() -> int:
    import ray

    return int(ray.cluster_resources().get("CPU", 1))


def resolve_input(path: str | os.PathLike, config: str | None = None, split: str | None = None) -> tuple[str, str]:
    """``(kind, path)`` of an input: a Parquet/JSONL/CSV file, a folder of such files, or an export folder."""
    text = str(path)
    if "://" in text:
        return ("parquet" if not text.endswith((".jsonl", ".json")) else "json"), text
    p = Path(text)
    if not p.exists():
        raise FileNotFoundError(f"input {text!r} does not exist.")
    if p.is_dir():
        if is_export_folder(p):
            p = export_file(p, config, split)
        else:
            kinds = {_FILE_KINDS[f.suffix] for f in p.iterdir() if f.suffix in _FILE_KINDS}
            if len(kinds) != 1:
                raise ValueError(f"{p} must hold Parquet, JSON Lines or CSV files (one kind), found {sorted(kinds)}.")
            return kinds.pop(), str(p)
    if p.suffix.lower() not in _FILE_KINDS:
        raise ValueError(f"{p}: unknown file type {p.suffix!r}; use .parquet, .jsonl or .csv.")
    return _FILE_KINDS[p.suffix.lower()], str(p)


def read(dataset: Any, config: str | None = None, split: str | None = None) -> Any:
    """A ``ray.data.Dataset`` (returned as is) or a path to read as one."""
    import ray.data

    if isinstance(dataset, ray.data.Dataset):
        return dataset
    if not isinstance(dataset, (str, os.PathLike)):
        raise TypeError(f"`dataset` must be a ray.data.Dataset or a path, got {type(dataset).__name__}.")
    kind, path = resolve_input(dataset, config, split)
    if kind == "parquet":
        return ray.data.read_parquet(path)
    if kind == "json":
        return ray.data.read_json(path)  # Arrow's reader: JSON Lines with typed (list) columns
    return ray.data.read_csv(path)


def schema_of(ds: Any) -> dict[str, str]:
    schema = ds.schema()
    if schema is None:
        raise ValueError("the dataset is empty (no schema); give it at least one row.")
    return {name: describe_type(t) for name, t in zip(schema.names, schema.types)}


def actor_stage(ds: Any, cls: type, kwargs: dict[str, Any], *, concurrency: int | None, num_gpus: float | None,
                rows: int) -> Any:
    """``ds.map_batches(cls)`` on a fixed pool of actors, each loading its model once; one GPU per actor when
    the cluster has GPUs; actors and their tasks restart after a crash (no row lost or duplicated)."""
    gpus = cluster_gpus() if num_gpus is None else num_gpus
    per_actor = 1 if gpus and num_gpus is None else (num_gpus or 0)
    if concurrency is None:
        concurrency = max(1, int(gpus)) if gpus else max(1, cluster_cpus() // 2)
    if not gpus:  # CPU actors hold one CPU each; leave one for the read and write tasks feeding them
        concurrency = max(1, min(concurrency, cluster_cpus() - 1))
    # Ray Data gives pool actors max_restarts=-1 and max_task_retries=-1 (passing them is deprecated in 2.60):
    # a killed actor is restarted and its in-flight batches are retried, each batch's output kept once.
    return chunked(ds, rows).map_batches(cls, fn_constructor_kwargs=kwargs, batch_format="pyarrow", batch_size=rows,
                          concurrency=concurrency, num_gpus=per_actor, num_cpus=1, zero_copy_batch=True)


def task_stage(ds: Any, fn: Callable[..., Any], kwargs: dict[str, Any], *, rows: int) -> Any:
    return chunked(ds, rows).map_batches(fn, fn_kwargs=kwargs, batch_format="pyarrow", batch_size=rows,
                                         zero_copy_batch=True)


def chunked(ds: Any, rows: int) -> Any:
    """``ds`` in blocks of at most ``rows`` rows (streaming, order kept): one big file is one block when read,
    and a block is one task, so without this a single-file corpus would run on one worker."""
    return ds.repartition(target_num_rows_per_block=rows)


def iter_states(states_ds: Any) -> Iterator[str]:
    """The chunk states (JSON strings) in input order, streamed to the driver one batch at a time."""
    # one state per batch and one prefetched: the driver holds at most two chunk states besides the merge
    for batch in states_ds.iter_batches(batch_size=1, batch_format="pyarrow", prefetch_batches=1):
        yield from batch.column(STATE).to_pylist()


def fold(states: Iterator[str], parse: Callable[[str], Any]) -> Any:
    """Merge chunk states left to right (input order)."""
    total = None
    for text in states:
        state = parse(text)
        total = state if total is None else total.merge(state)
    if total is None:
        raise ValueError("the dataset has no rows.")
    return total


def write_parquet(ds: Any, output: str | os.PathLike) -> str:
    """Write ``ds`` (minus internal columns) as Parquet files into the folder ``output``. A local folder is
    written as a temporary sibling and renamed into place (:func:`dialeval.files.atomic_directory`), so a crash
    never leaves a half-written output; on a multi-node cluster give a path every node sees (NFS, ``s3://``)."""
    if TAG in ds.schema().names:
        ds = ds.drop_columns([TAG])
    text = str(output)
    if "://" in text:
        ds.write_parquet(text)
        return text
    with atomic_directory(text) as tmp:
        ds.write_parquet(str(tmp))
    return text
