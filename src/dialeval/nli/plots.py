"""The NLI Diversity plot (its ``plot=``): one P(contradiction) − P(entailment) heatmap per set."""

from __future__ import annotations

from typing import Any

from dialeval.ui.plots import figure

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
    fig = figure(2.6 * len(mats) + 0.9, 2.8)
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
