"""FULL's core (De Bruyn et al. 2022), evaluate-free: load the LM (memoised), score histories, attach the
signature. Inputs are checked by :mod:`dialeval.full.texts`; the model side is :mod:`dialeval.full.scorer`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dialeval.full.scorer import full_scores
from dialeval.full.texts import (
    FOLLOW_UPS,
    FULL_0_0_3_FOLLOW_UPS,
    PACKAGE_LOOKBACK,
    check_follow_ups,
)
from dialeval.io.signature import make_signature
from dialeval.io.validation import check_dialogues, check_turn_inputs
from dialeval.models.lm import load_lm
from dialeval.models.runtime import loaded_dtype
from dialeval.registry import Adapter
from dialeval.registry import get as get_declaration

CONFIGS = ("turn", "dialog")


def follow_up_set_name(follow_ups: Any, compat: str | None) -> str:
    """``paper5``, ``full-0.0.3`` or ``custom:<sha256[:8]>`` of the follow-up list, for signatures."""
    if follow_ups is None:
        return "full-0.0.3" if compat else "paper5"
    fus = tuple(follow_ups)
    if fus == FOLLOW_UPS:
        return "paper5"
    if fus == FULL_0_0_3_FOLLOW_UPS:
        return "full-0.0.3"
    return "custom:" + hashlib.sha256(json.dumps(list(fus)).encode()).hexdigest()[:8]


_SEPARATOR_NAMES = {" ": "space", "\n": "\\n", "\t": "\\t", "": "none"}


def separator_name(separator: str) -> str:
    """The separator as a signature shows it: ``space``, ``\\n``, ``\\t``, ``none``, else JSON-quoted."""
    return _SEPARATOR_NAMES.get(separator, json.dumps(separator))


def compute_full(histories: list[list[str]], *, level: str, model: Any = None, follow_ups: Any = None,
                 compat: str | None = None, separator: str | None = None, max_length: int | None = None,
                 lookback: int = PACKAGE_LOOKBACK, batch_size: int = 16, max_tokens: int | None = None,
                 dtype: Any = None, device: Any = None, progress: bool | None = None, follow_up_prefix: str = "",
                 chat_template: bool = False, aggregation: str | None = None,
                 backend: str | None = None) -> dict[str, Any]:
    """Load the LM (memoised; ``backend=None`` is ONNX Runtime on CPU in fp32 when installed), score, and
    attach the signature."""
    lm = load_lm(model, dtype=dtype, device=device, backend=backend)
    out = full_scores(histories, level=level, lm=lm, follow_ups=follow_ups, compat=compat, separator=separator,
                      max_length=max_length, lookback=lookback, batch_size=batch_size, max_tokens=max_tokens,
                      progress=progress, follow_up_prefix=follow_up_prefix, chat_template=chat_template,
                      aggregation=aggregation)
    separator, aggregation = out.pop("separator"), out.pop("aggregation")  # what ran: in the signature
    dtype_name = str(loaded_dtype(lm.model)).replace("torch.", "")  # what ran, never the option re-resolved
    fields: dict[str, Any] = {"model": lm.name, "kind": lm.kind, "level": level,
                              "fu": follow_up_set_name(follow_ups, compat), "dtype": dtype_name,
                              "backend": lm.backend}
    if compat:
        fields.update(compat=compat, lookback=lookback, agg="mean_ppl")
    else:
        fields.update(sep=separator_name(separator), max_len=out["max_length"], agg=f"{aggregation}_nll")
        if follow_up_prefix:  # formulation fields appear only when they differ from the default
            fields["fu_prefix"] = json.dumps(follow_up_prefix)[1:-1]
        if chat_template:
            fields["chat"] = "template"
    out["signature"] = make_signature("full_followup", **fields)
    return out


def check_full_inputs(level: str, contexts: Any = None, predictions: Any = None, dialogues: Any = None, *,
                      required: bool = True) -> tuple[Any, Any, Any]:
    """Item-level checks of FULL's inputs for ``level`` (config ``turn``: ``contexts`` + ``predictions``;
    ``dialog``: ``dialogues``); with ``required=False`` inputs not given (``add_batch`` collected them) pass."""
    if level == "turn":
        if dialogues is not None:
            raise ValueError("config 'turn' takes contexts= and predictions=; for whole conversations use config "
                             "'dialog' (dialeval.load('full_followup', 'dialog')) with dialogues=.")
        if required or contexts is not None or predictions is not None:
            contexts, predictions = check_turn_inputs(contexts, predictions)
    else:
        if contexts is not None or predictions is not None:
            raise ValueError("config 'dialog' takes dialogues=; to rate responses use config 'turn' "
                             "(dialeval.load('full_followup', 'turn')) with contexts= and predictions=.")
        if required or dialogues is not None:
            dialogues = check_dialogues(dialogues)
    return contexts, predictions, dialogues


def full_histories(level: str, contexts: Any = None, predictions: Any = None, dialogues: Any = None) -> list[list[str]]:
    """The texts FULL conditions on, from checked inputs: each context plus its response (``turn``) or each
    dialogue (``dialog``)."""
    if level == "turn":
        return [[*c, p] for c, p in zip(contexts, predictions)]
    return [list(d) for d in dialogues]


def compute_full_inputs(contexts: Any = None, predictions: Any = None, dialogues: Any = None, *,
                        config: str = CONFIGS[0], **options: Any) -> dict[str, Any]:
    """FULL from ``compute``-style inputs: ``contexts`` + ``predictions`` (config ``turn``: each response after
    its context) or ``dialogues`` (config ``dialog``), checked here, then :func:`compute_full`."""
    if config not in CONFIGS:
        raise ValueError(f"full_followup has configs {CONFIGS}; got {config!r}.")
    inputs = check_full_inputs(config, contexts, predictions, dialogues)
    if options.get("follow_ups") is not None:
        options["follow_ups"] = list(check_follow_ups(options["follow_ups"]))
    return compute_full(full_histories(config, *inputs), level=config, **options)


# -- meta-evaluation adapter (declared as ``meta_adapter``): FED rows → per-item FULL scores -------------

def _turn_texts(turns: list[Any], speaker_prefix: bool) -> list[str]:
    """Turn texts of a FED context (``{"speaker", "text"}`` turns) or a DailyDialog++ one (plain strings)."""
    return [t if isinstance(t, str) else f"{t['speaker']}: {t['text']}" if speaker_prefix else t["text"] for t in turns]


def full_fed_adapter(options: dict[str, Any], config: str) -> Adapter:
    """FULL on FED rows (``config`` = the level, turn or dialog; speakers stripped unless ``speaker_prefix=True``),
    on DailyDialog++ rows (config ``default``: turn level, the context plus one response) and on the other
    quality datasets' rows (``config`` = the level the meta-evaluation passes; context turns are strings). A
    turn-level row without context (Holistic's fluency set) is scored as the one-turn history of its response."""
    level = "turn" if config == "default" else config
    opts = dict(options)
    prefix = opts.pop("speaker_prefix", False)
    if not isinstance(prefix, bool):
        raise ValueError(f"speaker_prefix={prefix!r}: use true (the old 'User: '/'System: ' texts) or false "
                         "(default: the FULL paper's protocol, speakers stripped).")
    known = {o.name for o in get_declaration("full_followup").options}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; known: {sorted(known)} and speaker_prefix.")
    if opts.get("follow_ups") is not None:
        opts["follow_ups"] = list(check_follow_ups(opts["follow_ups"]))

    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        if level == "turn" and rows and all(not r["context"] for r in rows):
            dialogues = check_full_inputs("dialog", dialogues=[[r["response"]] for r in rows])[2]
            res = compute_full(full_histories("dialog", dialogues=dialogues), level="dialog", **opts)
            return {"scores": list(res["scores"]), "signature": res.get("signature")}
        if level == "turn":
            inputs = check_full_inputs(level, [_turn_texts(r["context"], prefix) for r in rows],
                                       [f"{r['response_speaker']}: {r['response']}" if prefix and "response_speaker" in r
                                        else r["response"] for r in rows])
        else:
            inputs = check_full_inputs(level, dialogues=[_turn_texts(r["context"], prefix) for r in rows])
        res = compute_full(full_histories(level, *inputs), level=level, **opts)
        return {"scores": list(res["scores"]), "signature": res.get("signature")}

    return score

