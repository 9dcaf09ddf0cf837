"""Language models on ONNX Runtime (FULL, the LLM judge): the exported graphs of causal and seq2seq LMs and
their runners, over :mod:`dialeval.models.onnx_backend`'s export cache and sessions."""

from __future__ import annotations

from typing import Any

import numpy as np

from dialeval.models import cpu
from dialeval.models.onnx_backend import OnnxRunner, onnx_runner


def cache_tensors(cache: Any) -> list[Any]:
    """A transformers cache's per-layer tensors: layer 0's keys, its values, layer 1's keys, ... (the order these
    graphs take and return them in, and :func:`dialeval.models.lm.cache_of_rows` reads)."""
    return [t for layer in cache.layers for t in (layer.keys, layer.values)]


# --------------------------------------------------------------------------------------------------
# Causal LMs (FULL, the LLM judge): a prefix graph returning the last position's logits and the key/value cache,
# and graphs running tokens after a given cache — the history runs once per item, as on torch.
# --------------------------------------------------------------------------------------------------

def causal_modules(model: Any) -> tuple[Any, Any]:
    """(prefix, continuation, last-position continuation, extension) modules of a transformers causal LM
    with a ``DynamicCache``; the continuation returns every position's logits (FULL's ``packed`` graph under a 4-D
    mask), the extension the last position's logits and the grown cache."""
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
            return (out.logits[:, -1], *cache_tensors(cache))

    class Continuation(torch.nn.Module):
        def __init__(self, mode: str = "all") -> None:
            super().__init__()
            self.model = model
            self.mode = mode  # "all" logits; "last": the last position's (the LLM judge); "extend": those and the cache

        def forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, *past: Any) -> Any:
            cache = DynamicCache(config=self.model.config)
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             cache=cache, use_cache=True, logits_to_keep=0 if self.mode == "all" else 1)
            if self.mode != "extend":
                return out.logits
            cache = getattr(out, "cache", None) or out.past_key_values
            return (out.logits[:, -1], *cache_tensors(cache))

    return Prefix().eval(), Continuation().eval(), Continuation("last").eval(), Continuation("extend").eval()


#: A pass whose rows each attend over more than this many cells (query tokens × (past + query) keys) runs on
#: the torch model the graphs were exported from: ONNX Runtime's exported attention writes every score out,
#: torch's fused attention does not, so long rows can run faster there (``benchmarks/lm_attention_route.py``; on
#: amx torch led from 117,900 cells per row, 1.08×).
DEFAULT_TORCH_ATTENTION_CELLS = 100_000
#: Per CPU kind, where the benchmark put the crossover elsewhere (``docs/results/benchmarks/lm_attention_route.
#: <kind>.json``). avx2: ONNX Runtime led every pass up to 262,144 cells per row (torch 0.96× at 117,900 and 262,144)
#: and torch led at 1,093,000 (1.03×); the crossover between those sizes is not measured. avx512-bf16: torch, with
#: its fp32 products through oneDNN and its attention in query blocks, was slower on every pass measured (0.47–0.98×,
#: up to 1,093,000 cells), so ``None``: ONNX Runtime runs every pass.
TORCH_ATTENTION_CELLS_BY_KIND: dict[str, int | None] = {"avx2": 1_000_000, "avx512-bf16": None}
#: An override of both (tests set it); ``None`` reads the CPU kind.
TORCH_ATTENTION_CELLS: int | None = None


def torch_attention_cells(kind: str | None = None) -> int | None:
    """The cells per row above which a pass runs on torch on CPU kind ``kind`` (default: this machine's, read at
    each call), ``None`` when every pass stays on ONNX Runtime; :data:`TORCH_ATTENTION_CELLS` overrides it."""
    if TORCH_ATTENTION_CELLS is not None:
        return TORCH_ATTENTION_CELLS
    name = kind if kind is not None else cpu.cpu_kind().name
    return TORCH_ATTENTION_CELLS_BY_KIND.get(name, DEFAULT_TORCH_ATTENTION_CELLS)


class OnnxCausalLM:
    """A causal LM on ONNX Runtime: ``prefix(ids, mask, positions) -> (last logits, past)``, and after a ``past``
    the ``last``, ``extend`` and ``packed`` graphs (numpy; each exported on first use). In fp32, a pass over long rows
    (:func:`torch_attention_cells`) runs the same module on torch instead, numpy in and out."""

    def __init__(self, model: Any, name: str, backend: str, device: Any = "cpu") -> None:
        import torch

        prefix, cont, *lazy = causal_modules(model)
        self._name, self._backend, self._device = name, backend, device
        # every graph's torch module; its ONNX Runtime session in _runners (last, extend, packed: on first use)
        self._modules: dict[str, Any] = dict(zip(("prefix", "last", "extend", "packed"), (prefix, *lazy, cont)))
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
        self._runners: dict[str, OnnxRunner] = {"prefix": self.prefix}

    def engine(self, width: int, past: int = 0) -> str:
        """``"torch"`` for a pass of ``width`` new tokens per row after ``past`` cached ones whose rows attend over
        more than :func:`torch_attention_cells` cells (fp32 graphs only), else ``"onnxruntime"``."""
        limit = torch_attention_cells()
        long = limit is not None and width * (past + width) > limit
        return "torch" if self._backend == "onnx" and long else "onnxruntime"

    def run(self, mode: str, feed: dict[str, Any], engine: str | None = None) -> list[np.ndarray]:
        """Graph ``mode``'s outputs (``"prefix"``, ``"last"``, ``"extend"``, ``"packed"``)
        for ``feed``, on ``engine`` (``None``: :meth:`engine`'s choice), numpy in and out."""
        if engine is None:
            past = np.shape(feed[self.past_names[0]])[2] if self.past_names[0] in feed else 0
            engine = self.engine(np.shape(feed["input_ids"])[1], past)
        if engine == "torch":
            return self._run_torch(mode, feed)
        return self._graph(mode)(feed)

    def _run_torch(self, mode: str, feed: dict[str, Any]) -> list[np.ndarray]:
        import torch

        names = ["input_ids", "attention_mask", "position_ids", *(self.past_names if mode != "prefix" else ())]
        args = [torch.from_numpy(np.require(feed[n], requirements=["C", "W"])) for n in names]
        with torch.inference_mode():
            out = self._modules[mode](*args)
        return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]

    def run_prefix(self, input_ids: Any, attention_mask: Any, position_ids: Any) -> tuple[np.ndarray, list[np.ndarray]]:
        out = self.run("prefix", {"input_ids": input_ids, "attention_mask": attention_mask,
                                   "position_ids": position_ids})
        return out[0], out[1:]

    def _graph(self, mode: str) -> OnnxRunner:
        """Graph ``mode``'s session; the ``last``, ``extend`` and ``packed`` graphs are exported on first use."""
        graph = self._runners.get(mode)
        if graph is None:
            import torch

            present = [n.replace("past", "present") for n in self.past_names] if mode == "extend" else []
            axes = {"logits": {0: "batch", 1: "input_ids_length"} if mode == "packed" else {0: "batch"},
                    **{n: {0: "batch", 2: "total_length"} for n in present}}
            sample = dict(self._cont_sample)
            if mode == "packed":  # a 4-D additive mask [batch, 1, query, past + query]
                seen = sample.pop("attention_mask").bool()[:, None, None, :].expand(-1, 1, 2, -1).clone()
                seen[:, :, 0, -1] = False
                sample = {"input_ids": sample.pop("input_ids"), "attention_mask": torch.zeros(seen.shape).masked_fill(
                    ~seen, torch.finfo(torch.float32).min), **sample}
            kind = {"last": "causal-lm-continuation-last", "extend": "causal-lm-extension",
                    "packed": "causal-lm-packed-continuation"}[mode]
            graph = self._runners[mode] = onnx_runner(self._name, kind, self._modules[mode], sample,
                                                      ["logits", *present], backend=self._backend,
                                                      device=self._device, output_axes=axes)
        return graph

    def export_graphs(self, modes: tuple[str, ...] = ("last", "packed")) -> None:
        """Export (or open from the cache) the graphs that are otherwise exported on first use: the judge's
        ``last`` and FULL's ``packed`` (``dialeval demo`` does this before it serves)."""
        for mode in modes:
            self._graph(mode)

    def run_packed(self, past: list[np.ndarray], input_ids: Any, mask: Any, position_ids: Any) -> np.ndarray:
        """Logits of ``input_ids`` after ``past`` under a 4-D additive ``mask`` ``[batch, 1, query, past + query]``
        (FULL's follow-up rows after a cached history, :func:`dialeval.full.hosted.hosted_followup_nll`)."""
        feed = dict(zip(self.past_names, past))
        feed.update(input_ids=input_ids, attention_mask=mask, position_ids=position_ids)
        return self.run("packed", feed)[0]

    def run_last_after_rows(self, past: list[np.ndarray], rows: np.ndarray, input_ids: Any, attention_mask: Any,
                            position_ids: Any) -> np.ndarray:
        """The last position's logits ``[batch, vocab]`` of ``input_ids`` after row ``rows[r]`` of ``past``: what
        :meth:`run_extension` gives without writing the grown cache out (a scorer that reads only the last logits)."""
        feed = {n: np.take(p, rows, axis=0) for n, p in zip(self.past_names, past)}
        feed.update(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)
        return self.run("last", feed)[0][:, -1]

    def run_extension(self, past: list[np.ndarray], rows: np.ndarray, input_ids: Any, attention_mask: Any,
                      position_ids: Any) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(last logits, grown past)`` of ``input_ids`` after row ``rows[r]`` of ``past`` (a shared prefix)."""
        feed = {n: np.take(p, rows, axis=0) for n, p in zip(self.past_names, past)}
        feed.update(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)
        out = self.run("extend", feed)
        return out[0], out[1:]


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
