"""Ray plumbing: connect, read, run a worker stage, reduce mergeable states, write Parquet.

Nothing here computes a metric: the numbers come from the metrics' own scale-out hooks (on the workers and,
for merges and finishers, on the driver). The driver holds a few chunk states and the running merge, never
the rows. Paths are local paths or URIs (``s3://``, ``gs://``, ``file://``) read through pyarrow filesystems.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pyarrow as pa
import pyarrow.fs as pafs

from dialeval.distributed.columns import describe_type
from dialeval.distributed.workers import TAG
from dialeval.io.files import atomic_directory, check_output_path
from dialeval.io.readers import export_file, is_export_folder

#: Default rows per Ray batch for model stages (actors stay busy) and the bounds of a corpus chunk.
MODEL_ROWS = 256
CORPUS_ROWS = 100_000
MIN_CHUNK, MAX_CHUNK = 2_000, 250_000
CONNECT_TIMEOUT = 30.0
#: Seconds the workers' ``runtime_env`` (pip, conda, working_dir...) may take to set up (Ray's own default).
SETUP_TIMEOUT = 600.0
_FILE_KINDS = {".parquet": "parquet", ".jsonl": "json", ".ndjson": "json", ".json": "json", ".csv": "csv",
               ".tsv": "tsv"}
#: Any other file is text, one response per line, read as ``dialeval score`` reads it in one process.
TEXT_KIND = "text"


def check_runtime_env(env: Any, setup_timeout: float = SETUP_TIMEOUT) -> dict[str, Any] | None:
    """``env`` (a Ray ``runtime_env``) with its setup bounded by ``setup_timeout`` seconds (Ray's
    ``config.setup_timeout_seconds``, unless ``env`` sets it); a key Ray does not know is refused (Ray would
    otherwise ignore a typo such as ``pips``)."""
    if env is None:
        return None
    if not isinstance(env, dict):
        raise TypeError(f"--runtime-env must be a JSON object (Python: runtime_env= a dict), got {type(env).__name__}.")
    if not (isinstance(setup_timeout, (int, float)) and not isinstance(setup_timeout, bool) and setup_timeout > 0):
        raise ValueError(f"--setup-timeout must be > 0 seconds, got {setup_timeout!r}.")
    from ray.runtime_env import RuntimeEnv

    known = RuntimeEnv.known_fields
    unknown = sorted(set(env) - set(known))
    if unknown:
        raise ValueError(f"--runtime-env key {unknown[0]!r} is not a Ray runtime_env field; use one of "
                         f"{sorted(k for k in known if not k.startswith('_'))}.")
    config = env.get("config") or {}
    if not isinstance(config, dict):
        raise ValueError(f"--runtime-env 'config' must be an object, got {type(config).__name__}.")
    return {**env, "config": {"setup_timeout_seconds": math.ceil(setup_timeout), **config}}


def connect(address: str | None = None, *, timeout: float = CONNECT_TIMEOUT,
            runtime_env: dict[str, Any] | None = None, setup_timeout: float = SETUP_TIMEOUT) -> Any:
    """Join the Ray cluster at ``address`` (``"auto"``, ``"HOST:PORT"``, ``"ray://HOST:10001"``; default
    ``$RAY_ADDRESS``, else the one this process joined, else a new local one) within ``timeout`` seconds, with
    ``runtime_env`` for every worker, set up within ``setup_timeout`` seconds. A cluster that does not answer is
    one ``ConnectionError`` naming it; a runtime_env that fails or does not finish is one line too."""
    from dialeval.extras import optional

    ray = optional("ray", "the Ray engine")  # absent: one line naming the distributed extra
    runtime_env = check_runtime_env(runtime_env, setup_timeout)
    if not ray.is_initialized():
        where = address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
        if str(where).startswith("ray://"):
            _needs_client()
        outcome = _init(ray, address, runtime_env, timeout, local=where == "a new local cluster")
        if outcome == "timeout":
            raise ConnectionError(f"no Ray cluster answered at {where} within {timeout:g} s; check the address "
                                  "(auto, HOST:PORT or ray://HOST:10001) and `ray status` there, or raise "
                                  "--connect-timeout.")
        if outcome is not None:
            first = (str(outcome).strip().splitlines() or [type(outcome).__name__])[0]
            raise ConnectionError(f"cannot join the Ray cluster at {where}: {first}") from None
        if runtime_env:
            wait_for_runtime_env(ray, where, runtime_env["config"]["setup_timeout_seconds"])
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # no per-execution INFO lines on the console
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True  # outputs follow inputs
    ctx.enable_progress_bars = os.environ.get("DIALEVAL_PROGRESS", "1") != "0"
    return ray


def _init(ray: Any, address: str | None, runtime_env: dict[str, Any] | None, timeout: float,
          local: bool) -> BaseException | str | None:
    """``ray.init``: the error it raised, ``"timeout"`` or ``None``. A new local cluster starts on the calling
    thread: Ray marks the head's processes (GCS, raylet, agents) to die with the thread that started them, so a
    helper thread that returns would take the cluster with it. Joining an existing cluster runs on a helper
    thread joined within ``timeout`` seconds (Ray's own connection retries take minutes)."""
    outcome: dict[str, BaseException] = {}

    def join() -> None:
        try:
            ray.init(address=address, runtime_env=runtime_env, log_to_driver=False, configure_logging=False)
        except BaseException as exc:  # noqa: BLE001 - reported on the caller's thread
            outcome["error"] = exc

    if local:
        join()
        return outcome.get("error")
    thread = threading.Thread(target=join, name="dialeval-ray-connect", daemon=True)
    thread.start()
    thread.join(timeout)
    return "timeout" if thread.is_alive() else outcome.get("error")


def wait_for_runtime_env(ray: Any, where: str, timeout: float) -> None:
    """Run one empty task in the job's runtime_env: its setup (pip, conda, working_dir) happens now, within
    ``timeout`` seconds, and a failure is one line (Ray Data would otherwise wait on it silently)."""

    @ray.remote(num_cpus=0, max_retries=0)
    def ready() -> bool:
        return True

    ref = ready.remote()
    try:
        ray.get(ref, timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        ray.cancel(ref, force=True)
        raise TimeoutError(f"the Ray runtime_env was not set up on {where} within {timeout:g} s (pip, conda or "
                           "working_dir still installing); raise --setup-timeout or check the runtime_env.") from None
    except ray.exceptions.RuntimeEnvSetupError as exc:
        raise ValueError(f"the Ray runtime_env could not be set up on {where}: {setup_error_line(str(exc))}") \
            from None


def setup_error_line(text: str) -> str:
    """The line of Ray's runtime-env setup report that says what failed (pip's ``ERROR: ...``, else the last
    line that is not a traceback frame)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:") or "Error:" in line or "error:" in line]
    frames = ("File ", "Traceback", "^", "raise ", "return ", "await ")
    tail = [line for line in lines if not line.startswith(frames)]
    return (errors or tail or ["unknown error"])[-1][:500]


def _needs_client() -> None:
    try:
        import grpc  # noqa: F401
        import ray.util.client  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the install
        raise ImportError("ray:// addresses need Ray Client: pip install 'dialeval[distributed]' (ray[client]).") \
            from None


def is_client() -> bool:
    """Whether this process joined through Ray Client (``ray://``), where Ray Data cannot drive a job."""
    from ray.util.client import ray as client

    return bool(client.is_connected())


def cluster_gpus() -> int:
    import ray

    return int(ray.cluster_resources().get("GPU", 0))


def cluster_cpus() -> int:
    import ray

    return int(ray.cluster_resources().get("CPU", 1))


# ------------------------------------------------------------------------------------------- files


def filesystem_of(path: str | os.PathLike, filesystem: pafs.FileSystem | None = None,
                  timeout: float = CONNECT_TIMEOUT) -> tuple[pafs.FileSystem | None, str]:
    """``(filesystem, path)``: ``None`` and a local path for local files and ``file://``; a pyarrow filesystem
    for ``s3://``, ``gs://`` and other URIs (or the ``filesystem`` given, with a path inside it)."""
    text = str(path)
    if filesystem is not None:
        return filesystem, text.split("://", 1)[1] if "://" in text else text
    if text.startswith("file://"):
        return None, text[len("file://"):]
    if "://" not in text:
        return None, text
    scheme, rest = text.split("://", 1)
    if scheme in ("gs", "gcs"):  # without a network, GCS retries for minutes: bound it
        return pafs.GcsFileSystem(retry_time_limit=timedelta(seconds=timeout)), rest
    try:
        return pafs.FileSystem.from_uri(text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"{text!r}: {exc}") from None


def child_uri(folder: str | os.PathLike, name: str) -> str:
    """``folder/name`` for a local folder or a URI: the name joins the URI's path, before its query, so the
    options a URI carries reach the child (``s3://b/out/?endpoint_override=H&scheme=http`` →
    ``s3://b/out/NAME?endpoint_override=H&scheme=http``), as pyarrow's ``FileSystem.from_uri`` reads them."""
    text = str(folder)
    if "://" not in text:
        return str(Path(text) / name)
    parts = urlsplit(text)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/{name}"))


def _info(fs: pafs.FileSystem, path: str, uri: str, timeout: float) -> pafs.FileInfo:
    """``fs.get_file_info(path)`` within ``timeout`` seconds (an unreachable store is one clear error)."""
    box: dict[str, Any] = {}

    def ask() -> None:
        try:
            box["info"] = fs.get_file_info(path)
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise ConnectionError(f"{uri}: the object store did not answer within {timeout:g} s (network, endpoint "
                              "or credentials?).")
    if "error" in box:
        raise OSError(f"{uri}: {str(box['error']).strip().splitlines()[0]}") from None
    return box["info"]


def resolve_input(path: str | os.PathLike, config: str | None = None, split: str | None = None,
                  filesystem: pafs.FileSystem | None = None, timeout: float = CONNECT_TIMEOUT) -> tuple[str, str]:
    """``(kind, path)`` of an input: a Parquet/JSONL/CSV file, a folder or prefix of such files, or an export
    folder (local)."""
    fs, inner = filesystem_of(path, filesystem, timeout)
    if fs is None:
        return _resolve_local(Path(inner), config, split)
    info = _info(fs, inner, str(path), timeout)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"input {str(path)!r} does not exist.")
    if info.type == pafs.FileType.Directory:
        names = [i.path for i in fs.get_file_info(pafs.FileSelector(inner, recursive=True)) if i.is_file]
        return _one_kind(str(path), names), inner
    return _kind_of(str(path)), inner


def _resolve_local(p: Path, config: str | None, split: str | None) -> tuple[str, str]:
    if not p.exists():
        raise FileNotFoundError(f"input {str(p)!r} does not exist.")
    if p.is_dir():
        if is_export_folder(p):
            p = export_file(p, config, split)
        else:
            return _one_kind(str(p), [str(f) for f in p.iterdir()]), str(p)
    return _kind_of(str(p)), str(p)


def _kind_of(path: str) -> str:
    return _FILE_KINDS.get(Path(path).suffix.lower(), TEXT_KIND)


def _driver_rows(fs: pafs.FileSystem | None, path: str) -> list[dict[str, Any]]:
    """Rows read as one process reads them: a text file's lines as one ``text`` column (split on ``\\n`` only;
    blank lines are empty responses), a local ``.json`` file's array of records."""
    from dialeval.io.readers import read_records, split_lines

    if fs is None:
        rows = read_records(path)
    else:
        with fs.open_input_stream(path) as f:
            rows = split_lines(f.read().decode("utf-8-sig"))
    return [{"text": r} if isinstance(r, str) else r for r in rows]


def _one_kind(where: str, names: list[str]) -> str:
    kinds = {_FILE_KINDS[Path(n).suffix.lower()] for n in names if Path(n).suffix.lower() in _FILE_KINDS}
    if len(kinds) != 1:
        raise ValueError(f"{where} must hold Parquet, JSON Lines or CSV files (one kind), found {sorted(kinds)}.")
    return kinds.pop()


def read(dataset: Any, config: str | None = None, split: str | None = None, *,
         filesystem: pafs.FileSystem | None = None, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A ``ray.data.Dataset`` (returned as is) or a path/URI to read as one."""
    import ray.data

    if isinstance(dataset, ray.data.Dataset):
        return dataset
    if not isinstance(dataset, (str, os.PathLike)):
        raise TypeError(f"`dataset` must be a ray.data.Dataset or a path, got {type(dataset).__name__}.")
    kind, path = resolve_input(dataset, config, split, filesystem, timeout)
    fs, _ = filesystem_of(dataset, filesystem, timeout)
    if kind == TEXT_KIND or kind == "json" and fs is None and Path(path).suffix.lower() == ".json":
        ds = ray.data.from_items(_driver_rows(fs, path))
    elif kind == "tsv":
        import pyarrow.csv as pacsv

        ds = ray.data.read_csv(path, filesystem=fs, parse_options=pacsv.ParseOptions(delimiter="\t"))
    else:
        reader = {"parquet": ray.data.read_parquet, "json": ray.data.read_json, "csv": ray.data.read_csv}[kind]
        ds = reader(path, filesystem=fs)  # JSON: Arrow's reader, JSON Lines with typed (list) columns
    ds._dialeval_rows = _parquet_rows(fs, path) if kind == "parquet" else None  # noqa: SLF001 - chunk sizing
    return ds


def _parquet_rows(fs: pafs.FileSystem | None, path: str, most: int = 256) -> int | None:
    """Rows of a Parquet file or folder from the files' footers (``None`` past ``most`` files)."""
    import pyarrow.parquet as pq

    fs = fs or pafs.LocalFileSystem()
    info = fs.get_file_info(path)
    files = [path] if info.is_file else sorted(
        i.path for i in fs.get_file_info(pafs.FileSelector(path, recursive=True))
        if i.is_file and i.path.endswith(".parquet"))
    if len(files) > most:
        return None
    total = 0
    for name in files:
        with fs.open_input_file(name) as f:
            total += pq.read_metadata(f).num_rows
    return total


def schema_of(ds: Any) -> dict[str, str]:
    schema = ds.schema()
    if schema is None:
        raise ValueError("the dataset is empty (no schema); give it at least one row.")
    return {name: describe_type(t) for name, t in zip(schema.names, schema.types)}


def chunk_rows(ds: Any, rows: int | None = None) -> int:
    """Rows per corpus chunk: ``rows`` when given; else from the data, about two chunks per cluster CPU (so
    every CPU works and the driver merges few states) within [:data:`MIN_CHUNK`, :data:`MAX_CHUNK`]. The row
    count is read from the Parquet footers; other inputs (JSON Lines, CSV, a Dataset) use :data:`CORPUS_ROWS`."""
    if rows is not None:
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise ValueError(f"rows per batch must be a positive int, got {rows!r}.")
        return rows
    total = getattr(ds, "_dialeval_rows", None)
    if total is None:
        return CORPUS_ROWS
    return max(MIN_CHUNK, min(MAX_CHUNK, math.ceil(total / (2 * cluster_cpus()))))


# ------------------------------------------------------------------------------------------- stages


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


def iter_tables(states_ds: Any) -> Iterator[pa.Table]:
    """The chunk states (Arrow tables, one per block) streamed to the driver in input order."""
    yield from states_ds.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=1)


def reduce(tables: Iterator[pa.Table], merge: Callable[[list[pa.Table]], pa.Table], fan_in: int = 8) -> pa.Table:
    """Merge chunk states in groups of ``fan_in`` (a tree of merges: the driver holds at most ``fan_in``)."""
    held: list[pa.Table] = []
    for table in tables:
        if table.num_rows:
            held.append(table)
        if len(held) >= fan_in:
            held = [merge(held)]
    if not held:
        raise ValueError("the dataset has no rows.")
    return merge(held)


# ------------------------------------------------------------------------------------------- outputs


def check_output(output: str | os.PathLike, *, filesystem: pafs.FileSystem | None = None, overwrite: bool = False,
                 inputs: tuple[Any, ...] = (), timeout: float = CONNECT_TIMEOUT) -> None:
    """Refuse, before any work, an output folder/prefix that already holds files (unless ``overwrite``), is an
    input, or cannot be written."""
    fs, path = filesystem_of(output, filesystem, timeout)
    if fs is None:
        local = [i for i in inputs if isinstance(i, (str, os.PathLike)) and "://" not in str(i)]
        out = check_output_path(path, inputs=local, kind="dir")
        if out.is_dir() and any(out.iterdir()) and not overwrite:
            raise FileExistsError(f"output {str(output)!r} is not empty; choose a new folder or pass --overwrite "
                                  "(Python: overwrite=True) to replace it.")
        return
    if any(str(i).rstrip("/") == str(output).rstrip("/") for i in inputs):
        raise ValueError(f"output {str(output)!r} is the input; writing there would destroy it.")
    info = _info(fs, path, str(output), timeout)
    if info.type == pafs.FileType.File:
        raise FileExistsError(f"output {str(output)!r} is an existing object; give a prefix (folder).")
    if info.type == pafs.FileType.Directory and not overwrite and \
            fs.get_file_info(pafs.FileSelector(path, recursive=True)):
        raise FileExistsError(f"output {str(output)!r} is not empty; choose a new prefix or pass --overwrite "
                              "(Python: overwrite=True) to replace it.")


def write_parquet(ds: Any, output: str | os.PathLike, *, filesystem: pafs.FileSystem | None = None,
                  overwrite: bool = False, partition_by: list[str] | None = None) -> str:
    """Write ``ds`` (minus internal columns) as Parquet files into the folder or prefix ``output``
    (``partition_by``: hive-style ``COLUMN=VALUE/`` sub-folders). A local folder is written as a temporary
    sibling and renamed into place (:func:`dialeval.io.files.atomic_directory`), so a crash never leaves a
    half-written output; on a multi-node cluster give a path every node sees (NFS, ``s3://``)."""
    from ray.data import SaveMode

    if TAG in ds.schema().names:
        ds = ds.drop_columns([TAG])
    fs, path = filesystem_of(output, filesystem)
    if partition_by:
        missing = sorted(set(partition_by) - set(ds.schema().names))
        if missing:
            raise ValueError(f"--partition-by {missing[0]!r} is not a column of the output "
                             f"(columns: {sorted(ds.schema().names)}).")
    if fs is None:
        with atomic_directory(path, overwrite=overwrite) as tmp:
            ds.write_parquet(str(tmp), partition_cols=partition_by or None)
        return str(output)
    if overwrite and fs.get_file_info(path).type == pafs.FileType.Directory:
        fs.delete_dir_contents(path)
    ds.write_parquet(path, filesystem=fs, partition_cols=partition_by or None,
                     mode=SaveMode.OVERWRITE if overwrite else SaveMode.APPEND)
    return str(output)
