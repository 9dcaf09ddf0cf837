"""The Sem-Ent plot (its ``plot=``): the responses' cluster distribution beside the references'."""

from __future__ import annotations

from typing import Any

from dialeval.ui.plots import figure


def plot_sem_ent(result: dict[str, Any]) -> Any:
    """Sem-Ent: the responses' cluster distribution beside the reference responses' distribution."""
    dist = result.get("cluster_distribution")
    ref = result.get("reference_distribution")
    if not dist:
        return None
    panels = [("responses", dist, "#4c72b0")] + ([("reference", ref, "#999999")] if ref else [])
    fig = figure(3.3 * len(panels) + 0.4, 3.0)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (title, values, color) in zip(axes, panels):
        ax.bar(range(len(values)), values, color=color, width=0.85)
        ax.set_title(f"{title} cluster distribution", fontsize=9)
        ax.set_xlabel("semantic cluster")
    axes[0].set_ylabel("share of responses")
    ent = result.get("sem_ent")
    if isinstance(ent, (int, float)):
        fig.suptitle(f"Sem-Ent = {ent + 0.0:.4f}" + (f" (max {result['max_sem_ent']:.4f})"
                                              if isinstance(result.get("max_sem_ent"), (int, float)) else ""),
                     fontsize=10)
    return fig
