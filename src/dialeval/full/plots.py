"""The FULL plot (its ``plot=``): the mean NLL of each negative follow-up."""

from __future__ import annotations

import math
from typing import Any

from dialeval.ui.plots import figure


def _full_followups(result: dict[str, Any]) -> dict[str, float]:
    """Follow-up → value (mean over the scored items) from a FULL result's ``follow_ups`` and
    ``follow_up_scores`` (one row per item, one value per follow-up)."""
    names = result.get("follow_ups")
    rows = result.get("follow_up_scores")
    if isinstance(names, list) and isinstance(rows, list) and rows:
        if not isinstance(rows[0], (list, tuple)):
            rows = [rows]
        cols = list(zip(*rows))
        if len(cols) == len(names):
            return {str(n): math.fsum(c) / len(c) for n, c in zip(names, cols)}
    return {}


def plot_full(result: dict[str, Any]) -> Any:
    """FULL: the mean NLL of each negative follow-up after the dialogue (higher = the complaints are
    less likely = better dialogue)."""
    values = _full_followups(result)
    if not values:
        return None
    fig = figure(6.0, 0.45 * len(values) + 1.2)
    ax = fig.subplots()
    names = list(values)
    bars = ax.barh(names, [values[n] for n in names], color="#dd8452")
    ax.bar_label(bars, fmt="%.3f", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("NLL of the follow-up (perplexity in compat mode)")
    ax.margins(x=0.15)
    score = result.get("full_followup")
    title = "FULL per follow-up\n(higher = the complaints are less likely = better)"
    ax.set_title(title if not isinstance(score, (int, float)) else f"FULL = {score:.4f}: {title}", fontsize=9,
                 wrap=True)
    return fig
