"""The lexical metrics' plots (their ``plot=``): each score against its n-gram order."""

from __future__ import annotations

from typing import Any

from dialeval.ui.plots import plot_orders


def plot_distinct(result: dict[str, Any]) -> Any:
    """Dist-n against n."""
    return plot_orders(result, "distinct_", "Dist-n")


def plot_entropy(result: dict[str, Any]) -> Any:
    """Ent-n (bits) against n."""
    return plot_orders(result, "ent_", "Ent-n (bits)")
