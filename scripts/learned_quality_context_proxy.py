"""How many context turns ``learned_quality``'s next-utterance signal should read, judged on unlabelled dialogue only.

The proxy is the trainer's (:func:`dialeval.relevance.trainer.proxy_texts`): the same 1,000 DailyDialog validation
(context, next utterance) pairs, each true next utterance against nine next utterances of other dialogues and its
own perturbed copy. Here each pair's context is its history (the earlier turns of its validation dialogue), and
every candidate is scored through the metric itself (:func:`compute_learned_quality`, its default encoder route)
with ``turns`` = 1, 2, 3. The table is each setting's ranking accuracy of the product U·S (the true next
utterance scores highest) and its next-utterance accuracy (S alone, among the ten). The *parrot* check scores, at
the metric's default ``turns=3``, each true next utterance against a copy of its context's last turn: the share of
pairs where the true one scores higher (product, and S alone). No human rating is read.

    python scripts/learned_quality_context_proxy.py --data-dir ../shared/data

writes ``docs/results/learned_quality_context_proxy.json`` (about half a minute on 2 cores); with ``--weights
FOLDER --out FILE`` it checks other weights (the model card's run F: ``docs/results/learned_quality_context_proxy_f.json``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dialeval.relevance import trainer
from dialeval.relevance.corpus import load_corpus
from dialeval.relevance.evaluator import compute_learned_quality
from dialeval.relevance.proxies import proxy_main

OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "learned_quality_context_proxy.json"
SCRIPT = "python scripts/learned_quality_context_proxy.py"


def proxy_pairs(data_dir: str, seed: int = 0) -> tuple[list[list[str]], list[list[str]]]:
    """Per proxy pair, its whole history and its candidates (true next utterance first, the nine others, then its
    perturbed copy, or the true one again where it has none), as the trainer draws them."""
    corpus = load_corpus(data_dir)
    longest = max(len(d) for d in corpus.validation)
    texts, windows, candidates, bad = trainer.proxy_texts(corpus, seed, turns=longest)
    copies = dict(bad)
    ranked = [[texts[i] for i in (*row, copies.get(int(row[0]), int(row[0])))] for row in candidates]
    return [[texts[i] for i in window] for window in windows], ranked


def accuracies(histories: list[list[str]], ranked: list[list[str]], turns: int, weights: str | None = None
               ) -> dict[str, float]:
    contexts = [h for h, row in zip(histories, ranked) for _ in row]
    out = compute_learned_quality(contexts, [c for row in ranked for c in row], config="turn", turns=turns,
                                  weights=weights, progress=False)
    k = len(ranked[0])
    score = np.asarray(out["scores"]).reshape(-1, k)
    follows = np.asarray(out["next_utterance"], dtype=float).reshape(-1, k)
    return {"turns": turns, "ranking_accuracy_product": round(float(np.mean(score.argmax(1) == 0)), 4),
            "next_utterance_accuracy": round(float(np.mean(follows[:, :-1].argmax(1) == 0)), 4)}


def parrot(histories: list[list[str]], ranked: list[list[str]], weights: str | None = None, turns: int = 3
           ) -> dict[str, float]:
    """The share of pairs whose true next utterance outscores a copy of the history's last turn."""
    out = compute_learned_quality([h for h in histories for _ in range(2)],
                                  [t for h, row in zip(histories, ranked) for t in (row[0], h[-1])],
                                  config="turn", turns=turns, weights=weights, progress=False)
    score = np.asarray(out["scores"]).reshape(-1, 2)
    follows = np.asarray(out["next_utterance"], dtype=float).reshape(-1, 2)
    return {"turns": turns, "true_above_copy_product": round(float(np.mean(score[:, 0] > score[:, 1])), 4),
            "true_above_copy_next_utterance": round(float(np.mean(follows[:, 0] > follows[:, 1])), 4)}


def measure(proxy: tuple[list[list[str]], list[list[str]]], weights: str | None) -> tuple[dict, list[str]]:
    histories, ranked = proxy
    rows = [accuracies(histories, ranked, turns, weights) for turns in (1, 2, 3)]
    copies = parrot(histories, ranked, weights)
    fields = {"pairs": len(ranked), "candidates": len(ranked[0]),
              "history_turns_mean": round(float(np.mean([len(h) for h in histories])), 2), "rows": rows,
              "parrot": copies}
    return fields, [*(f"turns={r['turns']}: ranking accuracy {r['ranking_accuracy_product']:.3f}, next-utterance "
                      f"accuracy {r['next_utterance_accuracy']:.3f}" for r in rows),
                    f"parrot, turns=3: the true next utterance above a copy of the last turn for "
                    f"{copies['true_above_copy_product']:.3f} (product), {copies['true_above_copy_next_utterance']:.3f}"
                    " (S alone)"]


def main(argv: list[str] | None = None) -> int:
    return proxy_main(argv, doc=__doc__, out=OUT, script=SCRIPT,
                      data_help="the folder holding dailydialog/ (or that folder)", load=proxy_pairs, measure=measure)


if __name__ == "__main__":
    raise SystemExit(main())
