"""``dialeval.load(name)``: the evaluate module of a bare metric name, offline, from the installed package.

Metric scripts are package data (``dialeval/metrics/<name>/<name>.py``, found through the registry and
``importlib.resources``), so a wheel installed anywhere (a venv, ``pip install --target``, a Space)
loads them the same way a checkout does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialeval import registry


def __getattr__(name: str) -> Any:
    if name == "METRICS":  # computed on use: plugins may add metrics after import
        return registry.metric_names()
    raise AttributeError(name)


def metric_dir(name: str) -> Path:
    """Directory holding ``<name>.py`` (and its card) for a known metric name."""
    return registry.get(name).script_dir


def load(name: str, config_name: str | None = None, **kwargs: Any) -> Any:
    """Load the ``evaluate`` module for ``name`` (a declared metric name) without touching the network.

    Extra keyword arguments are the metric's options (fixed for every later ``compute``) or
    ``evaluate.load`` arguments such as ``num_process``/``process_id``/``experiment_id``.
    """
    import evaluate

    return evaluate.load(str(metric_dir(name)), config_name, **kwargs)
