"""The Quality-weighted Vendi Score (Nguyen & Dieng, ICML 2024): the Vendi Score of a set times its mean quality.

For a response set x_1..x_n with the Vendi Score's kernel K (:mod:`.vendi`) and a non-negative quality
s(x_i) per response,

    qVS_q(x) = ( (1/n) Σ_i s(x_i) ) · VS_q(x),     VS_q(x) = exp(H_q(eig(K/n))),

the paper's definition (q = 1; the reference ``q_vendi.score`` passes its ``q`` to the Vendi Score as here):
an "effective quality sum", n · s for n orthogonal responses of equal quality s, s for n identical ones. The
quality term, higher = better and never negative (the paper's scores are in [0, 1]):

- ``qualities`` given: the user's per-response scores (finite, ≥ 0), used as they are;
- ``quality_metric="llm_judge"`` (default): (E[r] − 1) / 4 ∈ [0, 1], E[r] the judge's expected 1–5 rating;
- ``quality_metric="full_followup"``: FULL in nats, the mean NLL of the negative follow-ups (≥ 0; higher =
  the LM finds complaints after the response less likely = better).

The quality metric rates each response after its set's context (its ``turn`` config) or, without
``contexts``, alone as a one-turn conversation (its ``dialog`` config); it runs through its own declared core.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dialeval.io.signature import make_signature, parse_signature
from dialeval.io.validation import check_turns
from dialeval.models.encoders import BATCH_SIZE
from dialeval.registry import Adapter, response_sets
from dialeval.registry import get as get_declaration
from dialeval.similarity.kernels import check_sets
from dialeval.similarity.vendi import compute_vendi

#: Quality metrics and their map from the metric's per-response score to a quality ≥ 0 (higher = better).
QUALITY_TERMS: dict[str, Callable[[float], float]] = {
    "llm_judge": lambda rating: (rating - 1.0) / 4.0,  # expected 1–5 rating -> [0, 1]
    "full_followup": lambda nats: nats,  # mean NLL of negative follow-ups, nats >= 0
}

#: The largest quality accepted: far above any score scale (the paper's are in [0, 1], FULL's a few nats), and
#: small enough that a set's mean times its Vendi Score (≤ 10**6 responses) stays a finite float.
MAX_QUALITY = 1e12


def check_qualities(qualities: Any, sets: list[list[str]]) -> list[list[float]]:
    """``qualities[i][j]``: a finite number ≥ 0 for response j of set i (one list per set, aligned)."""
    if not isinstance(qualities, (list, tuple)) or len(qualities) != len(sets):
        got = f"{len(qualities)} lists" if isinstance(qualities, (list, tuple)) else type(qualities).__name__
        raise ValueError(f"`qualities` must be one list of scores per response set ({len(sets)}), got {got}.")
    out = []
    for i, (scores, responses) in enumerate(zip(qualities, sets)):
        if not isinstance(scores, (list, tuple)) or len(scores) != len(responses):
            raise ValueError(f"`qualities[{i}]` must hold one score per response of set {i} ({len(responses)}).")
        for j, s in enumerate(scores):
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or not \
                    0 <= s <= MAX_QUALITY:
                raise ValueError(f"`qualities[{i}][{j}]` is {s!r}; qVS needs a finite quality ≥ 0, at most "
                                 f"{MAX_QUALITY:g} (higher = better), e.g. map a rating r in 1..5 to (r − 1) / 4.")
        out.append([float(s) for s in scores])
    return out


def check_contexts(contexts: Any, sets: list[list[str]]) -> list[list[str]] | None:
    """One context per set: a string (one turn) or a list of turns; ``None``: responses rated alone."""
    if contexts is None:
        return None
    if not isinstance(contexts, (list, tuple)) or len(contexts) != len(sets):
        raise ValueError(f"`contexts` must hold one context per response set ({len(sets)}): a string or a list of "
                         "turns each, or None to rate the responses alone.")
    out = []
    for i, c in enumerate(contexts):
        if isinstance(c, str):
            if not c.strip():
                raise ValueError(f"`contexts[{i}]` is an empty string; give the context's text, or None for all "
                                 "contexts to rate the responses alone.")
            c = [c]
        out.append(check_turns(c, f"contexts[{i}]"))  # a dict, None or a non-string turn is refused by name
    return out


def metric_qualities(sets: list[list[str]], contexts: list[list[str]] | None, quality_metric: str,
                     options: dict[str, Any]) -> tuple[list[list[float]], str]:
    """Per-response qualities from ``quality_metric``'s core (every response of every set in one call), mapped
    by :data:`QUALITY_TERMS`, and that metric's signature."""
    core = get_declaration(quality_metric).core_function()
    if contexts is None:
        res = core(dialogues=[[r] for s in sets for r in s], config="dialog", **options)
    else:
        res = core([c for c, s in zip(contexts, sets) for _ in s], [r for s in sets for r in s], config="turn",
                   **options)
    term = QUALITY_TERMS[quality_metric]
    flat = [term(float(v)) for v in res["scores"]]
    if any(not math.isfinite(v) or v < 0 for v in flat):
        raise ValueError(f"{quality_metric} gave a quality < 0 or not finite; qVS needs qualities ≥ 0.")
    out, start = [], 0
    for s in sets:
        out.append(flat[start:start + len(s)])
        start += len(s)
    return out, res["signature"]


def quality_metric_options(quality_metric: Any, quality_model: Any, extra: Any, device: Any,
                           progress: bool | None) -> dict[str, Any]:
    """The quality metric's options: its model option = ``quality_model``, ``device`` and ``progress`` shared,
    then ``extra`` (a dict of its other options, e.g. ``{"quality": "fluency"}`` for the judge), each checked
    against the quality metric's declaration (a message names ``quality_options``, the value and what it takes)."""
    if quality_metric not in QUALITY_TERMS:
        raise ValueError(f"quality_metric={quality_metric!r}: use one of {sorted(QUALITY_TERMS)}, or pass your own "
                         "per-response qualities= (≥ 0).")
    decl = get_declaration(quality_metric)
    shared = {"device": "device", "progress": "progress",
              **({decl.model_option: "quality_model"} if decl.model_option else {})}
    takes = sorted(o.name for o in decl.options if o.name not in shared)
    if extra is not None and not isinstance(extra, dict):
        raise TypeError(f"quality_options={extra!r:.60} is {type(extra).__name__}; give a dict of {quality_metric}'s "
                        f"options (any of {takes}), e.g. {{'batch_size': 16}}, or None.")
    for key, value in (extra or {}).items():
        if key in shared:
            raise ValueError(f"quality_options[{key!r}]={value!r:.40}: give it as quality_vendi's {shared[key]}=, "
                             f"not inside quality_options (which takes {quality_metric}'s {takes}).")
        if key not in takes:
            raise ValueError(f"quality_options[{key!r}]={value!r:.40}: {quality_metric} has no option {key!r}; "
                             f"quality_options takes {takes}.")
        try:
            decl.option(key).check(value, quality_metric)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"quality_options[{key!r}]: {exc}") from None
    opts: dict[str, Any] = {"device": device, "progress": progress}
    if decl.model_option:
        opts[decl.model_option] = quality_model
    return {**opts, **(extra or {})}


def compute_quality_vendi(predictions: Any, contexts: Any = None, qualities: Any = None,
                          quality_metric: str = "llm_judge", quality_model: Any = None, quality_options: Any = None,
                          kernel: str = "embedding", q: Any = 1.0, n: Any = None, tokenizer: Any = "casual",
                          encoder: Any = None, device: Any = None, dtype: Any = None, batch_size: int = BATCH_SIZE,
                          progress: bool | None = None) -> dict[str, Any]:
    """qVS_q of each response set (``scores``), their mean (``quality_vendi``), each set's Vendi Score and mean
    quality, and a signature naming the kernel and the quality (the quality metric's own signature, or
    ``given``)."""
    sets = check_sets(predictions, min_size=1)
    ctxs = check_contexts(contexts, sets)
    quals = None if qualities is None else check_qualities(qualities, sets)
    opts = None if quals is not None else quality_metric_options(quality_metric, quality_model, quality_options,
                                                                 device, progress)
    vendi = compute_vendi(sets, kernel=kernel, q=q, n=n, tokenizer=tokenizer, encoder=encoder, device=device,
                          dtype=dtype, batch_size=batch_size, progress=progress)
    if quals is not None:
        return _result(vendi, quals, "given")
    quals, signature = metric_qualities(sets, ctxs, quality_metric, opts or {})
    return _result(vendi, quals, signature.rsplit("|version:", 1)[0])


def _result(vendi: dict[str, Any], quals: list[list[float]], qsig: str) -> dict[str, Any]:
    means = [math.fsum(s) / len(s) for s in quals]
    scores = [m * v for m, v in zip(means, vendi["scores"])]
    fields = {k: v for k, v in parse_signature(vendi["signature"]).items() if k not in ("metric", "version")}
    return {"quality_vendi": math.fsum(scores) / len(scores), "scores": scores, "vendi_scores": vendi["scores"],
            "mean_qualities": means, "kernel": vendi["kernel"], "q": vendi["q"], "num_sets": len(scores),
            "signature": make_signature("quality_vendi", **fields, quality=qsig)}


def quality_vendi_set_adapter(options: dict[str, Any], config: str) -> Adapter:
    """qVS on conTest/decTest rows: each row's response set, rated after the row's ``context``."""
    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        res = compute_quality_vendi(response_sets(rows), contexts=[r["context"] for r in rows], **options)
        return {"scores": res["scores"], "signature": res["signature"]}

    return score
