"""``score`` and ``dress_weights`` on Ray Data. No metric is named here: each declaration's ``scale_out`` hook
(in its family's core) brings the plan, the worker functions and the mergeable state; this module runs them
over :mod:`.engine`: corpus metrics as one shared pass of Arrow states per counting scheme, per-item metrics
as a scoring stage (actors for models) plus a reduction (the hook's, or the mean of the item column)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dialeval import registry
from dialeval.distributed import engine
from dialeval.distributed.columns import (
    default_columns,
    default_config,
    input_kind,
    resolve_columns,
)
from dialeval.distributed.states import finish_mean, mean_state, merge_means
from dialeval.models.encoders import BATCH_SIZE
from dialeval.semantic.dress import HEAD_RULE, _check_gamma, check_head, head_clusters
from dialeval.semantic.scale_out import SemanticLabeler, cluster_state, head_flags, merge_clusters
from dialeval.semantic.space import SemanticSpace


@dataclass
class Settings:
    """How a job runs: the cluster, the input and output locations, the batching."""

    address: str | None = None
    connect_timeout: float = engine.CONNECT_TIMEOUT
    runtime_env: dict[str, Any] | None = None
    concurrency: int | None = None
    num_gpus: float | None = None
    rows: int | None = None
    dataset_config: str | None = None
    split: str | None = None
    info_dir: str | None = None
    filesystem: Any = None
    overwrite: bool = False
    partition_by: list[str] | None = None
    setup_timeout: float = engine.SETUP_TIMEOUT


@dataclass
class Job:
    """One metric of a ``score`` call, validated: the dataset, its role → column map and the run settings."""

    decl: registry.MetricDeclaration
    ds: Any
    columns: dict[str, str]
    config: str | None
    options: dict[str, Any]
    output: str | None
    settings: Settings

    @property
    def rows(self) -> int | None:
        return self.settings.rows

    @property
    def concurrency(self) -> int | None:
        return self.settings.concurrency

    @property
    def num_gpus(self) -> float | None:
        return self.settings.num_gpus

    @property
    def info_dir(self) -> str | None:
        return self.settings.info_dir


def writes_items(metric: str) -> bool:
    """Whether ``metric`` adds a per-item column on Ray (its output is then a Parquet folder)."""
    hooks = registry.get(metric).scale_out_hooks()
    return bool(hooks and hooks.get("kind") == "items")


def supported() -> list[str]:
    """Registered metrics the Ray engine runs: those whose declaration has a ``scale_out`` hook."""
    return [name for name, d in registry.declarations().items() if d.scale_out]


def score(dataset: Any, metric: str, columns: dict[str, str] | None = None, *, output: str | os.PathLike | None = None,
          config: str | None = None, address: str | None = None, connect_timeout: float = engine.CONNECT_TIMEOUT,
          runtime_env: dict[str, Any] | None = None, concurrency: int | None = None, num_gpus: float | None = None,
          rows_per_batch: int | None = None, dataset_config: str | None = None, split: str | None = None,
          actor_info_dir: str | None = None, filesystem: Any = None, overwrite: bool = False,
          partition_by: list[str] | None = None, setup_timeout: float = engine.SETUP_TIMEOUT,
          **options: Any) -> dict[str, Any]:
    """Score ``dataset`` (a ``ray.data.Dataset``, or a Parquet/JSONL/CSV path, folder, export folder or URI such as
    ``s3://bucket/prefix/``) with ``metric``.

    ``columns`` maps the metric's inputs to columns (default: same names). Corpus metrics return one result,
    reduced from per-chunk mergeable states; per-item metrics add a column to every row (their declaration's
    ``item_column``), written as Parquet into the folder or prefix ``output`` (refused when it holds files,
    unless ``overwrite``, which replaces the whole folder or prefix; ``partition_by`` columns give hive-style sub-folders; ``filesystem`` a pyarrow
    filesystem for ``dataset`` and ``output``), and return their reduced result. ``options`` are the metric's
    own; model metrics run on ``concurrency`` actors (default: one per GPU, else one per two CPUs),
    ``num_gpus`` each (default 1 when the cluster has GPUs, in bf16). ``address``, ``connect_timeout``
    (seconds) and ``runtime_env`` are :func:`ray.init`'s (``runtime_env`` keys Ray does not know are refused;
    its setup on the workers is bounded by ``setup_timeout`` seconds, a failure is one line). Same numbers and signature as single-process
    ``dialeval.load(metric).compute``.
    """
    settings = Settings(address, connect_timeout, runtime_env, concurrency, num_gpus, rows_per_batch, dataset_config,
                        split, actor_info_dir, filesystem, overwrite, partition_by, setup_timeout)
    out = score_many(dataset, {metric: options}, {metric: columns or {}}, outputs={metric: output},
                     configs={metric: config}, settings=settings)
    return out[metric]


def score_many(dataset: Any, metrics: dict[str, dict[str, Any]], columns: dict[str, dict[str, str]] | None = None,
               *, outputs: dict[str, Any] | None = None, configs: dict[str, str | None] | None = None,
               settings: Settings | None = None) -> dict[str, dict[str, Any]]:
    """Several metrics over one dataset, ``{metric: options}`` → ``{metric: result}``: one read, and corpus
    metrics that count the same way (e.g. Dist-n, Ent-n and LF with one tokenizer) share one pass over the
    rows (one tokenization). ``columns``, ``outputs`` and ``configs`` are per metric, as in :func:`score`."""
    settings = settings or Settings()
    columns, outputs, configs = columns or {}, outputs or {}, configs or {}
    for name, opts in metrics.items():
        check_plan_options(registry.get(name), opts)
    for output in outputs.values():
        if output is not None:
            engine.check_output(output, filesystem=settings.filesystem, overwrite=settings.overwrite,
                                inputs=(dataset,), timeout=settings.connect_timeout)
    if isinstance(dataset, (str, os.PathLike)):  # a missing file or an unreachable store fails before Ray starts
        engine.resolve_input(dataset, settings.dataset_config, settings.split, settings.filesystem,
                             settings.connect_timeout)
    engine.check_runtime_env(settings.runtime_env, settings.setup_timeout)  # before any work
    ray = engine.connect(settings.address, timeout=settings.connect_timeout, runtime_env=settings.runtime_env,
                         setup_timeout=settings.setup_timeout)
    if engine.is_client():  # Ray Client: Ray Data executes from a driver inside the cluster, so run this there
        inside = ray.remote(num_cpus=0)(score_many)
        try:
            return ray.get(inside.remote(dataset, metrics, columns, outputs=outputs, configs=configs,
                                         settings=replace(settings, address=None)))
        except Exception as exc:
            raise _user_error(exc) from exc
    ds = engine.read(dataset, settings.dataset_config, settings.split, filesystem=settings.filesystem,
                     timeout=settings.connect_timeout)
    schema = engine.schema_of(ds)
    jobs = []
    for name, opts in metrics.items():
        decl = registry.get(name)
        cols_given = columns.get(name) or {}
        config = configs.get(name) or default_config(decl, cols_given, set(schema))
        kind = input_kind(decl, config)
        cols = resolve_columns(decl, kind, default_columns(kind, cols_given, schema), schema)
        output = outputs.get(name)
        jobs.append(Job(decl, ds, cols, config, dict(opts), None if output is None else str(output), settings))
    try:
        results = _run_corpus([j for j in jobs if _corpus_hooks(j.decl)], ds, settings)
        for job in jobs:
            if job.decl.name not in results:
                results[job.decl.name] = _run(job)
        return {name: results[name] for name in metrics}
    except Exception as exc:
        raise _user_error(exc) from exc


def plan_options(decl: registry.MetricDeclaration) -> tuple[str, ...]:
    """The options ``decl``'s Ray plan reads (its hook's ``options``: a tuple, or one per metric of a family)."""
    hooks = decl.scale_out_hooks() or {}
    names = hooks.get("options", ())
    return tuple(names.get(decl.name, ()) if isinstance(names, dict) else names)


def check_plan_options(decl: registry.MetricDeclaration, options: dict[str, Any]) -> None:
    """Refuse, before Ray starts, a metric without a plan, an option it does not declare or a value out of its
    range, and an option set to other than its default that the plan does not read (it would be dropped
    silently and give one process's numbers for other settings)."""
    if not decl.scale_out:
        raise ValueError(f"metric {decl.name!r} has no Ray plan; the Ray engine runs {', '.join(supported())}.")
    unknown = sorted(set(options) - set(decl.option_defaults()))
    if unknown:
        raise ValueError(f"{decl.name} has no option {unknown[0]!r}; its options are {sorted(decl.option_defaults())}.")
    registry.check_options(decl, options)
    read = plan_options(decl)
    dropped = sorted(k for k, v in options.items() if k not in read and v != decl.option(k).default)
    if dropped:
        raise ValueError(f"{decl.name} on Ray does not read the option {dropped[0]!r} (its plan reads "
                         f"{sorted(read)}); run it in one process (no --engine ray).")


def _corpus_hooks(decl: registry.MetricDeclaration) -> dict[str, Any] | None:
    hooks = decl.scale_out_hooks()
    return hooks if hooks and hooks.get("kind") == "corpus" else None


def _run_corpus(jobs: list[Job], ds: Any, settings: Settings) -> dict[str, dict[str, Any]]:
    """Corpus metrics with mergeable Arrow states: plans that count the same way over the same columns share
    one pass (one read, one tokenization of each chunk); each metric finishes from the merged state."""
    groups: dict[tuple[Any, ...], list[tuple[Job, Any]]] = {}
    for job in jobs:
        hooks = _corpus_hooks(job.decl)
        plan = hooks["plan"](job.decl.name, job.options)
        key = (job.decl.scale_out, plan.share_key, tuple(sorted(job.columns.items())))
        groups.setdefault(key, []).append((job, plan))
    results: dict[str, dict[str, Any]] = {}
    if not groups:
        return results
    rows = engine.chunk_rows(ds, settings.rows)
    for members in groups.values():
        hooks = _corpus_hooks(members[0][0].decl)
        cols = members[0][0].columns
        plans = [plan for _, plan in members]
        kwargs = {"columns": cols, **hooks["state_kwargs"](plans)}
        states = engine.task_stage(ds.select_columns(sorted(set(cols.values()))), hooks["state"], kwargs, rows=rows)
        merged = engine.reduce(engine.iter_tables(states), hooks["merge"])
        for job, plan in members:
            results[job.decl.name] = hooks["finish"](merged, plan)
    return results


def _write(job: Job, ds: Any) -> str:
    s = job.settings
    return engine.write_parquet(ds, job.output, filesystem=s.filesystem, overwrite=s.overwrite,
                                partition_by=s.partition_by)


def _run(job: Job) -> dict[str, Any]:
    """A per-item metric: score every row (the hook's scorer, on actors for models), then reduce the chunk
    states (the hook's ``state``/``merge``/``finish``, else the mean of the item column); write the rows."""
    hooks = job.decl.scale_out_hooks()
    plan = hooks["plan"](job.decl.name, job.options, job.config, job.columns)
    column = job.decl.item_column or job.decl.name
    scored = job.ds
    if hooks.get("score", "always") == "always" or job.output:
        stage, kwargs = hooks["scorer"](plan, job.columns, column, job.info_dir)
        if hooks.get("actors"):
            scored = engine.actor_stage(job.ds, stage, kwargs, concurrency=job.concurrency, num_gpus=job.num_gpus,
                                        rows=job.rows or engine.MODEL_ROWS)
        else:
            scored = engine.task_stage(job.ds, stage, kwargs, rows=job.rows or engine.CORPUS_ROWS)
        if job.output:
            scored = scored.materialize()
    if "state" in hooks:
        state, kwargs = hooks["state"], hooks["state_kwargs"](plan, job.columns, column)
        merge, finish = hooks["merge"], (lambda merged: hooks["finish"](merged, plan))
    else:
        state, kwargs = mean_state, {"column": column}
        merge, finish = merge_means, (lambda merged: finish_mean(merged, job.decl.name, job.config))
    states = engine.task_stage(scored, state, kwargs, rows=job.rows or engine.CORPUS_ROWS)
    out = finish(engine.reduce(engine.iter_tables(states), merge))
    if job.output:
        out["output"] = _write(job, scored)
    return out


def _user_error(exc: Exception) -> Exception:
    """A worker's ValueError/TypeError (bad row, bad option) as itself, not wrapped in Ray's task errors."""
    stack: list[Any] = [exc]
    seen: set[int] = set()
    while stack:
        err = stack.pop()
        if err is None or id(err) in seen:
            continue
        seen.add(id(err))
        if isinstance(err, (ValueError, TypeError, FileNotFoundError)) and not type(err).__module__.startswith("ray"):
            return err
        stack += [getattr(err, "cause", None), err.__context__, err.__cause__]
    # Ray ships a worker's exception as text inside its task error: rebuild the first user error it names.
    found = re.search(r"^(ValueError|TypeError|FileNotFoundError): (.+)$", str(exc), re.MULTILINE)
    if found:
        kind = {"ValueError": ValueError, "TypeError": TypeError, "FileNotFoundError": FileNotFoundError}
        return kind[found.group(1)](found.group(2))
    return exc


def dress_weights(dataset: Any, space: str | os.PathLike, *, split: str = "train", output: str | os.PathLike,
                  column: str = "text", gamma: float = 30.0, head: str = HEAD_RULE, address: str | None = None,
                  concurrency: int | None = None, num_gpus: float | None = None, rows_per_batch: int | None = None,
                  device: Any = None, dtype: Any = None, batch_size: int = BATCH_SIZE,
                  actor_info_dir: str | None = None) -> dict[str, Any]:
    """DRESS on Ray: ``split="train"`` adds ``cluster`` and ``weight`` = (1 − p_ref(c))^γ to every row;
    ``split="generated"`` adds ``cluster`` and ``weight`` = −1.0 for responses in the head clusters of the generated
    set (rule ``head``, :func:`dialeval.semantic.dress.head_clusters`), else 0.0 — one pass to label and count, one
    to flag. Written to ``output``."""

    if split not in ("train", "generated"):
        raise ValueError(f"`split` must be 'train' or 'generated', got {split!r}.")
    gamma = _check_gamma(gamma)
    check_head(head)
    engine.check_output(output, inputs=(dataset, space))
    engine.connect(address)
    ds = engine.read(dataset)
    schema = engine.schema_of(ds)
    if column not in schema or schema[column] != "string":
        raise ValueError(f"column {column!r} must be a string column of the data (columns: {sorted(schema)}); "
                         "choose it with --field NAME (Python: column=).")
    sp = SemanticSpace.load(space)
    kwargs = {"space": str(space), "column": column, "output": "cluster", "device": device, "dtype": dtype,
              "batch_size": batch_size, "info_dir": actor_info_dir}
    if split == "train":
        kwargs.update(weight_output="weight", gamma=gamma)
    rows = rows_per_batch or engine.MODEL_ROWS
    try:
        labeled = engine.actor_stage(ds, SemanticLabeler, kwargs, concurrency=concurrency, num_gpus=num_gpus,
                                     rows=rows)
        out: dict[str, Any] = {"gamma": gamma, "k": sp.k, "split": split}
        if split == "generated":
            labeled = labeled.materialize()
            states = engine.task_stage(labeled, cluster_state, {"text_column": column, "label_column": "cluster",
                                                                "k": sp.k, "per_cluster": 0}, rows=engine.CORPUS_ROWS)
            counts = engine.reduce(engine.iter_tables(states), merge_clusters).column("count").to_pylist()
            dist = np.asarray(counts, dtype=np.float64) / sum(counts)  # = cluster_distribution(labels)
            heads = head_clusters(dist, head)
            labeled = engine.task_stage(labeled, head_flags, {"label_column": "cluster", "heads": heads,
                                                              "output": "weight"}, rows=rows)
            out.update(head=head, head_clusters=heads, generated_distribution=dist.tolist(),
                       flagged=sum(counts[j] for j in heads), num_rows=sum(counts))
        out["output"] = engine.write_parquet(labeled, output)
        return out
    except Exception as exc:
        raise _user_error(exc) from exc
