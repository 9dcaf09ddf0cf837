"""Run the code blocks of Markdown pages, doctest style.

A page's ```` ```python ```` blocks run in order in one namespace, its ```` ```bash ```` blocks in ``bash -e``, all in
one scratch folder per page whose ``../shared/data`` is the real data. A ```` ```text title="Output" ```` block right
after a code block is that block's expected standard output (lines compared without trailing spaces).
Python blocks that start with ``>>>`` are doctests.

Markers, an HTML comment on the line before a block's fence (invisible on GitHub and on the site):

- ``<!-- norun: REASON -->``: not run here (it needs the Hub, a cluster, or hours); the tests count these.
- ``<!-- runs-in: tests/test_X.py ... -->``: run by that test file, which reads the block from the page.
- ``<!-- output-within: TOL REASON -->``, between a code block and its ``Output`` block: the numbers printed may
  differ from the page's by up to ``TOL`` (absolute; every other word equal), for outputs that are not the same
  on every CPU kind at the decimals shown (e.g. k-means restarts). The page says so in words too.

Placeholders a reader replaces: in a dataset card, ``path/to/NAME`` is the folder of that dataset's original
files (the runner points it at ``../shared/data/NAME``), and the test stands a local export (the layout of the
Hub repo) in for ``<org>/NAME``.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RUNNABLE = {"python", "py", "bash", "sh", "console"}
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*(norun|runs-in):\s*(.*?)\s*-->\s*$")
_WITHIN = re.compile(r"^\s*<!--\s*output-within:\s*([0-9.eE+-]+)\s+(\S.*?)\s*-->\s*$")
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    code: str
    marker: tuple[str, str] | None = None
    output: str | None = None
    within: float = 0.0  #: how far each printed number may be from the page's (``output-within``)

    @property
    def runs_here(self) -> bool:
        return self.lang in RUNNABLE and self.marker is None

    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(text: str, page: str = "<page>") -> list[Block]:
    """Every fenced block at the start of a line, with its marker and its expected output, if any."""
    found: list[Block] = []
    matches = list(_FENCE.finditer(text))
    skip: set[int] = set()
    for i, m in enumerate(matches):
        if i in skip:
            continue
        info = m.group(1).strip()
        lang = info.split()[0] if info else ""
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        block = Block(page, text.count("\n", 0, m.start()) + 1, lang, m.group(2),
                      (marker.group(1), marker.group(2)) if marker else None)
        if i + 1 < len(matches):
            nxt = matches[i + 1]
            between = text[m.end(): nxt.start()].strip()
            within = _WITHIN.match(between)
            if (between == "" or within) and 'title="Output"' in nxt.group(1):
                block.output = nxt.group(2)
                block.within = float(within.group(1)) if within else 0.0
                skip.add(i + 1)
        found.append(block)
    return found


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def same_output(got: str, want: str, within: float = 0.0) -> bool:
    """Whether ``got`` prints ``want``: the same lines (trailing spaces aside); with ``within``, each number may
    differ from the page's by up to ``within`` and every other word is equal."""
    a, b = _lines(got), _lines(want)
    if not within or len(a) != len(b):
        return a == b
    for line_a, line_b in zip(a, b):
        words_a, words_b = line_a.split(), line_b.split()
        if len(words_a) != len(words_b):
            return False
        for x, y in zip(words_a, words_b):
            if _NUMBER.match(x) and _NUMBER.match(y):
                if abs(float(x) - float(y)) > within:
                    return False
            elif x != y:
                return False
    return True


def substitute(code: str) -> str:
    """The placeholders a reader replaces, pointed at this checkout's data."""
    return re.sub(r"(['\"])path/to/([a-z0-9_]+(?:/[^'\"]*)?)\1", r"\1../shared/data/\2\1", code)


def run_page(page_blocks: list[Block], folder: Path, env: dict[str, str], timeout: int = 600,
             stand_ins: dict[str, str] | None = None) -> list[str]:
    """Run a page's runnable blocks in ``folder`` (the current directory while they run); a list of failures.
    ``stand_ins`` replaces text before a block runs (a Hub repo id by a local folder of the same layout)."""
    failures: list[str] = []
    namespace: dict = {"__name__": "__docs__"}
    old = os.getcwd()
    os.chdir(folder)
    try:
        for b in page_blocks:
            if not b.runs_here:
                continue
            code = substitute(b.code)
            for placeholder, local in (stand_ins or {}).items():
                code = code.replace(placeholder, local)
            out = io.StringIO()
            try:
                if b.lang in {"python", "py"} and code.lstrip().startswith(">>>"):
                    test = doctest.DocTestParser().get_doctest(code, namespace, b.where(), b.page, b.line)
                    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
                    with contextlib.redirect_stdout(out):
                        runner.run(test, out=out.write)
                    if runner.failures:
                        failures.append(f"{b.where()}: doctest failed\n{out.getvalue()[-3000:]}")
                    continue
                if b.lang in {"python", "py"}:
                    with contextlib.redirect_stdout(out):
                        exec(compile(code, b.where(), "exec"), namespace)  # noqa: S102 - the page's own example
                    got = out.getvalue()
                else:
                    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], env=env, capture_output=True,
                                          text=True, timeout=timeout)
                    if done.returncode:
                        failures.append(f"{b.where()}: exit {done.returncode}\n{done.stderr[-3000:]}")
                        continue
                    got = done.stdout
            except Exception as exc:  # noqa: BLE001 - reported with the block's place
                failures.append(f"{b.where()}: {type(exc).__name__}: {exc}")
                continue
            if b.output is not None and not same_output(got, b.output, b.within):
                allowed = f" (each number within {b.within:g})" if b.within else ""
                failures.append(f"{b.where()}: printed\n{got}\nbut the page shows{allowed}\n{b.output}")
    finally:
        os.chdir(old)
    return failures


CHECKOUT = ("benchmarks", "datasets_scripts", "docs", "metrics", "scripts", "spaces", "src", "tools")


def scratch(root: Path, shared_data: Path, repo: Path | None = None) -> Path:
    """A folder ``root/work`` whose ``../shared/data`` is the real data, as beside a checkout; with ``repo``, the
    checkout's source folders are linked into it, so commands written for the checkout root run there while
    what they write stays in the scratch folder."""
    (root / "shared").mkdir(parents=True, exist_ok=True)
    link = root / "shared" / "data"
    if not link.exists():
        link.symlink_to(Path(shared_data).resolve(), target_is_directory=True)
    work = root / "work"
    work.mkdir(exist_ok=True)
    for name in CHECKOUT if repo else ():
        if (repo / name).is_dir() and not (work / name).exists():
            (work / name).symlink_to(repo / name, target_is_directory=True)
    return work


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env
