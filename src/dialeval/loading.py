"""``dialeval.load(name)``: the evaluate module of a bare metric name, offline, from a checkout or a wheel."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

METRICS = ("distinct_n", "ent_n", "low_frequency", "dialspk", "sem_ent", "nli_diversity", "full_followup")


def metric_search_path() -> list[Path]:
    """Where metric scripts are looked for: ``$DIALEVAL_METRICS_DIR``, the source checkout's ``metrics/``,
    then the wheel's data files (``<prefix>/share/dialeval/metrics``)."""
    paths = []
    if os.environ.get("DIALEVAL_METRICS_DIR"):
        paths.append(Path(os.environ["DIALEVAL_METRICS_DIR"]))
    paths.append(Path(__file__).resolve().parents[2] / "metrics")
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix, getattr(sys, "exec_prefix", sys.prefix)]):
        paths.append(Path(prefix) / "share" / "dialeval" / "metrics")
    return paths


def metric_dir(name: str) -> Path:
    """Directory holding ``<name>/<name>.py`` for a known metric name."""
    if not isinstance(name, str) or name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; known metrics: {', '.join(METRICS)}.")
    for root in metric_search_path():
        candidate = root / name
        if (candidate / f"{name}.py").is_file():
            return candidate
    raise FileNotFoundError(
        f"metric script {name}.py not found in {[str(p) for p in metric_search_path()]}; "
        "reinstall dialeval or set DIALEVAL_METRICS_DIR to a checkout's metrics/ folder."
    )


def load(name: str, config_name: str | None = None, **kwargs: Any) -> Any:
    """Load the ``evaluate`` module for ``name`` (e.g. ``"sem_ent"``) without touching the network.

    Extra keyword arguments are the metric's options (fixed for every later ``compute``) or
    ``evaluate.load`` arguments such as ``num_process``/``process_id``/``experiment_id``.
    """
    import evaluate

    return evaluate.load(str(metric_dir(name)), config_name, **kwargs)
