"""FULL as an ``evaluate`` module, configs ``turn`` and ``dialog`` (De Bruyn et al. 2022).

FULL = mean over negative follow-ups f ("Not really relevant here." …) of NLL(f | history): how unlikely a
language model finds complaints after a response (``turn``) or a whole conversation (``dialog``); higher =
better. ``compat="full-0.0.3"`` reproduces the ``full`` 0.0.3.1 package. The core is
:func:`dialeval.full.full_followup.compute_full`."""

from typing import Any

import datasets
import evaluate

# the base class is reached through its module: evaluate takes the script's first Metric subclass as the metric
from dialeval import evaluate_module
from dialeval.full.full_followup import CONFIGS, check_full_inputs, compute_full, full_histories
from dialeval.full.texts import check_follow_ups
from dialeval.io.validation import inputs_checked
from dialeval.metrics.full_followup import METRIC

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


class FullFollowup(evaluate_module.DialevalMetric):
    """FULL = mean over negative follow-ups f of NLL(f | history) (De Bruyn et al. 2022); higher = better."""

    DECLARATION = METRIC

    def _info(self) -> evaluate.MetricInfo:
        level = self.config_name if self.config_name in CONFIGS else "turn"
        return self.metric_info(_FEATURES[level], _INPUTS, _DESCRIPTION)

    @property
    def level(self) -> str:
        if self.config_name not in CONFIGS:
            raise ValueError(f"full_followup has configs {CONFIGS}; got {self.config_name!r}. "
                             "Use dialeval.load('full_followup', 'turn') or ('full_followup', 'dialog').")
        return self.config_name

    def _checked(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Item-level checks of the inputs given in this call (none given: ``add_batch`` filled the cache)."""
        names = ("contexts", "predictions", "dialogues")
        checked = check_full_inputs(self.level, *(kwargs.get(k) for k in names), required=False)
        kwargs.update({k: v for k, v in zip(names, checked) if v is not None})
        kwargs.pop("dialogues" if self.level == "turn" else "contexts", None)
        return kwargs

    def compute(self, **kwargs: Any) -> dict[str, Any] | None:
        """Validate inputs with item-level messages before ``evaluate`` converts them to Arrow. Without inputs,
        scores what ``add_batch`` collected (in ``num_process`` mode: process 0 returns every process's items,
        in process order, and the others return ``None``)."""
        with inputs_checked():  # item checks here; the one Unicode scan is the base class's, before Arrow
            kwargs = self._checked(kwargs)
        if kwargs.get("follow_ups") is not None:
            kwargs["follow_ups"] = list(check_follow_ups(kwargs["follow_ups"]))
        return super().compute(**kwargs)

    def add_batch(self, **kwargs: Any) -> None:
        """Add contexts and predictions (config ``turn``) or dialogues (``dialog``), checked item by item."""
        with inputs_checked():
            kwargs = self._checked(kwargs)
        return super().add_batch(**kwargs)

    def _compute(self, model: Any, follow_ups: Any, compat: str | None, separator: str | None,
                 max_length: int | None, lookback: int, batch_size: int, max_tokens: int | None, dtype: Any,
                 device: Any, backend: str | None, progress: bool | None, follow_up_prefix: str,
                 chat_template: bool, aggregation: str | None, contexts: Any = None, predictions: Any = None,
                 dialogues: Any = None) -> dict[str, Any]:
        # the inputs were checked once, by compute() or add_batch() (see _checked)
        return compute_full(full_histories(self.level, contexts, predictions, dialogues), level=self.level,
                            model=model, follow_ups=follow_ups, compat=compat, separator=separator,
                            max_length=max_length, lookback=lookback, batch_size=batch_size, max_tokens=max_tokens,
                            dtype=dtype, device=device, progress=progress, follow_up_prefix=follow_up_prefix,
                            chat_template=chat_template, aggregation=aggregation, backend=backend)
