"""Reproduce USR's baseline rows: the reference-based metrics' turn-level correlation with Overall Quality on USR
Topical-Chat and PersonaChat, beside the numbers Mehri & Eskenazi (2020) published.

The protocol is the paper's: every response but the original ground truth (whose ratings the paper does not use),
scored against the ground truth as the reference; target the mean of the three Overall ratings; Spearman ρ and
Pearson r, here with 95 % bootstrap intervals (1,000 half-size subsamples, seed 0). The published numbers are
declared by the USR builders (``PUBLISHED_BASELINES``, as printed: the paper's "Spearman" column first); the paper's
Spearman and Pearson columns are swapped, which the table puts back. BLEU, METEOR and ROUGE-L are scored twice:
dialeval's default scorers, and nlg-eval's (``implementation="nlg-eval"``: pycocoevalcap 1.2, METEOR 1.5 on Java),
which reproduce the paper's numbers; the command exits 1 when one of those does not.

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
NLG_EVAL = {"implementation": "nlg-eval"}
#: Each reproduced row: (row name, metric, options). BLEU, METEOR and ROUGE-L twice: dialeval's default scorers,
#: and nlg-eval's (pycocoevalcap 1.2), the scorers the paper used.
ROWS = (("token_f1", "token_f1", {}), *((f"bleu_{n}", "bleu", {"max_order": n}) for n in (1, 2, 3, 4)),
        *((f"bleu_{n}", "bleu", {"max_order": n, **NLG_EVAL}) for n in (1, 2, 3, 4)),
        ("meteor", "meteor", {}), ("meteor", "meteor", NLG_EVAL), ("rouge_l", "rouge_l", {}),
        ("rouge_l", "rouge_l", NLG_EVAL), ("bertscore", "bertscore", {}))
#: Why a row of dialeval's default scorers differs from the paper by more than 0.03, per metric.
WHY = {
    "token_f1": "F-1 definition: SQuAD/ParlAI normalisation here; the paper does not state its own (plain whitespace "
                "tokens give ρ 0.282 on Topical-Chat, 0.055 on PersonaChat: not the cause either)",
    "bleu": "scorer: sacrebleu here (13a tokens, exp smoothing); the paper's is nlg-eval's (whitespace tokens, "
            "constants 1e-15/1e-9): the implementation=nlg-eval row",
    "meteor": "scorer: nltk's METEOR here (WordNet synonyms, no paraphrases, α=0.9 β=3 γ=0.5); the paper's is METEOR "
              "1.5 (Java, paraphrase tables, tuned English weights): the implementation=nlg-eval row",
    "rouge_l": "scorer: rouge-score here (β = 1, lower-cased alphanumeric tokens); the paper's is pycocoevalcap's "
               "(β = 1.2, whitespace tokens as given): the implementation=nlg-eval row",
    "bertscore": "BERT model: all-MiniLM-L6-v2 (layer 6, offline) here; the paper's BERTScore (base) is BERT-base",
}
#: An nlg-eval row reproduces the paper when both its numbers are within this (after the column swap).
REPRODUCED = 1e-3


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
            log(f"{name} {row_name} {options or ''}: ρ {table[-1]['spearman']:.4f} r {table[-1]['pearson']:.4f} "
                f"(paper: ρ {published[1]:.4f} r {published[0]:.4f}, its columns swapped back)")
        result["datasets"][name] = {"n": len(rows), "rows": table}
    return result


def _published(r: dict[str, Any]) -> tuple[float, float]:
    """The paper's numbers as (Spearman ρ, Pearson r): its "Pearson" and "Spearman" columns, which are swapped."""
    return r["published_pearson"], r["published_spearman"]


def _gap(r: dict[str, Any]) -> float:
    rho, pr = _published(r)
    return max(abs(r["spearman"] - rho), abs(r["pearson"] - pr))


def _nlg(r: dict[str, Any]) -> bool:
    return r["options"].get("implementation") == "nlg-eval"


def reproduced(result: dict[str, Any]) -> tuple[int, int, float]:
    """(nlg-eval rows within :data:`REPRODUCED` of the paper on both statistics, nlg-eval rows, largest gap)."""
    rows = [r for data in result["datasets"].values() for r in data["rows"] if _nlg(r)]
    return sum(_gap(r) <= REPRODUCED for r in rows), len(rows), max((_gap(r) for r in rows), default=float("nan"))


def _note(r: dict[str, Any]) -> str:
    if _nlg(r):
        return f"reproduced (largest difference {_gap(r):.0e})" if _gap(r) <= REPRODUCED else f"differs by {_gap(r):.4f}"
    return WHY[r["metric"]] if _gap(r) > 0.03 else ""


def _cell(value: float, ci: list[float]) -> str:
    return f"{value:.4f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def markdown(result: dict[str, Any]) -> str:
    """The README's table: each row's ρ and r with intervals beside the paper's (its swapped columns put back), and
    why a row differs by > 0.03."""
    hits, total, worst = reproduced(result)
    lines = ["The paper's Table 5 and 6 have their Spearman and Pearson columns swapped: its \"Spearman\" numbers are "
             "Pearson r and its \"Pearson\" numbers Spearman ρ. Below, each of the paper's numbers stands under the "
             f"statistic it is. With nlg-eval's scorers (`implementation=nlg-eval`), {hits} of {total} rows match both "
             f"numbers within {REPRODUCED:g} ({2 * hits} of {2 * total} numbers; largest difference {worst:.1e}). "
             "The rows of dialeval's default scorers (sacrebleu's BLEU, nltk's METEOR, rouge-score's ROUGE-L) are in the "
             "result file.", "",
             "| dataset | metric | ρ (dialeval) | ρ (paper) | r (dialeval) | r (paper) | differs by > 0.03 because |",
             "|---|---|---:|---:|---:|---:|---|"]
    for name, data in result["datasets"].items():
        for r in data["rows"]:
            if r["metric"] in ("bleu", "meteor", "rouge_l") and not _nlg(r):
                continue  # the default scorers' rows: in the result file (their gap is the scorer)
            label = r["row"] + (" (implementation=nlg-eval)" if _nlg(r) else "")
            rho, pr = _published(r)
            lines.append(f"| {name} (n={data['n']}) | {label} | {_cell(r['spearman'], r['spearman_ci'])} | "
                         f"{rho:.4f} | {_cell(r['pearson'], r['pearson_ci'])} | {pr:.4f} | {_note(r)} |")
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
    hits, total, _ = reproduced(result)
    result.update(source=PUBLISHED_SOURCE, command="python scripts/reproduce_usr_baselines.py --data-dir ../shared/data",
                  date=datetime.date.today().isoformat(), machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
                  wall_seconds=round(time.perf_counter() - started, 1))
    atomic_write_json(args.out, result)
    sys.stdout.write(markdown(result))
    return 0 if hits == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
