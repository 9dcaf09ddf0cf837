"""The leaderboard: every metric that runs here against every human-judged dataset it declares, with bootstrap
intervals and a paired test for every pair of metrics scored on the same rows.

Which metrics and datasets come from the registry (``meta_datasets``/``meta_adapter`` of each declaration);
each (metric, dataset, config) is scored by :mod:`dialeval.meta.evaluation` (the same adapters, rounding and
statistics as ``dialeval meta-eval``) and its scores are cached in ``OUT/cache/`` so that a rerun resumes.
A metric whose default model cannot load here (its declaration's probe says why) is listed as skipped.

Paired tests (same rows, same target): the difference of the two statistics, a paired bootstrap p-value
(:func:`dialeval.meta.stats.paired_bootstrap`) and, for Spearman ρ, Williams' test for dependent correlations
(:func:`dialeval.meta.stats.williams_test`, on the ρs and the two metrics' own ρ).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dialeval import registry
from dialeval._version import __version__
from dialeval.datasets import DATA_FOLDERS
from dialeval.datasets.predictive_engagement import METRIC_COLUMNS as PE_METRIC_COLUMNS
from dialeval.io.files import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    check_output_path,
)
from dialeval.io.signature import make_signature
from dialeval.meta import quality as lq
from dialeval.meta.evaluation import (
    STATISTICS,
    evaluate_scores,
    load_rows,
    paired_bootstrap,
    score_rows,
    spearman,
    targets_for,
    williams_test,
)
from dialeval.meta.published import PUBLISHED
from dialeval.registry import QUALITY_CONFIGS

#: The configs each dataset contributes (conTest/decTest: response generation, the sets with human scores; the
#: human-judged quality datasets: every config, at its level).
CONFIGS = {"contest": ("con_test_200_resp_gen", "dec_test_200_resp_gen"), "fed": ("turn", "dialog"),
           "dailydialog_plusplus": ("default",),
           **{d: tuple(cfgs) for d, cfgs in QUALITY_CONFIGS.items() if d != "fed"}}
#: Rows per cached chunk of a quality dataset other than FED: an interrupted run loses at most one chunk.
CHUNK_ROWS = 200
#: Published numbers to compare rows with: (dataset, config, target, statistic) → "who: value" lines.
MARKER = ".dialeval-leaderboard"
Log = Callable[[str], None]


def offline_reason(decl: registry.MetricDeclaration) -> str | None:
    """Why ``decl``'s default (first offered) model cannot load here, or ``None``."""
    probe = decl.probe_function()
    if probe is None or not decl.models:
        return None
    return probe(decl.models[0])


#: Stored columns of the authors' own metric values, scored as rows of their own (``column:NAME``): they
#: reproduce the published conTest numbers (human absolute scores, Tevet & Berant's Sent-BERT) and compare
#: with a dataset's own published metrics.
REFERENCE_COLUMNS = {"contest": ("column:metrics.abs_hds_mean", "column:metrics.SentBert"),
                     # PredictiveEngagement's file: the paper's RUBER (unreferenced), CTX and engagement scores
                     "predictive_engagement": tuple(f"column:metrics.{c}" for c in PE_METRIC_COLUMNS)}


def plan(datasets: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> tuple[list[tuple[str, str, str]], list[dict[str, str]]]:
    """``[(metric, dataset, config)]`` to score and ``[{"metric", "reason"}]`` skipped, from the registry. Without
    ``metrics``: every declared metric plus the :data:`REFERENCE_COLUMNS`; ``column:NAME`` asks for a stored column."""
    usable = registry.meta_evaluable()
    for d in datasets or ():
        if d not in CONFIGS:
            raise ValueError(f"--dataset {d!r} is not known; use one of {sorted(CONFIGS)}.")
    for m in metrics or ():
        if m not in usable and not m.startswith("column:"):
            raise ValueError(f"--metric {m!r} has no human-judged dataset here; use one of {sorted(usable)} or "
                             "column:NAME (a stored contest column, e.g. column:metrics.SentBert).")
    tasks, skipped = [], []
    for name, decl in usable.items():
        if metrics and name not in metrics:
            continue
        wanted = [d for d in decl.meta_datasets if not datasets or d in datasets]
        if not wanted:
            continue
        reason = offline_reason(decl)
        if reason:
            skipped.append({"metric": name, "reason": reason})
            continue
        tasks += [(name, d, c) for d in wanted for c in CONFIGS[d]]
    for d, stored in REFERENCE_COLUMNS.items():
        asked = [m for m in metrics or () if m.startswith("column:")]
        columns = [m for m in asked if m in stored or d == "contest" and not any(m in v for v in REFERENCE_COLUMNS.values())]
        columns = columns if metrics else list(stored)
        if columns and (not datasets or d in datasets):
            tasks += [(col, d, c) for col in columns for c in CONFIGS[d]]
    if not tasks:
        raise ValueError("nothing to score: no requested metric runs here on the requested datasets"
                         + (f" (skipped: {'; '.join(s['metric'] + ': ' + s['reason'] for s in skipped)})" if skipped else "."))
    return tasks, skipped


def _rows_fingerprint(rows: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def _chunked_scores(cache: Path, metric: str, dataset: str, config: str, rows: list[dict[str, Any]],
                    log: Log) -> dict[str, Any]:
    """Scores of a quality dataset other than FED, cached per :data:`CHUNK_ROWS` rows (``config.partK``) so that a
    killed run resumes from its last complete chunk; the whole is cached as well."""
    if dataset not in QUALITY_CONFIGS or dataset == "fed" or len(rows) <= CHUNK_ROWS or metric.startswith("column:"):
        return _cached_scores(cache, metric, dataset, config, rows, log)
    parts = [_cached_scores(cache, metric, dataset, f"{config}.part{k}", rows[i:i + CHUNK_ROWS], log)
             for k, i in enumerate(range(0, len(rows), CHUNK_ROWS))]
    scored = {"scores": [x for p in parts for x in p["scores"]], "signature": parts[0]["signature"]}
    return _cached_scores(cache, metric, dataset, config, rows, log, scored=scored,
                          seconds=sum(p.get("seconds") or 0 for p in parts))


def _cached_scores(cache: Path, metric: str, dataset: str, config: str, rows: list[dict[str, Any]],
                   log: Log, scored: dict[str, Any] | None = None, seconds: float | None = None) -> dict[str, Any]:
    """Scores of ``metric`` on ``rows``, read from ``cache`` when a previous run stored them for the same rows
    and dialeval version, else computed (or taken from ``scored``, its chunks' scores) and stored (atomically)."""
    key = {"metric": metric, "dataset": dataset, "config": config, "rows": _rows_fingerprint(rows),
           "version": __version__}
    path = cache / f"{metric.replace(':', '-')}__{dataset}__{config}.json"
    if path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stored = {}
        if stored.get("key") == key and len(stored.get("scores", ())) == len(rows):
            log(f"{metric} / {dataset} / {config}: cached")
            return stored
    if scored is None:
        start = time.perf_counter()
        scored = score_rows(metric, dataset, config.split(".part")[0], rows)
        seconds = time.perf_counter() - start
        log(f"{metric} / {dataset} / {config}: {len(rows)} rows scored in {seconds:.1f} s")
    out = {"key": key, "scores": scored["scores"], "signature": scored["signature"], "seconds": round(seconds or 0, 2)}
    atomic_write_json(path, out, indent=None)
    return out


def pair_left_out(a: str, b: str, sa: np.ndarray, sb: np.ndarray, target: Sequence[float]) -> str | None:
    """Why the paired test of ``a`` and ``b`` on ``target`` says nothing (``None`` when it is kept): a metric
    against itself (the same name, or the same scores under two names), or a metric whose scores are the human
    reference itself (e.g. conTest's stored ``abs_hds_mean`` against the target ``human_score_mean``), where
    Williams' test only measures the reference against itself."""
    y = np.asarray(target, dtype=float)
    if a == b or np.array_equal(sa, sb):
        return "self-pair: the two metrics' scores are identical"
    for name, s in ((a, sa), (b, sb)):
        if np.array_equal(s, y):
            return f"{name} is the human reference of this target"
    return None


def _pair_tests(a: str, b: str, sa: np.ndarray, sb: np.ndarray, target: Any, base: dict[str, Any],
                n_resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    y = np.asarray(target.values, dtype=float)
    fn = STATISTICS[target.statistic]
    boot = paired_bootstrap(fn, sa, sb, y, n_resamples=n_resamples, seed=seed, confidence=confidence)
    out = {"metric_a": a, "metric_b": b, **base, "value_a": fn(sa, y), "value_b": fn(sb, y),
           "difference": boot["difference"], "p_bootstrap": boot["p_value"], "diff_ci_low": boot["ci_low"],
           "diff_ci_high": boot["ci_high"], "p_williams": None, "t_williams": None}
    if target.statistic == "spearman":
        keep = ~np.isnan(y)  # the rows the two ρ are computed on (all, unless a target is undefined)
        r23 = spearman(sa[keep], sb[keep])
        if np.isfinite(r23) and np.isfinite(out["value_a"]) and np.isfinite(out["value_b"]):
            w = williams_test(out["value_a"], out["value_b"], r23, int(keep.sum()))
            out.update(p_williams=w["p_value"], t_williams=w["t"], rho_ab=r23)
    return out


def _analyse_group(dataset: str, config: str, data: list[dict[str, Any]], scored: dict[str, dict[str, Any]],
                   acc: dict[str, Any], *, n_resamples: int, fraction: float, seed: int, confidence: float) -> None:
    """Rows (item level, and system level where the data names systems), paired tests and the unit kept for the
    summary, of one (dataset, config) whose metrics are ``scored``; appended to ``acc``."""
    quality = lq.is_quality(dataset)
    targets = targets_for(dataset, config, data, all_qualities=True)
    systems = lq.systems_of(data) if quality else None
    for metric, res in scored.items():
        found = evaluate_scores(res["scores"], targets, n_resamples=n_resamples, fraction=fraction, seed=seed,
                                confidence=confidence)
        if quality:
            found = [{**r, "level": "item"} for r in found]
        if systems:
            found += lq.system_rows(res["scores"], targets, systems, n_resamples=n_resamples, seed=seed,
                                    confidence=confidence)
        acc["rows"] += [{"metric": metric, "dataset": dataset, "config": config, **r, "signature": res["signature"],
                         "seconds": res.get("seconds")} for r in found]
    for a, b in itertools.combinations(scored, 2):
        sa, sb = (np.asarray(scored[m]["scores"], dtype=float) for m in (a, b))
        for t in targets:
            base = {"dataset": dataset, "config": config, "target": t.name, "statistic": t.statistic}
            why = pair_left_out(a, b, sa, sb, t.values)
            if why:
                acc["left_out"].append({"metric_a": a, "metric_b": b, **base, "reason": why})
                continue
            pair = _pair_tests(a, b, sa, sb, t, base, n_resamples, seed, confidence)
            if quality:
                pair["p_permutation"] = lq.permutation_p(t.statistic, sa, sb, t.values, n_resamples=n_resamples,
                                                         seed=seed)
            acc["pairs"].append(pair)
    if quality:
        overall = lq.overall_target(dataset, config)
        y = np.asarray(next(t.values for t in targets if t.name == overall), dtype=float)
        acc["units"][(dataset, config)] = {"targets": {overall: y}, "scores": {
            m: res["scores"] for m, res in scored.items() if not np.array_equal(np.asarray(res["scores"], dtype=float), y)}}


def build(data_dir: str | os.PathLike, out: str | os.PathLike, *, datasets: Sequence[str] | None = None,
          metrics: Sequence[str] | None = None, max_rows: dict[str, int] | None = None, n_resamples: int = 1000,
          fraction: float = 0.5, seed: int = 0, confidence: float = 0.95, log: Log = print) -> dict[str, Any]:
    """Score, correlate, test and write ``OUT/leaderboard.json``, ``leaderboard.md`` and ``leaderboard.png``."""
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"--data-dir {str(root)!r} is not a folder; give the folder holding "
                                f"{', '.join(sorted(set(DATA_FOLDERS[d] for d in CONFIGS)))}/.")
    for d, n in (max_rows or {}).items():
        if d not in CONFIGS or isinstance(n, bool) or not isinstance(n, int) or n < 10:
            raise ValueError(f"--max-rows {d}={n!r}: give a dataset of {sorted(CONFIGS)} and at least 10 rows.")
    if not 0 < fraction <= 1 or not 0 < confidence < 1 or n_resamples < 1 or seed < 0:
        raise ValueError(f"bootstrap settings out of range: --fraction {fraction} must be in (0, 1], confidence "
                         f"{confidence} in (0, 1), --resamples {n_resamples} ≥ 1, --seed {seed} ≥ 0.")
    tasks, skipped = plan(datasets, metrics)  # every check before OUT is created
    target_dir = prepare_out(out, root)
    started = time.perf_counter()
    acc: dict[str, Any] = {"rows": [], "pairs": [], "left_out": [], "units": {}}
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    settings = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    for (dataset, config), group in itertools.groupby(sorted(tasks, key=lambda t: (t[1], t[2])), key=lambda t: (t[1], t[2])):
        data = load_rows(dataset, config, data_dir=root / DATA_FOLDERS[dataset])
        limit = (max_rows or {}).get(dataset)
        if limit:
            data = _first_sources(dataset, data, limit)
        scored = {m: _chunked_scores(target_dir / "cache", m, dataset, config, data, log) for m, _, _ in group}
        groups[(dataset, config)] = {"rows": len(data), "metrics": list(scored)}
        _analyse_group(dataset, config, data, scored, acc, fraction=fraction, **settings)
    rows_out, pairs, left_out = acc["rows"], acc["pairs"], acc["left_out"]
    cluster_rows = lq.clusters(rows_out, pairs)
    summary = lq.summary(acc["units"], cluster_rows, **settings) if acc["units"] else []
    report = {
        "generator": "dialeval leaderboard", "rows": rows_out, "pairs": pairs,
        "pairs_left_out": left_out, "clusters": cluster_rows, "summary": summary, "skipped": skipped,
        "datasets": {f"{d}/{c}": g for (d, c), g in groups.items()}, "max_rows": dict(max_rows or {}),
        "bootstrap": {"n_resamples": n_resamples, "fraction": fraction, "seed": seed, "confidence": confidence,
                      "paired": "with replacement, same rows for both metrics",
                      "clusters": f"paired permutation test over items, {n_resamples} resamples, p < {lq.ALPHA}",
                      "system_level": "items drawn with replacement, system means recomputed",
                      "summary": "units (dataset/config) with replacement, then items with replacement"},
        "published": [{"dataset": k[0], "config": k[1], "target": k[2], "statistic": k[3], "compare_with": v}
                      for k, v in PUBLISHED.items() if (k[0], k[1]) in groups],  # only the units this run scored
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
    report["signature"] = make_signature(
        "leaderboard", configs=[f"{d}/{c}" for d, c in groups], metrics=sorted({t[0] for t in tasks}),
        boot=n_resamples, frac=fraction, seed=seed, conf=confidence,
        max_rows=",".join(f"{k}={v}" for k, v in sorted((max_rows or {}).items())) or None)
    write_outputs(target_dir, report)
    return report


def _first_sources(dataset: str, rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The rows of the first ``limit`` source rows (DailyDialog++: contexts, each expanded to 15 rows)."""
    if dataset != "dailydialog_plusplus":
        return rows[:limit]
    ids: list[Any] = []
    for r in rows:
        if r["id"] not in ids:
            ids.append(r["id"])
        if len(ids) > limit:
            break
    keep = set(ids[:limit])
    return [r for r in rows if r["id"] in keep]


def prepare_out(out: str | os.PathLike, data_dir: Path) -> Path:
    """``OUT`` as a folder this command may write: new, empty, or made by an earlier ``dialeval leaderboard``
    (its marker file present). Anything else, or a folder inside the data, is refused."""
    path = check_output_path(out, inputs=[data_dir], kind="dir", option="--out")
    if os.path.realpath(path).startswith(os.path.realpath(data_dir) + os.sep):
        raise ValueError(f"--out {str(path)!r} is inside the data folder {str(data_dir)!r}; choose a folder outside it.")
    if path.is_dir() and any(path.iterdir()) and not (path / MARKER).is_file():
        raise FileExistsError(f"--out {str(path)!r} is a non-empty folder that `dialeval leaderboard` did not create; "
                              "choose a new or empty folder.")
    path.mkdir(parents=True, exist_ok=True)
    if not (path / MARKER).is_file():
        atomic_write_text(path / MARKER, "written by `dialeval leaderboard`; it may rewrite this folder.\n")
    return path


_fmt = lq.fmt_value


def _fmt_p(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.3g}"


def _compact(row: dict[str, Any]) -> bool:
    """Whether a row has a column in the compact tables: every row of the older protocols; of a quality dataset
    only its overall quality (the full list of rows follows the tables)."""
    return not lq.is_quality(row["dataset"]) or row["target"] == lq.overall_target(row["dataset"], row["config"])


def _stat_label(row: dict[str, Any]) -> str:
    return f"{row['statistic']} (system)" if row.get("level") == "system" else row["statistic"]


def quality_markdown(report: dict[str, Any]) -> list[str]:
    """The summary row per metric and the significance clusters of each unit's overall quality (Spearman)."""
    lines = []
    if report.get("summary"):
        lines += ["| metric | mean ρ over units | 95% CI | units | top cluster in |", "|---|---:|---|---:|---:|"]
        lines += [f"| {r['metric']} | {_fmt(r['mean'])} | [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | {r['units']} | "
                  f"{r['top_cluster_units']} |" for r in report["summary"]]
        lines.append("")
    shown = [c for c in report.get("clusters", ()) if c["statistic"] == "spearman"
             and c["target"] == lq.overall_target(c["dataset"], c["config"])]
    if shown:
        lines += ["| dataset | config | target | rank | metric | ρ |", "|---|---|---|---:|---|---:|"]
        lines += [f"| {c['dataset']} | {c['config']} | {c['target']} | {c['rank']} | {c['metric']} | {_fmt(c['value'])} |"
                  for c in sorted(shown, key=lambda c: (c["dataset"], c["config"], c["rank"]))]
        lines.append("")
    return lines


def summary_markdown(report: dict[str, Any]) -> str:
    """One compact table per dataset: a line per metric, a column per (config, target, statistic), each cell
    ``value [ci_low, ci_high]``."""
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in report["rows"]):
        rows = [r for r in report["rows"] if r["dataset"] == dataset and _compact(r)]
        cols = list(dict.fromkeys((r["config"], r["target"], _stat_label(r)) for r in rows))
        cells = {(r["metric"], r["config"], r["target"], _stat_label(r)): f"{_fmt(r['value'])} [{_fmt(r['ci_low'])}, "
                 f"{_fmt(r['ci_high'])}]" for r in rows}
        out += [f"| {dataset} | " + " | ".join(f"{c} {t} {st}" for c, t, st in cols) + " |",
                "|---|" + "---:|" * len(cols)]
        for metric in dict.fromkeys(r["metric"] for r in rows):
            out.append(f"| {metric} | " + " | ".join(cells.get((metric, *c), "–") for c in cols) + " |")
        out.append("")
    return "\n".join(out)


def markdown(report: dict[str, Any]) -> str:
    """The leaderboard as Markdown: the overview of the quality units (:func:`dialeval.meta.quality.
    overview_markdown`), compact tables per dataset, then every row and every paired test."""
    pct = round(report["bootstrap"]["confidence"] * 100)
    lines = [*lq.overview_markdown(report), summary_markdown(report), *quality_markdown(report),
             f"| metric | dataset | config | target | statistic | value | {pct}% CI | n |", "|---|---|---|---|---|---:|---|---:|"]
    for r in report["rows"]:
        lines.append(f"| {r['metric']} | {r['dataset']} | {r['config']} | {r['target']} | {_stat_label(r)} | "
                     f"{_fmt(r['value'])} | [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | {r['n']} |")
    lines += ["", "| metric A | metric B | dataset | config | target | statistic | A − B | p (paired bootstrap) | p (Williams) |",
              "|---|---|---|---|---|---|---:|---:|---:|"]
    for p in report["pairs"]:
        lines.append(f"| {p['metric_a']} | {p['metric_b']} | {p['dataset']} | {p['config']} | {p['target']} | "
                     f"{p['statistic']} | {_fmt(p['difference'])} | {_fmt_p(p['p_bootstrap'])} | {_fmt_p(p['p_williams'])} |")
    for p in report.get("pairs_left_out", ()):
        lines.append(f"\nNo paired test {p['metric_a']} vs {p['metric_b']} ({p['dataset']} {p['config']} "
                     f"{p['target']} {p['statistic']}): {p['reason']}")
    for s in report["skipped"]:
        lines.append(f"\nSkipped {s['metric']}: {s['reason']}")
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
        if _compact(r) and r["statistic"] in ("spearman", "oca", "auc") and r.get("level", "item") == "item":
            panels.setdefault((r["dataset"], r["config"], r["target"], r["statistic"]), []).append(r)
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.0, 1.0 + 0.45 * sum(len(v) + 2 for v in panels.values())),
                             squeeze=False)
    for ax, (key, rows) in zip(axes[:, 0], panels.items()):
        values = [r["value"] for r in rows]
        err = [[max(0.0, r["value"] - r["ci_low"]) for r in rows], [max(0.0, r["ci_high"] - r["value"]) for r in rows]]
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
