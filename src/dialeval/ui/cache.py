"""The Space's module cache: each ``evaluate`` module (and so its model) loaded once per process, with
``compute`` calls on one metric serialised so that concurrent requests share models safely."""

from __future__ import annotations

import threading
from typing import Any


class ModuleCache:
    """One ``evaluate`` module per (metric, config, load options) per process.

    Each metric name has one lock: loading happens once even when requests race, and ``compute`` calls
    on the same metric are serialised (an ``evaluate.Metric`` keeps per-call state). Different metrics
    still run in parallel. A model that failed to load is remembered with its reason.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._modules: dict[tuple[Any, ...], Any] = {}
        self._failures: dict[tuple[str, str], str] = {}

    @staticmethod
    def _key(name: str, config: str | None, options: dict[str, Any]) -> tuple[Any, ...]:
        return (name, config, tuple(sorted((k, repr(v)) for k, v in options.items())))

    def _lock(self, key: tuple[Any, ...]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def get(self, name: str, config: str | None = None, **options: Any) -> tuple[Any, threading.Lock]:
        """The loaded module for ``name`` with ``options`` (loaded on first use) and its metric's lock."""
        from ..loading import load

        key = self._key(name, config, options)
        lock = self._lock((name,))
        with lock:
            module = self._modules.get(key)
            if module is None:
                module = load(name, config, keep_in_memory=True, **options)
                self._modules[key] = module
        return module, lock

    def compute(self, name: str, kwargs: dict[str, Any], config: str | None = None, **options: Any) -> dict[str, Any]:
        module, lock = self.get(name, config, **options)
        with lock:
            return module.compute(**kwargs)

    def record_failure(self, name: str, model: str, reason: str) -> None:
        with self._guard:
            self._failures[(name, model)] = reason

    def failure(self, name: str, model: str) -> str | None:
        with self._guard:
            return self._failures.get((name, model))

    def clear(self) -> None:
        with self._guard:
            self._modules.clear()
            self._locks.clear()
            self._failures.clear()


MODULES = ModuleCache()
