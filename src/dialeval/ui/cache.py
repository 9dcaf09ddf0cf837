"""The Space's module cache: each ``evaluate`` module (and so its model) loaded once per process, with
``compute`` calls on one metric serialised so that concurrent requests share models safely."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from dialeval.models.runtime import ModelCache

MAX_MODULES = 32  # evaluate modules kept (each is small; its model lives in dialeval.models.runtime.MODELS)
MAX_FAILURES = 256  # remembered load failures


class ModuleCache:
    """One ``evaluate`` module per (metric, config, load options) per process.

    Each metric name has one lock: loading happens once even when requests race, and ``compute`` calls
    on the same metric are serialised (an ``evaluate.Metric`` keeps per-call state). Different metrics
    still run in parallel. A model that failed to load is remembered with its reason.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[Any, ...], threading.Lock] = {}
        # Bounded: a client sending many model names must not grow the process (models: runtime.MODELS).
        self._modules: ModelCache = ModelCache(max_size=MAX_MODULES)
        self._failures: OrderedDict[tuple[str, str], str] = OrderedDict()

    @staticmethod
    def _key(name: str, config: str | None, options: dict[str, Any]) -> tuple[Any, ...]:
        return (name, config, tuple(sorted((k, repr(v)) for k, v in options.items())))

    def _lock(self, key: tuple[Any, ...]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def get(self, name: str, config: str | None = None, **options: Any) -> tuple[Any, threading.Lock]:
        """The loaded module for ``name`` with ``options`` (loaded on first use) and its metric's lock."""
        from dialeval.models.loading import load

        key = self._key(name, config, options)
        lock = self._lock((name,))
        module = self._modules.get(key, lambda: load(name, config, keep_in_memory=True, **options))
        return module, lock

    def compute(self, name: str, kwargs: dict[str, Any], config: str | None = None, **options: Any) -> dict[str, Any]:
        module, lock = self.get(name, config, **options)
        with lock:
            return module.compute(**kwargs)

    def record_failure(self, name: str, model: str, reason: str) -> None:
        with self._guard:
            self._failures[(name, model)] = reason
            while len(self._failures) > MAX_FAILURES:
                self._failures.popitem(last=False)

    def failure(self, name: str, model: str) -> str | None:
        with self._guard:
            return self._failures.get((name, model))

    def clear(self) -> None:
        with self._guard:
            self._modules.clear()
            self._locks.clear()
            self._failures.clear()


MODULES = ModuleCache()
