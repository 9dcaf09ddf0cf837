"""``score`` and ``dress_weights`` on Ray Data: per-metric plans over :mod:`.engine`, :mod:`.workers`, :mod:`.states`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from dialeval import registry
from dialeval.distributed import engine
from dialeval.distributed.columns import default_config, input_kind, resolve_columns
from dialeval.distributed.states import ClusterState, MeanState, SpeakerState
from dialeval.distributed.workers import (
    FullScorer,
    NLIScorer,
    SemanticLabeler,
    cluster_state,
    head_flags,
    mean_state,
    speaker_scores,
    speaker_state,
)
from dialeval.encoders import BATCH_SIZE

#: The column each per-item metric adds (Sem-Ent: the cluster label of each response).
ITEM_COLUMNS = {"sem_ent": "sem_ent_cluster", "full_followup": "full_followup", "nli_diversity": "nli_diversity",
                "dialspk": "dialspk"}


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
    return metric in ITEM_COLUMNS or bool(hooks and hooks.get("kind") == "items")


def supported() -> list[str]:
    """Registered metrics the Ray engine runs (a plugin metric without a plan is a clear error)."""
    return [name for name, d in registry.declarations().items() if d.scale_out or name in ITEM_COLUMNS]


def score(dataset: Any, metric: str, columns: dict[str, str] | None = None, *, output: str | os.PathLike | None = None,
          config: str | None = None, address: str | None = None, connect_timeout: float = engine.CONNECT_TIMEOUT,
          runtime_env: dict[str, Any] | None = None, concurrency: int | None = None, num_gpus: float | None = None,
          rows_per_batch: int | None = None, dataset_config: str | None = None, split: str | None = None,
          actor_info_dir: str | None = None, filesystem: Any = None, overwrite: bool = False,
          partition_by: list[str] | None = None, **options: Any) -> dict[str, Any]:
    """Score ``dataset`` (a ``ray.data.Dataset``, or a Parquet/JSONL/CSV path, folder, export folder or URI such as
    ``s3://bucket/prefix/``) with ``metric``.

    ``columns`` maps the metric's inputs to columns (default: same names). Corpus metrics (Dist/Ent/LF,
    Sem-Ent, DialSpk's DAC/SAC) return one result, reduced from per-chunk mergeable states; per-item
    metrics (FULL, NLI Diversity, Sem-Ent cluster labels, DialSpk per story) add a column to every row,
    written as Parquet into the folder or prefix ``output`` (refused when it holds files, unless
    ``overwrite``; ``partition_by`` columns give hive-style sub-folders; ``filesystem`` a pyarrow filesystem
    for ``dataset`` and ``output``), and return the mean and the signature. ``options`` are the metric's own
    (``space=``, ``model=``, ``n=`` …); model metrics run on ``concurrency`` actors (default: one per GPU, else
    one per two CPUs), ``num_gpus`` each (default 1 when the cluster has GPUs, in bf16). ``address``,
    ``connect_timeout`` (seconds) and ``runtime_env`` are :func:`ray.init`'s. Same numbers and signature as
    single-process ``dialeval.load(metric).compute``.
    """
    settings = Settings(address, connect_timeout, runtime_env, concurrency, num_gpus, rows_per_batch, dataset_config,
                        split, actor_info_dir, filesystem, overwrite, partition_by)
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
        decl = registry.get(name)
        if name not in supported():
            raise ValueError(f"metric {name!r} has no Ray plan; the Ray engine runs {', '.join(supported())}.")
        unknown = sorted(set(opts) - set(decl.option_defaults()))
        if unknown:
            raise ValueError(f"{name} has no option {unknown[0]!r}; its options are {sorted(decl.option_defaults())}.")
    for output in outputs.values():
        if output is not None:
            engine.check_output(output, filesystem=settings.filesystem, overwrite=settings.overwrite,
                                inputs=(dataset,), timeout=settings.connect_timeout)
    engine.connect(settings.address, timeout=settings.connect_timeout, runtime_env=settings.runtime_env)
    ds = engine.read(dataset, settings.dataset_config, settings.split, filesystem=settings.filesystem,
                     timeout=settings.connect_timeout)
    schema = engine.schema_of(ds)
    jobs = []
    for name, opts in metrics.items():
        decl = registry.get(name)
        cols_given = columns.get(name) or {}
        config = configs.get(name) or default_config(decl, cols_given, set(schema))
        cols = resolve_columns(decl, input_kind(decl, config), cols_given, schema)
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
    name = job.decl.name
    if name == "sem_ent":
        return _sem_ent(job)
    if name == "dialspk":
        return _dialspk(job)
    return _model_items(job)


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


def _sem_ent(job: Job) -> dict[str, Any]:
    from dialeval.semantic.sem_ent import sem_ent_result
    from dialeval.semantic.space import SemanticSpace

    opts = dict(job.options)
    space = opts.pop("space", None)
    if not isinstance(space, (str, os.PathLike)):
        raise ValueError("Sem-Ent on Ray needs `space=` a saved space folder (`dialeval fit-space`), which every "
                         "worker reads; fitting a space is a single-process step.")
    extra = sorted(k for k, v in opts.items() if v is not None and k not in {"device", "dtype", "batch_size",
                                                                             "examples_per_cluster", "progress"})
    if extra:
        raise ValueError(f"Sem-Ent on Ray takes space=, device=, dtype=, batch_size=, examples_per_cluster=; "
                         f"{extra[0]!r} is for single-process use.")
    sp = SemanticSpace.load(space)  # arrays only, on the driver: k, fingerprint, reference distribution
    label = ITEM_COLUMNS["sem_ent"]
    text = job.columns["predictions"]
    per_cluster = int(opts.get("examples_per_cluster") or 3)
    labeled = engine.actor_stage(job.ds, SemanticLabeler, {
        "space": str(space), "column": text, "output": label, "device": opts.get("device"),
        "dtype": opts.get("dtype"), "batch_size": int(opts.get("batch_size") or 32), "info_dir": job.info_dir,
    }, concurrency=job.concurrency, num_gpus=job.num_gpus, rows=job.rows or engine.MODEL_ROWS)
    if job.output:
        labeled = labeled.materialize()
    states = engine.task_stage(labeled, cluster_state, {"text_column": text, "label_column": label, "k": sp.k,
                                                        "per_cluster": per_cluster}, rows=engine.CORPUS_ROWS)
    total: ClusterState = engine.fold(engine.iter_states(states), ClusterState.from_json)
    out = sem_ent_result(sp, total.counts, total.examples, dtype_name=total.dtype)
    if job.output:
        out["output"] = _write(job, labeled)
    return out


def _dialspk(job: Job) -> dict[str, Any]:
    from dialeval.dialstory.dialspk import accuracy_from_counts, dialspk_signature

    if job.options.get("candidates") is not None:
        raise ValueError("on Ray, pass DialSpk candidates as a column (--column candidates=NAME), one list per story.")
    rows = job.rows or engine.CORPUS_ROWS
    scored = job.ds
    if job.output:
        scored = engine.task_stage(job.ds, speaker_scores, {"columns": job.columns, "output": ITEM_COLUMNS["dialspk"]},
                                   rows=rows).materialize()
    states = engine.task_stage(scored, speaker_state, {"columns": job.columns}, rows=rows)
    total: SpeakerState = engine.fold(engine.iter_states(states), SpeakerState.from_json)
    out = accuracy_from_counts(total.correct_turns, total.total_turns, total.correct_stories, total.num_stories)
    out["signature"] = dialspk_signature("candidates" in job.columns)
    if job.output:
        out["output"] = _write(job, scored)
    return out


def _model_items(job: Job) -> dict[str, Any]:
    name = job.decl.name
    column = ITEM_COLUMNS[name]
    opts = {k: v for k, v in job.options.items()}
    if name == "full_followup":
        cls, kwargs = FullScorer, {"level": "turn" if job.config == "turn" else "dialog", "columns": job.columns,
                                   "output": column, "options": opts}
    else:
        if opts.get("return_probabilities"):
            raise ValueError("return_probabilities=True returns n×n matrices per set; on Ray only the per-set "
                             "score is written. Drop the option, or run it in one process.")
        defaults = job.decl.option_defaults()
        opts = {**{k: defaults[k] for k in ("model", "variant")}, **opts}
        cls, kwargs = NLIScorer, {"column": job.columns["predictions"], "output": column, "options": opts}
    kwargs["info_dir"] = job.info_dir
    scored = engine.actor_stage(job.ds, cls, kwargs, concurrency=job.concurrency, num_gpus=job.num_gpus,
                                rows=job.rows or engine.MODEL_ROWS)
    if job.output:
        scored = scored.materialize()
    states = engine.task_stage(scored, mean_state, {"column": column}, rows=engine.CORPUS_ROWS)
    total: MeanState = engine.fold(engine.iter_states(states), MeanState.from_json)
    out: dict[str, Any] = {name: total.mean, "num_items": total.count, "signature": total.signature}
    if job.config:
        out["config"] = job.config
    if job.output:
        out["output"] = _write(job, scored)
    return out


def dress_weights(dataset: Any, space: str | os.PathLike, *, split: str = "train", output: str | os.PathLike,
                  column: str = "text", gamma: float = 30.0, threshold: float = 0.1, address: str | None = None,
                  concurrency: int | None = None, num_gpus: float | None = None, rows_per_batch: int | None = None,
                  device: Any = None, dtype: Any = None, batch_size: int = BATCH_SIZE,
                  actor_info_dir: str | None = None) -> dict[str, Any]:
    """DRESS on Ray: ``split="train"`` adds ``cluster`` and ``weight`` = (1 − p_ref(c))^γ to every row;
    ``split="generated"`` adds ``cluster`` and ``weight`` = −1.0 for responses in head clusters (share of the
    generated set > ``threshold``), else 0.0 — one pass to label and count, one to flag. Written to ``output``."""
    from dialeval.semantic.dress import _check_gamma, head_clusters
    from dialeval.semantic.space import SemanticSpace

    if split not in ("train", "generated"):
        raise ValueError(f"`split` must be 'train' or 'generated', got {split!r}.")
    gamma = _check_gamma(gamma)
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
            total: ClusterState = engine.fold(engine.iter_states(states), ClusterState.from_json)
            dist = np.asarray(total.counts, dtype=np.float64) / sum(total.counts)  # = cluster_distribution(labels)
            heads = head_clusters(dist, threshold)
            labeled = engine.task_stage(labeled, head_flags, {"label_column": "cluster", "heads": heads,
                                                              "output": "weight"}, rows=rows)
            out.update(threshold=float(threshold), head_clusters=heads, generated_distribution=dist.tolist(),
                       flagged=sum(total.counts[j] for j in heads), num_rows=sum(total.counts))
        out["output"] = engine.write_parquet(labeled, output)
        return out
    except Exception as exc:
        raise _user_error(exc) from exc
