"""The one ONNX Runtime backend: which backend runs (``backend="torch"|"onnx"|"onnx-int8"``), export of a
torch module to ONNX once per weights, a disk cache beside the converted-model cache, and sessions.

- ``None``/``"auto"`` → ``"onnx"`` on CPU in fp32 when ``onnxruntime`` is installed (the ``onnx`` extra),
  else ``"torch"``; ``"torch"`` stays the reference everywhere and is the default on an accelerator.
- ``"onnx-int8"``: the fp32 graph with ``onnxruntime.quantization.quantize_dynamic`` (int8 weights, int8
  activations quantised per batch). Never a default: it moves numbers (its cost is in each metric's card).
- Export uses ``torch.onnx.export`` (the TorchScript exporter, opset :data:`OPSET`) with dynamic batch and
  sequence axes; the cache entry ``$DIALEVAL_CACHE/onnx/<slug>-<key>`` is keyed by what the graph depends
  on — the kind of graph, a SHA-256 of the weights, the torch / transformers / onnx versions, the opset and
  the quantisation — and written atomically (:func:`dialeval.files.atomic_directory`, ``source.json`` last).
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dialeval.files import atomic_directory
from dialeval.runtime import cache_dir

BACKENDS = ("torch", "onnx", "onnx-int8")
OPSET = 17
EXPORT_FORMAT = 1  # bump when the exported graphs change, so cached entries of older ones are not reused
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


def export_module(module: Any, inputs: dict[str, Any], output_names: Sequence[str], path: Path,
                  output_axes: dict[str, dict[int, str]] | None = None) -> None:
    """``torch.onnx.export`` of ``module(*inputs.values())`` (TorchScript exporter, opset :data:`OPSET`) with
    dynamic axes: batch and length of every 2-D or 3-D input (ids, masks, encoder states), batch and past length of every 4-D one (key/value
    caches), and ``output_axes`` (default: each output's batch axis)."""
    import torch

    names = list(inputs)
    axes: dict[str, dict[int, str]] = {}
    for k, v in inputs.items():
        axes[k] = {0: "batch", 1: f"{k}_length"} if v.ndim in (2, 3) else {0: "batch", 2: "past_length"}
    axes.update(output_axes or {o: {0: "batch"} for o in output_names})
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
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
    threads (default ``torch.get_num_threads()``), CUDA provider on a CUDA device."""
    import torch

    ort = import_onnxruntime()
    if ort is None:
        raise ValueError("the ONNX backend needs onnxruntime: `pip install dialeval[onnx]`, or use backend='torch'.")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads or torch.get_num_threads())
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
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


# --------------------------------------------------------------------------------------------------
# Causal LMs (FULL): a prefix graph returning the last position's logits and the key/value cache, and a
# continuation graph scoring tokens after a given cache — the history runs once per item, as on torch.
# --------------------------------------------------------------------------------------------------

def causal_modules(model: Any) -> tuple[Any, Any]:
    """(prefix, continuation, last-position continuation) modules of a transformers causal LM with a
    ``DynamicCache``."""
    import torch
    from transformers import DynamicCache

    layers = int(model.config.num_hidden_layers)

    class Prefix(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, position_ids: Any) -> Any:
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             use_cache=True, logits_to_keep=1)
            cache = getattr(out, "cache", None) or out.past_key_values
            return (out.logits[:, -1], *[t for layer in cache.layers for t in (layer.keys, layer.values)])

    class Continuation(torch.nn.Module):
        def __init__(self, last_only: bool = False) -> None:
            super().__init__()
            self.model = model
            self.keep = 1 if last_only else 0  # 1: only the last position's logits (the LLM judge)

        def forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, *past: Any) -> Any:
            cache = DynamicCache(config=self.model.config)
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            return self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                              cache=cache, use_cache=True, logits_to_keep=self.keep).logits

    return Prefix().eval(), Continuation().eval(), Continuation(last_only=True).eval()


class OnnxCausalLM:
    """A causal LM on ONNX Runtime: ``prefix(ids, mask, positions) -> (last logits, past)`` and
    ``continuation(ids, mask, positions, past) -> logits`` (numpy)."""

    def __init__(self, model: Any, name: str, backend: str, device: Any = "cpu") -> None:
        import torch

        prefix, cont, self._last_module = causal_modules(model)
        self._name, self._backend, self._device, self._last = name, backend, device, None
        ids = torch.tensor([[5, 6, 7], [0, 8, 9]])
        mask = torch.tensor([[1, 1, 1], [0, 1, 1]])
        sample = {"input_ids": ids, "attention_mask": mask, "position_ids": (mask.cumsum(-1) - 1).clamp(min=0)}
        layers = int(model.config.num_hidden_layers)
        self.past_names = [f"past_{i}_{kv}" for i in range(layers) for kv in ("key", "value")]
        kv_axes = {n: {0: "batch", 2: "past_length"} for n in self.past_names}
        self.prefix = onnx_runner(name, "causal-lm-prefix", prefix, sample, ["logits", *self.past_names],
                                  backend=backend, device=device, output_axes={"logits": {0: "batch"}, **kv_axes})
        with torch.no_grad():
            past = prefix(*sample.values())[1:]
        cont_sample = {"input_ids": ids[:, :2], "attention_mask": torch.cat([mask, mask[:, :2]], 1),
                       "position_ids": sample["position_ids"][:, :2] + 3, **dict(zip(self.past_names, past))}
        self._cont_sample = cont_sample
        self.continuation = onnx_runner(name, "causal-lm-continuation", cont, cont_sample, ["logits"],
                                        backend=backend, device=device,
                                        output_axes={"logits": {0: "batch", 1: "input_ids_length"}})

    def run_prefix(self, input_ids: Any, attention_mask: Any, position_ids: Any) -> tuple[np.ndarray, list[np.ndarray]]:
        out = self.prefix({"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids})
        return out[0], out[1:]

    def run_continuation(self, past: list[np.ndarray], repeats: int, input_ids: Any, attention_mask: Any,
                         position_ids: Any) -> np.ndarray:
        """Logits after ``past`` with each of its rows repeated ``repeats`` times (row b → b*repeats…)."""
        feed = {n: np.repeat(p, repeats, axis=0) for n, p in zip(self.past_names, past)}
        feed.update(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)
        return self.continuation(feed)[0]

    def run_continuation_last(self, past: list[np.ndarray], repeats: int, input_ids: Any, attention_mask: Any,
                              position_ids: Any) -> np.ndarray:
        """The last position's logits ``[batch, vocab]`` after ``past`` (rows repeated as in
        :meth:`run_continuation`); its graph is exported on first use."""
        if self._last is None:
            self._last = onnx_runner(self._name, "causal-lm-continuation-last", self._last_module, self._cont_sample,
                                     ["logits"], backend=self._backend, device=self._device,
                                     output_axes={"logits": {0: "batch"}})
        feed = {n: np.repeat(p, repeats, axis=0) for n, p in zip(self.past_names, past)}
        feed.update(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)
        return self._last(feed)[0][:, -1]


# --------------------------------------------------------------------------------------------------
# Seq2seq LMs (FULL with BlenderBot, BART, T5): an encoder graph, and a decoder graph scoring whole
# teacher-forced follow-ups against the encoder's states (no key/value cache: the follow-ups are short).
# --------------------------------------------------------------------------------------------------

def seq2seq_modules(model: Any) -> tuple[Any, Any]:
    """(encoder, decoder) modules of a transformers encoder-decoder LM: ``encoder(ids, mask) -> states`` and
    ``decoder(decoder_ids, states, mask) -> logits`` (the LM head and any final logits bias included)."""
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    class Decoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, decoder_input_ids: Any, encoder_hidden_states: Any, attention_mask: Any) -> Any:
            return self.model(encoder_outputs=BaseModelOutput(last_hidden_state=encoder_hidden_states),
                              attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                              use_cache=False).logits

    return Encoder().eval(), Decoder().eval()


class OnnxSeq2SeqLM:
    """An encoder-decoder LM on ONNX Runtime: ``encode(ids, mask) -> states`` and
    ``decode(decoder_ids, states, mask) -> logits`` (numpy)."""

    def __init__(self, model: Any, name: str, backend: str, device: Any = "cpu") -> None:
        import torch

        encoder, decoder = seq2seq_modules(model)
        ids, mask = torch.tensor([[5, 6, 7], [8, 9, 1]]), torch.tensor([[1, 1, 1], [1, 1, 0]])
        self.encoder = onnx_runner(name, "seq2seq-encoder", encoder, {"input_ids": ids, "attention_mask": mask},
                                   ["last_hidden_state"], backend=backend, device=device,
                                   output_axes={"last_hidden_state": {0: "batch", 1: "input_ids_length"}})
        with torch.no_grad():
            states = encoder(ids, mask)
        sample = {"decoder_input_ids": torch.tensor([[2, 5], [2, 6]]), "encoder_hidden_states": states,
                  "attention_mask": mask}
        self.decoder = onnx_runner(name, "seq2seq-decoder", decoder, sample, ["logits"], backend=backend,
                                   device=device, output_axes={"logits": {0: "batch", 1: "decoder_input_ids_length"}})

    def encode(self, input_ids: Any, attention_mask: Any) -> np.ndarray:
        return self.encoder({"input_ids": input_ids, "attention_mask": attention_mask})[0]

    def decode(self, decoder_input_ids: Any, encoder_hidden_states: Any, attention_mask: Any) -> np.ndarray:
        return self.decoder({"decoder_input_ids": decoder_input_ids, "encoder_hidden_states": encoder_hidden_states,
                             "attention_mask": attention_mask})[0]
