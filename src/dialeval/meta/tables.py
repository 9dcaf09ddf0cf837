"""The leaderboard's tables and figure: the overview of the rated units, compact tables per dataset, the summary
row per metric and the clusters, every row and every paired test, what was left out; ``leaderboard.png``; the
atomic writes of ``leaderboard.json``, ``leaderboard.md`` and ``leaderboard.png``."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from dialeval.io.files import atomic_write_bytes, atomic_write_json, atomic_write_text
from dialeval.meta import quality as lq

_fmt = lq.fmt_value


def _fmt_p(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.3g}"


def _compact(report: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether a row has a column in the compact tables: every row of the set and pair protocols; of a rated
    dataset only its overall quality (the full list of rows follows the tables)."""
    overall = lq.overall_of(report, row["dataset"], row["config"])
    return overall is None or row["target"] == overall


def _stat_label(row: dict[str, Any]) -> str:
    return f"{row['statistic']} (system)" if row.get("level") == "system" else row["statistic"]


def _rank_cell(c: dict[str, Any]) -> str:
    if c.get("state") == lq.COPY:
        return "not ranked"
    if c["rank"] is None:
        return "undefined"
    return f"{c['rank']} (sole)" if c.get("sole") else str(c["rank"])


def _state_cell(c: dict[str, Any]) -> str:
    if c.get("state") in (lq.COPY, lq.UNINFORMATIVE):
        return c["state"]
    if c["rank"] is None:
        return "undefined"
    if c.get("leads"):
        return "leads"
    return {"negative": "significantly negative", "includes 0": "interval includes 0"}.get(c.get("state"), "")


def quality_markdown(report: dict[str, Any]) -> list[str]:
    """The summary row per metric and the significance clusters of each unit's overall quality (Spearman)."""
    lines = []
    if report.get("summary"):
        lines += ["| metric | mean ρ over units | 95% CI | units | leads | significantly negative | sole entry | "
                  "undefined |", "|---|---:|---|---:|---:|---:|---:|---:|"]
        for r in report["summary"]:
            ci = f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]" if np.isfinite(r["mean"]) else "–"
            lines.append(f"| {r['metric']} | {_fmt(r['mean'])} | {ci} | {r['units']} | {r['leads']} | {r['negative']} "
                         f"| {r['sole']} | {r['undefined']} |")
        lines += ["", "A metric *leads* a unit when it is in the top significance cluster of at least two defined "
                  "metrics and its interval lies above 0; a sole entry is the only defined metric of its unit; an "
                  "undefined correlation (constant human or metric scores) has no rank and is left out of the mean. "
                  "An uninformative interval (zero width, or leaving out its own value) marks nothing positive; a "
                  "copy of a human quality (its scores a monotone function of it) is not ranked, never leads and is "
                  "left out of the mean.", ""]
    shown = [c for c in report.get("clusters", ()) if c["statistic"] == "spearman"
             and c["target"] == lq.overall_of(report, c["dataset"], c["config"])]
    if shown:
        lines += ["| dataset | config | target | rank | metric | ρ | state |", "|---|---|---|---:|---|---:|---|"]
        lines += [f"| {c['dataset']} | {c['config']} | {c['target']} | {_rank_cell(c)} | {c['metric']} | "
                  f"{_fmt(c['value'])} | {_state_cell(c)} |"
                  for c in sorted(shown, key=lambda c: (c["dataset"], c["config"], *lq.best_first(c)))]
        lines.append("")
    return lines


def summary_markdown(report: dict[str, Any]) -> str:
    """One compact table per dataset: a line per metric, a column per (config, target, statistic), each cell
    ``value [ci_low, ci_high]``."""
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in report["rows"]):
        rows = [r for r in report["rows"] if r["dataset"] == dataset and _compact(report, r)]
        cols = list(dict.fromkeys((r["config"], r["target"], _stat_label(r)) for r in rows))
        cells = {(r["metric"], r["config"], r["target"], _stat_label(r)): lq.fmt_interval(r) for r in rows}
        out += [f"| {dataset} | " + " | ".join(f"{c} {t} {st}" for c, t, st in cols) + " |",
                "|---|" + "---:|" * len(cols)]
        for metric in dict.fromkeys(r["metric"] for r in rows):
            out.append(f"| {metric} | " + " | ".join(cells.get((metric, *c), "–") for c in cols) + " |")
        out.append("")
    return "\n".join(out)


def intervals_markdown(report: dict[str, Any]) -> list[str]:
    """How every interval of the page was made (the report's ``bootstrap`` entry), one line each."""
    b = report["bootstrap"]
    if "n_resamples" not in b:
        return []
    said = [("Item level", b.get("item_level") or f"subsamples of {b.get('fraction')} of the items drawn without "
             "replacement"), ("System level", b.get("system_level")), ("Paired tests", b.get("paired")),
            ("Clusters", b.get("clusters")), ("Summary", b.get("summary"))]
    return [f"Intervals ({round(b['confidence'] * 100)}%, {b['n_resamples']} resamples, seed {b.get('seed')}, "
            "percentile):", "", *[f"- {k}: {v}" for k, v in said if v], ""]


def markdown(report: dict[str, Any]) -> str:
    """The leaderboard as Markdown: the overview of the quality units (:func:`dialeval.meta.quality.
    overview_markdown`), compact tables per dataset, how every interval was made, then every row and paired test."""
    pct = round(report["bootstrap"]["confidence"] * 100)
    lines = [*lq.overview_markdown(report), summary_markdown(report), *quality_markdown(report),
             *intervals_markdown(report),
             f"| metric | dataset | config | target | statistic | value | {pct}% CI | n |", "|---|---|---|---|---|---:|---|---:|"]
    for r in report["rows"]:
        value = (f"{_fmt(r['value'])} | [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]" if r.get("value") is not None
                 and np.isfinite(r["value"]) else f"undefined | ({r.get('undefined') or 'no value'})")
        lines.append(f"| {r['metric']} | {r['dataset']} | {r['config']} | {r['target']} | {_stat_label(r)} | "
                     f"{value} | {r['n']} |")
    lines += ["", "| metric A | metric B | dataset | config | target | statistic | A − B | p (paired bootstrap) | p (Williams) "
              "| p (permutation, one-sided; clusters) |", "|---|---|---|---|---|---|---:|---:|---:|---:|"]
    for p in report["pairs"]:
        lines.append(f"| {p['metric_a']} | {p['metric_b']} | {p['dataset']} | {p['config']} | {p['target']} | "
                     f"{p['statistic']} | {_fmt(p['difference'])} | {_fmt_p(p['p_bootstrap'])} | {_fmt_p(p['p_williams'])} | "
                     f"{_fmt_p(p.get('p_one_sided'))} |")
    for p in report.get("pairs_left_out", ()):
        lines.append(f"\nNo paired test {p['metric_a']} vs {p['metric_b']} ({p['dataset']} {p['config']} "
                     f"{p['target']} {p['statistic']}): {p['reason']}")
    for s in report["skipped"]:
        lines.append(f"\nSkipped {s['metric']}: {s['reason']}")
    for unit, info in (report.get("datasets") or {}).items():
        for reason, count in (info.get("left_out") or {}).items():
            lines.append(f"\nLeft out of {unit}: {count} row(s) ({reason})")
        for note in info.get("notes") or ():
            lines.append(f"\n{unit}: {note}")
    for pub in report["published"]:
        lines.append(f"\nPublished, {pub['dataset']} {pub['config']} {pub['target']} ({pub['statistic']}): "
                     + "; ".join(pub["compare_with"]))
    lines.append(f"\nSignature: `{report['signature']}`")
    return "\n".join(lines) + "\n"


def plot_png(report: dict[str, Any]) -> bytes:
    """One panel per (dataset, config, target, statistic): each metric's value with its interval (PNG bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in report["rows"]:
        if _compact(report, r) and r["statistic"] in ("spearman", "oca", "auc") and r.get("level", "item") == "item":
            panels.setdefault((r["dataset"], r["config"], r["target"], r["statistic"]), []).append(r)
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.0, 1.0 + 0.45 * sum(len(v) + 2 for v in panels.values())),
                             squeeze=False)
    for ax, (key, rows) in zip(axes[:, 0], panels.items()):
        values = [r["value"] if r["value"] is not None and np.isfinite(r["value"]) else 0.0 for r in rows]
        err = [[max(0.0, v - r["ci_low"]) if np.isfinite(r["ci_low"]) else 0.0 for v, r in zip(values, rows)],
               [max(0.0, r["ci_high"] - v) if np.isfinite(r["ci_high"]) else 0.0 for v, r in zip(values, rows)]]
        ax.barh(range(len(rows)), values, xerr=err, capsize=4, color="#4C72B0")
        ax.set_yticks(range(len(rows)), [r["metric"] for r in rows], fontsize=8)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_title(" / ".join(key), fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _json_safe(value: Any) -> Any:
    """NaN and infinities as ``null`` (strict JSON), numpy numbers as Python numbers."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_outputs(folder: Path, report: dict[str, Any]) -> None:
    """``leaderboard.json`` (NaN as null), ``leaderboard.md`` and ``leaderboard.png``, each written atomically."""
    atomic_write_json(folder / "leaderboard.json", _json_safe(report))
    atomic_write_text(folder / "leaderboard.md", markdown(report))
    if report["rows"]:
        atomic_write_bytes(folder / "leaderboard.png", plot_png(report))
