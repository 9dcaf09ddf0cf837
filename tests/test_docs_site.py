"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a missing page or a docstring
that does not render fails), and every number on its pages and in the README equals its committed result
file: the leaderboard page and the README's headline table against ``docs/results/leaderboard.json``, the
benchmarks page against ``docs/results/benchmarks/*.json``. The numbers are read back from the built HTML and
the README text, not from the generator."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
sys.path.insert(0, str(REPO / "tools"))
import sitegen  # noqa: E402

NUMBER = r"(-?\d+\.\d+|–)"


class Tables(HTMLParser):
    """Every <table> of a page as a list of rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in {"td", "th"}:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in {"td", "th"} and self._cell is not None and self.tables:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(page: Path) -> list[list[list[str]]]:
    parser = Tables()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.tables


def report() -> dict:
    return json.loads((RESULTS / "leaderboard.json").read_text(encoding="utf-8"))


def close(text: str, value: float | None) -> bool:
    if text == "–":
        return value is None
    return value is not None and abs(float(text) - value) <= 0.0005 + 1e-12


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    env = dict(os.environ, DISABLE_MKDOCS_2_WARNING="true", NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def test_readme_is_short():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_readme_links_resolve_in_the_repository():
    """On GitHub and PyPI the README's relative links must reach a file; the one page written separately
    (docs/own_annotations.md) is stood in for by the site build until it lands."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = [m for m in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if not re.match(r"[a-z]+:", m)]
    assert links
    missing = [m for m in links if not (REPO / m).exists() and m != "docs/own_annotations.md"]
    assert not missing, missing


def test_site_builds_strict_with_every_page(site):
    pages = sorted(p.parent.relative_to(site) for p in site.rglob("index.html"))
    print(f"\n{len(pages)} pages")
    names = {str(p) for p in pages}
    assert {f"metrics/{m}" for m in sitegen.metric_names()} <= names
    assert {f"datasets/{d}" for d in sitegen.dataset_names()} <= names
    assert {"leaderboard", "benchmarks", "cli", "api", "changelog", "getting_started", "own_annotations"} <= names


def test_metric_and_dataset_pages_are_their_cards(site):
    for folder, name in [("metrics", m) for m in sitegen.metric_names()] + [("datasets", "fed")]:
        card = (REPO / ("metrics" if folder == "metrics" else "datasets_scripts/cards") / name / "README.md")
        title = re.search(r"^# (.+)$", card.read_text(encoding="utf-8"), re.M).group(1)
        assert html.escape(title, quote=False) in (site / folder / name / "index.html").read_text(encoding="utf-8")


def test_cli_and_api_references_are_generated(site):
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("dialeval score", "dialeval leaderboard", "dialeval hub build", "dialeval datasets export"):
        assert command in cli, command
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "meta_evaluate" in api and "SemanticSpace" in api and "doc-function" in api


def test_leaderboard_page_numbers_equal_the_result_file(site):
    page = site / "leaderboard" / "index.html"
    cells: dict[tuple[str, str, str], str] = {}
    for table in tables(page):
        head = table[0]
        m = re.fullmatch(r"unit \((.+)\)", head[0])
        if not m:
            continue
        assert head[1] == "n"
        for row in table[1:]:
            for metric, text in zip(head[2:], row[2:]):
                cells[(m.group(1), metric, row[0])] = text
    rows = report()["rows"]
    assert rows and len(cells) >= len(rows)
    for r in rows:
        col = f"{r['config']} · {r['target']} · {r['statistic']}" + (" (system level)" if r.get("level") == "system" else "")
        text = cells[(r["dataset"], r["metric"], col)]
        got = re.fullmatch(rf"{NUMBER}(?: \[{NUMBER}, {NUMBER}\])?", text)
        assert got, (r["metric"], col, text)
        assert close(got.group(1), r["value"]), (r["metric"], col, text, r["value"])
        if got.group(2):
            assert close(got.group(2), r["ci_low"]) and close(got.group(3), r["ci_high"]), (r["metric"], col, text)


def test_leaderboard_page_shows_the_heatmap(site):
    page = (site / "leaderboard" / "index.html").read_text(encoding="utf-8")
    src = re.search(r'<img[^>]+src="([^"]*heatmap[^"]*\.svg)"', page)
    assert src, "no heatmap image on the leaderboard page"
    svg = ((site / "leaderboard") / src.group(1)).resolve().read_text(encoding="utf-8")
    assert "<svg" in svg
    # the heatmap's cells are the item-level rows (matplotlib writes text as glyph paths; the metric names are the
    # y tick labels, kept in the SVG's comments)
    for metric in {r["metric"] for r in report()["rows"]}:
        assert metric in svg, metric


def test_readme_generated_regions_equal_their_result_files():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert sitegen.render_readme(text) == text, "README differs from its result files: python tools/sitegen.py readme"


def test_readme_headline_numbers_equal_the_result_file():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    region = re.search(r"<!-- generated:results -->\n(.*?)<!-- /generated -->", text, re.S).group(1)
    rows = {(r["dataset"], r["config"], r["target"], r["statistic"], r["metric"]): r for r in report()["rows"]
            if r.get("level", "item") == "item"}
    lines = [line for line in region.splitlines() if line.startswith("| ") and "dialeval leaderboard" in line]
    assert len(lines) >= 5
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        dataset, config = cells[1].split(" · ")
        command = re.search(r"--metric (\S+)", cells[6]).group(1)
        r = rows[(dataset, config, cells[2].strip("`"), cells[3], command)]
        got = re.fullmatch(rf"{NUMBER} \[{NUMBER}, {NUMBER}\]", cells[4])
        assert got and close(got.group(1), r["value"]) and close(got.group(2), r["ci_low"]), line
        assert close(got.group(3), r["ci_high"]) and int(cells[5].replace(",", "")) == r["n"], line


def test_benchmarks_page_shows_every_result_file(site):
    page = html.unescape((site / "benchmarks" / "index.html").read_text(encoding="utf-8"))
    page = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    files = sorted((RESULTS / "benchmarks").glob("*.json"))
    assert files
    for path in files:
        result = json.loads(path.read_text(encoding="utf-8"))
        assert result["command"] in page, path.name
        rows = result["rows"] if isinstance(result.get("rows"), list) else result["units"]  # the floor: per unit
        if "summary" in result:
            assert result["summary"] in page, path.name
        for row in rows:
            for value in row.values():
                if isinstance(value, str):
                    assert " ".join(value.split()) in page, (path.name, value)
