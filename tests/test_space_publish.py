"""The publish command of docs/serving.md runs as written: `dialeval hub build --org ORG --out hub/
--data-dir ../shared/data` on the documented data, from a folder beside `shared/` as in this project's
layout (the test's own tmp folder, with `shared/data` a link to the read-only data). DialStory's originals
are absent there: it is skipped with one line; DailyDialog's three documented repeats are kept as released."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def readme_command() -> list[str]:
    page = REPO.joinpath("docs", "serving.md").read_text("utf-8")
    block = re.search(r"## Publish to the Hub\n+(?:<!--.*?-->\n)?```bash\n(.*?)```", page, re.S)
    assert block, "docs/serving.md has no publish block"
    first = block.group(1).splitlines()[0].split("#", 1)[0].strip()
    assert first == "dialeval hub build --org ORG --out hub/ --data-dir ../shared/data", first
    return shlex.split(first)


def test_readme_publish_command_runs_as_written(tmp_path, shared_data):
    from dialeval import registry
    from dialeval.datasets import BUILDERS, DATA_FOLDERS

    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(Path(shared_data).resolve(), target_is_directory=True)
    (tmp_path / "work").mkdir()
    command = readme_command()
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dialeval", *command[1:]], cwd=tmp_path / "work",
                          capture_output=True, text=True, timeout=900)
    took = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-3000:]
    hub = tmp_path / "work" / "hub"
    present = [n for n in BUILDERS if (Path(shared_data) / DATA_FOLDERS[n]).is_dir()]
    absent = [n for n in BUILDERS if n not in present]
    assert sorted(p.name for p in (hub / "datasets").iterdir()) == sorted(present)
    assert sorted(p.name for p in (hub / "spaces").iterdir()) == sorted([*registry.declarations(), "dialeval-demo"])
    notes = [line for line in done.stderr.splitlines() if line.startswith("dialeval hub build:")]
    for name in absent:
        assert sum(f"skipped dataset {name}: no original files" in line for line in notes) == 1, notes
    if "dailydialog" in present:
        assert any("dailydialog: keeping the repeated records its builder documents" in line for line in notes)
    upload = (hub / "upload.sh").read_text(encoding="utf-8")
    assert all(f"ORG/{n}" in upload for n in present)
    sizes = {f"{kind}/{f.name}": sum(x.stat().st_size for x in f.rglob("*") if x.is_file()) / 1e6
             for kind in ("spaces", "datasets") for f in (hub / kind).iterdir()}
    print(f"docs/serving.md publish command: {took:.0f} s;", ", ".join(f"{k} {v:.2f} MB" for k, v in sorted(sizes.items())))
