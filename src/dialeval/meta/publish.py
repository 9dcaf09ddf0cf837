"""Publishing the leaderboard (``hub build --leaderboard``): a ``dialeval leaderboard`` output folder as a Hub
dataset folder (rows, pairs and clusters as configs, the plots, the card) and each metric's results as
model-card ``model-index`` YAML. Every name read from ``leaderboard.json`` that becomes a path is checked first
(:func:`check_report`)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from dialeval.meta.leaderboard import _json_safe, markdown

HUB_NAME = "dialeval-leaderboard"
STAT_TYPES = {"spearman": "spearmanr", "oca": "accuracy", "auc": "roc_auc"}


def read_report(folder: str | os.PathLike) -> dict[str, Any]:
    """The ``leaderboard.json`` an earlier ``dialeval leaderboard --out FOLDER`` wrote."""
    path = Path(folder).expanduser() / "leaderboard.json"
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} is missing; give the --out folder of `dialeval leaderboard`.")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeError, ValueError) as exc:
        raise ValueError(f"{str(path)!r} is not valid JSON ({exc}); give the --out folder of `dialeval leaderboard`.") from None
    if not isinstance(report, dict) or report.get("generator") != "dialeval leaderboard" or "rows" not in report:
        raise ValueError(f"{str(path)!r} was not written by `dialeval leaderboard`.")
    check_report(report, path)
    return report


#: A metric, dataset or config name as a leaderboard writes it: it becomes a file name of the Hub folder.
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}")
#: Fields of each entry: names (they become file names), other strings, numbers (or null).
REPORT_FIELDS = {"rows": (("metric", "dataset", "config"), ("target", "statistic"), ("value", "ci_low", "ci_high", "n")),
                 "pairs": (("metric_a", "metric_b", "dataset", "config"), ("target", "statistic"),
                           ("difference", "p_bootstrap"))}


def check_report(report: dict[str, Any], path: str | os.PathLike) -> None:
    """Refuse a ``leaderboard.json`` whose entries are not what ``dialeval leaderboard`` writes, before any name
    read from it becomes a path: one line naming the entry and the field. Every entry's dataset/config is one of
    the report's units (its ``datasets``, which every leaderboard writes)."""
    units = report.get("datasets")
    for key, (names, strings, numbers) in REPORT_FIELDS.items():
        entries = report.get(key, [])
        if not isinstance(entries, list):
            raise ValueError(f"{path}: {key!r} must be a list, got {type(entries).__name__}.")
        for i, entry in enumerate(entries):
            where_ = f"{path}: {key}[{i}]"
            if not isinstance(entry, dict):
                raise ValueError(f"{where_} must be an object, got {type(entry).__name__}.")
            for field in names:
                v = entry.get(field)
                if not isinstance(v, str) or not SAFE_NAME.fullmatch(v) or ".." in v:
                    raise ValueError(f"{where_}.{field} is {v!r:.60}; expected a name of letters, digits and _.:+- "
                                     "(it becomes a file name); rerun `dialeval leaderboard`.")
            for field in strings:
                if not isinstance(entry.get(field), str):
                    raise ValueError(f"{where_}.{field} is {entry.get(field)!r:.60}; expected a string.")
            for field in numbers:
                v = entry.get(field)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise ValueError(f"{where_}.{field} is {v!r:.60}; expected a number or null.")
            unit = f"{entry['dataset']}/{entry['config']}"
            if units is not None and not isinstance(units, dict):
                raise ValueError(f"{path}: 'datasets' (the units scored, DATASET/CONFIG) must be an object, got "
                                 f"{type(units).__name__}; rerun `dialeval leaderboard`.")
            if units is not None and unit not in units:
                raise ValueError(f"{where_}: dataset/config {unit!r:.60} is not among the report's units "
                                 f"{sorted(units)[:8]}; rerun `dialeval leaderboard`.")


def eval_results_yaml(report: dict[str, Any], metric: str, org: str) -> str:
    """The model-card ``model-index`` YAML (``eval_results``) of ``metric``'s leaderboard rows: one result per
    dataset config, target and statistic, pointing at the leaderboard dataset as its source."""
    from huggingface_hub import EvalResult, ModelCardData

    results = [EvalResult(
        task_type="text-generation", task_name="meta-evaluation: agreement with human judgements",
        dataset_type=f"{org}/{r['dataset']}", dataset_name=r["dataset"], dataset_config=r["config"], dataset_split="test",
        metric_type=STAT_TYPES.get(r["statistic"], r["statistic"]), metric_value=round(r["value"], 4),
        metric_name=f"{r['statistic']} with {r['target']}", metric_config=r["target"],
        metric_args={"ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": r["n"]}, verified=False,
        source_name="dialeval leaderboard", source_url=f"https://huggingface.co/datasets/{org}/{HUB_NAME}",
    ) for r in report["rows"] if r["metric"] == metric and r["value"] is not None]
    return ModelCardData(model_name=metric, eval_results=results).to_yaml() + "\n"


def eval_result_files(report: dict[str, Any], metric: str, org: str) -> dict[str, str]:
    """``{file name: YAML}`` of ``metric``'s headline results in the Hub's ``.eval_results/*.yaml`` format (one file
    per dataset, one entry per config: the item-level Spearman ρ with the config's overall quality, or the
    first target of the older protocols), for the ``.eval_results/`` folder of the metric's model repo."""
    import yaml
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    from dialeval.meta import quality as lq

    files: dict[str, list[Any]] = {}
    seen: set[tuple[str, str]] = set()
    for r in report["rows"]:
        if r["metric"] != metric or r["value"] is None or r.get("level", "item") != "item":
            continue
        overall = lq.overall_of(report, r["dataset"], r["config"])
        headline = (r["target"] == overall and r["statistic"] == "spearman" if overall
                    else (r["dataset"], r["config"]) not in seen)
        if not headline or (r["dataset"], r["config"]) in seen:
            continue
        seen.add((r["dataset"], r["config"]))
        files.setdefault(f"{r['dataset']}.yaml", []).append(EvalResultEntry(
            dataset_id=f"{org}/{r['dataset']}", task_id=r["config"], value=round(r["value"], 4),
            source_url=f"https://huggingface.co/datasets/{org}/{HUB_NAME}", source_name="dialeval leaderboard",
            notes=f"{r['statistic']} with {r['target']} (n={r['n']}, 95% CI [{lq.fmt_value(r['ci_low'])}, {lq.fmt_value(r['ci_high'])}])"))
    return {name: yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False) for name, entries in files.items()}


#: The two layouts of :func:`rho_heatmap`: the Hub card's PNG (compact) and the docs page's SVG.
HEATMAP_STYLES = {
    "card": {"width": 0.7, "height": 2.0, "rotation": 60, "ticks": 7, "cells": 6, "contrast": False},
    "page": {"width": 0.9, "height": 3.0, "rotation": 35, "ticks": 8, "cells": 7, "contrast": True},
}


def rho_heatmap(cells: dict[tuple[str, str], Any], label: str, *, style: str = "card") -> bytes | str:
    """A metric × unit grid of correlations in [−1, 1] (``cells[(metric, unit)]``; a missing or non-numeric value is
    blank), each cell printed: PNG bytes in the ``"card"`` style, SVG text (the same cells draw the same file) in
    the ``"page"`` style (:data:`HEATMAP_STYLES`)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    look = HEATMAP_STYLES[style]
    metrics, units = list(dict.fromkeys(m for m, _ in cells)), list(dict.fromkeys(u for _, u in cells))
    grid = np.array([[v if isinstance(v := cells.get((m, u)), (int, float)) else np.nan for u in units]
                     for m in metrics], dtype=float)
    fig, ax = plt.subplots(figsize=(max(6.0, 3.0 + look["width"] * len(units)), look["height"] + 0.45 * len(metrics)))
    im = ax.imshow(grid, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(units)), units, rotation=look["rotation"], ha="right", fontsize=look["ticks"])
    ax.set_yticks(range(len(metrics)), metrics, fontsize=look["ticks"])
    for i, j in zip(*np.nonzero(np.isfinite(grid))):
        dark = look["contrast"] and abs(grid[i, j]) > 0.6
        ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=look["cells"],
                color="white" if dark else "black")
    fig.colorbar(im, ax=ax, label=label)
    fig.tight_layout()
    if style == "page":
        buf: Any = io.StringIO()
        matplotlib.rcParams["svg.hashsalt"] = "dialeval"  # the same cells draw the same SVG
        fig.savefig(buf, format="svg", metadata={"Date": None})
    else:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def heatmap_png(report: dict[str, Any]) -> bytes | None:
    """Metric × (dataset/config) heatmap of the item-level Spearman ρ with each unit's overall quality (PNG
    bytes, :func:`rho_heatmap`), or ``None`` when no quality dataset was scored."""
    from dialeval.meta import quality as lq

    cells = {(r["metric"], f"{r['dataset']}/{r['config']}"): r["value"] for r in report["rows"]
             if r.get("level") == "item" and r["statistic"] == "spearman"
             and r["target"] == lq.overall_of(report, r["dataset"], r["config"])}
    return rho_heatmap(cells, "Spearman ρ with the overall quality") if cells else None


def hub_card(report: dict[str, Any], org: str) -> str:
    """The dataset card: front matter with the configs (rows, pairs, clusters when there are any), then the
    Markdown table."""
    import yaml

    configs = [{"config_name": "rows", "data_files": "data/rows.jsonl", "default": True},
               {"config_name": "pairs", "data_files": "data/pairs.jsonl"}]
    if report.get("clusters"):
        configs.append({"config_name": "clusters", "data_files": "data/clusters.jsonl"})
    meta = {"license": "mit", "pretty_name": "dialeval leaderboard", "tags": ["evaluation", "dialogue", "leaderboard"],
            "configs": configs}
    usage = "```python\nfrom datasets import load_dataset\n" + "".join(
        f'{c["config_name"]} = load_dataset("{org}/{HUB_NAME}", "{c["config_name"]}", split="train")\n' for c in configs) + "```\n"
    heat = "![ρ heatmap](heatmap.png)\n\n" if report.get("clusters") or any(r.get("level") for r in report["rows"]) else ""
    return (f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n# dialeval leaderboard\n\nEvery dialeval metric against "
            "human judgements (conTest/decTest, FED, DailyDialog++ and the human-judged quality datasets), with bootstrap "
            "intervals, paired tests for each pair of metrics and significance clusters, written by `dialeval "
            "leaderboard`.\n\nTwo evaluation-results formats, for the model repo of each metric's model:\n\n"
            "- `eval_results/<metric>/.eval_results/<dataset>.yaml`: the Hub's current format (one entry per config, "
            "the headline ρ; copy the folder into the model repo);\n"
            "- `eval_results/<metric>.yaml`: every row as legacy model-card `model-index` YAML (paste it into the "
            f"model card's front matter).\n\n{usage}\n![leaderboard](leaderboard.png)\n\n{heat}{markdown(report)}")


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def regular_file(path: Path, option: str) -> bytes | None:
    """The bytes of the plot ``dialeval leaderboard`` wrote at ``path`` (``None`` when absent): a regular PNG file,
    never a symlink (its target, any file, would be copied into a folder that is uploaded)."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        raise ValueError(f"{option}: {str(path)!r} is " + ("a symlink" if path.is_symlink() else "not a file")
                         + "; hub build copies only the plot `dialeval leaderboard` wrote there. Rerun it, or remove "
                         "that entry.")
    data = path.read_bytes()
    if not data.startswith(PNG_MAGIC):
        raise ValueError(f"{option}: {str(path)!r} is not a PNG image; rerun `dialeval leaderboard`, or remove it.")
    return data


def yaml_names(report: dict[str, Any]) -> dict[str, str]:
    """``{metric: file name}`` of the ``eval_results`` YAML (``:`` written ``-``); two metrics that would share a
    file (``column:x`` and ``column-x``) are refused rather than one overwriting the other."""
    names: dict[str, str] = {}
    for metric in dict.fromkeys(r["metric"] for r in report["rows"]):
        name = metric.replace(":", "-")
        other = next((m for m, n in names.items() if n.lower() == name.lower()), None)
        if other is not None:
            raise ValueError(f"leaderboard metrics {other!r} and {metric!r} would both be written as eval_results/"
                             f"{name}.yaml; rename one (e.g. its column) and rerun `dialeval leaderboard`.")
        names[metric] = name
    return names


def write_hub_dataset(source: str | os.PathLike, folder: Path, org: str) -> str:
    """Write the leaderboard of ``source`` (a ``dialeval leaderboard`` output) as a Hub dataset folder:
    ``data/{rows,pairs,clusters}.jsonl``, ``leaderboard.json``/``.md``/``.png``, ``heatmap.png``, each metric's
    ``eval_results/<metric>.yaml`` (model-index) and ``eval_results/<metric>/.eval_results/*.yaml``, and the
    card. Returns the repo id."""
    report = _json_safe(read_report(source))
    png = regular_file(Path(source).expanduser() / "leaderboard.png", "--leaderboard")
    names = yaml_names(report)
    try:
        rendered = {"md": markdown(report), "card": hub_card(report, org), "heat": heatmap_png(report),
                    "yaml": {m: (eval_results_yaml(report, m, org), eval_result_files(report, m, org)) for m in names}}
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        where = Path(source).expanduser() / "leaderboard.json"
        raise ValueError(f"{str(where)!r} is not a leaderboard `dialeval leaderboard` wrote ({type(exc).__name__}: "
                         f"{str(exc)[:80]}); rerun `dialeval leaderboard`.") from None
    folder.mkdir(parents=True)
    (folder / "data").mkdir()
    for key in ("rows", "pairs", "clusters"):
        if key != "clusters" or report.get(key):
            (folder / "data" / f"{key}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in report[key]),
                                                         encoding="utf-8")
    (folder / "leaderboard.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (folder / "leaderboard.md").write_text(rendered["md"], encoding="utf-8")
    if png is not None:
        (folder / "leaderboard.png").write_bytes(png)
    if rendered["heat"]:
        (folder / "heatmap.png").write_bytes(rendered["heat"])
    (folder / "eval_results").mkdir()
    for metric, name in names.items():
        legacy, entries = rendered["yaml"][metric]
        (folder / "eval_results" / f"{name}.yaml").write_text(legacy, encoding="utf-8")
        if entries:
            (folder / "eval_results" / name / ".eval_results").mkdir(parents=True)
            for file, text in entries.items():
                (folder / "eval_results" / name / ".eval_results" / file).write_text(text, encoding="utf-8")
    (folder / "README.md").write_text(rendered["card"], encoding="utf-8")
    return f"{org}/{HUB_NAME}"
