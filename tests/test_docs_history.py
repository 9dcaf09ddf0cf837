"""Pages speak to users: the README, the site's pages, the metric and dataset cards, the benchmark scripts'
docstrings and the library's docstrings and comments hold no build history (issue numbers, dated work
entries, rounds, sessions, earlier machines). History belongs in CHANGELOG.md, under versions."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PATTERNS = {
    "an issue number": r"\bissues? #?\d+|(?<![\w/&#-])#\d{1,4}\b(?![0-9a-fA-F])",
    "a round of work": r"\bround \d|\b(this|earlier|previous|last|that|an earlier) round\b",
    "a work session": r"\b(this|earlier|previous|last|that|an earlier|one) session\b(?! ?(?:hash|id|state|cookie))",
    "an earlier machine": r"\b(earlier|another|last|previous|today's|that) machine\b|\bthe \d{4}-\d\d-\d\d machine",
    "a dated work entry": r"\b20\d\d-\d\d-\d\d\b",
}
HISTORY = re.compile("|".join(f"(?P<p{i}>{p})" for i, p in enumerate(PATTERNS.values())), re.I)


def project_python(folder: str) -> list[Path]:
    """The ``.py`` files under ``folder`` that git does not ignore (not a benchmark's own virtual environment,
    ``benchmarks/*_venv``); every one of them outside a git checkout."""
    root = REPO / folder
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", folder], cwd=REPO,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        return sorted(root.rglob("*.py"))
    return sorted(REPO / line for line in listed.stdout.splitlines() if line.endswith(".py") and (REPO / line).is_file())


def markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "metrics").glob("*/README.md")),
            REPO / "datasets_scripts" / "README.md", *sorted((REPO / "datasets_scripts" / "cards").glob("*/README.md")),
            REPO / "spaces" / "demo" / "README.md"]


def python_texts(path: Path, docstrings_only: bool = False) -> list[tuple[int, str]]:
    """A module's docstrings, and its comments unless ``docstrings_only``: (line, text)."""
    source = path.read_text(encoding="utf-8")
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((getattr(node, "lineno", 1), doc))
    if not docstrings_only:
        out += [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type == tokenize.COMMENT]
    return out


def hits(texts: list[tuple[str, int, str]]) -> list[str]:
    found = []
    for where, line, text in texts:
        for m in HISTORY.finditer(text):
            kind = list(PATTERNS)[int(next(k for k, v in m.groupdict().items() if v)[1:])]
            found.append(f"{where}:{line}: {kind}: {m.group(0)!r}")
    return found


def test_the_patterns_catch_history_and_spare_user_text():
    bad = ["see issue 30", "fixed in #25.", "this round's table", "an earlier session measured",
           "on another machine", "rerun on 2026-12-01"]
    good = ["per session", "the session hash", "an ONNX Runtime session", "colour #4c72b0", "huggingface/open-r1#651",
            "rounds to 3 decimals", "rounded", "one machine", "issues a warning"]
    assert all(HISTORY.search(s) for s in bad), [s for s in bad if not HISTORY.search(s)]
    assert not any(HISTORY.search(s) for s in good), [s for s in good if HISTORY.search(s)]


def test_pages_and_cards_hold_no_build_history():
    texts = [(str(p.relative_to(REPO)), i + 1, line) for p in markdown_files() if p.is_file()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines())]
    found = hits(texts)
    assert not found, "\n".join(found)


def test_docstrings_and_comments_hold_no_build_history():
    files = [*project_python("src"), *project_python("metrics"), *project_python("spaces"),
             *sorted((REPO / "datasets_scripts").glob("*.py"))]
    texts = [(str(p.relative_to(REPO)), line, text) for p in files for line, text in python_texts(p)]
    texts += [(str(p.relative_to(REPO)), line, text) for p in project_python("benchmarks")
              for line, text in python_texts(p, docstrings_only=True)]
    found = hits(texts)
    assert not found, "\n".join(found)
