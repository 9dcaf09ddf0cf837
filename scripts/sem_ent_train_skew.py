"""Sem-Ent's own data: the semantic clusters of DailyDialog's *training* responses, as Han et al. (2022) fit them.

The paper fits k = 20 clusters on the training responses and reports a highly skewed distribution (its Figure 2):
almost half of the responses fall in the 5 most frequent of the 20 clusters, which motivates DRESS. This script
fits a space the same way (every non-empty training response: all turns but each dialogue's first, read from the
original release's ``train/`` folder by the DailyDialog builder; the offline default encoder; Sem-Ent's fixed
seeds), and writes the cluster sizes, the head share of the five largest clusters, the DRESS weight of each
cluster, w = (1 − p)^30, and a plot beside the paper's description.

    python scripts/sem_ent_train_skew.py --data-dir ../shared/data [--space-out DIR] [--replot]

It writes ``docs/results/sem_ent_train_clusters.json`` and ``metrics/sem_ent/train_clusters.png``;
``--space-out`` also saves the fitted space (e.g. the package's ``src/dialeval/resources/semantic_space``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULT = REPO / "docs" / "results" / "sem_ent_train_clusters.json"
PLOT = REPO / "metrics" / "sem_ent" / "train_clusters.png"
COMMAND = "python scripts/sem_ent_train_skew.py --data-dir ../shared/data"
HEAD = 5  #: the paper's head: the five most frequent clusters
PAPER = ("Han et al. (2022), Figure 2 and §4: on DailyDialog's training responses, k = 20, the distribution is "
         "highly skewed: almost half of the responses are in the 5 most frequent clusters")


def train_responses(data_dir: Path) -> list[str]:
    """Every non-empty training response of DailyDialog (stripped), in file order, repeats kept as released."""
    from dialeval.datasets import load

    ds = load("dailydialog", "pairs", data_dir=data_dir / "dailydialog", allow_duplicates=True)
    return [r["response"].strip() for r in ds["train"] if r["response"].strip()]


def skew(distribution: np.ndarray, n: int, gamma: float = 30.0) -> dict[str, Any]:
    """Cluster sizes (largest first), the head share of the :data:`HEAD` largest, and DRESS weights per cluster."""
    p = np.asarray(distribution, dtype=float)
    order = np.argsort(-p, kind="stable")
    sizes = [int(round(p[j] * n)) for j in order]
    return {"cluster_order": [int(j) for j in order], "cluster_sizes": sizes,
            "cluster_shares": [float(p[j]) for j in order], "head_share_top5": float(p[order[:HEAD]].sum()),
            "tail_share_bottom5": float(p[order[-HEAD:]].sum()), "largest_over_smallest": sizes[0] / max(1, sizes[-1]),
            "dress_weights": [float((1 - p[j]) ** gamma) for j in order], "dress_gamma": gamma,
            "entropy_nats": float(-(p[p > 0] * np.log(p[p > 0])).sum()), "max_entropy_nats": float(np.log(len(p)))}


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shares = np.array(result["cluster_shares"])
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    colors = ["#C44E52" if i < HEAD else "#4C72B0" for i in range(len(shares))]
    ax.bar(range(1, len(shares) + 1), shares * 100, color=colors)
    ax.axhline(100 / len(shares), color="black", linewidth=0.8, linestyle="--", label="uniform (5 %)")
    ax.set_xticks(range(1, len(shares) + 1))
    ax.set_xlabel("cluster, most frequent first (red: the five the paper's head counts)")
    ax.set_ylabel("% of training responses")
    ax.set_title(f"DailyDialog train, {result['n_responses']:,} responses, k = 20: top five clusters hold "
                 f"{100 * result['head_share_top5']:.1f} % (paper: almost half)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the folder holding dailydialog/ (with train/)")
    parser.add_argument("--space-out", type=Path, default=None, help="also save the fitted space here")
    parser.add_argument("--replot", action="store_true", help="only redraw the plot from the result file")
    args = parser.parse_args(argv)
    if args.replot:
        plot(json.loads(RESULT.read_text(encoding="utf-8")), PLOT)
        return 0
    if not (args.data_dir / "dailydialog" / "train").is_dir():
        parser.error(f"--data-dir {str(args.data_dir)!r} has no dailydialog/train/ folder")
    from dialeval.io.files import atomic_write_json
    from dialeval.semantic.space import SemanticSpace

    started = time.perf_counter()
    responses = train_responses(args.data_dir)
    space = SemanticSpace.fit(responses, device="cpu", progress=True)
    result = {"what": "DailyDialog training responses in Sem-Ent's space (k = 20)", "paper": PAPER,
              "n_responses": len(responses), "encoder": space.encoder_revision, "k": space.k,
              "kept_components": space.config["kept_components"], "space_fingerprint": space.fingerprint,
              **skew(space.reference_distribution, len(responses)), "command": COMMAND,
              "date": datetime.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "wall_seconds": round(time.perf_counter() - started, 1)}
    atomic_write_json(RESULT, result)
    plot(result, PLOT)
    if args.space_out is not None:
        space.save(args.space_out)
    print(f"{result['n_responses']:,} responses; top five of 20 clusters: {100 * result['head_share_top5']:.1f} %; "
          f"sizes {result['cluster_sizes']}; wrote {RESULT.relative_to(REPO)} and {PLOT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
