"""The leaderboard's analyses of the human-judged quality datasets (USR, GRADE, DSTC9, ConTurE, DSTC10 …, and
FED with every quality): system-level rows, significance clusters and the summary row per metric. Pure
functions of per-item scores and targets (the statistics are :mod:`dialeval.meta.stats`'s); no I/O.

- **System level** (where the rows name at least :data:`MIN_SYSTEMS` systems): the statistic of the per-system
  mean metric score against the per-system mean human score, with a percentile interval over items drawn
  with replacement (system means recomputed in each resample).
- **Significance clusters** per (dataset, config, target, statistic), as in mt-metrics-eval: metrics sorted by
  value; one joins the current cluster unless a member of it beats it in the seeded paired permutation test
  over items at p < :data:`ALPHA` (:func:`dialeval.meta.stats.significance_ranks`).
- **Summary** per metric: the mean over (dataset, config) units of its Spearman ρ with the unit's overall
  quality (:data:`dialeval.registry.QUALITY_CONFIGS`), with a two-level bootstrap interval (units, then items).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.meta.evaluation import QUALITY_STATISTICS, STATISTICS, Target
from dialeval.meta.stats import (
    item_bootstrap_interval,
    mean_over_datasets_interval,
    paired_permutation,
    significance_ranks,
    system_level,
)
from dialeval.registry import QUALITY_CONFIGS

MIN_SYSTEMS = 3  #: fewer systems give no system-level correlation
ALPHA = 0.05  #: the clusters' significance level


def is_quality(dataset: str) -> bool:
    return dataset in QUALITY_CONFIGS


def overall_target(dataset: str, config: str) -> str:
    """The target the summary row and the headline use: the mean of the unit's overall quality."""
    return f"annotation_means.{QUALITY_CONFIGS[dataset][config][1]}"


def systems_of(rows: list[dict[str, Any]]) -> list[str] | None:
    """Each row's system, when every row names one and there are at least :data:`MIN_SYSTEMS`; else ``None``."""
    systems = [r.get("system") for r in rows]
    if any(s is None for s in systems) or len(set(systems)) < MIN_SYSTEMS:
        return None
    return [str(s) for s in systems]


def system_rows(scores: Sequence[float], targets: Sequence[Target], systems: list[str], *, n_resamples: int,
                seed: int, confidence: float) -> list[dict[str, Any]]:
    """One system-level row per quality target (Spearman, Pearson, Kendall)."""
    s = np.asarray(scores, dtype=float)
    out = []
    for t in targets:
        if t.statistic not in QUALITY_STATISTICS:
            continue
        fn = STATISTICS[t.statistic]

        def stat(x: np.ndarray, y: np.ndarray, g: np.ndarray, fn: Any = fn) -> float:
            return system_level(fn, x, y, list(g))

        y = np.asarray(t.values, dtype=float)
        ci = item_bootstrap_interval(stat, [s, y, systems], n_resamples=n_resamples, seed=seed, confidence=confidence)
        out.append({"target": t.name, "statistic": t.statistic, "level": "system", "value": stat(s, y, np.asarray(systems)),
                    "ci_low": ci["low"], "ci_high": ci["high"], "undefined_resamples": ci["undefined"],
                    "n": len(set(systems))})
    return out


def permutation_p(statistic: str, sa: np.ndarray, sb: np.ndarray, target: Sequence[float], *, n_resamples: int,
                  seed: int) -> float | None:
    """The paired permutation p-value of two metrics on a quality target (``None`` for other statistics)."""
    if statistic not in QUALITY_STATISTICS:
        return None
    return paired_permutation(STATISTICS[statistic], sa, sb, target, n_resamples=n_resamples, seed=seed)["p_value"]


def clusters(rows: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Significance ranks of the item-level rows of every quality (dataset, config, target, statistic)."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if is_quality(r["dataset"]) and r.get("level", "item") == "item" and r["statistic"] in QUALITY_STATISTICS:
            groups.setdefault((r["dataset"], r["config"], r["target"], r["statistic"]), []).append(r)
    p_of = {(p["dataset"], p["config"], p["target"], p["statistic"], p["metric_a"], p["metric_b"]): p.get("p_permutation")
            for p in pairs}
    out = []
    for key, members in groups.items():
        names = [m["metric"] for m in members]
        values = [m["value"] if m["value"] is not None else float("nan") for m in members]
        p = {}
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                v = p_of.get((*key, a, b))
                if v is not None and v == v:
                    p[(i, j)] = v
        for m, rank in zip(members, significance_ranks(values, p, ALPHA)):
            out.append({"dataset": key[0], "config": key[1], "target": key[2], "statistic": key[3],
                        "metric": m["metric"], "value": m["value"], "rank": rank})
    return out


def summary(units: dict[tuple[str, str], dict[str, Any]], cluster_rows: list[dict[str, Any]], *, n_resamples: int,
            seed: int, confidence: float) -> list[dict[str, Any]]:
    """One row per metric scored on a quality unit: mean Spearman ρ with each unit's overall quality, its
    two-level bootstrap interval, and on how many units it is in the top significance cluster."""
    per_metric: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    names: dict[str, list[str]] = {}
    for (dataset, config), unit in units.items():
        y = unit["targets"][overall_target(dataset, config)]
        for metric, scores in unit["scores"].items():
            per_metric.setdefault(metric, []).append((np.asarray(scores, dtype=float), y))
            names.setdefault(metric, []).append(f"{dataset}/{config}")
    top = {}
    for c in cluster_rows:
        if c["statistic"] == "spearman" and c["target"] == overall_target(c["dataset"], c["config"]) and c["rank"] == 1:
            top[c["metric"]] = top.get(c["metric"], 0) + 1
    out = []
    for metric, data in per_metric.items():
        res = mean_over_datasets_interval(STATISTICS["spearman"], data, n_resamples=n_resamples, seed=seed,
                                          confidence=confidence)
        out.append({"metric": metric, "statistic": "spearman", "target": "overall quality of each unit",
                    "mean": res["value"], "ci_low": res["low"], "ci_high": res["high"], "units": res["datasets"],
                    "unit_names": names[metric], "top_cluster_units": top.get(metric, 0)})
    return out


def fmt_value(x: Any) -> str:
    """A statistic as the tables print it: 3 decimals, ``–`` for a missing or undefined value."""
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.3f}"


def overview_markdown(report: dict[str, Any]) -> list[str]:
    """One line per quality unit (the README's quality table): n, each metric's item-level Spearman ρ [CI] with
    the unit's overall quality, its system-level ρ (systems), and the published numbers to compare with. Metrics
    measured on one unit only (a dataset's stored columns) stay in that dataset's own table."""
    rows = [r for r in report["rows"] if is_quality(r["dataset"]) and r["statistic"] == "spearman"
            and r["target"] == overall_target(r["dataset"], r["config"])]
    item = {(r["metric"], r["dataset"], r["config"]): r for r in rows if r.get("level", "item") == "item"}
    system = {(r["metric"], r["dataset"], r["config"]): r for r in rows if r.get("level") == "system"}
    metrics = [m for m in dict.fromkeys(k[0] for k in item) if sum(k[0] == m for k in item) >= 2]
    if not metrics:
        return []
    published = {(p["dataset"], p["config"]): "; ".join(p["compare_with"]) for p in report.get("published", ())
                 if p["statistic"] == "spearman" and is_quality(p["dataset"])
                 and p["target"] == overall_target(p["dataset"], p["config"])}
    with_systems = [m for m in metrics if any(k[0] == m for k in system)]
    lines = ["| unit (overall quality) | n | " + " | ".join(f"{m} ρ [95% CI]" for m in metrics)
             + "".join(f" | {m} system ρ (systems)" for m in with_systems) + " | published |",
             "|---|---:|" + "---:|" * (len(metrics) + len(with_systems)) + "---|"]
    for dataset, configs in QUALITY_CONFIGS.items():
        for config, (_, quality) in configs.items():
            found = [item[(m, dataset, config)] for m in metrics if (m, dataset, config) in item]
            if not found:
                continue
            cells = [f"{fmt_value(r['value'])} [{fmt_value(r['ci_low'])}, {fmt_value(r['ci_high'])}]"
                     if (r := item.get((m, dataset, config))) else "–" for m in metrics]
            cells += [f"{fmt_value(r['value'])} ({r['n']})" if (r := system.get((m, dataset, config))) else "–"
                      for m in with_systems]
            lines.append(f"| {dataset} {config} (`{quality}`) | {found[0]['n']:,} | " + " | ".join(cells)
                         + f" | {published.get((dataset, config), '–')} |")
    return [*lines, ""]
