"""Reproduce USR's baseline rows: the reference-based metrics' turn-level correlation with Overall Quality on USR
Topical-Chat and PersonaChat, beside the numbers Mehri & Eskenazi (2020) published.

The protocol is the paper's: every response but the original ground truth (whose ratings the paper does not use),
scored against the ground truth as the reference; target the mean of the three Overall ratings; Spearman ρ and
Pearson r, here with 95 % bootstrap intervals (1,000 half-size subsamples, seed 0). The published numbers are
declared by the USR builders (``PUBLISHED_BASELINES``).

    python scripts/reproduce_usr_baselines.py --data-dir ../shared/data [--out docs/results/usr_baselines.json]

It prints the table and writes the JSON the README's table is generated from (``markdown`` below).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from dialeval.datasets.usr import (
    GROUND_TRUTH,
    PUBLISHED_SOURCE,
    UsrPersonaChatBuilder,
    UsrTopicalChatBuilder,
)
from dialeval.io.files import atomic_write_json
from dialeval.meta.evaluation import protocol_rows, raw_rows
from dialeval.meta.stats import bootstrap_interval, pearson, spearman

DATASETS = {"usr_topicalchat": UsrTopicalChatBuilder, "usr_personachat": UsrPersonaChatBuilder}
#: Each reproduced row: (row name, metric, options). BLEU twice: sacrebleu's default smoothing, and none (as
#: nlg-eval, which the dialogue papers of the time used).
ROWS = (("token_f1", "token_f1", {}), *((f"bleu_{n}", "bleu", {"max_order": n}) for n in (1, 2, 3, 4)),
        *((f"bleu_{n}", "bleu", {"max_order": n, "smooth": "none"}) for n in (1, 2, 3, 4)),
        ("meteor", "meteor", {}), ("rouge_l", "rouge_l", {}), ("bertscore", "bertscore", {}))
#: Why a row can differ from the paper by more than 0.03, per metric.
WHY = {
    "token_f1": "F-1 definition: SQuAD/ParlAI normalisation here; the paper does not state its own (plain whitespace "
                "tokens give ρ 0.282 on Topical-Chat, 0.055 on PersonaChat: not the cause either)",
    "bleu": "smoothing: sacrebleu's default exp smoothing here; the paper's BLEU was unsmoothed (see the smooth=none "
            "rows)",
    "meteor": "METEOR implementation: nltk's (Treebank tokens, WordNet 3.0, α=0.9 β=3 γ=0.5) here; the paper used "
              "METEOR 1.5 (Java, paraphrase tables)",
    "rouge_l": "ROUGE-L implementation: rouge-score here (alphanumeric tokens)",
    "bertscore": "BERT model: all-MiniLM-L6-v2 (layer 6, offline) here; the paper's BERTScore (base) is BERT-base",
}


def usr_rows(name: str, data_dir: Path) -> list[dict[str, Any]]:
    """The rows the paper evaluates, as the dataset declares them (every response but the original ground truth)."""
    rows = protocol_rows(name, raw_rows(name, "turn", data_dir=data_dir / name))
    assert not any(r["system"] == GROUND_TRUTH for r in rows)
    return rows


def correlate(scores: list[float], human: list[float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stat, fn in (("spearman", spearman), ("pearson", pearson)):
        ci = bootstrap_interval(fn, [scores, human], n_resamples=1000, fraction=0.5, seed=0)
        out[stat] = fn(scores, human)
        out[f"{stat}_ci"] = [ci["low"], ci["high"]]
    return out


def reproduce(data_dir: Path, log: Any = print) -> dict[str, Any]:
    from dialeval import registry

    result: dict[str, Any] = {"datasets": {}}
    for name, builder in DATASETS.items():
        rows = usr_rows(name, data_dir)
        human = [r["annotation_means"]["Overall"] for r in rows]
        preds, refs = [r["response"] for r in rows], [[r["reference"]] for r in rows]
        table = []
        for row_name, metric, options in ROWS:
            start = time.perf_counter()
            scored = registry.get(metric).core_function()(preds, refs, **options)
            published = builder.PUBLISHED_BASELINES[row_name]
            table.append({"row": row_name, "metric": metric, "options": options, "signature": scored["signature"],
                          **correlate(scored["scores"], human), "published_spearman": published[0],
                          "published_pearson": published[1], "seconds": round(time.perf_counter() - start, 2)})
            log(f"{name} {row_name} {options or ''}: ρ {table[-1]['spearman']:.3f} (paper {published[0]:.3f})")
        result["datasets"][name] = {"n": len(rows), "rows": table}
    return result


#: The paper's ρ within this of dialeval's r: the paper's "Spearman" is a Pearson r there.
SWAP_TOLERANCE = 5e-4


def _swapped(r: dict[str, Any]) -> bool:
    return abs(r["pearson"] - r["published_spearman"]) < SWAP_TOLERANCE


def _note(r: dict[str, Any], swapped: int) -> str:
    """Why the row differs from the paper by more than 0.03 (empty when it does not)."""
    if _swapped(r):
        return (f"the paper's ρ is dialeval's Pearson r (within {SWAP_TOLERANCE}, as in {swapped} rows): its Spearman "
                "column holds Pearson r here")
    far = max(abs(r["spearman"] - r["published_spearman"]), abs(r["pearson"] - r["published_pearson"])) > 0.03
    return WHY[r["metric"]] if far else ""


def _cell(value: float, ci: list[float]) -> str:
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def markdown(result: dict[str, Any]) -> str:
    """The README's table: each row's ρ and r with intervals beside the paper's, and why a row differs by > 0.03."""
    swapped = sum(_swapped(r) for data in result["datasets"].values() for r in data["rows"])
    lines = ["| dataset | metric | ρ (dialeval) | ρ (paper) | r (dialeval) | r (paper) | differs by > 0.03 because |",
             "|---|---|---:|---:|---:|---:|---|"]
    for name, data in result["datasets"].items():
        for r in data["rows"]:
            label = r["row"] + (" (smooth=none)" if r["options"].get("smooth") == "none" else "")
            lines.append(f"| {name} (n={data['n']}) | {label} | {_cell(r['spearman'], r['spearman_ci'])} | "
                         f"{r['published_spearman']:.3f} | {_cell(r['pearson'], r['pearson_ci'])} | "
                         f"{r['published_pearson']:.3f} | {_note(r, swapped)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the folder holding usr_topicalchat/ and usr_personachat/")
    parser.add_argument("--out", type=Path, default=Path("docs/results/usr_baselines.json"), help="the result JSON")
    args = parser.parse_args(argv)
    missing = [n for n in DATASETS if not (args.data_dir / n).is_dir()]
    if missing:
        parser.error(f"--data-dir {str(args.data_dir)!r} has no {missing[0]}/ folder")
    started = time.perf_counter()
    result = reproduce(args.data_dir)
    result.update(source=PUBLISHED_SOURCE, command="python scripts/reproduce_usr_baselines.py --data-dir ../shared/data",
                  date=datetime.date.today().isoformat(), machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
                  wall_seconds=round(time.perf_counter() - started, 1))
    atomic_write_json(args.out, result)
    sys.stdout.write(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
