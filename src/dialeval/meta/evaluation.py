"""Meta-evaluation: how well does a metric agree with human judgements on the benchmarks it was validated on?

Protocols (each as its paper defines it)
-----------------------------------------
- **conTest** (Tevet & Berant, EACL 2021; configs ``con_test_200_*``): the metric scores each row's set of
  5 responses. Targets: ``label_value`` (content diversity, 0 or 1) by Spearman ρ and by the optimal
  classification accuracy (OCA: the best single threshold, either way round); ``human_score_mean`` (mean
  absolute human diversity score, 1-5) by Spearman ρ.
- **decTest** (same paper; ``dec_test_200_*`` with human scores, ``dec_test_1000_*`` without): the metric
  scores each set of 10 responses sampled at one temperature; target ``label_value`` (the temperature) by
  Spearman ρ, plus ``human_score_mean`` by Spearman ρ on ``dec_test_200``. No OCA (the label is not binary).
  For both tests Tevet's pipeline stores metric values with 3 decimals (``'{:.3f}'``) before correlating,
  so computed scores are rounded to 3 decimals by default (stored ``column:`` values are used as stored).
- **FED** (Mehri & Eskenazi, SIGDIAL 2020), as the FULL paper (De Bruyn et al. 2022) evaluates on it:
  turn level (375 rows) scores the context plus the rated system response, dialog level (125 rows) the
  whole conversation; target the mean ``Overall`` rating (5 annotators; ``"N/A (…)"`` answers would be
  left out of the mean, and ``Overall`` has none), Spearman ρ. The speaker tags (``User:``/``System:``)
  are stripped, as the ``full`` package feeds bare turns (compat mode joins them as it does, ``"\t"``;
  default mode uses the metric's measured default formulation). ``--metric-arg speaker_prefix=true``
  restores the earlier texts with the tags.

- **DailyDialog++** (Sai et al., TACL 2020; config ``default``, test split): each context has 5 human positive,
  5 random negative and 5 adversarial negative responses; each (context, response) is one scored row. Targets:
  ROC AUC of positives against random negatives and against adversarial negatives (Mann–Whitney, ties ½).

- **Human-judged quality datasets** (:data:`dialeval.registry.QUALITY_CONFIGS`: USR, GRADE, DSTC9, PredictiveEngagement,
  Holistic, ConTurE, the DSTC10-format files): each row is scored at its config's level (the adapter is told
  ``turn`` or ``dialog``); empty context turns are left out, and so are turn rows with an empty response. Targets:
  every quality's mean over annotators by Spearman ρ, Pearson r and Kendall τ-b (an item whose mean is undefined,
  every rater answered N/A, is left out of that quality). FED keeps the protocol above unless every quality is
  asked for (``targets_for(..., all_qualities=True)``, as the leaderboard does).

Ties: Spearman ρ is Pearson r of average ranks (``scipy.stats.spearmanr``); OCA cuts only between distinct
scores. A non-finite metric score is an error, never silently dropped.

Every statistic has a seeded bootstrap interval: ``n_resamples`` subsamples of ``fraction`` of the rows drawn
without replacement, percentile interval. The statistics are pure functions of arrays (no I/O); a metric is
an *adapter* ``rows -> per-row scores`` (:func:`make_adapter`).
"""

from __future__ import annotations

import inspect
import io
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dialeval import registry
from dialeval.io.files import atomic_write_bytes
from dialeval.io.signature import make_signature
from dialeval.meta.stats import (  # noqa: F401 - re-exported
    auc,
    average_ranks,
    best_threshold_accuracy,
    bootstrap_interval,
    complete_pairs,
    kendall,
    paired_bootstrap,
    pearson,
    spearman,
    subsample_indices,
    williams_test,
)
from dialeval.models import loading
from dialeval.registry import (  # noqa: F401 - parse_metric_args re-exported
    QUALITY_CONFIGS,
    Adapter,
    parse_metric_args,
    response_sets,
)

# --------------------------------------------------------------------------------------------------
# Metric adapters: rows -> per-row scores
# --------------------------------------------------------------------------------------------------


def _lookup(row: dict[str, Any], name: str) -> Any:
    """A stored column: a top-level field, ``a.b`` for nested fields, or a ``metrics`` entry (with or
    without the ``metric_`` prefix)."""
    if name in row:
        return row[name]
    metrics = row.get("metrics") or {}
    bare = name[len("metric_"):] if name.startswith("metric_") else name
    if bare in metrics:
        return metrics[bare]
    value: Any = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return KeyError
        value = value[part]
    return value


def column_names(row: dict[str, Any]) -> list[str]:
    """The numeric columns ``column:NAME`` can use on rows like ``row``."""
    names = [k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    names += list(row.get("metrics") or {})
    for k, v in row.items():
        if isinstance(v, dict) and k != "metrics":
            names += [f"{k}.{sub}" for sub, x in v.items() if isinstance(x, (int, float))]
    return names


def column_adapter(name: str) -> Adapter:
    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        out = []
        for i, row in enumerate(rows):
            value = _lookup(row, name)
            if value is KeyError:
                raise ValueError(f"column {name!r} is not in this dataset; available: {column_names(row)}.")
            if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"row {i}: column {name!r} is {value!r}, not a number.")
            out.append(float(value))
        return {"scores": out, "signature": f"column:{name}"}

    return score


def loaded_set_adapter(name: str, options: dict[str, Any]) -> Adapter:
    """Load ``name`` with ``options`` and ``compute`` each row's response set (the default adapter of a
    ``response_sets`` metric)."""

    module = loading.load(name, **options)
    def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
        res = module.compute(predictions=response_sets(rows))
        return {"scores": list(res["scores"]), "signature": res.get("signature")}

    return score


def make_adapter(metric: str, dataset: str, config: str, options: dict[str, Any] | None = None) -> Adapter:
    """The adapter scoring ``dataset`` rows with ``metric`` (``column:NAME`` reads a stored column).

    ``options`` are the metric's load options (``--metric-arg``), e.g. ``{"model": "/path"}``.
    """
    options = dict(options or {})
    if metric.startswith("column:"):
        if options:
            raise ValueError("column:NAME takes no --metric-arg options.")
        return column_adapter(metric[len("column:"):])
    decls = registry.declarations()
    usable = sorted(registry.meta_evaluable())
    if metric not in decls:
        raise ValueError(f"unknown metric {metric!r} for meta-evaluation; use one of {usable} or column:NAME.")
    decl = decls[metric]
    if not decl.meta_datasets:
        what = ("is corpus-level (one score for a whole list of responses)" if decl.inputs == "responses"
                else f"reads {registry.INPUT_KINDS[decl.inputs]}")
        raise ValueError(f"{metric} {what}; no human-judged dataset here rates what it scores. Meta-evaluation "
                         f"covers {usable} and column:NAME.")
    if dataset not in decl.meta_datasets:
        raise ValueError(f"{metric} does not apply to {dataset!r}; it scores {sorted(decl.meta_datasets)}.")
    factory = decl.meta_adapter_factory()
    if factory and dataset in QUALITY_CONFIGS:  # a quality dataset's adapter is told its level (and overall quality)
        level, quality = QUALITY_CONFIGS[dataset][config]
        if "quality" in inspect.signature(factory).parameters:
            return factory(options, level, quality=quality)
        return factory(options, level)
    return factory(options, config) if factory else loaded_set_adapter(metric, options)


# --------------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------------

DEFAULT_CONFIGS = {"contest": ["con_test_200_resp_gen"], "fed": ["turn", "dialog"], "dailydialog_plusplus": ["default"],
                   **{d: list(cfgs) for d, cfgs in QUALITY_CONFIGS.items() if d != "fed"}}
#: What each quality is correlated by, for the human-judged quality datasets (FED keeps FULL's protocol,
#: Spearman of ``Overall``, unless every quality is asked for).
QUALITY_STATISTICS = ("spearman", "pearson", "kendall")
DDPP_KINDS = {"positive_responses": 1.0, "random_negative_responses": 0.0, "adversarial_negative_responses": -1.0}
FED_TARGET = "annotation_means.Overall"


@dataclass
class Target:
    name: str
    values: list[float]
    statistic: str  # "spearman" or "oca"


def quality_targets(rows: list[dict[str, Any]], first: str | None = None) -> list[Target]:
    """Every annotated quality's mean (``annotation_means.<quality>``; ``None`` → NaN, left out of the
    statistic) by each of :data:`QUALITY_STATISTICS`; ``first`` (a target name) is put first."""
    qualities = list(rows[0]["annotation_means"]) if rows else []
    out = []
    for q in qualities:
        values = [math.nan if r["annotation_means"][q] is None else float(r["annotation_means"][q]) for r in rows]
        out += [Target(f"annotation_means.{q}", values, st) for st in QUALITY_STATISTICS]
    return sorted(out, key=lambda t: t.name != first) if first else out


def targets_for(dataset: str, config: str, rows: list[dict[str, Any]], *, all_qualities: bool = False) -> list[Target]:
    """What each protocol correlates the metric with (see the module docstring); ``all_qualities``: FED's
    every quality by every :data:`QUALITY_STATISTICS` (its ``Overall`` Spearman first), as the leaderboard
    reports it."""
    if dataset == "contest":
        labels = [float(r["label_value"]) for r in rows]
        out = [Target("label_value", labels, "spearman")]
        if config.startswith("con_test"):
            out.append(Target("label_value", labels, "oca"))
        human = [r.get("human_score_mean") for r in rows]
        if all(h is not None for h in human):
            out.append(Target("human_score_mean", [float(h) for h in human], "spearman"))
        elif any(h is not None for h in human):
            raise ValueError(f"{config}: human_score_mean is missing on some rows but not all.")
        return out
    if dataset == "fed" and not all_qualities:
        overall = [r["annotation_means"]["Overall"] for r in rows]
        return [Target(FED_TARGET, [float(v) for v in overall], "spearman")]
    if dataset in QUALITY_CONFIGS:
        return quality_targets(rows, first=FED_TARGET if dataset == "fed" else None)
    if dataset == "dailydialog_plusplus":
        kind = [float(r["label"]) for r in rows]
        return [Target("positive_vs_random", [k if k >= 0 else math.nan for k in kind], "auc"),
                Target("positive_vs_adversarial", [1.0 if k == 1 else 0.0 if k < 0 else math.nan for k in kind], "auc")]
    raise ValueError(f"no meta-evaluation protocol for {dataset!r}; use one of {sorted(DEFAULT_CONFIGS)}.")


def protocol_rows(dataset: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a metric scores: DailyDialog++ contexts become one row per (context, response), labelled 1
    (positive), 0 (random negative) or −1 (adversarial negative); the quality datasets' rows as
    :func:`quality_protocol_rows` says; other datasets' rows are used as they are."""
    if dataset in QUALITY_CONFIGS and dataset != "fed":
        return quality_protocol_rows(rows)
    if dataset != "dailydialog_plusplus":
        return rows
    return [{"id": r["id"], "context": list(r["context"]), "response": text, "label": label}
            for r in rows for field, label in DDPP_KINDS.items() for text in r[field]]


def quality_protocol_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A quality dataset's rows as a metric scores them: empty turns (a user who sent nothing, DSTC9/ConTurE)
    left out of the context, and a turn-level row whose rated response is empty left out (there is no text to
    score: ConTurE has 14)."""
    out = []
    for r in rows:
        if "response" in r and not (r["response"] or "").strip():
            continue
        keep = [i for i, t in enumerate(r["context"]) if t.strip()]
        speakers = r.get("speakers") or []
        out.append({**r, "context": [r["context"][i] for i in keep],
                    "speakers": [speakers[i] for i in keep] if len(speakers) == len(r["context"]) else speakers})
    return out


def load_rows(dataset: str, config: str, *, data_dir: str | os.PathLike | None = None,
              cache_dir: str | None = None) -> list[dict[str, Any]]:
    """The scored rows of ``dataset``/``config``: its test split (the first split when it has none)."""
    from dialeval import datasets as dd

    ds = dd.load(dataset, config, data_dir=data_dir, cache_dir=cache_dir)
    split = "test" if "test" in ds else next(iter(ds))
    return protocol_rows(dataset, ds[split].to_list())


def _oca(scores: np.ndarray, labels: np.ndarray) -> float:
    return best_threshold_accuracy(scores, labels)[0] if len(np.unique(labels)) == 2 else float("nan")


def _labelled_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUC of the rows labelled 1 against those labelled 0 (NaN labels left out; NaN when a class is absent)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    return auc(pos, neg) if len(pos) and len(neg) else float("nan")


STATISTICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "spearman": complete_pairs(spearman), "oca": _oca, "auc": _labelled_auc, "pearson": complete_pairs(pearson),
    "kendall": complete_pairs(kendall)}


def evaluate_scores(scores: Sequence[float], targets: Sequence[Target], *, n_resamples: int = 1000,
                    fraction: float = 0.5, seed: int = 0, confidence: float = 0.95) -> list[dict[str, Any]]:
    """Each target's statistic of ``scores`` with its bootstrap interval (pure: no I/O)."""
    s = np.asarray(scores, dtype=float)
    if not np.all(np.isfinite(s)):
        bad = int(np.flatnonzero(~np.isfinite(s))[0])
        raise ValueError(f"the metric gave a non-finite score ({s[bad]}) for row {bad}.")
    results = []
    for t in targets:
        y = np.asarray(t.values, dtype=float)
        fn = STATISTICS[t.statistic]
        value = fn(s, y)
        ci = bootstrap_interval(fn, [s, y], n_resamples=n_resamples, fraction=fraction, seed=seed,
                                confidence=confidence)
        results.append({"target": t.name, "statistic": t.statistic, "value": value, "ci_low": ci["low"],
                        "ci_high": ci["high"], "undefined_resamples": ci["undefined"], "n": len(s)})
    return results


def resolve_rounding(dataset: str, metric: str, round_decimals: int | None | str = "auto") -> int | None:
    """``"auto"``: 3 decimals for computed scores on conTest/decTest (Tevet's stored precision), else none."""
    if round_decimals == "auto":
        return 3 if dataset == "contest" and not metric.startswith("column:") else None
    return round_decimals  # type: ignore[return-value]


def score_rows(metric: str, dataset: str, config: str, rows: list[dict[str, Any]],
               metric_args: dict[str, Any] | None = None, round_decimals: int | None | str = "auto") -> dict[str, Any]:
    """``{"scores", "signature"}`` of ``metric`` on protocol rows, rounded as :func:`resolve_rounding` says."""
    scored = make_adapter(metric, dataset, config, metric_args)(rows)
    scores = [float(x) for x in scored["scores"]]
    if len(scores) != len(rows):
        raise RuntimeError(f"{metric} returned {len(scores)} scores for {len(rows)} rows.")
    digits = resolve_rounding(dataset, metric, round_decimals)
    if digits is not None:
        scores = [round(x, digits) for x in scores]
    return {"scores": scores, "signature": scored.get("signature")}


def meta_evaluate(dataset: str, metric: str, *, config: str | Sequence[str] | None = None,
                  data_dir: str | os.PathLike | None = None, metric_args: dict[str, Any] | None = None,
                  n_resamples: int = 1000, fraction: float = 0.5, seed: int = 0, confidence: float = 0.95,
                  round_decimals: int | None | str = "auto", cache_dir: str | None = None,
                  rows: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Score ``dataset`` rows with ``metric`` and correlate with the human/label targets of its protocol.

    ``config``: one config, a list, ``"all"``, or ``None`` for the defaults (conTest resp_gen; FED turn and
    dialog). ``round_decimals="auto"`` rounds computed scores to 3 decimals on conTest/decTest (Tevet's
    stored precision) and leaves them as they are elsewhere. ``rows`` ({config: rows}) skips loading.
    """
    from dialeval import datasets as dd  # the `datasets` library: loaded only for a meta-evaluation

    if dataset not in DEFAULT_CONFIGS:
        raise ValueError(f"no meta-evaluation protocol for {dataset!r}; use one of {sorted(DEFAULT_CONFIGS)}.")
    if config is None:
        configs = list(rows) if rows else DEFAULT_CONFIGS[dataset]
    elif config == "all":
        configs = dd.config_names(dataset)
    else:
        configs = [config] if isinstance(config, str) else list(config)
    round_decimals = resolve_rounding(dataset, metric, round_decimals)
    report: dict[str, Any] = {
        "dataset": dataset, "metric": metric, "options": dict(metric_args or {}), "configs": {},
        "bootstrap": {"n_resamples": n_resamples, "fraction": fraction, "seed": seed, "confidence": confidence},
        "round_decimals": round_decimals,
    }
    for cfg in configs:
        if rows is not None and cfg in rows:
            cfg_rows = protocol_rows(dataset, rows[cfg])
        else:
            cfg_rows = load_rows(dataset, cfg, data_dir=data_dir, cache_dir=cache_dir)
        scored = score_rows(metric, dataset, cfg, cfg_rows, metric_args, round_decimals)
        scores = scored["scores"]
        results = evaluate_scores(scores, targets_for(dataset, cfg, cfg_rows), n_resamples=n_resamples,
                                  fraction=fraction, seed=seed, confidence=confidence)
        report["configs"][cfg] = {"num_rows": len(cfg_rows), "metric_signature": scored.get("signature"),
                                  "results": results, "scores": scores}
    protocol: dict[str, str] = {}
    if dataset == "fed" and not metric.startswith("column:"):
        protocol["speakers"] = "prefixed" if (metric_args or {}).get("speaker_prefix") else "stripped"
    report["signature"] = make_signature(
        "meta_eval", data=dataset, configs=configs, scorer=metric, **protocol,
        options=",".join(f"{k}={v}" for k, v in sorted((metric_args or {}).items())) or None,
        round=round_decimals, boot=n_resamples, frac=fraction, seed=seed, conf=confidence)
    return report


# --------------------------------------------------------------------------------------------------
# Presentation
# --------------------------------------------------------------------------------------------------


def format_report(report: dict[str, Any]) -> str:
    """A plain-text table: config, target, statistic, value and interval."""
    pct = round(report["bootstrap"]["confidence"] * 100)
    header = ("config", "n", "target", "statistic", "value", f"{pct}% interval")
    lines = [header]
    for cfg, res in report["configs"].items():
        for r in res["results"]:
            lines.append((cfg, str(r["n"]), r["target"], r["statistic"], f"{r['value']:.3f}",
                          f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"))
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    out = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    out.append(f"metric: {report['metric']}   signature: {report['signature']}")
    for cfg, res in report["configs"].items():
        if res.get("metric_signature"):
            out.append(f"{cfg} metric signature: {res['metric_signature']}")
    return "\n".join(out)


def plot_report(report: dict[str, Any], path: str) -> None:
    """A bar chart of every statistic with its bootstrap interval as whiskers (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, values, lows, highs = [], [], [], []
    for cfg, res in report["configs"].items():
        for r in res["results"]:
            labels.append(f"{cfg}\n{r['target']}\n({r['statistic']})")
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
