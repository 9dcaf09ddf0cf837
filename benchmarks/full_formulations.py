"""FULL formulation study: how should a causal LM read the dialogue history and the follow-ups?

Factors (De Bruyn et al. 2022 leave them open for causal LMs):
  speaker prefixes ("User: "/"System: ") or none; separator after each turn (newline, tab, space);
  follow-up as a bare sentence, as the next user turn ("User: " cue) or as the
  next user message of the tokenizer's chat template; left truncation of the history (256/512/1024 tokens);
  aggregation of a follow-up's token log-probabilities (mean per-token NLL, or their sum).

Design (2 CPU cores; fp32, the metric's default): one factor at a time, not the Cartesian product. The
default ``--texts`` are the paper's text (no prefixes, tab, bare follow-up), the old meta-eval default
(prefixes, newline), each separator alone (no prefixes, newline / space), the follow-up as a "User: " turn
(newline, with and without prefixes) and the chat template (skipped for a tokenizer without one); the other
grid points (``TEXTS``: prefixes with tab or space) run with ``--texts``. Each text is scored once at 1024 tokens;
both aggregations come from the same run (sum = mean × the follow-up's token count, which does not depend
on the history), and follow-up NLLs are cached by the history's token ids.
Truncation (256, 512) is then varied around the FED winner only (only histories it changes are re-run).

Choice: the highest mean of FED turn ρ and dialog ρ (Spearman with the mean ``Overall`` rating,
:mod:`dialeval.meta.evaluation`'s FED protocol), per model; the per-level winners are reported too. Confirmation on
an independent signal: DailyDialog++ test (first ``--ddpp-contexts`` contexts, first response of each kind),
AUC of the score separating human positives from adversarial negatives and from random negatives.
The selection effect is estimated by split halves: choose on a random half of FED, evaluate on the other.

    python benchmarks/full_formulations.py --model smollm2-135m-instruct-gguf --out artifacts/full_formulations/smollm2.json
    python benchmarks/full_formulations.py --model gemma3-270m-gguf --out artifacts/full_formulations/gemma3.json
    python benchmarks/full_formulations.py --table artifacts/full_formulations/smollm2.json   # Markdown table only
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

for _k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_k, "1")

from dialeval.full.formulation import followup_nll  # noqa: E402
from dialeval.full.scorer import FollowupScorer  # noqa: E402
from dialeval.full.texts import FOLLOW_UPS  # noqa: E402
from dialeval.meta.evaluation import Target, auc, evaluate_scores, spearman  # noqa: E402

FED_TARGET = "annotation_means.Overall"

SEPARATORS = {"nl": "\n", "tab": "\t", "sp": " "}
#: name -> (speaker prefixes, separator key, follow-up: bare | turn | chat)
TEXTS = {f"{'prefix' if p else 'plain'}-{s}-{f}": (p, s, f) for p in (True, False) for s in SEPARATORS
         for f in ("bare", "turn")}
TEXTS["chat"] = (False, "nl", "chat")
OLD_DEFAULT, PAPER = "prefix-nl-bare", "plain-tab-bare"
#: One factor at a time around the paper's text (plain-tab-bare), plus the old meta-eval default.
DEFAULT_TEXTS = (PAPER, OLD_DEFAULT, "prefix-nl-turn", "plain-nl-bare", "plain-sp-bare", "chat", "plain-nl-turn")
TRUNCATIONS = (256, 512, 1024)
AGGREGATIONS = ("mean", "sum")


# ---- data ------------------------------------------------------------------------------------------

def fed_items(path: Path, limit: int | None = None) -> dict[str, dict[str, Any]]:
    """FED turn and dialog items: speaker-tagged turns (turn level: context + response) and mean Overall."""
    from dialeval.datasets.fed import fed_rows

    data = json.loads((path / "fed_data.json").read_text(encoding="utf-8"))
    out = {}
    for level in ("turn", "dialog"):
        rows = fed_rows(data, level, path)
        turns = [[(t["speaker"], t["text"]) for t in r["context"]]
                 + ([(r["response_speaker"], r["response"])] if level == "turn" else []) for r in rows]
        out[level] = {"turns": turns[:limit], "overall": [r["annotation_means"]["Overall"] for r in rows][:limit]}
    return out


def ddpp_items(path: Path, n_contexts: int) -> dict[str, Any]:
    """DailyDialog++ test: context + first positive / adversarial / random response; speakers alternate
    backwards from the response ("System")."""
    turns, kinds = [], []
    with open(path / "test.json", encoding="utf-8") as f:
        for line in list(f)[:n_contexts]:
            obj = json.loads(line)
            for kind in ("positive", "adversarial_negative", "random_negative"):
                texts = obj["context"] + [obj[f"{kind}_responses"][0]]
                speakers = ["System" if (len(texts) - i) % 2 else "User" for i in range(len(texts))]
                turns.append(list(zip(speakers, texts)))
                kinds.append(kind)
    return {"turns": turns, "kinds": kinds}


def render(turns: list[tuple[str, str]], prefix: bool) -> list[str]:
    return [f"{s}: {t}" if prefix else t for s, t in turns]


# ---- scoring ---------------------------------------------------------------------------------------

_NLL_CACHE: dict[str, list[float]] = {}  # sha1 of the history's token ids -> follow-up mean NLLs


def score_text(lm: Any, name: str, items: list[list[tuple[str, str]]], max_length: int,
               batch_size: int) -> dict[str, list[float]]:
    """Per-item FULL score for both aggregations. Follow-up NLLs are cached by the history's token ids, so a
    history that two formulations (or truncations) encode identically is run once."""
    prefix, sep, follow = TEXTS[name]
    scorer = FollowupScorer(lm, separator=SEPARATORS[sep], max_length=max_length,
                            follow_up_prefix="User: " if follow == "turn" else "", chat_template=follow == "chat")
    f_ids = scorer.encode_follow_ups(FOLLOW_UPS)
    budget = scorer.max_length - max(len(f) for f in f_ids)
    encoded = [tuple(scorer.encode_history(render(t, prefix), budget)) for t in items]
    keys = [_key(e) for e in encoded]
    todo = sorted({k: e for k, e in zip(keys, encoded) if k not in _NLL_CACHE}.items())
    if todo:
        rows = scorer._score_hosted([list(e) for _, e in todo], [None] * len(todo), f_ids, batch_size, None, False)
        _NLL_CACHE.update(zip([k for k, _ in todo], rows.tolist()))
    nll = np.asarray([_NLL_CACHE[k] for k in keys], dtype=np.float64)
    counts = [len(f) for f in f_ids]
    return {agg: followup_nll(nll, counts, agg).mean(axis=1).tolist() for agg in AGGREGATIONS}


def fed_stats(scores: list[float], overall: list[float], n_resamples: int) -> dict[str, float]:
    [r] = evaluate_scores(scores, [Target(FED_TARGET, overall, "spearman")], n_resamples=n_resamples)
    return {"rho": r["value"], "low": r["ci_low"], "high": r["ci_high"]}


def ddpp_stats(scores: list[float], kinds: list[str]) -> dict[str, float]:
    s, k = np.asarray(scores), np.asarray(kinds)
    return {f"auc_{neg}": auc(s[k == "positive"], s[k == f"{neg}_negative"]) for neg in ("adversarial", "random")}


def run_config(lm: Any, name: str, max_length: int, fed: dict, ddpp: dict, args: argparse.Namespace) -> list[dict]:
    """Score one (text, truncation) on FED turn/dialog and DD++; one result row per aggregation."""
    t0 = time.perf_counter()
    per_level = {}
    for lvl in fed:
        per_level[lvl] = score_text(lm, name, fed[lvl]["turns"], max_length, args.batch_size)
        print(f"  {name} {lvl} scored at {time.perf_counter() - t0:.0f}s", flush=True)
    dd = score_text(lm, name, ddpp["turns"], max_length, args.batch_size) if ddpp["turns"] else None
    seconds = time.perf_counter() - t0
    rows = []
    for agg in AGGREGATIONS:
        row = {"text": name, "max_length": max_length, "aggregation": agg, "seconds": round(seconds, 1)}
        for lvl in fed:
            row[lvl] = fed_stats(per_level[lvl][agg], fed[lvl]["overall"], args.resamples)
            row[f"{lvl}_scores"] = per_level[lvl][agg]
        if dd is not None:
            row.update(ddpp_stats(dd[agg], ddpp["kinds"]))
        rows.append(row)
        print(f"{name:16s} L={max_length:4d} {agg:4s} turn {row['turn']['rho']:.3f} dialog {row['dialog']['rho']:.3f} "
              + (f"adv {row['auc_adversarial']:.3f} rand {row['auc_random']:.3f} " if dd else "")
              + f"({seconds:.0f}s)", flush=True)
    return rows


# ---- selection -------------------------------------------------------------------------------------

def fed_objective(row: dict) -> float:
    return (row["turn"]["rho"] + row["dialog"]["rho"]) / 2


def _half_rho(row: dict, fed: dict, half: np.ndarray, lvl: str) -> float:
    return spearman(np.asarray(row[f"{lvl}_scores"])[half], np.asarray(fed[lvl]["overall"])[half])


def split_half_selection(rows: list[dict], fed: dict, repeats: int = 200, seed: int = 0) -> dict[str, float]:
    """Selection effect: choose the row with the best mean ρ on a random half of each FED level, and compare
    its ρ on that half (in-sample) with its ρ on the other half (held out)."""
    rng = np.random.default_rng(seed)
    chosen_in, chosen_out = [], []
    for _ in range(repeats):
        halves = {lvl: np.array_split(np.argsort(rng.random(len(fed[lvl]["overall"]))), 2) for lvl in fed}
        def mean_rho(row: dict, part: int, halves: dict = halves) -> float:
            return sum(_half_rho(row, fed, halves[lvl][part], lvl) for lvl in fed) / len(fed)
        best = max(rows, key=lambda r: mean_rho(r, 0))
        chosen_in.append(mean_rho(best, 0))
        chosen_out.append(mean_rho(best, 1))
    return {"mean_rho_chosen_in_sample": float(np.mean(chosen_in)),
            "mean_rho_chosen_held_out": float(np.mean(chosen_out))}


def markdown_table(report: dict) -> str:
    """The study as a Markdown table, FED objective descending."""
    head = ("| history text | trunc | agg | FED turn ρ [95 % CI] | FED dialog ρ [95 % CI] | DD++ AUC pos/adv | "
            "DD++ AUC pos/rand |\n|---|---:|---|---|---|---:|---:|")
    lines = [head]
    for r in sorted(report["rows"], key=fed_objective, reverse=True):
        cell = {lvl: f"{r[lvl]['rho']:.3f} [{r[lvl]['low']:.2f}, {r[lvl]['high']:.2f}]" for lvl in ("turn", "dialog")}
        mark = " (winner)" if (r["text"], r["max_length"], r["aggregation"]) == tuple(report["winner"]) else ""
        lines.append(f"| `{r['text']}`{mark} | {r['max_length']} | {r['aggregation']} | {cell['turn']} | "
                     f"{cell['dialog']} | {r.get('auc_adversarial', float('nan')):.3f} | "
                     f"{r.get('auc_random', float('nan')):.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m-instruct-gguf")
    p.add_argument("--fed", type=Path, default=Path("../shared/data/fed"))
    p.add_argument("--ddpp", type=Path, default=Path("../shared/data/dailydialog_plusplus"))
    p.add_argument("--ddpp-contexts", type=int, default=100)
    p.add_argument("--fed-limit", type=int, default=None, help="first N rows per level (smoke tests)")
    p.add_argument("--texts", nargs="*", default=list(DEFAULT_TEXTS), help=f"subset of {list(TEXTS)}")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--dtype", default="fp32", help="fp32 (default: the metric's; 2.3x faster than bf16 on a CPU "
                   "without bf16 instructions) or bf16")
    p.add_argument("--threads", type=int, default=None, help="torch threads (1 is fastest on a crowded machine)")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--lengths", type=int, nargs="*", default=None,
                   help="score --texts at these lengths only (no truncation step around the winner)")
    p.add_argument("--nll-cache", type=Path, default=None, help="folder of follow-up NLLs shared between runs (.npz)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--merge", type=Path, nargs="*", default=None, help="combine the rows of saved runs and select")
    p.add_argument("--table", type=Path, default=None, help="print the Markdown table of a saved report and exit")
    args = p.parse_args(argv)
    if args.table:
        print(markdown_table(json.loads(args.table.read_text(encoding="utf-8"))))
        return 0
    fed = fed_items(args.fed, args.fed_limit)
    if args.merge:
        runs = [json.loads(f.read_text(encoding="utf-8")) for f in args.merge]
        return finish(runs[0]["model"], [r for run in runs for r in run["rows"]], fed, args)
    from dialeval.models.lm import load_lm

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    lm = load_lm(args.model, dtype=args.dtype)
    cache_file = load_nll_cache(args.nll_cache, re.sub(r"[^A-Za-z0-9_.]+", "_", f"{args.model}-{args.dtype}"))
    ddpp = ddpp_items(args.ddpp, args.ddpp_contexts)
    texts = [t for t in args.texts if TEXTS[t][2] != "chat" or getattr(lm.tokenizer, "chat_template", None)]
    rows: list[dict] = []
    for name in texts:
        for length in args.lengths or [1024]:
            rows += run_config(lm, name, length, fed, ddpp, args)
            save_nll_cache(cache_file)
            if args.out:  # partial results survive an interrupted run
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps({"model": lm.name, "rows": rows, "partial": True}), encoding="utf-8")
    if args.lengths is None:
        best = max(rows, key=fed_objective)
        for length in TRUNCATIONS[:-1]:  # one factor at a time, around the winner's text
            rows += [r for r in run_config(lm, best["text"], length, fed, ddpp, args)
                     if r["aggregation"] == best["aggregation"]]
    return finish(lm.name, rows, fed, args)


def finish(model: str, rows: list[dict], fed: dict, args: argparse.Namespace) -> int:
    """Select the winner (overall and per level), estimate the selection effect, print and save."""
    best = max(rows, key=fed_objective)
    report = {"model": model, "args": {k: str(v) for k, v in vars(args).items()}, "rows": rows,
              "winner": [best["text"], best["max_length"], best["aggregation"]],
              "per_level_winner": {lvl: [(w := max(rows, key=lambda r, lvl=lvl: r[lvl]["rho"]))["text"], w["max_length"],
                                        w["aggregation"], w[lvl]["rho"]] for lvl in fed},
              "selection": split_half_selection(rows, fed)}
    print(markdown_table(report))
    print(json.dumps({k: report[k] for k in ("winner", "per_level_winner", "selection")}, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


def _key(ids: tuple[int, ...]) -> str:
    return hashlib.sha1(np.asarray(ids, dtype=np.int64).tobytes()).hexdigest()


def load_nll_cache(folder: Path | None, model: str) -> Path | None:
    """Fill the in-memory NLL cache from ``folder/<model>-*.npz``; return this run's own cache file."""
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for f in sorted(folder.glob(f"{model}-*.npz")):
        with np.load(f, allow_pickle=False) as z:
            _NLL_CACHE.update(zip(z["keys"].tolist(), z["nll"].tolist()))
    return folder / f"{model}-{os.getpid()}.npz"


def save_nll_cache(path: Path | None) -> None:
    if path is not None:
        np.savez(path, keys=np.asarray(list(_NLL_CACHE)), nll=np.asarray(list(_NLL_CACHE.values())))


if __name__ == "__main__":
    sys.exit(main())
