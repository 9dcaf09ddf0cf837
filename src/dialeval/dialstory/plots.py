"""The DialSpk plot (its ``plot=``): DAC and SAC bars."""

from __future__ import annotations

from typing import Any

from dialeval.ui.plots import figure


def plot_dialspk(result: dict[str, Any]) -> Any:
    """DialSpk: DAC and SAC bars."""
    if not isinstance(result.get("dac"), (int, float)):
        return None
    fig = figure(3.4, 2.6)
    ax = fig.subplots()
    bars = ax.bar(["DAC", "SAC"], [result["dac"], result["sac"]], color=["#55a868", "#8172b3"])
    ax.bar_label(bars, fmt="%.3f")
    ax.set_ylim(0, 1.1)
    return fig
