"""The ``quality-units`` generated region (README and the reference-free quality metrics' cards): per human-judged
unit, the Spearman ρ of the reference-free metrics (context relevance, learned quality, FULL, the LLM judge) with
the unit's overall quality, the best reference-based baseline, and which reference-free metrics lead (the top
significance cluster), from the committed ``docs/results/quality_leaderboard.json`` and its run record
``quality_leaderboard.meta.json``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
OWN = ("context_relevance", "learned_quality")  #: the two compared head to head (at or above, per unit)
REFERENCE_FREE = (*OWN, "learned_quality_usl_h", "learned_quality_last_turn", "full_followup", "llm_judge")
NOTES = {"learned_quality_usl_h": "usl_h: the row learned_quality_usl_h, learned_quality with composition=\"usl_h\" "
                                      "(USL-H's (U + U·S + U·S·L) / 3).",
             "learned_quality_last_turn": "last turn: the row learned_quality_last_turn, learned_quality with "
                                          "turns=1 (S reads the last context turn alone; shown beside the default, "
                                          "not used to choose it).",
             "full_followup": "FULL: the follow-up likelihood of FULL on the embedded SmolLM2-135M.",
             "llm_judge": "judge: the LLM judge on the embedded SmolLM2-135M."}
SHORT = {"context_relevance": "context_relevance", "learned_quality": "learned_quality",
         "learned_quality_usl_h": "usl_h", "learned_quality_last_turn": "last turn", "full_followup": "FULL",
         "llm_judge": "judge"}


def is_variant_row(row: str) -> bool:
    """A metric's variant row (``learned_quality_usl_h``), as the registry declares it, not a metric's own row."""
    from dialeval import registry

    found = registry.meta_row(row)
    return found is not None and found[0].name != row


def read(name: str) -> dict[str, Any]:
    """A committed result file of ``docs/results/``."""
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def load() -> tuple[dict[str, Any], dict[str, Any]]:
    return read("quality_leaderboard.json"), read("quality_leaderboard.meta.json")


def _cell(row: dict[str, Any] | None) -> str:
    if row is None or not isinstance(row.get("value"), (int, float)) or not math.isfinite(row["value"]):
        return "–"
    return f"{row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def unit_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per unit: its name, level, overall quality (``target``, and ``quality`` its short name), n, each
    metric's item-level Spearman row and leads."""
    units = []
    for key, info in report["datasets"].items():
        dataset, config = key.split("/", 1)
        overall = info.get("overall")
        rows = {r["metric"]: r for r in report["rows"] if (r["dataset"], r["config"]) == (dataset, config)
                and r.get("target") == overall and r.get("statistic") == "spearman" and r.get("level", "item") == "item"}
        leads = [c["metric"] for c in report["clusters"] if (c["dataset"], c["config"]) == (dataset, config)
                 and c.get("target") == overall and c.get("statistic") == "spearman" and c.get("leads")]
        units.append({"unit": f"{dataset} · {config}", "level": info["level"], "target": overall,
                      "quality": overall.split(".", 1)[-1],
                      "n": info["rows"], "rows": rows, "leads": leads})
    return units


def _best_baseline(rows: dict[str, dict[str, Any]]) -> str:
    others = [r for m, r in rows.items() if m not in REFERENCE_FREE and isinstance(r.get("value"), (int, float))
              and math.isfinite(r["value"])]
    if not others:
        return "– (no reference)"
    best = max(others, key=lambda r: r["value"])
    return f"{best['metric']} {best['value']:.3f}"


def _leader(unit: dict[str, Any]) -> str:
    free = [SHORT[m] for m in REFERENCE_FREE if m in unit["leads"]]
    return ", ".join(free) if free else "none"


def present(report: dict[str, Any]) -> list[str]:
    """The reference-free metrics the run scored, in :data:`REFERENCE_FREE` order."""
    scored = {r["metric"] for r in report["rows"]}
    return [m for m in REFERENCE_FREE if m in scored]


def turn_means(units: list[dict[str, Any]]) -> dict[str, float]:
    """The plain mean of each reference-free metric's ρ over the turn-level units it was run on."""
    out = {}
    for metric in REFERENCE_FREE:
        values = [u["rows"][metric]["value"] for u in units if u["level"] == "turn" and metric in u["rows"]]
        out[metric] = sum(values) / len(values) if values else math.nan
    return out


def region() -> str:
    report, meta = load()
    units, free = unit_rows(report), present(report)
    lines = ["", "Spearman ρ with the quality each unit's summary uses (its overall rating, or coherence, "
             "engagement, appropriateness where that is what was rated), 95 % bootstrap interval. "
             + " ".join(NOTES[m] for m in free if m in NOTES)
             + " *leads*: the reference-free "
             "metrics in the unit's top significance cluster (the leaderboard's paired tests over every metric of the "
             "unit, the reference-based ones included); *none*: a baseline leads alone, or no metric separates from "
             "the rest.", "",
             "| unit | level | quality | n | " + " | ".join(SHORT[m] for m in free)
             + " | best reference-based | leads |",
             "|---|---|---|---:|" + "---:|" * len(free) + "---|---|"]
    for u in units:
        lines.append(f"| {u['unit']} | {u['level']} | {u['quality']} | {u['n']:,} | "
                     + " | ".join(_cell(u["rows"].get(m)) for m in free)
                     + f" | {_best_baseline(u['rows'])} | {_leader(u)} |")
    means = turn_means(units)
    turn = [u for u in units if u["level"] == "turn"]
    above = sum(1 for u in turn if u["rows"].get("learned_quality", {}).get("value", -2)
                >= u["rows"].get("context_relevance", {}).get("value", 2))
    summary = {s["metric"]: s for s in report["summary"] if s["metric"] in REFERENCE_FREE}
    lines += ["", f"Mean ρ over the {len(turn)} turn-level units: "
              + ", ".join(f"{SHORT[m]} {means[m]:.3f}" for m in free)
              + "; learned_quality is at or above context_relevance on "
              f"{above} of {len(turn)}. Over all {len(units)} units (the leaderboard's summary, with its interval): "
              + "; ".join(f"{m} {summary[m]['mean']:.3f} [{summary[m]['ci_low']:.3f}, {summary[m]['ci_high']:.3f}]"
                          for m in free if m in summary) + "." + (f" {meta['note']}" if meta.get("note") else ""),
              "", f"`{meta['command']}` ({meta['wall']}; {meta['machine']}) wrote the leaderboard copied to "
              "`docs/results/quality_leaderboard.json`.", ""]
    return "\n".join(lines)


def summary_region() -> str:
    """The README's compact form: per reference-free metric (its default row; variant rows are in its card), its
    mean ρ over the turn units and over every unit (with the leaderboard's interval) and the units it leads; then
    the units where none leads."""
    report, _meta = load()
    units = unit_rows(report)
    means = turn_means(units)
    n_turn = sum(1 for u in units if u["level"] == "turn")
    summary = {s["metric"]: s for s in report["summary"]}
    lines = [f"| metric | mean ρ, {n_turn} turn units | mean ρ, all {len(units)} units [95 % CI] | leads (top cluster) on |",
             "|---|---:|---:|---|"]
    for metric in (m for m in present(report) if not is_variant_row(m)):
        s = summary.get(metric, {})
        led = [u["unit"] for u in units if metric in u["leads"]]
        lines.append(f"| [`{metric}`](metrics/{metric}/README.md) | {means[metric]:.3f} | {s.get('mean', math.nan):.3f} "
                     f"[{s.get('ci_low', math.nan):.3f}, {s.get('ci_high', math.nan):.3f}] | {len(led)} of {len(units)} units |")
    none = [u["unit"] for u in units if not set(u["leads"]) & set(REFERENCE_FREE)]
    lines.append(f"| no reference-free metric leads | | | {', '.join(none) if none else 'no unit'} |")
    return "\n".join(lines)
