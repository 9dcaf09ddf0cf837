"""Plots of metric results (matplotlib ``Figure`` objects, no pyplot global state: safe across request
threads). Each ``plot_*`` takes one ``compute`` result and returns a Figure, or ``None`` with nothing to draw."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dialeval.registry import MetricDeclaration

if TYPE_CHECKING:
    from dialeval.ui.scoring import MetricOutcome


def _figure(width: float = 6.0, height: float = 3.2) -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def plot_lexical(results: dict[str, dict[str, Any]]) -> Any:
    """Dist-n and Ent-n against n, side by side (from ``distinct_n`` / ``ent_n`` results)."""
    panels = []
    for metric, prefix, ylabel in (("distinct_n", "distinct_", "Dist-n"), ("ent_n", "ent_", "Ent-n (bits)")):
        res = results.get(metric) or {}
        pairs = sorted((int(k[len(prefix):]), v) for k, v in res.items()
                       if k.startswith(prefix) and k[len(prefix):].isdigit() and isinstance(v, (int, float)))
        if pairs:
            panels.append((ylabel, pairs))
    if not panels:
        return None
    fig = _figure(3.2 * len(panels) + 0.5, 3.0)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (ylabel, pairs) in zip(axes, panels):
        ns, values = zip(*pairs)
        bars = ax.bar([str(n) for n in ns], values, color="#4c72b0")
        ax.bar_label(bars, fmt="%.3f", fontsize=8)
        ax.set_xlabel("n")
        ax.set_ylabel(ylabel)
        ax.set_title(ylabel)
        ax.margins(y=0.15)
    return fig


def plot_sem_ent(result: dict[str, Any]) -> Any:
    """Sem-Ent: the responses' cluster distribution beside the reference responses' distribution."""
    dist = result.get("cluster_distribution")
    ref = result.get("reference_distribution")
    if not dist:
        return None
    panels = [("responses", dist, "#4c72b0")] + ([("reference", ref, "#999999")] if ref else [])
    fig = _figure(3.3 * len(panels) + 0.4, 3.0)
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


NLI_MATRIX_KEYS = ("probabilities", "pair_matrices", "pair_probabilities")


def _nli_matrices(result: dict[str, Any]) -> list[Any]:
    import numpy as np

    for key in NLI_MATRIX_KEYS:
        mats = result.get(key)
        if mats:
            out = []
            for m in mats:
                if isinstance(m, dict):  # {"contradiction": n×n, ...}, None on the diagonal
                    c = np.array(m.get("contradiction", 0.0), dtype=float)
                    e = np.array(m.get("entailment", 0.0), dtype=float)
                    out.append(c - e)
                else:
                    a = np.asarray(m, dtype=float)
                    if a.ndim == 3:  # (n, n, 3) class probabilities in (c, n, e) order
                        a = a[..., 0] - a[..., 2]
                    out.append(a)
            return out
    return []


def plot_nli(result: dict[str, Any], max_sets: int = 6) -> Any:
    """NLI Diversity: one heatmap per response set of P(contradiction) − P(entailment) for each ordered
    pair (premise row, hypothesis column); +1 = contradicts (diverse), −1 = entails (redundant)."""
    mats = _nli_matrices(result)[:max_sets]
    if not mats:
        return None
    fig = _figure(2.6 * len(mats) + 0.9, 2.8)
    axes = fig.subplots(1, len(mats), squeeze=False)[0]
    scores = result.get("scores") or []
    image = None
    for i, (ax, m) in enumerate(zip(axes, mats)):
        image = ax.imshow(m, vmin=-1, vmax=1, cmap="coolwarm")
        title = f"set {i + 1}"
        if i < len(scores) and isinstance(scores[i], (int, float)):
            title += f"\nscore {scores[i]:.3f}"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("hypothesis")
        ax.set_ylabel("premise")
        ax.set_xticks(range(len(m)))
        ax.set_yticks(range(len(m)))
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="P(contr.) − P(entail.)")
    return fig


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
    fig = _figure(6.0, 0.45 * len(values) + 1.2)
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


def plot_dialspk(result: dict[str, Any]) -> Any:
    """DialSpk: DAC and SAC bars."""
    if not isinstance(result.get("dac"), (int, float)):
        return None
    fig = _figure(3.4, 2.6)
    ax = fig.subplots()
    bars = ax.bar(["DAC", "SAC"], [result["dac"], result["sac"]], color=["#55a868", "#8172b3"])
    ax.bar_label(bars, fmt="%.3f")
    ax.set_ylim(0, 1.1)
    return fig


def plot_distinct(result: dict[str, Any]) -> Any:
    """Dist-n against n."""
    return plot_lexical({"distinct_n": result})


def plot_entropy(result: dict[str, Any]) -> Any:
    """Ent-n against n."""
    return plot_lexical({"ent_n": result})


def draw(decl: MetricDeclaration, result: dict[str, Any] | None) -> Any:
    """The declaration's plot of ``result`` (a Figure), or ``None`` when it has no plot or nothing to draw."""
    plot = decl.plot_function()
    return plot(result) if plot is not None and result else None


def plot_panel(decl: MetricDeclaration, outcome: MetricOutcome | None, enabled: bool = True) -> Any:
    """A ``gr.Plot`` update for ``decl``'s panel: its figure, or an empty panel whose label says why
    (every panel is relabelled, so a label from an earlier request never sticks)."""
    import gradio as gr

    figure, why = None, "plots off (tick Draw plots)"
    if outcome is None:
        why = "not run (tick it to compute)"
    elif outcome.status != "ok":
        why = f"not drawn: {outcome.status}"
    elif enabled:
        figure = draw(decl, outcome.result)
        why = "nothing to draw for this result"
    return gr.Plot(value=figure, label=decl.title if figure is not None else f"{decl.title}: {why}")
