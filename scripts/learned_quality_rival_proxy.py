"""How well ``learned_quality`` ranks a context's own good responses above its rivals, judged without human ratings.

The proxy is the held-out half of DailyDialog++'s ``dev.json`` (:func:`dialeval.relevance.rivals.load_rivals`,
``half="proxy"``; the other half is what ``train-evaluator --rival-contexts`` trains on, and ``test.json`` is read
by neither). Each context has five human-written positive responses, five adversarial negatives (written to share
its words or topic without following it) and five random ones. Every response is scored through the metric itself
(:func:`compute_learned_quality`, default options: the product U·S, ``turns=3``) and each pair of the same
context counts as right when the positive scores higher (a tie counts one half). No human quality rating is read:
the positives and negatives are written replies.

    python scripts/learned_quality_rival_proxy.py --data-dir ../shared/data

writes ``docs/results/learned_quality_rival_proxy.json`` (under a minute on 2 cores); with ``--weights FOLDER
--out FILE`` it checks other weights (the model card's runs E and H: ``docs/results/learned_quality_rival_proxy_e.json``,
``..._h.json``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dialeval.relevance.evaluator import compute_learned_quality
from dialeval.relevance.proxies import proxy_main
from dialeval.relevance.rivals import Rivals, load_rivals

OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "learned_quality_rival_proxy.json"
SCRIPT = "python scripts/learned_quality_rival_proxy.py"


def pair_accuracy(good: np.ndarray, bad: np.ndarray) -> float:
    """Share of (good, bad) pairs within each row where good > bad, ties one half: rows ``(contexts, k)``."""
    diff = good[:, :, None] - bad[:, None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def rival_accuracies(rivals: list[Rivals], weights: str | None = None) -> dict[str, float]:
    """Positive-vs-adversarial and positive-vs-random pair accuracy of the score and of S (next utterance) alone,
    and S's mean over each kind of reply.
    Every record holds as many of each kind as the first (:func:`load_rivals` checks)."""
    groups = [r.positives + r.adversarial + r.random for r in rivals]
    n_pos, n_adv = len(rivals[0].positives), len(rivals[0].adversarial)
    out = compute_learned_quality([r.context for r, g in zip(rivals, groups) for _ in g],
                                  [c for g in groups for c in g], config="turn", weights=weights, progress=False)
    result: dict = {}
    for name, values in (("score", out["scores"]), ("next_utterance", out["next_utterance"])):
        table = np.asarray(values, dtype=float).reshape(len(rivals), len(groups[0]))  # next_utterance last: S
        good = table[:, :n_pos]
        result[f"{name}_vs_adversarial"] = round(pair_accuracy(good, table[:, n_pos:n_pos + n_adv]), 4)
        result[f"{name}_vs_random"] = round(pair_accuracy(good, table[:, n_pos + n_adv:]), 4)
    result["next_utterance_mean"] = {"positive": round(float(table[:, :n_pos].mean()), 4),  # how high S sits
                                     "adversarial": round(float(table[:, n_pos:n_pos + n_adv].mean()), 4),
                                     "random": round(float(table[:, n_pos + n_adv:].mean()), 4)}
    return result


def measure(rivals: list[Rivals], weights: str | None) -> tuple[dict, list[str]]:
    row = rival_accuracies(rivals, weights)
    first = rivals[0]
    fields = {"contexts": len(rivals), "pairs_vs_adversarial": len(rivals) * len(first.positives) * len(first.adversarial),
              "pairs_vs_random": len(rivals) * len(first.positives) * len(first.random), **row}
    return fields, [f"{len(rivals)} contexts: positive above adversarial {row['score_vs_adversarial']:.3f} (S alone "
                    f"{row['next_utterance_vs_adversarial']:.3f}), above random {row['score_vs_random']:.3f}"]


def main(argv: list[str] | None = None) -> int:
    return proxy_main(argv, doc=__doc__, out=OUT, script=SCRIPT,
                      data_help="the folder holding dailydialog/ and dailydialog_plusplus/",
                      load=lambda data_dir: load_rivals(data_dir, "proxy"), measure=measure)


if __name__ == "__main__":
    raise SystemExit(main())
