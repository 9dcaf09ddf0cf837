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
from dialeval.distributed.states import (
    ClusterState,
    MeanState,
    SpeakerState,
    lexical_plan,
    lexical_result,
    merge_ngram_states,
)
from dialeval.distributed.workers import (
    FullScorer,
    NLIScorer,
    SemanticLabeler,
    cluster_state,
    head_flags,
    lexical_state,
    mean_state,
    speaker_scores,
    speaker_state,
)
from dialeval.encoders import BATCH_SIZE

LEXICAL = ("distinct_n", "ent_n", "low_frequency")
#: The column each per-item metric adds (Sem-Ent: the cluster label of each response).
ITEM_COLUMNS = {"sem_ent": "sem_ent_cluster", "full_followup": "full_followup", "nli_diversity": "nli_diversity",
                "dialspk": "dialspk"}


@dataclass
class Job:
    """One ``score`` call, validated: the dataset, its role → column map and the run settings."""

    decl: registry.MetricDeclaration
    ds: Any
    columns: dict[str, str]
    config: str | None
    options: dict[str, Any]
    output: str | None
    concurrency: int | None
    num_gpus: float | None
    rows: int | None
    info_dir: str | None


def supported() -> list[str]:
    """Registered metrics the Ray engine runs (a plugin metric without a plan is a clear error)."""
    return [name for name in registry.declarations() if name in LEXICAL or name in ITEM_COLUMNS]


def score(dataset: Any, metric: str, columns: dict[str, str] | None = None, *, output: str | os.PathLike | None = None,
          config: str | None = None, address: str | None = None, concurrency: int | None = None,
          num_gpus: float | None = None, rows_per_batch: int | None = None, dataset_config: str | None = None,
          split: str | None = None, actor_info_dir: str | None = None, **options: Any) -> dict[str, Any]:
    """Score ``dataset`` (a ``ray.data.Dataset`` or a Parquet/JSONL/CSV path or export folder) with ``metric``.

    ``columns`` maps the metric's inputs to columns (default: same names). Corpus metrics (Dist/Ent/LF,
    Sem-Ent, DialSpk's DAC/SAC) return one result, reduced from per-chunk mergeable states; per-item
    metrics (FULL, NLI Diversity, Sem-Ent cluster labels, DialSpk per story) add a column to every row,
    written as Parquet into the folder ``output``, and return the mean and the signature. ``options`` are
    the metric's own (``space=``, ``model=``, ``n=`` …); model metrics run on ``concurrency`` actors (default:
    one per GPU, else one per two CPUs), ``num_gpus`` each (default 1 when the cluster has GPUs, in bf16).
    Same numbers and signature as single-process ``dialeval.load(metric).compute``.
    """
    decl = registry.get(metric)
    if metric not in supported():
        raise ValueError(f"metric {metric!r} has no Ray plan; the Ray engine runs {', '.join(supported())}.")
    unknown = sorted(set(options) - set(decl.option_defaults()))
    if unknown:
        raise ValueError(f"{metric} has no option {unknown[0]!r}; its options are {sorted(decl.option_defaults())}.")
    _check_output(output, dataset)
    engine.connect(address)
    ds = engine.read(dataset, dataset_config, split)
    schema = engine.schema_of(ds)
    config = config or default_config(decl, columns or {}, set(schema))
    cols = resolve_columns(decl, input_kind(decl, config), columns, schema)
    job = Job(decl, ds, cols, config, options, None if output is None else str(output), concurrency, num_gpus,
              rows_per_batch, actor_info_dir)
    try:
        return _run(job)
    except Exception as exc:
        raise _user_error(exc) from exc


def _check_output(output: Any, *inputs: Any) -> None:
    """Refuse, before any work, an output folder that is an input or cannot be written (local paths)."""
    if output is not None and "://" not in str(output):
        from dialeval.files import check_output_path

        check_output_path(output, inputs=[i for i in inputs if isinstance(i, (str, os.PathLike))], kind="dir")


def _run(job: Job) -> dict[str, Any]:
    name = job.decl.name
    if name in LEXICAL:
        return _lexical(job)
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


def _lexical(job: Job) -> dict[str, Any]:
    plan = lexical_plan(job.decl.name, job.options)
    states = engine.task_stage(job.ds, lexical_state, {"column": job.columns["predictions"], "plan": plan},
                               rows=job.rows or engine.CORPUS_ROWS)
    return lexical_result(merge_ngram_states(engine.iter_states(states), plan), plan)


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
        out["output"] = engine.write_parquet(labeled, job.output)
    return out


def _dialspk(job: Job) -> dict[str, Any]:
    from dialeval.dialstory.dialspk import accuracy_from_counts
    from dialeval.dialstory.dialspk_module import dialspk_signature

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
        out["output"] = engine.write_parquet(scored, job.output)
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
        out["output"] = engine.write_parquet(scored, job.output)
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
    _check_output(output, dataset, space)
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
