"""``evaluate`` module for FULL (follow-up likelihood), configs ``turn`` and ``dialog``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import datasets
import evaluate

from ..full import (
    CITATION,
    FOLLOW_UPS,
    FULL_0_0_3_FOLLOW_UPS,
    PACKAGE_LOOKBACK,
    check_dialogues,
    check_follow_ups,
    check_turn_inputs,
)
from ..full_scorer import full_scores
from ..lm import load_lm
from ..metrics.full_followup import METRIC
from ..runtime import loaded_dtype
from ..signature import make_signature
from .base import DialevalMetric

CONFIGS = ("turn", "dialog")

_FEATURES = {
    "turn": datasets.Features({"contexts": datasets.Sequence(datasets.Value("string")),
                               "predictions": datasets.Value("string")}),
    "dialog": datasets.Features({"dialogues": datasets.Sequence(datasets.Value("string"))}),
}

_DESCRIPTION = """FULL (De Bruyn et al. 2022): how unlikely a language model finds negative follow-ups
("You're really boring.", ...) after a response (config `turn`) or a whole conversation (config `dialog`).
Default score: mean over follow-ups of the follow-up's mean per-token NLL (higher = better).
compat="full-0.0.3" reproduces the `full` 0.0.3.1 package (mean perplexity, its truncation and follow-ups)."""

_INPUTS = """turn:   contexts (list of lists of turns), predictions (list of responses, one per context)
dialog: dialogues (list of lists of turns)
options: model (Hub id or local path; None = offline SmolLM2-135M-Instruct), follow_ups, compat
(None or "full-0.0.3"), separator, max_length, lookback (compat), batch_size, max_tokens, dtype, device,
progress."""


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


class FullFollowupModule(DialevalMetric):
    """FULL = mean over negative follow-ups f of NLL(f | history) (De Bruyn et al. 2022); higher = better."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        level = self.config_name if self.config_name in CONFIGS else "turn"
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=CITATION,
            inputs_description=_INPUTS,
            features=_FEATURES[level],
            reference_urls=["https://github.com/maximedb/full", "https://pypi.org/project/full/"],
        )

    @property
    def level(self) -> str:
        if self.config_name not in CONFIGS:
            raise ValueError(f"full_followup has configs {CONFIGS}; got {self.config_name!r}. "
                             "Use dialeval.load('full_followup', 'turn') or ('full_followup', 'dialog').")
        return self.config_name

    def _checked(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Item-level checks of the inputs given in this call (none given: ``add_batch`` filled the cache)."""
        if self.level == "turn":
            if kwargs.get("dialogues") is not None:
                raise ValueError("config 'turn' takes contexts= and predictions=; for whole conversations load "
                                 "dialeval.load('full_followup', 'dialog') and pass dialogues=.")
            if kwargs.get("contexts") is not None or kwargs.get("predictions") is not None:
                kwargs["contexts"], kwargs["predictions"] = check_turn_inputs(kwargs.get("contexts"),
                                                                              kwargs.get("predictions"))
        else:
            if kwargs.get("predictions") is not None or kwargs.get("contexts") is not None:
                raise ValueError("config 'dialog' takes dialogues=; to rate responses load "
                                 "dialeval.load('full_followup', 'turn') and pass contexts= and predictions=.")
            if kwargs.get("dialogues") is not None:
                kwargs["dialogues"] = check_dialogues(kwargs["dialogues"])
        kwargs.pop("dialogues" if self.level == "turn" else "contexts", None)
        return kwargs

    def compute(self, **kwargs: Any) -> dict[str, Any] | None:
        """Validate inputs with item-level messages before ``evaluate`` converts them to Arrow. Without inputs,
        scores what ``add_batch`` collected (in ``num_process`` mode: process 0 returns every process's items,
        in process order, and the others return ``None``)."""
        kwargs = self._checked(kwargs)
        if kwargs.get("follow_ups") is not None:
            kwargs["follow_ups"] = list(check_follow_ups(kwargs["follow_ups"]))
        return super().compute(**kwargs)

    def add_batch(self, **kwargs: Any) -> None:
        """Add contexts and predictions (config ``turn``) or dialogues (``dialog``), checked item by item."""
        return super().add_batch(**self._checked(kwargs))

    def _compute(self, contexts: Any = None, predictions: Any = None, dialogues: Any = None,
                 **kwargs: Any) -> dict[str, Any]:
        # the inputs were checked once, by compute() or add_batch() (see _checked)
        if self.level == "turn":
            histories = [[*c, p] for c, p in zip(contexts, predictions)]
        else:
            histories = [list(d) for d in dialogues]
        return compute_full(histories, level=self.level, **self.options(kwargs))


def compute_full(histories: list[list[str]], *, level: str, model: Any = None, follow_ups: Any = None,
                 compat: str | None = None, separator: str | None = None, max_length: int | None = None,
                 lookback: int = PACKAGE_LOOKBACK, batch_size: int = 16, max_tokens: int | None = None,
                 dtype: Any = None, device: Any = None, progress: bool | None = None, follow_up_prefix: str = "",
                 chat_template: bool = False, aggregation: str | None = None) -> dict[str, Any]:
    """Load the LM (memoised), score, and attach the signature."""
    lm = load_lm(model, dtype=dtype, device=device)
    out = full_scores(histories, level=level, lm=lm, follow_ups=follow_ups, compat=compat, separator=separator,
                      max_length=max_length, lookback=lookback, batch_size=batch_size, max_tokens=max_tokens,
                      progress=progress, follow_up_prefix=follow_up_prefix, chat_template=chat_template,
                      aggregation=aggregation)
    separator, aggregation = out.pop("separator"), out.pop("aggregation")  # what ran: in the signature
    dtype_name = str(loaded_dtype(lm.model)).replace("torch.", "")  # what ran, never the option re-resolved
    fields: dict[str, Any] = {"model": lm.name, "kind": lm.kind, "level": level,
                              "fu": follow_up_set_name(follow_ups, compat), "dtype": dtype_name}
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
