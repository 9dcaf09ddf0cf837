"""Shared base for dialeval's ``evaluate`` modules: default options given at load time, merged per call."""

from __future__ import annotations

from typing import Any, ClassVar

import evaluate


class DialevalMetric(evaluate.Metric):
    """An ``evaluate.Metric`` whose compute options can also be fixed at load time.

    ``dialeval.load("distinct_n", tokenizer="char")`` fixes ``tokenizer`` for every later ``compute``;
    a ``compute(..., tokenizer=...)`` still overrides it. Unknown option names are an error at load time.
    ``OPTIONS`` maps each option to its default.
    """

    OPTIONS: ClassVar[dict[str, Any]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.defaults: dict[str, Any] = dict(self.OPTIONS)
        for key in list(kwargs):
            if key in self.OPTIONS:
                self.defaults[key] = kwargs.pop(key)
        unknown = [k for k in kwargs if k not in _EVALUATE_INIT_ARGS]
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unknown option(s) {unknown}; known options: {sorted(self.OPTIONS)}."
            )
        super().__init__(*args, **kwargs)

    def options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Load-time defaults overridden by this call's options; unknown names are ignored so that
        ``evaluate.combine`` can pass one set of options to several modules."""
        out = dict(self.defaults)
        out.update({k: v for k, v in kwargs.items() if k in self.OPTIONS})
        return out


_EVALUATE_INIT_ARGS = {
    "config_name", "keep_in_memory", "cache_dir", "num_process", "process_id", "seed", "experiment_id",
    "hash", "max_concurrent_cache_files", "timeout",
}
