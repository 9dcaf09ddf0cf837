"""Meta-evaluation: how well does a metric agree with human judgements on a dataset?

What one scored row is and what it is correlated with come from the dataset's declaration
(:class:`dialeval.meta.sources.DatasetDeclaration`, written in its builder or made from a user's file):

- **sets**: the metric scores each row's set of responses; each declared ``(field, statistic)`` target, e.g. a
  label by Spearman ρ and by the optimal classification accuracy (OCA: the best single threshold, either way
  round), a human score by Spearman ρ. A field missing on every row is left out; on some rows only, an error.
  Computed scores are rounded to the declared decimals (the precision the paper's pipeline stored).
- **pairs**: each (context, response) of a source row is one scored row, labelled by the field it came from;
  each declared target is the ROC AUC of one label against another (Mann–Whitney, ties ½).
- **rated**: each rated response (turn level: context + response) or dialogue is scored at its config's level
  (the adapter is told ``turn`` or ``dialog``); empty context turns are left out, and so are turn rows with an
  empty response (counted), unless the dataset keeps its rows as stored. Targets: every quality's mean over
  annotators by Spearman ρ, Pearson r and Kendall τ-b (an item whose mean is undefined, every rater answered
  N/A, is left out of that quality and of its ``n``). A dataset declared ``overall_only`` is correlated by its
  overall quality's Spearman ρ unless every quality is asked for (``all_qualities=True``, as the leaderboard does).

Ties: Spearman ρ is Pearson r of average ranks (``scipy.stats.spearmanr``); OCA cuts only between distinct
scores. A non-finite metric score is an error, never silently dropped. A statistic that is undefined (constant
human or metric scores) is reported as undefined, with no interval.

Every statistic has a seeded bootstrap interval: ``n_resamples`` subsamples of ``fraction`` of the rows drawn
without replacement, percentile interval. The statistics are pure functions of arrays (no I/O); a metric is
an *adapter* ``rows -> per-row scores`` (:func:`make_adapter`).
"""

from __future__ import annotations

import inspect
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dialeval import registry
from dialeval.io.signature import make_signature
from dialeval.meta import sources
from dialeval.meta.report import format_report, plot_report  # noqa: F401 - re-exported
from dialeval.meta.sources import DatasetDeclaration
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


HUMAN_FIELDS = ("annotations", "annotation_means")  #: where rows hold the human ratings, never a metric's scores


def column_names(row: dict[str, Any]) -> list[str]:
    """The numeric columns ``column:NAME`` can use on rows like ``row``."""
    names = [k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    names += list(row.get("metrics") or {})
    for k, v in row.items():
        if isinstance(v, dict) and k != "metrics" and k not in HUMAN_FIELDS:
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


def _factory_extras(factory: Callable[..., Any], decl: DatasetDeclaration, config: str) -> dict[str, Any]:
    """The dataset's overall quality and its declared rubric for it, for a factory that takes them."""
    params = inspect.signature(factory).parameters
    quality = decl.overall.get(config)
    extras: dict[str, Any] = {}
    if quality and "quality" in params:
        extras["quality"] = quality
    if quality and "rubric" in params and quality in decl.rubrics:
        extras["rubric"] = decl.rubrics[quality]
    return extras


def make_adapter(metric: str, dataset: str | DatasetDeclaration, config: str,
                 options: dict[str, Any] | None = None) -> Adapter:
    """The adapter scoring ``dataset`` rows with ``metric`` (``column:NAME`` reads a stored column).

    ``options`` are the metric's load options (``--metric-arg``), e.g. ``{"model": "/path"}``. The factory is told
    the rows' level (``turn``/``dialog``; a set dataset's config name) and, when it asks, the overall quality
    and the rubric the dataset declares for it.
    """
    options = dict(options or {})
    if metric.startswith("column:"):
        if options:
            raise ValueError("column:NAME takes no --metric-arg options.")
        return column_adapter(metric[len("column:"):])
    usable = sorted({*registry.meta_evaluable(), *registry.meta_rows()})
    found = registry.meta_row(metric)
    if found is None:
        raise ValueError(f"unknown metric {metric!r} for meta-evaluation; use one of {usable} or column:NAME.")
    decl, fixed = found
    options = {**fixed, **options}  # a variant's fixed options, overridden by the user's
    if not decl.meta_levels:
        what = ("is corpus-level (one score for a whole list of responses)" if decl.inputs == "responses"
                else f"reads {registry.INPUT_KINDS[decl.inputs]}")
        raise ValueError(f"{metric} {what}; no human-judged dataset here rates what it scores. Meta-evaluation "
                         f"covers {usable} and column:NAME.")
    data = sources.get(dataset)
    why = sources.fits(decl, data, config)
    if why:
        raise ValueError(f"{metric} does not apply to {data.name!r}: {why}.")
    factory = decl.meta_adapter_factory()
    if factory is None:
        return loaded_set_adapter(decl.name, options)
    level = data.level(config)
    return factory(options, config if level == "set" else level, **_factory_extras(factory, data, config))


# --------------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------------

#: What each quality is correlated by, on rated datasets.
QUALITY_STATISTICS = ("spearman", "pearson", "kendall")
#: Statistics whose "no agreement" value is 0 (an interval above 0 is a positive agreement).
CORRELATIONS = QUALITY_STATISTICS


@dataclass
class Target:
    name: str
    values: list[float]
    statistic: str  # "spearman", "pearson", "kendall", "oca" or "auc"


def quality_targets(rows: list[dict[str, Any]], first: str | None = None) -> list[Target]:
    """Every annotated quality's mean (``annotation_means.<quality>``; ``None`` → NaN, left out of the
    statistic) by each of :data:`QUALITY_STATISTICS`; ``first`` (a target name) is put first."""
    qualities = list(rows[0]["annotation_means"]) if rows else []
    out = []
    for q in qualities:
        values = [math.nan if r["annotation_means"].get(q) is None else float(r["annotation_means"][q]) for r in rows]
        out += [Target(f"annotation_means.{q}", values, st) for st in QUALITY_STATISTICS]
    return sorted(out, key=lambda t: t.name != first) if first else out


def _set_targets(decl: DatasetDeclaration, config: str, rows: list[dict[str, Any]]) -> list[Target]:
    out = []
    for name, statistic in decl.set_targets.get(config, ()):
        values = [r.get(name) for r in rows]
        if all(v is None for v in values):
            continue
        if any(v is None for v in values):
            raise ValueError(f"{decl.name}/{config}: {name} is missing on some rows but not all.")
        out.append(Target(name, [float(v) for v in values], statistic))
    return out


def targets_for(dataset: str | DatasetDeclaration, config: str, rows: list[dict[str, Any]], *,
                all_qualities: bool = False) -> list[Target]:
    """What the dataset's protocol correlates the metric with (see the module docstring); ``all_qualities``:
    every quality by every :data:`QUALITY_STATISTICS` (the overall quality first), as the leaderboard reports it."""
    decl = sources.get(dataset)
    if decl.protocol == "sets":
        return _set_targets(decl, config, rows)
    if decl.protocol == "pairs":
        labels = [float(r["label"]) for r in rows]
        return [Target(name, [1.0 if k == pos else 0.0 if k == neg else math.nan for k in labels], "auc")
                for name, pos, neg in decl.pair_targets]
    overall = decl.overall_target(config)
    if rows and overall and overall.split(".", 1)[1] not in rows[0]["annotation_means"]:
        raise ValueError(f"{decl.name}/{config}: the overall quality {overall.split('.', 1)[1]!r} is not among the "
                         f"rated qualities {sorted(rows[0]['annotation_means'])}; name one with --overall.")
    if decl.overall_only and not all_qualities:
        values = [r["annotation_means"][overall.split(".", 1)[1]] for r in rows]
        return [Target(overall, [math.nan if v is None else float(v) for v in values], "spearman")]
    return quality_targets(rows, first=overall)


def protocol_rows(dataset: str | DatasetDeclaration, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a metric scores: a pairs dataset's source rows become one row per (context, response), labelled
    as declared; a rated dataset's as :func:`quality_protocol_rows` says (unless it keeps its rows); set rows as
    they are."""
    decl = sources.get(dataset)
    rows = _split_left_out_systems(decl, rows)[0]
    if decl.protocol == "rated":
        return rows if decl.keep_rows else quality_protocol_rows(rows)
    if decl.protocol == "sets":
        return rows
    return [{"id": r["id"], "context": list(r["context"]), "response": text, "label": label}
            for r in rows for field, label in decl.pairs for text in r[field]]


def quality_protocol_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A rated dataset's rows as a metric scores them: empty turns (a user who sent nothing) left out of the
    context, a turn-level row whose rated response is empty left out (there is no text to score; see
    :func:`left_out_rows`), and every reference of a row that has several (``references``) as its ``reference``."""
    out = []
    for r in rows:
        if "response" in r and not (r["response"] or "").strip():
            continue
        keep = [i for i, t in enumerate(r["context"]) if t.strip()]
        speakers = r.get("speakers") or []
        row = {**r, "context": [r["context"][i] for i in keep],
               "speakers": [speakers[i] for i in keep] if len(speakers) == len(r["context"]) else speakers}
        if len(r.get("references") or ()) > 1:
            row["reference"] = list(r["references"])
        out.append(row)
    return out


def _split_left_out_systems(decl: DatasetDeclaration, rows: list[dict[str, Any]]
                            ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``(rows kept, {left-out system: rows})``: the dataset's protocol leaves out its ``left_out_systems``."""
    kept: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for r in rows:
        system = r.get(decl.system_field or "system")
        if system in decl.left_out_systems:
            dropped[system] += 1
        else:
            kept.append(r)
    return kept, dict(dropped)


def left_out_rows(dataset: str | DatasetDeclaration, rows: list[dict[str, Any]]) -> dict[str, int]:
    """What :func:`protocol_rows` leaves out of ``rows`` and why (``{reason: count}``, empty when nothing)."""
    decl = sources.get(dataset)
    kept, dropped = _split_left_out_systems(decl, rows)
    out = {f"system {system!r}: {decl.left_out_systems[system]}": count for system, count in dropped.items()}
    if decl.protocol != "rated" or decl.keep_rows:
        return out
    empty = sum(1 for r in kept if "response" in r and not (r["response"] or "").strip())
    return {**out, "empty response": empty} if empty else out


def raw_rows(dataset: str | DatasetDeclaration, config: str, *, data_dir: str | os.PathLike | None = None,
             cache_dir: str | None = None) -> list[dict[str, Any]]:
    """The stored rows of ``dataset``/``config`` (its test split, the first split when it has none), before the
    protocol: a built-in builder's, or a plugin's ``loader``."""
    decl = sources.get(dataset)
    decl.level(config)
    loader = sources.loader_function(decl)
    if loader is not None:
        return list(loader(config, data_dir))
    from dialeval import datasets as dd

    ds = dd.load(decl.builder or decl.name, config, data_dir=data_dir, cache_dir=cache_dir)
    split = "test" if "test" in ds else next(iter(ds))
    return ds[split].to_list()


def load_rows(dataset: str | DatasetDeclaration, config: str, *, data_dir: str | os.PathLike | None = None,
              cache_dir: str | None = None) -> list[dict[str, Any]]:
    """The scored rows of ``dataset``/``config`` (:func:`raw_rows` through :func:`protocol_rows`)."""
    return protocol_rows(dataset, raw_rows(dataset, config, data_dir=data_dir, cache_dir=cache_dir))


def _oca(scores: np.ndarray, labels: np.ndarray) -> float:
    return best_threshold_accuracy(scores, labels)[0] if len(np.unique(labels)) == 2 else float("nan")


def _labelled_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUC of the rows labelled 1 against those labelled 0 (NaN labels left out; NaN when a class is absent)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    return auc(pos, neg) if len(pos) and len(neg) else float("nan")


STATISTICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "spearman": complete_pairs(spearman), "oca": _oca, "auc": _labelled_auc, "pearson": complete_pairs(pearson),
    "kendall": complete_pairs(kendall)}


def undefined_reason(scores: np.ndarray, target: np.ndarray) -> str:
    """Why a statistic of ``scores`` against ``target`` is undefined (NaN targets left out)."""
    keep = ~np.isnan(target)
    if keep.sum() < 3:
        return f"only {int(keep.sum())} items have a human score"
    if np.all(target[keep] == target[keep][0]):
        return "the human scores are all equal"
    if np.all(scores[keep] == scores[keep][0]):
        return "the metric's scores are all equal"
    return "a class of the target is absent"


def row_state(statistic: str, value: float, low: float, high: float) -> str:
    """``undefined`` (no value), and for correlations ``positive`` (interval above 0), ``negative`` (interval
    below 0) or ``includes 0``; other statistics ``defined``."""
    if not math.isfinite(value):
        return "undefined"
    if statistic not in CORRELATIONS or not (math.isfinite(low) and math.isfinite(high)):
        return "defined"
    return "positive" if low > 0 else "negative" if high < 0 else "includes 0"


def evaluate_scores(scores: Sequence[float], targets: Sequence[Target], *, n_resamples: int = 1000,
                    fraction: float = 0.5, seed: int = 0, confidence: float = 0.95) -> list[dict[str, Any]]:
    """Each target's statistic of ``scores`` with its bootstrap interval and state (:func:`row_state`); ``n`` is
    the number of items with a human score (pure: no I/O). An undefined statistic has no interval."""
    s = np.asarray(scores, dtype=float)
    if not np.all(np.isfinite(s)):
        bad = int(np.flatnonzero(~np.isfinite(s))[0])
        raise ValueError(f"the metric gave a non-finite score ({s[bad]}) for row {bad}.")
    results = []
    for t in targets:
        y = np.asarray(t.values, dtype=float)
        fn = STATISTICS[t.statistic]
        value = fn(s, y)
        row = {"target": t.name, "statistic": t.statistic, "value": value, "ci_low": math.nan, "ci_high": math.nan,
               "undefined_resamples": n_resamples, "n": int((~np.isnan(y)).sum())}
        if math.isfinite(value):
            ci = bootstrap_interval(fn, [s, y], n_resamples=n_resamples, fraction=fraction, seed=seed,
                                    confidence=confidence)
            row.update(ci_low=ci["low"], ci_high=ci["high"], undefined_resamples=ci["undefined"])
        else:
            row["undefined"] = undefined_reason(s, y)
        row["state"] = row_state(t.statistic, value, row["ci_low"], row["ci_high"])
        results.append(row)
    return results


def resolve_rounding(dataset: str | DatasetDeclaration, metric: str, round_decimals: int | None | str = "auto") -> int | None:
    """``"auto"``: the dataset's declared decimals for computed scores (stored ``column:`` values as stored)."""
    if round_decimals == "auto":
        return None if metric.startswith("column:") else sources.get(dataset).round_decimals
    return round_decimals  # type: ignore[return-value]


def score_rows(metric: str, dataset: str | DatasetDeclaration, config: str, rows: list[dict[str, Any]],
               metric_args: dict[str, Any] | None = None, round_decimals: int | None | str = "auto") -> dict[str, Any]:
    """``{"scores", "signature"}`` of ``metric`` on protocol rows, rounded as :func:`resolve_rounding` says."""
    scored = make_adapter(metric, dataset, config, metric_args)(rows)
    if not isinstance(scored, dict) or not isinstance(scored.get("scores"), (list, tuple, np.ndarray)):
        raise TypeError(f"{metric}'s adapter returned {type(scored).__name__}, not {{'scores': [...], 'signature': str}}.")
    try:
        scores = [float(x) for x in scored["scores"]]
    except (TypeError, ValueError):
        raise TypeError(f"{metric}'s adapter returned a score that is not a number.") from None
    if len(scores) != len(rows):
        raise RuntimeError(f"{metric} returned {len(scores)} scores for {len(rows)} rows.")
    digits = resolve_rounding(dataset, metric, round_decimals)
    if digits is not None:
        scores = [round(x, digits) for x in scores]
    return {"scores": scores, "signature": scored.get("signature")}


def _configs(decl: DatasetDeclaration, config: str | Sequence[str] | None,
             rows: dict[str, list[dict[str, Any]]] | None) -> list[str]:
    if config is None:
        return list(rows) if rows else list(decl.meta_eval_configs)
    if config == "all":
        return list(decl.levels)
    return [config] if isinstance(config, str) else list(config)


def meta_evaluate(dataset: str | DatasetDeclaration, metric: str, *, config: str | Sequence[str] | None = None,
                  data_dir: str | os.PathLike | None = None, metric_args: dict[str, Any] | None = None,
                  n_resamples: int = 1000, fraction: float = 0.5, seed: int = 0, confidence: float = 0.95,
                  round_decimals: int | None | str = "auto", cache_dir: str | None = None,
                  rows: dict[str, list[dict[str, Any]]] | None = None,
                  own_scores: dict[str, float] | None = None) -> dict[str, Any]:
    """Score ``dataset`` rows with ``metric`` and correlate with the human/label targets of its protocol.

    ``dataset``: a known dataset's name or a declaration (a user's file: :func:`dialeval.meta.own_data.read`).
    ``config``: one config, a list, ``"all"``, or ``None`` for the dataset's defaults. ``round_decimals="auto"``
    rounds computed scores as the dataset declares. ``rows`` ({config: stored rows}) skips loading.
    ``own_scores`` ({id: score}, a user's ``--scores`` file) are ``metric``'s scores, joined by ``id``.
    """
    decl = sources.get(dataset)
    configs = _configs(decl, config, rows)
    round_decimals = resolve_rounding(decl, metric, round_decimals)
    report: dict[str, Any] = {
        "dataset": decl.name, "metric": metric, "options": dict(metric_args or {}), "configs": {},
        "bootstrap": {"n_resamples": n_resamples, "fraction": fraction, "seed": seed, "confidence": confidence},
        "round_decimals": round_decimals,
    }
    for cfg in configs:
        stored = rows[cfg] if rows is not None and cfg in rows else raw_rows(decl, cfg, data_dir=data_dir,
                                                                             cache_dir=cache_dir)
        cfg_rows = protocol_rows(decl, stored)
        if own_scores is not None:
            from dialeval.meta.own_data import join_scores

            joined = join_scores(own_scores, cfg_rows, metric, f"{decl.name}/{cfg}")
            if joined is None:
                raise ValueError(f"--scores {metric}: no id in it matches an item of {decl.name}/{cfg}.")
            scored = {"scores": joined, "signature": f"scores:{metric}"}
        else:
            scored = score_rows(metric, decl, cfg, cfg_rows, metric_args, round_decimals)
        scores = scored["scores"]
        results = evaluate_scores(scores, targets_for(decl, cfg, cfg_rows), n_resamples=n_resamples,
                                  fraction=fraction, seed=seed, confidence=confidence)
        report["configs"][cfg] = {"num_rows": len(cfg_rows), "metric_signature": scored.get("signature"),
                                  "results": results, "scores": scores, "left_out": left_out_rows(decl, stored)}
    protocol: dict[str, str] = {}
    if decl.speaker_option and not metric.startswith("column:"):
        protocol["speakers"] = "prefixed" if (metric_args or {}).get("speaker_prefix") else "stripped"
    report["signature"] = make_signature(
        "meta_eval", data=decl.name, configs=configs, scorer=metric, **protocol,
        options=",".join(f"{k}={v}" for k, v in sorted((metric_args or {}).items())) or None,
        round=round_decimals, boot=n_resamples, frac=fraction, seed=seed, conf=confidence)
    return report
