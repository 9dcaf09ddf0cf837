"""A user's own annotation file, made up for the tests: ``items`` rows with three raters' relevance and fluency
(1-5, both following one hidden quality q), a metric column ``mine`` (q plus noise) and a system per row."""

from __future__ import annotations

import json

import numpy as np

WORDS = ["fine", "thanks", "good", "day", "very", "well", "and", "you"]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def items(n=40, seed=0, systems=4, varied_words=False):
    """``varied_words``: responses of 2-6 random words and the reference "fine thanks and you" (BLEU has overlap
    to find); otherwise "word" repeated 1-7 times and the reference "fine thanks"."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        q = float(rng.normal())
        response = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 7)))) if varied_words else "word " * (i % 7 + 1)
        out.append({"id": f"i{i}", "context": ["hello there", "how are you"], "response": response,
                    "reference": "fine thanks and you" if varied_words else "fine thanks", "system": f"s{i % systems}",
                    "relevance": [int(np.clip(round(3 + q + rng.normal()), 1, 5)) for _ in range(3)],
                    "fluency": [int(np.clip(round(3 + q + rng.normal(scale=2)), 1, 5)) for _ in range(3)],
                    "mine": round(q + float(rng.normal(scale=0.5)), 4)})
    return out


def means(rows, quality):
    return np.array([np.mean(r[quality]) for r in rows])
