"""Every code block of the README and of the site's pages runs (tools/mdblocks.py): Python and bash blocks in
a scratch folder beside ``shared/data``, each ``Output`` block equal to what its block printed. Blocks that need
the Hub, a cluster or hours carry a visible ``norun`` marker with its reason; blocks another test runs name it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import mdblocks  # noqa: E402

PAGES = sorted({"README.md", "CHANGELOG.md",
                *(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")),
                *(str(p.relative_to(REPO)) for p in (REPO / "metrics").glob("*/README.md")),
                *(str(p.relative_to(REPO)) for p in (REPO / "datasets_scripts" / "cards").glob("*/README.md"))})
MAX_NORUN = 14  # keep the blocks nobody runs few (the 14th: the learned evaluator's 20-minute training)


def page_blocks(page: str) -> list[mdblocks.Block]:
    return mdblocks.blocks((REPO / page).read_text(encoding="utf-8"), page)


ALL = {page: page_blocks(page) for page in PAGES}
RUNNABLE = [page for page, bs in ALL.items() if any(b.runs_here for b in bs)]


def test_the_runner_reads_markers_and_outputs():
    text = ('<!-- norun: needs the Hub -->\n```bash\nhf upload x\n```\n\n```python\nprint(1 + 1)\n```\n'
            '```text title="Output"\n2\n```\n<!-- runs-in: tests/test_mcp.py -->\n```python\npass\n```\n')
    norun, run, elsewhere = mdblocks.blocks(text, "page.md")
    assert (norun.marker, norun.runs_here) == (("norun", "needs the Hub"), False)
    assert (run.lang, run.output, run.runs_here) == ("python", "2\n", True)
    assert elsewhere.marker == ("runs-in", "tests/test_mcp.py")


def test_a_wrong_output_block_fails(tmp_path):
    [b] = mdblocks.blocks('```python\nprint("a")\n```\n```text title="Output"\nb\n```\n', "page.md")
    failures = mdblocks.run_page([b], tmp_path, mdblocks.child_env())
    assert len(failures) == 1 and "but the page shows" in failures[0]


def test_an_output_within_a_stated_tolerance(tmp_path):
    page = ('```python\nprint("mean 2.8673 sd 0.0291")\n```\n'
            '<!-- output-within: 0.02 k-means restarts -->\n```text title="Output"\nmean {} sd 0.0298\n```\n')
    [close] = mdblocks.blocks(page.format("2.8669"), "page.md")
    assert close.within == 0.02 and close.output == "mean 2.8669 sd 0.0298\n"
    assert mdblocks.run_page([close], tmp_path, mdblocks.child_env()) == []
    [far] = mdblocks.blocks(page.format("2.8400"), "page.md")  # 0.0273 away
    [failure] = mdblocks.run_page([far], tmp_path, mdblocks.child_env())
    assert "(each number within 0.02)" in failure
    assert not mdblocks.same_output("avg 2.8673 sd 0.0291", "mean 2.8673 sd 0.0291", 0.02)  # words stay exact
    assert not mdblocks.same_output("2.8673", "2.8669", 0.0)  # no marker: exact


def test_every_tolerance_is_stated_on_its_page():
    """A reader sees the tolerance a block's output is checked within, not only the hidden marker."""
    within = [b for bs in ALL.values() for b in bs if b.within]
    for b in within:
        assert f"±{b.within:g}" in (REPO / b.page).read_text(encoding="utf-8"), b.where()
    assert {b.page for b in within} >= {"metrics/sem_ent/README.md"}


def test_every_block_that_is_not_run_says_why_and_who_runs_it():
    norun = [b for bs in ALL.values() for b in bs if b.marker and b.marker[0] == "norun"]
    assert all(len(b.marker[1]) > 10 for b in norun), [b.where() for b in norun]
    assert len(norun) <= MAX_NORUN, "\n".join(f"{b.where()}: {b.marker[1]}" for b in norun)
    for b in (b for bs in ALL.values() for b in bs if b.marker and b.marker[0] == "runs-in"):
        test = REPO / b.marker[1].split()[0]
        assert test.is_file(), b.where()
        assert Path(b.page).name in test.read_text(encoding="utf-8") or b.page in test.read_text(encoding="utf-8"), \
            f"{b.where()}: {test.name} does not read {b.page}"
    print(f"\n{sum(b.runs_here for bs in ALL.values() for b in bs)} blocks run here, {len(norun)} not run")


#: what a shell block writes: a redirect's target, an ``--out``/``--output``/``--plot`` path
_WRITES = re.compile(r"(?:(?<![<&])>{1,2}\s*|--out(?:put)?[ =]|--plot[ =])([^\s;|&)]+)")


def test_every_example_writes_only_where_git_ignores():
    """Run from a checkout, the pages' commands leave nothing git would show as untracked: every file they write is
    under an ignored folder (``out/`` for the examples)."""
    written = [(b.where(), m.group(1).strip("'\"")) for bs in ALL.values() for b in bs
               if b.runs_here and b.lang in {"bash", "sh", "console"} for m in _WRITES.finditer(b.code)]
    written = [(where, path) for where, path in written if not path.startswith(("/dev/", "&"))]
    assert len(written) >= 8  # the README's, the getting-started and the own-annotations examples among them
    tracked = [(where, path) for where, path in written
               if subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=REPO).returncode]
    assert not tracked, tracked


def hub_stand_ins(page: str, root: Path, shared_data: Path) -> dict[str, str]:
    """A dataset card's ``"<org>/NAME"`` (its Hub repo) stood in for by the dataset exported in the Hub layout."""
    if not page.startswith("datasets_scripts/cards/"):
        return {}
    from dialeval.datasets import DATA_FOLDERS, export

    name = Path(page).parent.name
    code = "".join(b.code for b in ALL[page] if b.runs_here)
    if f'"<org>/{name}"' not in code:
        return {}
    out = root / "hub" / name
    source = {"data_dir": Path(shared_data) / DATA_FOLDERS[name]} if name in DATA_FOLDERS else {}
    if name == "dstc10":  # any file in the DSTC10 Track 5 format
        source = {"data_files": Path(shared_data) / "dstc10_jsalt" / "jsalt_eval.json"}
    if name == "dialstory":  # the original stories are not public: the card's bundled sample
        source = {"data_dir": REPO / "datasets_scripts" / "cards" / "dialstory" / "sample"}
    export(name, out, cache_dir=root / "cache", allow_duplicates=name == "dailydialog", **source)  # DailyDialog
    # repeats 3 dialogues in its release; its builder documents them
    return {f'"<org>/{name}"': repr(str(out))}


@pytest.mark.parametrize("page", RUNNABLE)
def test_page_code_blocks_run(page, tmp_path, shared_data):
    folder = mdblocks.scratch(tmp_path, shared_data, REPO)
    failures = mdblocks.run_page(ALL[page], folder, mdblocks.child_env(),
                                 stand_ins=hub_stand_ins(page, tmp_path, shared_data))
    assert not failures, "\n\n".join(failures)
