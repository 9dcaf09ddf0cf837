"""The ``judge-units`` generated region (the LLM judge's card): per human-judged unit, the judge's Spearman ρ with
the unit's overall quality, beside FULL on the same rows and the same model, and the judge's system-level ρ, from
the committed ``docs/results/judge_leaderboard.json`` (its run record ``judge_leaderboard.meta.json``) and FULL's
column of ``docs/results/quality_leaderboard.json``."""

from __future__ import annotations

import math
from typing import Any

from quality_region import _cell, read, unit_rows

JUDGE, FULL = "llm_judge", "full_followup"


def load() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    return read("judge_leaderboard.json"), read("judge_leaderboard.meta.json"), read("quality_leaderboard.json")


def system_cell(report: dict[str, Any], unit: str, target: str) -> str:
    """The judge's system-level Spearman ρ on ``unit`` with its interval (systems and items resampled) and the
    number of systems; ``–`` where the unit has no systems."""
    dataset, config = unit.split(" · ")
    for r in report["rows"]:
        if ((r["metric"], r["dataset"], r["config"], r.get("target"), r.get("statistic"), r.get("level"))
                == (JUDGE, dataset, config, target, "spearman", "system")
                and isinstance(r.get("value"), (int, float)) and math.isfinite(r["value"])):
            return f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] ({r['n']})"
    return "–"


def region() -> str:
    judge, meta, quality = load()
    full = {u["unit"]: u for u in unit_rows(quality)}
    units = unit_rows(judge)
    lines = ["", "| unit | quality | n | judge | FULL, same model | judge, system level (systems) |",
             "|---|---|---:|---:|---:|---:|"]
    for u in units:
        other = full.get(u["unit"])
        if other is None or other["n"] != u["n"]:
            raise ValueError(f"{u['unit']}: the judge's board and the quality board scored different rows; rerun "
                             "both with the same --dataset and --max-rows flags")
        lines.append(f"| {u['unit']} | {u['quality']} | {u['n']:,} | {_cell(u['rows'].get(JUDGE))} | "
                     f"{_cell(other['rows'].get(FULL))} | {system_cell(judge, u['unit'], u['target'])} |")
    item = [u["rows"][JUDGE] for u in units if JUDGE in u["rows"]]
    means = {s["metric"]: s for s in judge["summary"] + quality["summary"] if s["metric"] in (JUDGE, FULL)}
    above = sum(1 for u in units if u["rows"][JUDGE]["value"] > full[u["unit"]]["rows"][FULL]["value"])
    lines += ["", f"Over the {len(units)} units (the two leaderboards' summaries, with their intervals): judge "
              + "; FULL ".join(f"{means[m]['mean']:.3f} [{means[m]['ci_low']:.3f}, {means[m]['ci_high']:.3f}]"
                               for m in (JUDGE, FULL))
              + f". The judge's interval lies above zero on {sum(r['state'] == 'positive' for r in item)} units and "
              f"below it on {sum(r['state'] == 'negative' for r in item)}; its ρ is above FULL's on {above} of "
              f"{len(units)}. {meta['note']}", "",
              f"`{meta['command']}` ({meta['wall']}; {meta['machine']}) wrote the leaderboard copied to "
              "`docs/results/judge_leaderboard.json`; FULL's column is `docs/results/quality_leaderboard.json`'s.", ""]
    return "\n".join(lines)
