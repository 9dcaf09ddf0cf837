"""``dialeval meta-eval``'s report as text and as a figure: a table of config, target, statistic, value and
interval (undefined statistics with their reason), what was left out, and a bar chart with interval whiskers."""

from __future__ import annotations

import io
import math
from typing import Any

from dialeval.io.files import atomic_write_bytes

# --------------------------------------------------------------------------------------------------


def _cell(x: Any) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.3f}"


def _statistic(row: dict[str, Any]) -> str:
    return f"{row['statistic']} (system)" if row.get("level") == "system" else row["statistic"]


def format_report(report: dict[str, Any]) -> str:
    """A plain-text table: config, n, target, statistic, value and interval; a system-level row's statistic is
    marked ``(system)`` and its ``n`` counts systems."""
    pct = round(report["bootstrap"]["confidence"] * 100)
    header = ("config", "n", "target", "statistic", "value", f"{pct}% interval")
    lines = [header]
    for cfg, res in report["configs"].items():
        for r in res["results"]:
            value, ci = _cell(r["value"]), f"[{_cell(r['ci_low'])}, {_cell(r['ci_high'])}]"
            if r.get("undefined"):
                value, ci = "undefined", f"({r['undefined']})"
            if r.get("interval_note"):
                ci += " uninformative" if r.get("state") == "uninformative interval" else " (leaves out its value)"
            if r.get("copies"):
                value += f" (copy of {r['copies']})"
            lines.append((cfg, str(r["n"]), r["target"], _statistic(r), value, ci))
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    out = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    if any(r.get("level") == "system" for res in report["configs"].values() for r in res["results"]):
        out.append("(system): the mean metric score per system against the mean human score, n = systems; its "
                   "interval resamples the systems and each drawn system's items")
    notes = {r["interval_note"] for res in report["configs"].values() for r in res["results"] if r.get("interval_note")}
    out += [f"interval: {n}" + ("" if n.startswith("the interval") else "; no sign is read from it")
            for n in sorted(notes)]
    copies = {r["copies"] for res in report["configs"].values() for r in res["results"] if r.get("copies")}
    out += [f"copy: the scores are a monotone function of the human quality {q} (a correlation of 1 by "
            "construction, not a metric's result); never marked positive" for q in sorted(copies)]
    out.append(f"metric: {report['metric']}   signature: {report['signature']}")
    for cfg, res in report["configs"].items():
        if res.get("metric_signature"):
            out.append(f"{cfg} metric signature: {res['metric_signature']}")
        for reason, count in (res.get("left_out") or {}).items():
            out.append(f"{cfg}: {count} row(s) left out ({reason})")
    for note in report.get("notes", ()):
        out.append(note)
    return "\n".join(out)


def plot_report(report: dict[str, Any], path: str) -> None:
    """A bar chart of every statistic with its bootstrap interval as whiskers (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, values, lows, highs = [], [], [], []
    for cfg, res in report["configs"].items():
        for r in res["results"]:
            labels.append(f"{cfg}\n{r['target']}\n({_statistic(r)})")
            values.append(r["value"])
            lows.append(r["value"] - r["ci_low"])
            highs.append(r["ci_high"] - r["value"])
    fig, ax = plt.subplots(figsize=(max(4.0, 1.9 * len(labels)), 4.2))
    ax.bar(range(len(values)), values, yerr=[lows, highs], capsize=6, color="#4C72B0")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(values)), labels, fontsize=8)
    ax.set_ylabel("value")
    pct = round(report["bootstrap"]["confidence"] * 100)
    ax.set_title(f"{report['metric']} on {report['dataset']} ({pct}% bootstrap intervals)", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    atomic_write_bytes(path, buf.getvalue())
    plt.close(fig)
