"""Pages generated from the repository: the metric and dataset cards, the CLI reference, the leaderboard (table
and heatmap) and the benchmarks, each from a committed result file, and the generated regions of the README and
the cards.

A generated region is the text between ``<!-- generated:NAME -->`` and ``<!-- /generated -->``; its content is
rewritten from the result files under ``docs/results/``. The README holds the regions of :data:`REGIONS`; any
card (``metrics/*/README.md``, ``datasets_scripts/cards/*/README.md``) and any page of ``docs/`` may hold
``benchmark-NAME`` regions, each rendered from ``docs/results/benchmarks/NAME.json``
(:func:`benchmark_region.benchmark_region`: the file's summary, the command that rewrites it, the machine, its CPU
kind and its load, the date and a table of its routes).

``python tools/sitegen.py readme`` rewrites every generated region of the README, the cards and the pages (only
files that hold a region and differ are written, each atomically); ``python tools/sitegen.py check`` exits 1, naming the
files, when any of them differs from its result files. The site build (``mkdocs build``) builds its pages
through ``tools/gen_pages.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmark_region import BENCHMARKS, benchmark_region, cpu_kind_of, machine_line

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
METRICS = REPO / "metrics"
DATASET_CARDS = REPO / "datasets_scripts" / "cards"


# ----------------------------------------------------------------------------------------------- result files
def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def leaderboard() -> tuple[dict[str, Any], dict[str, Any]]:
    """The committed leaderboard report and its run record (command, date, machine)."""
    return load_json(RESULTS / "leaderboard.json"), load_json(RESULTS / "leaderboard.meta.json")


def benchmark_results() -> list[dict[str, Any]]:
    """Every benchmark result file (``docs/results/benchmarks/*.json``), in file-name order."""
    return [load_json(p) for p in sorted((RESULTS / "benchmarks").glob("*.json"))]


def fmt(x: Any, digits: int = 3) -> str:
    """A number as the pages print it: ``digits`` decimals, ``–`` for a missing or undefined value."""
    if x is None or isinstance(x, str) or (isinstance(x, float) and not math.isfinite(x)):
        return "–" if not isinstance(x, str) else x
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    return f"{x:.{digits}f}"


# ----------------------------------------------------------------------------------------------------- cards
def card_body(path: Path) -> str:
    """A card without its YAML front matter (the Hub reads that; the site does not show it)."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        text = text[text.index("\n---\n", 4) + 5:]
    return text.lstrip("\n")


def metric_names() -> list[str]:
    return sorted(p.parent.name for p in METRICS.glob("*/README.md"))


def dataset_names() -> list[str]:
    return sorted(p.parent.name for p in DATASET_CARDS.glob("*/README.md"))


_LINK = re.compile(r"\]\((?!https?://|#|mailto:)(?:\.\./)*(?:metrics/)?([a-z_0-9]+)/README\.md(#[^)]*)?\)")


def site_links(text: str) -> str:
    """Links from one card to another (``../<name>/README.md``) rewritten to that card's page."""
    return _LINK.sub(lambda m: f"]({m.group(1)}.md{m.group(2) or ''})" if m.group(1) in metric_names()
                     else m.group(0), text)


# ------------------------------------------------------------------------------------------------------ CLI
def _subparsers(parser: argparse.ArgumentParser) -> Iterable[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def cli_reference() -> str:
    """Every command's ``--help``, from the argparse parser the ``dialeval`` command builds."""
    from dialeval.cli import build_parser

    parser = build_parser()
    out = ["# Command-line reference", "",
           "Generated from the `dialeval` command's own argument parser: each section is that command's "
           "`--help`.", "", "```text", _help(parser, "dialeval"), "```", ""]

    def walk(p: argparse.ArgumentParser, prog: str, level: int) -> None:
        for name, child in _subparsers(p):
            full = f"{prog} {name}"
            out.extend([f"{'#' * level} `{full}`", "", "```text", _help(child, full), "```", ""])
            walk(child, full, min(level + 1, 4))

    walk(parser, "dialeval", 2)
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser, prog: str) -> str:
    import os

    parser.prog = prog
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        return parser.format_help().rstrip()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


# ---------------------------------------------------------------------------------------------- leaderboard
def _rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in report.get("rows", []) if isinstance(r, dict) and "metric" in r and "dataset" in r]


def _column(r: dict[str, Any]) -> str:
    level = r.get("level")
    stat = r.get("statistic", "?")
    label = f"{r.get('config', '?')} · {r.get('target', '?')} · {stat}"
    return label + (" (system level)" if level == "system" else "")


def _cell(r: dict[str, Any]) -> str:
    value = fmt(r.get("value"))
    if r.get("ci_low") is not None or r.get("ci_high") is not None:
        value += f" [{fmt(r.get('ci_low'))}, {fmt(r.get('ci_high'))}]"
    return value


def _headline_target(r: dict[str, Any]) -> bool:
    """Whether a row's human target belongs in the heatmap: a quality dataset's overall quality (when the
    library says which that is), every target of the other datasets."""
    try:
        from dialeval.meta import quality as lq

        if lq.is_quality(r["dataset"]):
            return r.get("target") == lq.overall_target(r["dataset"], r.get("config"))
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
        pass
    return True


def heatmap_svg(report: dict[str, Any]) -> str | None:
    """Metric × (dataset · config · target) heatmap of the item-level Spearman ρ (a quality dataset's overall
    quality only), as SVG text (:func:`dialeval.meta.publish.rho_heatmap`); ``None`` when the report has no such row."""
    from dialeval.meta.publish import rho_heatmap

    cells = {(r["metric"], f"{r['dataset']} · {r.get('config', '?')} · {r.get('target', '?')}"): r.get("value")
             for r in _rows(report) if r.get("level", "item") == "item" and r.get("statistic") == "spearman"
             and _headline_target(r)}
    return rho_heatmap(cells, "Spearman ρ with the human target", style="page") if cells else None


def leaderboard_page(report: dict[str, Any], meta: dict[str, Any]) -> str:
    """The leaderboard page: what ran, the heatmap, one table per dataset (metric × config · target ·
    statistic), the summary and significance clusters when the report has them, paired tests, published
    numbers to compare with, and what was skipped. Fields a report lacks are left out."""
    out = ["# Leaderboard", "",
           "Every metric against human judgements: the correlation (or AUC, or optimal classification accuracy) "
           "of each metric's scores with the human target on each dataset, with a 95 % bootstrap interval.", ""]
    svg = heatmap_svg(report)
    if svg:
        out += ["## Heatmap", "", "Item-level Spearman ρ of each metric with each dataset's human target (for the quality "
                "datasets, their overall quality); blue is agreement with people, red disagreement, blank not run.",
                "", "![Heatmap of the item-level Spearman correlations](leaderboard-heatmap.svg)", ""]
    out += ['!!! info "Where these numbers come from"', "",
            f"    The committed result file `docs/results/leaderboard.json`, written on {meta.get('date', '?')} "
            f"({meta.get('wall', '?')}) by:", "", "    ```bash", f"    {meta.get('command', '?')}", "    ```", "",
            f"    Machine: {machine_line(meta)}.", ""]
    if meta.get("scope"):
        out += [f"    {meta['scope']}", ""]
    boot = report.get("bootstrap", {})
    if boot:
        out += [f"Intervals: {fmt(boot.get('n_resamples'))} resamples of {boot.get('fraction', '?')} of the rows, "
                f"seed {boot.get('seed', '?')}. Paired tests: {boot.get('paired', '–')}.", ""]
    out += ["## Tables", "", "One table per dataset: a row per config, human target and statistic, a column per "
            "metric; each cell is the value and its 95 % interval.", ""]
    rows = _rows(report)
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        mine = [r for r in rows if r["dataset"] == dataset]
        units = list(dict.fromkeys(_column(r) for r in mine))
        metrics = list(dict.fromkeys(r["metric"] for r in mine))
        by = {(r["metric"], _column(r)): r for r in mine}
        n = {_column(r): r.get("n") for r in mine}
        out += [f"### {dataset}", "", f"| unit ({dataset}) | n | " + " | ".join(f"`{m}`" for m in metrics) + " |",
                "|---|---:|" + "---:|" * len(metrics)]
        for unit in units:
            out.append(f"| {unit} | {fmt(n[unit])} | "
                       + " | ".join(_cell(r) if (r := by.get((m, unit))) else "–" for m in metrics) + " |")
        out.append("")
    out += _generic_table("Summary", report.get("summary"))
    out += _generic_table("Significance clusters", report.get("clusters"))
    pairs = [p for p in report.get("pairs", []) if isinstance(p, dict)]
    if pairs:
        out += ["## Paired tests", "", "| metric A | metric B | dataset | config · target · statistic | A − B | "
                "p (paired bootstrap) | p (Williams) |", "|---|---|---|---|---:|---:|---:|"]
        for p in pairs:
            out.append(f"| `{p.get('metric_a')}` | `{p.get('metric_b')}` | {p.get('dataset')} | {_column(p)} | "
                       f"{fmt(p.get('difference'))} | {_fmt_p(p.get('p_bootstrap'))} | {_fmt_p(p.get('p_williams'))} |")
        out.append("")
    published = [p for p in report.get("published", []) if p.get("dataset") in {r["dataset"] for r in rows}]
    if published:
        out += ["## Published numbers to compare with", ""]
        out += [f"- **{p.get('dataset')} · {p.get('config')} · {p.get('target')} · {p.get('statistic')}**: "
                + "; ".join(p.get("compare_with", [])) for p in published]
        out.append("")
    skipped = report.get("skipped") or []
    if skipped:
        out += ["## Not run here", ""] + [f"- `{s.get('metric')}`: {s.get('reason')}" for s in skipped] + [""]
    if report.get("signature"):
        out += [f"Signature: `{report['signature']}`", ""]
    return "\n".join(out)


def _fmt_p(x: Any) -> str:
    return "–" if not isinstance(x, (int, float)) else (f"{x:.3g}" if x < 0.01 else f"{x:.3f}")


def _generic_table(title: str, items: Any) -> list[str]:
    """A table of whatever scalar fields a list of records has (the summary and cluster schemas change)."""
    items = [i for i in (items or []) if isinstance(i, dict)]
    if not items:
        return []
    keys = [k for k in dict.fromkeys(k for i in items for k in i) if all(
        not isinstance(i.get(k), (dict, list)) for i in items)]
    lines = [f"## {title}", "", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for i in items:
        lines.append("| " + " | ".join(fmt(i.get(k)) if not isinstance(i.get(k), str) else str(i[k]) for k in keys)
                     + " |")
    return lines + [""]


# ----------------------------------------------------------------------------------------------- benchmarks
def benchmarks_page(results: list[dict[str, Any]]) -> str:
    out = ["# Benchmarks", "",
           "Speed and memory of dialeval's default routes against the fastest route a user would take, measured "
           "in the same run at the same precision and thread count. Each section is generated from the result "
           "file its script writes (`docs/results/benchmarks/<script>.<CPU kind>.json`) and names the command that "
           "rewrites it and the machine it ran on. Wall times depend on the machine and its load: compare the "
           "ratios within a section, not absolute times across sections.", ""]
    for res in results:
        kind = cpu_kind_of(res)
        out += [f"## {res.get('title', res.get('script', '?'))}" + (f", CPU kind {kind}" if kind else ""), "",
                f"Command: `{res.get('command', '?')}`  ", f"Ran on: {machine_line(res)}.", ""]
        if res.get("note"):
            out += [res["note"], ""]
        if res.get("summary"):
            out += [f"Summary: {res['summary']}.", ""]
        rows = res.get("rows", [])
        if not isinstance(rows, list):  # a per-unit table instead (the compute-floor benchmark)
            rows = []
        rows = rows or [{k: u.get(k) for k in ("metric", "dataset", "config", "rows", "route_s", "floor_s", "ratio",
                                               "kind")} for u in res.get("units", [])]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        if rows:
            out += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
            for r in rows:
                out.append("| " + " | ".join(_bench_cell(r.get(k)) for k in keys) + " |")
            out.append("")
    return "\n".join(out)


def _bench_cell(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.3g}" if abs(x) < 100 else f"{x:,.0f}"
    return "–" if x is None else str(x).replace("|", "\\|")


# --------------------------------------------------------------------------------------------------- README
HEADLINE = [  # (metric, dataset, config, target, statistic): the README's headline rows
    ("column:metrics.abs_hds_mean", "contest", "con_test_200_resp_gen", "label_value", "spearman"),
    ("column:metrics.SentBert", "contest", "con_test_200_resp_gen", "label_value", "spearman"),
    ("distinct_n", "contest", "con_test_200_resp_gen", "label_value", "spearman"),
    ("ent_n", "contest", "con_test_200_resp_gen", "label_value", "spearman"),
    ("sem_ent", "contest", "con_test_200_resp_gen", "label_value", "spearman"),
    ("sent_bert_diversity", "contest", "con_test_200_resp_gen", "label_value", "spearman"),
    ("vendi_score", "contest", "con_test_200_resp_gen", "label_value", "spearman"),
    ("full_followup", "fed", "turn", "annotation_means.Overall", "spearman"),
    ("full_followup", "fed", "dialog", "annotation_means.Overall", "spearman"),
    ("llm_judge", "fed", "turn", "annotation_means.Overall", "spearman"),
    ("llm_judge", "fed", "dialog", "annotation_means.Overall", "spearman"),
]


STORED = {"column:metrics.abs_hds_mean": "human scores (stored in conTest)",
          "column:metrics.SentBert": "Tevet & Berant's Sent-BERT (stored)"}


def readme_results(report: dict[str, Any]) -> str:
    """The README's headline table: selected leaderboard rows, each with the command that regenerates it."""
    rows = {(r["metric"], r["dataset"], r.get("config"), r.get("target"), r.get("statistic")): r
            for r in _rows(report) if r.get("level", "item") == "item"}
    lines = ["| metric | dataset · config | human target | statistic | value [95 % CI] | n | command |",
             "|---|---|---|---|---:|---:|---|"]
    for key in HEADLINE:
        r = rows.get(key)
        if r is None:
            continue
        metric, dataset, config, target, stat = key
        name = STORED.get(metric, f"[`{metric}`](metrics/{metric}/README.md)")
        lines.append(f"| {name} | {dataset} · {config} | `{target}` | {stat} | "
                     f"{_cell(r)} | {fmt(r.get('n'))} | `dialeval leaderboard --data-dir ../shared/data "
                     f"--dataset {dataset} --metric {metric} --out lb/` |")
    return "\n".join(lines)


def readme_suite_time() -> str:
    t = load_json(RESULTS / "test_suite.json")
    outcome = "" if t["exit_code"] == 0 else f", exit code {t['exit_code']}"
    kind = f" (CPU kind {t['cpu_kind']})" if t.get("cpu_kind") else ""
    return (f"The whole suite takes about {int(t['minutes'] + 0.5)} minutes on {t['cores']} cores{kind} in two test "
            f"processes (pytest-xdist; `python -m pytest -n 0` runs one) on a fresh clone, load average "
            f"{t['load']}, the suite's own processes included; "
            f"its last timed run at commit `{t['commit']}`: {t['tests']}{outcome} "
            f"(`docs/results/test_suite.json`, rewritten by `{t['rewrite']}`). Under the two processes each test id "
            "in the output ends in its group (`...::test_name@test_file.py`); drop that suffix to run one test again.")


def readme_install() -> str:
    t = load_json(RESULTS / "install.json")
    return (f"`install.sh` takes about {int(t['minutes'] + 0.5)} minutes and installs about {t['installed_gb']} GB "
            f"of packages into {t['installs_into']} (`docs/results/install.json`); it prints one line per step. "
            "To keep them apart, make and activate one first: `python -m venv .venv && . .venv/bin/activate` "
            "(`.venv/` is ignored by git).")


def readme_caches() -> str:
    """What dialeval and its tests write outside the checkout, one sentence (``docs/results/disk.json``)."""
    t = load_json(RESULTS / "disk.json")
    parts = []
    for c in t["caches"]:
        size = "" if c["gb"] is None else f"{c['gb']:.1f} GB, " if c["gb"] >= 0.1 else "< 0.1 GB, "
        parts.append(f"`{c['folder']}` ({size}`{c['variable']}`; {c['what']}; clear: `{c['clear']}`)")
    return (f"Outside the checkout, each folder set by its variable: {'; '.join(parts)}. Sizes {t['measured']}, "
            f"{t['note']} (`docs/results/disk.json`, rewritten by `{t['command']}`).")


def readme_usr_baselines() -> str:
    """The USR baseline table (``scripts/reproduce_usr_baselines.py`` writes the result file and the table)."""
    sys.path.insert(0, str(REPO / "scripts"))
    import reproduce_usr_baselines as usr

    result = load_json(RESULTS / "usr_baselines.json")
    return usr.markdown(result).rstrip("\n") + (f"\n\n`{result['command']}` ("
                                                f"{result['machine']}, {result['wall_seconds']:.0f} s) writes "
                                                "`docs/results/usr_baselines.json`.")


def _tool_region(module: str, function: str) -> str:
    """The region rendered by ``tools/<module>.py``'s ``function`` (the quality and judge tables)."""
    sys.path.insert(0, str(REPO / "tools"))
    import importlib

    return getattr(importlib.import_module(module), function)()


REGIONS = {"results": lambda: readme_results(leaderboard()[0]), "suite-time": readme_suite_time,
           "install": readme_install, "usr-baselines": readme_usr_baselines, "caches": readme_caches,
           "quality-units": lambda: _tool_region("quality_region", "region"),
           "quality-summary": lambda: _tool_region("quality_region", "summary_region"),
           "judge-units": lambda: _tool_region("judge_region", "region")}


def region(name: str) -> str:
    """The content of the generated region ``name``: a README region of :data:`REGIONS` or ``benchmark-NAME``."""
    if name in REGIONS:
        return REGIONS[name]()
    if name.startswith("benchmark-"):
        return benchmark_region(name.removeprefix("benchmark-"))
    raise ValueError(f"unknown generated region {name!r}: {', '.join(REGIONS)} or benchmark-NAME "
                     f"(NAME a file of {BENCHMARKS.relative_to(REPO).as_posix()}/)")


_REGION = re.compile(r"<!-- generated:([a-z0-9_.-]+) -->\n.*?<!-- /generated -->", re.S)


def render_regions(text: str) -> str:
    """``text`` with every ``<!-- generated:NAME -->`` … ``<!-- /generated -->`` region regenerated."""
    return _REGION.sub(lambda m: f"<!-- generated:{m.group(1)} -->\n{region(m.group(1))}\n<!-- /generated -->", text)


render_readme = render_regions


def region_files() -> list[Path]:
    """The files that may hold generated regions: the README, every metric and dataset card and the pages of
    ``docs/`` (the site shows them as written)."""
    return [REPO / "README.md", *sorted(METRICS.glob("*/README.md")), *sorted(DATASET_CARDS.glob("*/README.md")),
            *sorted((REPO / "docs").glob("*.md"))]


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["readme", "check"],
                        help="readme: rewrite the generated regions of the README and the cards; check: exit 1 "
                             "when any of them differs from its result files")
    args = parser.parse_args(argv)
    stale = []
    for path in region_files():
        text = path.read_text(encoding="utf-8")
        if not _REGION.search(text):
            continue
        new = render_regions(text)
        if new == text:
            continue
        stale.append(path.relative_to(REPO).as_posix())
        if args.action == "readme":
            _write_atomic(path, new)
    if args.action == "check" and stale:
        print(f"{', '.join(stale)} differ from their result files: run python tools/sitegen.py readme",
              file=sys.stderr)
        return 1
    for name in stale:
        print(f"rewrote {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
