"""Generic plotting helpers of the UI (matplotlib ``Figure`` objects, no pyplot global state: safe across
request threads) and the plot panels. Each metric's own plot lives in its family's core (``plot=`` in its
declaration) and takes one ``compute`` result, returning a Figure or ``None`` with nothing to draw."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dialeval.registry import MetricDeclaration

if TYPE_CHECKING:
    from dialeval.ui.scoring import MetricOutcome


def figure(width: float = 6.0, height: float = 3.2) -> Any:
    """A matplotlib ``Figure`` (Agg, constrained layout), outside pyplot's global state."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def plot_orders(result: dict[str, Any], prefix: str, label: str) -> Any:
    """Bars of the scores ``<prefix><n>`` of ``result`` against the order ``n`` (``None`` without any)."""
    pairs = sorted((int(k[len(prefix):]), v) for k, v in (result or {}).items()
                   if k.startswith(prefix) and k[len(prefix):].isdigit() and isinstance(v, (int, float)))
    if not pairs:
        return None
    fig = figure(3.7, 3.0)
    ax = fig.subplots()
    ns, values = zip(*pairs)
    bars = ax.bar([str(n) for n in ns], values, color="#4c72b0")
    ax.bar_label(bars, fmt="%.3f", fontsize=8)
    ax.set_xlabel("n")
    ax.set_ylabel(label)
    ax.set_title(label)
    ax.margins(y=0.15)
    return fig


def draw(decl: MetricDeclaration, result: dict[str, Any] | None) -> Any:
    """The declaration's plot of ``result`` (a Figure), or ``None`` when it has no plot or nothing to draw."""
    plot = decl.plot_function()
    return plot(result) if plot is not None and result else None


def plot_panel(decl: MetricDeclaration, outcome: MetricOutcome | None, enabled: bool = True,
               available: bool = True) -> Any:
    """A ``gr.Plot`` update for ``decl``'s panel: its figure, or an empty panel whose label says why
    (every panel is relabelled, so a label from an earlier request never sticks). ``available=False``: the
    metric cannot run here (its checkbox is disabled), so the label does not ask to tick it."""
    import gradio as gr

    figure, why = None, "plots off (tick Draw plots)"
    if outcome is None:
        why = "not run (tick it to compute)" if available else "unavailable here (the note under its checkbox says why)"
    elif outcome.status != "ok":
        why = f"not drawn: {outcome.status}"
    elif enabled:
        figure = draw(decl, outcome.result)
        why = "nothing to draw for this result"
    return gr.Plot(value=figure, label=decl.title if figure is not None else f"{decl.title}: {why}")
