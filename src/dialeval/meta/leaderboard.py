"""The leaderboard: every metric that runs here against every dataset it fits, with bootstrap intervals, a paired
test for every pair of metrics scored on the same rows, significance clusters and a summary row.

Datasets are the built-in ones (each declared in its builder, :mod:`dialeval.meta.sources`), a dataset package's
(entry point ``dialeval.datasets``) and a user's own files (:mod:`dialeval.meta.own_data`); all go through the
same route. Metrics are every declared metric whose ``meta_levels``/``meta_protocols``/``meta_requires`` fit a
dataset config (:func:`dialeval.meta.sources.fits`), each dataset's stored columns (``column:NAME``), and a
user's per-item scores (``--scores NAME=FILE``); each is scored by :mod:`dialeval.meta.evaluation` (the same
adapters, rounding and statistics as ``dialeval meta-eval``), cached in ``OUT/cache/`` (:mod:`dialeval.meta.cache`)
so that a rerun resumes, and every statistic, interval, paired test and cluster treats them all alike. A metric
whose default model cannot load here (its declaration's probe says why) is listed as skipped.

Paired tests (same rows, same target): the difference of the two statistics, a paired bootstrap p-value
(:func:`dialeval.meta.stats.paired_bootstrap`), for Spearman ρ Williams' test for dependent correlations
(:func:`dialeval.meta.stats.williams_test`), and on rated data the paired permutation test the clusters use; they
are run by :mod:`dialeval.meta.paired_tests`.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dialeval import registry
from dialeval.io.files import atomic_write_json, atomic_write_text, check_output_path
from dialeval.io.signature import make_signature
from dialeval.io.validation import check_fraction, check_resamples, collected_notes
from dialeval.meta import cache as score_cache
from dialeval.meta import own_data, sources, variants
from dialeval.meta import quality as lq
from dialeval.meta.dtypes import dtype_name, with_dtype
from dialeval.meta.evaluation import (
    evaluate_scores,
    left_out_rows,
    protocol_rows,
    raw_rows,
    score_rows,
    targets_for,
)
from dialeval.meta.paired_tests import pair_left_out, pair_rows  # noqa: F401 - pair_left_out re-exported
from dialeval.meta.progress import Heartbeat
from dialeval.meta.sources import DatasetDeclaration
from dialeval.meta.tables import _json_safe, markdown, plot_png, write_outputs  # noqa: F401 - re-exported

MARKER = ".dialeval-leaderboard"
PROGRESS_EVERY = 10.0  #: seconds between progress lines of a long step (:class:`dialeval.meta.progress.Heartbeat`)
Log = Callable[[str], None]


def offline_reason(decl: registry.MetricDeclaration) -> str | None:
    """Why ``decl``'s default (first offered) model cannot load here, or ``None``."""
    probe = decl.probe_function()
    if probe is None or not decl.models:
        return None
    return probe(decl.models[0])


def _selected(datasets: Sequence[str] | None, files: Sequence[DatasetDeclaration]) -> list[DatasetDeclaration]:
    """The datasets to score: those named (all built-in and plugin ones when none is named and no file is given),
    then the user's files."""
    known = sources.declarations()
    for d in datasets or ():
        if d not in known:
            raise ValueError(f"--dataset {d!r} is not known; use one of {sorted(known)} or --data FILE.")
    names = list(datasets) if datasets else ([] if files else list(known))
    return [known[d] for d in names] + list(files)


def _columns_of(metrics: Sequence[str] | None, decl: DatasetDeclaration) -> list[str]:
    """The stored columns scored on ``decl``: the asked ``column:`` metrics it declares, or all it declares."""
    declared = [f"column:{c}" for c in decl.columns]
    return [m for m in metrics if m in declared] if metrics else declared


def plan(datasets: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
         files: Sequence[DatasetDeclaration] = ()) -> tuple[list[tuple[str, str, str]], list[dict[str, str]]]:
    """``[(metric, dataset, config)]`` to score and ``[{"metric", "reason"}]`` skipped. Without ``metrics``: every
    declared metric on every config it fits, plus each dataset's stored columns; ``column:NAME`` asks for a
    stored column of the datasets that have it."""
    rows, usable = registry.meta_rows(), registry.meta_names()
    for m in metrics or ():
        if m not in usable and not m.startswith("column:"):
            raise ValueError(f"--metric {m!r} has no human-judged dataset here; use one of {sorted(usable)} or "
                             "column:NAME (a stored column, e.g. column:metrics.SentBert).")
    selected = _selected(datasets, files)
    tasks: list[tuple[str, str, str]] = []
    skipped: list[dict[str, str]] = []
    for name, (decl, _fixed) in (usable if metrics else rows).items():
        if metrics and name not in metrics:
            continue
        fitting = [(d.name, c) for d in selected for c in d.configs if sources.fits(decl, d, c) is None]
        if not fitting:
            if metrics:
                why = "; ".join(f"{d.name}/{c}: {sources.fits(decl, d, c)}" for d in selected for c in d.configs)
                raise ValueError(f"--metric {name!r} fits none of the selected datasets ({why[:300]}).")
            continue
        reason = offline_reason(decl)
        if reason:
            skipped.append({"metric": name, "reason": reason})
            continue
        tasks += [(name, d, c) for d, c in fitting]
    for decl in selected:
        tasks += [(col, decl.name, c) for col in _columns_of(metrics, decl) for c in decl.configs]
    for m in metrics or ():
        if m.startswith("column:") and not any(t[0] == m for t in tasks):
            raise ValueError(f"--metric {m}: no selected dataset has that stored column (declared: "
                             f"{sorted({c for d in selected for c in d.columns})}).")
    if not tasks:
        raise ValueError("nothing to score: no requested metric runs here on the requested datasets"
                         + (f" (skipped: {'; '.join(s['metric'] + ': ' + s['reason'] for s in skipped)})" if skipped else "."))
    return tasks, skipped


def plan_units(datasets: Sequence[str] | None, metrics: Sequence[str] | None, files: Sequence[DatasetDeclaration],
               own_scores: bool) -> tuple[list[tuple[str, str, str]], list[dict[str, str]], list[tuple[str, str]]]:
    """``(tasks, skipped, units)``: :func:`plan`'s, and the (dataset, config) units in order. ``--metric none``
    scores no metric: only the asked ``column:`` metrics and the ``--scores`` files, on every config of the
    selected datasets (a unit no file scores is then left out)."""
    asked = list(metrics or ())
    if "none" not in asked:
        tasks, skipped = plan(datasets, asked or None, files)
        return tasks, skipped, list(dict.fromkeys(sorted((d, c) for _, d, c in tasks)))
    others = [m for m in asked if m != "none"]
    if any(not m.startswith("column:") for m in others):
        raise ValueError(f"--metric none scores no metric, only your --scores and column:NAME; drop --metric "
                         f"{next(m for m in others if not m.startswith('column:'))}.")
    if not own_scores and not others:
        raise ValueError("--metric none scores only your own scores: give --scores NAME=FILE or --metric column:NAME.")
    tasks = plan(datasets, others, files)[0] if others else []
    units = [(d.name, c) for d in _selected(datasets, files) for c in d.configs] if own_scores else []
    return tasks, [], list(dict.fromkeys(sorted({*units, *((d, c) for _, d, c in tasks)})))


def _joined_scores(own_scores: dict[str, dict[str, float]], files: dict[str, Any], rows: list[dict[str, Any]],
                   where: str) -> dict[str, dict[str, Any]]:
    """Each ``--scores`` file's scores of ``rows`` joined by id (a file that scores none of them is left out)."""
    out = {}
    for name, table in own_scores.items():
        joined = own_data.join_scores(table, rows, name, where)
        if joined is not None:
            out[name] = {"scores": joined, "signature": f"scores:{Path(files[name]).name}"}
    return out


def _chunked_scores(cache: Path, metric: str, decl: DatasetDeclaration, config: str, rows: list[dict[str, Any]],
                    log: Log, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Scores of ``metric`` on ``rows``, cached (per the dataset's ``chunk_rows`` when it declares them, so a
    killed run resumes from its last complete chunk, unless its options make a row's score depend on the other
    rows, the declaration's ``meta_whole_set``; the whole is cached as well). Stored columns are read from
    the rows each time (nothing to cache)."""
    if metric.startswith("column:"):
        return score_rows(metric, decl, config, rows)
    key = score_cache.metric_key(metric, options)
    found = registry.meta_row(metric)
    whole_set = found is not None and any(variants.row_options(metric, options).get(o) for o in found[0].meta_whole_set)
    step = None if whole_set else decl.chunk_rows  # a score that depends on the other rows is never cut in parts
    parts = ([(f"{config}.part{k}", rows[i:i + step]) for k, i in enumerate(range(0, len(rows), step))]
             if step and len(rows) > step else [])

    def compute(part: list[dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        def run() -> dict[str, Any]:
            start = time.perf_counter()
            with collected_notes() as notes:  # a metric's caveat about its numbers, logged as one line each
                out = (score_rows(metric, decl, config, part, options) if options
                       else score_rows(metric, decl, config, part))
            seconds = time.perf_counter() - start
            log(f"{metric} / {decl.name} / {config}: {len(part)} rows scored in {seconds:.1f} s")
            for note in notes:
                log(f"{metric} / {decl.name} / {config}: note: {note}")
            return {**out, "seconds": seconds}
        return run

    def whole() -> dict[str, Any]:
        if not parts:
            return compute(rows)()
        done = [_entry(cache, metric, decl, label, part, key, compute(part), log) for label, part in parts]
        return {"scores": [x for p in done for x in p["scores"]], "signature": done[0]["signature"],
                "seconds": sum(p.get("seconds") or 0 for p in done)}

    return _entry(cache, metric, decl, config, rows, key, whole, log)


def _entry(cache: Path, metric: str, decl: DatasetDeclaration, label: str, rows: list[dict[str, Any]],
           key: dict[str, Any], compute: Callable[[], dict[str, Any]], log: Log) -> dict[str, Any]:
    path = cache / f"{metric.replace(':', '-')}__{decl.name}__{label}.json"
    full = {**key, "dataset": decl.name, "config": label, "rows": score_cache.fingerprint(rows)}
    return score_cache.cached(path, full, len(rows), compute, f"{metric} / {decl.name} / {label}", log,
                              write=lambda p, o: atomic_write_json(p, o, indent=None))


def _analyse_group(decl: DatasetDeclaration, config: str, data: list[dict[str, Any]], scored: dict[str, dict[str, Any]],
                   acc: dict[str, Any], group: dict[str, Any], *, n_resamples: int, fraction: float, seed: int,
                   confidence: float, beat: Heartbeat | None = None) -> None:
    """Rows (item level, and system level where the data names enough systems), paired tests and the unit kept
    for the summary, of one (dataset, config) whose metrics are ``scored``; appended to ``acc``. ``beat`` is told
    each step (its progress lines)."""
    rated = decl.protocol == "rated"
    targets = targets_for(decl, config, data, all_qualities=True)
    systems, notes = lq.system_coverage(data, decl.system_field) if rated else (None, [])
    group["notes"] += notes
    pairs = list(itertools.combinations(scored, 2))
    total, label = len(scored) + len(pairs), f"{decl.name} / {config}: statistics"
    started = time.perf_counter()
    for k, (metric, res) in enumerate(scored.items(), 1):
        if beat is not None:
            beat.doing(f"{label} {k}/{total} ({metric})")
        found = evaluate_scores(res["scores"], targets, n_resamples=n_resamples, fraction=fraction, seed=seed,
                                confidence=confidence)
        if rated:
            found = [{**r, "level": "item"} for r in found]
        if systems:
            found += lq.system_rows(res["scores"], targets, systems, n_resamples=n_resamples, seed=seed,
                                    confidence=confidence)
        acc["rows"] += [{"metric": metric, "dataset": decl.name, "config": config, **r, "signature": res["signature"],
                         "seconds": res.get("seconds")} for r in found]
    for k, (a, b) in enumerate(pairs, len(scored) + 1):
        if beat is not None:
            beat.doing(f"{label} {k}/{total} ({a} vs {b})")
        pair_rows(decl, config, a, b, scored, targets, acc, n_resamples=n_resamples, seed=seed, confidence=confidence)
    if beat is not None and (seconds := time.perf_counter() - started) >= PROGRESS_EVERY:
        beat.log(f"{label} done in {seconds:.0f} s")
    if rated:
        overall = decl.overall_target(config)
        y = np.asarray(next(t.values for t in targets if t.name == overall), dtype=float)
        acc["units"][(decl.name, config)] = {"overall": overall, "targets": {overall: y}, "scores": {
            m: res["scores"] for m, res in scored.items() if lq.quality_copy(np.asarray(res["scores"], dtype=float),
                                                                      targets) is None}}


def _check_settings(max_rows: dict[str, int] | None, known: list[str], n_resamples: int, fraction: float,
                    seed: int, confidence: float) -> None:
    for d, n in (max_rows or {}).items():
        if d not in known or isinstance(n, bool) or not isinstance(n, int) or n < 10:
            raise ValueError(f"--max-rows {d}={n!r}: give a dataset of {sorted(known)} and at least 10 rows.")
    check_resamples(n_resamples)
    check_fraction(fraction)
    if not 0 < confidence < 1 or seed < 0:
        raise ValueError(f"bootstrap settings out of range: confidence {confidence} must be in (0, 1), --seed {seed} ≥ 0.")


def _check_metric_args(metric_args: dict[str, dict[str, Any]] | None, tasks: list[tuple[str, str, str]]) -> None:
    """Every ``--metric-arg`` names a metric this run scores and agrees with the row it names (a variant's fixed
    options, :func:`dialeval.meta.variants.row_options`)."""
    scored = list(dict.fromkeys(t[0] for t in tasks))
    for metric, options in (metric_args or {}).items():
        if metric not in scored:
            first = next(iter(options or {"KEY": ""}))
            raise ValueError(f"--metric-arg {metric}:{first}=…: {metric!r} is not scored in this run (scored: "
                             f"{scored[:12]}); add --metric {metric}, or drop the option.")
        variants.row_options(metric, options)


def read_files(data: Sequence[str | os.PathLike] | None, *, fields: dict[str, str] | None = None,
               qualities: list[str] | None = None, overall: str | None = None,
               metrics: Sequence[str] | None = None, copies: str = "keep") -> list[own_data.OwnData]:
    """The user's ``--data`` files as datasets (distinct names: a repeated stem gets ``-2``, ``-3`` …); items whose
    response equals their reference kept or left out (``copies``, :func:`dialeval.meta.own_data.reference_copies`)."""
    columns = [m[len("column:"):] for m in metrics or () if m.startswith("column:")]
    out: list[own_data.OwnData] = []
    taken = set(sources.declarations())
    for path in data or ():
        base = own_data.dataset_name(Path(path))
        name = next(n for k in itertools.count(1) if (n := base if k == 1 else f"{base}-{k}") not in taken)
        taken.add(name)
        found = own_data.read(path, fields=fields, qualities=qualities, overall=overall, name=name, copies=copies,
                              columns=[c for c in columns if c])
        out.append(found)
    return out


def _group_rows(decl: DatasetDeclaration, config: str, root: Path | None, files: dict[str, own_data.OwnData],
                limit: int | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The protocol rows of one unit and its report entry (level, overall target, what was left out)."""
    if decl.name in files:
        stored, notes = files[decl.name].rows, list(files[decl.name].notes)
        where = str(files[decl.name].path)
    else:
        if root is None:
            raise ValueError(f"--data-dir is needed for the built-in dataset {decl.name!r}.")
        stored, notes, where = raw_rows(decl, config, data_dir=root / decl.folder), [], "built-in"
    if limit:
        stored = stored[:limit]
    rows = protocol_rows(decl, stored)
    info = {"rows": len(rows), "level": decl.level(config), "protocol": decl.protocol,
            "overall": decl.overall_target(config), "left_out": left_out_rows(decl, stored), "notes": notes,
            "source": where}
    return rows, info


def build(data_dir: str | os.PathLike | None, out: str | os.PathLike, *, datasets: Sequence[str] | None = None,
          metrics: Sequence[str] | None = None, max_rows: dict[str, int] | None = None, n_resamples: int = 1000,
          fraction: float = 0.5, seed: int = 0, confidence: float = 0.95, log: Log = print,
          data: Sequence[str | os.PathLike] | None = None, fields: dict[str, str] | None = None,
          qualities: list[str] | None = None, overall: str | None = None,
          scores: dict[str, str | os.PathLike] | None = None,
          metric_args: dict[str, dict[str, Any]] | None = None, reference_copies: str = "keep",
          dtype: str | None = None) -> dict[str, Any]:
    """Score, correlate, test and write ``OUT/leaderboard.json``, ``leaderboard.md`` and ``leaderboard.png``.

    ``data``: the user's files (:func:`dialeval.meta.own_data.read`, with ``fields``/``qualities``/``overall``);
    ``scores``: ``{name: file}`` of per-item scores joined by ``id``; ``metric_args``: ``{metric: options}``;
    ``reference_copies``: ``"keep"`` or ``"leave-out"`` the items of ``data`` whose response is their reference;
    ``dtype``: ``"bf16"`` runs every metric that declares a ``dtype`` option in bf16 (:func:`with_dtype`).
    While a step runs longer than :data:`PROGRESS_EVERY` seconds, ``log`` gets a line saying which, that often."""
    with Heartbeat(log, PROGRESS_EVERY) as beat:
        beat.doing("reading the inputs")
        return _build(data_dir, out, datasets=datasets, metrics=metrics, max_rows=max_rows, n_resamples=n_resamples,
                      fraction=fraction, seed=seed, confidence=confidence, log=log, data=data, fields=fields,
                      qualities=qualities, overall=overall, scores=scores, metric_args=metric_args, beat=beat,
                      reference_copies=reference_copies, dtype=dtype)


def _build(data_dir: str | os.PathLike | None, out: str | os.PathLike, *, datasets: Sequence[str] | None,
           metrics: Sequence[str] | None, max_rows: dict[str, int] | None, n_resamples: int, fraction: float,
           seed: int, confidence: float, log: Log, data: Sequence[str | os.PathLike] | None,
           fields: dict[str, str] | None, qualities: list[str] | None, overall: str | None,
           scores: dict[str, str | os.PathLike] | None, metric_args: dict[str, dict[str, Any]] | None,
           beat: Heartbeat, reference_copies: str, dtype: str | None = None) -> dict[str, Any]:
    root = Path(data_dir).expanduser() if data_dir is not None else None
    if root is not None and not root.is_dir():
        raise FileNotFoundError(f"--data-dir {str(root)!r} is not a folder; give the folder holding the datasets' "
                                "folders (as in ../shared/data).")
    files = {f.declaration.name: f for f in read_files(data, fields=fields, qualities=qualities, overall=overall,
                                                       metrics=metrics, copies=reference_copies)}
    if root is None and (datasets or not files):
        raise ValueError("give --data-dir DIR for the built-in datasets, or --data FILE for your own.")
    for name in scores or {}:
        own_data.check_scores_name(name)
    own_scores = {name: own_data.read_scores(Path(path)) for name, path in (scores or {}).items()}
    clash = sorted(set(own_scores) & set(registry.declarations()))
    if clash:
        raise ValueError(f"--scores {clash[0]!r} has the name of a metric; choose another name.")
    _check_settings(max_rows, [*sources.declarations(), *files], n_resamples, fraction, seed, confidence)
    tasks, skipped, units = plan_units(datasets, metrics, [f.declaration for f in files.values()], bool(own_scores))
    _check_metric_args(metric_args, tasks)
    metric_args = with_dtype(metric_args, tasks, dtype)
    decls = {**sources.declarations(), **{n: f.declaration for n, f in files.items()}}
    target_dir = prepare_out(out, [root, *(f.path for f in files.values())])
    score_cache.check_cache_folder(target_dir / "cache")
    started = time.perf_counter()
    acc: dict[str, Any] = {"rows": [], "pairs": [], "left_out": [], "units": {}}
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    settings = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    seen: list[dict[str, Any]] = []  # a few items of each unit, for the "no id matches" error
    for dataset, config in units:
        decl = decls[dataset]
        rows, info = _group_rows(decl, config, root, files, (max_rows or {}).get(dataset))
        targets_for(decl, config, rows, all_qualities=True)  # a missing overall quality fails before any scoring
        scored = {}
        for m, d, c in tasks:
            if (d, c) == (dataset, config):
                beat.doing(f"{m} / {dataset} / {config}: scoring {len(rows)} rows")
                scored[m] = _chunked_scores(target_dir / "cache", m, decl, config, rows, log, (metric_args or {}).get(m))
        seen += rows[:2]
        scored.update(_joined_scores(own_scores, scores or {}, rows, f"{dataset}/{config}"))
        if not scored:
            continue  # --metric none: a unit none of the --scores files scores
        for line in [f"{count} row(s) left out ({reason})" for reason, count in info["left_out"].items()] + info["notes"]:
            log(f"{dataset} / {config}: {line}")
        groups[(dataset, config)] = {**info, "metrics": list(scored)}
        _analyse_group(decl, config, rows, scored, acc, groups[(dataset, config)], fraction=fraction, beat=beat,
                       **settings)
    for name in own_scores:
        if not any(name in g["metrics"] for g in groups.values()):
            raise ValueError(f"--scores {name}: no id in it matches an item of the scored datasets "
                             f"({own_data.id_hint(own_scores[name], seen)}).")
    beat.doing("clusters, summary and the report")
    report = _report(acc, groups, decls, skipped, max_rows, n_resamples, fraction, seed, confidence, started)
    report["signature"] = make_signature(
        "leaderboard", configs=[f"{d}/{c}" for d, c in groups], metrics=sorted({t[0] for t in tasks} | set(own_scores)),
        boot=n_resamples, frac=fraction, seed=seed, conf=confidence,
        max_rows=",".join(f"{k}={v}" for k, v in sorted((max_rows or {}).items())) or None,
        ref_copies=None if reference_copies == "keep" else reference_copies,
        **({"dtype": "bf16"} if dtype_name(dtype) == "bf16" else {}))
    write_outputs(target_dir, report)
    return report


def _report(acc: dict[str, Any], groups: dict[tuple[str, str], dict[str, Any]], decls: dict[str, DatasetDeclaration],
            skipped: list[dict[str, str]], max_rows: dict[str, int] | None, n_resamples: int, fraction: float,
            seed: int, confidence: float, started: float) -> dict[str, Any]:
    settings = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    cluster_rows = lq.clusters(acc["rows"], acc["pairs"])
    summary = lq.summary(acc["units"], cluster_rows, **settings) if acc["units"] else []
    scored = dict.fromkeys(d for d, _ in groups)
    published = [{"dataset": d, "config": k[0], "target": k[1], "statistic": k[2], "compare_with": list(v)}
                 for d in scored for k, v in decls[d].published.items()]
    return {
        "generator": "dialeval leaderboard", "rows": acc["rows"], "pairs": acc["pairs"],
        "pairs_left_out": acc["left_out"], "clusters": cluster_rows, "summary": summary, "skipped": skipped,
        "datasets": {f"{d}/{c}": g for (d, c), g in groups.items()}, "max_rows": dict(max_rows or {}),
        "bootstrap": {"n_resamples": n_resamples, "fraction": fraction, "seed": seed, "confidence": confidence,
                      "paired": "with replacement, same rows for both metrics",
                      "clusters": f"paired permutation test over items, {n_resamples} resamples, one-sided p ≤ {lq.ALPHA} "
                                  "(mt-metrics-eval's rank assignment)",
                      "system_level": "systems drawn with replacement, then each drawn system's items with replacement "
                                      "(two-level bootstrap), system means recomputed",
                      "item_level": f"subsamples of {fraction:g} of the items drawn without replacement, "
                                    "percentile interval",
                      "summary": "units (dataset/config) with replacement, then items with replacement"},
        "published": published, "wall_seconds": round(time.perf_counter() - started, 1),
    }


def prepare_out(out: str | os.PathLike, inputs: Sequence[Path | None]) -> Path:
    """``OUT`` as a folder this command may write: new, empty, or made by an earlier ``dialeval leaderboard``
    (its marker file present). Anything else, or a folder inside the data, is refused."""
    inputs = [p for p in inputs if p is not None]
    path = check_output_path(out, inputs=list(inputs), kind="dir", option="--out")
    for data in inputs:
        if Path(data).is_dir() and os.path.realpath(path).startswith(os.path.realpath(data) + os.sep):
            raise ValueError(f"--out {str(path)!r} is inside the data folder {str(data)!r}; choose a folder outside it.")
    if path.is_dir() and any(path.iterdir()) and not (path / MARKER).is_file():
        raise FileExistsError(f"--out {str(path)!r} is a non-empty folder that `dialeval leaderboard` did not create; "
                              "choose a new or empty folder.")
    path.mkdir(parents=True, exist_ok=True)
    if not (path / MARKER).is_file():
        atomic_write_text(path / MARKER, "written by `dialeval leaderboard`; it may rewrite this folder.\n")
    return path
