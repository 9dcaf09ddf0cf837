"""The leaderboard's analyses of rated (human-judged quality) datasets: system-level rows, significance clusters
and the summary row per metric. Pure functions of per-item scores and targets (the statistics are
:mod:`dialeval.meta.stats`'s); no I/O. Which target is a unit's overall quality comes from its dataset's
declaration (the report's ``datasets`` entry), never from a dataset name here.

- **System level** (where at least :data:`MIN_SYSTEMS` systems have :data:`MIN_SYSTEM_ITEMS` items or more;
  the items of smaller systems are left out and counted): the statistic of the per-system mean metric score
  against the per-system mean human score, with a percentile interval over resamples of the systems (drawn with
  replacement) and of each drawn system's items (:data:`SYSTEM_RESAMPLE`), so that its state speaks of other
  systems, not only of other items of the same systems.
- **Significance clusters** per (dataset, config, target, statistic), as mt-metrics-eval assigns ranks: metrics
  with a defined value sorted best first; one joins the current cluster unless a member of it beats it in the
  seeded paired permutation test over items, one-sided (the better-valued metric better), at p ≤ :data:`ALPHA`
  (:func:`dialeval.meta.stats.significance_ranks`). An undefined value has no rank and no cluster; a metric
  alone on a unit is ``sole``, not ranked against anything.
- **Leads**: rank 1 among at least two defined metrics *and* an interval above 0. A correlation whose interval
  lies below 0 is ``negative``. An interval that says nothing (zero width, or leaving out its own value) is
  ``uninformative interval``; a metric whose scores are a monotone function of a human quality is a ``copy of a
  human quality``: neither is positive, and a copy is not ranked against the metrics.
- **Summary** per metric: the mean over (dataset, config) units of its Spearman ρ with the unit's overall
  quality, over the units where that ρ is defined, with a two-level bootstrap interval (units, then items);
  beside it the units it leads, is significantly negative on, is sole on, and is undefined on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.meta.stats import (
    mean_over_datasets_interval,
    paired_permutation,
    significance_ranks,
    system_level,
    system_level_interval,
)
from dialeval.meta.targets import (  # noqa: F401 - COPY and UNINFORMATIVE re-exported
    COPY,
    QUALITY_STATISTICS,
    STATISTICS,
    UNINFORMATIVE,
    Target,
    copy_state,
    interval_note,
    quality_copy,
    row_state,
)

SYSTEM_RESAMPLE = "systems and items"  #: a system-level interval draws systems, then each drawn system's items
MIN_SYSTEMS = 3  #: fewer systems give no system-level correlation
MIN_SYSTEM_ITEMS = 2  #: a system with fewer items is left out of the system level
ALPHA = 0.05  #: the clusters' significance level (one-sided p ≤ ALPHA, as mt-metrics-eval)


def overall_target(dataset: str, config: str) -> str | None:
    """The target a known dataset's summary row uses (its declaration's overall quality)."""
    from dialeval.meta import sources

    return sources.get(dataset).overall_target(config)


def overall_of(report: dict[str, Any], dataset: str, config: str) -> str | None:
    """The overall target of a unit of ``report`` (``None`` for a unit that is not rated)."""
    return (report.get("datasets") or {}).get(f"{dataset}/{config}", {}).get("overall")


def systems_of(rows: list[dict[str, Any]], field: str | None = "system") -> tuple[list[str | None] | None, dict[str, int]]:
    """Each row's system (``None`` for the items of a system with fewer than :data:`MIN_SYSTEM_ITEMS` items, left
    out) and ``{system: items}`` of those left out; ``(None, …)`` when a row names no system or fewer than
    :data:`MIN_SYSTEMS` systems remain."""
    if not field:
        return None, {}
    names = [r.get(field) for r in rows]
    if any(s is None for s in names):
        return None, {}
    counts: dict[str, int] = {}
    for s in names:
        counts[str(s)] = counts.get(str(s), 0) + 1
    small = {s: k for s, k in counts.items() if k < MIN_SYSTEM_ITEMS}
    if len(counts) - len(small) < MIN_SYSTEMS:
        return None, small
    return [None if str(s) in small else str(s) for s in names], small


def system_rows(scores: Sequence[float], targets: Sequence[Target], systems: list[str | None], *, n_resamples: int,
                seed: int, confidence: float, resample: str = SYSTEM_RESAMPLE) -> list[dict[str, Any]]:
    """One system-level row per quality target (Spearman, Pearson, Kendall); items whose system is ``None`` are
    left out; ``n`` is the number of systems; the interval resamples ``resample`` (:data:`SYSTEM_RESAMPLE`)."""
    keep = np.array([g is not None for g in systems])
    s = np.asarray(scores, dtype=float)[keep]
    groups = [g for g in systems if g is not None]
    copied = quality_copy(np.asarray(scores, dtype=float), list(targets))
    out = []
    for t in targets:
        if t.statistic not in QUALITY_STATISTICS:
            continue
        fn = STATISTICS[t.statistic]
        y = np.asarray(t.values, dtype=float)[keep]
        value = system_level(fn, s, y, groups)
        ci = system_level_interval(fn, s, y, groups, n_resamples=n_resamples, seed=seed, confidence=confidence,
                                   resample=resample)
        low, high = (ci["low"], ci["high"]) if math.isfinite(value) else (math.nan, math.nan)
        row = {"target": t.name, "statistic": t.statistic, "level": "system", "value": value, "ci_low": low,
               "ci_high": high, "undefined_resamples": ci["undefined"], "n": len(set(groups)), "resampled": resample,
               "state": row_state(t.statistic, value, low, high)}
        if note := interval_note(value, low, high):
            row["interval_note"] = note
        out.append(copy_state(row, copied))
    return out


def system_coverage(rows: list[dict[str, Any]], field: str | None) -> tuple[dict[str, list[int]] | None, list[str]]:
    """``(systems, notes)``: the systems of ``rows`` enough for a system level (:func:`systems_of`), and a note for
    what is left out of it or why there is none. A dataset that declares no system field has neither."""
    if not field or not rows:
        return None, []
    systems, small = systems_of(rows, field)
    notes = []
    if small:
        notes.append(f"{len(small)} system(s) with fewer than {MIN_SYSTEM_ITEMS} items left out of the system level "
                     f"({sum(small.values())} item(s)): {sorted(small)[:5]}")
    if systems is None:
        unnamed = sum(1 for r in rows if r.get(field) is None)
        kept = len({str(r.get(field)) for r in rows}) - len(small)
        notes.append(f"no system-level rows: {unnamed} of {len(rows)} items name no system" if unnamed else
                     f"no system-level rows: {kept} system(s) with {MIN_SYSTEM_ITEMS} or more items, fewer than the "
                     f"{MIN_SYSTEMS} a system-level correlation needs")
    return systems, notes


def system_results(rows: list[dict[str, Any]], field: str | None, scores: Sequence[float], targets: Sequence[Target],
                   *, n_resamples: int, seed: int, confidence: float) -> tuple[list[dict[str, Any]], list[str]]:
    """``(system-level rows, notes)`` of one unit (``meta-eval``): :func:`system_rows` where the rows name enough
    systems, with :func:`system_coverage`'s notes."""
    systems, notes = system_coverage(rows, field)
    if systems is None:
        return [], notes
    return system_rows(scores, targets, systems, n_resamples=n_resamples, seed=seed, confidence=confidence), notes


def permutation_p(statistic: str, sa: np.ndarray, sb: np.ndarray, target: Sequence[float], *, n_resamples: int,
                  seed: int) -> dict[str, float] | None:
    """The paired permutation test of two metrics on a quality target: ``p_value`` (two-sided) and
    ``p_one_sided`` (in the direction of the observed difference); ``None`` for other statistics."""
    if statistic not in QUALITY_STATISTICS:
        return None
    return paired_permutation(STATISTICS[statistic], sa, sb, target, n_resamples=n_resamples, seed=seed)


def _one_sided(pairs: list[dict[str, Any]]) -> dict[tuple[str, ...], float]:
    out = {}
    for p in pairs:
        v = p.get("p_one_sided")
        if v is not None and v == v:
            out[(p["dataset"], p["config"], p["target"], p["statistic"], p["metric_a"], p["metric_b"])] = v
    return out


def best_first(row: dict[str, Any]) -> tuple[bool, float, str]:
    """The sort key of a unit's rows, best first: by value (undefined last), ties by metric name."""
    value = row.get("value")
    defined = value is not None and math.isfinite(value)
    return not defined, -value if defined else 0.0, str(row["metric"])


def clusters(rows: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Significance ranks of the item-level rows of every rated (dataset, config, target, statistic), each group's
    rows best first (:func:`best_first`): ``rank`` (``None`` when undefined), ``sole`` (the only defined metric of
    its group) and ``leads`` (rank 1 among two or more, interval above 0)."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("level") == "item" and r["statistic"] in QUALITY_STATISTICS:
            groups.setdefault((r["dataset"], r["config"], r["target"], r["statistic"]), []).append(r)
    p_of = _one_sided(pairs)
    out = []
    for key, members in groups.items():
        defined = [m for m in members if m["value"] is not None and math.isfinite(m["value"])
                   and m.get("state") != COPY]
        names = [m["metric"] for m in defined]
        p = {(i, j): p_of[(*key, a, b)] for i, a in enumerate(names) for j, b in enumerate(names) if (*key, a, b) in p_of}
        ranks = dict(zip(names, significance_ranks([m["value"] for m in defined], p, ALPHA)))
        for m in sorted(members, key=best_first):
            rank = ranks.get(m["metric"])
            state = m.get("state") or row_state(m["statistic"], m["value"], m.get("ci_low", math.nan),
                                                m.get("ci_high", math.nan))
            sole = rank is not None and len(defined) == 1
            out.append({"dataset": key[0], "config": key[1], "target": key[2], "statistic": key[3],
                        "metric": m["metric"], "value": m["value"], "rank": rank, "state": state, "sole": sole,
                        "leads": rank == 1 and not sole and state == "positive"})
    return out


def _unit_flags(cluster_rows: list[dict[str, Any]], overall: dict[tuple[str, str], str]) -> dict[str, dict[str, int]]:
    flags: dict[str, dict[str, int]] = {}
    for c in cluster_rows:
        if c["statistic"] != "spearman" or c["target"] != overall.get((c["dataset"], c["config"])):
            continue
        mine = flags.setdefault(c["metric"], {"leads": 0, "negative": 0, "sole": 0})
        mine["leads"] += bool(c["leads"])
        mine["negative"] += c["state"] == "negative"
        mine["sole"] += bool(c["sole"])
    return flags


def summary(units: dict[tuple[str, str], dict[str, Any]], cluster_rows: list[dict[str, Any]], *, n_resamples: int,
            seed: int, confidence: float) -> list[dict[str, Any]]:
    """One row per metric scored on a rated unit: mean Spearman ρ with each unit's overall quality over the units
    where it is defined, its two-level bootstrap interval, and the units it leads, is negative, sole and
    undefined on. A unit is ``{"overall": target, "targets": {target: y}, "scores": {metric: scores}}``
    (``overall`` may be left out when ``targets`` holds one)."""
    fn = STATISTICS["spearman"]
    per_metric: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    names: dict[str, list[str]] = {}
    undefined: dict[str, list[str]] = {}
    overall: dict[tuple[str, str], str] = {}
    for (dataset, config), unit in units.items():
        target = unit.get("overall") or next(iter(unit["targets"]))
        overall[(dataset, config)] = target
        y = np.asarray(unit["targets"][target], dtype=float)
        for metric, scores in unit["scores"].items():
            s = np.asarray(scores, dtype=float)
            per_metric.setdefault(metric, [])
            if math.isfinite(fn(s, y)):
                per_metric[metric].append((s, y))
                names.setdefault(metric, []).append(f"{dataset}/{config}")
            else:
                undefined.setdefault(metric, []).append(f"{dataset}/{config}")
    flags = _unit_flags(cluster_rows, overall)
    out = []
    for metric, data in per_metric.items():
        res = (mean_over_datasets_interval(fn, data, n_resamples=n_resamples, seed=seed, confidence=confidence)
               if data else {"value": math.nan, "low": math.nan, "high": math.nan, "datasets": 0})
        f = flags.get(metric, {"leads": 0, "negative": 0, "sole": 0})
        out.append({"metric": metric, "statistic": "spearman", "target": "overall quality of each unit",
                    "mean": res["value"], "ci_low": res["low"], "ci_high": res["high"], "units": res["datasets"],
                    "unit_names": names.get(metric, []), "leads": f["leads"], "negative": f["negative"],
                    "sole": f["sole"], "undefined": len(undefined.get(metric, [])),
                    "undefined_units": undefined.get(metric, [])})
    return out


def fmt_value(x: Any) -> str:
    """A statistic as the tables print it: 3 decimals, ``–`` for a missing or undefined value."""
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.3f}"


def fmt_interval(row: dict[str, Any]) -> str:
    """``value [low, high]``, or ``undefined`` with no interval."""
    if row.get("value") is None or not np.isfinite(row["value"]):
        return "undefined"
    return f"{fmt_value(row['value'])} [{fmt_value(row['ci_low'])}, {fmt_value(row['ci_high'])}]"


def overview_markdown(report: dict[str, Any]) -> list[str]:
    """One line per rated unit: n, each metric's item-level Spearman ρ [CI] with the unit's overall quality, its
    system-level ρ [CI] (systems), and the published numbers to compare with. Metrics measured on one unit only
    (a dataset's stored columns) stay in that dataset's own table."""
    units = {k: v for k, v in (report.get("datasets") or {}).items() if v.get("overall")}
    rows = [r for r in report["rows"] if r["statistic"] == "spearman"
            and r["target"] == units.get(f"{r['dataset']}/{r['config']}", {}).get("overall")]
    item = {(r["metric"], f"{r['dataset']}/{r['config']}"): r for r in rows if r.get("level", "item") == "item"}
    system = {(r["metric"], f"{r['dataset']}/{r['config']}"): r for r in rows if r.get("level") == "system"}
    metrics = [m for m in dict.fromkeys(k[0] for k in item) if sum(k[0] == m for k in item) >= 2]
    if not metrics:
        return []
    published = {f"{p['dataset']}/{p['config']}": "; ".join(p["compare_with"]) for p in report.get("published", ())
                 if p["statistic"] == "spearman"
                 and p["target"] == units.get(f"{p['dataset']}/{p['config']}", {}).get("overall")}
    with_systems = [m for m in metrics if any(k[0] == m for k in system)]
    lines = ["| unit (overall quality) | n | " + " | ".join(f"{m} ρ [95% CI]" for m in metrics)
             + "".join(f" | {m} system ρ [95% CI] (systems)" for m in with_systems) + " | published |",
             "|---|---:|" + "---:|" * (len(metrics) + len(with_systems)) + "---|"]
    for unit, info in units.items():
        found = [item[(m, unit)] for m in metrics if (m, unit) in item]
        if not found:
            continue
        cells = [fmt_interval(r) if (r := item.get((m, unit))) else "–" for m in metrics]
        cells += [f"{fmt_interval(r)} ({r['n']})" if (r := system.get((m, unit))) else "–" for m in with_systems]
        dataset, config = unit.split("/", 1)
        lines.append(f"| {dataset} {config} (`{info['overall'].split('.', 1)[1]}`) | {found[0]['n']:,} | "
                     + " | ".join(cells) + f" | {published.get(unit, '–')} |")
    return [*lines, ""]
