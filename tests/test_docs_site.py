"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a missing page or a docstring
that does not render fails), and every number on its pages and in the README equals its committed result
file: the leaderboard page and the README's headline table against ``docs/results/leaderboard.json``, the
benchmarks page and the cards' ``benchmark-NAME`` regions against ``docs/results/benchmarks/*.json``. The numbers
are read back from the built HTML, the README and the card text, not from the generator; the cards narrate no
measurement (machine, load, what was dropped) outside those regions."""

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


def test_readme_names_every_cache_with_its_variable_and_says_where_install_sh_installs():
    """The caches the code writes (the variables it reads for their folders) are each in the README's table; the
    install line says what install.sh does: no virtual environment (it has no venv step)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- generated:caches -->\n(.*?)<!-- /generated -->", text, re.S).group(1)
    runtime = (REPO / "src" / "dialeval" / "models" / "runtime.py").read_text(encoding="utf-8")
    assert 'os.environ.get("DIALEVAL_CACHE")' in runtime
    for variable, folder in (("DIALEVAL_CACHE", "~/.cache/dialeval"), ("TMPDIR", "/tmp/pytest-of-$USER"),
                             ("HF_HOME", "~/.cache/huggingface"), ("PIP_CACHE_DIR", "~/.cache/pip")):
        assert re.search(rf"`{re.escape(folder)}` \((\d+\.\d GB|< 0\.1 GB)?,? ?`{variable}`; [^;]+(; [^;]+)?; "
                         rf"clear: `[^`]+`\)", table), variable
    assert "venv" not in (REPO / "install.sh").read_text(encoding="utf-8")
    assert "with no virtual environment of its own" in text


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


# ------------------------------------------------------------------------------------------ the cards' regions
CARDS = [*sorted((REPO / "metrics").glob("*/README.md")), *sorted((REPO / "datasets_scripts" / "cards").glob("*/README.md"))]
REGION = re.compile(r"<!-- generated:([a-z0-9_.-]+) -->\n(.*?)<!-- /generated -->", re.S)
TOKEN = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?")
EXPECTED_REGIONS = {("sem_ent", "benchmark-sem_ent_memory"), ("llm_judge", "judge-units"),
                    *((card, f"benchmark-quality_speed.{kind}") for card in ("context_relevance", "learned_quality")
                      for kind in ("avx2", "avx512-bf16")),
                    *((card, f"benchmark-{name}.{kind}") for card, name in [
                        ("full_followup", "full_followup"), ("full_followup", "full_routes"), ("sem_ent", "sem_ent_speed"),
                        ("nli_diversity", "nli_diversity"), ("llm_judge", "llm_judge")] for kind in ("amx", "avx2", "avx512-bf16"))}


def card_regions() -> list[tuple[Path, str, str]]:
    """(card, region name, region text) of every generated region of every metric and dataset card."""
    return [(card, m.group(1), m.group(2)) for card in CARDS for m in REGION.finditer(card.read_text(encoding="utf-8"))]


def benchmark_file(name: str) -> dict:
    return json.loads((RESULTS / "benchmarks" / f"{name.removeprefix('benchmark-')}.json").read_text(encoding="utf-8"))


def shown(token: str, value: float) -> bool:
    """Whether ``token`` (``3.74``, ``1,024``, ``4.86e-06``) is ``value`` printed to the digits it shows."""
    mantissa, _, exponent = token.replace(",", "").partition("e")
    half_unit = 0.5 * 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))
    return abs(float(token.replace(",", "")) - value) <= half_unit * (1 + 1e-9)


def json_numbers(value) -> tuple[set[str], list[float]]:
    """Every number a result file holds: the numeric tokens of its strings and keys, and its numeric values."""
    tokens: set[str] = set()
    numbers: list[float] = []

    def walk(x) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str):
            for t in TOKEN.findall(x):
                tokens.add(t)
                numbers.append(float(t.replace(",", "")))
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            numbers.append(float(x))

    walk(value)
    return tokens, numbers


def region_tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """The markdown tables of a region as (route group caption, header cells, body rows of cells)."""
    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]

    lines, out, caption, i = text.splitlines(), [], "", 0
    while i < len(lines):
        if lines[i].startswith("Routes, ") and lines[i].endswith(":"):
            caption = lines[i][len("Routes, "):-1]
        if lines[i].startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|(?:-+:?\|)+", lines[i + 1]):
            head, rows, i = cells(lines[i]), [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            out.append((caption, head, rows))
            continue
        i += 1
    return out


def same(cell: str, value) -> bool:
    if isinstance(value, str):
        return cell == " ".join(value.split())
    if value is None:
        return cell == "–"
    return bool(TOKEN.fullmatch(cell)) and shown(cell, float(value))


def test_card_generated_regions_equal_their_result_files():
    names = {(card.parent.name, name) for card, name, _ in card_regions()}
    assert EXPECTED_REGIONS <= names, EXPECTED_REGIONS - names
    for card in CARDS:
        text = card.read_text(encoding="utf-8")
        assert sitegen.render_regions(text) == text, \
            f"{card.relative_to(REPO)} differs from its result files: python tools/sitegen.py readme"


def test_card_region_numbers_are_in_their_result_files():
    """Read back from the card text: every number of a benchmark region is one of its file's numbers (to the digits
    shown), and every table cell is its file's value for that route and column."""
    regions = [r for r in card_regions() if r[1].startswith("benchmark-")]
    assert regions
    for card, name, text in regions:
        where = f"{card.relative_to(REPO)} {name}"
        result = benchmark_file(name)
        assert f"`{result['command']}`" in text, where
        tokens, numbers = json_numbers(result)
        found = TOKEN.findall(text)
        assert len(found) >= 5, where
        missing = [t for t in found if t not in tokens and not any(shown(t, v) for v in numbers)]
        assert not missing, (where, missing)
        rows = result["rows"] if isinstance(result.get("rows"), list) else result["units"]
        tables = region_tables(text)
        assert tables, where
        if len(rows) == 1:  # one row: a field-by-field table
            ((_, head, body),) = tables
            for key, cell in [head, *body]:
                assert same(cell, rows[0][key]), (where, key, cell)
            continue
        by_route = {r["route"]: r for r in rows} if all("route" in r for r in rows) else None
        seen = 0
        for caption, head, body in tables:
            for cells in body:
                seen += 1
                row = dict(zip(head, cells))
                if by_route is not None:
                    want = by_route[f"{caption}: {row['route']}" if caption else row["route"]]
                    want = {**want, "route": row["route"]}
                else:
                    want = rows[seen - 1]
                for key, cell in row.items():
                    assert same(cell, want.get(key)), (where, key, cell, want.get(key))
        assert seen == len(rows), where


NARRATION = {  # how a page narrates the measurement instead of pointing at a result file
    "a machine's make": r"\bEPYC\b|\bXeon\b",
    "a machine's load": r"\bload (?:average|about \d|≈ ?\d|\d)",
    "history": r"\bBefore the\b|\b(?:was|were) dropped\b|\b[Aa]n earlier run\b",
}
NARRATED = re.compile("|".join(f"(?P<p{i}>{p})" for i, p in enumerate(NARRATION.values())))


def test_the_narration_patterns_catch_it_and_spare_user_text():
    bad = ["on the shared 2-core AMD EPYC", "at load average 3.4", "(load 4.8)", "at load about 1.5",
           "Before the token budget, dialeval ran level", "eager attention 0.71× were dropped", "An earlier run gave"]
    good = ["Options can be fixed at load time", "the turns before the rated response", "oldest turns dropped first",
            "is dropped earlier", "dialeval.load(\"sem_ent\")", "loads take seconds"]
    assert all(NARRATED.search(s) for s in bad), [s for s in bad if not NARRATED.search(s)]
    assert not any(NARRATED.search(s) for s in good), [s for s in good if NARRATED.search(s)]


def test_cards_do_not_narrate_measurements_outside_their_regions():
    found = []
    for card in CARDS:
        text = REGION.sub(lambda m: "\n" * m.group(0).count("\n"), card.read_text(encoding="utf-8"))
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{card.relative_to(REPO)}:{number}: {m.group(0)!r}" for m in NARRATED.finditer(line)]
    assert not found, "\n".join(found)


def overall_spearman_row(board: dict, metric: str, unit: str) -> dict:
    """A leaderboard file's one item-level Spearman row of ``metric`` on ``unit`` ("dataset/config") for the unit's
    overall quality."""
    dataset, config = unit.split("/")
    target = board["datasets"][unit]["overall"]
    row, = [r for r in board["rows"] if (r["metric"], r["dataset"], r["config"], r["target"], r["statistic"],
                                          r.get("level", "item")) == (metric, dataset, config, target, "spearman", "item")]
    return row


def test_the_judge_cards_units_are_the_two_leaderboards_values():
    """Read back from the LLM judge's card: each unit's judge cell is judge_leaderboard.json's item-level Spearman
    row for the unit's overall quality, and its FULL cell is quality_leaderboard.json's, with their intervals."""
    text = (REPO / "metrics" / "llm_judge" / "README.md").read_text(encoding="utf-8")
    region = next(body for name, body in REGION.findall(text) if name == "judge-units")
    (_, head, rows), = region_tables(region)
    boards = {name: json.loads((RESULTS / f"{name}_leaderboard.json").read_text(encoding="utf-8"))
              for name in ("judge", "quality")}

    def cell(board: dict, metric: str, unit: str) -> str:
        row = overall_spearman_row(board, metric, unit.replace(" · ", "/"))
        return f"{row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"

    assert len(rows) == len(boards["judge"]["datasets"]) == 16
    for cells in rows:
        got = dict(zip(head, cells))
        assert got["judge"] == cell(boards["judge"], "llm_judge", got["unit"])
        assert got["FULL, same model"] == cell(boards["quality"], "full_followup", got["unit"])


def test_the_learned_quality_cards_prose_numbers_are_the_quality_boards():
    """The composition comparison written in learned_quality's card and its model card: the quality board's
    item-level Spearman ρ for each unit's overall quality (Holistic fluency; the plain mean over the turn units)."""
    board = json.loads((RESULTS / "quality_leaderboard.json").read_text(encoding="utf-8"))

    def rho(metric: str, unit: str) -> float:
        return overall_spearman_row(board, metric, unit)["value"]

    turn = [u for u, info in board["datasets"].items() if info["level"] == "turn"]
    mean = {m: sum(rho(m, u) for u in turn) / len(turn) for m in ("learned_quality", "learned_quality_usl_h")}
    model_card = (REPO / "src" / "dialeval" / "resources" / "learned_quality" / "README.md").read_text(encoding="utf-8")
    assert f"{mean['learned_quality_usl_h']:.3f} against {mean['learned_quality']:.3f}\nover the turn units" in model_card
    card = (REPO / "metrics" / "learned_quality" / "README.md").read_text(encoding="utf-8")
    fluency = "holistic_pang2020/fluency"
    assert (f"Holistic fluency {rho('learned_quality_usl_h', fluency):.3f} against "
            f"{rho('learned_quality', fluency):.3f}") in card


def test_the_scale_out_pages_ray_ratios_are_the_result_files():
    """The Ray speed sentence of docs/scale_out.md: its link names the result file's section, and each ratio it
    quotes at a million rows is that file's Ray / one process."""
    text = " ".join((REPO / "docs" / "scale_out.md").read_text(encoding="utf-8").split())
    result = json.loads((RESULTS / "benchmarks" / "distributed.avx512-bf16.json").read_text(encoding="utf-8"))
    assert "benchmarks.md#ray-data-against-one-process-cpu-kind-avx512-bf16" in text
    assert f"`{result['command']}`" in text
    ratio = {r["metric"]: r["Ray / one process"] for r in result["rows"] if r["rows"] == 1_000_000}
    quoted = re.search(r"Distinct-n on Ray took (\d+\.\d+)× .*? in one call (\d+\.\d+)× the time", text)
    assert quoted and [float(q) for q in quoted.groups()] == [ratio["distinct_n"], ratio["lexical"]]
    assert all(r["same"] in (True, 1.0) for r in result["rows"]) and "identical to one process" in text
