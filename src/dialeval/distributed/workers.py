"""What runs on the workers: batch functions (tasks) and callable classes (actors) over Arrow batches.

Each takes a ``pyarrow.Table`` batch and returns one: the input columns plus new per-item columns (and
:data:`TAG`, the settings that produced them: a signature or the encoder dtype, dropped before writing),
or one row holding a chunk's mergeable state as JSON. Actors load their model once, in ``__init__``,
through the shared loaders (``SemanticSpace.use_encoder`` → ``encoders.get_encoder``, ``lm.load_lm``,
``modules.nli_diversity.get_classifier``). Nothing here imports Ray: the classes are plain Python, so the
same code runs in a test, one process or a cluster.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pyarrow as pa

from dialeval.distributed.columns import as_texts
from dialeval.distributed.states import (
    ClusterState,
    LexicalPlan,
    MeanState,
    SpeakerState,
    ngram_state,
)
from dialeval.encoders import BATCH_SIZE

TAG = "__dialeval_tag"
STATE = "state"


def _col(batch: pa.Table, name: str) -> list[Any]:
    """A column's values; lists of turn records (``{speaker, text}``) become lists of texts."""
    values = batch.column(name).to_pylist()
    if pa.types.is_list(batch.schema.field(name).type) and pa.types.is_struct(batch.schema.field(name).type.value_type):
        return [as_texts(v) for v in values]
    return values


def _state_table(state_json: str) -> pa.Table:
    return pa.table({STATE: pa.array([state_json], pa.string())})


def _with(batch: pa.Table, columns: dict[str, Any]) -> pa.Table:
    for name, values in columns.items():
        if name in batch.column_names:
            batch = batch.drop_columns([name])
        batch = batch.append_column(name, values if isinstance(values, pa.Array) else pa.array(values))
    return batch


def _tag(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([value], pa.string()))


def worker_device(device: Any, dtype: Any) -> tuple[Any, Any]:
    """``(device, dtype)`` for a model on this worker: with a GPU assigned (Ray sets
    ``CUDA_VISIBLE_DEVICES``) and no explicit choice, ``cuda`` in ``bf16``; otherwise as given."""
    if device is None and os.environ.get("CUDA_VISIBLE_DEVICES", "") not in ("", "-1"):
        import torch

        if torch.cuda.is_available():
            return "cuda", dtype if dtype is not None else "bf16"
    return device, dtype


class _Recorder:
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


# ------------------------------------------------------------------------------------------- tasks


def lexical_state(batch: pa.Table, *, column: str, plan: LexicalPlan) -> pa.Table:
    """One row: the chunk's n-gram counts (a bad row is an error naming the column and its index in the chunk)."""
    return _state_table(ngram_state(_col(batch, column), plan, f"{column} (chunk of {batch.num_rows} rows)"))


def speaker_scores(batch: pa.Table, *, columns: dict[str, str], output: str) -> pa.Table:
    """Per-story DialSpk accuracy (correct turns / turns of the story)."""
    _, per_story = SpeakerState.of(*_speaker_inputs(batch, columns))
    return _with(batch, {output: pa.array(per_story, pa.float64())})


def speaker_state(batch: pa.Table, *, columns: dict[str, str]) -> pa.Table:
    state, _ = SpeakerState.of(*_speaker_inputs(batch, columns))
    return _state_table(state.to_json())


def _speaker_inputs(batch: pa.Table, columns: dict[str, str]) -> tuple[Any, Any, Any]:
    cands = _col(batch, columns["candidates"]) if "candidates" in columns else None
    return _col(batch, columns["predictions"]), _col(batch, columns["references"]), cands


def cluster_state(batch: pa.Table, *, text_column: str, label_column: str, k: int, per_cluster: int) -> pa.Table:
    """One row: the chunk's cluster histogram and first distinct examples (encoder dtype from :data:`TAG`)."""
    tags = set(_col(batch, TAG)) if TAG in batch.column_names else set()
    if len(tags) > 1:
        raise ValueError(f"one chunk was encoded in several dtypes {sorted(tags)}; use one dtype per job.")
    state = ClusterState.of(_col(batch, label_column), _col(batch, text_column), k, per_cluster,
                            next(iter(tags)) if tags else None)
    return _state_table(state.to_json())


def mean_state(batch: pa.Table, *, column: str) -> pa.Table:
    """One row: sum and count of a score column, and the signature(s) in :data:`TAG`."""
    tags = sorted(set(_col(batch, TAG))) if TAG in batch.column_names else []
    state = MeanState.of(_col(batch, column))
    state.signatures = tags
    return _state_table(state.to_json())


def head_flags(batch: pa.Table, *, label_column: str, heads: list[int], output: str) -> pa.Table:
    """DRESS negative-training flags: −1.0 in a head cluster of the generated set, else 0.0."""
    labels = _col(batch, label_column)
    heads_set = set(heads)
    return _with(batch, {output: pa.array([-1.0 if lab in heads_set else 0.0 for lab in labels], pa.float64())})


# ------------------------------------------------------------------------------------------- actors


class SemanticLabeler:
    """Cluster label of each response in a saved semantic space (and, with ``gamma``, its DRESS weight
    ``(1 − p_ref(c))^γ``). Loads the space and its encoder once."""

    def __init__(self, space: str, *, column: str, output: str, weight_output: str | None = None,
                 gamma: float | None = None, device: Any = None, dtype: Any = None, batch_size: int = BATCH_SIZE,
                 info_dir: str | None = None) -> None:
        from dialeval.semantic.space import SemanticSpace

        device, dtype = worker_device(device, dtype)
        self.space = SemanticSpace.load(space)
        self.encoder = self.space.use_encoder(None, device=device, dtype=dtype)
        self.column, self.output, self.weight_output, self.gamma = column, output, weight_output, gamma
        self.batch_size = batch_size
        self.recorder = _Recorder(info_dir, device or "cpu")

    def __call__(self, batch: pa.Table) -> pa.Table:
        labels = self.space.assign(_col(batch, self.column), field=self.column, batch_size=self.batch_size,
                                   progress=False)
        new: dict[str, Any] = {self.output: pa.array(labels.tolist(), pa.int64())}
        if self.weight_output is not None:
            from dialeval.semantic.dress import dress_weights

            weights = dress_weights(labels, self.space.reference_distribution, self.gamma)
            new[self.weight_output] = pa.array(weights.tolist(), pa.float64())
        new[TAG] = _tag(getattr(self.encoder, "dtype_name", "fp32"), batch.num_rows)
        self.recorder.batch_done()
        return _with(batch, new)


class FullScorer:
    """FULL per dialogue (``level="dialog"``) or per response in context (``"turn"``); the LM loads once."""

    def __init__(self, *, level: str, columns: dict[str, str], output: str, options: dict[str, Any],
                 info_dir: str | None = None) -> None:
        from dialeval.lm import load_lm

        opts = dict(options)
        opts["device"], opts["dtype"] = worker_device(opts.get("device"), opts.get("dtype"))
        opts["progress"] = False
        load_lm(opts.get("model"), dtype=opts["dtype"], device=opts["device"])  # load (and cache) it now
        self.level, self.columns, self.output, self.options = level, columns, output, opts
        self.recorder = _Recorder(info_dir, opts["device"] or "cpu")

    def __call__(self, batch: pa.Table) -> pa.Table:
        from dialeval.full.full_followup import compute_full
        from dialeval.full.texts import check_dialogues, check_turn_inputs

        if self.level == "turn":
            contexts, preds = check_turn_inputs(_col(batch, self.columns["contexts"]),
                                                _col(batch, self.columns["predictions"]))
            histories = [c + [p] for c, p in zip(contexts, preds)]
        else:
            histories = check_dialogues(_col(batch, self.columns["dialogues"]))
        out = compute_full(histories, level=self.level, **self.options)
        self.recorder.batch_done()
        return _with(batch, {self.output: pa.array(out["scores"], pa.float64()),
                             TAG: _tag(out["signature"], batch.num_rows)})


class NLIScorer:
    """NLI Diversity of each response set; the classifier loads once per actor."""

    def __init__(self, *, column: str, output: str, options: dict[str, Any], info_dir: str | None = None) -> None:
        from dialeval.nli.core import check_variant
        from dialeval.nli.nli_diversity import get_classifier

        opts = dict(options)
        device, dtype = worker_device(opts.pop("device", None), opts.pop("dtype", None))
        self.variant = check_variant(opts.pop("variant", "baseline"))
        opts.pop("return_probabilities", None)
        opts.pop("progress", None)
        model = opts.pop("model", None)
        self.classifier = get_classifier(model, device=device, dtype=dtype, progress=False, **opts)
        self.column, self.output = column, output
        self.recorder = _Recorder(info_dir, device or "cpu")

    def __call__(self, batch: pa.Table) -> pa.Table:
        from dialeval.nli.core import compute_nli_diversity
        from dialeval.nli.nli_diversity import nli_signature

        out = compute_nli_diversity(_col(batch, self.column), self.classifier, self.variant)
        self.recorder.batch_done()
        return _with(batch, {self.output: pa.array(out["scores"], pa.float64()),
                             TAG: _tag(nli_signature(self.classifier, self.variant), batch.num_rows)})
