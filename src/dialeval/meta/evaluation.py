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
  Where the rows name at least 3 systems, each target also gets a system-level row (the per-system mean metric
  score against the per-system mean human score, :func:`dialeval.meta.quality.system_rows`). A stored column that
  is itself a human quality (``column:annotation_means.Q``) is never correlated with Q: that cell is left out and
  counted (refused when Q is all there is).

Ties: Spearman ρ is Pearson r of average ranks (``scipy.stats.spearmanr``); OCA cuts only between distinct
scores. A non-finite metric score is an error, never silently dropped. A statistic that is undefined (constant
human or metric scores) is reported as undefined, with no interval.

Every statistic has a seeded bootstrap interval: ``n_resamples`` subsamples of ``fraction`` of the rows drawn
without replacement, percentile interval. The statistics are pure functions of arrays (no I/O); a metric is
an *adapter* ``rows -> per-row scores`` (:func:`make_adapter`).
"""

from __future__ import annotations

import copy
import inspect
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dialeval import registry
from dialeval.io.signature import make_signature
from dialeval.io.validation import check_fraction, check_resamples, collected_notes
from dialeval.meta import sources, variants
from dialeval.meta.columns import HUMAN_FIELDS, column_adapter, column_names, self_targets  # noqa: F401 - re-exported
from dialeval.meta.report import format_report, plot_report  # noqa: F401 - re-exported
from dialeval.meta.rows import (  # noqa: F401 - re-exported
    left_out_rows,
    load_rows,
    protocol_rows,
    quality_protocol_rows,
    raw_rows,
)
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
from dialeval.meta.targets import (  # noqa: F401 - re-exported
    CORRELATIONS,
    QUALITY_STATISTICS,
    STATISTICS,
    Target,
    copy_state,
    interval_note,
    quality_copy,
    row_state,
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
    usable = sorted(registry.meta_names())
    found = registry.meta_row(metric)
    if found is None:
        raise ValueError(f"unknown metric {metric!r} for meta-evaluation; use one of {usable} or column:NAME.")
    decl, _fixed = found
    options = variants.row_options(metric, options)  # a variant's fixed options with the user's (never against them)
    registry.check_options(decl, options, strict=False)  # declared types and ranges, as every other route checks
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


def evaluate_scores(scores: Sequence[float], targets: Sequence[Target], *, n_resamples: int = 1000,
                    fraction: float = 0.5, seed: int = 0, confidence: float = 0.95) -> list[dict[str, Any]]:
    """Each target's statistic of ``scores`` with its bootstrap interval and state (:func:`row_state`); ``n`` is
    the number of items with a human score (pure: no I/O). An undefined statistic has no interval. An interval that
    says nothing (zero width, or leaving out its own value) gets an ``interval_note``; scores that are a monotone
    function of a human quality (:func:`dialeval.meta.targets.quality_copy`) mark every correlation row ``copies``."""
    s = np.asarray(scores, dtype=float)
    if not np.all(np.isfinite(s)):
        bad = int(np.flatnonzero(~np.isfinite(s))[0])
        raise ValueError(f"the metric gave a non-finite score ({s[bad]}) for row {bad}.")
    if s.size and float(np.max(np.abs(s))) > 1e100:
        bad = int(np.argmax(np.abs(s)))
        raise ValueError(f"the metric gave a score of {s[bad]:g} for row {bad}, beyond ±1e100, where the products and "
                         "sums of a correlation overflow; rescale its scores.")
    results = []
    copied = quality_copy(s, list(targets))
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
        size = max(2, int(fraction * len(s)))  # the subsample size of bootstrap_interval
        row["state"] = row_state(t.statistic, value, row["ci_low"], row["ci_high"], size)
        if (note := interval_note(value, row["ci_low"], row["ci_high"], size)) and t.statistic in CORRELATIONS:
            row["interval_note"] = note
        results.append(copy_state(row, copied))
    return results


def resolve_rounding(dataset: str | DatasetDeclaration, metric: str, round_decimals: int | None | str = "auto") -> int | None:
    """``"auto"``: the dataset's declared decimals for computed scores (stored ``column:`` values as stored)."""
    if round_decimals == "auto":
        return None if metric.startswith("column:") else sources.get(dataset).round_decimals
    return round_decimals  # type: ignore[return-value]


def score_rows(metric: str, dataset: str | DatasetDeclaration, config: str, rows: list[dict[str, Any]],
               metric_args: dict[str, Any] | None = None, round_decimals: int | None | str = "auto") -> dict[str, Any]:
    """``{"scores", "signature"}`` of ``metric`` on protocol rows, rounded as :func:`resolve_rounding` says. A
    plugin's metric scores a copy of the rows (an adapter that edits them cannot change another metric's rows), and
    what goes wrong in it is one line naming it."""
    adapter = make_adapter(metric, dataset, config, metric_args)
    found = registry.meta_row(metric)
    plugin = found[0].package if found and not found[0].package.startswith("dialeval.") else None
    who = f"{metric} (plugin {plugin})" if plugin else metric
    if plugin is None:
        scored = adapter(rows)
    else:
        try:
            scored = adapter(copy.deepcopy(rows))
        except Exception as exc:  # noqa: BLE001 - a plugin's failure, named in one line
            raise ValueError(f"{who} failed on {len(rows)} rows: {type(exc).__name__}: {exc}"[:400]) from None
    if not isinstance(scored, dict) or not isinstance(scored.get("scores"), (list, tuple, np.ndarray)):
        raise TypeError(f"{who}'s adapter returned {type(scored).__name__}, not {{'scores': [...], 'signature': str}}.")
    try:
        scores = [float(x) for x in scored["scores"]]
    except (TypeError, ValueError):
        raise TypeError(f"{who}'s adapter returned a score that is not a number.") from None
    if len(scores) != len(rows):
        raise ValueError(f"{who} returned {len(scores)} scores for {len(rows)} rows; its adapter must return one "
                         "score per row, in order.")
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


def _targets_of(decl: DatasetDeclaration, cfg: str, rows: list[dict[str, Any]], metric: str
                ) -> tuple[list[Target], list[Target]]:
    """``(targets, left out)``: the protocol's targets less those ``metric`` is itself (``column:`` of a human
    quality, :func:`dialeval.meta.columns.self_targets`); refused when nothing else is left to correlate with."""
    targets = targets_for(decl, cfg, rows)
    own = set(self_targets(metric, [t.name for t in targets]))
    kept = [t for t in targets if t.name not in own]
    if own and not kept:
        quality = next(iter(own)).removeprefix("annotation_means.")
        raise ValueError(f"{metric} is the human quality {quality!r} of {decl.name}/{cfg} itself, the only quality "
                         "correlated there (ρ = 1 by construction); score a metric, another column or --scores.")
    return kept, [t for t in targets if t.name in own]


def _scored(metric: str, decl: DatasetDeclaration, cfg: str, rows: list[dict[str, Any]],
            metric_args: dict[str, Any] | None, round_decimals: int | None,
            own_scores: dict[str, float] | None) -> tuple[dict[str, Any], list[str]]:
    """``(scored, notes)``: the metric's scores of ``rows`` (or the user's, joined by id) and the caveats the metric
    raised about them (:class:`dialeval.io.validation.ResultNote`)."""
    if own_scores is None:
        with collected_notes() as notes:
            scored = score_rows(metric, decl, cfg, rows, metric_args, round_decimals)
        return scored, notes
    from dialeval.meta.own_data import join_scores

    joined = join_scores(own_scores, rows, metric, f"{decl.name}/{cfg}")
    if joined is None:
        from dialeval.meta.own_data import id_hint

        raise ValueError(f"--scores {metric}: no id in it matches an item of {decl.name}/{cfg} "
                         f"({id_hint(own_scores, rows)}).")
    return {"scores": joined, "signature": f"scores:{metric}"}, []


def _config_report(decl: DatasetDeclaration, cfg: str, stored: list[dict[str, Any]], rows: list[dict[str, Any]],
                   targets: list[Target], own: list[Target], scored: dict[str, Any], metric: str,
                   settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One config's report entry (item-level rows, and system-level rows where the rows name enough systems) and
    its notes (what was left out, counted)."""
    scores = scored["scores"]
    results = evaluate_scores(scores, targets, **settings)
    notes: list[str] = []
    if decl.protocol == "rated":
        from dialeval.meta import quality

        results = [{**r, "level": "item"} for r in results]
        found, notes = quality.system_results(rows, decl.system_field, scores, targets, **{
            k: settings[k] for k in ("n_resamples", "seed", "confidence")})
        results += found
    if own:  # each left-out target's item-level cell, and its system-level one where there is a system level
        system = any(r.get("level") == "system" for r in results)
        cells = len(own) + (sum(t.statistic in QUALITY_STATISTICS for t in own) if system else 0)
        names = ", ".join(repr(t.removeprefix("annotation_means.")) for t in dict.fromkeys(t.name for t in own))
        notes.append(f"{cells} cell(s) left out: {metric} is the human quality {names} itself (ρ = 1 by "
                     "construction, not a metric's result)")
    entry = {"num_rows": len(rows), "metric_signature": scored.get("signature"), "results": results,
             "scores": scores, "left_out": left_out_rows(decl, stored)}
    return entry, [f"{cfg}: {n}" for n in notes]


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
    A rated dataset whose rows name at least 3 systems (2 items or more each) gets system-level rows too
    (``"level": "system"``, ``n`` = systems). A ``column:`` of a human quality is not correlated with that quality
    itself: those cells are left out and counted in ``notes`` (refused when no other quality is left).
    """
    check_resamples(n_resamples, "n_resamples")
    check_fraction(fraction, "fraction")
    decl = sources.get(dataset)
    configs = _configs(decl, config, rows)
    round_decimals = resolve_rounding(decl, metric, round_decimals)
    settings = {"n_resamples": n_resamples, "fraction": fraction, "seed": seed, "confidence": confidence}
    report: dict[str, Any] = {
        "dataset": decl.name, "metric": metric, "options": dict(metric_args or {}), "configs": {},
        "bootstrap": dict(settings), "round_decimals": round_decimals, "notes": [],
    }
    units = []  # every config's rows and targets first: a refusal comes before any scoring
    for cfg in configs:
        stored = rows[cfg] if rows is not None and cfg in rows else raw_rows(decl, cfg, data_dir=data_dir,
                                                                             cache_dir=cache_dir)
        cfg_rows = protocol_rows(decl, stored)
        units.append((cfg, stored, cfg_rows, *_targets_of(decl, cfg, cfg_rows, metric)))
    for cfg, stored, cfg_rows, targets, own in units:
        scored, said = _scored(metric, decl, cfg, cfg_rows, metric_args, round_decimals, own_scores)
        entry, notes = _config_report(decl, cfg, stored, cfg_rows, targets, own, scored, metric, settings)
        report["configs"][cfg] = entry
        report["notes"] += [f"{cfg}: {n}" for n in said] + notes
    protocol: dict[str, str] = {}
    if decl.speaker_option and not metric.startswith("column:"):
        protocol["speakers"] = "prefixed" if (metric_args or {}).get("speaker_prefix") else "stripped"
    report["signature"] = make_signature(
        "meta_eval", data=decl.name, configs=configs, scorer=metric, **protocol,
        options=",".join(f"{k}={v}" for k, v in sorted((metric_args or {}).items())) or None,
        round=round_decimals, boot=n_resamples, frac=fraction, seed=seed, conf=confidence)
    return report
