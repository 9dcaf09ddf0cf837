"""The one ONNX Runtime backend: which backend runs (``backend="torch"|"onnx"|"onnx-int8"``), export of a
torch module to ONNX once per weights, a disk cache beside the converted-model cache, and sessions.

- ``None``/``"auto"`` → ``"onnx"`` on CPU in fp32 when ``onnxruntime`` is installed (the ``onnx`` extra),
  else ``"torch"``; ``"torch"`` stays the reference everywhere and is the default on an accelerator.
- ``"onnx-int8"``: the fp32 graph with ``onnxruntime.quantization.quantize_dynamic`` (int8 weights, int8
  activations quantised per batch). Never a default: it moves numbers (its cost is in each metric's card).
- Export uses ``torch.onnx.export`` (the TorchScript exporter, opset :data:`OPSET`) with dynamic batch and
  sequence axes; the cache entry ``$DIALEVAL_CACHE/onnx/<slug>-<key>`` is keyed by what the graph depends
  on — the kind of graph, a SHA-256 of the weights, the torch / transformers / onnx versions, the opset and
  the quantisation — and written atomically (:func:`dialeval.io.files.atomic_directory`, ``source.json`` last).
- Sessions run ``ORT_ENABLE_ALL`` graph optimisations (operator fusions; fp32 results equal torch's to
  ~1e-7, checked in ``tests/test_onnx_backend.py``) with ``torch.get_num_threads()`` intra-op threads.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from dialeval.io.files import atomic_directory
from dialeval.models.runtime import cache_dir, env_int

BACKENDS = ("torch", "onnx", "onnx-int8")
OPSET = 17
EXPORT_FORMAT = 2  # bump when the exported graphs change, so cached entries of older ones are not reused
#                   (2: attention exported as transformers' eager attention, :func:`eager_attention`)
MODEL_FILE = "model.onnx"
SOURCE_FILE = "source.json"


def import_onnxruntime() -> Any | None:
    """The ``onnxruntime`` module, or ``None`` when it is not installed (tests patch this to simulate that)."""
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime


def onnx_installed() -> bool:
    return import_onnxruntime() is not None


def _device_type(device: Any) -> str:
    return str(getattr(device, "type", device) or "cpu").split(":")[0]


def cache_writable() -> bool:
    """Whether exported graphs can be written (the nearest existing folder of ``$DIALEVAL_CACHE/onnx`` is
    writable); a read-only cache keeps the automatic choice on torch instead of failing."""
    path = cache_dir() / "onnx"
    while not path.exists() and path != path.parent:
        path = path.parent
    return os.access(path, os.W_OK)


def check_backend_name(backend: Any) -> None:
    """Refuse a ``backend`` that is none of :data:`BACKENDS`, ``None`` or ``"auto"`` (also where nothing uses it)."""
    if backend is not None and backend != "auto" and (not isinstance(backend, str) or backend not in BACKENDS):
        raise ValueError(f"`backend`={backend!r:.40} is not known; use one of {list(BACKENDS)} or None (fastest installed).")


def seq2seq_prefers_torch(kind: str, device: Any) -> bool:
    """Whether ``backend=None`` runs an LM of ``kind`` (``"causal"``/``"seq2seq"``) on torch on ``device``: a seq2seq
    LM on a CPU does, on every CPU kind (elsewhere :func:`resolve_backend` decides). The ONNX decoder graph
    recomputes the history's cross-attention keys/values for every follow-up, and the seq2seq compat benchmark measured
    torch ahead on every kind it ran on: 1.51× on AVX2 (an AMD EPYC, Zen 3), and ahead on avx512-bf16 and amx too
    (its result files, one per CPU kind). ``backend="onnx"`` still asks for ONNX Runtime."""
    return kind == "seq2seq" and _device_type(device) == "cpu"


def resolve_backend(backend: Any, device: Any = "cpu", dtype_name: str = "fp32") -> str:
    """The backend that runs: ``None``/``"auto"`` → ``"onnx"`` on CPU in fp32 when onnxruntime is installed
    (and the cache is writable), else ``"torch"``; an explicit ``"onnx"``/``"onnx-int8"`` that cannot run is a one-line error."""
    if backend is None or backend == "auto":
        ok = _device_type(device) == "cpu" and dtype_name == "fp32" and onnx_installed() and cache_writable()
        return "onnx" if ok else "torch"
    check_backend_name(backend)
    if backend == "torch":
        return backend
    ort = import_onnxruntime()
    if ort is None:
        raise ValueError(f"`backend`={backend!r} needs onnxruntime: `pip install dialeval[onnx]` "
                         "(or `pip install onnxruntime onnx`), or use backend='torch'.")
    if dtype_name != "fp32":
        raise ValueError(f"`backend`={backend!r} runs fp32 graphs; use dtype=None/'fp32', or backend='torch' "
                         f"for dtype={dtype_name!r}.")
    dev = _device_type(device)
    if dev == "cuda" and "CUDAExecutionProvider" not in ort.get_available_providers():
        raise ValueError(f"`backend`={backend!r} on CUDA needs onnxruntime-gpu (CUDAExecutionProvider); "
                         "use backend='torch' on the GPU.")
    if dev not in ("cpu", "cuda"):
        raise ValueError(f"`backend`={backend!r} runs on 'cpu' or 'cuda', not {dev!r}; use backend='torch'.")
    if backend == "onnx-int8" and dev != "cpu":
        raise ValueError("`backend`='onnx-int8' (dynamic int8 quantisation) runs on CPU only; use device='cpu'.")
    return backend


def require_cpu(backend: str, device: Any, what: str) -> None:
    """Refuse an ONNX ``backend`` on a non-CPU ``device`` for a model whose graphs run on CPU only (``what``
    names it); torch passes everywhere."""
    if backend != "torch" and _device_type(device) != "cpu":
        raise ValueError(f"`backend`={backend!r} runs {what} on CPU; use backend='torch' (or None) on {device}.")


def weights_digest(module: Any) -> str:
    """SHA-256 over every parameter and buffer of ``module`` (names, dtypes, shapes and bytes)."""
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def cache_key(kind: str, digest: str, quantize: str | None) -> dict[str, Any]:
    """Everything an exported graph depends on (its cache entry is a hash of this)."""
    return {"kind": kind, "format": EXPORT_FORMAT, "weights_sha256": digest, "quantize": quantize or "none", "opset": OPSET,
            "torch": _version("torch"), "transformers": _version("transformers"), "onnx": _version("onnx")}


def cache_entry(name: str, key: dict[str, Any]) -> Path:
    """``$DIALEVAL_CACHE/onnx/<slug of name>-<hash of key>``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(str(name)).name or str(name))[:48] or "model"
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / "onnx" / f"{slug}-{digest}"


def sentence_embedding_module(model: Any, keys: list[str]) -> Any:
    """``model(features)["sentence_embedding"]`` as a module taking the features as positional tensors."""
    import torch

    class SentenceEmbedding(torch.nn.Module):
        """The features as positional tensors, in ``keys`` order (what ONNX export traces)."""

        def __init__(self, model: Any, keys: list[str]) -> None:
            super().__init__()
            self.model, self.keys = model, keys

        def forward(self, *tensors: Any) -> Any:
            return self.model(dict(zip(self.keys, tensors)))["sentence_embedding"]

    return SentenceEmbedding(model, keys).eval()


def last_hidden_module(model: Any) -> Any:
    """``model(input_ids, attention_mask).last_hidden_state`` without a cache (what ONNX export traces)."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state

    return LastHidden(model).eval()


def sentence_embedding_runner(st_model: Any, name: str, backend: str, device: Any = "cpu") -> OnnxRunner:
    """A sentence-transformers model's whole pipeline (transformer, pooling, normalisation) as one graph."""
    import torch

    sample = {k: v for k, v in st_model.preprocess(["a short text", "hi"]).items()
              if isinstance(v, torch.Tensor) and v.ndim == 2}
    return onnx_runner(name, "sentence-transformers", sentence_embedding_module(st_model, list(sample)), sample,
                       ["sentence_embedding"], backend=backend, device=device)


def last_hidden_runner(model: Any, pad_id: int, name: str, backend: str, device: Any = "cpu") -> OnnxRunner:
    """A base transformer's ``last_hidden_state`` as a graph (input ids and attention mask in)."""
    import torch

    sample = {"input_ids": torch.tensor([[pad_id] * 3, [pad_id] * 3]),
              "attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]])}
    return onnx_runner(name, "last-hidden-state", last_hidden_module(model), sample, ["last_hidden_state"],
                       backend=backend, device=device,
                       output_axes={"last_hidden_state": {0: "batch", 1: "input_ids_length"}})


def logits_module(model: Any) -> Any:
    """``model(input_ids, attention_mask[, token_type_ids]).logits`` (a sequence classifier, for export)."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits

    return Logits(model).eval()


@contextmanager
def eager_attention(module: Any) -> Iterator[None]:
    """Every transformers model inside ``module`` on its eager attention for the ``with`` block, then back.

    torch's SDPA exports as ``Where(IsNaN(softmax), 0, softmax)`` over every attention matrix, a guard against
    rows masked with ``-inf`` that costs ONNX Runtime about 8 % of a causal LM pass; eager attention masks with
    the dtype's finite minimum, so no row is ever NaN and the graph has no guard. Scores agree with the torch
    route (which keeps its own attention) to fp32 rounding."""
    from transformers import PreTrainedModel
    from transformers.utils import logging as hf_logging

    switched: list[tuple[Any, str]] = []
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        for sub in module.modules():
            previous = getattr(getattr(sub, "config", None), "_attn_implementation", None)
            if isinstance(sub, PreTrainedModel) and previous not in (None, "eager"):
                sub.set_attn_implementation("eager")
                switched.append((sub, previous))
        yield
    finally:
        for sub, previous in reversed(switched):
            sub.set_attn_implementation(previous)
        hf_logging.set_verbosity(verbosity)


def export_module(module: Any, inputs: dict[str, Any], output_names: Sequence[str], path: Path,
                  output_axes: dict[str, dict[int, str]] | None = None) -> None:
    """``torch.onnx.export`` of ``module(*inputs.values())`` (TorchScript exporter, opset :data:`OPSET`) with
    dynamic axes: batch and length of every 2-D or 3-D input (ids, masks, encoder states), batch and past length of every 4-D one (key/value
    caches), and ``output_axes`` (default: each output's batch axis)."""
    import torch

    names = list(inputs)
    axes: dict[str, dict[int, str]] = {}
    for k, v in inputs.items():
        axes[k] = ({0: "batch", 1: f"{k}_length"} if v.ndim in (2, 3) else {0: "batch", 2: "query_length", 3: "key_length"}
                   if k == "attention_mask" else {0: "batch", 2: "past_length"})  # a 4-D mask, or a 4-D cache
    axes.update(output_axes or {o: {0: "batch"} for o in output_names})
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad(), eager_attention(module):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(inputs.values()), str(path), input_names=names,
                          output_names=list(output_names), dynamic_axes=axes, opset_version=OPSET, dynamo=False)


def exported(name: str, kind: str, module: Any, inputs: dict[str, Any], output_names: Sequence[str], *,
             quantize: str | None = None, output_axes: dict[str, dict[int, str]] | None = None) -> Path:
    """Path of the cached ONNX graph of ``module`` (exported, and quantised with ``quantize="int8"``, on
    first use). ``name`` only names the folder; the key is :func:`cache_key`."""
    digest = weights_digest(module)
    target = cache_entry(name, cache_key(kind, digest, quantize))
    if (target / SOURCE_FILE).is_file():
        return target / MODEL_FILE
    if quantize == "int8":
        fp32 = exported(name, kind, module, inputs, output_names, output_axes=output_axes)
    if os.environ.get("DIALEVAL_PROGRESS", "1") != "0":  # a one-time cost the user should see coming
        print(f"dialeval: exporting {name} ({kind}{', int8' if quantize else ''}) to ONNX once, into {target} "
              "(backend='torch' skips this; delete the folder to reclaim the space)", file=sys.stderr, flush=True)
    with atomic_directory(target) as tmp:
        if quantize == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(str(fp32), str(tmp / MODEL_FILE), weight_type=QuantType.QInt8)
        else:
            export_module(module, inputs, output_names, tmp / MODEL_FILE, output_axes)
        meta = {"name": str(name), **cache_key(kind, digest, quantize)}
        (tmp / SOURCE_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return target / MODEL_FILE


def session(path: Path, device: Any = "cpu", threads: int | None = None) -> Any:
    """An ``onnxruntime.InferenceSession`` for ``path``: all graph optimisations, ``threads`` intra-op
    threads (default ``torch.get_num_threads()``), CUDA provider on a CUDA device. Idle intra-op threads sleep
    instead of spinning (``DIALEVAL_ORT_SPINNING=1`` lets them spin): the same numbers, and on CPU cores shared
    with other work a spinning thread pool waits on descheduled threads, which made LM calls up to 2x slower."""
    import torch

    ort = import_onnxruntime()
    if ort is None:
        raise ValueError("the ONNX backend needs onnxruntime: `pip install dialeval[onnx]`, or use backend='torch'.")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads or torch.get_num_threads())
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    if not env_int("DIALEVAL_ORT_SPINNING", 0, minimum=0):
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if _device_type(device) == "cuda" else [
        "CPUExecutionProvider"]
    return ort.InferenceSession(str(path), opts, providers=providers)


class OnnxRunner:
    """A session plus its input names: ``runner(arrays) -> list of outputs`` (numpy in, numpy out)."""

    def __init__(self, path: Path, device: Any = "cpu") -> None:
        self.path = path
        self.session = session(path, device)
        self.input_names = [i.name for i in self.session.get_inputs()]

    def __call__(self, arrays: dict[str, Any]) -> list[np.ndarray]:
        feed = {}
        for k in self.input_names:
            a = np.asarray(arrays[k])
            feed[k] = np.ascontiguousarray(a if a.dtype.kind == "f" else a.astype(np.int64, copy=False))
        return self.session.run(None, feed)


def onnx_runner(name: str, kind: str, module: Any, inputs: dict[str, Any], output_names: Sequence[str], *,
                backend: str, device: Any = "cpu", output_axes: dict[str, dict[int, str]] | None = None) -> OnnxRunner:
    """Export (once, cached) and open ``module`` for ``backend`` ``"onnx"`` or ``"onnx-int8"``."""
    quantize = "int8" if backend == "onnx-int8" else None
    return OnnxRunner(exported(name, kind, module, inputs, output_names, quantize=quantize, output_axes=output_axes),
                      device)
